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
# > This file was generated from `solutions/05_threads_fusion.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 05 · Fused element-wise kernels
#
# Besides its GEMMs, a training step does element-wise work on every one of its $T \cdot B \cdot n$
# hidden and output values. Written as numpy expressions, each operation is a separate pass over
# memory. Here you write the two element-wise pieces of the backward pass as **fused** numba
# kernels: one loop, each number loaded once and stored once.

# %% [markdown] tags=["chapter-header"]
# **Chapter 05 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Write a training step's non-recurrent work (input projection, outputs, weight gradients) as one GEMM over all time steps.
# 2. Fuse the backward pass's element-wise work into parallel numba kernels, and check that they vectorise.
# 3. Measure thread scaling per workload and decide where threads pay.
# 4. Compare JIT with a cached compile and explain the call overhead of small steps (seed Fig. 7).
#
# * **Before this chapter:** [02 · BPTT](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/02_bptt.ipynb), [04 · tiling & SIMD](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/04_tiling_simd.ipynb)
# * **Study time:** about 90 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 5 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** Schedules are written by hand in numba: chapter 06 separates algorithm and schedule with Halide.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/05_threads_fusion.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/05_threads_fusion.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/05_threads_fusion.ipynb)

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

import course_lib  # first: it decides the CUDA backend before numba is imported
from numba import njit, prange

from course_lib.core import backend, timing
from course_lib.teaching.checks import threads_fusion as threads_fusion_checks

# %% [markdown]
# ## Exercise 5.1 · The hidden delta, fused and parallel
#
# Going backwards through step $t$, the gradient arriving at $h_t$ is the output's share `dz`
# plus the future's share `r` ($= \Delta z_{t+1} W_{hh}^T$); through $h_t = \tanh(\cdot)$ it
# becomes
#
# $$\Delta z_t = (dz + r) \odot (1 - h_t^2).$$
#
# Write `fused_hidden_delta(dz, r, h)` for 2-D arrays of the same shape `(B, n)`, returning a new
# array, as a numba function compiled with `parallel=True` whose outer loop is a `prange` over
# rows and whose inner loop does the whole formula for one element. The check verifies the values
# (and that `dz`, `r`, `h` are left as they were), that numba really parallelised a loop, that the
# `prange` is the outer loop, and then the point of fusion: on one thread your kernel must be at
# least 1.3 times as fast as the same formula written as numpy expressions, measured alongside on fresh
# inputs (every timed result is checked too).

# %% tags=["solution", "raises-exception", "answer:5.1"]
@njit(parallel=True, fastmath=True)
def fused_hidden_delta(dz, r, h):
    """(dz + r) * (1 - h**2), one pass, rows split across threads. All (B, n) -> (B, n)."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 5.1: replace this line with your code")

# %% tags=["nbval-ignore-output", "raises-exception"]
threads_fusion_checks.check_fused_hidden_delta(fused_hidden_delta)

# %% [markdown]
# ## Exercise 5.2 · Output, loss and output delta in one pass
#
# From the output pre-activations `z (N, ny)` and the targets `y (N, ny)`: $\hat y = \tanh(z)$,
# the loss $E = \sum (\hat y - y)^2$ and the output delta $2(\hat y - y)(1 - \hat y^2)$. The
# separate-pass version reads and writes the arrays six or seven times. Write
# `output_delta_and_loss(z, y)` returning `(delta, loss)` with a single loop over the elements
# (a numba function -- the check reads its source and rejects numpy expressions on whole arrays, even
# inside `@njit`, and a loss summed after the loop, a second pass; `math.tanh` or `np.tanh` on a scalar
# both work inside it).

# %% tags=["solution", "raises-exception", "answer:5.2"]
@njit(fastmath=True)
def output_delta_and_loss(z, y):
    """z, y (N, ny) -> (2 (tanh z - y)(1 - tanh² z), sum (tanh z - y)²)."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 5.2: replace this line with your code")

# %% tags=["raises-exception"]
threads_fusion_checks.check_output_delta_and_loss(output_delta_and_loss)

# %% [markdown]
# ## How much does fusion save?
#
# (Course code, so this runs before you solve anything.) `profile_exp.fusion_comparison` times the
# same element-wise work as separate numpy passes and as the course's fused kernels.

# %% tags=["nbval-ignore-output"]
from course_lib.experiments import profile as profile_exp
from course_lib.teaching.verdict import verdict

fus = profile_exp.fusion_comparison(batch=timing.scaled(256, 64), n=256, T=10)
print(f"separate passes {fus['separate_s'] * 1e3:.2f} ms, fused (1 thread) {fus['fused_1thread_s'] * 1e3:.2f} ms: "
      f"{fus['fusion_speedup']:.2f}x; fused on {backend.get_threads()} thread(s): {fus['total_speedup']:.2f}x")
print(verdict("000.halide.s49.loop_fusion", fus["fusion_speedup"], here="1 thread, numpy passes vs fused numba",
              noise=fus["noise"], cores_used=fus["threads"]))

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
