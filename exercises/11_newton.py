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
# > This file was generated from `solutions/11_newton.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 11 · Newton in time by hand
#
# You will build DEER's pieces: the combine of two affine maps (the scan's operator), one Newton step
# as a scan, the GRU's Jacobian, minGRU's log-space scan, and a quasi-DEER step that must beat full Newton in
# time. Conventions as in
# `course_lib.algorithms.newton`: `H` is the state array `(T, B, nh)` (`nh` the hidden size), `H[t]` the state
# after input `X[t]`, `h0` `(B, nh)`;
# Jacobians use column convention, `J[..., i, j] = d h_t[i] / d h_{t-1}[j]`. The checks name the
# iteration, the time step, the gate and the entry where your answer first differs. Exercises 11.6 and
# 11.7 take the chapter's fixed-point family further: Picard as a parallel prefix sum, and K\* predicted
# from the Lyapunov exponent.

# %% [markdown] tags=["chapter-header"]
# **Chapter 11 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Write one Newton step over the sequence (DEER) as a scan, with the $(A, b)$ combine and the GRU's Jacobian.
# 2. Relate Newton's iteration count to $T$ and to the Lyapunov exponent, and predict $K^*$ from it.
# 3. Write quasi-DEER as one element-wise scan and Picard as a prefix sum; weigh them against full Newton's $O(n_h^3)$ per step.
# 4. Compute minGRU's log-space scan and see it drift in float32.
#
# * **Before this chapter:** [08 · linear recurrences](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/08_scan.ipynb), [10 · MGRIT](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/10_mgrit.ipynb)
# * **Study time:** about 120 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 2 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** No rule yet for choosing among the methods: chapter 12 prices them all with one cost model.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/11_newton.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/11_newton.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/11_newton.ipynb)

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
import math

import numpy as np

from course_lib.algorithms import matrix_scan, scan
from course_lib.models import jacobians
from course_lib.teaching.checks import newton as newton_checks
from course_lib.teaching.checks import newton_family as newton_family_checks

# %% [markdown]
# ## Exercise 11.1 · The (A, b) combine
#
# `p = (A1, b1)` is the map `h -> A1 h + b1`. Return the pair for "first p, then q". `A` may carry
# leading batch axes `(..., nh, nh)` and `b` `(..., nh)`.

# %% tags=["solution", "raises-exception", "answer:11.1"]
def combine(p, q):
    A1, b1 = p
    A2, b2 = q
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 11.1: replace this line with your code")


# %% tags=["raises-exception"]
newton_checks.check_combine(combine)

# %% [markdown]
# ## Exercise 11.2 · One Newton step is a scan
#
# Given the guess `H`, form `H_prev = (h0, H[0], ..., H[T-2])`, the residual `r = H - f(H_prev, X)` and
# the Jacobians `J = jac(H_prev, X)` `(T, B, nh, nh)`; solve `delta_t = J_t delta_{t-1} - r_t` (`delta_{-1} = 0`)
# with `matrix_scan.linear_recurrence(J, -r)` and return `H + delta`.

# %% tags=["solution", "raises-exception", "answer:11.2"]
def newton_step(f, jac, h0, X, H):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 11.2: replace this line with your code")


# %% tags=["raises-exception"]
newton_checks.check_newton_step(newton_step)

# %% [markdown]
# ## Exercise 11.3 · The GRU's Jacobian
#
# For the classic cell of `models.gru` (PyTorch layout, gates r, z, n; `gh = h W_hh^T + b_hh`) with
# input projection `gi` `(B, 3 nh)` and state `h` `(B, nh)`, return `J` `(B, nh, nh)`. With
# `W_r, W_z, W_n` the row blocks of `W_hh`:
# `dr = r(1-r) W_r`, `dz = z(1-z) W_z`, `dn = (1-n^2)(dr * gh_n + r W_n)` (row-wise), and
# `J = diag(z) + (1 - z) dn + (h - n) dz`. `jacobians.gru_gates(params, h, gi)` gives `r, z, n, gh`.

# %% tags=["solution", "raises-exception", "answer:11.3"]
def gru_jacobian(params, h, gi):
    r, z, n, gh = jacobians.gru_gates(params, h, gi)
    nh = h.shape[-1]
    W = params.W_hh
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 11.3: replace this line with your code")


# %% tags=["raises-exception"]
newton_checks.check_gru_jacobian(gru_jacobian)

# %% [markdown]
# ## Exercise 11.4 · minGRU's log-space scan
#
# `h_t = a_t h_{t-1} + b_t` with `h_{-1} = 0` and positive `a, b` given as logs. With
# `a*_t = cumsum(log a)`: `h_t = exp(a*_t + logcumsumexp_{s<=t}(log b_s - a*_s))`.
# `np.logaddexp.accumulate(x, axis=0)` is logcumsumexp.
#
# **Predict:** the same sum in linear space is `exp(a*) * cumsum(b / exp(a*))`. What does it give
# once the gates have decayed so far that `a*_t` is below about -745, where `exp` of a float64 is 0?
# The check compares your scan with a float64 loop on short sequences (T = 5 ... 200) and on two long
# ones (T = 2000 and 6000) whose `a*` sinks to about -900; a form that exponentiates `a*` on its own is
# rejected there, with the time step where it breaks.

# %% tags=["solution", "raises-exception", "answer:11.4"]
def log_space_scan(log_a, log_b):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 11.4: replace this line with your code")


# %% tags=["raises-exception"]
newton_checks.check_log_space_scan(log_space_scan)

# %% [markdown]
# ## Exercise 11.5 · Quasi-DEER as one element-wise scan (a speed exercise)
#
# Full Newton (your 11.2 step) scans `(nh, nh)` Jacobians: O(T·nh³) work and O(T·nh²) memory. Quasi-DEER
# keeps only their diagonals `d_t = diag(J_t)`, and the scan becomes element-wise,
# `delta_t = d_t * delta_{t-1} - r_t` -- O(T·nh) work and memory, the linear recurrence of chapter 08.
# Write `quasi_step(f, jac_diag, h0, X, H)`, where `jac_diag(H_prev, X)` returns the diagonals
# `(T, B, nh)`: form `H_prev` and `r` as in 11.2, scan with `scan.linear_recurrence(d, -r)`
# (`course_lib.algorithms.scan`, element-wise over `(T, B, nh)`) and return `H + delta`.
#
# The check compares three iterations with the course's quasi step, counts the memory your step
# needs in bytes per state element (full matrices need `8 nh`), and times it against one full Newton
# step at `nh = 48` in the same run: at least `newton_checks.MIN_SPEEDUP` times faster on your machine.

# %% tags=["solution", "raises-exception", "answer:11.5"]
def quasi_step(f, jac_diag, h0, X, H):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 11.5: replace this line with your code")


# %% tags=["raises-exception"]
newton_checks.check_quasi_step(quasi_step)


# %% [markdown]
# ## Exercise 11.6 · Picard is a prefix sum
#
# The chapter's one iteration is $h^{(i+1)}_t = f(h^{(i)}_{t-1}, x_t) + A_t\,(h^{(i+1)}_{t-1} - h^{(i)}_{t-1})$.
# With $A_t = I$ (Picard) the new state at $t$ is the new state at $t-1$ plus a term that uses only the
# *old* iterate. Unroll it down to the fixed $h_0$ (both iterates start there):
#
# $$h^{(i+1)}_t = h_0 + \sum_{s \le t} \big(f(h^{(i)}_{s-1}, x_s) - h^{(i)}_{s-1}\big)$$
#
# -- $f$ at every step at once (parallel over $t$), then one **prefix sum**. With the worksheet's arrays:
# `H_prev = (h0, H[0], ..., H[T-2])`, `D = f(H_prev, X) - H_prev`, `H_new = h0 + prefix_sum(D)`.
#
# **Predict:** `np.cumsum` computes the right numbers. How long is its chain of dependent additions for
# $T$ steps? And for a prefix sum that adds `S[k:] += S[:-k]` for $k = 1, 2, 4, \dots$?
#
# Write `picard_step(f, h0, X, H)` returning `H_new` `(T, B, nh)`, without changing `H`. **Measure:** the
# check compares it with the course's loop (`newton.newton_step(..., method="picard")`, four cells,
# float64), then runs it on *traced* numbers (the tracer of exercise 8.5) at $T = 64$ and $T = 1024$ and
# counts the longest chain of dependent operations -- the span. **Verdict:** it passes only if the span
# grows like $\log T$: a loop over $t$ and `np.cumsum` (numpy adds one term after another) are
# rejected as a sequential span. The prefix sum is yours to write: calling the course's Picard step
# (`newton.newton_step`) or its scans (`scan.hillis_steele`, `scan.blelloch`, `scan.linear_recurrence`)
# is rejected.

# %% tags=["solution", "raises-exception", "answer:11.6"]
def picard_step(f, h0, X, H):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 11.6: replace this line with your code")


# %% tags=["raises-exception"]
newton_family_checks.check_picard_step(picard_step)

# %% [markdown]
# ## Exercise 11.7 · Predict K\* from the Lyapunov exponent
#
# Jacobi ($A_t = 0$) sets $h^{(i+1)}_t = f(h^{(i)}_{t-1}, x_t)$ for every $t$ at once. Its error
# $e^{(i)}_t = h^{(i)}_t - h^*_t$ obeys, to first order, $e^{(i+1)}_t \approx J_t\, e^{(i)}_{t-1}$: each
# iteration pushes the error one step along the sequence through one Jacobian. After $k$ iterations it has
# passed through products of $k$ Jacobians, which grow or shrink like $e^{\lambda k}$ -- $\lambda$ the
# largest Lyapunov exponent, the number the chapter measures (Gonzalez et al. tie the iteration count to
# it). And after $k$ iterations the first $k$ states are exact, so $K^* \le T$.
#
# Write `predict_kstar(lyapunov, T, tol, err0)`: the fewest Jacobi iterations after which the error,
# starting at `err0` (the largest error of the starting guess), is at most `tol` on a sequence of `T`
# steps. **Predict** first: what does your formula give for a non-negative exponent?
#
# **Measure:** the check runs Jacobi on three diagonal GRUs (contracting, weakly contracting, near-critical),
# measures each K\* against the sequential unroll, and prints your prediction beside it. **Verdict:**
# accepted within a fifth of the measured K\* (`newton_family_checks.KSTAR_REL`) or two iterations,
# whichever is larger: $\lambda$ is the
# *average* growth per step, while the error is set by the worst stretch of the sequence, so the measured
# K\* can sit a little above the prediction. A prediction that ignores the exponent is rejected, and
# so is one that does not give `T` for a non-negative exponent (the check asks for $\lambda = 0$ and
# $\lambda = 0.1$).

# %% tags=["solution", "raises-exception", "answer:11.7"]
def predict_kstar(lyapunov, T, tol, err0):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 11.7: replace this line with your code")


# %% tags=["raises-exception"]
newton_family_checks.check_predict_kstar(predict_kstar)

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
