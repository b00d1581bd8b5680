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
# # 06 · Parallel inference: batch, layer wavefront, MPI and a CUDA kernel
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
# anyway and whether shared memory (OpenMP in the seed; threads here), message passing (MPI) or a
# GPU kernel (CUDA) exploits it best, with speedup graphs. We look at three axes:
#
# 1. **the batch** -- different sequences are independent (GEMM instead of GEMV, then threads or
#    MPI ranks over slices of the batch);
# 2. **the layers** -- in a stacked RNN, cell $(l, t)$ needs only $(l-1, t)$ and $(l, t-1)$, so
#    the cells of one anti-diagonal run at the same time: the *wavefront*;
# 3. **the units** inside one step -- one GPU thread per hidden unit and sequence.
#
# The real task is a character-level language model trained on Python's own help text.

# %% tags=["nbval-ignore-output"]
import time

import numpy as np
from threadpoolctl import threadpool_limits

import course_lib
from course_lib.core import backend, timing
from course_lib.models import charlm
from course_lib.data import corpus
from course_lib.parallel import inference
from course_lib.teaching import plots, widgets
from course_lib.teaching.plots import inference as iplots

mpi_ok, mpi_info = backend.mpi_available()
print("cores:", backend.cpu_count(), "| CUDA kernels run on:", backend.cuda_mode(),
      "| MPI:", mpi_info if mpi_ok else f"not available ({mpi_info})")

# %% [markdown]
# ## The model: a stacked softmax RNN in the seed's notation
#
# `inference.init_params(nx, nh, vocab, layers=L)` builds the seed's parameters for every layer
# (`U (H, n_in)`, `W (H, H)`, `b (H,)`) and the output (`V (vocab, H)`, `c (vocab,)`): the
# column-vector convention of the pseudocode. Layer 0 reads $x[t]$, layer $l$ reads $h[l-1, t]$.
# `inference.predict(params, X, strategy=...)` takes time-major inputs `X (T, B, nx)` and returns
# probabilities `(T, B, vocab)`; the default strategy, `"serial"`, is the seed's loop verbatim:
# one sequence, one step, one layer at a time, with matrix-*vector* products.

# %%
rng = np.random.default_rng(0)
T, B, nx, nh, vocab, L = 4, 3, 6, 8, 5, 3
params = inference.init_params(nx, nh, vocab, layers=L, seed=0)
for l, layer in enumerate(params.layers):
    print(f"layer {l}: U {layer.U.shape}, W {layer.W.shape}, b {layer.b.shape}")
print(f"output : V {params.V.shape}, c {params.c.shape}")
X = rng.standard_normal((T, B, nx)).astype(np.float32)
Y = inference.predict(params, X)          # strategy="serial"
print("probabilities:", Y.shape, "| every row sums to 1:", bool(np.allclose(Y.sum(-1), 1.0)))

# %% [markdown]
# ## Where the dependencies are
#
# Each circle is one *cell*: a `tanh` of two matrix-vector products. The black arrows come from
# the layer below at the same time step, the red ones from the same layer one step earlier. A
# cell can start as soon as both of its inputs exist -- nothing else constrains it.

# %%
ax = iplots.dependency_graph(6, 3)

# %% [markdown]
# Two observations drive the rest of the chapter:
#
# * along a red chain (one layer, one sequence) nothing can be parallelised -- except *inside* a
#   cell, over the hidden units (the GPU kernel does that);
# * cell $(1, 0)$ does not wait for $(0, 1)$: layer 1 can work on step 0 while layer 0 works on
#   step 1. A stacked RNN is a **pipeline**.
#
# ## Six strategies, one answer
#
# All strategies live in [`course_lib/inference.py`](../course_lib/inference.py):
#
# | strategy | what runs in parallel | how |
# |---|---|---|
# | `serial` | nothing | the seed's loop, GEMV per cell |
# | `batched` | the sequences, inside BLAS | `Z = X U^T + b` for all steps at once, then `h = tanh(Z[t] + h W^T)`: GEMMs |
# | `threads` | slices of the batch | a thread pool (shared memory), one BLAS thread per worker |
# | `wavefront` | the cells of one anti-diagonal | a thread pool, a barrier between diagonals |
# | `mpi` | slices of the batch, in separate processes | `mpiexec -n P`: broadcast, scatter, compute, gather |
# | `cuda` | every (unit, sequence) pair of a cell | a numba CUDA kernel per cell, logits + stable softmax kernels |
#
# They must agree to float32 round-off. (The CUDA kernel runs in numba's CUDA simulator when there
# is no GPU: the very same kernel code, executed thread by thread on the CPU -- slowly, so this
# check is tiny.)

# %%
reference = inference.predict(params, X, strategy="serial")
for strategy in ("batched", "threads", "wavefront", "cuda"):
    got = inference.predict(params, X, strategy=strategy)
    err = float(np.max(np.abs(got - reference)))
    print(f"{strategy:<10} max |p - p_serial| < 1e-5: {err < 1e-5}")

# %% [markdown]
# The MPI strategy starts real processes: `mpiexec -n 2 python -m course_lib.parallel.mpi_infer DIR`
# (see [`course_lib/mpi_infer.py`](../course_lib/mpi_infer.py)). The parameters and inputs travel
# to rank 0 in an `.npz` file, the probabilities come back the same way.

# %% tags=["nbval-ignore-output"]
if mpi_ok:
    got = inference.predict(params, X, strategy="mpi", P=2, timeout=60)
    print(f"mpi (P=2)  max |p - p_serial| < 1e-5: {float(np.max(np.abs(got - reference))) < 1e-5}")
else:
    print("MPI is not available here:", mpi_info)

# %% [markdown]
# ## The wavefront schedule
#
# Number the anti-diagonals $d = l + t$. Both inputs of cell $(l, t)$ lie on diagonal $d - 1$, so
# after a barrier all cells of diagonal $d$ can run together. `inference.wavefront_schedule(T, L)`
# lists them; `predict(..., strategy="wavefront")` executes exactly this list.

# %%
schedule = inference.wavefront_schedule(6, 3)
for d, cells in enumerate(schedule):
    print(f"step {d}: {cells}")
ws = inference.work_span(6, 3)
print(f"work = T*L = {ws['work']} cells, span = T+L-1 = {ws['span']} steps, "
      f"average parallelism = {ws['parallelism']:.2f}")

# %%
ax = iplots.wavefront_plot(schedule)

# %% [markdown]
# The critical path shrinks from $T \cdot L$ to $T + L - 1$ cells, but never more than $L$ cells
# run at once (one per layer), and only in the middle of the schedule. For a 2-layer network the
# best possible speedup is 2; for $T \gg L$ it approaches $L$. We measure how much of that a thread
# pool gets below.
#
# ## The real task: a character-level language model on Python's help text
#
# `course_lib.data.corpus` loads the help topics that ship with every Python (`pydoc_data`), about
# 460 000 characters. The last 10% is held out. The model is the same softmax RNN with one-hot
# characters as inputs ($n_x$ = vocab).

# %%
text = corpus.load_text()
vocab_chars = corpus.Vocab.from_text(text)
ids = vocab_chars.encode(text)
train_ids, val_ids = corpus.split(ids, 0.1)
print(f"{len(text):,} characters, vocabulary of {vocab_chars.size}; "
      f"{train_ids.size:,} for training, {val_ids.size:,} held out")
print("one-hot inputs:", inference.encode(val_ids[:8], vocab_chars.size).shape)

# %% [markdown]
# Training uses backpropagation through time -- the O(T) reverse sweep of chapter 02 -- adapted to
# the softmax output: for cross-entropy the gradient at the logits is simply $y - \text{onehot}$.
# Gradients are checked against finite differences in `tests/test_charlm.py`; the code is
# [`course_lib/charlm.py`](../course_lib/charlm.py). A short Adam run (float64, a few seconds):

# %% tags=["nbval-ignore-output"]
H_LM = 96
lm0 = inference.init_params(vocab_chars.size, H_LM, vocab_chars.size, layers=1, seed=0, dtype=np.float64)
t0 = time.perf_counter()
run = charlm.train(lm0, train_ids, steps=400, T=32, B=32, lr=5e-3, seed=0)
print(f"trained in {time.perf_counter() - t0:.1f} s")

# %%
lm = run.params
print(f"loss: first step {run.losses[0]:.3f}, last 10% of steps {run.final_loss:.3f} (nats per character)")
ppl = charlm.perplexity(lm, val_ids, T=64, max_windows=128)
print(f"held-out perplexity: {ppl:.2f}  (uniform guess: {vocab_chars.size}, "
      f"character frequencies: {charlm.unigram_perplexity(train_ids, val_ids, vocab_chars.size):.2f})")

# %% [markdown]
# Perplexity is $e^{\text{cross-entropy}}$: the model is as unsure as a uniform choice among that
# many characters. Evaluating it *is* batched inference -- 128 windows of 64 characters are one
# batch -- so every strategy must give the same number:

# %%
lm32 = lm.astype(np.float32)
ppls = {s: charlm.perplexity(lm32, val_ids, T=64, max_windows=128, strategy=s) for s in ("serial", "batched", "wavefront")}
print({s: round(v, 2) for s, v in ppls.items()})
print("all equal to 1e-4 relative:", max(ppls.values()) / min(ppls.values()) - 1 < 1e-4)

# %% [markdown]
# And the model writes (seeded, temperature 0.8):

# %%
print(charlm.sample(lm, vocab_chars, prime="The ", n=240, seed=0, temperature=0.8))

# %% [markdown]
# After a few seconds of training it has learnt spaces, newlines, indentation, short common words
# and the shape of English words -- not yet their spelling; a larger $H$ and longer training make
# it much better. Now: how fast can it answer?
#
# ## Speedup vs batch size
#
# A 2-layer network with $H = 64$ and $T = 32$; sequences per second of each strategy, relative to
# the serial loop. The baselines `serial` and `batched` run on **one core** (one BLAS thread);
# `threads` splits the batch over all cores. Timing cells are measured live here (and are noisy on
# a shared machine).

# %% tags=["nbval-ignore-output"]
sweep_B = timing.scaled([1, 4, 16, 64, 256], [1, 4, 16, 64])
strategies_B = ("serial", "batched", "threads")
by_B = [inference.measure_strategies(B=b, layers=2, strategies=strategies_B, T=32, nh=64, repeat=3) for b in sweep_B]
for d in by_B:
    print(f"B={d['B']:>4}: " + ", ".join(f"{s} {d['seq_per_s'][s]:9.0f} seq/s" for s in strategies_B))
ax = iplots.speedup_plot(sweep_B, {s: [d["speedup"][s] for d in by_B] for s in strategies_B[1:]},
                         xlabel="batch size B", title="Speedup over the serial loop (measured, L=2, H=64, T=32)")

# %% [markdown]
# Batching is the big win: one GEMM of $B$ rows replaces $B$ matrix-vector products (chapter 03).
# The thread pool splits the batch into one slice per core; each slice is a smaller GEMM with one
# BLAS thread, so it only pays when each slice is still large enough -- at small $B$ handing work
# to the pool costs more than it saves. If `batched` bends down at the largest $B$, look at the
# intermediates: `batched` projects the inputs of all $T$ steps at once, $T \cdot B \cdot H$ floats
# (2 MB at $B = 256$) per layer -- past the L2 cache, and memory bandwidth is shared by every core.
#
# ## Speedup vs layers: the wavefront
#
# The wavefront runs at most $\min(P, L)$ cells at once. Measured on this machine (against
# `batched` on one core) next to the work/span **model**, which assumes every cell costs the same
# and the barrier between diagonals is free:

# %% tags=["nbval-ignore-output"]
P_here = min(4, max(2, backend.cpu_count()))
sweep_L = timing.scaled([1, 2, 4, 8], [1, 2, 4])
by_L = [inference.measure_strategies(B=64, layers=l, strategies=("batched", "wavefront"), T=32, nh=128,
                                     workers=P_here, repeat=3) for l in sweep_L]
model_L = [inference.work_span(32, l, P_here)["speedup"] for l in sweep_L]
for d, m in zip(by_L, model_L):
    print(f"L={d['layers']}: wavefront / batched {d['speedup']['wavefront']:.2f}x (model: {m:.2f}x)")
ax = iplots.speedup_plot(sweep_L, {f"wavefront, {P_here} threads (measured)": [d["speedup"]["wavefront"] for d in by_L]},
                         xlabel="layers L", title="Wavefront over layer-by-layer batched (B=64, H=128, T=32)",
                         model={f"work/span model, P={P_here}": (sweep_L, model_L)})

# %% [markdown]
# The model says the wavefront can win up to $\min(P, L)\times$. What we measure is smaller: each
# cell is a small GEMM $(64 \times 128) \cdot (128 \times 128)$ of about 2 MFLOP, tens of
# microseconds -- the same order as waking a thread and crossing a barrier. And `batched` is not
# a naive baseline: it computes the input projection of all $T$ steps of a layer in one big GEMM,
# which the wavefront gives up. Pipelining pays when cells are big (large $H$ or $B$) or when
# layers live on different devices.
#
# ## Speedup vs P: shared memory and message passing
#
# With $P$ workers over the batch: threads share one address space (no copies), MPI ranks are
# separate processes that must receive their slice and send their results back. Measured for
# $P$ up to the core count, and the **model** beyond it: each worker runs $\lceil B/P \rceil$
# sequences at the measured per-sequence time, plus the measured communication cost per sequence.

# %% tags=["nbval-ignore-output"]
Bp, Lp = 256, 2
params_p = inference.init_params(64, 128, 64, layers=Lp, seed=0)
Xp = np.random.default_rng(1).standard_normal((32, Bp, 64)).astype(np.float32)
t_batched_1 = None
Ps = list(range(1, min(4, backend.cpu_count()) + 1))
threads_speed, mpi_speed, mpi_runs = [], [], {}
with threadpool_limits(1, "blas"):
    t_batched_1 = timing.measure(inference.predict_batched, params_p, Xp, repeat=3, number=1).min
for p in Ps:
    t = timing.measure(inference.predict_threads, params_p, Xp, workers=p, repeat=3, number=1).min
    threads_speed.append(t_batched_1 / t)
    if mpi_ok:
        res = inference.run_mpi(params_p, Xp, P=p, repeat=3)
        mpi_runs[p] = res
        mpi_speed.append(t_batched_1 / (res.phase("scatter") + res.phase("compute") + res.phase("gather")))
print(f"one worker, batched, 1 BLAS thread: {t_batched_1 * 1e3:.1f} ms for B={Bp}")
for i, p in enumerate(Ps):
    print(f"P={p}: threads {threads_speed[i]:.2f}x" + (f", MPI {mpi_speed[i]:.2f}x" if mpi_ok else ""))

# %% tags=["nbval-ignore-output"]
t_seq = t_batched_1 / Bp
if mpi_ok:
    r = mpi_runs[Ps[-1]]
    t_comm = (r.phase("scatter") + r.phase("gather")) / Bp
else:
    t_comm = 2 * Xp[:, :1].nbytes / timing.copy_bandwidth() / 1e9   # a guess: one copy each way
P_model = [1, 2, 4, 8, 16, 32, 64]
model_shared = [inference.data_parallel_model(Bp, p, t_seq)["speedup"] for p in P_model]
model_mpi = [inference.data_parallel_model(Bp, p, t_seq, t_comm)["speedup"] for p in P_model]
series = {"threads (measured)": threads_speed}
if mpi_ok:
    series["MPI (measured, in-job)"] = mpi_speed
ax = iplots.speedup_plot(Ps, series, xlabel="workers / ranks P",
                         title=f"Batch parallelism, B={Bp}, L={Lp}, H=128, T=32",
                         model={"model: no communication": (P_model, model_shared),
                                "model: + measured scatter/gather": (P_model, model_mpi)},
                         ideal=None)
ax.plot(P_model, P_model, ":", color="grey", label="ideal (P)")
ax.set_yscale("log", base=2)
ax.legend(fontsize=8);

# %% [markdown]
# The dashed curves are a **model**, not a measurement: they extrapolate the per-sequence compute
# time and communication cost measured here to machines with more cores. Past $P = B/\text{few}$,
# $\lceil B/P \rceil$ stops shrinking and the communication term, which does not shrink with $P$
# (every sequence still travels once), caps the speedup.
#
# ## What message passing costs
#
# Where does an MPI run spend its time? Each rank reports its seconds per phase; the slowest rank
# sets the pace. Below, the in-job phases for the largest $P$ measured, next to the shared-memory
# run with the same number of threads, and the launch of the whole job (starting $P$ Python
# processes, importing numpy, reading and writing the `.npz` files).

# %% tags=["nbval-ignore-output"]
if mpi_ok:
    r = mpi_runs[Ps[-1]]
    moved = Xp.nbytes + Bp * 32 * 64 * 4
    t_thr = timing.measure(inference.predict_threads, params_p, Xp, workers=Ps[-1], repeat=3, number=1).min
    phases = {f"MPI, P={r.P} (in-job)": {k: r.phase(k) for k in ("bcast", "scatter", "compute", "gather")},
              f"threads, P={r.P}": {"compute": t_thr}}
    for k in ("bcast", "scatter", "compute", "gather"):
        print(f"{k:>8}: {r.phase(k) * 1e3:8.3f} ms (slowest rank)")
    print(f"scatter + gather moved {moved / 1e6:.1f} MB: "
          f"{moved / (r.phase('scatter') + r.phase('gather')) / 1e9:.2f} GB/s "
          f"(a local copy streams at {timing.copy_bandwidth():.1f} GB/s)")
    print(f"communication / compute = {(r.phase('scatter') + r.phase('gather')) / r.phase('compute'):.2f}; "
          f"whole launch {r.wall:.2f} s vs in-job {sum(r.phase(k) for k in phases[list(phases)[0]]) * 1e3:.1f} ms")
    ax = iplots.phase_bars(phases, title="Where the time goes: message passing vs shared memory")
else:
    print("MPI is not available here:", mpi_info)

# %% [markdown]
# On one machine, message passing pays twice: the inputs and outputs are *copied* between
# processes (shared memory just hands a pointer to a thread), and every job pays a start-up of
# hundreds of milliseconds. Inside a running job, though, the scatter/gather of a few MB is small
# next to the compute -- which is why MPI is the tool when the batch no longer fits one machine,
# and threads are the tool inside one. The seed's question "shared memory or point-to-point
# communication?" has a measured answer: both, at different scales.
#
# ## When a rank fails
#
# A collective (`Scatterv`, `Gatherv`) waits for *every* rank. A rank that crashes would leave
# the others waiting forever, so the worker catches any exception, writes its traceback and
# aborts the job, and the launcher has a timeout. Either way it says which rank failed:

# %% tags=["nbval-ignore-output"]
if mpi_ok:
    for kwargs in (dict(fail_rank=1), dict(hang_rank=1, timeout=3)):
        try:
            inference.run_mpi(params, X, P=2, **kwargs)
        except inference.MPIFailed as failure:
            print(f"{kwargs} ->\n  " + str(failure).replace("\n", "\n  "))
else:
    print("MPI is not available here:", mpi_info)

# %% [markdown]
# ## The CUDA kernel
#
# `predict_cuda` launches, for every cell $(l, t)$, a 2-D grid with one thread per (hidden unit,
# sequence): thread $(i, s)$ computes $h[s, i] = \tanh(b_i + W_{i,:} h_{prev}[s] + U_{i,:} x[s])$.
# Then one thread per (class, sequence) computes the logits, and one thread per sequence a
# numerically stable softmax (subtract the row maximum first). The states stay on the device
# between steps. Without a GPU, numba's simulator runs it; on a GPU it runs for real:

# %% tags=["nbval-ignore-output"]
if backend.gpu_available():
    params_g = inference.init_params(64, 256, 64, layers=2, seed=0)
    Xg = np.random.default_rng(1).standard_normal((32, 1024, 64)).astype(np.float32)
    inference.predict_cuda(params_g, Xg)
    c = timing.compare(cuda=lambda: inference.predict_cuda(params_g, Xg),
                       batched=lambda: inference.predict_batched(params_g, Xg), repeat=3)
    print(c.table())
else:
    t = timing.measure(inference.predict_cuda, params, X, repeat=1, warmup=0, number=1).min
    print(f"no GPU: the kernel ran in numba's CUDA simulator in {t:.2f} s for T={T}, B={B}, H={nh}, L={L}; "
          "the GPU timing is skipped (it needs a CUDA GPU)")

# %% [markdown]
# ## Try it: batch, layers, strategy
#
# The panel times the chosen strategy against the serial loop ($T = 32$, $H = 64$) and shows
# sequences per second. The function behind it is `inference.measure_strategies`: call it
# yourself for other sizes. (Large batches with the serial loop are capped.)

# %% tags=["nbval-ignore-output"]
choices = [s for s in inference.STRATEGIES if s != "serial"
           and (s != "mpi" or mpi_ok) and (s != "cuda" or backend.gpu_available())]


def compare_to_serial(batch, layers, strategy):
    return inference.measure_strategies(B=batch, layers=layers, strategies=("serial", strategy),
                                        T=32, nh=64, repeat=2, workers=P_here, P=min(2, batch))


def show(data, ax):
    names = list(data["seq_per_s"])
    ax.bar(names, [data["seq_per_s"][n] for n in names], color=["grey", "tab:blue"])
    ax.set_ylabel("sequences / s")
    s = names[1]
    return (f"B={data['B']}, L={data['layers']}: {s} runs {data['speedup'][s]:.1f}x the serial loop "
            f"(max |dp| {data['max_diff'][s]:.1e})")


panel = widgets.sweep_panel(compare_to_serial,
                            controls={"batch": (1, 512, 1, 64), "layers": (1, 8, 1, 2), "strategy": choices},
                            render=show, cost=lambda batch, layers, strategy: batch * layers,
                            max_cost=512 * 4)
panel

# %% [markdown]
# ## The seed's goals and our numbers
#
# The seed is a project proposal: it states goals, not measurements. Here they are, each with what
# this notebook measured on this machine.

# %% tags=["nbval-ignore-output"]
big = by_B[-1]
print(f"seed: (a) speed up the forward pass with shared memory (OpenMP)")
print(f"      ours: batched {big['speedup']['batched']:.0f}x and threads {big['speedup']['threads']:.0f}x "
      f"the serial loop at B={big['B']}; threads over batched with P={Ps[-1]}: {threads_speed[-1]:.2f}x")
print(f"seed: (b) speed up the forward pass with CUDA")
print(f"      ours: the kernel is correct (above); "
      + ("timed on the GPU above" if backend.gpu_available() else "no GPU here, so no timing (simulator only)"))
print(f"seed: (hope) MPI, compared with the others")
print(f"      ours: " + (f"MPI with P={Ps[-1]}: {mpi_speed[-1]:.2f}x in-job, launch {mpi_runs[Ps[-1]].wall:.2f} s"
                          if mpi_ok else "MPI not available here"))
print(f"seed: dependencies across layers limit parallelism")
print(f"      ours: wavefront critical path T+L-1; measured {by_L[-1]['speedup']['wavefront']:.2f}x over batched "
      f"at L={by_L[-1]['layers']} (model {model_L[-1]:.2f}x)")

# %% [markdown]
# ## What we learned
#
# * One sequence of an RNN is a chain; parallelism comes from **other sequences** (batch), **other
#   layers** (the wavefront: critical path $T + L - 1$ instead of $T L$) and **inside a cell**
#   (units, on a GPU).
# * Batching is by far the largest win; threads and MPI over the batch add at most $P\times$ on
#   top, and only when each worker's slice is still a decent GEMM.
# * The wavefront's ideal gain is $\min(P, L)$; small cells lose much of it to synchronisation.
# * Shared memory moves pointers, message passing moves bytes and starts processes: on one machine
#   threads win, across machines MPI is the only option -- and a launcher must time out and name
#   the failing rank instead of hanging.
#
# In the worksheet you write the wavefront schedule, a numerically stable softmax, batched
# softmax inference and the scatter/gather of a batch over $P$ ranks.
#
# Next: [07 · linear recurrences and scan](08_scan.ipynb).
