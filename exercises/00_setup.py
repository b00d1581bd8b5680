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

# %% [markdown]
# # Worksheet 00 · How worksheets work
#
# Each worksheet has exercises: a function with its body missing, followed by a **check cell**.
# Write the body, run the function's cell, then run the check. A check compares your function
# with the course's reference on several seeded cases; it either prints one line
# (`Exercise 0.1 passed: 6/6 cases`) or tells you exactly what is wrong.

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

# %% tags=["solution", "raises-exception"]
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
