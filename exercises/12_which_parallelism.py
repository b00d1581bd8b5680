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
# > This file was generated from `solutions/12_which_parallelism.ipynb` by `python -m course_lib exercises build`; rebuilding never overwrites your work without `--force` (which keeps a backup).
# > Course version 0.2.0: work in your own copy (`python -m course_lib start`), check it with `python -m course_lib progress`, carry your answers into a new version with `python -m course_lib update`.

# %% [markdown]
# # Worksheet 12 · Which parallelism when
#
# Three problems, three decisions. For each you write a function that turns the problem's description
# into a `cost_model.Problem` and asks the cost model of chapter 12 which candidate method is fastest
# on a given `machine` -- with `cost_model_exp.advise(problem, machine, methods=[...])` or the per-method costs
# `cost_model_exp.predict(method, problem, machine).seconds`. Return the method's *name* (a string).
#
# The check calls your function on the stated problem and on three other problems, each on a *preset*
# machine built from fixed numbers (a 2-core laptop, a 32-core server with slow cores and fast memory, the
# seeds' Xeon Phi) -- so the answer must come from the arguments and the `machine` you are given, and the
# check gives the same result on every run and every computer. You pass when your prediction is the
# model's first choice; a wrong answer that a common modelling slip explains (training priced as inference,
# a GRU priced as an LSTM, a candidate left out) is named. Separately, and never graded, the check runs the
# candidates on *this* machine with the course's own code; whether the measurement agreed with the model
# -- and if not, why -- is printed by `which_checks.report(...)` in the cell after each check.

# %% [markdown] tags=["chapter-header"]
# **Chapter 12 at a glance** · *Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by `python -m course_lib notebooks`: edit those, not this cell.*
#
# After this chapter you can:
#
# 1. Price a method in arithmetic, memory traffic, library calls, synchronisation and communication with one cost model.
# 2. Compare the model's predictions with every chapter's benchmark configuration measured here.
# 3. Simulate the seeds' machines to see how many processors their speed-ups need.
# 4. Use the advisor to choose the parallelism for three problems it has not seen.
#
# * **Before this chapter:** [07 · parallel inference](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/07_parallel_inference.ipynb), [08 · linear recurrences](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/08_scan.ipynb), [10 · MGRIT](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/10_mgrit.ipynb), [11 · Newton in time](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/notebooks/11_newton.ipynb)
# * **Study time:** about 75 min for the lecture and its worksheet (an estimate)
# * **Run time of this worksheet:** measured 34 s on AMD EPYC (zen5-avx512-quiet); its last code cell prints how long it took here
# * **Not in this chapter:** The last chapter: the seeds' GPUs and clusters are simulated here, not measured; run the chapters on such a machine to measure them.
# * **Open this worksheet:** [in Colab](https://colab.research.google.com/github/parallel-rnns/parallel-rnns-course/blob/main/exercises/12_which_parallelism.ipynb) · [on Binder](https://mybinder.org/v2/gh/parallel-rnns/parallel-rnns-course/main?urlpath=lab/tree/exercises/12_which_parallelism.ipynb) · [download the .ipynb](https://raw.githubusercontent.com/parallel-rnns/parallel-rnns-course/main/exercises/12_which_parallelism.ipynb)

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
from course_lib.core import timing
from course_lib.experiments import cost_model as cost_model_exp
from course_lib.teaching.checks import which as which_checks

machine = cost_model_exp.Machine.measure(quick=timing.budget() == "small")

# %% [markdown]
# ## Exercise 12.1 · Problem (a): inference over a large batch
#
# A trained softmax RNN of chapter 07 -- `layers` layers of `nh` units, `nh` inputs and `nh` outputs per
# step (`ny=nh`) -- is run for *inference* on `batch` sequences of `T` steps (stated: `batch=256, T=32, nh=64,
# layers=2`). Candidates: `"batched"` (one GEMM per step and layer), `"threads"` (the batch split over
# the cores), `"wavefront"` (layers × time diagonals on the cores). *Predict first*, without the model:
# with 256 sequences and 64 units, is the batch or the layer axis worth the threads?

# %% tags=["solution", "raises-exception", "answer:12.1"]
def predict_a(batch, T, nh, layers, machine):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 12.1: replace this line with your code")


# %% tags=["raises-exception"]
which_checks.check_predict_a(predict_a, machine)

# %% tags=["nbval-ignore-output", "raises-exception"]
which_checks.report("12.1")

# %% [markdown]
# ## Exercise 12.2 · Problem (b): one long linear recurrence
#
# `h_t = a_t h_{t-1} + x_t` (chapter 08) with `nh` channels and `T` steps, one sequence (stated: `nh=1`,
# `T=2**20`). Candidates: `"sequential"` (the compiled loop over time), `"channels"` (channels split over
# the cores), `"chunked"` (chapter 08's chunked scan, parallel over time). This time compare the
# per-method costs yourself: `cost_model_exp.predict(method, problem, machine)` returns a `Cost` whose `.seconds`
# is the predicted time (and `.parts` says what it is made of). *Predict first*: with one channel,
# what can the `"channels"` method split?

# %% tags=["solution", "raises-exception", "answer:12.2"]
def predict_b(T, nh, machine):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 12.2: replace this line with your code")


# %% tags=["raises-exception"]
which_checks.check_predict_b(predict_b, machine)

# %% tags=["nbval-ignore-output", "raises-exception"]
which_checks.report("12.2")

# %% [markdown]
# ## Exercise 12.3 · Problem (c): training a GRU on long sequences
#
# *Training* (forward and gradient) of a GRU (chapters 10-11) with `nh` units on `batch` sequences of `T`
# steps (stated: `batch=1, T=1024, nh=32`). Candidates: `"batched"` (step by step in time, the batch in one
# product per step -- for `batch=1` this is the serial GRU), `"mgrit"` (chapter 10), `"newton"` and
# `"quasi"` (chapter 11). *Predict first*: one sequence leaves no batch to split -- which of the
# time-parallel methods pays for its extra work, and which part of its cost decides? Price what is asked:
# a *training* pass of a *GRU*, with every candidate in the ranking.

# %% tags=["solution", "raises-exception", "answer:12.3"]
def predict_c(batch, T, nh, machine):
    # YOUR CODE HERE
    raise NotImplementedError("Exercise 12.3: replace this line with your code")


# %% tags=["raises-exception"]
which_checks.check_predict_c(predict_c, machine)

# %% tags=["nbval-ignore-output", "raises-exception"]
which_checks.report("12.3")

# %% [markdown]
# ## Looking back
#
# In the reports above: where the measured fastest was not the model's choice, was it the run's noise,
# a near tie, an assumption the run did not meet (iterations, cores), or a part of the cost the model
# gets wrong on this machine? Change the stated sizes in a copy of a cell -- `which_checks.model_choice("12.3",
# dict(batch=16, T=1024, nh=32), machine)` -- and predict before you look.

# %% tags=["chapter-footer", "nbval-ignore-output"]
from course_lib.teaching import chapters

chapters.finished()

# %% [markdown] tags=["chapter-footer"]
# Found a problem in this notebook? [Report it](https://github.com/parallel-rnns/parallel-rnns-course/issues/new) (say which cell, and paste what it printed) · how to help: [CONTRIBUTING.md](https://github.com/parallel-rnns/parallel-rnns-course/blob/main/CONTRIBUTING.md)
