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
# # 02 · Backpropagation through time: from O(N²) to O(N)
#
# Training needs $\partial E/\partial W$ for the three weight matrices. The seed paper (§3.1)
# started from a popular tutorial ("WildML") whose backward pass, for **every** output step $t$,
# walks the error all the way back to step 1 -- a double loop, quadratic in the sequence length
# $T$. Their first optimisation was algorithmic, not parallel: reuse the error already pushed back
# from step $t+1$ when handling step $t$, which makes the backward pass **linear** in $T$.
# This chapter builds both, proves they compute the same numbers, and measures the difference.

# %%
import inspect

import numpy as np
import matplotlib.pyplot as plt

import course_lib
from course_lib.models import rnn, gradcheck
from course_lib.core import backend, timing
from course_lib.experiments import bptt as bptt_exp
from course_lib.teaching import widgets, plots
from course_lib.teaching.claims import show
from course_lib.teaching.verdict import verdict
from course_lib.teaching.plots import rnn as rnn_plots

# %% [markdown]
# ## The gradient, step by step
#
# Write $a_t = x_t W_{xh} + h_{t-1}W_{hh}$ (so $h_t = \tanh a_t$) and $o_t = h_t W_{hy}$
# (so $\hat y_t = \tanh o_t$). The seed's equations become, with row vectors:
#
# * output error: $\delta^o_t = \partial E/\partial o_t = 2(\hat y_t - y_t)\odot(1-\hat y_t^2)$, and
#   $\partial E/\partial W_{hy} = \sum_t h_t^\top \delta^o_t$;
# * every $a_s$ with $s \le t$ influences $\hat y_t$, through the chain $a_s \to h_s \to a_{s+1} \to \dots \to a_t$.
#   Pushing an error back one step is $\delta_{s-1} = (\delta_s W_{hh}^\top)\odot(1-h_{s-1}^2)$;
# * each step's share of the weight gradients: $\partial E/\partial W_{xh} \mathrel{+}= x_s^\top \delta_s$,
#   $\partial E/\partial W_{hh} \mathrel{+}= h_{s-1}^\top \delta_s$.
#
# **The double loop** (`rnn.bptt_quadratic`) follows this literally: for each output step $t$ it
# starts a fresh $\delta = (\delta^o_t W_{hy}^\top)\odot(1-h_t^2)$ and walks it back over
# $s = t, t-1, \dots, 0$, adding a term at every $s$. Step $s$ is visited again by every later $t$.
#
# **The sweep** (`rnn.bptt_linear`) notices that the pushes are linear: the errors of all outputs
# $t \ge s$ arriving at step $s$ can be **summed first and pushed back once**. Going backwards it
# carries that sum, `dh_next`, from step $s+1$ to step $s$: one visit per step.

# %% tags=["nbval-ignore-output"]
print(inspect.getsource(rnn.bptt_quadratic).split('"""')[-1])

# %% tags=["nbval-ignore-output"]
print(inspect.getsource(rnn.bptt_linear).split('"""')[-1])

# %% [markdown]
# The same picture as the seed's Figs. 5 and 6: each cell is one "push back one step and add the
# weight terms" -- three matrix products. The double loop fills the triangle; the sweep only the
# diagonal, with the blue arrows carrying the summed error.

# %%
rnn_plots.bptt_work(T=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Proof that they agree
#
# Both functions should return the gradient of the same loss. Checked three ways on several
# shapes: against each other in float32 (round-off only), against each other in float64, and
# against a central-difference numerical gradient in float64 (chapter 01).

# %%
rng = np.random.default_rng(0)
for T, B, nx, nh, ny in [(1, 1, 3, 4, 2), (5, 3, 4, 6, 3), (12, 2, 5, 8, 4)]:
    p64 = rnn.init_params(nx, nh, ny, seed=T, dtype=np.float64)
    X = rng.uniform(-1, 1, (T, B, nx))
    Y = rng.uniform(-1, 1, (T, B, ny))
    lin, quad = rnn.bptt_linear(p64, X, Y), rnn.bptt_quadratic(p64, X, Y)
    num = gradcheck.rnn_numerical_gradients(p64, X, Y)
    p32 = p64.astype(np.float32)
    lin32 = rnn.bptt_linear(p32, X.astype(np.float32), Y.astype(np.float32))
    quad32 = rnn.bptt_quadratic(p32, X.astype(np.float32), Y.astype(np.float32))
    e64 = max(gradcheck.gradient_errors(lin, quad).values())
    e32 = max(gradcheck.gradient_errors(lin32, quad32).values())
    enum = max(max(gradcheck.gradient_errors(lin, num).values()), max(gradcheck.gradient_errors(quad, num).values()))
    print(f"T={T:2d} B={B} nx={nx} nh={nh} ny={ny}:  linear vs quadratic float64 < 1e-12: {e64 < 1e-12}, "
          f"float32 < 1e-5: {e32 < 1e-5};  both vs numerical < 1e-7: {enum < 1e-7}")

# %% [markdown]
# WildML also **truncates** the walk after a few steps (`bptt_truncate`), which caps the cost at
# $O(T \cdot k)$ -- but then it is no longer the gradient of $E$. How far off is it?

# %%
T = 12
p64 = rnn.init_params(5, 8, 4, seed=1, dtype=np.float64)
X, Y = rng.uniform(-1, 1, (T, 2, 5)), rng.uniform(-1, 1, (T, 2, 4))
exact = rnn.bptt_linear(p64, X, Y)
for k in (0, 1, 2, 4, 8, 11):
    errs = gradcheck.gradient_errors(rnn.bptt_quadratic(p64, X, Y, truncate=k), exact)
    shown = {name: f"{e:.1e}" if e > 1e-12 else "< 1e-12" for name, e in errs.items()}
    print(f"truncate={k:2d}: relative error  dWxh {shown['Wxh']:>8}  dWhh {shown['Whh']:>8}  dWhy {shown['Why']:>8}")

# %% [markdown]
# `dWhy` never needs a walk, so it is exact at any truncation; the others converge as the walk
# gets longer (errors shrink with each step because $\tanh' < 1$ and $W_{hh}$ is not large), and
# `truncate = T-1` is exact. The sweep gets the exact gradient at the cost of truncation 0.
#
# ## Counting the work
#
# Per gradient, counting only matrix products (`rnn.bptt_flops`, forward pass included), with
# $n_x=n_h=n_y=n$: the sweep does $16\,Bn^2$ FLOPs per step (forward $6Bn^2$, errors back $4Bn^2$,
# weight gradients $6Bn^2$). The double loop does the same forward pass, $4Bn^2$ per output step
# (`dWhy` and the first $\delta$), and $6Bn^2$ per walk step (`dWhh`, `dWxh` and the push back), over
# $T(T+1)/2$ walk steps. At the seed's sizes ($B = n = 1000$):

# %%
print(f"{'T':>4} {'linear GFLOP':>13} {'quadratic GFLOP':>16} {'ratio':>7}")
for T in (10, 25, 50, 100):
    lin = rnn.bptt_flops(T, 1000, 1000, 1000, 1000, "linear")
    quad = rnn.bptt_flops(T, 1000, 1000, 1000, 1000, "quadratic")
    print(f"{T:>4} {lin / 1e9:>13.0f} {quad / 1e9:>16.0f} {quad / lin:>7.2f}")

# %% [markdown]
# ## Measured: time against T
#
# The seed's claim, from the registry:

# %%
print(show("000.bptt.quadratic"))

# %% [markdown]
# On log–log axes a power law $t \propto T^k$ is a straight line of slope $k$. **Predict:** with a
# small network (n = 32, B = 8), what slopes will the two curves have over T = 8 … 128 -- exactly 1
# and 2, or less? Think about what a call costs *besides* the per-step work (Python, allocating the
# gradient arrays, the forward pass's two big GEMMs).
#
# The BLAS library is limited to **one thread** here (`backend.blas_threads(1)`): with matrices this small,
# threads only add waiting.

# %% tags=["nbval-ignore-output"]
Ts = timing.scaled([8, 16, 32, 64, 128, 256], [8, 16, 32, 64, 128])
n, B = 32, 8
with backend.blas_threads(1):
    rows = bptt_exp.scaling(Ts, n, batch=B, repeat=5)
for r in rows:
    print(f"T={r['T']:4d}: linear {r['linear_s'] * 1e3:8.2f} ms  quadratic {r['quadratic_s'] * 1e3:9.2f} ms  "
          f"ratio {r['ratio']:6.1f}x  (GEMM-FLOP ratio {r['flop_ratio']:.1f})")
noise = rows[0]["noise"]
for r in rows[1:]:
    noise = noise | r["noise"]
lin_t, quad_t = [r["linear_s"] for r in rows], [r["quadratic_s"] for r in rows]
every = bptt_exp.fit_slopes(rows, t_min=Ts[0])
T_FIT = Ts[len(Ts) // 2]                       # the upper half of the range: where the asymptote should hold
upper = bptt_exp.fit_slopes(rows, t_min=T_FIT)
print(f"\nslopes over all T:      sweep {every['linear']:.2f}, double loop {every['quadratic']:.2f}")
print(f"slopes over T >= {T_FIT:<4d}:  sweep {upper['linear']:.2f}, double loop {upper['quadratic']:.2f}")
if not noise.ok:
    print(noise.warning())

# %% tags=["nbval-ignore-output"]
ax = plots.loglog_plot(Ts, {"bptt_linear (sweep)": lin_t, "bptt_quadratic (double loop)": quad_t},
                       xlabel="sequence length T", ylabel="time per gradient (s)", fit_from=T_FIT)
ax.set_title(f"BPTT time vs T (n = {n}, B = {B}), measured now")
plt.show()

# %% [markdown]
# Why the slopes over *all* T come out below 1 and 2: a gradient costs $a + bT$ (sweep) or
# $a + bT + cT^2$ (double loop). The fixed part $a$ -- the call, the arrays, the forward pass's
# batched GEMMs -- does not grow with $T$, and at small $T$ it is a large share of the time, which
# flattens the curve. Over the upper half of the range the growing terms dominate. The verdict
# for the seed's $O(N^2)$ claim, from the upper-half fit:

# %% tags=["nbval-ignore-output"]
fixed_share = lin_t[0] / (Ts[0] * (lin_t[-1] - lin_t[0]) / (Ts[-1] - Ts[0]) + lin_t[0])
print(verdict("000.bptt.quadratic", upper["quadratic"], here=f"n = {n}, B = {B}, T = {T_FIT}..{Ts[-1]}, 1 BLAS thread",
              pivot=None, within=1.25, noise=noise,
              reasons=[(upper["linear"] < 0.8,
                        f"even the sweep grows with slope {upper['linear']:.2f} < 1 here: fixed per-call costs "
                        "still dominate at these T, so both slopes are flattened"),
                       (Ts[-1] < 256, f"the range stops at T = {Ts[-1]} (small budget); the T² term has not taken over yet")]))
print(f"sweep: slope {upper['linear']:.2f} over T >= {T_FIT} (the algorithm's is 1); "
      f"at T = {Ts[0]} the part of the sweep's time that does not grow with T is about {100 * min(1.0, fixed_share):.0f}% "
      "(from the line through the first and last points).")

# %% [markdown]
# ## At the seed's shape
#
# With big matrices the cost is all in the GEMMs, so the measured ratio should track the GEMM-FLOP
# ratio of the table above. Square layers of width `n` and a batch of `n` (the seed uses 1000; a
# smaller `n` keeps this cell quick), at the seed's T = 10 and at T = 25:

# %% tags=["nbval-ignore-output"]
n_seed = timing.scaled(128, 64)
for T in (10, 25):
    d = bptt_exp.bptt_times(T, n_seed, batch=n_seed, repeat=2)
    print(f"T={T:3d}, n=B={n_seed}: sweep {d['linear_s'] * 1e3:7.1f} ms, double loop {d['quadratic_s'] * 1e3:8.1f} ms, "
          f"ratio {d['ratio']:5.1f}x  (GEMM-FLOP ratio {d['flop_ratio']:.1f}; measured/FLOP {d['ratio'] / d['flop_ratio']:.2f})"
          + ("" if d["noise"].ok else "\n  " + d["noise"].warning()))

# %% [markdown]
# ## Try it: a (T, nh) panel
#
# `bptt_exp.bptt_times(T, nh)` (in `course_lib.experiments.bptt`) times both algorithms now and returns the times, their ratio and the
# FLOP ratio; the panel is a thin shell over it. Long sequences and wide layers are capped so a
# slider cannot start a minute-long computation.

# %% tags=["nbval-ignore-output"]
print(sorted(bptt_exp.bptt_times(16, 16, repeat=1)))

# %% tags=["nbval-ignore-output"]
def show_times(d, ax):
    ax.bar(["sweep O(T)", "double loop O(T²)"], [d["linear_s"] * 1e3, d["quadratic_s"] * 1e3],
           color=["tab:green", "tab:red"])
    ax.set_ylabel("time per gradient (ms)")
    return (f"T = {d['T']}, nh = {d['nh']}: sweep {d['linear_s'] * 1e3:.2f} ms, double loop "
            f"{d['quadratic_s'] * 1e3:.2f} ms -> {d['ratio']:.1f}x slower (GEMM-FLOP ratio {d['flop_ratio']:.1f})")

def times_one_thread(T, nh):
    with backend.blas_threads(1):
        return bptt_exp.bptt_times(T, nh, batch=8, repeat=2)

panel = widgets.sweep_panel(
    times_one_thread,
    controls={"T": (2, 200, 2, 32), "nh": (8, 512, 8, 64)},
    render=show_times,
    cost=lambda T, nh: rnn.bptt_flops(T, 8, nh, nh, nh, "quadratic"), max_cost=4e9,
)
panel

# %% [markdown]
# ## What we learned
#
# * Both algorithms compute the exact gradient of $E$ (to round-off; checked against numerical
#   differentiation). Truncating the double loop is cheaper but no longer exact.
# * The double loop redoes the walk back for every output step: $T(T+1)/2$ walk steps, an
#   asymptotic slope of 2 on log–log axes; the sweep sums the errors before pushing them back: $T$
#   steps, slope 1. Measured slopes approach these only where the per-step work outweighs the fixed
#   cost of a call -- the fits above say how close this machine got, and over which range.
# * Compare the measured time ratios with the GEMM-FLOP ratios printed beside them: where the
#   matrices are large the GEMMs set the time; where they are small, Python's per-call overhead on the
#   double loop's many small products shows as the difference.
# * Only the line carrying `dh_next` is sequential in the sweep; the weight gradients are sums over
#   time and batch, one GEMM each. Chapter 03 makes those GEMMs big by batching.
#
# Worksheet: [exercises/02_bptt.ipynb](../exercises/02_bptt.ipynb).
# Next: [03 · batching](03_batching.ipynb).
