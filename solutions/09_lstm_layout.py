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
# # Worksheet 09 · A fused LSTM step, the transposed layout, a small autotuner
#
# Parameters are in PyTorch's layout: `W_ih (4H, nx)`, `W_hh (4H, H)`, `b_ih, b_hh (4H,)`, the
# four gate blocks stacked in the order **i, f, g, o** (see `course_lib/models/lstm.py`). When a check
# fails it tells you which gate differs first.

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
# Return `(h_new, c_new, gates)` with `gates (B, 4H)` the *activated* `[i | f | g | o]`.

# %%
def fused_step(x, h, c, params):
    """One LSTM step in PyTorch's layout -> (h_new (B, H), c_new (B, H), gates (B, 4H))."""
    ### BEGIN SOLUTION
    H = h.shape[1]
    z = x @ params.W_ih.T + h @ params.W_hh.T + params.b_ih + params.b_hh
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    i, f, g, o = sig(z[:, :H]), sig(z[:, H:2 * H]), np.tanh(z[:, 2 * H:3 * H]), sig(z[:, 3 * H:])
    c_new = f * c + i * g
    h_new = o * np.tanh(c_new)
    return h_new, c_new, np.concatenate([i, f, g, o], axis=1)
    ### END SOLUTION

# %%
lstm_layout_checks.check_fused_step(fused_step)

# %% [markdown]
# ## Exercise 9.2 · The transposed layout, $Z^T = W_{hh} h^T$
#
# EcoRNN's observation 2: keep the state transposed, `hT, cT (H, B)`, so the recurrent product
# is `W_hh @ hT` — `(4H, H) @ (H, B)` — with no transpose of the weights. The input projection
# of the step is already done: `preT (4H, B)` $= W_{ih} x^T + b_{ih} + b_{hh}$ (one column per
# sample). Write `step_transposed(preT, hT, cT, W_hh)` returning `(hT_new, cT_new, gatesT)` with
# `gatesT (4H, B)`: the gates are now blocks of **rows**.

# %%
def step_transposed(preT, hT, cT, W_hh):
    """One LSTM step with the state stored as (H, B) -> (hT_new, cT_new, gatesT (4H, B))."""
    ### BEGIN SOLUTION
    H = hT.shape[0]
    zT = W_hh @ hT + preT
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    i, f, g, o = sig(zT[:H]), sig(zT[H:2 * H]), np.tanh(zT[2 * H:3 * H]), sig(zT[3 * H:])
    cT_new = f * cT + i * g
    return o * np.tanh(cT_new), cT_new, np.concatenate([i, f, g, o], axis=0)
    ### END SOLUTION

# %%
lstm_layout_checks.check_step_transposed(step_transposed)

# %% [markdown]
# ## Exercise 9.3 · A small autotuner
#
# Write `pick_fastest(candidates, repeat=3)`: `candidates` maps a name to a function of no
# arguments. Call each once to warm up, then time `repeat` calls of each with
# `time.perf_counter()`. Return `(best_name, table_ms)` where `table_ms[name]` is the median
# time of one call **in milliseconds** and `best_name` the fastest.

# %%
def pick_fastest(candidates, repeat=3):
    """-> (name of the fastest candidate, {name: median milliseconds per call})."""
    ### BEGIN SOLUTION
    table_ms = {}
    for name, fn in candidates.items():
        fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        table_ms[name] = float(np.median(times)) * 1e3
    return min(table_ms, key=table_ms.get), table_ms
    ### END SOLUTION

# %%
lstm_layout_checks.check_pick_fastest(pick_fastest)

# %% [markdown]
# ## Exercise 9.4 · Never measure twice
#
# "Optimising once and for all": write `cached_pick(cache, key, candidates)`. If `key` is in the
# dict `cache`, return the stored name **without running anything**; otherwise measure with your
# `pick_fastest`, store the winner under `key` and return it. (`course_lib.experiments.autotune` does the
# same with a JSON file keyed by shape and machine.)

# %%
def cached_pick(cache, key, candidates):
    """The fastest candidate's name for ``key``, measured at most once per key."""
    ### BEGIN SOLUTION
    if key not in cache:
        cache[key] = pick_fastest(candidates)[0]
    return cache[key]
    ### END SOLUTION

# %%
lstm_layout_checks.check_cached_pick(cached_pick)

# %% [markdown]
# ## Where this goes
#
# Give `cached_pick` the candidates `{m: lambda m=m: lstm.lstm_forward(params, X, method=m) for m
# in lstm.METHODS}` and a key built from `(B, H, nx, T, dtype, threads)`, keep the dict in a JSON
# file next to the machine's name, and you have `course_lib.experiments.autotune` — what
# `autotune.best_method(...)` answers and `autotune.lstm_forward_tuned(params, X)` runs.
