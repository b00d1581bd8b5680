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
# # Worksheet 12 · Which parallelism when
#
# Three problems, three decisions. For each you write a function that turns the problem's description
# into a `cost_model.Problem` and asks the cost model of chapter 12 which candidate method is fastest
# on a given `machine` -- with `cost_model_exp.advise(problem, machine, methods=[...])` or the per-method costs
# `cost_model_exp.predict(method, problem, machine).seconds`. Return the method's *name* (a string).
#
# The check calls your function on the stated problem on this machine and on three other problems and
# machines (so the answer must come from the arguments, not be typed in), then runs the candidates with
# the course's own code and times them with `core.timing.compare`. You pass when your prediction is the
# model's first choice; whether the measurement agreed -- and if not, why -- is printed by
# `which_checks.report(...)` in the cell after each check. The machine's noise never fails you.

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

# %%
def predict_a(batch, T, nh, layers, machine):
    ### BEGIN SOLUTION
    problem = cost_model_exp.Problem("rnn", "inference", batch=batch, T=T, nh=nh, layers=layers, ny=nh)
    return cost_model_exp.advise(problem, machine, methods=["batched", "threads", "wavefront"])[0].method
    ### END SOLUTION


# %%
which_checks.check_predict_a(predict_a, machine)

# %% tags=["nbval-ignore-output"]
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

# %%
def predict_b(T, nh, machine):
    ### BEGIN SOLUTION
    problem = cost_model_exp.Problem("linear", "inference", batch=1, T=T, nh=nh)
    seconds = {m: cost_model_exp.predict(m, problem, machine).seconds for m in ("sequential", "channels", "chunked")}
    return min(seconds, key=seconds.get)
    ### END SOLUTION


# %%
which_checks.check_predict_b(predict_b, machine)

# %% tags=["nbval-ignore-output"]
which_checks.report("12.2")

# %% [markdown]
# ## Exercise 12.3 · Problem (c): training a GRU on long sequences
#
# *Training* (forward and gradient) of a GRU (chapters 10-11) with `nh` units on `batch` sequences of `T`
# steps (stated: `batch=1, T=1024, nh=32`). Candidates: `"batched"` (step by step in time, the batch in one
# product per step -- for `batch=1` this is the serial GRU), `"mgrit"` (chapter 10), `"newton"` and
# `"quasi"` (chapter 11). *Predict first*: one sequence leaves no batch to split -- which of the
# time-parallel methods pays for its extra work on this machine, and which part of its cost decides?

# %%
def predict_c(batch, T, nh, machine):
    ### BEGIN SOLUTION
    problem = cost_model_exp.Problem("gru", "training", batch=batch, T=T, nh=nh)
    return cost_model_exp.advise(problem, machine, methods=["batched", "mgrit", "newton", "quasi"])[0].method
    ### END SOLUTION


# %%
which_checks.check_predict_c(predict_c, machine)

# %% tags=["nbval-ignore-output"]
which_checks.report("12.3")

# %% [markdown]
# ## Looking back
#
# In the reports above: where the measured fastest was not the model's choice, was it the run's noise,
# a near tie, an assumption the run did not meet (iterations, cores), or a part of the cost the model
# gets wrong on this machine? Change the stated sizes in a copy of a cell -- `which_checks.model_choice("12.3",
# dict(batch=16, T=1024, nh=32), machine)` -- and predict before you look.
