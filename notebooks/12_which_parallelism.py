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
# # 12 · Which parallelism when -- one cost model, checked against this machine, and an advisor
#
# Every chapter parallelised one axis: the batch (03), tiles and SIMD lanes (04), threads (05), Halide
# schedules (06), layers and ranks (07), the time axis by a scan (08), by multigrid (10) and by Newton (11).
# A student facing a *new* problem needs to know which axis to use, and the seeds' headline numbers come
# from machines the reader does not have. This chapter puts the axes into one cost model:
#
# 1. **The machine**, measured now: GEMM peak, GEMV rate, bandwidth, the price of a library call, of a
#    thread hand-off, of a parallel region, of one dependent step. What cannot be measured here (MPI
#    between nodes, a GPU) is *assumed* and labelled.
# 2. **Predict → measure → verdict**: every chapter's benchmark configuration is predicted by the model
#    and measured on this machine; the table says where the model is off by more than a factor of two, and the
#    advisor does not advise there.
# 3. **A simulated cluster** with a virtual clock for the schedules that need more processors than this
#    machine has, so the seeds' numbers sit beside simulated and measured ones.
# 4. **The advisor** (`advise(problem)`), with sliders.
#
# Open `course_lib/experiments/cost_model/model.py` (the model) and `course_lib/experiments/cost_model/cluster.py`
# (the task graphs): each method's cost is a dozen lines.

# %%
import numpy as np

import course_lib  # noqa: F401  (first: it sets up numba's CUDA mode)
from course_lib.core import timing
from course_lib.experiments import cost_model as cost_model_exp
from course_lib.teaching import widgets
from course_lib.teaching.claims import show
from course_lib.teaching.plots import cost_model as cost_model_plots
from course_lib.teaching.verdict import verdict

QUICK = timing.budget() == "small"

# %% [markdown]
# ## 1 · The machine, measured
#
# `Machine.measure()` (its micro-benchmarks are in `cost_model/probes.py`) times a GEMM on one core and on
# all, a cache-resident GEMV, a streaming copy on one and on all cores, from memory and from the last-level
# cache, a tiny numpy call, a hand-off to a thread pool and a pool started per call, an empty numba parallel
# region and the course's own code: the sequential scan (one dependent step), the channel scan, MGRIT's residual
# per iteration (how many iterations a tolerance takes), and the threads and wavefront methods of chapter 07 at
# other sizes than chapter 07's -- how much the GIL lets their Python threads overlap small and large calls, and
# what one diagonal's barrier costs. What runs on one thread is timed by the CPU clock, and the hand-off and the
# parallel region by a low quantile of many single runs spread over the measurement: other programs only ever
# *add* time, so a busy moment does not become a constant. A constant whose runs were mostly slowed is marked
# BUSY in the table. *Predict first*: which of these will matter for an RNN whose hidden state has 32 units --
# the GEMM peak or the price of a call?

# %% tags=["nbval-ignore-output"]
machine = cost_model_exp.Machine.measure(quick=QUICK)
print(machine)
if not machine.noise.ok:
    print(machine.noise.warning())
    print("The advisor below will therefore advise nothing from these constants; the counts (section 2) and "
          "the simulated schedules (section 4) do not depend on them.")
for name, why in machine.busy.items():
    print(f"{name} was measured busy: {why}")

# %% [markdown]
# ## 2 · The model's counts are the course's counts
#
# The model does not invent its work and span: the wavefront's diagonals, the scans' combines, MGRIT's
# and DEER's critical paths are computed (in closed form, or from the task graphs of the simulated
# cluster) and equal what the chapters' own code reports. Its *library calls* -- per cell, per step, per
# pass, and DEER's per iteration -- are counted by running the course's code once on tiny problems with
# counting arrays (`cost_model.counts`), then scaled with T, the layers and the iterations; a fresh count
# at other sizes must agree.

# %%
from course_lib.algorithms import mgrit, newton, scan
from course_lib.parallel import inference

print("scan, T=1000:", {m: cost_model_exp.scan_counts(m, 1000) == {"work": scan.scan_counts(m, 1000).work,
                                                        "span": scan.scan_counts(m, 1000).span}
                        for m in ("sequential", "hillis_steele", "blelloch")})
ws = inference.work_span(32, 4, 2)
print("wavefront T=32, L=4, P=2:", cost_model_exp.wavefront_counts(32, 4, 2), "course:", {k: ws[k] for k in ("work", "span", "steps")})
print("MGRIT T=256, P=8 span:", cost_model_exp.mgrit_counts(256, 8)["span"], "course:",
      mgrit.span_model(256, m=4, levels=2, iters=cost_model_exp.MGRIT_ITERS, P=8, latency=0.0)["span"])
print("DEER T=512, H=8, P=4 span:", cost_model_exp.deer_counts(512, 8, 4, iters=5)["span"], "course:",
      newton.span_model(512, 8, iters=5, P=4)["span"])

# %%
preset = cost_model_exp.Machine.preset("xeon_phi")  # the counts do not depend on the machine
for prob, meth, opts in ((cost_model_exp.Problem("gru", "training", batch=3, T=9, nh=5), "batched", {}),
                         (cost_model_exp.Problem("rnn", batch=4, T=7, nh=6, layers=3, ny=2), "wavefront", {"P": 2}),
                         (cost_model_exp.Problem("lstm", batch=2, T=11, nh=4), "sequential", {})):
    model_calls = cost_model_exp.predict(meth, prob, preset, **opts).calls
    counted = cost_model_exp.count_run(prob, meth, threads=opts.get("P")).calls
    print(f"{prob.describe()}, {meth}: the model counts {model_calls:.0f} calls, the code made {counted}")
print("DEER (newton) calls per iteration, counted:", cost_model_exp.deer_calls("newton")["iter"],
      "-- quasi:", cost_model_exp.deer_calls("quasi")["iter"])

# %% [markdown]
# ## 3 · Predict → measure: every chapter's benchmark configuration
#
# Each configuration below is a chapter's own benchmark at a small size, run with the chapter's code and
# timed with `core.timing.compare` (interleaved, one process). The model predicts each from the machine
# numbers above. *Predict first*: for which chapters will a roofline with call overheads be right within
# a factor of two, and where will it not -- and why might the threaded methods be the hardest on a shared 2-core machine?

# %% tags=["nbval-ignore-output"]
cal = cost_model_exp.calibrate(machine=machine, repeat=3)
print(cal.table())
_ = cost_model_plots.predicted_vs_measured(cal)

# %% [markdown]
# For every configuration: is the advisor's first choice (among the methods measured, never a method the
# model mispredicts here by more than a factor of two) the measured fastest? Each line is chosen by code from
# the table and the noise of the run: a run the noise guard rejects gives no conclusion, and where a
# method the model mispredicts could be the fastest, the advisor advises nothing and the line says so.

# %% tags=["nbval-ignore-output"]
for name in cal.configs():
    print(cal.explain(name))
errors = cal.errors()
unreliable = sorted(k for k, v in errors.items() if v is None)
print("\nmethods the model mispredicts here by more than 2x (not advised):",
      sorted(k for k, v in errors.items() if v is not None and v > 2.0) or "none")
print("methods measured only in runs the noise guard rejected (not advised):", unreliable or "none")
if all(v is None for v in errors.values()):
    print("Every calibration run was unreliable: the advisor below advises nothing on this machine now. "
          "What can still be read: the counts of section 2 and the simulated schedules of section 4.")

# %% [markdown]
# ## 4 · The seeds' machines, simulated
#
# The seeds measured on a 61-core Xeon Phi (Halide), one chip of a K80 (scan) and Attaway's 36-core nodes
# (MGRIT). Their numbers, from the claims registry:

# %%
print(show("000.halide.summary.speedup", "001.summary.kernel_speedup", "002.speedup.max"))

# %% [markdown]
# Each schedule becomes a task graph (`course_lib.experiments.cost_model.cluster`) with costs from the seed's machine --
# the numbers the seed states, the rest *assumed* and printed with the setting -- and runs on a virtual
# clock. The Gantt charts show where the processors wait. *Predict*: which of the three schedules keeps
# its processors busiest?

# %% tags=["nbval-ignore-output"]
import matplotlib.pyplot as plt

seeds = cost_model_exp.seed_schedules()
fig, axes = plt.subplots(3, 1, figsize=(8, 8))
for ax, (cid, s) in zip(axes, seeds.items()):
    sched = s["graph"].simulate(s["P"], label=cid)
    cost_model_plots.gantt(sched, ax=ax, max_procs=16, unit="s" if cid != "002.speedup.max" else "steps")
    print(f"{cid}: simulated {s['simulated']:.3g}x, utilisation {sched.utilisation():.0%} -- {s['setting']}")
fig.tight_layout()

# %% [markdown]
# The seeds' numbers, the simulated schedules and what was measured here, on one chart (each bar labelled).
# Like with like: "measured here" is the seed's own quantity, as the chapter that reproduces the seed
# measures it -- seed 001's 50x is the chunked scan over the loop that is serial over time but parallel over
# channels (chapter 08), not over a one-thread loop; seed 002's is MGRIT over the GRU marched over time
# (an inference pass here, training in the seed). Seed 000's 39x is the best Halide schedule over
# sequential Halide in training: chapter 06 measures it; no chapter-12 run does, so it has no bar here.

# %% tags=["nbval-ignore-output"]
measured = cost_model_exp.measured_speedups(cal)
_ = cost_model_plots.seed_chart(seeds, measured)
cores = machine.cores
for cid, where in cost_model_exp.SEED_ELSEWHERE.items():
    print(f"{cid}: {where}.")
for cid, (ours, what, noise) in measured.items():
    print(verdict(cid, ours, here=f"{cores} cores, {what}", within=2.0, noise=noise,
                  reasons=[(cores < seeds[cid]["P"], f"{cores} cores here, {seeds[cid]['P']} processors in the seed's run"),
                           (not machine.noise.ok, "the machine was busy while it was measured")]))

# %% [markdown]
# ## 5 · The advisor
#
# `advise(problem, machine, calibration=...)` ranks every method that applies by predicted time, with the
# reason (which part of the cost dominates), and lists -- but does not advise -- methods the model
# mispredicts here, methods measured only while the machine was busy, and methods whose synchronisation
# (a parallel region, a thread hand-off) could only be measured busy. Impossible problems are refused with
# the argument named:

# %%
for bad in (dict(kind="rnn", batch=8, T=10, nh=8, layers=1, methods=["wavefront"]),
            dict(kind="linear", batch=1, T=100, nh=4, layers=1, methods=["mgrit"]),
            dict(kind="rnn", batch=-3, T=10, nh=8, layers=1, methods=None)):
    methods = bad.pop("methods")
    try:
        cost_model_exp.advise(cost_model_exp.Problem(**bad), machine, methods=methods)
    except ValueError as exc:
        print("ValueError:", exc)

# %% tags=["nbval-ignore-output"]
problem = cost_model_exp.Problem("gru", "training", batch=16, T=1024, nh=32)
ranked = cost_model_exp.advise(problem, machine, calibration=errors)
for a in ranked:
    print(f"{a.method:<12} {a.seconds * 1e3:9.3f} ms  {'' if a.trusted else '(not advised) '}{a.reason}")
first = cost_model_exp.first_choice(ranked)
print(f"\nadvised: {first}" if first else "\nthe advisor advises nothing for this problem here (the reasons above say why)")

# %% [markdown]
# ### Problems the advisor has never seen
#
# The configurations above come from the chapters. Are the model and the advisor right on problems nobody
# tuned them for? `fresh_problems` draws problems at random (a fixed seed: every kind, none a chapter
# configuration); `check_advisor` predicts every method the course can run on each, asks the advisor, runs
# them all with `run(problem, method)` -- the course's own code -- and counts a hit when the advisor's first
# trusted choice is the measured fastest or within 1.25x of it. *Predict first*: on which kind of problem
# will the advisor miss, and will it be the arithmetic or the overheads the model got wrong?

# %% tags=["nbval-ignore-output"]
fresh = cost_model_exp.check_advisor(cost_model_exp.fresh_problems(4 if QUICK else 8, seed=0), machine,
                                     calibration=errors, repeat=1 if QUICK else 3)
print(fresh)

# %% [markdown]
# Any prediction can be checked the same way by hand: `run(problem, method)` executes the method and
# returns its hidden states, so `timing.compare` can time it beside the prediction.

# %%
small = cost_model_exp.Problem("gru", "inference", batch=2, T=16, nh=4)
out = {m: cost_model_exp.run(small, m) for m in ("sequential", "batched", "mgrit")}
print({m: bool(np.allclose(o, out["batched"], atol=1e-4)) for m, o in out.items() if m != "mgrit"},
      "(mgrit solves the implicit GRU, as in chapter 10:", out["mgrit"].shape, ")")

# %% [markdown]
# Move the sliders: the ranking for one problem, and the winning method over (T, H) and over (B, P)
# (cores are virtual beyond this machine's; the GPU switch adds an *assumed* GPU).

# %% tags=["nbval-ignore-output"]
def panel_data(batch=32, T=256, nh=64, layers=2, cores=2, gpu=False):
    return cost_model_exp.ranking_and_maps(batch, T, nh, layers, cores, gpu, machine=machine, calibration=errors, n=5)


def render(d, axes):
    a1, a2, a3 = axes
    cost_model_plots.ranking(d["advice"], ax=a1)
    cost_model_plots.winner_map(d["TH"], ax=a2)
    cost_model_plots.winner_map(d["BP"], ax=a3)
    best = d["advice"][0]
    return f"{d['problem'].describe()}: advise {best.method} ({best.reason})"


widgets.sweep_panel(panel_data, controls={"batch": (1, 1024, 1, 32), "T": (8, 8192, 8, 256), "nh": (4, 1024, 4, 64),
                                          "layers": (1, 8, 1, 2), "cores": (1, 256, 1, 2), "gpu": False},
                    render=render, axes=(1, 3), figsize=(13, 3.6))

# %% [markdown]
# ## What to take away
#
# * The cost of a method is arithmetic, memory traffic, library calls, synchronisation and communication;
#   which one dominates decides which axis of parallelism pays. Small hidden states are priced in calls
#   and barriers, not in flops.
# * A model is only worth what it predicts on *your* machine: the table above says where this one is
#   trustworthy here, and the advisor marks every method it cannot vouch for "NOT ADVISED", with the reason.
# * The seeds' speed-ups need their processors: the simulated schedules show how many, and where the
#   processors wait.
#
# Worksheet: [exercises/12_which_parallelism.ipynb](../exercises/12_which_parallelism.ipynb). This is the last chapter.
