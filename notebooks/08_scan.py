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
# # 07 · Linear recurrences in parallel: the scan, on CPU threads and as CUDA kernels
#
# An RNN step needs the previous step -- so the time axis looks hopelessly serial. Martin & Cundy
# (2018) noticed that if the recurrence between steps is **linear**,
#
# $$h_t = a_t \odot h_{t-1} + x_t,$$
#
# (with all the non-linear work -- gates, projections -- computed from the *inputs*, in parallel),
# then Blelloch's parallel **scan** (1990) evaluates all $h_t$ in $O(\log T)$ parallel steps.
# Seed 001 (Wen & Tammineedi, CMU 15-418) wrote that scan as three CUDA kernels -- reduce, scan,
# expand -- and measured about 50x over a serial-over-time kernel on a K80 GPU.
#
# This chapter builds the scan from its one idea (an associative operator), draws the trees,
# times a chunked CPU scan against the serial loop and against this machine's memory bandwidth,
# runs the CUDA kernels (in numba's simulator when there is no GPU), and trains the RNNs built on
# it. The code: `course_lib/scan.py`, `course_lib/scan_cuda.py`, `course_lib/linear_rnn.py`.

# %% tags=["nbval-ignore-output"]
import time

import matplotlib.pyplot as plt
import numpy as np

import course_lib  # first: decides GPU vs CUDA simulator before numba is imported
from course_lib.core import backend, timing
from course_lib.models import linear_rnn
from course_lib.algorithms import scan, scan_cuda
from course_lib.teaching import widgets
from course_lib.teaching.plots import scan as scan_plots

P = backend.cpu_count()
SIZES = timing.scaled([2 ** 10, 2 ** 12, 2 ** 14, 2 ** 16, 2 ** 18, 2 ** 20], [2 ** 10, 2 ** 12, 2 ** 14, 2 ** 16])
H = 128
print(f"{P} cores, numba threads {backend.get_threads()}, CUDA: {backend.cuda_mode()}, budget {timing.budget()}")
print("T sweep:", SIZES)

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
# actually do; every method agrees with a float64 loop to float32 round-off:

# %%
a, x, h0 = scan.random_problem(1000, 16, B=2, seed=3)
ref = scan.recurrence_float64(a, x, h0)
for m in ("sequential", "hillis_steele", "blelloch", "chunked"):
    h = scan.linear_recurrence(a, x, h0, method=m)
    err = np.abs(h - ref).max() / np.abs(ref).max()
    print(f"{m:>13}: shape {h.shape}, {h.dtype}, max rel. error < 1e-5: {err < 1e-5}")
print(scan.blelloch(a, x, h0)[1])

# %% [markdown]
# **What span buys on a CPU.** A combine costs 3 flops (2 multiplies, 1 add) against the serial
# step's 2, and the work-efficient scan does about twice the serial work -- so with $p$ workers
# the time-parallel speed-up is bounded near $p/3$ to $p/2$, *before* memory bandwidth. Two cores
# cannot win much. Parallelising over **channels** (the $H$ independent recurrences) is free --
# but only when each thread gets long contiguous runs of memory.
#
# ## 3 · The chunked scan on CPU threads
#
# Blelloch's tree at the top, serial loops at the leaves: split time into chunks, **reduce** each
# chunk to one pair (parallel over chunks), **scan the chunk carries** (a few serial steps),
# **expand** each chunk from its carry (parallel again). `course_lib/scan.py` (`_chunked`) adds
# two tricks: chunk 0 is scanned outright during the reduce (its carry is $h_0$), so with $p$
# threads there are $p+1$ chunks and both phases keep every thread busy; each chunk's loops run
# from 0 over *sliced* rows (`a[s:e]`), which numba compiles to faster loops than `range(s, e)`
# with a run-time start; and the running product is flushed to zero once it is tiny. Why flush? Look:

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
print(f"the running product of a in (0.5, 0.9) is subnormal after ~150 steps; flushing is "
      f"{c.ratio('no_flush', 'flush'):.1f}x faster here (design notes measured ~15x on AVX-512)")

# %% [markdown]
# One more trick decides whether the chunked scan can beat the serial loop at all. Count bytes:
# the serial loop moves 12 per element (read $a$ and $x$, write $h$); a chunk that is reduced and
# later expanded reads $a$ and $x$ *twice* -- 20 bytes. On a machine whose memory bus is the
# limit, that extra traffic eats most of the parallel gain. So by default `method="chunked"`
# runs **cache-blocked** (`_chunked_blocked`): time is cut into super-blocks of a couple of
# thousand steps; inside each, every thread reduces a chunk small enough to stay in its own L2
# cache, and then expands *the same chunk* while it is still there. Each element then crosses the
# memory bus once, as in the serial loop. (`chunks=C` still runs the one-split textbook version.)
#
# Now the chunked scan against the serial loop over $T$, $H = 128$ float32, with the bytes it
# must move (read $a$ and $x$, write $h$: 12 bytes per element) against this machine's measured
# streaming bandwidth. All write into a preallocated `out=` array: a fresh result array is new
# memory, and its first touch costs page faults (serialised in the kernel, so threads cannot
# share that cost) -- easily as much as the scan itself at these sizes.

# %% tags=["nbval-ignore-output"]
bw = timing.copy_bandwidth()
a_all, x_all, h0 = scan.random_problem(SIZES[-1], H, seed=0)  # time-major: a_all[:T] is contiguous
h_all = np.empty_like(a_all)  # results go into a preallocated array (see below)
rows = []
for T in SIZES:
    a, x, out = a_all[:T], x_all[:T], h_all[:T]
    c = timing.compare(sequential=lambda: scan.linear_recurrence(a, x, h0, out=out),
                       chunked=lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=out),
                       channels=lambda: scan.linear_recurrence_channels(a, x, h0, out=out), repeat=2)
    rows.append((T, {k: t.median for k, t in c.timings.items()}, scan.choose_chunks(T, H)))
print(f"np.copyto streaming bandwidth: {bw:.1f} GB/s")
print(f"{'T':>8} {'chunks':>6} " + " ".join(f"{k + ' GB/s':>16}" for k in rows[0][1]) + f" {'chunked x seq':>14}")
for T, ts, C in rows:
    nbytes = 12 * T * H
    print(f"{T:>8} {C:>6} " + " ".join(f"{nbytes / v / 1e9:>16.1f}" for v in ts.values())
          + f" {ts['sequential'] / ts['chunked']:>13.2f}x")
ax = course_lib.teaching.plots.loglog_plot([r[0] for r in rows], {k: [r[1][k] for r in rows] for k in rows[0][1]},
                                  xlabel="T (time steps), H = 128", ylabel="time (s)")
ax.set_title("linear recurrence: serial vs parallel over time vs over channels")
plt.show()

# %% [markdown]
# And against the number of threads at a large $T$ (the seed's measure is speed-up at a fixed
# size). On a 2-core machine shared with other work, expect noise.

# %% tags=["nbval-ignore-output"]
T = min(SIZES[-1], 2 ** 18)
a, x, out = a_all[:T], x_all[:T], h_all[:T]
seq_t = timing.measure(scan.linear_recurrence, a, x, h0, out=out, repeat=3).median
for n in range(1, P + 1):
    backend.set_threads(n)
    t_ = timing.measure(scan.linear_recurrence, a, x, h0, method="chunked", chunks=P + 1, out=out, repeat=3).median
    print(f"{n} thread(s): chunked {1e3 * t_:.2f} ms = {12 * T * H / t_ / 1e9:.1f} GB/s, "
          f"{seq_t / t_:.2f}x the serial loop ({12 * T * H / seq_t / 1e9:.1f} GB/s)")
backend.set_threads(P)
print(f"streaming bandwidth (np.copyto): {bw:.1f} GB/s; design notes for a 2-core AVX-512 box: serial "
      f"~12 GB/s, streaming ~26-30 GB/s on 2 threads, fused chunked ~19 GB/s (1.5x)")

# %% [markdown]
# **Time axis or channel axis?** With $H = 128$ float32 a time step is 512 bytes per array: split
# across threads, each thread gets a few cache lines per step and the per-step overhead dominates.
# With few channels and a long sequence, only the time axis has parallelism; with many channels,
# splitting them is free (no extra work at all). Same number of elements, two shapes:

# %% tags=["nbval-ignore-output"]
n_el = timing.scaled(2 ** 23, 2 ** 21)
for T_, H_ in ((n_el // 8, 8), (n_el // 1024, 1024)):
    a, x, h0_ = scan.random_problem(T_, H_, seed=0)
    c = timing.compare(sequential=lambda: scan.linear_recurrence(a, x, h0_),
                       over_time=lambda: scan.linear_recurrence(a, x, h0_, method="chunked", chunks=P + 1),
                       over_channels=lambda: scan.linear_recurrence_channels(a, x, h0_), repeat=3)
    print(f"T={T_:>7}, H={H_:>4}: over time {c.speedup('over_time'):.2f}x, over channels "
          f"{c.speedup('over_channels'):.2f}x the serial loop ({P} threads)")

# %% [markdown]
# The slider at the end lets you look for the crossover yourself.
#
# ## 4 · The reduce / scan / expand phases
#
# The seed timed its three kernels at $T = 524288$, $H = 128$ on a K80: reduce 2.12 ms (35.8%),
# scan 24.5 µs (0.4%), expand 3.79 ms (63.8%). Here are the same phases of the CPU scan (run on
# one thread, so the split is not blurred by thread scheduling):

# %% tags=["nbval-ignore-output"]
T_ph = timing.scaled(2 ** 19, 2 ** 16)
a, x = a_all[:T_ph], x_all[:T_ph]
cpu = scan.chunked_phases(a, x, h0, chunks=8)
print(f"CPU, T={a.shape[0]}, {cpu['chunks']} chunks: reduce {100 * cpu['reduce_frac']:.1f}% / scan "
      f"{100 * cpu['scan_frac']:.1f}% / expand {100 * cpu['expand_frac']:.1f}%")
print("seed (K80 GPU, T=524288): reduce 35.8% / scan 0.4% / expand 63.8%")

# %% [markdown]
# ## 5 · The scan as CUDA kernels
#
# `course_lib/scan_cuda.py` holds the seed's structure in numba's CUDA dialect:
#
# * `blelloch_block_kernel` -- the **teaching kernel**: one block per channel, one thread per time
#   step, up-sweep and down-sweep in shared memory with `cuda.syncthreads()` between levels;
# * `reduce_kernel` (each thread reduces its chunk serially, then the block reduces its threads'
#   pairs in shared memory), `carry_kernel` (scan of the block carries) and `expand_kernel`.
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
h_cuda = scan.linear_recurrence(a, x, h0, method="cuda", threads=8, chunk=4)
print("reduce/scan/expand kernels, T=200, 3 channels, 7 blocks of 8 threads x 4 steps: max rel. error",
      f"< 1e-5: {np.abs(h_cuda - scan.recurrence_float64(a, x, h0)).max() / np.abs(h0).max() < 1e-5}")

# %% [markdown]
# The phase split of the CUDA kernels. **In the simulator this is Python-thread time on the CPU**:
# it says which kernel does more *work* per thread, but nothing about GPU speed.

# %% tags=["nbval-ignore-output"]
if backend.gpu_available():
    a, x, h0 = scan.random_problem(524_288, 128, seed=0)
    gpu = scan_cuda.cuda_phases(a, x, h0, repeat=5)
    label = "this GPU, T=524288, H=128"
else:
    a, x, h0 = scan.random_problem(256, 2, seed=0)
    gpu = scan_cuda.cuda_phases(a, x, h0, threads=16, chunk=4, repeat=1)
    label = "CUDA SIMULATOR (CPU threads!), T=256, H=2"
print(f"{label}: reduce {100 * gpu['reduce_frac']:.1f}% / scan {100 * gpu['scan_frac']:.1f}% / "
      f"expand {100 * gpu['expand_frac']:.1f}%  ({gpu['blocks']} blocks x {gpu['threads']} threads x {gpu['chunk']} steps)")
splits = {"seed: K80 GPU, T=524288": scan_plots.SEED_PHASES,
          f"ours: CPU, {cpu['chunks']} chunks, 1 thread": {k: cpu[f"{k}_frac"] for k in ("reduce", "scan", "expand")},
          ("ours: GPU" if backend.gpu_available() else "ours: CUDA simulator"): {k: gpu[f"{k}_frac"] for k in ("reduce", "scan", "expand")}}
scan_plots.phase_split_bars(splits)
plt.show()

# %% [markdown]
# Expand costs about twice the reduce everywhere: it reads the same $a, x$ *and* writes $h$, and
# the scan of the carries is negligible -- which is why the seed concludes that a better scan
# algorithm cannot help further; only the memory traffic of reduce and expand matters.
#
# ## 6 · The speed-ups, side by side
#
# The seed's numbers are from a K80 GPU against a serial-over-time GPU kernel; ours from this
# machine's CPU against the serial numba loop, measured above.

# %% tags=["nbval-ignore-output"]
T_last, ts_last, _ = rows[-1]
print(f"{'':<44}{'speed-up':>10}")
print(f"{'seed: parallel vs serial CUDA kernel (K80)':<44}{'~50x':>10}")
print(f"{'seed: in TensorFlow (LSTM/SRU/QRNN)':<44}{'~11x':>10}")
print(f"{'seed: bandwidth at T=65536':<44}{'104 GB/s = 43% of 240':>10}")
print(f"{f'ours: chunked vs serial, {P} CPU threads, T={T_last}':<44}{ts_last['sequential'] / ts_last['chunked']:>9.2f}x")
print(f"{f'ours: channels vs serial, {P} CPU threads':<44}{ts_last['sequential'] / ts_last['channels']:>9.2f}x")
print(f"{'ours: chunked GB/s vs streaming':<44}{12 * T_last * H / ts_last['chunked'] / 1e9:>6.1f} of {bw:.1f} GB/s")

# %% [markdown]
# ## 7 · RNNs built on the scan
#
# `course_lib/linear_rnn.py` has three layers whose only time-carried state is a linear
# recurrence, each with a forward and a backward pass (the backward is the reverse scan,
# `scan.linear_recurrence_backward`), plus the classic serial LSTM as the baseline:
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
for kind in linear_rnn.LAYERS:
    prm = linear_rnn.init_params(kind, 3, 4, k=2, seed=1)
    Hs, cache = linear_rnn.forward(kind, prm, Xg)
    W = np.random.default_rng(1).standard_normal(Hs.shape)
    grads = linear_rnn.backward(kind, prm, cache, W)
    name = next(iter(prm))
    num = np.zeros_like(prm[name])
    for idx in np.ndindex(num.shape):
        old = prm[name][idx]
        prm[name][idx] = old + 1e-6
        up = (linear_rnn.forward(kind, prm, Xg)[0] * W).sum()
        prm[name][idx] = old - 1e-6
        dn = (linear_rnn.forward(kind, prm, Xg)[0] * W).sum()
        prm[name][idx] = old
        num[idx] = (up - dn) / 2e-6
    rel = np.abs(num - grads[name]).max() / np.abs(num).max()
    same = np.allclose(linear_rnn.forward(kind, prm, Xg, method="blelloch")[0], Hs)
    print(f"{kind:>9}: dL/d{name} vs finite differences < 1e-6: {rel < 1e-6}; blelloch scan == serial: {same}")

# %% [markdown]
# ### Remember the first element
#
# Seed 001's synthetic test (Martin & Cundy's Table 3): the first input is $\pm e_1$, the rest is
# noise, and at the end the model must say the first sign. The seed trained a TensorFlow LSTM and
# a GILR-LSTM on the parallel kernel to 100% accuracy: **92 s (49 epochs) vs 56 s (45 epochs)**.
# Here both train with Adam on batches of 32 until a held-out batch of 256 is 100% right -- short
# lengths so the notebook stays quick.

# %% tags=["nbval-ignore-output"]
results = []
for T in (16, 32):
    for kind in ("gilr_lstm", "lstm"):
        results.append(linear_rnn.train_remember_first(kind, T, H=8, max_steps=400, lr=0.02, seed=0))
for res in results:
    print(res)
print("seed (TensorFlow, its own length): LSTM 92 s (49 epochs), GILR-LSTM on the parallel kernel 56 s (45 epochs)")

# %%
print("all reached 100% validation accuracy:", all(r.converged for r in results))

# %% [markdown]
# ## 8 · Try it
#
# Pick $T$, $H$, the method and the number of chunks (0 = automatic) and compare with the serial
# loop. Small $T \cdot H$ stays serial on purpose (`scan.choose_chunks`); few channels and long
# $T$ is where the time axis wins; many channels is where splitting channels wins.

# %% tags=["nbval-ignore-output"]
panel = widgets.sweep_panel(
    scan.scan_sweep,
    controls={"T": (1024, 1 << 20, 1024, 1 << 16), "H": (1, 1024, 1, 128),
              "method": ["chunked", "channels", "sequential", "blelloch", "hillis_steele"],
              "chunks": (0, 64, 1, 0)},
    render=scan_plots.render_sweep,
    cost=lambda T, H, method, chunks: T * H * (20 if method in ("blelloch", "hillis_steele") else 1),
    max_cost=2 ** 27,
    title="linear recurrence: method vs the serial loop",
)
panel

# %% [markdown]
# ## What we learned
#
# * A linear recurrence is a scan over an associative, non-commutative operator on pairs
#   $(a, b)$; the closed form with cumprod/cumsum is exact on paper and overflows in practice.
# * Hillis–Steele has the shortest span but $T\log T$ work; Blelloch is work-efficient with twice
#   the span. On a CPU, chunking (serial leaves, a tiny tree on top) is what you actually run.
# * Parallel over time costs extra memory traffic (reduce reads $a, x$ once more), so on a
#   bandwidth-bound CPU with two cores the gain is small; parallel over channels costs nothing
#   when there are enough channels. On a GPU, with thousands of threads and $H$ small, the
#   time axis is where the parallelism is -- the seed's 50x.
# * Expand dominates reduce, and the scan of carries is negligible -- on the seed's GPU and here.
# * GILR-LSTM, SRU and QRNN keep non-linearity between layers and linearity along time, so their
#   forward *and* backward passes are scans; the remember-first task trains as well as an LSTM.
#
# Next: [08 · LSTM, data layout and an autotuner](09_lstm_layout.ipynb). Worksheet: `exercises/08_scan.ipynb`.
