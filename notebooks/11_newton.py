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
# # 11 · Newton in time: DEER, quasi-DEER and minGRU
#
# Chapter 08 parallelised *linear* recurrences with a scan; chapter 10 parallelised a *nonlinear* GRU
# over time with multigrid. **DEER** (Lim et al., ICLR 2024) takes a third road: write the whole
# trajectory $h_1 \dots h_T$ as the root of
#
# $$r(H)_t = h_t - f(h_{t-1}, x_t)$$
#
# and solve it with **Newton's method**. With $J_t = \partial f/\partial h_{t-1}$, each Newton step
# $\delta$ solves $\delta_t = J_t\,\delta_{t-1} - r_t$ -- a *linear recurrence with matrices*, i.e. a scan
# (`course_lib/algorithms/matrix_scan.py`). Everything else in an iteration is independent over $t$.
#
# - **quasi-DEER** keeps only $\mathrm{diag}(J_t)$: chapter 08's element-wise scan, $O(TH)$ per iteration.
# - **damped** (in the spirit of ELK, Gonzalez et al. 2024) shrinks each $J_t$ so the scan cannot overflow.
# - How many iterations are needed depends on how *predictable* the system is -- its largest
#   **Lyapunov exponent** (Gonzalez, Kozachkov et al. 2025).
# - **minGRU** (Feng et al. 2024) removes $h_{t-1}$ from the gates: the GRU *becomes* a linear recurrence.
#
# Library: `algorithms/newton.py` (generic solver), `models/jacobians.py` (cells + Jacobians),
# `parallel/deer.py` (the user-facing `deer` namespace), `models/mingru.py`.

# %%
import matplotlib.pyplot as plt
import numpy as np

from course_lib.algorithms import newton
from course_lib.core import backend, timing
from course_lib.experiments import newton as newton_exp
from course_lib.experiments import newton_kstar as newton_kstar_exp
from course_lib.models import gru, mingru
from course_lib.parallel import deer
from course_lib.teaching import widgets
from course_lib.teaching import claims
from course_lib.teaching.claims import CLAIMS
from course_lib.teaching.plots import newton as newton_plots
from course_lib.teaching.verdict import verdict

T_SPEED = timing.scaled(2048, 256)  # sequence length of the timing cells (timing only)

# %% [markdown]
# ## 1 · From the residual to convergence
#
# A GRU with 8 hidden units, 64 steps, float64. Start from $H = 0$ and watch each Newton iterate.
# **Predict:** after iteration $k$, which time steps are already exact?

# %%
p = newton_exp.scaled_gru(8, 1.0, seed=0)
X = np.random.default_rng(1).standard_normal((64, 2, 3))
data = newton_exp.newton_iterates(p, X, method="newton", n_iter=4)
newton_plots.plot_iterates(data["iterates"], data["sequential"], channel=0)
plt.show()
print("max-abs residual per iteration:", ["%.1e" % v for v in data["history"]])
H_deer, hist = deer.gru_forward(p, X, return_history=True)
print(f"converged in {len(hist) - 1} iterations; max |H_deer - H_serial| < 1e-10:",
      np.abs(H_deer - gru.gru_forward(p, X)).max() < 1e-10)

# %% [markdown]
# After iteration $k$ the first $k$ states are exact ($h_1$ depends only on the fixed $h_0$, and so on),
# so **any** start reaches the serial answer after at most $T$ iterations -- for Newton, quasi-Newton,
# the damped variant (and Picard and Jacobi, section 6) alike. Near the solution Newton converges quadratically, so it usually needs far fewer.

# %%
for method in deer.METHODS:
    H_T = deer.gru_forward(p, X[:12], method=method, tol=0.0, max_iter=12)
    print(f"{method:>7}: after T = 12 iterations, max |H - serial| = "
          f"{np.abs(H_T - gru.gru_forward(p, X[:12])).max():.0e}")
hists = {m: deer.gru_forward(p, X, method=m, return_history=True)[1] for m in deer.METHODS}
newton_plots.plot_histories(hists, tol=1e-12)
plt.show()
print({m: len(h) - 1 for m, h in hists.items()}, "iterations to 1e-12")

# %% [markdown]
# ## 2 · Iterations vs T and vs predictability
#
# **Predict:** does Newton need more iterations for a longer sequence? And when $W_{hh}$ is scaled up,
# making the GRU less contracting?
#
# The table also runs the two cruder members of the family (section 6): **Picard** ($A_t = I$) and
# **Jacobi** ($A_t = 0$).

# %%
vsT = newton_exp.iterations_vs_T((16, 64, 256, 1024))
print("iterations to 1e-8 vs T:", vsT)
rows = [newton_exp.predictability(s, T=256) for s in (0.5, 1.0, 2.0, 4.0, 8.0)]
FAMILY = ("newton", "quasi", "damped", "picard", "jacobi", "mgrit")
print(f"{'scale':>6} {'Lyapunov':>9} " + " ".join(f"{m:>8}" for m in FAMILY))
for r in rows:
    print(f"{r['scale']:>6} {r['lyapunov']:>9.3f} " + " ".join(
        f"{'diverged' if r[m] is None else r[m]:>8}" for m in FAMILY))
newton_plots.plot_predictability(rows)
plt.show()

# %% [markdown]
# Read the two tables: how much the counts move with $T$, and how they move as the Lyapunov exponent
# approaches zero. Near zero, perturbations barely shrink (and beyond zero, in chaos, they grow like
# $e^{\lambda t}$), so the products of Jacobians can overflow and full Newton can **diverge** -- even
# slightly *below* zero, as a "diverged" entry at a negative exponent in the table would show; the
# solver then stops with a clear error (never NaN). The damped variant still converges (at most $T$
# iterations); compare its count with $T$ = 256 to see how little it gains there.

# %%
p8 = newton_exp.scaled_gru(8, 8.0, seed=0)
X8 = np.random.default_rng(1).standard_normal((256, 2, 3))
try:
    deer.gru_forward(p8, X8, method="newton")
except deer.NewtonDivergence as exc:
    print("NewtonDivergence:", exc)
H8, h8 = deer.gru_forward(p8, X8, method="damped", return_history=True)
print(f"damped: {len(h8) - 1} iterations for T = 256, max |H - serial| < 1e-10:",
      np.abs(H8 - gru.gru_forward(p8, X8)).max() < 1e-10)

# %% [markdown]
# Try it: the slider scales $W_{hh}$; the panel prints the Lyapunov exponent beside the iterations.

# %% tags=["nbval-ignore-output"]
def _render(d, ax):
    ax.bar(list(FAMILY), [d[m] or 0 for m in FAMILY])
    ax.set_ylabel("iterations")
    return f"Lyapunov exponent {d['lyapunov']:.3f} per step; 0 bars = diverged"


widgets.sweep_panel(lambda scale, T: newton_exp.predictability(scale, T=T), controls={"scale": (0.25, 8.0, 0.25, 1.0),
                    "T": (64, 1024, 64, 256)}, render=_render, cost=lambda scale, T: T, max_cost=1024,
                    title="GRU with W_hh x scale")

# %% [markdown]
# ## 3 · DEER and MGRIT on one axis
#
# The same implicit GRU, the same tolerance (1e-8). Work is counted in multiples of one serial march
# (DEER: flops of the model in `newton.span_model`; MGRIT: steps of `mgrit.span_model`).

# %%
print(f"{'scale':>6} {'Lyapunov':>9} | {'newton it':>9} {'work':>6} | {'quasi it':>8} {'work':>6} | {'mgrit it':>8} {'work':>6}")
for r in newton_exp.work_comparison((0.5, 1.0, 2.0, 4.0)):
    cells = []
    for m in ("newton", "quasi", "mgrit"):
        it, w = r[f"{m}_iters"], r[f"{m}_work"]
        cells.append(f"{'div.':>8} {'':>6}" if it is None else f"{it:>8} {w:>6.1f}")
    print(f"{r['scale']:>6} {r['lyapunov']:>9.3f} | " + " | ".join(cells))

# %% [markdown]
# ## 4 · Time: measured here, and a work/span model
#
# The baseline is the **compiled** serial loop (`jacobians.gru_serial_numba`), never a Python loop.
# **Predict:** on this machine, is DEER faster or slower than the serial march at H = 8? At H = 64?

# %% tags=["nbval-ignore-output"]
with backend.blas_threads(1):
    cmp, info = newton_exp.time_deer(T_SPEED, 8, 4, repeat=3)
print(f"T = {T_SPEED}, H = 8, B = 4, {backend.cpu_count()} cores; iterations {info}")
print(cmp.table())
measured = cmp.speedup("newton")
c = CLAIMS["beyond.deer.readme.gru_speedup"]
print(verdict(c.id, measured, here=f"{backend.cpu_count()} cores, CPU, T={T_SPEED}, H=8", pivot=1.0, within=4.0,
              reasons=[(backend.cpu_count() < 16, f"{backend.cpu_count()} CPU cores here, not thousands of GPU lanes"),
                       (info["newton"]["iters"] > 1, f"DEER needed {info['newton']['iters']} Newton iterations here, "
                        "each a pass over all T steps that does several times the serial step's work")],
              noise=cmp.noise, interval=cmp.speedup_interval("newton")))

# %% [markdown]
# **Predict:** how should the full-Jacobian speedup change as the hidden size grows? The scan combines
# $H\times H$ matrices ($2H^3$ flops each) where the serial loop does a matrix-vector product ($2H^2$).
# (The DEER paper reports a falling trend with H; its table is not in a source we can quote, so no
# number from it is shown here.) The model counts exactly those flops (critical path; no memory
# traffic, no latency):

# %%
Ps = np.array([1, 2, 4, 16, 64, 256, 1024])
Hs = [1, 8, 64]
sp = newton_exp.model_speedups(4096, Hs, Ps, iters={"newton": 4, "quasi": 13})
newton_plots.plot_model_speedups(Ps, Hs, sp)
plt.show()
for m in sp:
    for H_, row in zip(Hs, sp[m]):
        print(f"{m:>6} H={H_:>2}: " + "  ".join(f"P={P}: {s:7.2f}x" for P, s in zip(Ps, row)))

# %% tags=["nbval-ignore-output"]
P_here = backend.cpu_count()
for m in sp:
    here = {H_: float(np.interp(P_here, Ps, row)) for H_, row in zip(Hs, sp[m])}
    gains = [H_ for H_, row in zip(Hs, sp[m]) if row[-1] > 1]
    print(f"{m:>6}: modelled speedup on this machine's {P_here} cores: "
          + ", ".join(f"H={H_}: {s:.2f}x" for H_, s in here.items())
          + f" -- {'a slowdown at every H' if max(here.values()) < 1 else 'a gain at some H'}; "
          + f"at P = {Ps[-1]} the model predicts a gain for H in {gains or 'none'}")

# %% [markdown]
# Where DEER can win, by the model (and on GPUs, in the paper): small H, long T, many lanes -- and
# quasi-DEER keeps scaling with P because its scan is element-wise. Compare the measured time above with
# the modelled line for this machine's core count.

# %% [markdown]
# ## 5 · minGRU: make the recurrence linear instead
#
# minGRU's gates see only $x_t$, so $h_t = (1-z_t)\,h_{t-1} + z_t\,\tilde h_t$ is chapter 08's recurrence:
# no Newton needed. Three evaluations of the same numbers -- sequential, a linear-space scan, and
# Heinsen's log-space scan (two prefix sums). **Predict:** in float32, which drifts from float64 as T grows?

# %%
pm = mingru.init_params("mingru", 3, 8, seed=0)
Xm = np.random.default_rng(2).standard_normal((300, 4, 3))
outs = {m: mingru.forward("mingru", pm, Xm, method=m) for m in mingru.METHODS}
print("float64: max difference between the three methods < 1e-12:",
      max(np.abs(outs[m] - outs["sequential"]).max() for m in outs) < 1e-12)
drift = newton_exp.scan_drift((64, 256, 1024, 4096))
newton_plots.plot_drift(drift)
plt.show()
for m in mingru.METHODS:
    print(f"{m:>10}: " + "  ".join(f"T={T}: {e:.1e}" for T, e in zip(drift["T"], drift[m])))

# %% [markdown]
# The log-space scan accumulates $a^*_t = \sum \log a_s$, a number that grows with $T$; float32 keeps
# about 7 digits of it, so its relative error grows with the sequence.
#
# Accuracy and time on chapter 08's remember-the-first-element task and chapter 10's activity task:

# %% tags=["nbval-ignore-output"]
res = newton_exp.mingru_vs_gru()
print(f"{'task':<26} {'model':<8} {'val. accuracy':>13} {'seconds':>8}")
for r in res:
    print(f"{r['task']:<26} {r['model']:<8} {r['val_accuracy']:>13.2f} {r['seconds']:>8.2f}")
acc = {(r["task"].split(" (")[0], r["model"]): r["val_accuracy"] for r in res}
gap = acc[("remember first", "gru")] - acc[("remember first", "mingru")]
print(f"remember-first: GRU {acc[('remember first', 'gru')]:.2f} vs one minGRU layer {acc[('remember first', 'mingru')]:.2f} "
      f"-- {'the state-blind gates fall short here' if gap > 0.1 else 'no clear gap on this run'}")

# %% [markdown]
# What to look for in the remember task: a single minGRU layer's gates see only $x_t$, never the state, so
# they cannot decide to *keep* the first element and ignore later noise; the GRU's gates can. Feng et al.
# stack several layers. The cell above ends by reading its own table.

# %% [markdown]
# ## 6 · One family, a cell built for Newton, and K*(T)
#
# Newton, quasi-Newton, Picard and Jacobi are **one iteration** (Gonzalez et al., TMLR 2026; code
# `lindermanlab/parallelizing_with_lds`):
#
# $$h^{(i+1)}_t = f(h^{(i)}_{t-1}, x_t) + A_t\,(h^{(i+1)}_{t-1} - h^{(i)}_{t-1})$$
#
# | method | $A_t$ | the update is |
# |---|---|---|
# | `newton` | $J_t$ | a matrix scan ($O(H^3)$ per combine) |
# | `quasi` | $\mathrm{diag}\,J_t$ | an element-wise scan |
# | `picard` | $I$ | a cumulative sum of the residuals |
# | `jacobi` | $0$ | no scan: $f$ at every $t$ from the last iterate |
#
# `newton.solve(..., method=...)` runs all four with one loop; only $A_t$ differs. The closer $A_t$ is to
# the true Jacobian, the fewer iterations. Picard suits a step close to the identity ($f(h) = h +
# \Delta t\,g(h)$); Jacobi a strongly contracting one. **Predict:** on the GRU at three
# predictability levels, which converge, and in how many iterations?

# %%
family = [newton_exp.predictability(s, T=256, mgrit=False) for s in (0.5, 2.0, 4.0)]
print(f"{'scale':>6} {'Lyapunov':>9} " + " ".join(f"{m:>8}" for m in newton.METHODS))
for r in family:
    print(f"{r['scale']:>6} {r['lyapunov']:>9.3f} " + " ".join(
        f"{'diverged' if r[m] is None else r[m]:>8}" for m in newton.METHODS))
newton_plots.plot_predictability(rows)
plt.show()
ok = {m: [r[m] for r in family if r[m] is not None] for m in newton.METHODS}
for m in ("quasi", "picard", "jacobi"):
    both = [(r["newton"], r[m]) for r in family if r["newton"] is not None and r[m] is not None]
    print(f"{m}: " + ("diverged at every level (the GRU step is far from the identity)" if not ok[m] else
                      f"converged at {len(ok[m])} of {len(family)} levels; "
                      + ("more iterations than Newton at each of them" if both and all(b > a for a, b in both)
                         else "not always more iterations than Newton")))

# %% [markdown]
# **A cell designed for Newton.** ParaRNN (Danieli et al., ICLR 2026) makes the recurrent terms of the
# GRU element-wise (`models/diag_gru.py`): $z_t = \sigma(x_t W_z + u_z \odot h_{t-1} + b_z)$, and so on.
# Its Jacobian is diagonal, so quasi-Newton *is* Newton and the scan combines numbers, not $H\times H$
# matrices. It starts from $h^0_t = f(0, x_t)$ and runs a fixed 3 iterations.
#
# **K\*(T)** is the fewest iterations after which the iterate matches the sequential unroll within
# $\tau$ everywhere. **Predict:** does K\* grow with T for a contracting cell? Which cell needs one?

# %% tags=["nbval-ignore-output"]
# (float32 round-off differs between CPUs and BLAS builds: an iteration count at the tolerance may too)
KT = (256, 1024, 4096, 16384)  # the same at every budget: about 10 s in all
kstar = {(cell, tol): newton_kstar_exp.k_star(cell, KT, tol=tol, dtype=dt)
         for cell in newton_kstar_exp.CELLS for tol, dt in ((1e-4, "float32"), (1e-8, "float64"))}
print(f"{'cell':>9} {'tau':>6} " + " ".join(f"{'T=' + str(T):>8}" for T in KT))
for (cell, tol), r in kstar.items():
    print(f"{cell:>9} {tol:>6.0e} " + " ".join(f"{'>30' if k is None else k:>8}" for k in r["k_star"]))
flat = all(len(set(r["k_star"])) == 1 for r in kstar.values())
print("K* is the same at every T measured for every cell and tolerance:", flat)

# %% [markdown]
# minGRU is a *linear* recurrence: one Newton step solves it exactly. For the contracting GRUs the
# table above says whether K\* moved with T on this run; the theory (Gonzalez et al.) ties it to the
# Lyapunov exponent, not to T.
#
# **Fixed K = 3 vs run to tolerance** (the diagonal GRU, T = 4096, from $f(0, x)$): what does stopping at
# 3 cost in accuracy?

# %% tags=["nbval-ignore-output"]
fk = newton_kstar_exp.fixed_vs_tolerance("diag_gru", 4096, K=3)
for name, d in fk.items():
    print(f"{name:>9}: {d['iters']} iterations, max error {d['error']:.1e}, {d['seconds'] * 1e3:.1f} ms (one run)")

# %% [markdown]
# **The d³ vs d cost, measured:** one Newton iteration of the dense GRU (matrix scan) against the
# diagonal GRU (element-wise scan) and ParaLSTM (`models/para_lstm.py`: element-wise recurrent terms in
# all four gates, so each unit's pair $(c, h)$ has a 2x2 Jacobian block and the scan combines 2x2
# matrices), same T and H. **Predict:** which of the two designed cells is cheaper per iteration, and
# does either's cost grow like the dense GRU's as H goes from 8 to 32?

# %% tags=["nbval-ignore-output"]
its = newton_kstar_exp.iteration_seconds((8, 32), T=1024)
for nh_, cmp_ in its.items():
    print(f"H = {nh_}:")
    print(cmp_.table())
    print("  ", cmp_.said("diag_gru", over="dense_gru"))
    print("  ", cmp_.said("para_lstm", over="dense_gru"))
    print("  ", cmp_.said("diag_gru", over="para_lstm"))
c = CLAIMS["beyond.pararnn.speedup"]
print(claims.show(c.id))
print("Not compared: that is a GPU kernel against a naive sequential loop at 7B-parameter scale; here we "
      "measure only the per-iteration cost of the two Jacobian structures on this CPU.")

# %% [markdown]
# ## What we learned
#
# - Newton over the sequence turns a nonlinear RNN into a few linear recurrences -- scans. Exact after
#   $T$ iterations, usually a handful; quasi-DEER trades more iterations for an $O(TH)$ scan.
# - Predictability (the Lyapunov exponent) decides: the more contracting, the fewer iterations; as the
#   exponent approaches zero, full Newton can diverge and damping needs close to $T$ iterations
#   (section 2's table shows where that happened on your machine).
# - The full-Jacobian scan costs $O(H^3)$ per step: a slowdown on few cores, and the speedup collapses with H.
# - minGRU avoids Newton altogether; its log-space scan is elegant but drifts in float32.
# - Newton, quasi, Picard and Jacobi are one iteration with a different $A_t$; a cell with a diagonal
#   Jacobian (ParaGRU) or 2x2 blocks (ParaLSTM) makes the structured (quasi) scan exact Newton and cheap per
#   iteration; K\*(T) is the number to compare.
#
# Worksheet: [exercises/11_newton.ipynb](../exercises/11_newton.ipynb).
# Next: [12 · which parallelism when](12_which_parallelism.ipynb).
