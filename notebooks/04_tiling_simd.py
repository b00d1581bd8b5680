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
# The seed paper (Han & Uboweja, *Parallel Training of Recurrent Neural Networks*) attacked this with three
# scheduling tricks, in its words:
#
# > 2. Tiling of for loops in matrix multiplication, to improve spatial locality and decrease cache capacity misses.
# > 3. SIMD Vectorization [...] using SIMD to process many elements in parallel.
# > 4. parallel() [...] uses OpenMP threads to process different rows/columns of the matrix in parallel.
#
# We will write each trick as a numba kernel, check it against numpy, and measure it *here*:
# a ladder from the textbook triple loop to a packed, register-blocked, multi-threaded kernel,
# with the machine's BLAS (what `A @ B` calls) as the yardstick. All kernels live in
# [`course_lib/algorithms/matmul.py`](../course_lib/algorithms/matmul.py) -- open it next to this
# notebook; the timing helpers are in `course_lib/experiments/matmul.py`.

# %% tags=["nbval-ignore-output"]
import numpy as np

import course_lib  # noqa: F401  (first: decides numba's CUDA mode before numba is imported)
from course_lib.core import backend, timing
from course_lib.experiments.batching import cache_level
from course_lib.algorithms import matmul
from course_lib.models import fast_rnn, rnn
from course_lib.experiments import matmul as matmul_exp
from course_lib.teaching.plots import matmul as matmul_plots
from course_lib.teaching import claims, plots, widgets
from course_lib.teaching.verdict import verdict

# sizes for the timing cells: the full budget uses the seed's sizes, CI (COURSE_BUDGET=small) smaller ones
N_BIG = timing.scaled(1000, 256)          # the seed's layer size
N_SMALL = timing.scaled(256, 96)          # for the slow scalar kernels
PAIR_FAST = timing.scaled((1000, 1024), (250, 256))   # not a power of two vs a power of two
PAIR_SLOW = timing.scaled((500, 512), (250, 256))
N_SWEEP = timing.scaled(512, 128)
print(backend.report())
print(f"\nsizes: ladder {N_BIG} (slow kernels {N_SMALL}), pairs {PAIR_FAST} / {PAIR_SLOW}, "
      f"tile sweep {N_SWEEP}")

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
# "Vectorisable" is a promise; the machine code is the proof. `matmul_exp.vector_instructions` compiles a
# kernel's core and counts floating-point multiply/add/FMA instructions that work on packed vector
# registers (`xmm` = 128 bit = 4 float32, `ymm` = 256 bit = 8, `zmm` = 512 bit = 16) versus scalar
# ones. The ijk loops keep a running sum in strict order, which the compiler may not reorder; the ikj
# loops update independent elements. **Predict** which of the three below are vectorised. (Each
# kernel is recompiled for this, a second or two each.)

# %% tags=["nbval-ignore-output"]
simd_info = {}
for name in ("naive", "tiled_simd", "parallel_tiled"):
    v = simd_info[name] = matmul_exp.vector_instructions(name)
    print(f"{name:<15} vector ops {v['vector']:>3}, scalar ops {v['scalar']:>3}, widest register: {v['widest']}")
LANES = {"zmm": 16, "ymm": 8, "xmm": 4}.get(simd_info["tiled_simd"]["widest"], 1)
print(f"\nwidest vectors here: {simd_info['tiled_simd']['widest']} = {LANES} float32 lanes per instruction "
      f"(CPU flags: {backend.report()['SIMD']})")

# %%
print(claims.show("000.ch04.blas_simd"))

# %% [markdown]
# The seed's Xeon Phi had 16 float32 lanes; the printed line says how many LLVM used here (numba asks
# LLVM to target this CPU's instruction set; some CPUs with 512-bit registers still get 256-bit code by
# LLVM's choice).
#
# ## 4 · Timing the ladder
#
# The scalar kernels (`naive`, `tiled`) take seconds at the seed's size, so they run at a smaller
# n. Every row also times numpy at the same size, so "% of BLAS" compares like with like. The
# measured peak (`timing.peak_gflops()`, BLAS at 1024³ on all threads) is the dashed line.
# **Predict** the order of the rungs, and how far below BLAS the best one lands.

# %% tags=["nbval-ignore-output"]
peak = timing.peak_gflops("float32")
slow = matmul_exp.ladder(N_SMALL, ["naive", "tiled", "ikj"], repeat=2)
fast = matmul_exp.ladder(N_BIG, ["ikj", "tiled_simd", "parallel", "parallel_tiled"], repeat=3)
rows = [dict(r, n=N_SMALL) for r in slow["rows"]] + [dict(r, n=N_BIG) for r in fast["rows"]]
ladder_noise = slow["noise"] | fast["noise"]
print(f"{'kernel':<16}{'n':>6}{'time':>11}{'GFLOP/s':>10}{'% of BLAS':>11}{'% of peak':>11}")
for r in rows:
    print(f"{r['name']:<16}{r['n']:>6}{r['seconds'] * 1e3:>9.2f}ms{r['gflops']:>10.1f}"
          f"{r['pct_of_blas']:>10.1f}%{100 * r['gflops'] / peak:>10.1f}%")
rate = {(r["name"], r["n"]): r["gflops"] for r in rows}
ladder_noise.add(max(r["gflops"] for r in rows) > 1.05 * peak, "a kernel ran above the measured peak")
if not ladder_noise.ok:
    print(ladder_noise.warning())
print(f"\nloop order (ikj / naive at n = {N_SMALL}): {rate['ikj', N_SMALL] / rate['naive', N_SMALL]:.1f}x; "
      f"tiling a scalar loop (tiled / naive): {rate['tiled', N_SMALL] / rate['naive', N_SMALL]:.2f}x; "
      f"tiling a SIMD loop (tiled_simd / ikj at n = {N_BIG}): {rate['tiled_simd', N_BIG] / rate['ikj', N_BIG]:.2f}x")
matmul_plots.ladder_plot(rows, peak=peak,
                         title=f"The ladder on this machine (float32; peak measured {peak:.0f} GFLOP/s)");

# %% [markdown]
# What each step changes -- compare with the ratios printed under the table:
#
# * **naive → ikj**: the same arithmetic, a different loop order: the inner loop becomes contiguous
#   *and* vectorisable (§3).
# * **tiled (scalar)** keeps a tile of B in cache for the naive order but keeps the scalar running
#   sum: locality without SIMD.
# * **ikj → tiled_simd**: tiling pays only when B does not fit in the cache the inner loop streams
#   from; at small n it only adds loop overhead. Where the ratio lands depends on your cache sizes
#   -- read from this machine's OS just below, with the level B lands in picked by code.
# * **parallel_tiled** packs a `tile_k x tile_j` panel of B contiguously and updates 4 rows of C with
#   8 values of k per pass, so each element of C is loaded and stored once per 8 multiply-adds
#   (ikj: once per 1) -- the kernels before it are limited by those loads and stores.
#
# `python benchmarks/matmul.py` measures the same ladder at 1000³ on 1 thread and on all threads.

# %% tags=["nbval-ignore-output"]
caches = backend.cache_sizes()
print("caches here (from the OS):", ", ".join(f"{k} {v / 2**10:g} KiB" for k, v in caches.items()) or "not reported")
for n in sorted({N_SMALL, N_BIG}):
    level = cache_level(4 * n * n, caches)
    print(f"B at n = {n}: {4 * n * n / 2**10:.0f} KiB of float32 -> fits in {level}"
          + (": the ikj loop streams it from DRAM, so tiling has traffic to save" if level == "DRAM" else
             f": B already stays in {level} between its uses, so tiling has only the traffic between "
             f"{level} and the core to save at this size"))

# %% [markdown]
# The seed's best Halide training step ended up behind NumPy's BLAS (Fig. 8). **Predict**: is our best
# numba kernel closer to BLAS than that, or further?

# %% tags=["nbval-ignore-output"]
frows = fast["rows"]
best = max(frows[:-1], key=lambda r: r["gflops"])
behind = best["seconds"] / frows[-1]["seconds"]
print(f"ours: the best numba kernel ({best['name']}) at n = {N_BIG} takes {behind:.2f}x numpy's time "
      f"({best['pct_of_blas']:.0f}% of BLAS)")
print(verdict("000.halide.fig8.halide_vs_numpy", behind, here=f"{backend.max_threads()} thread(s), one {N_BIG}³ GEMM",
              reasons=[(behind < 1.5 and best["name"] == "parallel_tiled",
                        f"our packed, register-blocked kernel reaches {best['pct_of_blas']:.0f}% of BLAS on a single GEMM; "
                        "the seed's number is a whole training epoch against NumPy on "
                        f"{claims.claim('000.halide.fig12.parallel_ideal').value:.0f} cores"),
                       (frows[-1]["gflops"] >= 0.6 * peak > best["gflops"],
                        f"BLAS runs at {100 * frows[-1]['gflops'] / peak:.0f}% of the measured peak and our best "
                        f"kernel at {100 * best['gflops'] / peak:.0f}%: BLAS's packing and register-blocked "
                        "micro-kernels keep the FMA units busy, ours do not yet")],
              noise=fast["noise"]))

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
# The seed first used 1024-wide layers and found them *slower* than 1000-wide ones (its words are
# printed below), blaming **cache conflict misses**: a cache is split into sets by address bits, and
# when the stride between consecutive accesses is a large power of two, all of them land in the same
# few sets and evict each other although the cache is mostly empty. The naive kernel's column walk is
# exactly such a stride (1024 floats = 4 KB). We time the same kernels at a size just below a power of
# two and at the power of two, interleaved, and compare **GFLOP/s** (not time: 1024³ is more work than
# 1000³). **Predict** which kernels, if any, lose per FLOP at the power of two.

# %%
print(claims.show("000.ch04.pow2.penalty", "000.ch04.fig8.best_seconds"))

# %% tags=["nbval-ignore-output"]
fast_pair = matmul_exp.compare_sizes(PAIR_FAST, ("tiled_simd", "parallel_tiled", "numpy"), repeat=3)
slow_pair = matmul_exp.compare_sizes(PAIR_SLOW, ("naive", "tiled", "ikj"), repeat=1)
for pair, res in ((PAIR_SLOW, slow_pair), (PAIR_FAST, fast_pair)):
    for name, (a, b) in res["rates"].items():
        verdict_pow2 = ("slower per FLOP at the power of two" if b < 0.9 * a else
                        "faster per FLOP at the power of two" if b > 1.1 * a else "within 10%: no clear difference")
        print(f"{name:<15} n={pair[0]}: {a:7.1f} GFLOP/s   n={pair[1]}: {b:7.1f} GFLOP/s   ratio {b / a:.2f} -> "
              f"{verdict_pow2 if res['noise'].ok else 'no conclusion (unreliable run)'}")
    if not res["noise"].ok:
        print(res["noise"].warning())
import matplotlib.pyplot as plt
fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
matmul_plots.size_pair_plot(slow_pair["rates"], PAIR_SLOW, ax=axes[0], title=f"simple loops, n = {PAIR_SLOW[0]} vs {PAIR_SLOW[1]}")
matmul_plots.size_pair_plot(fast_pair["rates"], PAIR_FAST, ax=axes[1], title=f"tiled kernels and BLAS, n = {PAIR_FAST[0]} vs {PAIR_FAST[1]}")
fig.tight_layout()

# %% [markdown]
# Where theory expects the penalty: the column-walking **naive** kernel, whose every inner step lands
# in the same few cache sets. Kernels that walk rows touch consecutive addresses; kernels that *pack*
# B into a contiguous panel (`parallel_tiled`, and BLAS) read it without any stride at all, which is
# the standard cure -- but they still walk rows of A and C that are 4 KB apart. Each row ends in a
# conclusion only when its run was reliable; otherwise it says "no conclusion" and the warning under
# it says why. (With the CI budget the sizes are 250 vs 256, where everything fits in cache; the
# seed's sizes run with the full budget.)
#
# The seed's number is not a kernel rate but **epoch time**: 0.5 s more per epoch at 1024 than at 1000.
# The same question for a whole training step here: `fast_rnn.train_step` at both widths, timed in
# interleaved pairs. A step's FLOPs grow like $n^2$ at a fixed batch, so 1024 must cost
# $(1024/1000)^2 \approx 1.05\times$ anyway; only what is beyond that is a power-of-two penalty.

# %% tags=["nbval-ignore-output"]
def step_at(n, batch=timing.scaled(100, 16), T=10):
    """A zero-argument training step of width n (nx = nh = ny = n), as one epoch's unit of work."""
    rng = np.random.default_rng(n)
    p = rnn.init_params(n, n, n, seed=0)
    X = rng.uniform(-1, 1, (T, batch, n)).astype(np.float32)
    Y = rng.uniform(-1, 1, (T, batch, n)).astype(np.float32)
    return lambda: fast_rnn.train_step(p, X, Y, 1e-3)


n0, n1 = PAIR_FAST
steps = timing.compare(**{f"n={n0}": step_at(n0), f"n={n1}": step_at(n1)}, baseline=f"n={n0}", repeat=5)
step_ratio = steps.ratio(f"n={n1}")
work = (n1 / n0) ** 2
seed_epoch = claims.CLAIMS["000.ch04.fig8.best_seconds"].value
seed_extra = claims.CLAIMS["000.ch04.pow2.penalty"].value
seed_ratio = (seed_epoch + seed_extra) / seed_epoch
print(f"one training step: n = {n1} takes {step_ratio:.2f}x the time of n = {n0} "
      f"(interval {steps.ratio_interval(f'n={n1}')[0]:.2f}-{steps.ratio_interval(f'n={n1}')[1]:.2f}); "
      f"the FLOPs alone give {work:.3f}x")
print(f"seed: ({seed_epoch:g} + {seed_extra:g}) / {seed_epoch:g} = {seed_ratio:.2f}x per epoch at 1024 vs 1000 (the same FLOP factor {work:.3f}x)")
penalty = steps.faster(f"n={n0}", by=1.05 * work, over=f"n={n1}")  # beyond the FLOPs by more than 5%?
if penalty == "yes":
    print(f"a power-of-two penalty on the whole step here: {step_ratio / work:.2f}x per FLOP, as the seed saw per epoch")
elif penalty == "no":
    print(f"no power-of-two penalty beyond the FLOPs on the whole step here ({step_ratio / work:.2f}x per FLOP): "
          "fast_rnn's GEMMs are BLAS calls -- compare the numpy row of the kernel pairs above")
else:
    print("these pairs cannot tell whether there is a penalty beyond the FLOPs: " + steps.said(f"n={n0}", over=f"n={n1}"))
#
# ## 7 · Tile sizes
#
# Which tile is best? Too small and loop overhead dominates (and the vector loop is short); too
# large and the tile of B no longer fits in cache. The seed settled on 64 rows x 16 columns on the
# Xeon Phi (16 = one 512-bit vector of float32; outlined in red below). Here is `matmul_tiled_simd`
# over a grid of `tile_i x tile_j` (with `tile_k = 64`). **Predict**: is the seed's tile the best here?

# %%
print(claims.show("000.halide.fig10.tile_rows", "000.halide.fig10.tile_cols"))

# %% tags=["nbval-ignore-output"]
SEED_TILE = (int(claims.CLAIMS["000.halide.fig10.tile_rows"].value), int(claims.CLAIMS["000.halide.fig10.tile_cols"].value))
tiles_i = (4, 16, 64, 128)
tiles_j = (16, 64, 128, 512)
sw = matmul_exp.tile_sweep(N_SWEEP, tiles_i, tiles_j, tile_k=64, method="tiled_simd", repeat=3)
grid = sw["grid"]
matmul_plots.tile_heatmap(grid, tiles_i, tiles_j, mark=SEED_TILE, mark_label="seed 64x16",
                    title=f"matmul_tiled_simd, n = {N_SWEEP}, tile_k = 64 (★ best here)");
a, b = np.unravel_index(np.nanargmax(grid), grid.shape)
print(f"best tile here: {tiles_i[a]} rows x {tiles_j[b]} columns, {grid[a, b]:.1f} GFLOP/s")
sa, sb = tiles_i.index(SEED_TILE[0]), tiles_j.index(SEED_TILE[1])
col16 = np.nanmean(grid[:, sb]) / np.nanmean(np.delete(grid, sb, axis=1))
print(f"the seed's {SEED_TILE[0]}x{SEED_TILE[1]}: {grid[sa, sb]:.1f} GFLOP/s = {grid[sa, sb] / grid[a, b]:.0%} of the best; "
      f"the whole tile_j = {SEED_TILE[1]} column averages {col16:.2f}x the other columns")
if not sw["noise"].ok:
    print(sw["noise"].warning())
elif col16 < 0.9:
    print(f"why: with tile_j = {SEED_TILE[1]} the vectorised inner loop is only {SEED_TILE[1] / LANES:g} SIMD "
          f"instruction(s) long here ({LANES} lanes), so the loop control and the loads of A and of the C row "
          "around it cost as much as the arithmetic; wider tiles amortise them. The seed chose 16 to match its "
          "vector width, which fills the vectors but leaves that overhead.")

# %% [markdown]
# ## 8 · Tiling x SIMD x parallel: the seed's Figure 10 is run once, in chapter 06
#
# The seed ran all 8 combinations of its three tricks and titled the figure *"Tiling works well with
# Vectorization"*: the code with all three was its best, and *tiling + parallel was slower than
# parallel alone*. That experiment is a statement about **Halide schedules**, so the course runs it
# once, with the seed's own tool: [06 · Fig. 10 · Eight combinations of tiling, SIMD and
# parallel](06_halide.ipynb#Fig.-10-·-Eight-combinations-of-tiling,-SIMD-and-parallel). The
# numba kernels that share one loop skeleton here (`matmul.combination_kernel(tiled, simd, parallel)`,
# timed by `matmul_exp.time_combinations`) stay available for your own runs; §2-§7 above already
# measured each trick on its own: the loop order and SIMD in the ladder, the tiles in §7.
#
# ## 9 · Try it: tile sizes
#
# The slider panel calls `matmul_exp.tile_rate(n, tile_i, tile_j, tile_k, method=...)` -- a plain
# function you can call yourself: it times a tiled kernel with those tiles, and numpy at the same
# size, interleaved. Try the seed's 64 x 16, tiles of 1, and tiles as big as the matrix.

# %% tags=["nbval-ignore-output"]
def show_tile_rate(data, ax):
    ax.bar([data["method"], "numpy"], [data["ours"], data["numpy"]], color=["tab:blue", "tab:grey"])
    ax.set_ylim(0, 1.2 * max(data["ours"], data["numpy"]))
    ax.set_ylabel("GFLOP/s")
    ti, tj, tk = data["tiles"]
    warn = "" if data["noise"].ok else "  [unreliable: the machine was busy -- move a slider to re-run]"
    return (f"{data['method']}, n = {data['n']}, tiles {ti} x {tj} x {tk}: {data['ours']:.1f} GFLOP/s = "
            f"{data['pct_of_blas']:.0f}% of numpy{warn}")


def tile_cost(n, tile_i, tile_j, tile_k, method):
    slow = 20 if method == "tiled" else 1       # the scalar kernel is much slower
    return slow * 2 * n**3 * (1 + 16 / tile_j)  # short inner loops cost more too


widgets.sweep_panel(
    matmul_exp.tile_rate,
    controls={"method": ["tiled_simd", "parallel_tiled", "tiled"], "n": (64, 1024, 64, 256),
              "tile_i": (1, 256, 1, 64), "tile_j": (8, 1024, 8, 64), "tile_k": (8, 512, 8, 64)},
    render=show_tile_rate,
    cost=tile_cost,
    max_cost=2 * 1024**3 * 1.1,
)

# %% [markdown]
# ## What we learned
#
# * **Loop order first**: the same $2n^3$ FLOPs run at very different speeds depending on whether the
#   innermost loop walks memory contiguously -- that decides whole cache lines *and* whether the
#   compiler can emit SIMD code (checked in the machine code, not assumed).
# * **Tiling** keeps a working set in cache; it can only pay once the matrices outgrow the cache the
#   loop streams from, and it needs a vectorisable inner loop long enough to fill the vectors -- the
#   seed's 16-column tile was sized for a 16-lane machine.
# * **Powers of two** can cost extra through conflict misses, most visibly in column walks;
#   packing B into contiguous panels (what BLAS does) is the cure.
# * **Loads and stores, not FLOPs,** limit simple kernels: register blocking (4 rows x 8 values
#   of k per pass) is what lifts `parallel_tiled` towards the roofline.
# * Chapter 05 adds threads, fusion and compile caching, and builds the fastest training step.
#
# Worksheet: [exercises/04_tiling_simd.ipynb](../exercises/04_tiling_simd.ipynb).
# Next: [05 · threads, fusion, JIT vs AOT](05_threads_fusion.ipynb).
