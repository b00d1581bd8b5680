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
# # 05 · Threads, loop fusion, JIT vs AOT -- and the fastest CPU training step
#
# Chapters 03 and 04 made each matrix product efficient: batch it, tile it, vectorise it. This
# chapter puts a whole training step together and asks the seed's remaining questions
# (Han & Uboweja §4.6-4.10):
#
# 1. **Threads** (seed Fig. 12): how does each variant scale from 1 thread to all cores, and
#    why did *tiling + parallel* scale worse than *parallel* alone for the seed?
# 2. **Loop fusion** (seed §4.9): doing all element-wise work of a step in one pass instead of
#    one pass per operation -- the seed saw "almost 2x".
# 3. **Where the time goes** (seed §4.10): the phase breakdown of one step.
# 4. **JIT vs ahead-of-time** (seed Fig. 14): what compiling costs, and what a compile cache saves.
#
# The result is `course_lib.models.fast_rnn.train_step` -- open `course_lib/fast_rnn.py`: five ideas,
# each a few lines (one GEMM for the input projection of all time steps; preallocated
# workspaces; fused element-wise kernels; BLAS with transposes as views; threads for BLAS and
# numba together).

# %%
import numpy as np

import course_lib
from course_lib.core import backend, timing
from course_lib.models import fast_rnn, rnn
from course_lib.experiments import jit, profile
from course_lib.algorithms import matmul
from course_lib.teaching import plots, widgets
from course_lib.teaching.plots import perf

# %% [markdown]
# ## First: the same maths
#
# A fast step is worth nothing if it computes something else. The gradients of the fast step
# agree with chapter 02's `bptt_linear`, in float64 to round-off and in float32 (where the fast
# step uses a vectorisable rational `tanh`, max error ~3e-7) to float32 accuracy.

# %%
rng = np.random.default_rng(0)
for dtype, tol in ((np.float64, 1e-10), (np.float32, 1e-4)):
    p = rnn.init_params(6, 8, 4, seed=1, dtype=dtype)
    X = rng.uniform(-1, 1, (7, 5, 6)).astype(dtype)
    Y = rng.uniform(-1, 1, (7, 5, 4)).astype(dtype)
    ref = rnn.bptt_linear(p, X, Y)
    fast, loss = fast_rnn.gradients(p, X, Y)
    worst = max(np.max(np.abs(getattr(fast, k) - getattr(ref, k))) / np.max(np.abs(getattr(ref, k)))
                for k in ("Wxh", "Whh", "Why"))
    new_ref = rnn.sgd_step(p, ref, 0.05)
    new_fast, _ = fast_rnn.train_step(p, X, Y, 0.05)
    same_update = all(np.allclose(getattr(new_fast, k), getattr(new_ref, k), rtol=tol, atol=tol) for k in ("Wxh", "Whh", "Why"))
    print(f"{np.dtype(dtype).name}: gradients within {tol:g} (relative): {worst < tol}; same SGD update: {same_update}; "
          f"loss {loss:.4f}")

# %% [markdown]
# ## 1 · Threads: 1 … all cores for each variant (seed Fig. 12)
#
# `backend.set_threads(n)` sets the BLAS library's and numba's thread counts together.
# We time three matrix-product variants -- BLAS, chapter 04's `prange` kernel parallel over
# rows, and the parallel + tiled kernel -- plus the fused element-wise kernel and two whole
# training steps, at every thread count, and plot the speedup over one thread.

# %% tags=["nbval-ignore-output"]
print(f"cores: {backend.cpu_count()}, numba threads now: {backend.get_threads()}")
n_threads_demo = timing.scaled(384, 128)
scaling = profile.thread_scaling(profile.VARIANTS, n=n_threads_demo, repeat=5)
for v in profile.VARIANTS:
    secs = ", ".join(f"{t} thr {s * 1e3:7.2f} ms" for t, s in zip(scaling["threads"], scaling["seconds"][v]))
    print(f"{v:<30} {secs}   speedup at {scaling['threads'][-1]} threads: {scaling['speedup'][v][-1]:.2f}x")

# %% tags=["nbval-ignore-output"]
perf.thread_scaling_plot(scaling);

# %% [markdown]
# The seed's reading of its Fig. 12: Halide's `parallel()` scaled well with vectorisation but
# *worse* with tiling, because one thread processed tiles far apart in the matrix (poor locality)
# and each tile was too little work per thread. On a machine with few cores the ideal line is
# short, and the *other* programs running matter: two threads on two busy cores can be slower
# than one. What does your plot say?
#
# ## Tiling × parallel interplay
#
# Chapter 04's eight combinations of tiling, SIMD and `prange` (seed Fig. 10), timed now. Look
# at the two parallel rows with and without tiling.

# %% tags=["nbval-ignore-output"]
combos = matmul.time_combinations(timing.scaled(256, 128), repeat=3)
for r in combos:
    print(f"{r['name']:<26} {r['gflops']:7.2f} GFLOP/s   {r['speedup']:6.1f}x over serial")
par = {r["name"]: r["gflops"] for r in combos}
print(f"\nparallel alone vs tiled + parallel: {par['parallel'] / par['tiled + parallel']:.2f}x; "
      f"with SIMD: {par['simd + parallel'] / par['tiled + simd + parallel']:.2f}x  (> 1: tiling hurt the parallel kernel)")
print("seed (Fig. 10/12): tiling + parallel() was slower than parallel() alone")

# %% [markdown]
# ## 2 · Loop fusion vs separate passes (seed §4.9)
#
# Apart from its GEMMs, a training step does element-wise work on $T \cdot B \cdot n$ numbers:
# $\tanh$ of the pre-activations, the loss, the output delta $2(\hat y - y)(1-\hat y^2)$, the
# hidden delta $(\Delta h + \Delta z\,W_{hh}^T)(1-h^2)$. Written as numpy expressions each
# operation is its own pass over memory (11 passes for the two below); fused into numba loops
# it is **one pass per kernel** -- each number is loaded once, everything is done to it while it
# sits in a register, and it is stored once. `profile.fusion_comparison` times both on one thread,
# and the fused kernels again on all threads.

# %% tags=["nbval-ignore-output"]
fus = profile.fusion_comparison(B=timing.scaled(256, 128), n=timing.scaled(512, 256), T=10, repeat=5)
print(f"separate numpy passes (1 thread): {fus['separate_s'] * 1e3:7.2f} ms")
print(f"fused numba kernels   (1 thread): {fus['fused_1thread_s'] * 1e3:7.2f} ms  -> fusion alone {fus['fusion_speedup']:.2f}x")
print(f"fused numba kernels (all threads): {fus['fused_all_s'] * 1e3:7.2f} ms  -> with threads {fus['total_speedup']:.2f}x")
print("seed (§4.9): 'an almost 2x speed up' from loop fusion")

# %%
print("fused and separate agree (max abs diff < 1e-5):", fus["max_abs_diff"] < 1e-5,
      "| same loss (rel. diff < 1e-5):", fus["loss_rel_diff"] < 1e-5)

# %% [markdown]
# ### A trap on the way: numba's error model
#
# A fused pass only pays if its loop is vectorised (SIMD, chapter 04). While building
# `fast_rnn` we found our `tanh` kernel running ~10x slower than expected: it had a division, and
# numba's default `error_model="python"` checks every divisor for zero so it can raise
# `ZeroDivisionError` -- a branch inside the loop that LLVM's vectoriser gives up on.
# `error_model="numpy"` (IEEE semantics: `x / 0` is `inf`) removes the branch. Same loop, both ways:

# %% tags=["nbval-ignore-output"]
em = profile.error_model_comparison(timing.scaled(4_000_000, 1_000_000))
print(f"error_model='python': {em['python_s'] * 1e3:6.2f} ms   error_model='numpy': {em['numpy_s'] * 1e3:6.2f} ms"
      f"   -> {em['speedup']:.1f}x")

# %%
print("same values either way:", em["same_result"])

# %% [markdown]
# ## 3 · Where the time goes (seed §4.10)
#
# `profile.profile_step` runs one step phase by phase with a clock between phases. The
# *reference* is organised like the seed's step: a forward loop that computes $h_t$, then
# $\hat y_t$, then copies both into the arrays kept for backpropagation; the loss; a reverse loop
# with the output delta, hidden delta and gradient updates of each step; the descent. The *fast*
# step does each phase as one GEMM over all time steps plus a fused kernel, saves nothing (it
# computes intermediates where backpropagation reads them) and fuses the loss into the output delta.

# %% tags=["nbval-ignore-output"]
size = timing.scaled(384, 128)
prof = {kind: profile.profile_step(kind, T=10, B=size, n=size, repeat=2) for kind in ("reference", "fast")}
print(f"{'phase':<22} {'seed %':>7} {'reference %':>12} {'fast %':>8}")
for ph in profile.PHASES:
    print(f"{ph:<22} {profile.SEED_PERCENT[ph]:>7.2f} {prof['reference']['percent'][ph]:>12.2f} {prof['fast']['percent'][ph]:>8.2f}")
print(f"\nstep time: reference {prof['reference']['total_s'] * 1e3:.1f} ms, fast {prof['fast']['total_s'] * 1e3:.1f} ms "
      f"({prof['reference']['total_s'] / prof['fast']['total_s']:.2f}x)")

# %% tags=["nbval-ignore-output"]
perf.phase_bars({"reference (numpy, per time step)": prof["reference"], "fast_rnn": prof["fast"]},
                seed=profile.SEED_PERCENT);

# %% [markdown]
# The seed found the three GEMM phases (compute $h_t$, hidden delta, gradient updates) at ~22-25%
# each -- and "saving intermediates" at 22.55%, a quarter of the time spent *copying*. The fast
# step's bars should sit almost entirely on the GEMM phases: when every phase is a large GEMM
# plus one fused pass, the step runs close to the machine's GEMM peak. The phases' percentages
# must add to 100:

# %%
print("percentages add to 100:", all(abs(sum(p["percent"].values()) - 100) < 1e-6 for p in prof.values()))
print("phases:", ", ".join(profile.PHASES))

# %% [markdown]
# ### The whole step against the GEMM peak
#
# Steps of the same maths, timed interleaved with a plain GEMM: the fast step (its fused
# element-wise passes on the calling thread, the default), the same with those passes split over
# numba's threads (`make_workspace(..., parallel_elementwise=True)`), a careful numpy step (same GEMMs and buffers, but one numpy pass per element-wise operation:
# `fast_rnn.NumpyStep`) and the reference (`bptt_linear` + `sgd_step`). GFLOP/s counts the
# step's GEMM FLOPs (`fast_rnn.step_flops`). The benchmark `python benchmarks/rnn_step.py` does
# this at the seed's full size (B = 1000, n = 1000, T = 10) with PyTorch columns.

# %% tags=["nbval-ignore-output"]
T, B, n = 10, timing.scaled(384, 128), timing.scaled(384, 128)
p0 = rnn.init_params(n, n, n, seed=0)
X = rng.uniform(-1, 1, (T, B, n)).astype(np.float32)
Y = rng.uniform(-1, 1, (T, B, n)).astype(np.float32)
ws, pf, pn, np_step = fast_rnn.make_workspace(T, B, n, n, n), p0.copy(), p0.copy(), fast_rnn.NumpyStep(T, B, n, n, n)
ws_par, pp = fast_rnn.make_workspace(T, B, n, n, n, parallel_elementwise=True), p0.copy()
A1, A2, C = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(3))
cmp = timing.compare(
    fast=lambda: fast_rnn.train_step(pf, X, Y, 0.0, workspace=ws, inplace=True),
    fast_prange=lambda: fast_rnn.train_step(pp, X, Y, 0.0, workspace=ws_par, inplace=True),
    numpy=lambda: np_step(pn, X, Y, 0.0),
    reference=lambda: rnn.sgd_step(p0, rnn.bptt_linear(p0, X, Y), 0.0),
    gemm=lambda: [np.matmul(A1, A2, out=C) for _ in range(8 * T * B // n)], repeat=5)
flops = fast_rnn.step_flops(T, B, n, n, n)
peak_now = 8 * T * B // n * timing.gemm_flops(n, n, n) / cmp.timings["gemm"].min / 1e9
rates = {k: flops / cmp.timings[k].min / 1e9 for k in ("fast", "fast_prange", "numpy", "reference")}
for k, r in rates.items():
    print(f"{k:<12} {cmp.timings[k].min * 1e3:8.1f} ms  {r:7.1f} GFLOP/s  {100 * r / peak_now:5.1f}% of the GEMM peak")
print(f"GEMM peak measured alongside ({n}^3): {peak_now:.1f} GFLOP/s")
print("design goal (2 idle cores, B = n = 1000): fast >= 88% of the peak; a careful numpy step ~85%")

# %% tags=["nbval-ignore-output"]
perf.step_bars(rates, peak_now);

# %% [markdown]
# Compare `fast` with `fast_prange`. The fused passes are memory-bound, so a second thread can
# gain at most what a second core adds to memory bandwidth -- and a numba parallel region that
# starts right after a multi-threaded BLAS call must wait for cores on which BLAS's idle threads
# are still spinning. On a 2-core machine, and on any busy one, that wait tends to cost more
# than the thread gains, so `fast_rnn` keeps these passes on the calling thread by default and
# gives all the threads to the GEMMs, which carry ~95% of the FLOPs.

# %% [markdown]
# ## 4 · JIT vs a cached compile (seed Fig. 14)
#
# The seed's Halide code got 3x faster per epoch when it moved from just-in-time to ahead-of-time
# compilation, because its JIT version recompiled stages during training. numba compiles each
# function on its first call in a process; `@njit(cache=True)` stores the machine code on disk
# so the next process only loads it -- numba's AOT. `jit.compile_times` measures both in fresh
# subprocesses sharing a temporary cache directory (the first compiles, the second loads).

# %% tags=["nbval-ignore-output"]
jt = jit.compile_times(timing.scaled("fast_rnn", "toy"))
for mode in ("jit", "cached"):
    r = jt[mode]
    print(f"{mode:<7} import {r['import_s']:.2f} s, first call {r['first_call_s']:.3f} s, second call {r['second_call_s'] * 1e3:.2f} ms")
print(f"the cache saves {jt['compile_s']:.2f} s on the first call ({jt['first_call_ratio']:.1f}x faster first call)")
for steps in (1, 10, 100):
    e = jit.epoch_time(jt, steps)
    print(f"a run of {steps:>3} calls: JIT {e['jit_s']:.2f} s vs cached {e['cached_s']:.2f} s ({e['ratio']:.2f}x)")
print("seed (Fig. 14, Halide on a Xeon Phi): AOT about 3x faster per epoch than JIT")

# %% tags=["nbval-ignore-output"]
perf.jit_bars(jt);

# %% [markdown]
# numba pays its compile cost once per process (and the cache removes even that), so over a long
# training run the two converge -- unlike the seed's JIT Halide, which kept recompiling. The lesson
# carries over: compile before the loop, never inside it.
#
# ## Try it: threads and variant
#
# `profile.variant_time(variant, threads, n)` times one variant at one thread count now.

# %%
profile.VARIANTS

# %% tags=["nbval-ignore-output"]
def show_variant(d, ax):
    ax.bar([f"{d['variant']}\n{d['threads']} thread(s)"], [d["seconds"] * 1e3], color="tab:blue")
    ax.set_ylabel("ms")
    rate = f", {d['gflops']:.1f} GFLOP/s" if d["gflops"] is not None else ""
    return f"{d['variant']} at n = {d['n']} on {d['threads']} thread(s): {d['seconds'] * 1e3:.2f} ms{rate}"

widgets.sweep_panel(
    profile.variant_time,
    controls={"variant": list(profile.VARIANTS), "threads": (1, backend.get_threads(), 1, backend.get_threads()),
              "n": (64, 1024, 64, 256)},
    render=show_variant,
    cost=lambda variant, threads, n: n ** 3, max_cost=1024 ** 3,
)

# %% [markdown]
# ## What we learned
#
# * The recurrence is the only sequential part of a step: the input projection, the outputs,
#   the output's share of the hidden gradient and the three weight gradients are each **one GEMM
#   over all time steps**. Transposes are views; BLAS reads them with a flag.
# * Element-wise work is memory-bound: **fusing** it into one pass per kernel (and a `tanh`
#   that vectorises) removes most of its cost; the seed saw ~2x from fusion. Check that the
#   fused loop really vectorises: one division under numba's Python error model is enough to stop it.
# * Threads help large, contiguous work; small or scattered pieces (and busy machines) scale poorly.
#   Give the threads to the GEMMs; keep short memory-bound passes off the barrier.
# * Saving intermediates need not cost anything: compute them where they will be read.
# * Compile once, outside the loop; a compile cache makes even the first call cheap.
#
# Worksheet: `exercises/05_threads_fusion.ipynb` (fused kernels of the backward pass).
#
# Next: [06 · parallel inference](07_parallel_inference.ipynb).
