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
# # 08 · Linear recurrences in parallel: the scan, on CPU threads, SIMD lanes and CUDA kernels
#
# An RNN step needs the previous step -- so the time axis looks hopelessly serial. Martin & Cundy
# (2018) noticed that if the recurrence between steps is **linear**,
#
# $$h_t = a_t \odot h_{t-1} + x_t,$$
#
# (with all the non-linear work -- gates, projections -- computed from the *inputs*, in parallel),
# then Blelloch's parallel **scan** (1990) evaluates all $h_t$ in $O(\log T)$ parallel steps.
# Seed 001 (Wen & Tammineedi, CMU 15-418) wrote that scan as three CUDA kernels -- reduce, scan,
# expand -- on a K80 GPU; its headline numbers are printed below, straight from the course's claims
# registry.
#
# This chapter builds the scan from its one idea (an associative operator), draws the trees,
# times a chunked CPU scan against the serial loop, against the loop parallel over channels and
# against this machine's memory bandwidth, gives each SIMD lane its own stretch of time, runs the
# CUDA kernels (in numba's simulator when there is no GPU), and trains the RNNs built on it -- each
# time with the seed's number beside ours. The code: `course_lib/algorithms/scan.py`,
# `course_lib/algorithms/scan_cuda.py`, `course_lib/models/linear_rnn.py`, and the measuring
# helpers in `course_lib/experiments/scan.py`.

# %% tags=["nbval-ignore-output"]
import matplotlib.pyplot as plt
import numpy as np

import course_lib  # noqa: F401  (first: decides GPU vs CUDA simulator before numba is imported)
from course_lib.algorithms import scan, scan_cuda
from course_lib.core import backend, timing
from course_lib.experiments import scan as scan_exp
from course_lib.models import linear_rnn
from course_lib.teaching import widgets
from course_lib.teaching.claims import claim, show
from course_lib.teaching.plots import loglog_plot
from course_lib.teaching.plots import scan as scan_plots
from course_lib.teaching.verdict import verdict

P = backend.max_threads()  # cores, capped by the threads numba was started with
SIZES = timing.scaled([2 ** 10, 2 ** 12, 2 ** 14, 2 ** 16, 2 ** 18, 2 ** 20], [2 ** 10, 2 ** 12, 2 ** 14, 2 ** 16])
H = 128
print(f"{backend.cpu_count()} cores, numba threads {backend.get_threads()}, CUDA: {backend.cuda_mode()}, budget {timing.budget()}")
print("T sweep:", SIZES)

# %%
print(show("001.summary.kernel_speedup", "001.summary.layer_speedup"))

# %% [markdown]
# ## 1 · One idea: composing affine maps
#
# Step $t$ is the map $h \mapsto a_t h + x_t$, the pair $(a_t, x_t)$. Doing $(a_1, b_1)$ and then
# $(a_2, b_2)$ is $h \mapsto a_2(a_1 h + b_1) + b_2$, again a pair:
#
# $$(a_1, b_1) \circ (a_2, b_2) = (a_2 a_1,\; a_2 b_1 + b_2), \qquad \text{identity } (1, 0).$$
#
# Composition of functions is **associative** -- so the pairs may be grouped in any tree, which
# is all a parallel scan needs -- but **not commutative**: order matters.

# %%
rng = np.random.default_rng(0)
p, q, r = ((rng.uniform(0.5, 1, 3), rng.standard_normal(3)) for _ in range(3))
left = scan.combine(scan.combine(p, q), r)
right = scan.combine(p, scan.combine(q, r))
swapped = scan.combine(q, p)
print("(p o q) o r == p o (q o r):", all(np.allclose(u, v) for u, v in zip(left, right)))
print("p o q == q o p:            ", all(np.allclose(u, v) for u, v in zip(scan.combine(p, q), swapped)))

# %% [markdown]
# ### A cautionary closed form
#
# The recurrence has a closed form, $h_t = P_t\,(h_0 + \sum_{s \le t} x_s / P_s)$ with
# $P_t = a_0 \cdots a_t$: one `cumprod` and one `cumsum`, both parallel in numpy. It is exact in
# real numbers and useless in floating point: $P_t$ underflows and $1/P_s$ overflows.

# %%
a_c, x_c, h0_c = scan.random_problem(4000, 4, seed=1, low=0.9, high=1.0)
h_closed = scan.closed_form(a_c, x_c, h0_c)
h_true = scan.recurrence_float64(a_c, x_c, h0_c)
bad = ~np.isfinite(h_closed).all(axis=1)
print("closed form, a in (0.9, 1), float32: first non-finite h at step", int(np.argmax(bad)) if bad.any() else None)
ok = np.abs(h_closed[:500] - h_true[:500]).max() / np.abs(h_true[:500]).max()
print(f"relative error over the first 500 steps: {ok:.1e}")

# %% [markdown]
# ## 2 · Three ways to scan: work and span
#
# *Work* = how many combines in total; *span* = how many parallel steps with unlimited workers.
# The serial loop does $T-1$ combines in $T-1$ steps. **Hillis–Steele** combines every element
# with the one $2^d$ before it at step $d$: span $\lceil\log_2 T\rceil$ but work $\approx T\log_2 T$.
# **Blelloch** builds a reduction tree (up-sweep) and pushes prefixes back down (down-sweep):
# span $2\log_2 T$ and work $2(T-1)$ -- work-efficient. Orange nodes are combines.

# %% tags=["nbval-ignore-output"]
fig = scan_plots.draw_scan_trees(8)
plt.show()

# %%
for T in (8, 1024, 2 ** 20):
    for m in ("sequential", "hillis_steele", "blelloch"):
        print(scan.scan_counts(m, T))

# %% [markdown]
# The readable numpy versions (`scan.hillis_steele`, `scan.blelloch`) count the combines they
# actually do; every method agrees with a float64 loop to float32 round-off (`"channels"` runs the
# serial loop on groups of channels in parallel; `"chunked"` is parallel over time, next section):

# %%
a, x, h0 = scan.random_problem(1000, 16, batch=2, seed=3)
ref = scan.recurrence_float64(a, x, h0)
for m in ("sequential", "channels", "hillis_steele", "blelloch", "chunked"):
    h = scan.linear_recurrence(a, x, h0, method=m)
    err = np.abs(h - ref).max() / np.abs(ref).max()
    print(f"{m:>13}: shape {h.shape}, {h.dtype}, max rel. error < 1e-5: {err < 1e-5}")
print(scan.blelloch(a, x, h0)[1])

# %% [markdown]
# **What span buys on a CPU.** A combine costs 3 flops (2 multiplies, 1 add) against the serial
# step's 2, and a work-efficient scan does about twice the serial work. *Predict* before you read
# on: with this machine's cores, can a scan over time beat the serial loop at all? And how does
# splitting the **channels** (the $H$ independent recurrences, no extra work) compare?
#
# ## 3 · The chunked scan on CPU threads
#
# Blelloch's tree at the top, serial loops at the leaves: split time into chunks, **reduce** each
# chunk to one pair (parallel over chunks), **scan the chunk carries** (a few serial steps),
# **expand** each chunk from its carry (parallel again). `course_lib/algorithms/scan.py` adds
# three tricks: chunk 0 is scanned outright during the reduce (its carry is $h_0$), so with $p$
# threads there are $p+1$ chunks and both phases keep every thread busy; each chunk's loops run
# from 0 over *sliced* rows (`a[s:e]`), which numba compiles to faster loops than `range(s, e)`
# with a run-time start; and the running product is flushed to zero once it is tiny. Why flush?
# Predict whether a loop that multiplies ever-smaller numbers slows down, then look:

# %% tags=["nbval-ignore-output"]
from numba import njit


@njit
def reduce_no_flush(a):
    A = np.ones(a.shape[1], a.dtype)
    for t in range(a.shape[0]):
        A *= a[t]
    return A


@njit
def reduce_flush(a):
    A = np.ones(a.shape[1], a.dtype)
    for t in range(a.shape[0]):
        for j in range(a.shape[1]):
            p_ = A[j] * a[t, j]
            A[j] = p_ if abs(p_) > 1e-30 else 0.0
    return A


a_s, _, _ = scan.random_problem(timing.scaled(2 ** 16, 2 ** 13), H, seed=0, low=0.5, high=0.9)
c = timing.compare(no_flush=lambda: reduce_no_flush(a_s), flush=lambda: reduce_flush(a_s), repeat=5)
print(c)
gain = c.ratio("no_flush", "flush")
big = c.faster("flush", by=1.5, over="no_flush")  # judged from the interleaved pairs, busy machine or not
print(f"The running product of a in (0.5, 0.9) is subnormal after ~150 steps; the loop that lets subnormals "
      f"through took {gain:.1f}x the flushed loop's time (median of pairs). {c.said('flush', over='no_flush')}")
if big == "yes":
    print("Conclusion: the flushed loop was at least 1.5x faster in the pairs -- this CPU handles subnormals slowly.")
elif big == "no":
    print("Conclusion: the flushed loop was not 1.5x faster -- this CPU handles subnormal numbers without a big "
          "penalty, or the loop is memory-bound.")
else:
    print("No conclusion on a 1.5x subnormal penalty from these pairs (too noisy); the sentence above is what they "
          "support.")

# %% [markdown]
# One more trick decides whether the chunked scan can beat the serial loop at all. Count bytes:
# the serial loop moves 12 per element (read $a$ and $x$, write $h$); a chunk that is reduced and
# later expanded reads $a$ and $x$ *twice* -- 20 bytes. On a machine whose memory bus is the
# limit, that extra traffic eats most of the parallel gain. So by default `method="chunked"`
# runs **cache-blocked and pipelined**: time is cut into rounds of small chunks. In each round
# thread 0 scans one chunk straight through, while every other thread expands the chunk it
# reduced in the *previous* round -- small enough to be still in its own L2 cache -- and then
# reduces its next one. Each element crosses the memory bus once, as in the serial loop, and every
# thread has work in every round. (`chunks=C` still runs the one-split textbook version.)
#
# ### SIMD lanes are the CPU's threads
#
# With **one** channel the serial loop is one dependent multiply-add per step: the core waits for
# each result before it can start the next, and its vector unit -- 4 (SSE), 8 (AVX2) or 16 (AVX-512) float32
# lanes, printed below for this CPU -- sits
# idle. The chunked scan then gives every lane its own stretch of time. In $\log_2 K$ passes over
# contiguous memory (`scan_kernels.level`, vectorised) the pairs become *windows* of $K$ steps,
# $(A_t, B_t) = p_{t-K+1} \circ \dots \circ p_t$; after that $h_t = A_t h_{t-K} + B_t$ is the same
# recurrence with stride $K$ -- $K$ independent chains, which the ordinary channel loop runs side by
# side, one per lane. `scan.choose_lanes` reads this CPU's vector width from its flags
# (`backend.simd_bytes()`) and gives channels of at most 16 bytes their lanes over time; wider rows keep the plain loop. Is the machine code really
# vectorised? Count the packed instructions as chapter 04 did:

# %% tags=["nbval-ignore-output"]
ins = scan_exp.lane_instructions()
for name, v in ins.items():
    print(f"{name:<14} packed ops {v['vector']:>3}, scalar ops {v['scalar']:>3}, widest register: {v['widest']}")
print(f"this CPU's vectors: {backend.simd_bytes()} bytes = {backend.simd_bytes() // 4} float32 lanes; lanes per "
      f"channel chosen for H = 1, 2, 4, 8 (float32):", [scan.choose_lanes(h_, 4) for h_ in (1, 2, 4, 8)])

# %% [markdown]
# Predict: one thread, one channel, a long sequence -- how much faster than the serial loop can the
# same chunked kernel be with lanes than without them (`lanes=1` is the plain channel loop)?

# %% tags=["nbval-ignore-output"]
lv = scan_exp.lanes_vs_scalar(timing.scaled(2 ** 22, 2 ** 18), 1, repeat=5)
for name, s in lv["seconds"].items():
    print(f"{name:<14} {1e3 * s:8.2f} ms  {lv['speedup'][name]:5.2f}x the sequential loop")
g = lv["speedup"][f"{lv['lanes']} lanes"]
pays = lv["noise"].faster(f"{lv['lanes']} lanes", by=1.1)  # from the interleaved pairs
print(f"On one thread, {lv['lanes']} SIMD lanes over time made the scan {g:.2f}x the serial loop (median): "
      + {"yes": "at least 1.1x faster in the pairs -- parallelism inside one core pays.",
         "no": "not 1.1x faster in the pairs -- no real gain on this CPU.",
         "cannot tell": "the pairs are too noisy to say whether the gain reaches 1.1x."}[pays])

# %% [markdown]
# Now all methods against the serial loop over $T$, $H = 128$ float32, with the bytes they must
# move (12 per element) against this machine's measured streaming bandwidth. All write into a
# preallocated `out=` array: a fresh result array is new memory, and its first touch costs page
# faults (serialised in the kernel, so threads cannot share that cost) -- easily as much as the
# scan itself at these sizes.

# %% tags=["nbval-ignore-output"]
bw = timing.copy_bandwidth()
mvt = scan_exp.methods_vs_T(SIZES, H, repeat=3)
print(f"np.copyto streaming bandwidth: {bw:.1f} GB/s")
names = list(mvt["rows"][0]["seconds"])
print(f"{'T':>8} " + " ".join(f"{k + ' GB/s':>16}" for k in names) + f" {'chunked x seq':>14} {'chunked x channels':>19}")
for row in mvt["rows"]:
    print(f"{row['T']:>8} " + " ".join(f"{row['gbs'][k]:>16.1f}" for k in names)
          + f" {row['speedup']['chunked']:>13.2f}x {row['seconds']['channels'] / row['seconds']['chunked']:>18.2f}x")
if not mvt["noise"].ok:
    print(mvt["noise"].warning())
ax = loglog_plot([r["T"] for r in mvt["rows"]], {k: [r["seconds"][k] for r in mvt["rows"]] for k in names},
                 xlabel="T (time steps), H = 128", ylabel="time (s)")
ax.set_title("linear recurrence: serial vs parallel over time vs over channels")
plt.show()

# %% [markdown]
# And against the number of threads at a large $T$ (the seed's measure is speed-up at a fixed
# size). On a machine shared with other work, expect noise: the cell says so when it sees it.

# %% tags=["nbval-ignore-output"]
ts = scan_exp.thread_scaling(min(SIZES[-1], 2 ** 18), H, repeat=3)
for row in ts["rows"]:
    print(f"{row['threads']} thread(s): chunked {1e3 * row['seconds']:.2f} ms = {row['gbs']:.1f} GB/s, "
          f"{row['speedup']:.2f}x the serial loop ({ts['sequential_gbs']:.1f} GB/s)")
print(f"streaming bandwidth (np.copyto): {bw:.1f} GB/s")
if not ts["noise"].ok:
    print(ts["noise"].warning())

# %% [markdown]
# **Time axis or channel axis?** Only the time axis has parallelism when there are few channels;
# with many channels, splitting them costs no extra work at all. Predict where the crossover lies
# on this machine: for which $H$ does parallel-over-time stop winning? The next cell times the
# three methods on a grid of $T$ and $H$ and marks where the winner changes.

# %% tags=["nbval-ignore-output"]
CT = timing.scaled([2 ** 10, 2 ** 13, 2 ** 16, 2 ** 19], [2 ** 10, 2 ** 13])
CH = [1, 2, 4, 8, 16, 64, 256]
cross = scan_exp.crossover(CT, CH, repeat=3, max_elements=timing.scaled(1 << 22, 1 << 16))
T_big = max(T_ for T_ in CT if sum((T_, h_) in cross["cells"] for h_ in CH) >= 5)
fig, axes = plt.subplots(1, 2, figsize=(13, 3.8))
scan_plots.time_vs_H(cross, T_big, ax=axes[0])
scan_plots.crossover_map(cross, ax=axes[1])
fig.tight_layout()
plt.show()
w_row = [(H_, cross["cells"][(T_big, H_)]["winner"]) for H_ in CH if (T_big, H_) in cross["cells"]]
print(f"T = {T_big}: fastest method by H:", ", ".join(f"H={h_}: {w}" for h_, w in w_row))
sure = [(h_, w) for h_, w in w_row if cross["cells"][(T_big, h_)]["decided"]]
unsure = [h_ for h_, w in w_row if not cross["cells"][(T_big, h_)]["decided"]]
time_wins = [h_ for h_, w in sure if w == "chunked"]
if time_wins:
    print(f"Parallel over time won, by 5% or more in the timed pairs, for H in {time_wins}; at larger H "
          f"{'channels' if any(w == 'channels' for _, w in sure) else 'the serial loop'} took over.")
elif sure:
    print(f"Parallel over time won by 5% at none of the H the pairs decide ({[h_ for h_, _ in sure]}) at this T.")
if unsure:
    print(f"H in {unsure}: the pairs cannot tell the winner apart by 5% here (a busy machine or a close race): "
          "the map's colour there is the median, not a conclusion.")

# %% [markdown]
# The slider at the end lets you look for the crossover yourself.
#
# ## 4 · The reduce / scan / expand phases
#
# The seed timed its three kernels at $T = 524288$, $H = 128$ on a K80:

# %%
print(show("001.phases.reduce", "001.phases.scan", "001.phases.expand"))

# %% [markdown]
# Predict: does expand dominate on a CPU too? Here are the same phases of the textbook CPU scan
# (run on one thread, so the split is not blurred by thread scheduling):

# %% tags=["nbval-ignore-output"]
T_ph = timing.scaled(2 ** 19, 2 ** 16)
a, x, h0 = scan.random_problem(T_ph, H, seed=0)
cpu = scan_exp.chunked_phases(a, x, h0, chunks=8, repeat=3)
print(f"CPU, T={T_ph}, {cpu['chunks']} chunks: reduce {100 * cpu['reduce_frac']:.1f}% / scan "
      f"{100 * cpu['scan_frac']:.1f}% / expand {100 * cpu['expand_frac']:.1f}%")
print(verdict("001.phases.expand", 100 * cpu["expand_frac"], here=f"1 CPU thread, T = {T_ph}, H = {H}",
              pivot=50.0, within=1.5, unit="%", noise=cpu["noise"],
              reasons=[(cpu["reduce_s"] > 0.75 * cpu["expand_s"],
                        f"here reduce takes {cpu['reduce_s'] / cpu['expand_s']:.2f} of expand's time: on a CPU the "
                        "reduce keeps two running values (A and B) per element -- as much arithmetic as the expand -- "
                        "and only writing h is extra")]))

# %% [markdown]
# ## 5 · The scan as CUDA kernels
#
# `course_lib/algorithms/scan_cuda.py` holds the seed's structure in numba's CUDA dialect:
#
# * `blelloch_block_kernel` -- the **teaching kernel**: one block per channel, one thread per time
#   step, up-sweep and down-sweep in shared memory with `cuda.syncthreads()` between levels;
# * `reduce_kernel` (each CUDA thread reduces its chunk serially, then the block reduces its
#   threads' pairs in shared memory), `carry_kernel` (scan of the block carries) and
#   `expand_kernel`. Launch sizes: `block` CUDA threads per block, `chunk` steps per thread, `grid`
#   blocks along time.
#
# Without a GPU they run in numba's **CUDA simulator**: one Python thread per CUDA thread, the
# same code, very slowly -- so the sizes here are tiny.

# %% tags=["nbval-ignore-output"]
print("CUDA kernels run on:", "a GPU" if backend.gpu_available() else "numba's CUDA simulator (CPU)")

# %%
a, x, h0 = scan.random_problem(16, 2, seed=5, dtype="float64")
h_blk = scan_cuda.run_block_kernel(scan_cuda.blelloch_block_kernel, a, x, h0)
print("teaching kernel, T=16 threads, 2 blocks: max error",
      f"< 1e-12: {np.abs(h_blk - scan.recurrence_float64(a, x, h0)).max() < 1e-12}")
a, x, h0 = scan.random_problem(200, 3, seed=6)
h_cuda = scan.linear_recurrence(a, x, h0, method="cuda_chunked", block=8, chunk=4)
print("reduce/scan/expand kernels, T=200, 3 channels, grid of 7 blocks x 8 threads x 4 steps: max rel. error",
      f"< 1e-5: {np.abs(h_cuda - scan.recurrence_float64(a, x, h0)).max() / np.abs(h0).max() < 1e-5}")

# %% [markdown]
# The phase split of the CUDA kernels. **In the simulator this is Python-thread time on the CPU**:
# it says which kernel does more *work* per thread, but nothing about GPU speed.

# %% tags=["nbval-ignore-output"]
if backend.gpu_available():
    a, x, h0 = scan.random_problem(524_288, 128, seed=0)
    gpu = scan_exp.cuda_phases(a, x, h0, repeat=5)
    label = "this GPU, T=524288, H=128"
else:
    a, x, h0 = scan.random_problem(256, 2, seed=0)
    gpu = scan_exp.cuda_phases(a, x, h0, block=16, chunk=4, repeat=1)
    label = "CUDA SIMULATOR (CPU threads!), T=256, H=2"
print(f"{label}: reduce {100 * gpu['reduce_frac']:.1f}% / scan {100 * gpu['scan_frac']:.1f}% / "
      f"expand {100 * gpu['expand_frac']:.1f}%  (grid {gpu['grid']} blocks x {gpu['block']} threads x {gpu['chunk']} steps)")
splits = {"seed: K80 GPU, T=524288": scan_plots.seed_phases(),
          f"ours: CPU, {cpu['chunks']} chunks, 1 thread": {k: cpu[f"{k}_frac"] for k in scan_exp.PHASES},
          ("ours: GPU" if backend.gpu_available() else "ours: CUDA simulator"): {k: gpu[f"{k}_frac"] for k in scan_exp.PHASES}}
scan_plots.phase_split_bars(splits)
plt.show()

# %% [markdown]
# The seed also looked *inside* reduce and expand: "in the reduction kernel, the first phase, in which
# the values inside each warp are reduced takes the most time, and likewise for the phase inside the
# warp for the expand kernel. This is as expected because the within-warp procedures operate on the
# most number of elements." Our kernels have the same two phases: each CUDA thread composes its chunk
# serially (the within-warp phase), then the block combines one pair per thread in shared memory. The
# kernels count the elements each phase works on (one atomic add per thread per phase), so this is a
# count, valid in the simulator and on a GPU alike. **Predict:** for `chunk` steps per thread, how many
# times more elements does the within-thread phase handle than the block phase?

# %%
for blk, ch in ((16, 4), (32, 64)):
    a, x, h0 = scan.random_problem(blk * ch * 2, 2, seed=0, dtype="float64")
    pc = scan_cuda.phase_counts(a, x, h0, block=blk, chunk=ch)
    print(f"block {blk}, chunk {ch}, T = {len(a)}, 2 channels: reduce -- within-thread {pc['reduce_thread']} "
          f"elements, block tree {pc['reduce_block']}; expand -- block tree {pc['expand_block']}, within-thread "
          f"{pc['expand_thread']}: the within-thread phases handle {pc['reduce_thread'] / pc['reduce_block']:.0f}x "
          "the elements of the block phases")

# %% [markdown]
# In the seed's split the scan of the carries is negligible -- which is why the seed concludes that
# a better scan algorithm cannot help further; only the memory traffic of reduce and expand
# matters. Compare the bars above: does that hold on this CPU too?
#
# ### What a real GPU wants: coalesced loads
#
# The kernels above lay their threads **along time**: thread $k$ of a block owns a chunk of `chunk` steps of
# one channel, so the 32 threads of a warp read 32 addresses `chunk * N` floats apart -- up to 32 memory
# transactions where one would do. `course_lib/algorithms/scan_cuda_coalesced.py` keeps the seed's three
# kernels but gives each block a tile of 32 channels by a few time-workers: a warp then reads 32
# *neighbouring channels* of one step, one transaction. The same file holds the seed's baseline, the
# "serial kernel" that "is parallelized over the hidden dimensions" (one CUDA thread per channel).
#
# **Predict:** on a GPU with thousands of cores, how far ahead of the serial kernel is each scan at
# $H = 128$ and a million steps -- near the seed's kernel speed-up (in the claims at the top of this chapter), or
# far from it? (First, both new kernels are checked
# against the loop -- in the simulator here when there is no GPU.)

# %%
from course_lib.algorithms import scan_cuda_coalesced
from course_lib.experiments import scan_gpu as scan_gpu_exp

a, x, h0 = scan.random_problem(40, 33, seed=7)   # 33 channels: one full tile of 32 and a ragged one
ref = scan.recurrence_float64(a, x, h0)
for name, h in (("serial kernel", scan_cuda_coalesced.linear_recurrence_cuda_serial(a, x, h0, block=16)),
                ("coalesced scan", scan_cuda_coalesced.linear_recurrence_cuda_tiled(a, x, h0, workers=3, chunk=4))):
    print(f"{name}, T = 40, 33 channels: max error < 1e-5: {np.abs(h - ref).max() < 1e-5}")

# %% tags=["nbval-ignore-output"]
if backend.gpu_available():   # measured here: CUDA events time the kernels, so other programs on the CPU do not enter
    gpu_rows = scan_gpu_exp.layouts(1 << 20, 128, repeat=10)
    where = f"this GPU ({backend.detect_gpu()[1]}), measured now"
else:   # no GPU: the course's own run, a stored record -- not a measurement of this machine
    stored = scan_gpu_exp.record()
    gpu_rows = [r for r in stored["table"] if r["T"] == 1 << 20]
    where = (f"NO GPU HERE -- the stored record benchmarks/results/{scan_gpu_exp.RECORD.name}: "
             f"{stored['machine']['gpu']}, {stored['machine']['date']}")
print(where)
for r in gpu_rows:
    print(f"  T = {r['T']}, H = {r['N']}: {r['kernel']:<26} {r['median_s'] * 1e3:9.3f} ms  {r['gbs']:7.1f} GB/s "
          f"({r['pct_stream']:4.1f}% of a streaming kernel)  {r['speedup_over_serial']:7.1f}x the serial kernel")
if backend.gpu_available():
    along, tiled = (next(r for r in gpu_rows if r["kernel"] == k) for k in scan_gpu_exp.KERNELS[1:])
    print(verdict("001.summary.kernel_speedup", tiled["speedup_over_serial"], here=f"coalesced scan, {where}",
                  reasons=[(tiled["pct_stream"] > 50, f"the coalesced scan streams at {tiled['pct_stream']:.0f}% of "
                            "this card's measured bandwidth while the serial kernel keeps only 128 threads busy"),
                           (tiled["speedup_over_serial"] < along["speedup_over_serial"],
                            "the coalesced scan is slower than the one with threads along time here")]))

# %% [markdown]
# In the stored H200 rows above (T = 2^20) the layout is worth an order of magnitude: threads along time reach a
# few per cent of the card's streaming bandwidth, the coalesced tiles most of it -- the same lesson as chapter
# 09's data layout, now for a GPU's memory system. On a GPU of your own, the rows are this run's. (`benchmarks/gpu.py` makes the whole record: six sequence lengths,
# the phase split at $T = 524{,}288$ and a launch-size sweep; it runs on any CUDA GPU.)
#
# ## 6 · The speed-ups, side by side
#
# The seed's kernel speed-up compares its parallel kernel with a "serial" kernel that is serial over time but
# **parallel over the hidden units** -- our `method="channels"`, not a one-thread loop. So the
# like-for-like ratio is chunked against channels, at the seed's $H = 128$ and the largest $T$
# measured above. Predict its size on a CPU with this many cores.

# %% tags=["nbval-ignore-output"]
last = mvt["rows"][-1]
like = last["comparison"].speedup("chunked", over="channels")   # median of the interleaved pairs
stream_share = last["gbs"]["channels"] / bw
print(f"T = {last['T']}, H = {H}, {P} threads: chunked vs channels {like:.2f}x; chunked vs the one-thread loop "
      f"{last['speedup']['chunked']:.2f}x")
print(verdict("001.summary.kernel_speedup", like, here=f"{P} CPU cores, T = {last['T']}, H = {H}",
              noise=last["comparison"].noise, interval=last["comparison"].speedup_interval("chunked", over="channels"),
              reasons=[(stream_share > 0.5, f"the loop parallel over channels already streams at "
                                            f"{100 * stream_share:.0f}% of the measured memory bandwidth: "
                                            "little is left for the time axis to win"),
                       (P < 16, f"{P} CPU cores here, against the K80's thousands of CUDA threads")]))
bw_row = next((r for r in mvt["rows"] if r["T"] == 65536), last)   # the seed measured its bandwidth at T = 65,536
frac = 100 * bw_row["gbs"]["chunked"] / bw
bw_share, bw_like = bw_row["gbs"]["channels"] / bw, bw_row["seconds"]["channels"] / bw_row["seconds"]["chunked"]
print(verdict("001.bandwidth.fraction", frac, here=f"chunked, {P} CPU threads, T = {bw_row['T']}",
              pivot=None, unit="%", noise=bw_row["comparison"].noise,
              reasons=[(100 * bw_share > claim("001.bandwidth.fraction").value,
                        f"even the loop parallel over channels streams at {100 * bw_share:.0f}% of the measured "
                        "bandwidth here: a CPU's caches and prefetchers reach a larger share of its "
                        "(much smaller) bandwidth than the seed's Kepler GPU did"),
                       (bw_like < 1, f"the chunked scan takes {1 / bw_like:.2f}x the channel loop's time here: it does "
                                  "extra work per element on this CPU")]))

# %% [markdown]
# ### The backward pass is a scan too
#
# Backpropagating through $h_t = a_t h_{t-1} + x_t$ gives $g_t = a_{t+1} g_{t+1} + \partial L/\partial h_t$:
# the same recurrence, run from the last step down (`scan.linear_recurrence_backward`). It takes the
# same `method=`, so the backward gets the same parallelism. Around the scan it does element-wise
# work no method changes: it reverses its inputs and forms $\partial L/\partial a_t = h_{t-1} g_t$.
#
# **Predict:** will the whole backward call gain as much as its reverse scan? At one channel and
# at 128?

# %% tags=["nbval-ignore-output"]
bwd = [scan_exp.backward_speedup(T_, H_, repeat=3)
       for H_, T_ in ((1, timing.scaled(2 ** 21, 2 ** 16)), (H, timing.scaled(2 ** 18, 2 ** 12)))]
for r in bwd:
    print(f"H = {r['nh']:3d}, T = {r['T']:8d}: reverse scan {r['scan_speedup']:.2f}x, whole backward "
          f"{r['whole_speedup']:.2f}x the serial one; the serial scan is {r['scan_share']:.0%} of the serial backward "
          f"(chunked equals serial: {r['max_rel_diff'] < 1e-5})")
noise_b = bwd[0]["noise"] | bwd[1]["noise"]
if not noise_b.ok:
    print(noise_b.warning())
else:
    for r in bwd:
        cap = 1 / (1 - r["scan_share"] + r["scan_share"] / max(r["scan_speedup"], 1e-9))
        print(f"H = {r['nh']}: Amdahl with the measured scan share and scan speed-up allows {cap:.2f}x; measured "
              f"{r['whole_speedup']:.2f}x" + (" -- the element-wise work around the scan sets the limit"
                                              if r["scan_share"] < 0.5 else ""))

# %% [markdown]
# ## 7 · RNNs built on the scan
#
# `course_lib/models/linear_rnn.py` has three layers whose only time-carried state is a linear
# recurrence, each with a forward and a backward pass (the backward is the reverse scan,
# `scan.linear_recurrence_backward`, so it gets the same methods), plus the classic serial LSTM as
# the baseline. Each layer's parameters are a dataclass (`GILRParams`, `SRUParams`, `QRNNParams`,
# `SerialLSTMParams`) that names its layer:
#
# * **GILR-LSTM** (seed 001's equations): $\tilde h_t = g_t \tilde h_{t-1} + (1-g_t) j_t$ by a
#   scan, the LSTM gates from $\tilde h_{t-1}$ and $x_t$, then $c_t = f_t c_{t-1} + i_t z_t$ by a
#   second scan;
# * **SRU**: $c_t = f_t c_{t-1} + (1 - f_t)\tilde x_t$, $h_t = r_t \tanh c_t + (1-r_t)\tilde x_t$;
# * **QRNN** (window $k$): gates from a causal convolution of width $k$, then fo-pooling.
#
# Gradients agree with finite differences, and any scan method gives the same layer:

# %%
Xg = np.random.default_rng(0).standard_normal((6, 2, 3))
for layer in linear_rnn.LAYERS:
    prm = linear_rnn.init_params(layer, 3, 4, k=2, seed=1)
    Hs, cache = linear_rnn.forward(prm, Xg)
    W = np.random.default_rng(1).standard_normal(Hs.shape)
    grads, _ = linear_rnn.backward(prm, cache, W)
    name, arr = prm.names()[0], prm.arrays()[0]
    num = np.zeros_like(arr)
    for idx in np.ndindex(num.shape):
        old = arr[idx]
        arr[idx] = old + 1e-6
        up = (linear_rnn.forward(prm, Xg)[0] * W).sum()
        arr[idx] = old - 1e-6
        dn = (linear_rnn.forward(prm, Xg)[0] * W).sum()
        arr[idx] = old
        num[idx] = (up - dn) / 2e-6
    rel = np.abs(num - grads.arrays()[0]).max() / np.abs(num).max()
    same = np.allclose(linear_rnn.forward(prm, Xg, method="blelloch")[0], Hs)
    print(f"{layer:>9} ({type(prm).__name__}): dL/d{name} vs finite differences < 1e-6: {rel < 1e-6}; "
          f"blelloch scan == serial: {same}")

# %% [markdown]
# ### A whole layer, forward and backward: the seed's end-to-end speed-up
#
# The seed's second headline is the speed-up of whole LSTM / SRU / QRNN layers in TensorFlow when
# they call the parallel kernel instead of the serial one -- much smaller than the kernel's own,
# because a layer does more than scan. Here each layer runs forward + backward with the serial
# scan, the scan parallel over channels, and the chunked scan, on a long sequence with few channels
# (the regime where time is the only axis to split). Alongside: how much of the layer's time its
# scans take, and the speed-up that share allows (Amdahl). Predict: which layer gains most?

# %% tags=["nbval-ignore-output"]
LT = timing.scaled(2 ** 16, 2 ** 13)
layer_runs = {ly: scan_exp.layer_speedup(ly, LT, batch=1, nx=4, nh=4, repeat=3) for ly in ("gilr_lstm", "sru", "qrnn")}
print(f"T = {LT}, B = 1, nx = H = 4, float32, forward + backward; speed-ups over the serial scan")
print(f"{'layer':>10} {'channels':>9} {'chunked':>8} {'scan share':>11} {'scan alone':>11} {'Amdahl':>7} {'cap':>6}")
for ly, r in layer_runs.items():
    print(f"{ly:>10} {r['layer_speedup']['channels']:>8.2f}x {r['layer_speedup']['chunked']:>7.2f}x "
          f"{100 * r['scan_share']:>10.0f}% {r['scan_speedup']['chunked']:>10.2f}x {r['amdahl']['chunked']:>6.2f}x "
          f"{r['cap']:>5.2f}x")
seed_layer = claim("001.summary.layer_speedup").value
for ly, br in layer_runs.items():
    print(verdict("001.summary.layer_speedup", br["layer_speedup"]["chunked"],
                  here=f"{ly}, {P} CPU cores, numpy layer, T = {LT}", noise=br["noise"],
                  interval=br["layer_interval"]["chunked"],
                  reasons=[(br["layer_speedup"]["chunked"] < 1 <= br["scan_speedup"]["chunked"],
                            f"the layer ran slower although its scans alone ran faster: a difference inside this "
                            f"run's spread ({100 * br['noise'].spread:.0f}% of the median)"),
                           (br["cap"] < seed_layer, f"the scans are only {100 * br['scan_share']:.0f}% of the layer's "
                                                    f"time here (numpy gates and GEMMs are the rest): even an instant "
                                                    f"scan would give at most {br['cap']:.2f}x"),
                           (br["scan_speedup"]["chunked"] < seed_layer,
                            f"the scan itself gains only {br['scan_speedup']['chunked']:.1f}x on {P} cores")]))

# %% [markdown]
# ### Remember the first element
#
# Seed 001's synthetic test: "a very long random sequence, and the model must remember the first
# element and output it". The seed trained a TensorFlow LSTM and an LSTM using its parallel kernel
# until every prediction was right, and reported time and epochs (it names neither the sequence length,
# nor the optimiser, nor the exact input encoding). Here the first input is $\pm e_1$, the rest is
# noise, and at the end the model must say the first sign:

# %%
print(show("001.remember.lstm_seconds", "001.remember.scan_seconds"))

# %% [markdown]
# Here both train the same way -- the course's choices, not the seed's: a fixed training set, shuffled
# into batches each epoch, Adam, the same data and settings for both, stopping (as the seed measured)
# at the first epoch where a held-out set of 256
# sequences is entirely right -- on a short length so the notebook stays quick; the GILR-LSTM uses the
# chunked scan. Predict: which gets every held-out sequence right first, in epochs and in seconds?

# %% tags=["nbval-ignore-output"]
T_rem = 16
table = scan_exp.remember_first(T_rem, layers=("lstm", "gilr_lstm"), method="chunked", nh=8, max_epochs=40)
seed_row = {"lstm": (claim("001.remember.lstm_seconds").value, claim("001.remember.lstm_epochs").value),
            "gilr_lstm": (claim("001.remember.scan_seconds").value, claim("001.remember.scan_epochs").value)}
print(f"{'':<30}{'Traditional LSTM':>26}{'LSTM using the scan':>30}")
print(f"{'seed (TensorFlow, K80)':<30}" + f"{'%g s (%g epochs)' % seed_row['lstm']:>26}"
      + f"{'%g s (%g epochs)' % seed_row['gilr_lstm']:>30}")
cells = []
for row in table["rows"]:
    txt = (f"{row['seconds']:.2f} s ({row['epochs']} epochs)" if row["converged"]
           else f"not 100% in {row['epochs']} epochs ({row['final_accuracy']:.1%})")
    cells.append(f"{txt:>26}" if row["layer"] == "lstm" else f"{txt:>30}")
print(f"{f'here (numpy, T = {T_rem}, H = 8)':<30}" + "".join(cells))
scan_plots.accuracy_curves(table["results"])
plt.show()

# %% tags=["nbval-ignore-output"]
lstm_r, gilr_r = (next(r for r in table["rows"] if r["layer"] == ly) for ly in ("lstm", "gilr_lstm"))
if not (lstm_r["converged"] and gilr_r["converged"]):
    missing = [r["layer"] for r in (lstm_r, gilr_r) if not r["converged"]]
    print(f"Not comparable with the seed's table: {', '.join(missing)} did not reach 100% in "
          f"{max(r['epochs'] for r in (lstm_r, gilr_r))} epochs here (the seed reports both reaching it).")
else:
    t_ratio = lstm_r["seconds"] / gilr_r["seconds"]  # one timed run each: only a 1.5x gap is a conclusion
    when = "sooner" if t_ratio > 1.5 else "later" if t_ratio < 1 / 1.5 else "within 1.5x of the LSTM (too close to call from one run)"
    fewer = gilr_r["epochs"] <= lstm_r["epochs"]
    per_epoch = lstm_r["seconds_per_epoch"] / gilr_r["seconds_per_epoch"]
    print(f"Seed: the scan-based LSTM reached 100% sooner in wall time and in fewer epochs. Here it was "
          f"{when} in wall time ({gilr_r['seconds']:.2f} s vs {lstm_r['seconds']:.2f} s) and "
          f"needed {'no more' if fewer else 'more'} epochs ({gilr_r['epochs']} vs {lstm_r['epochs']}). "
          + f"Per epoch it ran at {per_epoch:.1f}x the LSTM's speed"
          + (": its only loop over time is the scan, while the LSTM steps through T small matrix products."
             if per_epoch > 1.5 else " -- within 1.5x from one timed run: at this short T neither loop over time "
             "dominates an epoch."))

# %% [markdown]
# ## 8 · Try it
#
# Pick $T$, $H$, the method and the number of chunks (0 = automatic) and compare with the serial
# loop. Small $T \cdot H$ stays on one thread on purpose (`scan.choose_chunks`); few channels get
# SIMD lanes over time (`scan.choose_lanes`). Where does each method win on this machine?

# %% tags=["nbval-ignore-output"]
panel = widgets.sweep_panel(
    scan_exp.scan_sweep,
    controls={"T": (1024, 1 << 20, 1024, 1 << 16), "nh": (1, 1024, 1, 128),
              "method": list(scan_exp.SWEEP_METHODS),
              "chunks": (0, 64, 1, 0)},
    render=scan_plots.render_sweep,
    cost=lambda T, nh, method, chunks: T * nh * (20 if method in ("blelloch", "hillis_steele") else 1),
    max_cost=2 ** 27,
    title="linear recurrence: method vs the serial loop",
)
panel

# %% [markdown]
# ## 9 · The scan as matmuls: where production went
#
# Production recurrent layers -- Mamba-2 (SSD), gated linear attention, DeltaNet and Gated DeltaNet
# (Qwen3-Next), Kimi Linear -- keep a **matrix** state per head and update it linearly:
#
# $$S_t = a_t\,S_{t-1} + k_t v_t^\top, \qquad o_t = S_t^\top q_t, \qquad S_t \in \mathbb{R}^{d_k \times d_v}.$$
#
# Every entry of $S$ is a recurrence $h = a h + x$ of this chapter, so chapter 08's scan runs it as it
# is (`method="scan"`: the state flattened to $d_k d_v$ channels). Nobody does. Unrolled inside a chunk of
# $c$ steps, with $G_i = \log a_1 + \dots + \log a_i$,
#
# $$o_i = \sum_{j \le i} (q_i \cdot k_j)\, e^{G_i - G_j}\, v_j + (q_i e^{G_i})^\top S_{\text{in}}
#       = \big((Q K^\top) \odot L\big) V + \tilde Q\, S_{\text{in}},$$
#
# two matrix products per chunk with a **decay mask** $L_{ij} = e^{G_i - G_j}$ ($j \le i$), and only the
# $T/c$ chunk states are scanned. That is the **chunked form** (`method="chunked"`). The mask is built from
# differences in log space: $e^{G_i}$ alone underflows in a long chunk, $1/e^{G_j}$ overflows.
# The code: `course_lib/algorithms/linear_attention.py`, `delta_rule.py`, `course_lib/parallel/mpi_scan.py`.

# %%
from course_lib.algorithms import delta_rule, linear_attention
from course_lib.experiments import linear_attention as linear_attention_exp

q_s, k_s, v_s, dec_s = linear_attention.random_problem(300, 2, 2, 8, 8, seed=0)
ref_s = linear_attention.recurrence_float64(q_s, k_s, v_s, dec_s)
for m in linear_attention.METHODS:
    o_m = linear_attention.gated_linear_recurrence(q_s, k_s, v_s, dec_s, method=m)
    err = np.abs(o_m - ref_s).max() / np.abs(ref_s).max()
    print(f"{m:<10} o {o_m.shape} {o_m.dtype}: equals the float64 loop to 1e-5: {bool(err < 1e-5)}")
G_long = np.cumsum(np.log(np.full(512, 0.5)))
print("a chunk of 512 steps with decay 0.5: exp(G) underflows to 0:", bool(np.exp(G_long.astype(np.float32))[-1] == 0),
      "| the log-space mask is finite:", bool(np.isfinite(linear_attention.decay_mask(G_long)).all()))

# %% [markdown]
# **Why bother?** Count the work per token (one head, $d_k = d_v = d$): the loop and the scan do about
# $4d^2$ element-wise operations; the chunked form does $2c(d_k + d_v) + 4 d_k d_v$ flops -- *more* -- but
# in matrix products. On a data-centre GPU the matrix (tensor-core) units are an order of magnitude faster
# than its element-wise float32 units (NVIDIA's A100 data sheet), and the published GPU results below are
# ratios of that kind. On a CPU the same question has a measurable answer: this machine's GEMM rate
# against its element-wise rate, and (for the scan) its memory bandwidth.

# %% tags=["nbval-ignore-output"]
for d_ in (64, 128):
    c_ = linear_attention.default_chunk(1 << 16, d_)
    print(f"d = {d_:>3}, chunk {c_}: chunked {linear_attention.chunked_flops(1, d_, d_, c_) / c_:,.0f} flops per token in "
          f"matrix products vs {4 * d_ * d_:,} element-wise operations for the loop")
print(show("beyond.mamba2.ssd_speedup", "beyond.mamba.scan_vs_attention_crossover"))

# %% [markdown]
# *Predict* before you run: on this CPU, does the chunked form beat the element-wise scan? By how much at
# long $T$ -- more or less than Mamba-2's published speed-up printed above? And does it beat the plain loop, whose $d \times d$ state
# ($16$ KB at $d = 64$) never leaves the L1 cache?

# %% tags=["nbval-ignore-output"]
TS_MM = timing.scaled([2 ** 10, 2 ** 12, 2 ** 14, 2 ** 16], [2 ** 10, 2 ** 12, 2 ** 13])
D_MM = 64
peak = linear_attention_exp.gemm_peak()
mm = linear_attention_exp.methods_vs_T(TS_MM, D_MM, repeat=3, peak=peak, max_scan_elements=timing.scaled(1 << 26, 1 << 24))
print(f"GEMM peak measured now (1024^3 float32, {backend.cpu_count()} cores): {peak:.1f} GFLOP/s; one head, d = {D_MM}")
print(f"{'T':>7} {'chunk':>5} | {'loop':>9} {'scan':>9} {'chunked':>9} ns/token | {'GFLOP/s':>7} {'% peak':>6} "
      f"{'x scan':>7} {'x loop':>7}")
for r in mm["rows"]:
    pt = r["per_token"]
    sc = f"{1e9 * pt['scan']:>9.0f}" if "scan" in pt else f"{'-':>9}"
    xs = f"{r['x_scan']:>6.1f}x" if "x_scan" in r else f"{'-':>7}"
    print(f"{r['T']:>7} {r['chunk']:>5} | {1e9 * pt['sequential']:>9.0f} {sc} {1e9 * pt['chunked']:>9.0f}          | "
          f"{r['gflops']:>7.1f} {r['pct_peak']:>5.0f}% {xs} {r['x_sequential']:>6.2f}x")
fig, ax = plt.subplots(figsize=(6.5, 3.6))
for m in linear_attention.METHODS:
    pts = [(r["T"], r["per_token"][m]) for r in mm["rows"] if m in r["per_token"]]
    ax.loglog([p[0] for p in pts], [1e9 * p[1] for p in pts], "o-", label=m)
wins = [r["T"] for r in mm["rows"] if r["x_sequential"] > 1]
if wins:
    ax.axvline(wins[0], color="grey", ls=":", label=f"chunked beats the loop from T = {wins[0]}")
ax.set_xlabel("T (time steps)")
ax.set_ylabel("ns per token")
ax.set_title(f"gated linear recurrence, d = {D_MM}: loop vs element-wise scan vs chunked matmuls")
ax.legend()
plt.show()
if not mm["noise"].ok:
    print(mm["noise"].warning())

# %% [markdown]
# And the chunk size: short chunks make small matrix products (far from the GEMM peak) and many chunk
# states to scan; long chunks waste $O(c)$ flops per token on the mask. Where is the best chunk here?

# %% tags=["nbval-ignore-output"]
cs = linear_attention_exp.chunk_sweep(TS_MM[-1], D_MM, (16, 32, 64, 128, 256), repeat=3, peak=peak)
for r in cs["rows"]:
    print(f"chunk {r['chunk']:>4}: {1e9 * r['per_token']:>7.0f} ns/token, {r['gflops']:>6.1f} GFLOP/s = {r['pct_peak']:>3.0f}% "
          "of the GEMM peak")
best_c = cs["best"]
print(f"best chunk at T = {cs['T']}: {best_c['chunk']} ({best_c['pct_peak']:.0f}% of the GEMM peak)")
long_row = [r for r in mm["rows"] if "x_scan" in r][-1]
scan_gbs = 20 * D_MM * D_MM / long_row["per_token"]["scan"] / 1e9   # ~5 numbers of 4 bytes per state entry
bw_now = timing.copy_bandwidth()
print(verdict("beyond.mamba2.ssd_speedup", ours=long_row["x_scan"], here=f"{backend.cpu_count()} cores, d = {D_MM}, "
              f"T = {long_row['T']}, chunked vs the element-wise scan", pivot=1.0, within=2.0,
              reasons=[(scan_gbs < 2 * bw_now, f"the element-wise scan streams every state entry through memory "
                        f"each step (about {scan_gbs:.0f} GB/s here, copy bandwidth {bw_now:.0f} GB/s), while the "
                        f"chunked form runs at {long_row['gflops']:.0f} GFLOP/s: this CPU's flops-per-byte ratio, "
                        "not a GPU's tensor-core ratio, sets the gap"),
                       (long_row["pct_peak"] < 20, "the chunked form's matrix products are small and far from "
                        "this machine's GEMM peak")],
              noise=long_row["noise"], interval=long_row["x_scan_interval"]))
r_long = mm["rows"][-1]
state_kb, l2 = 4 * D_MM * D_MM / 1024, backend.cache_sizes().get("L2")
if not r_long["noise"].ok:
    print("Against the loop: no conclusion --", r_long["noise"].warning())
else:
    print(f"Against the loop at T = {r_long['T']}: the chunked form is {r_long['x_sequential']:.2f}x its speed -- "
          + ("the matrix products win even over the loop." if r_long["x_sequential"] > 1.1 else
             f"the loop's state ({state_kb:.0f} KB) " + (f"fits this CPU's {l2 // 1024} KB L2 cache, so the loop is not "
                                                         "memory-bound" if l2 and 4 * D_MM * D_MM < l2 else
                                                         "is read from memory every step")
             + f", and the chunked form does {linear_attention.chunked_flops(1, D_MM, D_MM, r_long['chunk']) / r_long['chunk'] / (4 * D_MM * D_MM):.1f}x "
               "its operations per token, which its GEMM rate does not repay here."))

# %% [markdown]
# ### The delta rule: why production does not scan it
#
# DeltaNet first erases what the memory held for $k_t$, then writes:
# $S_t = (I - \beta_t k_t k_t^\top) S_{t-1} + \beta_t k_t v_t^\top$. The map between steps is now a
# *dense* $d_k \times d_k$ matrix, so a scan would compose matrices -- $2 d_k^3$ flops per combine against
# $4 d_k d_v$ per step of the loop (chapter 11's `matrix_scan.work_span` prices it). The chunked form
# instead writes a chunk's $c$ rank-one updates as $I - K^\top W$ with $W = T(\beta K)$, where
# $T = (I + \text{tril}(\text{diag}(\beta) K K^\top, -1))^{-1}$ is one triangular solve (the WY / UT
# representation), and marches over chunks with three GEMMs each.

# %%
q_d, k_d, v_d, b_d = delta_rule.random_problem(200, 2, 2, 8, 8, seed=1)
ref_d = delta_rule.recurrence_float64(q_d, k_d, v_d, b_d)
for m in delta_rule.METHODS:
    err = np.abs(delta_rule.delta_rule(q_d, k_d, v_d, b_d, method=m) - ref_d).max() / np.abs(ref_d).max()
    print(f"delta rule, {m:<10}: equals the float64 loop to 1e-5: {bool(err < 1e-5)}")
for c_ in (1, 64):
    pr = delta_rule.scan_price(1 << 16, 128, 128, chunk=c_, P=2)
    print(f"T = 2^16, d = 128, maps of {c_:>2} step(s): a scan over them costs {pr['ratio']:.1f}x the flops "
          f"of the march (span on 2 processors: {pr['scan_span'] / pr['march']:.2f}x the march)")

# %% [markdown]
# Slide $T$, the chunk and $d$: where does the chunked form overtake the loop, and which chunk is best?

# %% tags=["nbval-ignore-output"]
def render_matmul(data, ax):
    names = list(data["per_token"])
    ax.bar(names, [1e9 * data["per_token"][n] for n in names], color=["C0", "C1", "C2"][:len(names)])
    ax.set_yscale("log")
    ax.set_ylabel("ns per token")
    return (f"T = {data['T']}, chunk {data['chunk']}, d = {data['d']}: chunked {data['gflops']:.1f} GFLOP/s, "
            f"error vs the loop {data['max_rel_error']:.1e}" + ("" if data["noise"].ok else " (noisy run)"))


panel_mm = widgets.sweep_panel(
    linear_attention_exp.matmul_sweep,
    controls={"T": (256, 1 << 16, 256, 2048), "chunk": (8, 512, 8, 64), "d": (16, 256, 16, 64)},
    render=render_matmul,
    cost=lambda T, chunk, d: T * d * d,
    max_cost=2 ** 28,
    title="gated linear recurrence: loop / scan / chunked",
)
panel_mm

# %% [markdown]
# ## 10 · The scan across MPI ranks
#
# When one machine is not enough, the sequence itself is split: each rank takes a block of time,
# **reduces** it to one affine map $(a_{\text{prod}}, b)$, the ranks combine those maps in rank order
# with `comm.Exscan` and a **non-commutative** user operator (`MPI.Op.Create(fn, commute=False)`), and each
# rank **expands** its block from the carry it received (flash-linear-attention's context parallelism,
# LASP). The message is one state, whatever $T$ is. `course_lib/parallel/mpi_scan.py` does it for the
# element-wise scan, for the matrix state above (by the chunked form), and for DEER's linear recurrence
# (chapter 11); `mpiexec -n P` here, `srun -n P` on a cluster, the same program.

# %% tags=["nbval-ignore-output"]
from course_lib.parallel import mpi_scan

mpi_ok, mpi_why = backend.mpi_available()
if mpi_ok:
    a_m, x_m, h0_m = scan.random_problem(3000, 8, seed=5)
    h_m = mpi_scan.linear_recurrence_mpi(a_m, x_m, h0_m, ranks=3)
    print("3 ranks, element-wise: equals one process:", bool(np.allclose(h_m, scan.linear_recurrence(a_m, x_m, h0_m),
                                                                         rtol=1e-5, atol=1e-5)))
    o_mpi = mpi_scan.gated_linear_recurrence_mpi(q_s, k_s, v_s, dec_s, ranks=2)
    print("2 ranks, matrix state:  equals the float64 loop to 1e-5:",
          bool(np.abs(o_mpi - ref_s).max() / np.abs(ref_s).max() < 1e-5))
else:
    print("MPI is not available here:", mpi_why)

# %% [markdown]
# Does it pay? *Predict*: one rank exchanges a few kilobytes; what does a message cost on this machine,
# and against how much compute per rank? The ping-pong measures the latency $\alpha$ and bandwidth
# $\beta$ (chapter 12's cost model now uses them); the split times each phase on 1 and 2 ranks.

# %% tags=["nbval-ignore-output"]
if mpi_ok:
    sp = linear_attention_exp.mpi_split(timing.scaled(1 << 18, 1 << 14), nh=128, d=64, ranks=(1, 2), repeat=2)
    print(f"ping-pong: latency {1e6 * sp['alpha_s']:.1f} µs, bandwidth {sp['beta_gbs']:.1f} GB/s "
          "(measured on one node, shared memory)")
    one = {r["kind"]: r["compute"] for r in sp["rows"] if r["ranks"] == 1}
    for r in sp["rows"]:
        msg_s = sp["alpha_s"] + r["message_bytes"] / (1e9 * sp["beta_gbs"])
        print(f"{r['kind']:<12} T = {sp['T']}, {r['ranks']} rank(s): compute {1e3 * r['compute']:7.2f} ms "
              f"({one[r['kind']] / r['compute']:.2f}x one rank), exscan {1e3 * r['exscan']:.3f} ms, message "
              f"{r['message_bytes']} B = {1e6 * msg_s:.1f} µs by the ping-pong model")
    for kind in ("elementwise", "gated"):
        per_step = one[kind] / sp["T"]
        two = next(r for r in sp["rows"] if r["kind"] == kind and r["ranks"] == 2)
        exch = max(two["exscan"], sp["alpha_s"] + two["message_bytes"] / (1e9 * sp["beta_gbs"]))
        print(f"{kind}: one step costs {1e9 * per_step:.0f} ns on one rank and the exchange {1e6 * exch:.0f} µs "
              f"(the measured exscan, waiting for the last rank included), so 2 ranks pay once T/2 steps cost well "
              f"above it: T >> {2 * exch / per_step:,.0f} (plus MPI start-up, once per job)")
else:
    print("MPI is not available here:", mpi_why)

# %% [markdown]
# ## The chapter on this machine, on one screen
#
# The next cell gathers what this run measured and what the timed pairs let the chapter conclude
# ("cannot tell" where this machine was too busy to decide). Read it against the general lessons below.

# %% tags=["nbval-ignore-output"]
print(f"SIMD: {backend.simd_bytes() // 4} float32 lanes per vector here; one channel got {lv['lanes']} lanes over "
      f"time: {lv['speedup'][str(lv['lanes']) + ' lanes']:.2f}x the serial loop on one thread "
      f"(at least 1.1x in the pairs: {pays})")
print(f"subnormals: flushing them made the reduce at least 1.5x faster: {big}")
print(f"crossover at T = {T_big}: time-parallel scan decided winner for H in {time_wins or 'none'}; "
      f"undecided for H in {unsure or 'none'}")
print(f"phases (1 CPU thread): expand {100 * cpu['expand_frac']:.0f}% of the scan's time "
      f"(seed's K80: {claim('001.phases.expand').value:.0f}%)")
print(f"like for like (chunked vs channels, T = {last['T']}, H = {H}, {P} threads): {like:.2f}x "
      f"(seed: {claim('001.summary.kernel_speedup').value:.0f}x); chunked at {frac:.0f}% of the copy bandwidth "
      f"at T = {bw_row['T']}")
print("whole layers, chunked over serial scan: " + ", ".join(
    f"{ly} {r['layer_speedup']['chunked']:.2f}x (cap {r['cap']:.2f}x{'' if r['noise'].ok else ', unreliable run'})"
    for ly, r in layer_runs.items()))
print(f"remember-the-first-element: LSTM {lstm_r['epochs']} epochs, GILR-LSTM {gilr_r['epochs']} epochs "
      f"(both converged: {bool(lstm_r['converged'] and gilr_r['converged'])})")
print(f"matrix state, d = {D_MM}, T = {r_long['T']}: chunked form {r_long['x_sequential']:.2f}x the loop, "
      f"{long_row['x_scan']:.1f}x the element-wise scan, {r_long['pct_peak']:.0f}% of the GEMM peak")

# %% [markdown]
# ## What we learned
#
# * A linear recurrence is a scan over an associative, non-commutative operator on pairs
#   $(a, b)$; the closed form with cumprod/cumsum is exact on paper and overflows in practice.
# * Hillis–Steele has the shortest span but $T\log T$ work; Blelloch is work-efficient with twice
#   the span. On a CPU, chunking (serial leaves, a tiny tree on top) is what you actually run.
# * A CPU has two kinds of parallel workers: cores and SIMD lanes (as many as its vector width,
#   read from its flags). With few channels the serial loop uses neither -- giving each lane its own
#   stretch of time is what the scan can win first; cores come second, and memory bandwidth bounds
#   both. With many channels, splitting the channels costs no extra work. The crossover map and the
#   summary above show where each won on *this* machine, and where the run could not tell.
# * The seed's kernel speed-up compares two GPU kernels that are both parallel over channels; the like-for-like
#   ratio on a CPU is chunked vs channels (its verdict line in section 6, and the summary above).
# * GILR-LSTM, SRU and QRNN keep non-linearity between layers and linearity along time, so their
#   forward *and* backward passes are scans; how much a whole layer gains depends on how much of it
#   the scan is (Amdahl) -- which is why the seed's layer speed-up is so much smaller than its kernel's.
# * Production layers with a matrix state run the **chunked form**: decay-masked matrix products inside a
#   chunk (the mask built in log space), a scan only over chunk states. Whether it pays is a ratio of
#   this machine's GEMM rate to its element-wise rate and bandwidth -- measured above. The delta rule's
#   dense transition makes a scan over it cost $d^3$ per combine, so it marches over chunks instead.
# * Across MPI ranks the scan is reduce -> `Exscan` with a non-commutative operator -> expand: one
#   state-sized message per rank, worth it once a rank's block costs far more than a message.
#
# Worksheet: [exercises/08_scan.ipynb](../exercises/08_scan.ipynb).
# Next: [09 · LSTM, data layout and an autotuner](09_lstm_layout.ipynb).
