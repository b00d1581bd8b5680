# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# > **Your worksheet.** Replace each `raise NotImplementedError(...)` with your code, then run the check cell below it: it says *exactly* what is wrong, or prints `Exercise N.k passed`.
# > This file was generated from `solutions/04_tiling_simd.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 04 · A tiled matmul and a parallel matmul
#
# In the lecture notebook you climbed the matrix-multiply ladder. Now write two rungs yourself,
# as numba functions:
#
# * **Exercise 4.1** -- a *tiled* matrix product: loops over `tile x tile x tile` blocks, with the
#   ragged last block handled.
# * **Exercise 4.2** -- a *parallel* matrix product with `prange`, where each thread owns whole
#   rows of $C$. The check verifies the values **and** that numba really turned your loop into a
#   parallel loop (it reads numba's parallel diagnostics, so a busy machine cannot fool it).
#
# Write the body, run the cell, then run the check below it. numba compiles a function on its
# first call (a second or two); checks call your function on small matrices.

# %% [markdown] tags=["chapter-header"]
# **Chapter 04 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Explain how loop order decides whether the inner loop walks memory contiguously, and measure it.
# 2. Confirm SIMD in the compiled machine code instead of assuming it.
# 3. Write a tiled matmul that vectorises and a parallel one with `prange`, checked against numpy.
# 4. Place each rung of the matmul ladder on the roofline; explain conflict misses at powers of two and packing as their cure.
#
# * **Before this chapter:** [00 · setup](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/00_setup.ipynb), [03 · batching](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/03_batching.ipynb)
# * **Study time:** about 90 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 13 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** One kernel at a time: chapter 05 adds threads, fusion and compile caching to a whole training step.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/04_tiling_simd.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/04_tiling_simd.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/04_tiling_simd.ipynb)

# %% tags=["colab-setup", "nbval-ignore-output"]
# Generated (course_lib/teaching/chapters.py): where course_lib is missing (Colab, a bare kernel), install
# the course into this kernel; where it is installed, print one line. Either way, start this notebook's clock.
try:
    from course_lib.teaching import chapters
except ModuleNotFoundError:
    import importlib
    import subprocess
    import sys

    print("course_lib is not installed in this kernel: installing the course with pip (a few minutes) ...")
    source = "parallel-rnns-course @ git+https://github.com/parallel-rnns/parallel-rnns-course.git@main"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", source], check=True)
    importlib.invalidate_caches()
    from course_lib.teaching import chapters
chapters.started()

# %%
import numpy as np

import course_lib  # first: decides numba's CUDA mode before numba is imported
from course_lib.core import backend, timing
from course_lib.algorithms import matmul
from course_lib.teaching.checks import tiling_simd as tiling_simd_checks
from numba import njit, prange

# %% [markdown]
# ## Exercise 4.1 · A tiled matmul that vectorises (a speed exercise)
#
# Write `tiled_matmul(A, B, tile)` for `A` of shape `(m, k)` and `B` of shape `(k, n)`, returning
# `C` of shape `(m, n)` and `A`'s dtype. Loop over blocks: `i0` in steps of `tile` over the rows of
# $C$, `p0` over $k$, `j0` over the columns; inside a block run the ikj loops (contiguous inner
# loop over `j`). When a size is not a multiple of `tile`, the last block is smaller: stop each
# block at `min(start + tile, size)`. Start from `C = np.zeros((m, n), A.dtype)`.
#
# The innermost loop must become SIMD code. numba vectorises `for j in range(n): c[j] += a * b[j]`
# over arrays that start at index 0, but not a loop `for j in range(j0, j1)` whose start is known
# only at run time (it must then allow for negative indices). So inside a block take row *views*,
# `c_row = C[i, j0:j1]` and `b_row = B[p, j0:j1]`, and loop `for j in range(j1 - j0)`.
#
# The check verifies, after the numbers: that the function is a numba function of your own loops
# (a call into one of the course's kernels is rejected); that it is tiled by its argument (it runs
# your loops on a traced `B` at two tile sizes and counts how many times over they fetch `B` through
# a cache that holds half of `B` -- about `m / tile` when tiled, `m` when not, so the count must
# follow `tile`); that the compiled code contains packed SIMD instructions; and that it is at least
# twice as fast as the course's naive ijk loop (`matmul.matmul_naive`), measured alongside (a
# ratio, retried).

# %% tags=["solution", "raises-exception", "answer:4.1"]
@njit(cache=True)
def tiled_matmul(A, B, tile):
    """C (m, n) = A (m, k) @ B (k, n), computed tile x tile x tile block by block."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 4.1: replace this line with your code")
    return C

# %% tags=["raises-exception"]
tiling_simd_checks.check_tiled_matmul(tiled_matmul)

# %% [markdown]
# ## Exercise 4.2 · A parallel matmul with `prange` (a speed exercise)
#
# Write `parallel_matmul(A, B)` with `@njit(parallel=True)`: the loop over the rows `i` of $C$ is a
# `prange`, so numba hands different rows to different threads. Inside, use the ikj order. Each
# iteration of the `prange` loop must write **only its own row** of $C$ -- two threads adding into
# the same element at once would lose updates (a race). A `prange` over the reduction index `p`
# races on `C[i, j] +=`; a `prange` on an inner loop starts the threads once per outer iteration.
#
# The check reads numba's parallel diagnostics and your source: the `prange` must be the outer loop
# and every element it writes must be indexed by its variable. It runs a case built to expose
# races, here and once more in a separate process with twice as many threads as cores (so that
# threads are interrupted mid-update and collide even on a small machine). Then it measures your
# function against the course's prange loop (`matmul.matmul_parallel`) on the same threads in the
# same run: yours must reach at least half its speed (both suffer alike when other programs take
# the cores).

# %% tags=["solution", "raises-exception", "answer:4.2"]
@njit(parallel=True)
def parallel_matmul(A, B):
    """C (m, n) = A (m, k) @ B (k, n), rows of C spread over threads with prange."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 4.2: replace this line with your code")
    return C

# %% tags=["raises-exception"]
tiling_simd_checks.check_parallel_matmul(parallel_matmul)

# %% [markdown]
# ## How fast are they? (not graded)
#
# Time your kernels against the course's and numpy's, with 1 thread and with all threads
# (`backend.set_threads` sets numba's and BLAS's threads together). On a shared or busy machine
# the speedup from threads can be small -- that is why the check above looks at the compiled code
# rather than at a stopwatch.

# %% tags=["nbval-ignore-output"]
n = timing.scaled(512, 128)
rng = np.random.default_rng(0)
A = rng.standard_normal((n, n)).astype(np.float32)
B = rng.standard_normal((n, n)).astype(np.float32)
flops = timing.gemm_flops(n, n, n)
for threads in sorted({1, backend.max_threads()}):
    backend.set_threads(threads)
    runs = {
        "tiled_matmul (yours)": lambda: tiled_matmul(A, B, 64),
        "parallel_matmul (yours)": lambda: parallel_matmul(A, B),
        "matmul.matmul_parallel_tiled": lambda: matmul.matmul_parallel_tiled(A, B),
        "numpy": lambda: A @ B,
    }
    try:
        cmp = timing.compare(repeat=3, warmup=1, **runs)
    except NotImplementedError:
        print("solve the exercises first")
        break
    for name in runs:
        print(f"{threads} thread(s)  {name:<30} {flops / cmp.timings[name].min / 1e9:7.1f} GFLOP/s")
    if not cmp.noise.ok:
        print(cmp.noise.warning())
print("back to", backend.set_threads(backend.max_threads()), "thread(s)")

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
