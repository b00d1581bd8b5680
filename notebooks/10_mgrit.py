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
# # 09 · Parallel in time: training GRUs with MGRIT
#
# Every chapter so far parallelised *within* a time step (batch, GEMM tiles, threads) or exploited a
# *linear* recurrence (chapter 08). A GRU is nonlinear, so the scan trick does not apply -- yet
# Moon & Cyr (ICLR 2022, seed 002; code in Sandia's *torchbraid*) train GRUs in parallel over the
# sequence with **multigrid reduction in time (MGRIT)**, the algorithm of XBraid and PyMGRIT. The idea:
#
# 1. read the GRU update as one step of an ODE solver, so a *coarse* grid with bigger steps makes sense;
# 2. the classic GRU is an *explicit* step, unstable for big steps -- use an **implicit GRU** instead;
# 3. iterate: cheap parallel sweeps on the fine grid + a sequential solve on a grid `m` times shorter.
#
# The seed reports "up to 6.6× speedup over the Classic GRU" and "little difference in test accuracy".
# We build it all in `course_lib/mgrit.py` (generic solver), `course_lib/gru.py` (cells, forward and
# backward through MGRIT) and `course_lib/mgrit_mpi.py` (the same solver over MPI ranks).

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

from course_lib.data import activity
from course_lib.core import backend, timing
from course_lib.models import gru
from course_lib.algorithms import mgrit
from course_lib.teaching import widgets
from course_lib.teaching.plots import mgrit as mplots

T_SPEED = timing.scaled(1024, 256)  # sequence length for the timing cell (a budget knob: timing only)
H_SPEED = 64

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
# whose error factor $1/(1+\gamma(1-z))$ is below 1 for *every* $\gamma$. Both live in `gru.gru_cell`.

# %%
params = gru.init_params(3, 8, seed=0, dtype=np.float64)
rng = np.random.default_rng(0)
x = rng.standard_normal((4, 3))
h = rng.standard_normal((4, 8))
gi = gru.input_projection(params, x[None])[0]
r, z, n, _ = gru._gates(params, gi, h)
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
# sequence with $M = 16$: the explicit (classic) step blows up, the implicit one stays bounded.

# %%
X_demo = np.random.default_rng(1).standard_normal((1024, 4, 3))
traj_exp = gru.coarse_trajectory(params, X_demo, implicit=False, M=16)
traj_imp = gru.coarse_trajectory(params, X_demo, implicit=True, M=16)
mplots.plot_coarse_blowup(traj_exp, traj_imp, M=16)
plt.show()
big = np.abs(traj_exp).reshape(len(traj_exp), -1).max(axis=1)
print(f"explicit coarse step: max|h| > 1e6 after {int(np.argmax(~(big < 1e6)))} coarse steps; "
      f"implicit: max|h| = {np.abs(traj_imp).max():.3f} (bounded by 1, like tanh)")

# %% [markdown]
# Inside MGRIT the blow-up is caught: the solver stops with a message naming the iteration and the first
# non-finite time point, never returning NaN.

# %%
try:
    gru.gru_forward(params, X_demo, implicit=False, solver="mgrit", m=16, levels=2, max_iter=5)
except mgrit.MGRITDivergence as exc:
    print(type(exc).__name__ + ":", exc)
H_ok = gru.gru_forward(params, X_demo, implicit=True, solver="mgrit", m=16, levels=2, max_iter=5, tol=1e-10)
print("implicit GRU through MGRIT, m=16: max |H - serial| < 1e-8:",
      np.abs(H_ok - gru.gru_forward(params, X_demo, implicit=True)).max() < 1e-8)

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
# More levels apply the same idea to the coarse solve (a V-cycle). Read `MGRIT.solve_level` and
# `MGRIT.correct_c_values` in `course_lib/mgrit.py` -- each is a dozen lines.

# %%
mplots.draw_two_level_cycle(nt=16, m=4)
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
# The factor $\rho$ = average residual reduction per iteration (two levels, F-relaxation). Small
# $|\lambda\Delta t|$ (slow modes) and very stiff modes converge fast; the hardest are in between,
# and larger $m$ (a coarser, cheaper coarse grid) converges more slowly there.

# %%
tab = mgrit.convergence_table(ms=(2, 4, 8, 16), lam_dts=(-0.01, -0.1, -1.0, -10.0), nt=256, relax="F", max_iter=6)
print("   m | " + " | ".join(f"λΔt={v:>6}" for v in tab["lam_dts"]))
for m_, row in zip(tab["ms"], tab["rho"]):
    print(f"{m_:>4} | " + " | ".join(f"{v:>10.3f}" for v in row))

# %% [markdown]
# ### Convergence histories vs m, levels and relaxation
#
# Now the nonlinear case: the implicit GRU (H = 16, float64, T = 256). FCF costs about twice an F
# sweep but converges much faster; more levels make the sequential part shorter but the
# coarse correction rougher.

# %%
pg = gru.init_params(4, 16, seed=2, dtype=np.float64)
Xg = np.random.default_rng(2).standard_normal((256, 8, 4))
fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
hists = {m_: gru.gru_forward(pg, Xg, implicit=True, solver="mgrit", m=m_, levels=2, relax="FCF", max_iter=10,
                             tol=1e-12, return_history=True)[1] for m_ in (2, 4, 8, 16)}
mplots.plot_histories(hists, ax=axes[0], title="vs m (2 levels, FCF)")
hl = {L: gru.gru_forward(pg, Xg, implicit=True, solver="mgrit", m=4, levels=L, relax="FCF", max_iter=10,
                         tol=1e-12, return_history=True)[1] for L in (2, 3, 4)}
mplots.plot_histories(hl, ax=axes[1], title="vs levels (m=4, FCF)", label_fmt="{} levels")
hr = {rx: gru.gru_forward(pg, Xg, implicit=True, solver="mgrit", m=4, levels=2, relax=rx, max_iter=10,
                          tol=1e-12, return_history=True)[1] for rx in ("F", "FCF", "FCFCF")}
mplots.plot_histories(hr, ax=axes[2], title="vs relaxation (m=4, 2 levels)", label_fmt="{}")
plt.tight_layout()
plt.show()
for name, d in (("m", hists), ("levels", hl), ("relax", hr)):
    print(f"iterations to reach 1e-6 vs {name}:",
          {k: next((i + 1 for i, v in enumerate(h) if v < 1e-6), ">10") for k, h in d.items()})

# %% [markdown]
# Try it yourself on Dahlquist's problem (the slider calls `mgrit.convergence_histories`):

# %% tags=["nbval-ignore-output"]
def _render(data, ax):
    mplots.plot_histories(data["histories"], ax=ax)
    return "convergence factor per iteration: " + ", ".join(f"m={k}: {v:.3f}" for k, v in data["factors"].items())


widgets.sweep_panel(
    lambda m, levels, relax, lam_dt: mgrit.convergence_histories(ms=(m,), levels=levels, relax=relax, lam_dt=lam_dt,
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
# contraction (`gru.gru_backward`). Both agree with the exact serial backward:

# %%
Xb = np.random.default_rng(3).standard_normal((128, 4, 4))
Hs = gru.gru_forward(pg, Xb, implicit=True)
dH = np.zeros_like(Hs)
dH[-1] = 1.0  # L = sum of the last hidden state
gs, dh0s = gru.gru_backward(pg, Xb, Hs, dH, implicit=True)
Hm, hf = gru.gru_forward(pg, Xb, implicit=True, solver="mgrit", m=4, levels=3, max_iter=20, tol=1e-12, return_history=True)
gm, dh0m, hb = gru.gru_backward(pg, Xb, Hs, dH, implicit=True, solver="mgrit", m=4, levels=3, max_iter=20, tol=1e-12,
                                return_history=True)
print(f"forward : {len(hf)} iterations, max |H_mgrit - H_serial| < 1e-10: {np.abs(Hm - Hs).max() < 1e-10}")
print(f"backward: {len(hb)} iterations, max grad difference < 1e-9: {max(np.abs(gm[k] - gs[k]).max() for k in gs) < 1e-9}")
# with only a few iterations (as in training) the gradient is inexact:
for k_it in (1, 2, 3, 5):
    gk, _ = gru.gru_backward(pg, Xb, Hs, dH, implicit=True, solver="mgrit", m=4, levels=3, max_iter=k_it)
    rel = max(np.abs(gk[k] - gs[k]).max() / np.abs(gs[k]).max() for k in gs)
    print(f"{k_it} iteration(s): relative gradient error {rel:.1e}")

# %% [markdown]
# ## 5 · Speed: measured here, and a model of many processors
#
# Measured on this machine: MGRIT does several times *more* steps than the serial march (each
# iteration sweeps the fine grid about twice), and there are only a few cores to share them. So
# here it is a **slowdown** -- honestly measured:

# %% tags=["nbval-ignore-output"]
ps = gru.init_params(8, H_SPEED, seed=0)
Xs = np.random.default_rng(4).standard_normal((T_SPEED, 16, 8)).astype(np.float32)
opts = dict(implicit=True, solver="mgrit", m=4, levels=3, relax="FCF", max_iter=2)
from threadpoolctl import threadpool_limits

with threadpool_limits(limits=1, user_api="blas"):  # per-step GEMMs are tiny: parallelise over time instead
    cmp = timing.compare(serial=lambda: gru.gru_forward(ps, Xs, implicit=True),
                         mgrit_1thread=lambda: gru.gru_forward(ps, Xs, **opts),
                         mgrit_threads=lambda: gru.gru_forward(ps, Xs, workers=backend.cpu_count(), **opts),
                         repeat=3)
print(f"T = {T_SPEED}, H = {H_SPEED}, B = 16, 2 MGRIT iterations, {backend.cpu_count()} cores")
print(cmp.table())
measured = cmp.speedup("mgrit_threads")
model_here = mgrit.span_model(T_SPEED, m=4, levels=3, iters=2, P=backend.cpu_count())["speedup"]
print(f"measured speedup of MGRIT (threads) over serial: {measured:.2f}x   |   work/span model at P={backend.cpu_count()}: {model_here:.2f}x   |   seed: up to 6.6x (on many cores)")

# %% [markdown]
# Why do the threads not help even with 2 cores? Each step is a handful of small numpy calls
# (B × H × 3H GEMM, a few element-wise passes) and Python holds the GIL between and during most of them,
# so two threads mostly take turns. MPI ranks are separate processes without that limit (section 6),
# but pay start-up and communication. Either way the 2-3× extra work of MGRIT has to be won back
# by many processors -- which is what the model below counts.
#
# The **work/span model** (`mgrit.span_model`) counts the time steps on the critical path when the
# C-intervals of each level are spread over $P$ processors: F-sweeps cost $\lceil C_\ell/P\rceil (m-1)$
# steps, C-sweeps and residuals $\lceil C_\ell/P\rceil$ (+1 for the boundary exchange), and the coarsest
# level is a sequential march. Speedup = serial steps / critical-path steps. It is a **model**: no
# communication bandwidth, no cache effects, each step costs the same.

# %%
Ps = np.unique(np.logspace(0, np.log10(512), 40).astype(int))
curves = {}
for T_, L_ in ((128, 2), (128, 3), (4096, 3), (4096, 4)):
    curves[f"T={T_}, m=4, {L_} levels, 2 iters"] = mgrit.speedup_model(T_, Ps, m=4, levels=L_, iters=2)
ax = mplots.plot_speedup_model(Ps, curves, seed_speedup=6.6, measured={f"T={T_SPEED}, {backend.cpu_count()} cores": (backend.cpu_count(), measured)})
ax.axhline(6.5, color="tab:orange", ls=":", lw=1, label="seed paper abstract: 6.5x")
ax.legend(fontsize=7, loc="upper left")
plt.tight_layout()
plt.show()
print("model speedup (T=4096, m=4, FCF, 2 iterations):")
for L_ in (2, 3, 4):
    row = [mgrit.span_model(4096, m=4, levels=L_, iters=2, P=P)["speedup"] for P in (1, 16, 64, 256)]
    print(f"  {L_} levels: " + "  ".join(f"P={P}: {s:5.2f}x" for P, s in zip((1, 16, 64, 256), row)))

# %% [markdown]
# The star is our measurement (section 5, a different T and fewer cores than the curves). The model
# says what the seed found: with hundreds of processors and few iterations, the sequential coarse
# march is the limit, and several levels are needed to go past a few-fold speedup.

# %% [markdown]
# ## 6 · The same solver over MPI ranks
#
# `course_lib/mgrit_mpi.py` splits the fine grid's C-intervals into contiguous blocks, one per rank;
# F-relaxation is local, C-relaxation and residuals exchange one boundary state with the neighbour,
# and the coarse levels run on rank 0. We launch `mpiexec -n 2` as a subprocess (with a timeout) and
# compare with the serial MGRIT:

# %% tags=["nbval-ignore-output"]
ok, why = backend.mpi_available()
if ok:
    from course_lib.parallel import mgrit_mpi

    Xm = np.random.default_rng(5).standard_normal((128, 4, 4))
    h0 = np.zeros((4, 16))
    mopts = dict(m=4, levels=2, relax="FCF", max_iter=3, tol=0.0)
    U_mpi, hist_mpi, info = mgrit_mpi.launch({"kind": "gru", "params": pg, "X": Xm, "h0": h0, "implicit": True},
                                             128, ranks=2, timeout=120, **mopts)
    H_ser, hist_ser = gru.gru_forward(pg, Xm, h0, implicit=True, solver="mgrit", return_history=True, **mopts)
    print(f"2 ranks: max |U_mpi - U_serial MGRIT| = {np.abs(U_mpi[1:] - H_ser).max():.1e}, "
          f"residuals {['%.2e' % v for v in hist_mpi]} vs serial {['%.2e' % v for v in hist_ser]}; "
          f"wall {info['wall_s']:.2f} s including MPI start-up")
    try:
        mgrit_mpi.launch({"kind": "dahlquist", "lam": -1.0, "dt": 0.1, "u0": [1.0]}, 64, ranks=2, fail_rank=1, timeout=60)
    except mgrit_mpi.MPIRankError as exc:
        print("a failing rank is named:", str(exc).splitlines()[0])
else:
    print("MPI is not available here:", why)

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
      gru.gru_forward(pg, Xg[:100], implicit=True, solver="mgrit", m=4, levels=3, max_iter=2).shape)

# %% [markdown]
# ## 7 · Training: classic vs implicit vs MGRIT implicit
#
# The task: synthetic "activity" sequences (`course_lib.data.activity`: 3 noisy channels, the class --
# rest, walk, run, jump -- is a rhythm spread over the whole sequence). GRU → last hidden state →
# linear → softmax, Adam, a few epochs on short sequences so the cell stays fast. The MGRIT model is
# trained with only 3 FCF iterations per forward and per backward solve (the paper also stops after
# a few: inexact, but cheaper) and evaluated with the exact serial implicit forward.

# %% tags=["nbval-ignore-output"]
from tqdm.auto import tqdm

Xtr, ytr, Xte, yte = activity.train_test(256, 128, 128, seed=0)
Xtr, Xte = Xtr.astype(np.float64), Xte.astype(np.float64)
runs = {"classic GRU (serial)": dict(implicit=False),
        "implicit GRU (serial)": dict(implicit=True),
        "implicit GRU (MGRIT, 3 iters)": dict(implicit=True, solver="mgrit", m=4, levels=2, relax="FCF", max_iter=3)}
results = {}
for name, kw in runs.items():
    t0 = time.perf_counter()
    p0 = gru.init_classifier(3, 16, 4, seed=0, dtype=np.float64)
    trained, losses = gru.train_classifier(p0, Xtr, ytr, epochs=5, batch=32, lr=2e-2, seed=0,
                                           progress=lambda it, name=name: tqdm(it, desc=name, leave=False), **kw)
    acc = float(np.mean(gru.classifier_predict(trained, Xte, implicit=kw["implicit"]) == yte))
    results[name] = (losses[-1], acc, time.perf_counter() - t0)
    print(f"{name:<32} {results[name][2]:5.1f} s")

# %%
print(f"{'model':<32} {'final loss':>10} {'test accuracy':>14}")
for name, (loss, acc, _) in results.items():
    print(f"{name:<32} {loss:>10.2f} {acc:>14.2f}")
print("seed: serial classic, serial implicit and parallel implicit GRU 'make little difference in test accuracy'")

# %% [markdown]
# ## What we learned
#
# - A GRU step is an explicit Euler step of a stiff ODE; on coarse grids ($\gamma = m^\ell$) it blows up,
#   the **implicit GRU** does not -- that is what makes MGRIT applicable.
# - Two-level MGRIT with F-relaxation is Parareal: exact after at most $N/m$ iterations; FCF and more
#   levels trade work per iteration for fewer iterations and a shorter sequential part.
# - Forward and backward (adjoint) both go through the same solver; a few (here 3) iterations give
#   gradients good enough to train to the same accuracy.
# - On 2 cores MGRIT is slower than the serial march (it does more work); the work/span model shows where
#   the seed's 6.6× comes from -- hundreds of processors, few iterations, several levels.
#
# This is the last chapter. Worksheet: `exercises/10_mgrit.ipynb`; back to the [roadmap](00_setup.ipynb).
