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
# # 00 · Setup and roadmap: what does *this* machine have?
#
# **Parallel RNNs, hands-on** is a course about making recurrent neural networks train and run
# fast. Recurrent networks look hopelessly sequential -- step $t$ needs step $t-1$ -- and yet
# every chapter finds a different axis along which the work *can* be spread: over sequences in
# a batch, over the rows of a matrix, over SIMD lanes and threads, over the layers of a deep
# network, over the time axis itself (with a scan for linear recurrences, with multigrid for
# non-linear ones).
#
# Every number in this course is **measured live on your machine**. When a chapter reports how much
# faster batching is, it has just timed it; the number from the paper the chapter is built on is
# printed beside it from the course's *claims registry* (`course_lib.teaching.claims`, every entry
# quoted verbatim from the paper), and a **verdict line** computed from your measurements says whether
# your machine agrees -- and if not, which measured fact explains why. When the machine was busy while
# it measured, the verdict says so instead of drawing a conclusion. So before anything else, let us
# see what we are working with.

# %% tags=["nbval-ignore-output"]
import numpy as np

import course_lib
from course_lib.core import backend, timing
from course_lib.teaching import plots, widgets, checks

print(backend.report())

# %% [markdown]
# Three things in that table matter for the whole course:
#
# * **cores** and **numba threads**: how much thread parallelism there is to find (chapter 05).
#   `backend.set_threads(n)` sets numba's *and* the BLAS library's thread count together.
# * **BLAS**: the library behind `A @ B`. Its GEMM is the yardstick: a careful RNN training step
#   spends most of its time there, and we will compare our own kernels with it (chapter 04).
# * **CUDA**: with no GPU, every CUDA kernel in the course (chapters 07 and 08) runs in numba's
#   *CUDA simulator* -- the same kernel code, executed thread by thread on the CPU. It is slow, so
#   simulator examples are small, but the code you write is the code that would run on a GPU.
#   `course_lib` makes this decision when it is imported, before numba is.

# %%
print("CUDA kernels run on:", "a real GPU" if backend.gpu_available() else "the CPU (simulator or unavailable)")
print("array module for GPU-capable code:", backend.xp().__name__ if not backend.gpu_available() else "cupy")

# %% [markdown]
# ## Counting work: FLOPs and bytes
#
# Speed is work divided by time, so we count work first. A matrix product $C = AB$ with
# $A \in \mathbb{R}^{m\times k}$, $B \in \mathbb{R}^{k\times n}$ does one multiply and one add per
# term: $2mnk$ floating-point operations. It must also move at least $A$, $B$ and $C$ across the
# memory bus once. Their ratio, FLOPs per byte, is the **arithmetic intensity**.

# %%
for (m, n, k) in [(1000, 1000, 1000), (1, 1000, 1000), (1000, 1000, 1)]:
    print(f"{m:>4} x {k:>4} @ {k:>4} x {n:>4}: {timing.gemm_flops(m, n, k):>13,d} FLOP, "
          f"intensity {timing.gemm_intensity(m, n, k):8.2f} FLOP/byte (float32)")

# %% [markdown]
# The first line is the seed paper's layer size (chapter 03 uses it): a big square GEMM does
# hundreds of FLOPs per byte. The second is a matrix-*vector* product, what an RNN does when it
# processes **one sequence at a time**: half a FLOP per byte. Its speed is set by how fast the
# matrix can be *read*, not by arithmetic -- which is why batching (chapter 03) is the first big win.
#
# ## The roofline of this machine
#
# Two measurements bound everything we will do on the CPU: the best GEMM rate the BLAS library
# reaches (GFLOP/s) and the rate at which memory streams (GB/s, measured with a large copy). A
# kernel of intensity $I$ can at best run at $\min(\text{peak}, I \times \text{bandwidth})$: the
# *roofline*. Both are measured now (this takes a second or two).

# %% tags=["nbval-ignore-output"]
peak = timing.peak_gflops("float32")
bandwidth = timing.copy_bandwidth()
print(f"GEMM peak (float32, 1024^3, all threads): {peak:7.1f} GFLOP/s")
print(f"streaming copy bandwidth:                 {bandwidth:7.1f} GB/s")
print(f"ridge point: kernels above {peak / bandwidth:.1f} FLOP/byte can be compute-bound here")

# %% tags=["nbval-ignore-output"]
rates = [timing.gemm_rate(n) for n in (64, 256, 1024)]
points = [(r["intensity"], r["gflops"], f"GEMM n={r['n']}") for r in rates]
ax = plots.roofline_plot(peak, bandwidth, points)
ax.set_title("Roofline measured on this machine");
noise = rates[0]["noise"] | rates[1]["noise"] | rates[2]["noise"]
above = [label for ai, g, label in points if g > 1.05 * timing.roofline(ai, peak=peak, bandwidth=bandwidth)]
if not noise.ok:  # a busy moment can push a point over or under the roof: say so instead of judging
    print(noise.warning())
    print("What the plot still shows: every point is a measured rate; a point above the roof means the peak "
          "was measured at a quieter moment, not that the roof was beaten.")
else:
    print("points more than 5% above the roof drawn in the plot:", above or "none")

# %% [markdown]
# ## Where the data lives: cache residency
#
# The slanted roof assumes every byte comes from main memory. But a matrix-vector product that is
# called again and again on the **same** matrix finds it in a cache if it fits -- and the caches are
# much faster than memory. The sizes of this machine's caches:

# %% tags=["nbval-ignore-output"]
caches = backend.cache_sizes()
print({k: f"{v >> 10} KiB" for k, v in caches.items()} or "the OS does not report cache sizes")

# %% [markdown]
# **Predict:** three GEMVs whose matrices take about 0.5 MB, 16 MB and 128 MB, each called repeatedly.
# Dividing the bytes they touch by their time gives the bandwidth each *appears* to use. Which of
# them can beat the streaming bandwidth measured above, and which cannot?

# %% tags=["nbval-ignore-output"]
l2, l3 = caches.get("L2"), caches.get("L3")
gemvs = [timing.gemv_rate(m, k) for m, k in ((384, 384), (2048, 2048), (8192, 4096))]
for g in gemvs:
    where = ("fits in L2" if l2 and g["working_set"] <= l2 else "fits in L3" if l3 and g["working_set"] <= l3
             else "larger than every cache" if l3 else "cache size unknown")
    g["where"] = where
    print(f"GEMV {g['m']:>5} x {g['k']:<5} {g['working_set'] / 1e6:7.1f} MB ({where:>23}): "
          f"{g['gbs']:6.1f} GB/s = {g['gbs'] / bandwidth:4.1f}x the streaming bandwidth, {g['gflops']:5.1f} GFLOP/s")
noise = gemvs[0]["noise"] | gemvs[1]["noise"] | gemvs[2]["noise"]
if not noise.ok:
    print(noise.warning())
else:
    for g in gemvs:
        ratio = g["gbs"] / bandwidth
        if ratio > 1.5 and g["where"].startswith("fits"):
            why = "its matrix stays in the cache between calls, so it is not limited by main memory at all"
        elif ratio > 1.5:
            why = "faster than the copy loop although nothing fits: a product only reads, a copy reads and writes"
        elif ratio >= 0.6:
            why = "close to the streaming bandwidth: every call reads the matrix from main memory again"
        else:
            why = "well below the streaming bandwidth: overheads, not memory, set its pace"
        print(f"  {g['m']} x {g['k']}: {why}.")

# %% tags=["nbval-ignore-output"]
ax = plots.roofline_plot(peak, bandwidth, points + [(g["intensity"], g["gflops"], f"GEMV {g['m']}x{g['k']} ({g['where']})")
                                                    for g in gemvs])
ax.set_title("GEMMs and GEMVs against the roof measured from main memory");

# %% [markdown]
# So the roofline's slanted part is a statement about data that comes from **main memory**. A
# working set that fits in a cache lives under a higher roof (the cache's bandwidth). Chapter 03
# meets this again: a batch of one sequence multiplies by $W_{hh}$ at every step, and whether
# $W_{hh}$ fits in a cache decides how fast that is.
#
# ## Sliders: how widgets work in this course
#
# Every slider panel in the course is a thin shell over a plain function that returns data, so
# you can call the function yourself. Here the function is `timing.gemm_rate(n)`: it times an
# `n x n` GEMM *now* and returns the rate, the intensity and the roofline's bound. Move the
# slider and watch the share of the peak change. Panels cap the work a slider can ask for.

# %%
timing.gemm_rate(256).keys()

# %% tags=["nbval-ignore-output"]
def show_rate(data, ax):
    ax.bar(["measured", "roofline bound"], [data["gflops"], data["bound_gflops"]], color=["tab:blue", "grey"])
    ax.set_ylabel("GFLOP/s")
    ax.set_ylim(0, 1.15 * max(data["peak_gflops"], data["gflops"], data["bound_gflops"]))
    line = (f"n = {data['n']}: {data['gflops']:.1f} GFLOP/s = {100 * data['fraction_of_peak']:.0f}% "
            f"of the measured peak; intensity {data['intensity']:.1f} FLOP/byte")
    if data["fraction_of_peak"] > 1.05:
        line += ("  -- WARNING: above the peak measured earlier, so one of the two measurements was "
                 "disturbed (a busy machine?): re-run both before trusting either")
    return line

panel = widgets.sweep_panel(
    timing.gemm_rate,
    controls={"n": (32, 2048, 32, 256)},
    render=show_rate,
    cost=lambda n: timing.gemm_flops(n, n, n), max_cost=timing.gemm_flops(2048, 2048, 2048),
)
panel

# %% [markdown]
# ## Worksheets and checks
#
# Each chapter comes with a worksheet in `exercises/` (generated from `solutions/`, which holds the
# worked answers). You fill in functions; a *check* runs your function against the course's
# reference implementation on several small random cases. When something is wrong, it tells you
# what: which output, the first place it differs (as a time step for sequences), by how much, and
# a hint. Here is a check of a deliberately wrong "intensity" function -- note the message:

# %%
def wrong_intensity(m, n, k, itemsize=4):
    return 2 * m * n * k / (itemsize * (m * k + k * n))  # forgot to count writing C

try:
    checks.check_function(
        "0.0", wrong_intensity, timing.gemm_intensity,
        cases=[dict(m=4, n=4, k=4), dict(m=1, n=64, k=64), dict(m=64, n=64, k=1)],
        hint="count the bytes of A, B and C",
    )
except checks.ExerciseFailed as failure:
    print(failure)

# %% [markdown]
# and the same check with the right function prints one line:

# %%
checks.check_function("0.0", timing.gemm_intensity, timing.gemm_intensity,
                      cases=[dict(m=4, n=4, k=4), dict(m=1, n=64, k=64), dict(m=64, n=64, k=1)])

# %% [markdown]
# Instructors: the worksheets in `exercises/` are rebuilt from `solutions/` with
# `python -m course_lib exercises build`, which refuses to overwrite a worksheet a student has
# edited (unless `--force`, which keeps a backup). `python -m course_lib grade` runs every
# worksheet headless and prints a pass/fail table.
#
# ## Roadmap
#
# | # | chapter | the idea | built on |
# |---|---|---|---|
# | 01 | serial RNN | forward pass, loss, the image-rotation task, gradient check | Han & Uboweja (seed 000) |
# | 02 | BPTT O(N²) → O(N) | the double loop vs one reverse sweep; measured scaling | seed 000 |
# | 03 | batching | GEMV → GEMM, arithmetic intensity, cache residency, time per sample vs batch | seed 000 |
# | 04 | tiling & SIMD | loop order, tiles, vector lanes, 1000 vs 1024, roofline | seed 000 |
# | 05 | threads, fusion, JIT vs AOT | prange, fusion, compile cache, phase breakdown | seed 000 |
# | 06 | Halide | the seed's own tool: one algorithm, many schedules | seed 000 |
# | 07 | parallel inference | batch, layer wavefront, MPI, a CUDA kernel | Pokharel & Mishra (seed 004) |
# | 08 | linear recurrences & scan | Blelloch scan on CPU and as CUDA kernels; SRU/QRNN/GILR-LSTM | Wen & Tammineedi (seed 001) |
# | 09 | LSTM & data layout | fused gates, $XW^T$ vs $WX^T$, call overhead, an autotuner | EcoRNN (seed 003) |
# | 10 | MGRIT | parallel-in-time training of GRUs with multigrid | Moon & Cyr (seed 002) |
# | 11 | Newton in time | DEER, quasi-DEER and minGRU: nonlinear RNNs solved over the sequence | DEER, ELK, minGRU papers |
#
# | 12 | which parallelism when | a cost model, simulated schedules and an advisor for all of the above | all seeds |
#
# Worksheet: [exercises/00_setup.ipynb](../exercises/00_setup.ipynb) (your first checks).
# Next: [01 · the serial RNN](01_serial_rnn.ipynb).
