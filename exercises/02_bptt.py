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
# > This file was generated from `solutions/02_bptt.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 02 · Backpropagation through time
#
# Write both backward passes of chapter 02 and measure their complexity. Each function gets
# `params` (fields `Wxh (nx, nh)`, `Whh (nh, nh)`, `Why (nh, ny)`), `X (T, B, nx)`, `Y (T, B, ny)`
# and `h0 (B, nh)`, and returns an `rnn.RNNParams(Wxh=dWxh, Whh=dWhh, Why=dWhy)` of the gradients
# of $E = \sum_t\sum(\hat y_t - y_t)^2$.
#
# You may use `rnn.forward(params, X, h0)` (it returns a cache with `H (T, B, nh)`, the states
# after each step, `Yhat (T, B, ny)`, and `H_prev`, the state each step started from:
# `[h0, H[0], ..., H[T-2]]`). A wrong answer is reported with the gradient that is off and the
# first time step where it goes wrong.

# %% [markdown] tags=["chapter-header"]
# **Chapter 02 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Derive BPTT as one reverse sweep, $O(T)$, from the WildML double loop, $O(T^2)$.
# 2. Check that both give the exact gradient against numerical differentiation, and why truncating the double loop does not.
# 3. Measure time against $T$ on log-log axes and read the slopes (2 and 1) and where they hold.
# 4. Write the weight gradients as sums over time and batch, one GEMM each.
#
# * **Before this chapter:** [01 · serial RNN](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/01_serial_rnn.ipynb)
# * **Study time:** about 60 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 3 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** One sequence at a time: chapter 03 batches sequences into matrix-matrix products.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/02_bptt.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/02_bptt.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/02_bptt.ipynb)

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
import time

import numpy as np

from course_lib.models import rnn
from course_lib.teaching.checks import bptt as bptt_checks

# %% [markdown]
# ## Exercise 2.1 · BPTT in one reverse sweep, O(T)
#
# Going from $t = T-1$ down to 0:
# $\delta^o_t = 2(\hat y_t - y_t)(1-\hat y_t^2)$; $dh = \delta^o_t W_{hy}^\top + dh_{next}$;
# $\delta_t = dh\,(1-h_t^2)$; add $h_t^\top\delta^o_t$ to `dWhy`, $x_t^\top\delta_t$ to `dWxh`,
# $h_{t-1}^\top\delta_t$ to `dWhh`; then $dh_{next} = \delta_t W_{hh}^\top$.
#
# Besides the gradients, the check counts the matrix products with `Whh` your function takes at
# T = 4, 8 and 12: one sweep takes a fixed number per step (forward and back), so the count grows
# like T.

# %% tags=["solution", "raises-exception", "answer:2.1"]
def bptt_linear(params, X, Y, h0=None):
    """Gradients of E by one reverse sweep."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 2.1: replace this line with your code")

# %% tags=["raises-exception"]
bptt_checks.check_bptt_linear(bptt_linear)

# %% [markdown]
# ## Exercise 2.2 · The WildML double loop, O(T²)
#
# For every output step $t$ (from $T-1$ down to 0): add $h_t^\top\delta^o_t$ to `dWhy`, start
# $\delta = (\delta^o_t W_{hy}^\top)(1-h_t^2)$, then for $s = t, t-1, \dots$ down to
# $\max(0, t - \text{truncate})$ (down to 0 when `truncate` is None): add $h_{s-1}^\top\delta$ to
# `dWhh` and $x_s^\top\delta$ to `dWxh`, then push back: $\delta \leftarrow (\delta W_{hh}^\top)(1-h_{s-1}^2)$.
#
# The check compares the gradients (untruncated and with `truncate` = 0, 1, 2), then counts the
# matrix products with `Whh` your function takes at T = 4, 8 and 12: the walks take T(T+1)/2 of them,
# so the count must grow like T² -- the sweep of 2.1 gets the same numbers and is rejected.

# %% tags=["solution", "raises-exception", "answer:2.2"]
def bptt_quadratic(params, X, Y, h0=None, truncate=None):
    """Gradients of E by walking every output step's error back towards step 0."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 2.2: replace this line with your code")

# %% tags=["raises-exception"]
bptt_checks.check_bptt_quadratic(bptt_quadratic)

# %% [markdown]
# ## Exercise 2.3 · Measure the complexity
#
# Write `time_bptt(bptt, params, X, Y, Ts)`: for each `T` in `Ts`, the time in **seconds** of one
# call `bptt(params, X[:T], Y[:T])`: the best (the shortest) of 3 calls, to reduce noise. Return a
# list, one time per `T`. The check times the course's two BPTT functions with your function and
# fits the slope of log(time) against log(T): it must be close to 1 for the sweep and close to 2 for
# the double loop. Then it hands your function a stand-in for `bptt` whose calls take known,
# different times, so a total or a mean of the 3 calls is told from their best. Write the loop
# yourself: the course's `timing.measure` is rejected here.
#
# Which clock? `time.perf_counter()` is wall-clock time: on a busy machine a long call gets
# interrupted by other programs and looks slower than it is. `time.process_time()` counts only the
# CPU time of this process, so it measures the *work* -- the better choice for a complexity fit
# on a shared computer.

# %% tags=["solution", "raises-exception", "answer:2.3"]
def time_bptt(bptt, params, X, Y, Ts):
    """Best-of-3 seconds of bptt(params, X[:T], Y[:T]) for each T in Ts."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 2.3: replace this line with your code")

# %% tags=["raises-exception"]
bptt_checks.check_complexity(time_bptt)

# %% [markdown]
# ## What the slopes look like
#
# The same measurement with the library's timing helper, plotted (times vary from run to run):

# %% tags=["nbval-ignore-output"]
import matplotlib.pyplot as plt

from course_lib.teaching import plots
from course_lib.core import timing

params = rnn.init_params(16, 16, 16, seed=0)
rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, (96, 4, 16)).astype(np.float32)
Y = rng.uniform(-1, 1, (96, 4, 16)).astype(np.float32)
Ts = [12, 24, 48, 96]
lin = [timing.measure(rnn.bptt_linear, params, X[:T], Y[:T], repeat=3).min for T in Ts]
quad = [timing.measure(rnn.bptt_quadratic, params, X[:T], Y[:T], repeat=3).min for T in Ts]
ax = plots.loglog_plot(Ts, {"bptt_linear": lin, "bptt_quadratic": quad}, xlabel="T", ylabel="seconds")
ax.set_title("BPTT time vs T, measured now")
plt.show()

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
