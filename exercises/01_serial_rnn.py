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
# > This file was generated from `solutions/01_serial_rnn.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 01 · The serial RNN
#
# You will write the pieces of the seed's RNN yourself: one time step, the whole forward pass,
# the loss and a numerical gradient. Row vectors and time-major arrays throughout:
# `X (T, B, nx)`, `h (B, nh)`, `Wxh (nx, nh)`, `Whh (nh, nh)`, `Why (nh, ny)`.
# Each check compares your function with `course_lib.models.rnn` on several seeded cases.

# %% [markdown] tags=["chapter-header"]
# **Chapter 01 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Write the RNN's forward step, forward pass and loss: three matrix products and two `tanh`s per step.
# 2. Train a small RNN on the seed's image-rotation task and judge it against copying the input.
# 3. Check hand-written gradients with central differences in float64, and find the time step where a wrong one goes wrong.
# 4. Tell the one truly sequential product ($h_{t-1} W_{hh}$) from the ones that can be batched over time.
#
# * **Before this chapter:** [00 · setup](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/00_setup.ipynb)
# * **Study time:** about 60 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 1 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** The gradients come from a ready-made backward pass: chapter 02 derives BPTT and its cost.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/01_serial_rnn.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/01_serial_rnn.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/01_serial_rnn.ipynb)

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

from course_lib.models import rnn
from course_lib.teaching.checks import serial_rnn as serial_rnn_checks

# %% [markdown]
# ## Exercise 1.1 · One forward step
#
# $h_t = \tanh(x_t W_{xh} + h_{t-1} W_{hh})$ for a batch: `x_t (B, nx)`, `h_prev (B, nh)` -> `(B, nh)`.

# %% tags=["solution", "raises-exception", "answer:1.1"]
def forward_step(x_t, h_prev, Wxh, Whh):
    """One RNN step for a batch of row vectors."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 1.1: replace this line with your code")

# %% tags=["raises-exception"]
serial_rnn_checks.check_forward_step(forward_step)

# %% [markdown]
# ## Exercise 1.2 · The forward pass
#
# Run the RNN over a whole sequence, starting from `h0 (B, nh)`. Return `H (T, B, nh)` with
# `H[t]` the state *after* reading `X[t]`, and `Yhat (T, B, ny)` with `Yhat[t] = tanh(H[t] @ Why)`.
# `params` has the fields `Wxh`, `Whh`, `Why`.

# %% tags=["solution", "raises-exception", "answer:1.2"]
def forward(params, X, h0):
    """(H, Yhat) of the RNN over X (T, B, nx)."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 1.2: replace this line with your code")

# %% tags=["raises-exception"]
serial_rnn_checks.check_forward(forward)

# %% [markdown]
# ## Exercise 1.3 · The loss
#
# The seed's loss is a **sum** of squared errors over time steps, sequences and outputs:
# $E = \sum_t \sum (\hat y_t - y_t)^2$. Return one Python float.

# %% tags=["solution", "raises-exception", "answer:1.3"]
def loss(Yhat, Y):
    """Sum of squared errors."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 1.3: replace this line with your code")

# %% tags=["raises-exception"]
serial_rnn_checks.check_loss(loss)

# %% [markdown]
# ## Exercise 1.4 · A numerical gradient
#
# Central differences: for every entry $W_i$, evaluate `f` at $W_i + \varepsilon$ and at
# $W_i - \varepsilon$, and divide the difference by $2\varepsilon$. Change `W` in place one entry
# at a time (so that a function closing over `W` sees the change) and **put each entry back**
# afterwards. `W` is float64. Return an array of the shape of `W`. Besides the numbers, the check tries
# a function that reads `W` through a closure (a perturbed copy gives it a zero gradient) and two values
# of `eps` (a central difference's error shrinks 4x when `eps` halves; an `eps` ignored is named).

# %% tags=["solution", "raises-exception", "answer:1.4"]
def numerical_gradient(f, W, eps=1e-6):
    """d f / d W by central differences."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 1.4: replace this line with your code")

# %% tags=["raises-exception"]
serial_rnn_checks.check_numerical_gradient(numerical_gradient)

# %% [markdown]
# ## Putting it together
#
# With the library's versions (so this runs before you have solved anything): the gradient of the
# loss with respect to `Whh`, numerically and from backpropagation (chapter 02), on a small float64
# problem. They agree to about 1e-9.

# %%
from course_lib.models import gradcheck

p = rnn.init_params(3, 4, 2, seed=0, dtype=np.float64)
rng = np.random.default_rng(0)
X, Y = rng.uniform(-1, 1, (5, 2, 3)), rng.uniform(-1, 1, (5, 2, 2))
num = gradcheck.numerical_gradient(lambda W: rnn.loss(rnn.forward(rnn.RNNParams(p.Wxh, W, p.Why), X).Yhat, Y), p.Whh.copy())
print("numerical and backprop dWhh agree to 1e-7:", gradcheck.relative_error(num, rnn.bptt_linear(p, X, Y).Whh) < 1e-7)

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
