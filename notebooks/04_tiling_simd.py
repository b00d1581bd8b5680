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
# # 04 · Tiling and SIMD: climbing the matrix-multiply ladder
#
# Chapter 03 turned an RNN's many small matrix-*vector* products into a few big matrix-*matrix*
# products (GEMMs). A training step of the seed's network (batch 1000, 1000 inputs, hidden units
# and outputs, 10 time steps) is now almost entirely GEMMs of size about $1000^3$. So the question
# becomes: **how fast can we multiply two matrices, and why?**
#
# The seed paper (Han & Uboweja, *Parallel RNN training with Halide*) attacked this with three
# scheduling tricks, in its words:
#
# > 2. Tiling of for loops in matrix multiplication, to improve spatial locality and decrease cache capacity misses.
# > 3. SIMD Vectorization [...] using SIMD to process many elements in parallel.
# > 4. parallel() [...] uses OpenMP threads to process different rows/columns of the matrix in parallel.
#
# We will write each trick as a numba kernel, check it against numpy, and measure it *here*:
# a ladder from the textbook triple loop to a packed, register-blocked, multi-threaded kernel,
# with the machine's BLAS (what `A @ B` calls) as the yardstick. All kernels live in
# [`course_lib/matmul.py`](../course_lib/matmul.py) -- open it next to this notebook.

# %% tags=["nbval-ignore-output"]
import numpy as np

import course_lib  # first: decides numba's CUDA mode before numba is imported
from course_lib.core import backend, timing
from course_lib.algorithms import matmul
from course_lib.teaching.plots import matmul as kplots
from course_lib.teaching import plots, widgets

# sizes for the timing cells: the full budget uses the seed's sizes, CI (COURSE_BUDGET=small) smaller ones
N_BIG = timing.scaled(1000, 256)          # the seed's layer size
N_SMALL = timing.scaled(256, 96)          # for the slow scalar kernels
PAIR_FAST = timing.scaled((1000, 1024), (250, 256))   # not a power of two vs a power of two
PAIR_SLOW = timing.scaled((500, 512), (250, 256))
N_SWEEP = timing.scaled(512, 128)
N_COMBO = timing.scaled(384, 96)
print(backend.report())
print(f"\nsizes: ladder {N_BIG} (slow kernels {N_SMALL}), pairs {PAIR_FAST} / {PAIR_SLOW}, "
      f"tile sweep {N_SWEEP}, Fig. 10 combinations {N_COMBO}")

# %% [markdown]
# ## 1 · Loop order: which memory does the inner loop walk?
#
# $C = AB$ with $C_{ij} = \sum_p A_{ip} B_{pj}$ is three nested loops, and the *order* of the loops
# decides which memory the innermost loop touches. numpy arrays are row-major: `B[p, j]` and
# `B[p, j+1]` are neighbours, `B[p, j]` and `B[p+1, j]` are a whole row (4 KB at n = 1000) apart.
#
# ```
# ijk ("naive")                         ikj ("loop-reordered")
# for i: for j: for p:                  for i: for p:  a = A[i, p]
#     C[i,j] += A[i,p] * B[p,j]             for j:     C[i,j] += a * B[p,j]
#
#   B walked down a column:               B and C walked along rows:
#   B[0,j] B[1,j] B[2,j] ...              B[p,0] B[p,1] B[p,2] ...
#   one float used per 64-byte line       16 floats used per 64-byte line
#   a running sum: strict order           independent updates: SIMD lanes can do 8 or 16 at once
# ```
#
# Let us draw it on a 4x4 example: the addresses (in floats from the start of `B`) read by the
# innermost loop.

# %%
n_demo = 4
ijk_walk = [p * n_demo + 0 for p in range(n_demo)]   # i = 0, j = 0: down column 0
ikj_walk = [0 * n_demo + j for j in range(n_demo)]   # i = 0, p = 0: along row 0
print("ijk inner loop reads B at offsets", ijk_walk, "-> stride", ijk_walk[1] - ijk_walk[0], "floats")
print("ikj inner loop reads B at offsets", ikj_walk, "-> stride", ikj_walk[1] - ikj_walk[0], "float")

# %% [markdown]
# ## 2 · The ladder, and is it right?
#
# | kernel | what changes |
# |---|---|
# | `matmul_naive` | ijk: textbook |
# | `matmul_ikj` | loop order: contiguous inner loop (the compiler vectorises it) |
# | `matmul_tiled` | ijk on `tile_i x tile_j x tile_k` tiles that fit in cache, scalar inside |
# | `matmul_tiled_simd` | tiles + contiguous inner loop + `fastmath` |
# | `matmul_parallel` | ikj with `prange` over blocks of rows |
# | `matmul_parallel_tiled` | `prange` over row blocks + B packed into contiguous panels + a 4x8 register-blocked micro-kernel |
#
# Each is a short `@njit(cache=True)` function. Before timing anything: do they all compute
# $AB$? Odd sizes catch tiles that forget the ragged last tile.

# %%
rng = np.random.default_rng(0)
A = rng.standard_normal((67, 45)).astype(np.float32)
B = rng.standard_normal((45, 89)).astype(np.float32)
reference = A.astype(np.float64) @ B.astype(np.float64)
for name, kernel in matmul.MATMUL_KERNELS.items():
    err = np.max(np.abs(kernel(A, B) - reference))
    print(f"{name:<15} max error vs numpy (float64) < 1e-4: {err < 1e-4}")

# %% [markdown]
# ## 3 · Did the compiler really use SIMD?
#
# "Vectorisable" is a promise; the machine code is the proof. `matmul.vector_instructions`
# compiles a kernel's core and counts floating-point multiply/add/FMA instructions that work on
# packed vector registers (`xmm` = 128 bit, `ymm` = 256 bit = 8 float32, `zmm` = 512 bit = 16
# float32) versus scalar ones. The ijk loops keep a running sum in strict order, which the
# compiler may not reorder, so they stay scalar; the ikj loops vectorise. (Each kernel is
# recompiled for this, a second or two each, so we look at three of them.)

# %% tags=["nbval-ignore-output"]
simd_info = {}
for name in ("naive", "tiled_simd", "parallel_tiled"):
    v = simd_info[name] = matmul.vector_instructions(name)
    print(f"{name:<15} vector ops {v['vector']:>3}, scalar ops {v['scalar']:>3}, widest register: {v['widest']}")

# %% [markdown]
# (numba asks LLVM for this CPU's instruction set. On AVX-512 machines LLVM still prefers 256-bit
# `ymm` vectors by default: 8 float32 per instruction, not the 16 the seed's Xeon Phi used.
# 512-bit code can only be forced process-wide, through numba's `NUMBA_CPU_FEATURES`; it did not
# make the fast kernel faster when we tried, so the course leaves the default alone.)
#
# ## 4 · Timing the ladder
#
# The scalar kernels (`naive`, `tiled`) take seconds at the seed's size, so they run at a smaller
# n. Every row also times numpy at the same size, so "% of BLAS" compares like with like. The
# measured peak (`timing.peak_gflops()`, BLAS at 1024³ on all threads) is the dashed line.

# %% tags=["nbval-ignore-output"]
peak = timing.peak_gflops("float32")
slow = matmul.ladder(N_SMALL, ["naive", "tiled", "ikj"], repeat=2)
fast = matmul.ladder(N_BIG, ["ikj", "tiled_simd", "parallel", "parallel_tiled"], repeat=2)
rows = [dict(r, n=N_SMALL) for r in slow] + [dict(r, n=N_BIG) for r in fast]
print(f"{'kernel':<16}{'n':>6}{'time':>11}{'GFLOP/s':>10}{'% of BLAS':>11}{'% of peak':>11}")
for r in rows:
    print(f"{r['name']:<16}{r['n']:>6}{r['seconds'] * 1e3:>9.2f}ms{r['gflops']:>10.1f}"
          f"{r['pct_of_blas']:>10.1f}%{100 * r['gflops'] / peak:>10.1f}%")
rate = {(r["name"], r["n"]): r["gflops"] for r in rows}
print(f"\nloop order alone (ikj / naive at n = {N_SMALL}): {rate['ikj', N_SMALL] / rate['naive', N_SMALL]:.1f}x")
kplots.ladder_bars(rows, peak=peak, title=f"The ladder on this machine (float32; peak measured {peak:.0f} GFLOP/s)");

# %% [markdown]
# Read the table from the top:
#
# * **naive → ikj**: the same arithmetic, a different loop order, many times faster (the ratio is
#   printed below the table) -- the inner loop became contiguous *and* vectorised.
# * **tiled (scalar)** helps the naive order a little (B's tile stays in cache) but keeps the
#   scalar running sum: locality alone does not buy SIMD.
# * **ikj → tiled_simd**: at small n, B already fits in cache and tiling only adds loop overhead;
#   at the seed's n = 1000 (4 MB per matrix) tiling keeps the working set in L2.
# * **parallel_tiled** is the only kernel that is not limited by loads and stores: it packs a
#   `tile_k x tile_j` panel of B contiguously and updates 4 rows of C with 8 values of k per pass,
#   so each element of C is loaded and stored once per 8 multiply-adds (ikj: once per 1).
#
# `python benchmarks/matmul.py` measures the same ladder at 1000³ on 1 thread and on all threads
# (goal: the best kernel reaches 50% of BLAS).

# %%
print("seed: the best Halide RNN training step was about 3x slower than NumPy+BLAS (Fig. 8, 61-core Xeon Phi)")

# %% tags=["nbval-ignore-output"]
best = max(fast[:-1], key=lambda r: r["gflops"])
print(f"ours: the best numba kernel ({best['name']}) runs at {best['pct_of_blas']:.0f}% of BLAS at n = {N_BIG} "
      f"({best['seconds'] / fast[-1]['seconds']:.1f}x numpy's time)")

# %% [markdown]
# ## 5 · The roofline: how far from the hardware?
#
# A square GEMM has arithmetic intensity $2n^3 / (4 \cdot 3n^2) = n/6$ FLOP/byte in float32: at
# n = 1000 that is far right of the ridge point, so the roofline says *compute-bound*: every
# kernel could in principle reach the peak. Anything below is lost to the kernel itself (scalar
# code, cache misses, loads and stores), not to memory bandwidth.

# %% tags=["nbval-ignore-output"]
bandwidth = timing.copy_bandwidth()
points = [(timing.gemm_intensity(r["n"], r["n"], r["n"]), r["gflops"], f"{r['name']} (n={r['n']})")
          for r in rows if not (r["name"] == "numpy" and r["n"] == N_SMALL)]
ax = plots.roofline_plot(peak, bandwidth, points, intensity_range=(0.5, 1000))
ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
ax.set_title("Ladder kernels against the measured roofline");

# %% [markdown]
# ## 6 · 1000 or 1024? Conflict misses at powers of two
#
# The seed first used 1024-wide layers and found them *slower* than 1000-wide ones ("0.5 seconds
# increase per epoch"), blaming **cache conflict misses**: a cache is split into sets by address
# bits, and when the stride between consecutive accesses is a large power of two, all of them land
# in the same few sets and evict each other although the cache is mostly empty. The naive kernel's
# column walk is exactly such a stride (1024 floats = 4 KB). Does this machine show it? We time
# the same kernels at a size just below a power of two and at the power of two, and compare
# **GFLOP/s** (not time: 1024³ is 7% more work than 1000³).

# %% tags=["nbval-ignore-output"]
fast_pair = matmul.compare_sizes(PAIR_FAST, ("tiled_simd", "parallel_tiled", "numpy"), repeat=2)
slow_pair = matmul.compare_sizes(PAIR_SLOW, ("naive", "tiled", "ikj"), repeat=1)
for pair, res in ((PAIR_SLOW, slow_pair), (PAIR_FAST, fast_pair)):
    for name, (a, b) in res.items():
        print(f"{name:<15} n={pair[0]}: {a:7.1f} GFLOP/s   n={pair[1]}: {b:7.1f} GFLOP/s   "
              f"rate ratio {b / a:.2f} ({'slower' if b < 0.9 * a else 'no clear penalty'} at the power of two)")
import matplotlib.pyplot as plt  # noqa: E402
fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
kplots.size_pair_bars(slow_pair, PAIR_SLOW, ax=axes[0], title=f"simple loops, n = {PAIR_SLOW[0]} vs {PAIR_SLOW[1]}")
kplots.size_pair_bars(fast_pair, PAIR_FAST, ax=axes[1], title=f"tiled kernels and BLAS, n = {PAIR_FAST[0]} vs {PAIR_FAST[1]}")
fig.tight_layout()

# %%
print("seed: 1024-wide layers cost about 0.5 s more per epoch than 1000-wide ones (cache conflict misses)")

# %% [markdown]
# What to look for: the column-walking **naive** kernel is where theory expects a power-of-two
# stride to hurt most -- every step of its inner loop lands in the same few cache sets. Kernels
# that walk rows touch consecutive addresses; kernels that *pack* B into a contiguous panel
# (`parallel_tiled`, and BLAS) read it without any stride at all, which is the standard cure --
# but they still walk rows of A and C that are 4 KB apart, so they need not be completely immune.
# Timings on a busy machine wobble by tens of percent: rerun the cell before trusting a ratio near
# 1. (With the CI budget the sizes are 250 vs 256, where everything fits in cache; the seed's sizes
# run with the full budget.)
#
# ## 7 · Tile sizes
#
# Which tile is best? Too small and loop overhead dominates (and the vector loop is short); too
# large and the tile of B no longer fits in cache. The seed settled on 64 rows x 16 columns on
# the Xeon Phi (16 = one 512-bit vector of float32). Here is `matmul_tiled_simd` over a grid of
# `tile_i x tile_j` (with `tile_k = 64`):

# %% tags=["nbval-ignore-output"]
tiles_i = (4, 16, 64, 128)
tiles_j = (16, 64, 128, 512)
grid = matmul.tile_sweep(N_SWEEP, tiles_i, tiles_j, tile_k=64, kernel="tiled_simd", repeat=2)
kplots.tile_heatmap(grid, tiles_i, tiles_j, title=f"matmul_tiled_simd, n = {N_SWEEP}, tile_k = 64");
a, b = np.unravel_index(np.nanargmax(grid), grid.shape)
print(f"best tile here: {tiles_i[a]} rows x {tiles_j[b]} columns, {grid[a, b]:.1f} GFLOP/s")

# %%
print("seed: best tiling 64 rows x 16 columns (16 = one 512-bit SIMD vector of float32 on the Xeon Phi)")

# %% [markdown]
# ## 8 · Tiling x SIMD x parallel: the seed's Figure 10
#
# The seed ran all 8 combinations of its three tricks. We do the same with numba kernels that
# share one loop skeleton (`matmul.combination_kernel(tiled, simd, parallel)`):
#
# * **simd** off: the inner loop is a strict-order dot product (scalar code); on: a contiguous
#   update of a row of C with `fastmath` (vector code) -- §3 showed the difference in the machine code;
# * **tiled**: 64 x 16 x 64 tiles, like the seed's 64 rows x 16 columns; off: one tile as big as the matrix;
# * **parallel**: `prange` over blocks of rows.

# %% tags=["nbval-ignore-output"]
combos = matmul.time_combinations(N_COMBO, repeat=3, tile_i=64, tile_j=16, tile_k=64)
for r in combos:
    print(f"{r['name']:<26} {r['seconds'] * 1e3:8.1f} ms  {r['gflops']:6.2f} GFLOP/s  {r['speedup']:5.1f}x serial")
kplots.combination_bars(combos, title=f"Tiling x SIMD x parallel, n = {N_COMBO} (seed Fig. 10)");

# %%
print("seed Fig. 10: all three together was best (3.7 s per epoch, 5 epochs, Xeon Phi, AOT);")
print("seed Fig. 10: tiling + parallel was slower than parallel alone")
print("seed Fig. 11: SIMD gave at most about 8x, half the 16x of 16 float32 lanes")

# %% tags=["nbval-ignore-output"]
by = {(r["tiled"], r["simd"], r["parallel"]): r for r in combos}
best_combo = max(combos, key=lambda r: r["speedup"])
print(f"ours: best combination is '{best_combo['name']}' ({best_combo['speedup']:.1f}x serial)")
print(f"ours: tiling + parallel {'slower' if by[(True, False, True)]['seconds'] > by[(False, False, True)]['seconds'] else 'faster'}"
      f" than parallel alone ({by[(True, False, True)]['speedup']:.1f}x vs {by[(False, False, True)]['speedup']:.1f}x)")
lanes = {"zmm": 16, "ymm": 8, "xmm": 4}.get(simd_info["tiled_simd"]["widest"], 1)
simd_gain = max(by[(t, True, p)]["speedup"] / by[(t, False, p)]["speedup"] for t in (False, True) for p in (False, True))
print(f"ours: SIMD gave at most {simd_gain:.1f}x, with {lanes} float32 lanes per instruction")

# %% [markdown]
# Two differences from the seed are worth noticing. First, if SIMD gives *more* than the lane
# count here, that is no miracle: switching the inner loop from a column walk to a row walk also
# fixes the memory access, so the "simd" rows carry the loop-order win of §1 as well. Second, whether
# tiling + parallel loses to parallel alone depends on how the work is split: our `prange` hands
# each thread whole blocks of rows (contiguous in C), which avoids the scattered tile order the
# seed suspected in Halide's schedule.
#
# ## 9 · Try it: tile sizes
#
# The slider panel calls `matmul.tile_rate(n, tile_i, tile_j, tile_k, kernel=...)` -- a plain
# function you can call yourself: it times a tiled kernel with those tiles, and numpy at the same
# size. Try the seed's 64 x 16, tiles of 1, and tiles as big as the matrix.

# %% tags=["nbval-ignore-output"]
def show_tile_rate(data, ax):
    ax.barh([data["kernel"], "numpy"], [data["ours"], data["numpy"]], color=["tab:blue", "tab:grey"])
    ax.set_xscale("log")
    ax.set_xlabel("GFLOP/s (log scale)")
    ti, tj, tk = data["tiles"]
    return (f"{data['kernel']}, n = {data['n']}, tiles {ti} x {tj} x {tk}: {data['ours']:.1f} GFLOP/s = "
            f"{data['pct_of_blas']:.0f}% of numpy")


def tile_cost(n, tile_i, tile_j, tile_k, kernel):
    slow = 20 if kernel == "tiled" else 1       # the scalar kernel is ~20x slower
    return slow * 2 * n**3 * (1 + 16 / tile_j)  # short inner loops cost more too


widgets.sweep_panel(
    matmul.tile_rate,
    controls={"kernel": ["tiled_simd", "parallel_tiled", "tiled"], "n": (64, 1024, 64, 256),
              "tile_i": (1, 256, 1, 64), "tile_j": (8, 1024, 8, 64), "tile_k": (8, 512, 8, 64)},
    render=show_tile_rate,
    cost=tile_cost,
    max_cost=2 * 1024**3 * 1.1,
)

# %% [markdown]
# ## What we learned
#
# * **Loop order first**: the same $2n^3$ FLOPs run many times faster when the innermost loop walks
#   memory contiguously -- it uses whole cache lines *and* lets the compiler emit SIMD code
#   (checked in the machine code, not assumed).
# * **Tiling** keeps a working set in cache; it matters once the matrices outgrow the cache (the
#   seed's 1000x1000 float32 matrices are 4 MB each) and needs a vectorisable inner loop to pay.
# * **Powers of two** can cost extra through conflict misses, most visibly in column walks;
#   packing B into contiguous panels (what BLAS does) is the cure.
# * **Loads and stores, not FLOPs,** limit simple kernels: register blocking (4 rows x 8 values
#   of k per pass) is what lifts `parallel_tiled` towards the roofline.
# * The seed's Halide kernels ended about 3x behind NumPy's BLAS; the ratio we just measured is in
#   §4. Chapter 05 adds threads, fusion and compile caching, and builds the fastest training step.
#
# Next: [05 · threads, fusion, JIT vs AOT](05_threads_fusion.ipynb). Worksheet: `exercises/04_tiling_simd.ipynb`.
