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
# > This file was generated from `solutions/03_batching.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 03 · Batching
#
# Two exercises: a forward pass that moves a whole batch of sequences through the RNN with
# matrix-matrix products, and the arithmetic intensity of one recurrent step -- the number that
# says why batching pays. Write each function, run its cell, then run the check below it.

# %% [markdown] tags=["chapter-header"]
# **Chapter 03 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Write a batched forward pass and check it gives the numbers of one sequence at a time.
# 2. Compute the arithmetic intensity of one recurrent step, as a matrix-vector and as a batched product.
# 3. Place measured products on a roofline drawn with the bandwidth of the memory the weights come from.
# 4. Find, on this machine, the batch size past which bigger batches stop helping per sequence.
#
# * **Before this chapter:** [01 · serial RNN](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/01_serial_rnn.ipynb), [02 · BPTT](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/02_bptt.ipynb)
# * **Study time:** about 60 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 3 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** BLAS's GEMM is a black box here: chapter 04 climbs to it from a triple loop.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/03_batching.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/03_batching.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/03_batching.ipynb)

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

from course_lib.experiments import batching as batching_exp
from course_lib.models import rnn
from course_lib.core import timing
from course_lib.teaching.checks import batching as batching_checks

# %% [markdown]
# ## Exercise 3.1 · A batched forward pass
#
# `params` holds `Wxh (nx, nh)`, `Whh (nh, nh)`, `Why (nh, ny)`; `X` has shape `(T, B, nx)`:
# T time steps of B sequences. Return `(H, Yhat)` with `H (T, B, nh)` and `Yhat (T, B, ny)`:
#
# $$h_t = \tanh(x_t W_{xh} + h_{t-1} W_{hh}), \qquad \hat y_t = \tanh(h_t W_{hy})$$
#
# where every $x_t$, $h_t$ is a `(B, ·)` block -- all sequences at once, one GEMM per product --
# and $h_{-1}$ is `h0` (zeros of shape `(B, nh)` when `h0` is None). Bonus: compute
# $x_t W_{xh}$ for all time steps with a single GEMM before the loop (reshape `X` to `(T*B, nx)`).
# Leave `params`, `X` and `h0` as they were (no writing into them).
#
# This is a speed exercise. After the numbers, the check counts the matrix products your function
# makes with the weights -- they must not grow with the batch size B -- and then times it against
# the course's one-sequence-at-a-time loop (`batching_exp.forward_one_at_a_time`) in the same run: it
# must be at least three times as fast.

# %% tags=["solution", "raises-exception", "answer:3.1"]
def batched_forward(params, X, h0=None):
    """X (T, B, nx) -> (H (T, B, nh), Yhat (T, B, ny))."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 3.1: replace this line with your code")

# %% tags=["nbval-ignore-output", "raises-exception"]
batching_checks.check_batched_forward(batched_forward)

# %% [markdown]
# ## Exercise 3.2 · Arithmetic intensity of one recurrent step
#
# One step $x_t W_{xh} + h_{t-1} W_{hh}$ for B sequences does $2B(n_x + n_h)n_h$ FLOPs. It must
# read `Wxh`, `Whh`, `x_t (B, nx)` and `h_{t-1} (B, nh)` and write `h_t (B, nh)`, each once, at
# `itemsize` bytes per number. Return FLOPs per byte.

# %% tags=["solution", "raises-exception", "answer:3.2"]
def rnn_step_intensity(batch, nx, nh, itemsize=4):
    """FLOP per byte of one recurrent step for B sequences."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 3.2: replace this line with your code")

# %% tags=["raises-exception"]
batching_checks.check_step_intensity(rnn_step_intensity)

# %% [markdown]
# ## Put it to use
#
# (This cell uses the course's `batching_exp.rnn_step_intensity`, so it runs before you solve 3.2.)
# From which batch size is one recurrent step at width 1000 compute-bound on this machine --
# that is, above the roofline's ridge point?

# %% tags=["nbval-ignore-output"]
ridge = timing.peak_gflops() / timing.copy_bandwidth()
B_cross = next(B for B in range(1, 100_000) if batching_exp.rnn_step_intensity(B, 1000, 1000) >= ridge)
print(f"ridge point {ridge:.1f} FLOP/byte: batches of B >= {B_cross} make the step compute-bound here")

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
