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
# # 10 · Parallel in time: training GRUs with MGRIT
#
# Every chapter so far parallelised *within* a time step (batch, GEMM tiles, threads) or exploited a
# *linear* recurrence (chapter 08). A GRU is nonlinear, so the scan trick does not apply -- yet
# Moon & Cyr (seed 002; code in Sandia's *torchbraid*) train GRUs in parallel over the
# sequence with **multigrid reduction in time (MGRIT)**, the algorithm of XBraid and PyMGRIT. The idea:
#
# 1. read the GRU update as one step of an ODE solver, so a *coarse* grid with bigger steps makes sense;
# 2. the classic GRU is an *explicit* step, unstable for big steps -- use an **implicit GRU** instead;
# 3. iterate: cheap parallel sweeps on the fine grid + a sequential solve on a grid `m` times shorter.
#
# The seed's headline and its setting, from the course's claims registry:

# %%
import matplotlib.pyplot as plt
import numpy as np

from course_lib.algorithms import mgrit
from course_lib.core import backend, timing
from course_lib.data import activity
from course_lib.experiments import mgrit as mgrit_exp
from course_lib.experiments import mgrit_bias as mgrit_bias_exp
from course_lib.models import gru
from course_lib.teaching import widgets
from course_lib.teaching.claims import claim, show
from course_lib.teaching.plots import mgrit as mgrit_plots
from course_lib.teaching.verdict import verdict

SEED_SPEEDUP = claim("002.speedup.max")
SEED_T = int(claim("002.hmdb51.frames").value)                      # the seed's sequence length
STEPS_PER_P = int(claim("002.approach.steps_per_processor").value)  # the seed's P = T / 4
CORES = backend.cpu_count()
print(show("002.speedup.max", "002.hmdb51.frames", "002.approach.steps_per_processor"))

# %% [markdown]
# We build it all in `course_lib.algorithms.mgrit` (the generic solver: one iteration loop),
# `course_lib.models.gru` (cells, forward and backward with `method="sequential"` or `method="mgrit"`),
# `course_lib.parallel.mgrit_mpi` (the same loop over MPI ranks) and `course_lib.experiments.mgrit`
# (the measurements of this chapter).
#
# ## 0 · Why the time axis?
#
# The seed's motivation: the two usual ways to use more processors for an RNN -- **data parallelism**
# (split the batch) and **model parallelism** (split the layers) -- leave the sequence itself alone.
# "The training execution time of current parallelisms increases with the sequence length", because
# every worker still walks all $T$ steps one after the other, and model parallelism can use at most
# as many processors as there are layers (one, for our GRU).
#
# **Predict:** one of $P = 4$ data-parallel workers runs the serial GRU over a quarter of the batch.
# How does its time grow with $T$ -- and how much faster than the whole batch on one worker is it?

# %% tags=["nbval-ignore-output"]
TA_Ts = timing.scaled([128, 256, 512, 1024, 2048], [128, 256, 512])
ta = mgrit_exp.time_axis(TA_Ts, batch=32, P=4)
mgrit_plots.plot_time_axis(ta["Ts"], {f"whole batch B = {ta['B']} (1 worker)": ta["full"],
                                 f"B / P = {ta['B'] // ta['P']} (one of P = {ta['P']} data-parallel workers)": ta["share"]})
plt.tight_layout()
plt.show()
gain = float(np.median(np.array(ta["full"]) / np.array(ta["share"])))
print(f"time ~ T^slope: slope {ta['slope_full']:.2f} for the whole batch, {ta['slope_share']:.2f} for a quarter of it; "
      f"a quarter of the batch is {gain:.2f}x faster (median over T), not {ta['P']}x")
if not ta["noise"].ok:
    print(ta["noise"].warning())
elif min(ta["slope_full"], ta["slope_share"]) > 0.8:
    print("Both grow in proportion to T: splitting the batch shrinks each step"
          + (" (less than P-fold: a small step is dominated by per-step overhead)" if gain < 0.8 * ta["P"] else "")
          + ", but every worker still takes all T steps in a row -- the time axis stays sequential.")
else:
    print("The time does not grow in proportion to T here (slopes below 0.8): fixed costs dominate at these "
          "lengths; longer sequences would show the T-proportional part.")

# %% [markdown]
# ## 1 · A GRU is a time stepper
#
# With PyTorch's gates $r, z, n$ (all evaluated at $h_{t-1}$), the classic update
# $h_t = z\odot h_{t-1} + (1-z)\odot n$ is exactly one **explicit Euler** step with $\gamma = 1$ of
#
# $$\partial_t h = -(1-z)\odot h + (1-z)\odot n .$$
#
# The first term is a *stiff* damping: explicit Euler with step $\gamma$ multiplies errors by
# $1-\gamma(1-z)$, which leaves $[-1, 1]$ as soon as $\gamma(1-z) > 2$. The seed's **implicit GRU** treats
# that term implicitly,
#
# $$h_t = \frac{h_{t-1} + \gamma(1-z)\odot n}{1 + \gamma(1-z)},$$
#
# whose error factor $1/(1+\gamma(1-z))$ is below 1 for *every* $\gamma$. Both live in `gru.gru_cell`;
# the parameters are a `gru.GRUParams` in PyTorch's layout (`W_ih (3H, nx)`, `W_hh (3H, H)`, `b_ih`, `b_hh`).

# %%
params = gru.init_params(3, 8, seed=0, dtype=np.float64)
rng = np.random.default_rng(0)
x = rng.standard_normal((4, 3))
h = rng.standard_normal((4, 8))
gi = gru.input_projection(params, x[None])[0]
r, z, n = gru.gates(params, gi, h)
print("classic cell == z*h + (1-z)*n          :", np.allclose(gru.gru_cell(params, gi, h), z * h + (1 - z) * n))
print("implicit cell at gamma=1 differs from it:", not np.allclose(gru.gru_cell(params, gi, h, implicit=True), z * h + (1 - z) * n))
for g in (1, 4, 16, 64):
    a = g * (1 - z)
    print(f"gamma={g:>2}: max explicit error factor |1 - gamma(1-z)| = {np.abs(1 - a).max():6.2f}, "
          f"implicit 1/(1 + gamma(1-z)) = {(1 / (1 + a)).max():.2f}")

# %% [markdown]
# ## 2 · Why the coarse grid needs the implicit form
#
# MGRIT's coarse grid on level $\ell$ takes one step per $m^\ell$ fine steps, i.e. $\gamma = m^\ell$
# (with the input taken at the coarse time point). March that coarse step alone for a 1024-step
# sequence with $M = 16$. **Predict:** which of the two stays bounded?

# %%
X_demo = np.random.default_rng(1).standard_normal((1024, 4, 3))
traj_exp = gru.coarse_trajectory(params, X_demo, implicit=False, M=16)
traj_imp = gru.coarse_trajectory(params, X_demo, implicit=True, M=16)
mgrit_plots.plot_coarse_blowup(traj_exp, traj_imp, M=16)
plt.show()
big = np.abs(traj_exp).reshape(len(traj_exp), -1).max(axis=1)
blown = ~(big < 1e6)
print("explicit coarse step: " + (f"max|h| > 1e6 after {int(np.argmax(blown))} coarse steps" if blown.any()
                                  else f"max|h| = {big.max():.3g} (bounded on this sequence)")
      + f"; implicit: max|h| = {np.abs(traj_imp).max():.3f}" + (" (bounded by 1, like tanh)" if np.abs(traj_imp).max() <= 1 else ""))

# %% [markdown]
# Inside MGRIT such a blow-up must not come back as numbers. The solver compares every iteration's
# residual with the residual of the relaxed initial guess; more than `diverge_factor` (default $10^4$)
# times that, or a non-finite state, stops it with `MGRITDivergence` naming the iteration.
# **Predict:** does the explicit GRU with $m = 16$ get past its first iteration?

# %%
for implicit in (False, True):
    name = "implicit" if implicit else "explicit (classic)"
    try:
        H_m, hist = gru.gru_forward(params, X_demo, implicit=implicit, method="mgrit", m=16, levels=2, max_iter=5,
                                    tol=1e-10, return_history=True)
        err = np.abs(H_m - gru.gru_forward(params, X_demo, implicit=implicit)).max()
        print(f"{name} GRU through MGRIT, m=16: {len(hist)} iterations, max |H - serial| "
              + ("< 1e-8" if err < 1e-8 else f"= {err:.1e}"))
    except mgrit.MGRITDivergence as exc:
        print(f"{name} GRU through MGRIT, m=16 -> MGRITDivergence: {exc}")

# %% [markdown]
# ## 3 · MGRIT, two levels
#
# Write all time steps as one system $u_0 = g_0$, $u_i - \Phi(u_{i-1}) = g_i$. Every $m$-th point is a
# **C-point**; the rest are F-points. One iteration:
#
# 1. **F-relaxation**: from each C-point march the $m-1$ F-points of its interval -- the intervals are
#    independent, so this is the parallel part (**C-relaxation** updates each C-point from the F-point
#    before it; **FCF** = F, C, F);
# 2. the **residual** at the C-points $r_j = g_{jm} - (u_{jm} - \Phi(u_{jm-1}))$, restricted by injection;
# 3. a **coarse solve** (FAS): $v_j = \Phi_c(v_{j-1}) + g^c_j$ with $g^c_j = u_{jm} - \Phi_c(u_{(j-1)m}) + r_j$ --
#    sequential, but $m$ times shorter and with the coarse step $\Phi_c$ ($\gamma = m$);
# 4. **correct** the C-points $u_{jm} \leftarrow v_j$ and F-relax again (interpolation).
#
# More levels apply the same idea to the coarse solve (a V-cycle). Read `MGRIT.iterate` (the one
# iteration loop, shared by threads and MPI ranks), `MGRIT.solve_level` and `MGRIT.correct_c_values`
# in `course_lib/algorithms/mgrit.py`.

# %%
mgrit_plots.draw_two_level_cycle(nt=16, m=4)
plt.tight_layout()
plt.show()

# %% [markdown]
# ### Verified on Dahlquist's test problem
#
# $u' = \lambda u$ with backward Euler, $\Phi_\ell(u) = u / (1 - \lambda\,\Delta t\, m^\ell)$. With two levels
# and F-relaxation MGRIT *is* Parareal: after $k$ iterations the C-points $0..k$ are exact, so at most
# $N/m$ iterations reproduce the serial solution to round-off.

# %%
nt, m, lam, dt = 64, 4, -1.0, 0.2
exact = mgrit.dahlquist_exact_serial(lam, dt, 1.0, nt)
step = mgrit.dahlquist_step(lam, dt, m)
print("serial backward-Euler march == closed form:", np.allclose(mgrit.serial_solve(step, np.ones(1), nt)[:, 0], exact, rtol=1e-13))
print(" k | exact C-points (0..k expected) | max error")
for k in (1, 2, 4, 8, nt // m):
    U, hist = mgrit.MGRIT(step, m=m, levels=2, relax="F", max_iter=k, tol=0.0).solve(np.ones(1), nt)
    err = np.abs(U[::m, 0] - exact[::m])
    n_exact = int(np.argmax(np.append(err > 1e-14, True)))
    print(f"{k:>2} | {n_exact:>3} of {nt // m + 1} | {'< 1e-14' if err.max() < 1e-14 else f'{err.max():.1e}'}")

# %% [markdown]
# ### Convergence factors vs $m$ and $\lambda\Delta t$
#
# The factor $\rho$ = average residual reduction per iteration (two levels, F-relaxation).
# **Predict:** which modes converge fastest -- slow ($|\lambda\Delta t|$ small), stiff, or in between --
# and does a larger $m$ (a coarser, cheaper coarse grid) help or hurt?

# %%
tab = mgrit_exp.convergence_table(ms=(2, 4, 8, 16), lam_dts=(-0.01, -0.1, -1.0, -10.0), nt=256, relax="F", max_iter=6)
print("   m | " + " | ".join(f"λΔt={v:>6}" for v in tab["lam_dts"]))
for m_, row in zip(tab["ms"], tab["rho"]):
    print(f"{m_:>4} | " + " | ".join(f"{v:>10.3f}" for v in row))
rho = tab["rho"]
worst = tab["lam_dts"][int(np.argmax(rho.max(axis=0)))]
print(f"largest convergence factor: λΔt = {worst}; larger m raises the factor in the columns "
      f"{[ld for j, ld in enumerate(tab['lam_dts']) if rho[-1, j] > rho[0, j]]} and lowers it in "
      f"{[ld for j, ld in enumerate(tab['lam_dts']) if rho[-1, j] < rho[0, j]]}")

# %% [markdown]
# ### Convergence histories vs m, levels and relaxation
#
# Now the nonlinear case: the implicit GRU (H = 16, float64, T = 256). **Predict:** FCF does about
# twice the work of F per iteration -- does it need fewer iterations? And do more levels (a shorter
# sequential coarse march) cost iterations?

# %%
pg = gru.init_params(4, 16, seed=2, dtype=np.float64)
Xg = np.random.default_rng(2).standard_normal((256, 8, 4))
fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
hists = {m_: gru.gru_forward(pg, Xg, implicit=True, method="mgrit", m=m_, levels=2, relax="FCF", max_iter=10,
                             tol=1e-12, return_history=True)[1] for m_ in (2, 4, 8, 16)}
mgrit_plots.plot_histories(hists, ax=axes[0], title="vs m (2 levels, FCF)")
hl = {L: gru.gru_forward(pg, Xg, implicit=True, method="mgrit", m=4, levels=L, relax="FCF", max_iter=10,
                         tol=1e-12, return_history=True)[1] for L in (2, 3, 4)}
mgrit_plots.plot_histories(hl, ax=axes[1], title="vs levels (m=4, FCF)", label_fmt="{} levels")
hr = {rx: gru.gru_forward(pg, Xg, implicit=True, method="mgrit", m=4, levels=2, relax=rx, max_iter=10,
                          tol=1e-12, return_history=True)[1] for rx in ("F", "FCF", "FCFCF")}
mgrit_plots.plot_histories(hr, ax=axes[2], title="vs relaxation (m=4, 2 levels)", label_fmt="{}")
plt.tight_layout()
plt.show()


def iters_to(h, tol=1e-6):
    return next((i + 1 for i, v in enumerate(h) if v < tol), None)


for name, d in (("m", hists), ("levels", hl), ("relax", hr)):
    print(f"iterations to reach 1e-6 vs {name}:", {k: iters_to(h) or ">10" for k, h in d.items()})
its = [iters_to(h) or 11 for h in hl.values()]
spread = max(np.max(np.abs(np.log10(np.maximum(hl[L], 1e-300)) - np.log10(np.maximum(hl[2], 1e-300)))) for L in hl)
if max(its) == min(its):
    print(f"levels: the same number of iterations for 2, 3 and 4 levels here (the curves differ by at most "
          f"10^{spread:.1f}): the extra levels shorten the sequential coarse march without costing iterations.")
else:
    print(f"levels: {dict(zip(hl, its))} iterations -- more levels shorten the sequential march "
          + ("but cost iterations here." if its[-1] > its[0] else "and need no more iterations here."))
print("relax: FCF needs", iters_to(hr["FCF"]) or ">10", "iterations, F", iters_to(hr["F"]) or ">10",
      "-- at about twice the fine-grid work per iteration.")

# %% [markdown]
# Try it yourself on Dahlquist's problem (the sliders call `mgrit_exp.convergence_histories`):

# %% tags=["nbval-ignore-output"]
def _render(data, ax):
    mgrit_plots.plot_histories(data["histories"], ax=ax)
    return "convergence factor per iteration: " + ", ".join(f"m={k}: {v:.3f}" for k, v in data["factors"].items())


widgets.sweep_panel(
    lambda m, levels, relax, lam_dt: mgrit_exp.convergence_histories(ms=(m,), levels=levels, relax=relax, lam_dt=lam_dt,
                                                                  nt=256, max_iter=10),
    controls={"m": {"2": 2, "4": 4, "8": 8}, "levels": (2, 3, 1, 2), "relax": ["FCF", "F", "FCFCF"],
              "lam_dt": (-10.0, -0.05, 0.05, -1.0)},
    render=_render, title="MGRIT on u' = λu (backward Euler, nt = 256)")

# %% [markdown]
# ## 4 · Forward *and* backward through MGRIT
#
# Training needs gradients. The adjoint $\lambda_t = \partial L/\partial h_t$ obeys a *linear* recurrence
# backward in time, $\lambda_{t-1} = \partial L/\partial h_{t-1}|_{\text{direct}} + J_t^\top \lambda_t$, so the
# same MGRIT solves it (run backward, the coarse levels use the coarse cell's Jacobian). Once all
# $\lambda_t$ are known, the weight gradients are independent per time step -- one big batched
# contraction (`gru.gru_backward`). Converged, both agree with the exact serial backward; the seed
# stops after a *few* iterations instead ("We traded inexactness for performance").
# **Predict:** how large is the gradient error after 1, 2, 3 iterations?

# %%
Xb = np.random.default_rng(3).standard_normal((128, 4, 4))
Hs = gru.gru_forward(pg, Xb, implicit=True)
dH = np.zeros_like(Hs)
dH[-1] = 1.0  # L = sum of the last hidden state
gs, dh0s = gru.gru_backward(pg, Xb, Hs, dH, implicit=True)
Hm, hf = gru.gru_forward(pg, Xb, implicit=True, method="mgrit", m=4, levels=3, max_iter=20, tol=1e-12, return_history=True)
gm, dh0m, hb = gru.gru_backward(pg, Xb, Hs, dH, implicit=True, method="mgrit", m=4, levels=3, max_iter=20, tol=1e-12,
                                return_history=True)
names = ("W_ih", "W_hh", "b_ih", "b_hh")
print(f"forward : {len(hf)} iterations, max |H_mgrit - H_serial| < 1e-10: {np.abs(Hm - Hs).max() < 1e-10}")
print(f"backward: {len(hb)} iterations, max grad difference < 1e-9: "
      f"{max(np.abs(getattr(gm, k) - getattr(gs, k)).max() for k in names) < 1e-9}")
for k_it in (1, 2, 3, 5):
    gk, _ = gru.gru_backward(pg, Xb, Hs, dH, implicit=True, method="mgrit", m=4, levels=3, max_iter=k_it)
    rel = max(np.abs(getattr(gk, k) - getattr(gs, k)).max() / np.abs(getattr(gs, k)).max() for k in names)
    print(f"{k_it} iteration(s): relative gradient error {rel:.1e}")

# %% [markdown]
# ## 5 · The price: extra work
#
# Every MGRIT iteration sweeps the fine grid (F-relaxation, C-relaxation, residuals) and then
# marches the coarse levels, so even a *few* iterations take more time steps than the serial march's
# $T$. **Predict:** with the seed-like budget below (m = 4, 3 levels, FCF, 2 iterations), how many
# times the serial number of steps does MGRIT take? The solver counts its steps (`steps_taken`);
# the work/span model (`mgrit.span_model`) predicts the same count.

# %%
BUDGET = dict(m=4, levels=3, relax="FCF", iters=2)
work = mgrit_exp.counted_work(1024, **BUDGET)
model_work = mgrit.span_model(1024, **BUDGET)["work"] / 1024
print(f"MGRIT ({BUDGET}): {work:.3f} time steps per serial step (counted), model {model_work:.3f}")

# %% [markdown]
# On one process the extra work is pure loss; with threads it could be shared -- if the threads can
# run at the same time. Measured on this machine (T = 1024, H = 64, B = 16, one BLAS thread):

# %% tags=["nbval-ignore-output"]
T_SPEED, H_SPEED = 1024, 64
ps = gru.init_params(8, H_SPEED, seed=0)
Xs = np.random.default_rng(4).standard_normal((T_SPEED, 16, 8)).astype(np.float32)
cmp = mgrit_exp.forward_speed(ps, Xs, threads=CORES, m=4, levels=3, relax="FCF", max_iter=2)
print(cmp.table())
t_ratio = cmp.ratio("mgrit_1thread")
print(f"one-thread MGRIT: {t_ratio:.2f}x the serial time (median pair) for {work:.2f}x the steps")
if CORES < 2:
    print("one core here: threads cannot run at the same time, so no thread comparison is drawn")
else:
    print(f"{CORES} threads vs one thread: " + cmp.said("mgrit_threads", over="mgrit_1thread"))
gain = cmp.faster("mgrit_threads", by=1.2, over="mgrit_1thread") if CORES >= 2 else "cannot tell"
if gain == "no":
    print("The threads do not give 1.2x: each step is a few small numpy calls, and Python's GIL lets "
          "only one thread run Python code at a time -- the threads mostly take turns. Separate processes "
          "(MPI ranks, below) do not share a GIL.")
elif gain == "yes":
    print("The threads give at least 1.2x: enough of each step runs inside numpy with the GIL released.")

# %% [markdown]
# ## 6 · Speedup vs sequence length: measured here, modelled beyond
#
# The seed reports that the parallel implicit GRU gains *more* as sequences get longer -- with the
# processor count growing with the length (its rule for $P$ is printed at the top). We can measure only as many
# processors as this machine has: MPI ranks (separate processes, so no GIL) against the serial march,
# for growing $T$, with the inexact budget of section 5. The **work/span model** extends the picture:
# it counts the time steps on the critical path when each level's C-intervals are spread over $P$
# processors (F-sweeps cost $\lceil C_\ell/P\rceil (m-1)$ steps, C-sweeps and residuals
# $\lceil C_\ell/P\rceil$ + 1 for the boundary exchange, the coarsest level is a sequential march).
# It is a **model**: no communication bandwidth, no cache effects, every step costs the same.
# **Predict:** with $P$ fixed at this machine's cores, does the measured speedup grow with $T$?
# And with $P$ growing like the seed's?

# %% tags=["nbval-ignore-output"]
SV_Ts = timing.scaled([128, 256, 512, 1024], [128, 256])
RANKS = max(2, min(CORES, 4))
sv = mgrit_exp.speedup_vs_length(SV_Ts, ranks=RANKS, m=BUDGET["m"], levels=BUDGET["levels"], relax=BUDGET["relax"],
                              iters=BUDGET["iters"], repeat=3)
print(f"{'T':>6} {'sequential':>10} {'MGRIT ' + sv['method'] + ' x' + str(RANKS):>16} {'speedup':>8} {'model P=' + str(RANKS):>11}")
for T_, s_, p_, x_, mo in zip(sv["Ts"], sv["sequential"], sv["parallel"], sv["speedup"], sv["model"]):
    print(f"{T_:>6} {s_ * 1e3:>8.1f}ms {p_ * 1e3:>14.1f}ms {x_:>7.2f}x {mo:>10.2f}x")
if not sv["noise"].ok:
    print(sv["noise"].warning())

# %%
Ts_model = np.unique([SEED_T] + [2 ** k for k in range(7, 15)])  # 4 levels with m = 4 need T >= 128
m_fixed = [mgrit.span_model(int(T_), m=4, levels=3, iters=2, P=RANKS)["speedup"] for T_ in Ts_model]
m_grow = [mgrit.span_model(int(T_), m=4, levels=3, iters=2, P=int(T_) // STEPS_PER_P)["speedup"] for T_ in Ts_model]
m_grow4 = [mgrit.span_model(int(T_), m=4, levels=4, iters=2, P=int(T_) // STEPS_PER_P)["speedup"] for T_ in Ts_model]
print(" T      | model P=" + str(RANKS) + " | model P=T/" + str(STEPS_PER_P) + ", 3 levels | 4 levels")
for T_, a, b, c in zip(Ts_model, m_fixed, m_grow, m_grow4):
    print(f" {T_:>6} | {a:>9.2f}x | {b:>19.2f}x | {c:>7.2f}x")

# %% tags=["nbval-ignore-output"]
mgrit_plots.plot_speedup_vs_length(
    Ts_model, {f"P = {RANKS} (this machine)": m_fixed, f"P = T/{STEPS_PER_P}, 3 levels (seed's P)": m_grow,
               f"P = T/{STEPS_PER_P}, 4 levels": m_grow4},
    measured={f"{sv['method']}, P = {RANKS}": (sv["Ts"], sv["speedup"])},
    seed_speedup=SEED_SPEEDUP.value, seed_label=f"seed: up to {SEED_SPEEDUP.formatted()} (T = {SEED_T})")
plt.tight_layout()
plt.show()
T_big = sv["Ts"][-1]
trend = sv["speedup"][-1] / sv["speedup"][0]
print(f"measured with P = {RANKS}: the speedup changes by a factor {trend:.2f} from T = {sv['Ts'][0]} to T = {T_big} "
      f"(model at P = {RANKS}: {sv['model'][-1] / sv['model'][0]:.2f}); model with P = T/{STEPS_PER_P}: "
      f"{m_grow[0]:.2f}x at T = {Ts_model[0]} -> {m_grow[-1]:.2f}x at T = {Ts_model[-1]}")
print("seed 002: 'Parallel Implicit GRU achieves additional speedup as the sequence length increases' (its P grows with T)")
if sv["noise"].ok:
    change = "grows" if trend > 1.2 else "shrinks" if trend < 1 / 1.2 else "stays about flat"
    print(f"here, with P fixed at {RANKS}, the measured speedup {change} with T (the model at fixed P: flat -- the "
          f"share of parallel work does not grow with T); the model with P = T/{STEPS_PER_P} "
          + ("grows with T, as the seed found." if m_grow[-1] > m_grow[0] else "does not grow."))
print(verdict(SEED_SPEEDUP.id, sv["speedup"][-1], here=f"{RANKS} MPI ranks on {CORES} cores, T = {T_big}, GRU only",
              reasons=[(sv["work"] > RANKS, f"MGRIT takes {sv['work']:.1f}x the serial steps and only {RANKS} "
                                            f"processes share them (the seed's P = T/{STEPS_PER_P} = {T_big // STEPS_PER_P} here)"),
                       (sv["method"] != "mpi", "threads in one process share Python's GIL")],
              noise=sv["noise"]))

# %% [markdown]
# The model at the seed's own conditions -- the seed's sequence length and its $P$ (both printed at
# the top) -- is a different question from "how far can MGRIT go". **Predict:** does the model of the GRU alone reach
# the seed's number there? One thing the seed's timing contains that ours does not: the input of every
# frame comes from a **pre-trained ResNet** (18, 34 or 50), applied on the fine grid only and
# computed once; the speedup figure compares runs "with different preprocessors". That per-frame work
# is parallel over time with no extra iterations -- model it as $c$ GRU steps per frame:
# serial $T(1+c)$, parallel $Tc/P$ + the MGRIT span.

# %%
P_seed = SEED_T // STEPS_PER_P
gru_only = mgrit.span_model(SEED_T, m=4, levels=3, iters=2, P=P_seed)["speedup"]
c_need = mgrit_exp.preprocessing_needed(SEED_SPEEDUP.value, SEED_T, P_seed, m=4, levels=3, iters=2)
print(f"model, T = {SEED_T}, P = {P_seed}: GRU alone {gru_only:.2f}x; with c GRU-steps of per-frame work: "
      + ", ".join(f"c={c}: {mgrit_exp.preprocessing_model(SEED_T, P_seed, c, m=4, levels=3, iters=2):.2f}x"
                  for c in (1, 3, 10, 100)))
print(verdict(SEED_SPEEDUP.id, gru_only, here=f"work/span model of the GRU alone, T = {SEED_T}, P = {P_seed}, 2 iterations",
              reasons=[(c_need > 0 and np.isfinite(c_need),
                        f"the model counts the GRU alone; the seed's runs also compute ResNet features per frame, "
                        f"parallel over time -- the model reaches the seed's number if one frame's features cost "
                        f"about {c_need:.1f} GRU steps"),
                       (not np.isfinite(c_need), f"even perfectly parallel preprocessing cannot exceed P = {P_seed}")]))

# %% [markdown]
# ## 7 · The same loop over MPI ranks
#
# `course_lib.parallel.mgrit_mpi` does not have an iteration loop of its own: it hands `MGRIT.iterate`
# a `RankPartition` instead of the threads' `ThreadPartition`. Each rank owns a contiguous block of the
# fine grid's C-intervals; F-relaxation is local, C-relaxation and residuals exchange one boundary
# state with the neighbour, the coarse levels run on rank 0, and residual norms are all-reduced.
# Launched through `course_lib.core.mpi` (a subprocess with a timeout); a failing rank is named:

# %% tags=["nbval-ignore-output"]
ok, why = backend.mpi_available()
if ok:
    from course_lib.parallel import mgrit_mpi

    Xm = np.random.default_rng(5).standard_normal((128, 4, 4))
    h0 = np.zeros((4, 16))
    mopts = dict(m=4, levels=2, relax="FCF", max_iter=3, tol=0.0)
    U_mpi, hist_mpi, info = mgrit_mpi.solve({"kind": "gru", "params": pg, "X": Xm, "h0": h0, "implicit": True},
                                            128, ranks=2, timeout=120, **mopts)
    H_ser, hist_ser = gru.gru_forward(pg, Xm, h0, implicit=True, method="mgrit", return_history=True, **mopts)
    print(f"2 ranks: max |U_mpi - U_one_process| = {np.abs(U_mpi[1:] - H_ser).max():.1e}, "
          f"residuals {['%.2e' % v for v in hist_mpi]} vs one process {['%.2e' % v for v in hist_ser]}; "
          f"wall {info['wall_s']:.2f} s including MPI start-up")
    try:
        mgrit_mpi.solve({"kind": "dahlquist", "lam": -1.0, "dt": 0.1, "u0": [1.0]}, 64, ranks=2, fail_rank=1, timeout=60)
    except mgrit_mpi.MPIFailed as exc:
        print("a failing rank is named:", str(exc).splitlines()[0])
else:
    print("MPI is not available here:", why)

# %% [markdown]
# ### Ranks × threads: the seed's hybrid layout
#
# The seed did not run one MPI rank per core: it ran 4 ranks per node with 9 OpenMP threads each
# (printed below), so each rank's block of C-intervals was F-relaxed by 9 threads. `mgrit_mpi.solve`
# takes `threads=` for the same layout (each rank splits its own intervals over its threads; the
# arithmetic, and `U`, are unchanged). A layout is only fair when `ranks × threads` is at most the
# cores you have: more workers than cores just take turns. **Predict:** on this machine, which layouts
# fit, and does the split between ranks and threads matter when the total is the same?

# %% tags=["nbval-ignore-output"]
print(show("002.attaway.threads_per_rank"))
lay = mgrit_exp.layouts(256, repeat=timing.scaled(5, 3))
print(f"{'ranks':>5} {'threads':>7} {'median ms':>10} {'repeats (ms)':>26}   reliable")
for row in lay["rows"]:
    print(f"{row['ranks']:>5} {row['threads']:>7} {row['median'] * 1e3:>10.1f} "
          f"{' '.join(f'{t * 1e3:.1f}' for t in row['times']):>26}   "
          + ("yes" if row["noise"].ok else "no: " + "; ".join(row["noise"].reasons)))
print(f"every layout's result equals the one-process MGRIT: max |difference| = {lay['max_error']:.1e}")
fits = [f"{r}x{t}" for r, t in ((row["ranks"], row["threads"]) for row in lay["rows"])]
print(f"{lay['cores']} core(s) here: layouts run {', '.join(fits)}; not run (more workers than cores"
      + ("" if lay["method"] == "mpi" else ", or no MPI") + f"): {', '.join(f'{r}x{t}' for r, t in lay['not_run'])}.")
decision, why = mgrit_exp.fastest_layout(lay)
print(("Fastest layout here: " if decision == "clear" else "Which layout is fastest: cannot tell -- ") + why + ".")
hybrid_runs = [row for row in lay["rows"] if row["ranks"] > 1 and row["threads"] > 1]
print("A true hybrid (ranks > 1 and threads > 1) ran here." if hybrid_runs else
      f"A true hybrid needs ranks > 1 and threads > 1, so at least 4 cores; with {lay['cores']} this machine can "
      "compare ranks against threads for the same number of workers, not combine them.")

# %% [markdown]
# ### Bad input gets a clear message

# %%
for call in (lambda: mgrit.MGRIT(step, m=1),
             lambda: mgrit.MGRIT(step, m=4, levels=4).solve(np.ones(1), 64),
             lambda: mgrit.MGRIT(step, m=4, levels=3).solve(np.ones(1), 100)):
    try:
        call()
    except ValueError as exc:
        print("ValueError:", exc)
print("gru_forward pads instead: T=100 with m=4, 3 levels ->",
      gru.gru_forward(pg, Xg[:100], implicit=True, method="mgrit", m=4, levels=3, max_iter=2).shape)

# %% [markdown]
# ## 8 · Training with an inexact budget: classic vs implicit vs MGRIT
#
# The seed trains with a few MGRIT iterations per forward and backward solve, and reports that serial
# classic, serial implicit and parallel implicit GRUs "make little difference in test accuracy".
# Our task: synthetic "activity" sequences (`course_lib.data.activity`: 3 noisy channels, the class --
# rest, walk, run, jump -- is a rhythm spread over the whole sequence), as long as the seed's videos
# (printed at the top); GRU → last hidden state → linear → softmax, Adam with clipped gradients, three
# initialisations per model. Every model is evaluated with the exact serial forward of its own cell.
# Section 4 printed how inexact the gradients of 2 and 3 iterations are. **Predict:** does MGRIT with
# 2 iterations train to the accuracy of the serial implicit GRU? With 3? And classic vs implicit?

# %% tags=["nbval-ignore-output"]
Xtr, ytr, Xte, yte = activity.train_test(256, 128, SEED_T, seed=0, noise=0.3)
data = (Xtr.astype(np.float64), ytr, Xte.astype(np.float64), yte)
SEEDS = timing.scaled((0, 1, 2), (0,))
runs = {"classic GRU (serial)": dict(implicit=False),
        "implicit GRU (serial)": dict(implicit=True),
        "implicit GRU (MGRIT, 2 iters)": dict(implicit=True, method="mgrit", m=4, levels=2, relax="FCF", max_iter=2),
        "implicit GRU (MGRIT, 3 iters)": dict(implicit=True, method="mgrit", m=4, levels=2, relax="FCF", max_iter=3)}
train = mgrit_exp.train_compare(runs, data, seeds=SEEDS, nh=16, epochs=8, batch=32, lr=2e-2, clip=1.0)
print(f"{'model':<32} {'test accuracy per seed':>26} {'mean':>6} {'final loss':>11} {'seconds':>8}")
for name, r in train.items():
    print(f"{name:<32} {' '.join(f'{a:.2f}' for a in r['acc']):>26} {np.mean(r['acc']):>6.2f} "
          f"{np.mean(r['loss']):>11.2f} {np.mean(r['seconds']):>8.1f}")

# %% tags=["nbval-ignore-output"]
LITTLE = 0.05  # what we call "little difference": 5 accuracy points, or within the seed-to-seed spread
n_test = len(yte)


def parity(a, b):
    """A computed sentence comparing the mean test accuracy of runs a and b (over the initialisations)."""
    A, B = np.array(train[a]["acc"]), np.array(train[b]["acc"])
    d = A.mean() - B.mean()
    se = float(np.sqrt(A.var(ddof=1) / len(A) + B.var(ddof=1) / len(B))) if len(A) > 1 and len(B) > 1 else 0.0
    head = f"{a} vs {b}: {A.mean():.2f} vs {B.mean():.2f} ({d:+.2f})"
    if abs(d) <= LITTLE:
        return f"{head} -- little difference (at most {LITTLE:.2f}), as the seed found."
    if abs(d) <= 2 * se:
        return (f"{head} -- more than {LITTLE:.2f}, but within the initialisation-to-initialisation noise "
                f"(2 standard errors = {2 * se:.2f}) of {len(A)} runs each: not distinguishable here.")
    why = "2 iterations leave the gradient visibly inexact (section 4)" if "2 iters" in a else \
        "the two cells are different models, trained with the same budget" if "classic" in a else ""
    return f"{head} -- a real difference here (beyond 2 standard errors = {2 * se:.2f})" + (f": {why}." if why else ".")


print(f"seed 002: serial classic, serial implicit and parallel implicit GRU 'make little difference in test accuracy' "
      f"({len(SEEDS)} initialisation(s) each here, {n_test} test sequences)")
for a, b in (("implicit GRU (MGRIT, 2 iters)", "implicit GRU (serial)"),
             ("implicit GRU (MGRIT, 3 iters)", "implicit GRU (serial)"),
             ("classic GRU (serial)", "implicit GRU (serial)")):
    print(" -", parity(a, b))
t_ser = np.mean(train["implicit GRU (serial)"]["seconds"])
print(f"training time on one process: MGRIT 2 iters {np.mean(train['implicit GRU (MGRIT, 2 iters)']['seconds']) / t_ser:.1f}x, "
      f"3 iters {np.mean(train['implicit GRU (MGRIT, 3 iters)']['seconds']) / t_ser:.1f}x the serial implicit GRU "
      "(the extra work of section 5, not yet shared by processors)")

# %% [markdown]
# ### Why not simply a bigger batch? Seed 002's caveat
#
# Data parallelism splits a batch of sequences over processors, so more processors want larger
# mini-batches. The seed names the catch, citing You et al. (SC 2019): "The accuracy of mini-batch
# stochastic gradient descent (SGD) degrades as the size of mini-batch increases". We train the serial
# classic GRU of the table above for the same number of epochs (the same sequences seen) with
# mini-batches of 16, 64 and all 256 training sequences, at the same learning rate. **Predict:** does
# test accuracy fall as the batch grows, and how many optimizer steps does each run take?

# %% tags=["nbval-ignore-output"]
BATCHES = (16, 64, 256)
ba = mgrit_exp.batch_accuracy(data, BATCHES, seeds=timing.scaled((0, 1), (0,)), epochs=8)
print(f"{'batch':>6} {'optimizer steps':>16} {'test accuracy per seed':>24} {'mean':>6} {'seconds':>8}")
for b, r in ba.items():
    print(f"{b:>6} {r['updates']:>16} {' '.join(f'{a:.2f}' for a in r['acc']):>24} {np.mean(r['acc']):>6.2f} "
          f"{np.mean(r['seconds']):>8.1f}")
small, large = np.mean(ba[BATCHES[0]]["acc"]), np.mean(ba[BATCHES[-1]]["acc"])
se_b = float(np.sqrt(2 * 0.25 / n_test))  # the largest standard error of a difference of two accuracies
gap = small - large
print(f"batch {BATCHES[-1]} vs batch {BATCHES[0]}: {large:.2f} vs {small:.2f} ({-gap:+.2f}) -- "
      + (f"the larger batch is less accurate beyond 2 standard errors ({2 * se_b:.2f}), as the seed warns; it took "
         f"{ba[BATCHES[-1]]['updates']} optimizer steps to the smaller batch's {ba[BATCHES[0]]['updates']}"
         if gap > 2 * se_b else
         f"the larger batch is more accurate beyond 2 standard errors ({2 * se_b:.2f}): the seed's caveat does "
         "not show on this task at this budget" if -gap > 2 * se_b else
         f"within 2 standard errors ({2 * se_b:.2f}) of the test sample: no degradation visible at this budget"))

# %% [markdown]
# ## 9 · Inexact MGRIT training with a bias monitor
#
# Near a minimum the exact gradient becomes small while MGRIT's error does not, so a 2-iteration MGRIT
# gradient can point the wrong way (layer-parallel transformer training, 2026, reports this bias). The
# remedy: watch the gap on a fixed probe batch once per epoch -- the **cosine** between the MGRIT and
# the exact gradient and their **relative norm gap** -- and switch to exact gradients when the cosine
# falls below a threshold (0.8 here). **Predict:** does the cosine fall as training proceeds? Which of
# always-exact, always-inexact and monitored reaches the best test accuracy, and at what time?

# %% tags=["nbval-ignore-output"]
BIAS_ITERS, BIAS_EPOCHS = 2, 5  # about 20 s for the three runs
bias = {mode: mgrit_bias_exp.train_monitored(data, mode=mode, iters=BIAS_ITERS, threshold=0.8, epochs=BIAS_EPOCHS,
                                             nh=16) for mode in mgrit_bias_exp.MODES}
print(f"{'epoch':>5} " + " ".join(f"{mode + ' cos / gap / used':>30}" for mode in bias))
for e in range(BIAS_EPOCHS):
    print(f"{e:>5} " + " ".join(f"{r['epochs'][e]['cosine']:>+9.3f} {r['epochs'][e]['norm_gap']:>8.3f} "
                                f"{r['epochs'][e]['used']:>11}" for r in bias.values()))
print(f"{'mode':>8} {'test accuracy':>14} {'seconds':>8} {'switched at epoch':>18}")
for mode, r in bias.items():
    print(f"{mode:>8} {r['accuracy']:>14.2f} {r['seconds']:>8.1f} {str(r['switched_at']):>18}")
cos_ex = [row["cosine"] for row in bias["exact"]["epochs"]]
print(f"along the exact run the probe cosine went from {cos_ex[0]:+.2f} (epoch 0) to {cos_ex[-1]:+.2f} "
      f"(epoch {len(cos_ex) - 1}): " + (f"it fell -- the {BIAS_ITERS}-iteration gradient got worse nearer the minimum"
                                        if cos_ex[-1] < cos_ex[0] - 0.1 else "no clear fall on this run"))
n_te = len(yte)
se = float(np.sqrt(2 * 0.25 / n_te))  # the largest standard error of a difference of two accuracies
d = bias["monitor"]["accuracy"] - bias["inexact"]["accuracy"]
print(f"monitored vs always-inexact: {d:+.2f} in test accuracy on {n_te} sequences, one initialisation -- "
      + ("a difference beyond 2 standard errors (" if abs(d) > 2 * se else "within 2 standard errors (")
      + f"{2 * se:.2f}) of the test sample")

# %% [markdown]
# ## What we learned
#
# - A GRU step is an explicit Euler step of a stiff ODE; on coarse grids ($\gamma = m^\ell$) the
#   explicit step amplifies errors, the **implicit GRU** damps them -- that is what makes MGRIT applicable,
#   and a solver must stop with a clear message when a coarse step is unstable.
# - Two-level MGRIT with F-relaxation is Parareal: exact after at most $N/m$ iterations; FCF and more
#   levels trade work per iteration for fewer iterations and a shorter sequential part.
# - Forward and backward (adjoint) both go through the same solver; a *few* iterations give inexact
#   gradients -- section 8 measured what that costs in accuracy on this task.
# - MGRIT takes several times the serial number of steps (counted in section 5); it pays off only when
#   enough processors share them. The work/span model says how many, and why the speedup grows with $T$
#   when $P$ grows with $T$; the seed's timing also includes per-frame ResNet work that parallelises perfectly.
# - A few-iteration MGRIT gradient can drift from the exact one as training proceeds; a cheap monitor
#   (cosine on a probe batch once per epoch) says when to switch to exact gradients -- section 9 measured it.
# - Data and model parallelism never shorten the chain of $T$ steps; parallel-in-time methods do, at
#   the price of extra work. Chapter 11 attacks the same chain with Newton's method instead.
#
# Worksheet: [exercises/10_mgrit.ipynb](../exercises/10_mgrit.ipynb).
# Next: [11 · Newton in time](11_newton.ipynb).
