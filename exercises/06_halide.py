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
# > This file was generated from `solutions/06_halide.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 06 · Scheduling Halide
#
# In chapter 06 the RNN step was written once as a Halide algorithm and run under many schedules.
# Here you write a schedule yourself, and then fuse two stages of the backward step into one
# definition. Both checks compile your Halide code and compare its numbers with numpy.

# %% [markdown] tags=["chapter-header"]
# **Chapter 06 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Write the RNN step as a Halide algorithm and change its schedule without changing its numbers.
# 2. Run the seed's Fig. 10 grid (tiling, SIMD, parallel) here and read where this machine agrees with the seed's Xeon Phi.
# 3. Write a schedule for the hidden-state product and fuse two stages into one definition.
# 4. Place the best Halide schedule beside numpy, numba, BLAS and `fast_rnn`.
#
# * **Before this chapter:** [04 · tiling & SIMD](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/04_tiling_simd.ipynb), [05 · threads & fusion](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/05_threads_fusion.ipynb)
# * **Study time:** about 75 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 4 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** Training only: chapter 07 parallelises inference over batches, layers, ranks and a CUDA kernel.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/06_halide.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/06_halide.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/06_halide.ipynb)

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

import course_lib
from course_lib.models import halide_rnn
from course_lib.teaching.checks import halide as halide_checks

HALIDE, WHY = halide_rnn.available()
print("Halide available:", HALIDE)
if HALIDE:
    import halide as hl
else:
    print("The exercises cannot run here:", WHY)

# %% [markdown]
# ## Exercise 6.1 · A schedule for the hidden-state product
#
# `halide_rnn.hidden_stage()` returns the unscheduled algorithm of one forward step,
#
# $$h[j, i] = \tanh\Big(P[j, i] + \sum_k h_{prev}[k, i]\, W[j, k]\Big)$$
#
# in two stages: the accumulator `stage.prod` (pure definition `prod = 0`, update
# `prod += h_prev * W` over the RDom `stage.k`) and the output `stage.h`. Halide indexes
# `[column, row]`: `stage.j` is the column (contiguous in memory), `stage.i` the row.
#
# Write `my_schedule(stage)` that only *schedules* (never redefines) these Funcs so that
#
# * the output `h` is **tiled** (both its row and its column loop split into tiles),
# * the columns are **vectorised** (SIMD),
# * and one step runs at least a quarter as fast as the course's best schedule, measured in the same run.
#
# Useful calls: `stage.h.tile(j, i, jo, io, ji, ii, 16, 64, hl.TailStrategy.GuardWithIf)`,
# `.vectorize(var[, lanes, tail])`, `.parallel(var)`, `stage.prod.compute_at(stage.h, jo)`,
# `stage.prod.update().reorder(stage.j, stage.i, stage.k.x)` (innermost first). New loop
# variables are `hl.Var("jo")` etc. `halide_rnn.loop_nest(name)` shows the course's schedules.

# %% tags=["solution", "raises-exception", "answer:6.1"]
def my_schedule(stage):
    """Schedule stage.h and stage.prod in place (tiled, vectorised, ideally parallel)."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 6.1: replace this line with your code")

# %% tags=["nbval-ignore-output", "raises-exception"]
if HALIDE:
    halide_checks.check_hidden_schedule(my_schedule)

# %% [markdown]
# Look at the loop nest your schedule produced:

# %% tags=["check", "raises-exception"]
if HALIDE:
    print(halide_rnn.compile_hidden(halide_rnn.apply_schedule(halide_rnn.hidden_stage(), "serial")).loop_nest)
    st = halide_rnn.hidden_stage()
    my_schedule(st)
    print(halide_rnn.compile_hidden(st).loop_nest)

# %% [markdown]
# ## Exercise 6.2 · Two stages into one definition
#
# The backward step is written in two stages in `halide_rnn.backward_two_stage`: first
# `dh = dH + dnext · WT` (a pure definition plus an update, computed over the whole matrix), then
# `dpre = dh * (1 - H²)` as a second pass. The seed (§4.9) instead wrote "a pure definition using a
# single long expression".
#
# Write `fused_backward(dH, dnext, WT, H)` (the arguments are 2-D `hl.ImageParam`s, indexed
# `[column, row]`) returning **one** Func with a single pure definition
#
# $$dpre[j, i] = \Big(dH[j, i] + \sum_k dnext[k, i]\, WT[j, k]\Big)\,(1 - H[j, i]^2)$$
#
# using an inline reduction `hl.sum(...)` over `k = hl.RDom([(0, dnext.dim(0).extent())])`.
# The check compares the numbers with numpy and counts the passes of your pipeline's loop nest:
# it must make one pass fewer than the two-stage version.

# %% tags=["solution", "raises-exception", "answer:6.2"]
def fused_backward(dH, dnext, WT, H):
    """One Func: (dH + dnext @ WT) * (1 - H**2), a single pure definition."""
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 6.2: replace this line with your code")

# %% tags=["raises-exception"]
if HALIDE:
    halide_checks.check_fused_backward(fused_backward)

# %% tags=["check", "raises-exception"]
if HALIDE:
    print("two stages:\n" + halide_rnn.compile_func(halide_rnn.backward_two_stage, 4).loop_nest)
    print("fused:\n" + halide_rnn.compile_func(fused_backward, 4).loop_nest)

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
