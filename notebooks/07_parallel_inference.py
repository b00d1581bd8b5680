# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07 · Parallel inference: batch, layer wavefront, MPI and a CUDA kernel
#
# Training is over; now the network has to *answer*. This chapter follows Pokharel & Mishra's
# project proposal "Parallelization of Inference on Recurrent Neural Networks" (seed 004). Their
# starting point is the forward pass of a softmax RNN, written for one sequence with column
# vectors:
#
# ```
# a[t] = b + W h[t-1] + U x[t]
# h[t] = tanh(a[t])
# o[t] = c + V h[t]
# y[t] = softmax(o[t])
# ```
#
# Step $t$ needs $h[t-1]$, so one sequence is a chain. The seed asks where parallelism hides
# anyway and whether shared memory (OpenMP in the seed; a thread pool here), message passing (MPI)
# or a GPU kernel (CUDA) exploits it best. We look at three axes:
#
# 1. **the batch** -- different sequences are independent (GEMM instead of GEMV, then threads or
#    MPI ranks over slices of the batch);
# 2. **the layers** -- in a stacked RNN, cell $(l, t)$ needs only $(l-1, t)$ and $(l, t-1)$, so
#    the cells of one anti-diagonal run at the same time: the *wavefront*;
# 3. **the units** inside one step -- one GPU thread per hidden unit and sequence.
#
# The seed is a proposal: it lists goals and one expectation, and it reports **no measurement**.
# So there is no seed number to set beside ours. Instead each experiment quotes the goal it tests
# (verbatim, from `course_lib.teaching.claims.seed004`), asks you to predict, measures on *this*
# machine, and prints a verdict computed from the measurement -- or says that the measurement was
# too noisy to conclude anything. The real task is a character-level language model trained on
# Python's own help text.

# %% tags=["nbval-ignore-output"]
import numpy as np

import course_lib  # noqa: F401  (first: it sets up numba's CUDA mode)
from course_lib.core import backend, timing
from course_lib.core.mpi import MPIFailed
from course_lib.data import corpus
from course_lib.experiments import inference as inference_exp
from course_lib.models import charlm, softmax_rnn
from course_lib.parallel import inference
from course_lib.teaching import widgets
from course_lib.teaching.claims import seed004
from course_lib.teaching.plots import inference as inference_plots

cores = backend.cpu_count()
mpi_ok, mpi_info = backend.mpi_available()
print("cores:", cores, "| CUDA kernels run on:", backend.cuda_mode(),
      "| MPI:", backend.mpiexec_name(mpi_info) if mpi_ok else f"not available ({mpi_info})")

# %% [markdown]
# What the seed set out to do, in its own words:

# %%
for gid in seed004.GOALS:
    print(seed004.goal(gid))

# %% [markdown]
# ## The model: a stacked softmax RNN in the seed's notation
#
# `softmax_rnn.init_params(nx, nh, vocab, layers=L)` builds the seed's parameters for every layer
# (`U (H, n_in)`, `W (H, H)`, `b (H,)`) and the output (`V (vocab, H)`, `c (vocab,)`): the
# column-vector convention of the pseudocode -- which is also the layout of `torch.nn.RNN`
# (`SoftmaxRNNParams.to_torch()`). Layer 0 reads $x[t]$, layer $l$ reads $h[l-1, t]$.
# `softmax_rnn.forward(params, X, method=...)` takes time-major inputs `X (T, B, nx)` and returns
# probabilities `(T, B, vocab)`; `method="sequential"` is the seed's loop verbatim: one sequence, one
# step, one layer at a time, with matrix-*vector* products.

# %%
rng = np.random.default_rng(0)
T, B, nx, nh, vocab, L = 4, 3, 6, 8, 5, 3
params = softmax_rnn.init_params(nx, nh, vocab, layers=L, seed=0)
for l, layer in enumerate(params.layers):
    print(f"layer {l}: U {layer.U.shape}, W {layer.W.shape}, b {layer.b.shape}")
print(f"output : V {params.V.shape}, c {params.c.shape}")
X = rng.standard_normal((T, B, nx)).astype(np.float32)
Y = softmax_rnn.forward(params, X, method="sequential")
print("probabilities:", Y.shape, "| every row sums to 1:", bool(np.allclose(Y.sum(-1), 1.0)))

# %% [markdown]
# ## Where the dependencies are
#
# Each circle is one *cell*: a `tanh` of two matrix-vector products. The black arrows come from
# the layer below at the same time step, the red ones from the same layer one step earlier. A
# cell can start as soon as both of its inputs exist -- nothing else constrains it.

# %%
ax = inference_plots.dependency_graph(6, 3)

# %% [markdown]
# Two observations drive the rest of the chapter:
#
# * along a red chain (one layer, one sequence) nothing can be parallelised -- except *inside* a
#   cell, over the hidden units (the GPU kernel does that);
# * cell $(1, 0)$ does not wait for $(0, 1)$: layer 1 can work on step 0 while layer 0 works on
#   step 1. A stacked RNN is a **pipeline**.
#
# ## Six methods, one answer
#
# `course_lib.parallel.inference.predict(params, X, method=...)` runs any of them (the code:
# [`course_lib/parallel/inference.py`](../course_lib/parallel/inference.py); the model itself is
# [`course_lib/models/softmax_rnn.py`](../course_lib/models/softmax_rnn.py)):
#
# | method | what runs in parallel | how |
# |---|---|---|
# | `sequential` | nothing | the seed's loop, GEMV per cell |
# | `batched` | the sequences, inside BLAS | `Z = X U^T + b` for all steps at once, then `h = tanh(Z[t] + h W^T)`: GEMMs |
# | `threads` | slices of the batch | a thread pool (shared memory), `threads=` workers, one BLAS thread each |
# | `wavefront` | the cells of one anti-diagonal | a thread pool, a barrier between diagonals |
# | `mpi` | slices of the batch, in separate processes | `mpiexec -n ranks`: broadcast, scatter, compute, gather |
# | `cuda_batched` | every (unit, sequence) pair of a cell | a numba CUDA kernel per cell, `block=(units, sequences)` |
#
# They must agree to float32 round-off. (Without a GPU the CUDA kernel runs in numba's CUDA
# simulator: the very same kernel code, executed thread by thread on the CPU -- slowly, so this
# check is tiny.)

# %%
reference = softmax_rnn.forward(params, X, method="sequential")
for method in ("batched", "threads", "wavefront", "cuda_batched"):
    got = inference.predict(params, X, method=method)
    err = float(np.max(np.abs(got - reference)))
    print(f"{method:<10} max |p - p_serial| < 1e-5: {err < 1e-5}")

# %% [markdown]
# The MPI method starts real processes: `mpiexec -n 2 python -m course_lib.parallel.mpi_infer DIR`
# (see [`course_lib/parallel/mpi_infer.py`](../course_lib/parallel/mpi_infer.py)), launched by the
# course's one MPI launcher, `course_lib.core.mpi.launch`. The parameters and inputs travel to
# rank 0 in an `.npz` file, the probabilities come back the same way.

# %% tags=["nbval-ignore-output"]
if mpi_ok:
    got = inference.predict(params, X, method="mpi", ranks=2, timeout=60)
    print(f"mpi (2 ranks) max |p - p_serial| < 1e-5: {float(np.max(np.abs(got - reference))) < 1e-5}")
else:
    print("MPI is not available here:", mpi_info)

# %% [markdown]
# ## The wavefront schedule
#
# Number the anti-diagonals $d = l + t$. Both inputs of cell $(l, t)$ lie on diagonal $d - 1$, so
# after a barrier all cells of diagonal $d$ can run together. `inference.wavefront_schedule(T, L)`
# lists them; `predict(..., method="wavefront")` executes exactly this list.

# %%
schedule = inference.wavefront_schedule(6, 3)
for d, cells in enumerate(schedule):
    print(f"step {d}: {cells}")
ws = inference.work_span(6, 3)
print(f"work = T*L = {ws['work']} cells, span = T+L-1 = {ws['span']} steps, "
      f"average parallelism = {ws['parallelism']:.2f}")

# %%
ax = inference_plots.wavefront_plot(schedule)

# %% [markdown]
# The critical path shrinks from $T \cdot L$ to $T + L - 1$ cells, but never more than $L$ cells
# run at once (one per layer), and only in the middle of the schedule. For a 2-layer network the
# work/span bound on the speedup is 2; for $T \gg L$ it approaches $L$. How much of that a thread
# pool gets is measured below.
#
# ## The real task: a character-level language model on Python's help text
#
# `course_lib.data.corpus` loads the help topics that ship with every Python (`pydoc_data`). The
# last tenth is held out. The model is the same softmax RNN with one-hot characters as inputs
# ($n_x$ = vocab).

# %%
text = corpus.load_text()
vocab_chars = corpus.Vocab.from_text(text)
ids = vocab_chars.encode(text)
train_ids, val_ids = corpus.split(ids, 0.1)
print(f"{len(text):,} characters, vocabulary of {vocab_chars.size}; "
      f"{train_ids.size:,} for training, {val_ids.size:,} held out")
print("one-hot inputs:", softmax_rnn.encode(val_ids[:8], vocab_chars.size).shape)

# %% [markdown]
# Training uses backpropagation through time -- the O(T) reverse sweep of chapter 02 -- adapted to
# the softmax output: for cross-entropy the gradient at the logits is simply $y - \text{onehot}$.
# Gradients are checked against finite differences in `tests/models/test_charlm.py`; the code is
# [`course_lib/models/charlm.py`](../course_lib/models/charlm.py). `charlm.train` returns the
# course's `TrainResult` (final parameters, `history["loss"]`, seconds). A short Adam run in float64:

# %% tags=["nbval-ignore-output"]
H_LM = 96
lm0 = softmax_rnn.init_params(vocab_chars.size, H_LM, vocab_chars.size, layers=1, seed=0, dtype=np.float64)
run = charlm.train(lm0, train_ids, steps=400, T=32, batch=32, lr=5e-3, seed=0)
print(f"trained in {run.seconds:.1f} s")

# %%
lm, history = run
print(f"loss: first step {history['loss'][0]:.3f}, last 10% of steps {run.final('loss'):.3f} (nats per character)")
ppl = charlm.perplexity(lm, val_ids, T=64, max_windows=128)
print(f"held-out perplexity: {ppl:.2f}  (uniform guess: {vocab_chars.size}, "
      f"character frequencies: {charlm.unigram_perplexity(train_ids, val_ids, vocab_chars.size):.2f})")

# %% [markdown]
# Perplexity is $e^{\text{cross-entropy}}$: the model is as unsure as a uniform choice among that
# many characters. Evaluating it *is* batched inference -- 128 windows of 64 characters are one
# batch -- so every method must give the same number
# (`experiments.inference.perplexity_by_method` plugs each method into `charlm.perplexity`):

# %%
lm32 = lm.astype(np.float32)
ppls = inference_exp.perplexity_by_method(lm32, val_ids, ("sequential", "batched", "wavefront"), T=64, max_windows=128)
print({m: round(v, 2) for m, v in ppls.items()})
print("all equal to 1e-4 relative:", max(ppls.values()) / min(ppls.values()) - 1 < 1e-4)

# %% [markdown]
# And the model writes (seeded, temperature 0.8):

# %%
print(charlm.sample(lm, vocab_chars, prime="The ", n=240, seed=0, temperature=0.8))

# %% [markdown]
# Read the sample: which of spaces, newlines, indentation, short common words and the spelling of
# longer words has it picked up after a few seconds of training? (A larger $H$ and longer
# training do better.) Now: how fast can it answer?
#
# ## Experiment 1 · Speedup vs batch size (seed goal §7.1 a: shared memory)
#
# The seed plans to speed up the forward pass with OpenMP: a team of threads sharing memory. Our
# `threads` method is the same idea -- a pool of `threads` workers, each running the batched pass
# on its slice of the batch. A 2-layer network with $H = 64$ and $T = 32$; sequences per second of
# each method, relative to the serial loop. The baselines `sequential` and `batched` run on **one
# core** (one BLAS thread); `threads` uses one worker per core.
#
# **Predict** before you run: (1) how much faster is `batched` than the serial loop at $B = 1$, where
# there is no second sequence to batch with -- and at the largest $B$? (2) Does the thread pool beat
# `batched` on one core at small $B$? At the largest $B$?

# %% tags=["nbval-ignore-output"]
sweep_B = timing.scaled([1, 4, 16, 64, 256], [1, 4, 16, 64])
methods_B = ("sequential", "batched", "threads")
by_B = inference_exp.batch_sweep(sweep_B, methods=methods_B, layers=2, T=32, nh=64, repeat=3)
for d in by_B:
    print(f"B={d['B']:>4}: " + ", ".join(f"{m} {d['seq_per_s'][m]:9.0f} seq/s" for m in methods_B)
          + f" | threads / batched {d['speedup']['threads'] / d['speedup']['batched']:.2f}x")
ax = inference_plots.speedup_plot(sweep_B, {m: [d["speedup"][m] for d in by_B] for m in methods_B[1:]},
                         xlabel="batch size B", logy=True,
                         title="Speedup over the serial loop (measured, L=2, H=64, T=32)")

# %% tags=["nbval-ignore-output"]
small, big = by_B[0], by_B[-1]
thr_over_batched = [d["speedup"]["threads"] / d["speedup"]["batched"] for d in by_B]
print(f"batched over the serial loop: {small['speedup']['batched']:.1f}x at B={small['B']}, "
      f"{big['speedup']['batched']:.1f}x at B={big['B']}" + ("" if big["noise"].ok else "\n" + big["noise"].warning()))
v_openmp = seed004.goal_verdict(
    "004.goal.openmp", holds=bool(thr_over_batched[-1] > 1.0),
    ours=f"threads over the batch with {min(cores, big['B'])} worker(s): {thr_over_batched[-1]:.2f}x "
         f"the batched pass on one core at B={big['B']} (L=2, H=64, T=32)",
    here=f"{cores} cores",
    reasons=[(cores == 1, "1 core here: the workers take turns on it"),
             (all(a < b for a, b in zip(thr_over_batched, thr_over_batched[1:])),
              f"the gain grows with B ({thr_over_batched[0]:.2f}x -> {thr_over_batched[-1]:.2f}x) but each "
              f"worker's slice of {big['B'] // min(cores, big['B'])} sequences is still too small to pay "
              "for starting the pool and splitting the batch"),
             (big["seq_per_s"]["batched"] > 1.1 * by_B[-2]["seq_per_s"]["batched"],
              f"one BLAS thread per worker: the batched pass still gets faster per sequence from B={by_B[-2]['B']} "
              f"to B={big['B']}, so each worker's smaller slice is a less efficient GEMM than the whole batch")],
    noise=big["noise"])
print(v_openmp)

# %% [markdown]
# One GEMM of $B$ rows replaces $B$ matrix-vector products (chapter 03): the weights are read once
# per step for the whole batch instead of once per sequence. At $B = 1$ `batched` still differs
# from the serial loop because it computes the input projection $X U^\top$ of all $T$ steps in
# one GEMM. The thread pool splits the batch into one slice per core; each slice is a smaller
# GEMM with one BLAS thread, and starting the pool and splitting the batch costs a fixed time per
# call -- the cell above compares the two, or says that this run cannot decide whether the slices
# were large enough to pay for it here.
#
# ## Experiment 2 · Speedup vs layers: the wavefront (seed §4: communication between threads)
#
# The seed expects that putting adjacent time steps on different threads costs communication of
# hidden states that "would inhibit speedup". The wavefront does exactly that across *layers*:
# the thread computing cell $(l, t)$ hands $h[l, t]$ to the thread computing $(l+1, t)$ at the
# next barrier. In shared memory the hand-off moves no bytes, but every diagonal waits for its
# slowest cell and wakes the pool again.
#
# The **work/span model** ignores all that: every cell costs the same and a barrier is free, so the
# wavefront with $P$ threads gains up to $\min(P, L)\times$ over the layer-by-layer `batched` pass.
# **Predict**: with 2 layers, $B = 64$, $H = 128$, will the measured wavefront come close to the
# model, be faster than `batched` but below the model, or be slower than `batched`?

# %% tags=["nbval-ignore-output"]
P_here = min(4, max(2, cores))
sweep_L = timing.scaled([1, 2, 4, 8], [1, 2, 4])
by_L = inference_exp.layer_sweep(sweep_L, batch=64, T=32, nh=128, threads=P_here, repeat=3)
costs = inference_exp.wavefront_costs(batch=64, nh=128, threads=P_here)
for l, meas, mod in zip(by_L["layers"], by_L["measured"], by_L["model"]):
    print(f"L={l}: wavefront / batched {meas:.2f}x (work/span model: {mod:.2f}x)")
print(f"one cell (64x128 @ 128x128, twice, + tanh): {costs['cell'] * 1e6:.0f} us; handing {P_here} tasks "
      f"to the pool and waiting for them: {costs['handoff'] * 1e6:.0f} us "
      f"({costs['handoff'] / costs['cell']:.2f} of a cell)")
ax = inference_plots.speedup_plot(sweep_L, {f"wavefront, {P_here} threads (measured)": by_L["measured"]},
                         xlabel="layers L", logy=True,
                         title="Wavefront over layer-by-layer batched (B=64, H=128, T=32)",
                         model={f"work/span model, P={P_here}": (sweep_L, by_L["model"])})

# %% tags=["nbval-ignore-output"]
deep = int(np.argmax(by_L["layers"]))
w_best = max(by_L["measured"][1:] or by_L["measured"])
noise_L = by_L["noise"] | costs["noise"]
handoff_share = costs["handoff"] / costs["cell"]
v_wave = seed004.goal_verdict(
    "004.expect.adjacent_steps", holds=bool(w_best < 1.0),
    ours=f"the wavefront at best {w_best:.2f}x the layer-by-layer batched pass for L >= 2 "
         f"(model {max(by_L['model']):.2f}x); a hand-off costs {handoff_share:.2f} of a cell",
    here=f"{P_here} threads, {cores} cores",
    reasons=[(handoff_share < 0.2, "handing cells to the pool costs little next to a cell here, so the "
                                   "synchronisation does not eat the gain"),
             (cores >= 2 * P_here, f"{cores} cores: every thread of the pool has a core of its own")],
    noise=noise_L)
print(v_wave)
if noise_L.ok:
    gap = by_L["measured"][deep] / by_L["model"][deep]
    print(f"measured / model at L={by_L['layers'][deep]}: {gap:.2f}"
          + (" -- the model's assumptions (equal cells, free barriers) do not hold here" if gap < 0.8 else ""))

# %% [markdown]
# Where does the gap between model and measurement come from? Compare the two costs printed
# above. Each diagonal pays one hand-off to the pool and back; if that is a sizeable fraction of
# a cell, the barriers eat the overlap. And `batched` is not a naive baseline: it computes the
# input projection of all $T$ steps of a layer in *one* big GEMM, which the wavefront gives up --
# each of its cells does its own small $x U^\top$. Pipelining pays when cells are big (large
# $H$ or $B$; try it in the panel at the end) or when layers live on different devices.
#
# ## Experiment 3 · Speedup vs P: shared memory or message passing (seed §5 and §7.2 a)
#
# The seed asks whether communication between workers is "most efficiently met by using shared
# memory" or by point-to-point messages, and hopes for an MPI version to compare. With $P$ workers
# over the batch: threads share one address space (no copies), MPI ranks are separate processes
# that must receive their slice and send their results back. Both against the batched pass on
# one core; MPI timed *in-job* (the slowest rank's scatter + compute + gather, without starting
# the processes). Measured for $P$ up to the core count; the **model** beyond it: each worker runs
# $\lceil B/P \rceil$ sequences at the measured per-sequence time, plus the measured communication
# cost per sequence.
#
# **Predict**: at $P$ = the number of cores, which is faster in-job, threads or MPI? And once the
# launch of the MPI job is counted?

# %% tags=["nbval-ignore-output"]
Bp, Lp = 256, 2
Ps = list(range(1, min(4, cores) + 1))
by_P = inference_exp.worker_sweep(Ps, batch=Bp, layers=Lp, T=32, nh=128, repeat=3, mpi=mpi_ok)
print(f"one worker, batched, 1 BLAS thread: {by_P['t_batched'] * 1e3:.1f} ms for B={Bp}")
for i, p in enumerate(Ps):
    print(f"P={p}: threads {by_P['threads'][i]:.2f}x" + (f", MPI (in-job) {by_P['mpi'][i]:.2f}x" if mpi_ok else ""))
if not by_P["noise"].ok:
    print(by_P["noise"].warning())

# %% tags=["nbval-ignore-output"]
t_seq = by_P["t_batched"] / Bp
if mpi_ok:
    r = by_P["mpi_runs"][Ps[-1]]
    t_comm = (r.phase("scatter") + r.phase("gather")) / Bp
else:
    t_comm = 2 * 32 * 64 * 4 / (timing.copy_bandwidth() * 1e9)   # a guess: one copy of a sequence each way
P_model = [1, 2, 4, 8, 16, 32, 64]
model_shared = [inference.data_parallel_model(Bp, p, t_seq)["speedup"] for p in P_model]
model_mpi = [inference.data_parallel_model(Bp, p, t_seq, t_comm)["speedup"] for p in P_model]
series = {"threads (measured)": by_P["threads"]}
if mpi_ok:
    series["MPI (measured, in-job)"] = by_P["mpi"]
ax = inference_plots.speedup_plot(Ps, series, xlabel="workers / ranks P", logy=True,
                         title=f"Batch parallelism, B={Bp}, L={Lp}, H=128, T=32",
                         model={"model: no communication (= ideal P while P divides B)": (P_model, model_shared),
                                "model: + measured scatter/gather" if mpi_ok else "model: + a guessed copy":
                                    (P_model, model_mpi)})

# %% tags=["nbval-ignore-output"]
thr_P, mpi_P = by_P["threads"][-1], (by_P["mpi"][-1] if mpi_ok else None)
if mpi_ok:
    r = by_P["mpi_runs"][Ps[-1]]
    comm_share = (r.phase("scatter") + r.phase("gather")) / r.phase("compute")
    v_mpi = seed004.goal_verdict(
        "004.goal.mpi", holds=bool(mpi_P > 1.0),
        ours=f"MPI with {Ps[-1]} ranks: {mpi_P:.2f}x the batched pass on one core in-job "
             f"(threads: {thr_P:.2f}x); one launch of the job takes {by_P['mpi_runs'][Ps[-1]].wall:.2f} s",
        here=f"{cores} cores, B={Bp}",
        reasons=[(Ps[-1] == 1, "1 core here: one rank only"),
                 (comm_share > 0.5, f"copying the slices there and back costs {comm_share:.2f} of the compute"),
                 (thr_P < 0.8 * Ps[-1], f"threads on the same {Ps[-1]} slices, with nothing to copy, also reach only "
                                         f"{thr_P:.2f}x: each slice of {Bp // Ps[-1]} sequences, with one BLAS "
                                         "thread, is a smaller GEMM than the whole batch")],
        noise=by_P["noise"])
else:
    v_mpi = f"{seed004.goal('004.goal.mpi')}.  Here: MPI is not available ({mpi_info}), so nothing was measured."
print(v_mpi)
if not mpi_ok:
    print("shared memory or messages: MPI is not available here, so only the threads were measured.")
elif not by_P["noise"].ok:
    print("shared memory or messages: no conclusion -- the measurement above was unreliable.")
else:
    faster = "threads (shared memory)" if thr_P > mpi_P else "MPI (messages)"
    print(f"shared memory or messages, here, in-job at P={Ps[-1]}: {faster} is faster "
          f"({max(thr_P, mpi_P) / min(thr_P, mpi_P):.2f}x); counting the launch, MPI takes "
          f"{by_P['mpi_runs'][Ps[-1]].wall / by_P['thread_seconds'][-1]:.0f}x as long as the threads per call.")

# %% [markdown]
# The dashed curves are a **model**, not a measurement: they extrapolate the per-sequence compute
# time and the communication cost measured here to machines with more cores. Past
# $P = B/\text{few}$, $\lceil B/P \rceil$ stops shrinking, and the communication term, which does
# not shrink with $P$ (every sequence still travels once), caps the speedup.
#
# ## What message passing costs
#
# Where does an MPI run spend its time? Each rank reports its seconds per phase; the slowest rank
# sets the pace. Below, the in-job phases for the largest $P$ measured, next to the shared-memory
# run with the same number of threads (from the same sweep), and the launch of the whole job
# (starting $P$ Python processes, importing numpy, reading and writing the `.npz` files).

# %% tags=["nbval-ignore-output"]
if mpi_ok:
    r = by_P["mpi_runs"][Ps[-1]]
    moved = 32 * Bp * 64 * 4 * 2        # inputs (T, B, nx) and probabilities (T, B, vocab), float32
    comm = r.phase("scatter") + r.phase("gather")
    phases = {f"MPI, {r.ranks} ranks (in-job)": {k: r.phase(k) for k in ("bcast", "scatter", "compute", "gather")},
              f"threads, {r.ranks} workers": {"compute": by_P["thread_seconds"][-1]}}
    for k in ("bcast", "scatter", "compute", "gather"):
        print(f"{k:>8}: {r.phase(k) * 1e3:8.3f} ms (slowest rank)")
    print(f"scatter + gather moved {moved / 1e6:.1f} MB at {moved / comm / 1e9:.2f} GB/s "
          f"(a local copy streams at {timing.copy_bandwidth():.1f} GB/s)")
    print(f"communication / compute = {comm / r.phase('compute'):.2f}; whole launch {r.wall:.2f} s vs "
          f"in-job {r.in_job * 1e3:.1f} ms (+ {r.phase('bcast') * 1e3:.1f} ms to broadcast the parameters)")
    if not by_P["noise"].ok:
        print(by_P["noise"].warning())
    ax = inference_plots.phase_bars(phases, title="Where the time goes: message passing vs shared memory")
else:
    print("MPI is not available here:", mpi_info)

# %% [markdown]
# On one machine, message passing pays for two things that shared memory does not: the inputs and
# outputs are *copied* between processes (a thread just reads the shared array), and every job
# starts its processes. The numbers above say how large each is here, next to the compute. Across
# machines there is no shared memory at all, and messages are the only option -- which is why a
# launcher must time out and name a failing rank instead of hanging.
#
# ## When a rank fails
#
# A collective (`Scatterv`, `Gatherv`) waits for *every* rank. A rank that crashes would leave
# the others waiting forever, so the worker catches any exception, records it and aborts the job,
# and the launcher has a timeout. Either way `MPIFailed` says which rank failed and where every
# rank was:

# %% tags=["nbval-ignore-output"]
if mpi_ok:
    for kwargs in (dict(fail_rank=1), dict(hang_rank=1, timeout=3)):
        try:
            inference.run_mpi(params, X, ranks=2, **kwargs)
        except MPIFailed as failure:
            print(f"{kwargs} ->\n  " + str(failure).replace("\n", "\n  "))
else:
    print("MPI is not available here:", mpi_info)

# %% [markdown]
# ## Experiment 4 · The CUDA kernel (seed goal §7.1 b)
#
# `predict_cuda` launches, for every cell $(l, t)$, a 2-D grid with one thread per (hidden unit,
# sequence): thread $(i, s)$ computes $h[s, i] = \tanh(b_i + W_{i,:} h_{prev}[s] + U_{i,:} x[s])$.
# Then one thread per (class, sequence) computes the logits, and one thread per sequence a
# numerically stable softmax (subtract the row maximum first). The states stay on the device
# between steps; the probabilities of each step are copied back to the host.
#
# **Predict**: on a GPU, would this kernel beat the batched numpy pass at $B = 1024$, $H = 256$?
# Count the kernel launches per call first.
#
# The cell below times it only where there is a real GPU. Without one it says so: the simulator
# runs every GPU thread as a Python thread, so its time says nothing about a GPU, and the course
# ships no recorded GPU run to show in its place.

# %% tags=["nbval-ignore-output"]
cuda_result = inference_exp.cuda_run(batch=1024, layers=2, T=32, nh=256)
if cuda_result["measured"]:
    cmp = cuda_result["comparison"]
    print(cmp.table())
    x_cuda = cmp.speedup("cuda_batched", over="batched")
    launches = 32 * (2 + 2)
    v_cuda = seed004.goal_verdict(
        "004.goal.cuda", holds=bool(x_cuda > 1.0),
        ours=f"the CUDA kernel {x_cuda:.2f}x the batched numpy pass (B=1024, L=2, H=256, T=32; "
             f"max |dp| {cuda_result['max_diff']:.1e})",
        here=f"this GPU; {launches} kernel launches and 32 device-to-host copies per call",
        noise=cuda_result["noise"])
else:
    v_cuda = (f"{seed004.goal('004.goal.cuda')}.  Here: no GPU (CUDA mode: {cuda_result['mode']}). The CUDA "
              "method was checked for correctness above in numba's simulator; its speed was not measured, "
              "and there is no recorded GPU run to show instead -- this goal stays unanswered on this machine.")
print(v_cuda)

# %% [markdown]
# ## Try it: batch, layers, method
#
# The panel times the chosen method against the serial loop ($T = 32$, $H = 64$) and shows
# sequences per second. The function behind it is `experiments.inference.measure_methods`: call it
# yourself for other sizes. (Large batches with the serial loop are capped.)

# %% tags=["nbval-ignore-output"]
choices = [m for m in inference.METHODS if m != "sequential"
           and (m != "mpi" or mpi_ok) and (m != "cuda_batched" or backend.gpu_available())]


def compare_to_serial(batch, layers, method):
    return inference_exp.measure_methods(batch=batch, layers=layers, methods=("sequential", method),
                                       T=32, nh=64, repeat=2, threads=P_here, ranks=min(2, batch))


def show(data, ax):
    names = list(data["seq_per_s"])
    values = [data["seq_per_s"][n] for n in names]
    ax.bar(names, values, color=["grey", "tab:blue"])
    ax.set_ylim(0, 1.15 * max(values))
    ax.set_ylabel("sequences / s")
    m = names[1]
    line = (f"B={data['B']}, L={data['layers']}: {m} runs {data['speedup'][m]:.1f}x the serial loop "
            f"(max |dp| {data['max_diff'][m]:.1e})")
    return line if data["noise"].ok else line + "\n" + data["noise"].warning()


panel = widgets.sweep_panel(compare_to_serial,
                            controls={"batch": (1, 512, 1, 64), "layers": (1, 8, 1, 2), "method": choices},
                            render=show, cost=lambda batch, layers, method: batch * layers,
                            max_cost=512 * 4)
panel

# %% [markdown]
# ## The seed's goals and what this machine measured
#
# The seed is a project proposal: it states goals, not measurements. Here they are again, each with
# the verdict computed above from this machine's numbers (same configurations as above).

# %% tags=["nbval-ignore-output"]
for line in (v_openmp, v_wave, v_mpi, v_cuda):
    print(line, end="\n\n")
print(seed004.goal("004.goal.compare") + ".  Here: "
      + ("threads and the CUDA kernel are both timed above." if cuda_result["measured"]
         else "only the CPU side (threads, and MPI where available) could be measured; without a GPU "
              "there is nothing to compare the CUDA kernel's speed with."))

# %% [markdown]
# ## The chapter on this machine, on one screen
#
# The key numbers this run measured, with what its noise check allows ("unreliable" marks a number
# measured while other programs competed for the cores: read it as a hint, not a result).

# %% tags=["nbval-ignore-output"]
flag = lambda n: "" if n.ok else " (unreliable run)"  # noqa: E731
print(f"batching: batched {small['speedup']['batched']:.1f}x the serial loop at B = {small['B']}, "
      f"{big['speedup']['batched']:.1f}x at B = {big['B']}{flag(big['noise'])}")
print(f"threads over the batch at B = {big['B']}: {thr_over_batched[-1]:.2f}x the batched pass on one core "
      f"({min(cores, big['B'])} worker(s)){flag(big['noise'])}")
print(f"wavefront, {P_here} threads: at best {w_best:.2f}x the layer-by-layer pass (work/span model "
      f"{max(by_L['model']):.2f}x); a hand-off costs {handoff_share:.2f} of a cell{flag(noise_L)}")
print(f"P = {Ps[-1]} workers over B = {Bp}: threads {thr_P:.2f}x"
      + (f", MPI in-job {mpi_P:.2f}x" if mpi_ok else ", MPI not available") + flag(by_P["noise"]))
print("CUDA kernel: " + (f"{x_cuda:.2f}x the batched numpy pass" if cuda_result["measured"]
                         else f"not timed (CUDA mode: {cuda_result['mode']})"))

# %% [markdown]
# ## What we learned
#
# * One sequence of an RNN is a chain; parallelism comes from **other sequences** (batch), **other
#   layers** (the wavefront: critical path $T + L - 1$ instead of $T L$) and **inside a cell**
#   (units, on a GPU).
# * Batching turns $B$ matrix-vector products into one GEMM per step; threads and MPI over the
#   batch can add at most $P\times$ on top, and only when each worker's slice is still a GEMM
#   large enough to pay for handing it out -- Experiment 1 shows where that happens here.
# * The wavefront's bound is $\min(P, L)$; the measured gain depends on how a cell's compute
#   compares with a hand-off to the pool (Experiment 2 prints both).
# * Shared memory hands over a pointer, message passing copies bytes and starts processes;
#   Experiment 3 measures both costs on this machine. Across machines only messages remain, and
#   a launcher must time out and name the failing rank instead of hanging.
#
# In the worksheet you write the wavefront schedule, a numerically stable softmax, batched
# softmax inference and the scatter/gather of a batch over $P$ ranks.
#
# Worksheet: [exercises/07_parallel_inference.ipynb](../exercises/07_parallel_inference.ipynb).
# Next: [08 · linear recurrences and scan](08_scan.ipynb).
