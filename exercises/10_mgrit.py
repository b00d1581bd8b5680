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
# > This file was generated from `solutions/10_mgrit.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 10 · MGRIT by hand
#
# You will build the pieces of two-level MGRIT (= Parareal with F-relaxation) for a generic time step
# `step(u, i, level) -> u`, then the implicit GRU step that makes coarse grids stable, and finally run the
# F-relaxation on threads. Conventions (as
# in `course_lib.algorithms.mgrit`): `U` has shape `(N + 1, *state)` and holds every time point, `U[0]` is the
# initial value; point `p` is a **C-point** when `p % m == 0`, otherwise an **F-point**; `level` is 0 on
# the fine grid and 1 on the coarse grid (points every `m` fine steps). Return new arrays, do not
# modify `U` in place.
#
# The checks run your functions on Dahlquist's problem and a small nonlinear one, and tell you the
# iteration and the time point where your solver first leaves the reference.

# %% [markdown] tags=["chapter-header"]
# **Chapter 10 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Read a GRU step as explicit Euler on a stiff ODE, and write the implicit GRU step that keeps coarse grids stable.
# 2. Write F-relaxation, C-relaxation and a two-level FAS cycle, verified on Dahlquist's test problem.
# 3. Run forward and backward (adjoint) through MGRIT, count its extra work, and model its speed-up against $T$ and $P$.
# 4. Train with inexact MGRIT gradients and watch their bias with a cosine monitor.
#
# * **Before this chapter:** [02 · BPTT](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/02_bptt.ipynb), [07 · parallel inference](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/07_parallel_inference.ipynb)
# * **Study time:** about 135 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 2 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** Multigrid only: chapter 11 attacks the same chain with Newton's method and scans.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/10_mgrit.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/10_mgrit.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/10_mgrit.ipynb)

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

from course_lib.models import gru
from course_lib.algorithms import mgrit
from course_lib.teaching.checks import mgrit as mgrit_checks

# %% [markdown]
# ## Exercise 10.1 · F-relaxation
#
# For every C-interval `j` (points `j*m .. j*m + m - 1`) march from its C-point through its `m - 1`
# F-points: `U[p] = step(U[p-1], p-1, 0)` for `p = j*m + 1 .. j*m + m - 1`. C-points stay as they are.
# The intervals are independent -- this is the part that runs in parallel. The check counts your calls
# of `step` at two values of `m`: `m - 1` per interval (each F-point once, from the point before it).

# %% tags=["solution", "raises-exception", "answer:10.1"]
def f_relax(step, U, m):
    """F-relaxation on the fine grid; returns a new array shaped like U."""
    U = np.array(U, dtype=float, copy=True)
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 10.1: replace this line with your code")
    return U


# %% tags=["raises-exception"]
mgrit_checks.check_f_relax(f_relax)

# %% [markdown]
# ## Exercise 10.2 · C-relaxation
#
# Update every C-point after the first from the F-point just before it: `U[j*m] = step(U[j*m-1], j*m-1, 0)`
# for `j = 1 .. N/m`. (F, C, F in a row is "FCF relaxation".) One call of `step` per interval, counted.

# %% tags=["solution", "raises-exception", "answer:10.2"]
def c_relax(step, U, m):
    """C-relaxation on the fine grid; returns a new array shaped like U."""
    U = np.array(U, dtype=float, copy=True)
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 10.2: replace this line with your code")
    return U


# %% tags=["raises-exception"]
mgrit_checks.check_c_relax(c_relax)

# %% [markdown]
# ## Exercise 10.3 · One two-level cycle (FAS)
#
# One iteration of two-level MGRIT with F-relaxation:
#
# 1. F-relax `U` (your `f_relax`, or the same loops);
# 2. residual at the C-points: `r[j] = -(U[j*m] - step(U[j*m-1], j*m-1, 0))` for `j >= 1`, `r[0] = 0`;
# 3. restrict by injection `uc = U[::m]` and build the coarse right-hand side
#    `gc[j] = uc[j] - coarse_step(uc[j-1], j-1, 1) + r[j]` (`gc[0] = uc[0]`);
# 4. coarse solve, sequentially: `v[0] = gc[0]`, `v[j] = coarse_step(v[j-1], j-1, 1) + gc[j]`;
# 5. correct the C-points `U[::m] = v` and F-relax again.
#
# The check runs your cycle 4 times in a row and compares every iterate; then it checks the Parareal
# property: after `N/m` cycles the result equals the serial solution. The `step` and `coarse_step` it
# passes are different functions that record the level they are called with: the fine grid uses
# `step(u, i, 0)`, the coarse grid `coarse_step(u, j, 1)`.

# %% tags=["solution", "raises-exception", "answer:10.3"]
def two_level_cycle(step, coarse_step, U, m):
    """One two-level MGRIT iteration (F-relaxation); returns the new iterate."""
    U = np.array(U, dtype=float, copy=True)
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 10.3: replace this line with your code")
    return U


# %% tags=["raises-exception"]
mgrit_checks.check_two_level_cycle(two_level_cycle)

# %% [markdown]
# ## Exercise 10.4 · The implicit GRU step
#
# `params` is a `gru.GRUParams` in PyTorch's layout: `params.W_ih (3H, nx)`, `params.W_hh (3H, H)`,
# `params.b_ih`, `params.b_hh (3H,)`, gate order r, z, n. With the gates at the *old* state `h`:
#
# $r = \sigma(x W_{ir}^\top + b_{ir} + h W_{hr}^\top + b_{hr})$, $z = \sigma(\dots)$,
# $n = \tanh(x W_{in}^\top + b_{in} + r \odot (h W_{hn}^\top + b_{hn}))$, and
#
# $$h_{new} = \frac{h + \gamma(1-z)\odot n}{1 + \gamma(1-z)} .$$
#
# `x` is `(B, nx)`, `h` is `(B, H)`; on MGRIT's level $\ell$ the step uses $\gamma = m^\ell$.

# %% tags=["solution", "raises-exception", "answer:10.4"]
def implicit_gru_step(params, x, h, gamma):
    """One implicit GRU step -> (B, H)."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 10.4: replace this line with your code")


# %% tags=["raises-exception"]
mgrit_checks.check_implicit_gru_step(implicit_gru_step)

# %% [markdown]
# ## Exercise 10.5 · F-relaxation on threads (a speed exercise)
#
# The C-intervals of an F-relaxation are independent: each marches from its own C-point. Write
# `f_relaxation_threads(step, U, m, threads)`, the F-relaxation of Exercise 10.1 with the intervals run
# concurrently on `threads` threads (`concurrent.futures.ThreadPoolExecutor(max_workers=threads)`, one
# task per interval). Every task writes only its own F-points, so all of them can share one copy of `U`.
#
# Python threads share one interpreter lock (the GIL), but a real `step` spends its time in numpy/BLAS
# or a compiled kernel, which release it. The check imitates that with a `step` that sleeps 2 ms per call
# (sleeping releases the GIL too) and counts how many calls were in flight at once: with `threads=2`, at
# least two, never more than two. Then it times yours against the serial `mgrit.f_relaxation` with the
# same sleeping step: with two threads at least 1.5 times as fast. Before that, the numbers (threads = 1
# to 4) must match `mgrit.f_relaxation`, and `U` must be left unchanged.

# %% tags=["solution", "raises-exception", "answer:10.5"]
from concurrent.futures import ThreadPoolExecutor


def f_relaxation_threads(step, U, m, threads):
    """F-relaxation with the C-intervals on `threads` threads; returns a new array shaped like U."""
    U = np.array(U, dtype=float, copy=True)
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 10.5: replace this line with your code")
    return U


# %% tags=["nbval-ignore-output", "raises-exception"]
mgrit_checks.check_f_relax_threads(f_relaxation_threads)

# %% [markdown]
# ## Put together
#
# The course's solver does what you just wrote, for any number of levels. How many iterations does
# the implicit GRU need with F vs FCF relaxation on a 256-step sequence? (This cell uses the course's
# own functions, so it runs even before you solve the exercises.)

# %%
p = gru.init_params(4, 16, seed=2, dtype=np.float64)
X = np.random.default_rng(2).standard_normal((256, 4, 4))
for relax in ("F", "FCF"):
    _, hist = gru.gru_forward(p, X, implicit=True, method="mgrit", m=4, levels=2, relax=relax, max_iter=12,
                              tol=1e-8, return_history=True)
    print(f"{relax:>3}: {len(hist)} iterations to residual {hist[-1]:.0e}")

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
