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
# > This file was generated from `solutions/00_setup.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 00 · How worksheets work
#
# Each worksheet has exercises: a function with its body missing, followed by a **check cell**.
# Write the body, run the function's cell, then run the check. A check compares your function
# with the course's reference on several seeded cases; it either prints one line
# (`Exercise 0.1 passed: 6/6 cases`) or tells you exactly what is wrong.

# %% [markdown] tags=["chapter-header"]
# **Chapter 00 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Read this machine's report (cores, SIMD width, caches, BLAS, CUDA or its simulator, MPI) and say which chapter each fact matters for.
# 2. Count the FLOPs and bytes of a matrix product and compute its arithmetic intensity.
# 3. Read from a cache-residency sweep at what speed this machine reads data of a given size.
# 4. Run a worksheet's check cell and act on its message.
#
# * **Before this chapter:** nothing
# * **Study time:** about 45 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 2 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** No RNN yet: chapter 01 builds one and trains it.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/00_setup.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/00_setup.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/00_setup.ipynb)

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

from course_lib.core import timing
from course_lib.teaching.checks import setup as setup_checks

# %% [markdown]
# ## Exercise 0.1 · Arithmetic intensity of a matrix product
#
# Write `gemm_intensity(m, n, k, itemsize=4)`: the FLOPs of $C_{m\times n} = A_{m\times k} B_{k\times n}$
# (one multiply and one add per term) divided by the bytes of $A$, $B$ and $C$, each moved once,
# with `itemsize` bytes per number.

# %% tags=["solution", "raises-exception", "answer:0.1"]
def gemm_intensity(m, n, k, itemsize=4):
    """FLOP per byte of an (m, k) @ (k, n) product."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 0.1: replace this line with your code")

# %% tags=["raises-exception"]
setup_checks.check_intensity(gemm_intensity)

# %% [markdown]
# Now put it to use (with the course's own `timing.gemm_intensity`, so this cell runs even before
# you solve the exercise): at which square size $n$ does a float32 GEMM cross this machine's ridge
# point (peak / bandwidth)? Below it, the roofline says the product is bandwidth-bound.

# %% tags=["nbval-ignore-output"]
ridge = timing.peak_gflops() / timing.copy_bandwidth()
n_cross = next(n for n in range(1, 10_000) if timing.gemm_intensity(n, n, n) >= ridge)
print(f"ridge point {ridge:.1f} FLOP/byte -> square GEMMs are compute-bound from n = {n_cross} on this machine")

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
