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
# > This file was generated from `solutions/09_lstm_layout.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 09 · A fused LSTM step, the transposed layout, a small autotuner, one GEMM per step
#
# Parameters are in PyTorch's layout: `W_ih (4H, nx)`, `W_hh (4H, H)`, `b_ih, b_hh (4H,)`, the
# four gate blocks stacked in the order **i, f, g, o** (see `course_lib/models/lstm.py`). When a check
# fails it tells you which gate differs first.

# %% [markdown] tags=["chapter-header"]
# **Chapter 09 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Write one fused LSTM step and its transposed layout $Z^T = W_{hh} h^T$, checked against the reference.
# 2. Profile where an LSTM step spends its time and explain $XW^T$ against $WX^T$ with the cache model.
# 3. Build a small autotuner that times whole forward passes, once per shape, and never measures twice.
# 4. Decide, at small batches, between one GEMM per step and $B$ matrix-vector products.
#
# * **Before this chapter:** [03 · batching](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/03_batching.ipynb), [04 · tiling & SIMD](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/04_tiling_simd.ipynb), [05 · threads & fusion](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/05_threads_fusion.ipynb)
# * **Study time:** about 120 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 2 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** The time axis stays serial: chapter 10 trains a GRU parallel in time.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/09_lstm_layout.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/09_lstm_layout.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/09_lstm_layout.ipynb)

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

from course_lib.models import lstm
from course_lib.teaching.checks import lstm_layout as lstm_layout_checks

# %% [markdown]
# ## Exercise 9.1 · One fused LSTM step
#
# Write `fused_step(x, h, c, params)` for `x (B, nx)`, `h, c (B, H)`:
# compute all four gates with **one** stacked product,
# $z = x W_{ih}^T + h W_{hh}^T + b_{ih} + b_{hh}$ of shape $(B, 4H)$, then
# $i, f, o = \sigma(\cdot)$, $g = \tanh(\cdot)$ on the blocks, $c' = f c + i g$, $h' = o \tanh(c')$.
# Return `(h_new, c_new, gates)` with `gates (B, 4H)` the *activated* `[i | f | g | o]`. The check
# also counts the matrix products your step makes with the weights: two at most (a product per gate
# is rejected).

# %% tags=["solution", "raises-exception", "answer:9.1"]
def fused_step(x, h, c, params):
    """One LSTM step in PyTorch's layout -> (h_new (B, H), c_new (B, H), gates (B, 4H))."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 9.1: replace this line with your code")

# %% tags=["raises-exception"]
lstm_layout_checks.check_fused_step(fused_step)

# %% [markdown]
# ## Exercise 9.2 · The transposed layout, $Z^T = W_{hh} h^T$
#
# EcoRNN's observation 2: keep the state transposed, `hT, cT (H, B)`, so the recurrent product
# is `W_hh @ hT` — `(4H, H) @ (H, B)` — with no transpose of the weights. The input projection
# of the step is already done: `preT (4H, B)` $= W_{ih} x^T + b_{ih} + b_{hh}$ (one column per
# sample). Write `step_transposed(preT, hT, cT, W_hh)` returning `(hT_new, cT_new, gatesT)` with
# `gatesT (4H, B)`: the gates are now blocks of **rows**. The check reads the shapes of your product:
# one, with `W_hh` on the left (`(hT.T @ W_hh.T).T` is the row layout transposed back, and is rejected).

# %% tags=["solution", "raises-exception", "answer:9.2"]
def step_transposed(preT, hT, cT, W_hh):
    """One LSTM step with the state stored as (H, B) -> (hT_new, cT_new, gatesT (4H, B))."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 9.2: replace this line with your code")

# %% tags=["raises-exception"]
lstm_layout_checks.check_step_transposed(step_transposed)

# %% [markdown]
# ## Exercise 9.3 · A small autotuner
#
# Write `pick_fastest(candidates, repeat=3)`: `candidates` maps a name to a function of no
# arguments. Call each once to warm up, then time `repeat` calls of each with
# `time.perf_counter()`. Return `(best_name, table_ms)` where `table_ms[name]` is the median
# time of one call **in milliseconds** and `best_name` the fastest. The check also calls it with
# `repeat=5` and counts the calls.

# %% tags=["solution", "raises-exception", "answer:9.3"]
def pick_fastest(candidates, repeat=3):
    """-> (name of the fastest candidate, {name: median milliseconds per call})."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 9.3: replace this line with your code")

# %% tags=["raises-exception"]
lstm_layout_checks.check_pick_fastest(pick_fastest)

# %% [markdown]
# ## Exercise 9.4 · Never measure twice
#
# "Optimising once and for all": write `cached_pick(cache, key, candidates)`. If `key` is in the
# dict `cache`, return the stored name **without running anything**; otherwise measure with your
# `pick_fastest`, store the winner under `key` and return it. (`course_lib.experiments.autotune` does the
# same with a JSON file keyed by shape and machine.)

# %% tags=["solution", "raises-exception", "answer:9.4"]
def cached_pick(cache, key, candidates):
    """The fastest candidate's name for ``key``, measured at most once per key."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 9.4: replace this line with your code")

# %% tags=["raises-exception"]
lstm_layout_checks.check_cached_pick(cached_pick)

# %% [markdown]
# ## Exercise 9.5 · One GEMM per step (a speed exercise)
#
# The per-gate step (`lstm.lstm_forward(method="naive")`) makes **8** matrix products per time step:
# one per gate for `x` and one per gate for `h`. Write `forward_one_gemm(params, X, h0, c0)` for
# `X (T, B, nx)`, `h0, c0 (B, H)` returning `H (T, B, H)` (every step's `h`) with
#
# * the input projection of **all** steps as one product before the loop:
#   `pre = X W_ih^T + b_ih + b_hh`, shape `(T, B, 4H)` (reshape `X` to `(T*B, nx)`);
# * **one** product per step: `z = pre[t] + h W_hh^T`, then the gates as column blocks of `z`.
#
# The check compares your numbers with `lstm.lstm_forward`, *counts* the matrix products your
# function makes with `W_ih` and `W_hh` (exactly one per step, nothing that grows with `B`), and times
# it against the per-gate step in the same run: at least `lstm_layout_checks.MIN_SPEEDUP` times
# faster on your machine (a ratio, not a time). Leave the inputs unchanged.

# %% tags=["solution", "raises-exception", "answer:9.5"]
def forward_one_gemm(params, X, h0, c0):
    """H (T, B, H) of an LSTM layer with one matrix product per time step."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 9.5: replace this line with your code")

# %% tags=["nbval-ignore-output", "raises-exception"]
lstm_layout_checks.check_forward_one_gemm(forward_one_gemm)

# %% [markdown]
# ## Where this goes
#
# Give `cached_pick` the candidates `{m: lambda m=m: lstm.lstm_forward(params, X, method=m) for m
# in lstm.METHODS}` and a key built from `(B, H, nx, T, dtype, threads)`, keep the dict in a JSON
# file next to the machine's name, and you have `course_lib.experiments.autotune` — what
# `autotune.best_method(...)` answers and `autotune.lstm_forward_tuned(params, X)` runs.

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
