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
from threadpoolctl import threadpool_limits

import course_lib
from course_lib.models import rnn, gradcheck
from course_lib.core import timing
from course_lib.teaching import widgets, plots
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
# Per gradient, counting only matrix products (`rnn.bptt_flops`, forward pass included): the sweep
# does 16 $B n^2$ FLOPs per step when $n_x=n_h=n_y=n$; the double loop does $2Bn^2$ per output step
# plus $6Bn^2$ per walk step, and there are $T(T+1)/2$ walk steps. At the seed's sizes
# ($B = n = 1000$):

# %%
print(f"{'T':>4} {'linear GFLOP':>13} {'quadratic GFLOP':>16} {'ratio':>7}")
for T in (10, 25, 50, 100):
    lin = rnn.bptt_flops(T, 1000, 1000, 1000, 1000, "linear")
    quad = rnn.bptt_flops(T, 1000, 1000, 1000, 1000, "quadratic")
    print(f"{T:>4} {lin / 1e9:>13.0f} {quad / 1e9:>16.0f} {quad / lin:>7.2f}")

# %% [markdown]
# ## Measured: time against T
#
# Now the clock. A small network (n = 32, B = 8) so that the sweep's per-step cost is tiny and the
# difference is all about how many steps each algorithm takes. On log–log axes a power law
# $t \propto T^k$ is a straight line of slope $k$: we expect about 1 for the sweep and about 2 for
# the double loop (less at small T, where its linear part still counts).
#
# The BLAS library is limited to **one thread** here (`threadpoolctl`): with matrices this small,
# threads only add waiting -- and on a busy machine a multi-threaded product can stall while one of
# its threads waits for a free core, which would blur the picture we are after.

# %% tags=["nbval-ignore-output"]
Ts = timing.scaled([8, 16, 32, 64, 128], [8, 16, 32, 64])
n, B = 32, 8
params = rnn.init_params(n, n, n, seed=0)
rng = np.random.default_rng(1)
Xb = rng.uniform(-1, 1, (max(Ts), B, n)).astype(np.float32)
Yb = rng.uniform(-1, 1, (max(Ts), B, n)).astype(np.float32)
lin_t, quad_t = [], []
for T in Ts:
    with threadpool_limits(limits=1, user_api="blas"):
        c = timing.compare(linear=lambda: rnn.bptt_linear(params, Xb[:T], Yb[:T]),
                           quadratic=lambda: rnn.bptt_quadratic(params, Xb[:T], Yb[:T]), repeat=5)
    lin_t.append(c.timings["linear"].min)
    quad_t.append(c.timings["quadratic"].min)
    print(f"T={T:4d}: linear {lin_t[-1] * 1e3:8.2f} ms  quadratic {quad_t[-1] * 1e3:9.2f} ms  ratio {quad_t[-1] / lin_t[-1]:6.1f}x"
          f"  (GEMM-FLOP ratio {rnn.bptt_flops(T, B, n, n, n, 'quadratic') / rnn.bptt_flops(T, B, n, n, n):.1f})")
slope_lin = timing.loglog_slope(Ts, lin_t)
slope_quad = timing.loglog_slope(Ts[len(Ts) // 2 - 1:], quad_t[len(Ts) // 2 - 1:])

# %% tags=["nbval-ignore-output"]
ax = plots.loglog_plot(Ts, {"bptt_linear (sweep)": lin_t, "bptt_quadratic (double loop)": quad_t},
                       xlabel="sequence length T", ylabel="time per gradient (s)")
ax.set_title(f"BPTT time vs T (n = {n}, B = {B}), measured now")
plt.show()

# %% tags=["nbval-ignore-output"]
print(f"fitted slopes on this machine: sweep {slope_lin:.2f}, double loop {slope_quad:.2f} (over the larger T)")
print("seed: the WildML algorithm is O(N^2) and theirs is O(N) in the number of time steps (slopes 2 and 1;")
print("      the report shows the two schemes as Figs. 5-6 and gives no timings for them)")

# %% [markdown]
# ## At the seed's shape
#
# With big matrices the cost is all in the GEMMs, so the measured ratio should track the GEMM-FLOP
# ratio of the table above. Square layers of width `n` and a batch of `n` (the seed uses 1000; a
# smaller `n` keeps this cell quick), at the seed's T = 10 and at T = 25:

# %% tags=["nbval-ignore-output"]
n_seed = timing.scaled(128, 64)
for T in (10, 25):
    d = rnn.bptt_times(T, n_seed, B=n_seed, repeat=2)
    print(f"T={T:3d}, n=B={n_seed}: sweep {d['linear_s'] * 1e3:7.1f} ms, double loop {d['quadratic_s'] * 1e3:8.1f} ms, "
          f"ratio {d['ratio']:5.1f}x  (GEMM-FLOP ratio {d['flop_ratio']:.1f})")

# %% [markdown]
# ## Try it: a (T, nh) panel
#
# `rnn.bptt_times(T, nh)` times both algorithms now and returns the times, their ratio and the
# FLOP ratio; the panel is a thin shell over it. Long sequences and wide layers are capped so a
# slider cannot start a minute-long computation.

# %% tags=["nbval-ignore-output"]
print(sorted(rnn.bptt_times(16, 16, repeat=1)))

# %% tags=["nbval-ignore-output"]
def show_times(d, ax):
    ax.bar(["sweep O(T)", "double loop O(T²)"], [d["linear_s"] * 1e3, d["quadratic_s"] * 1e3],
           color=["tab:green", "tab:red"])
    ax.set_ylabel("time per gradient (ms)")
    return (f"T = {d['T']}, nh = {d['nh']}: sweep {d['linear_s'] * 1e3:.2f} ms, double loop "
            f"{d['quadratic_s'] * 1e3:.2f} ms -> {d['ratio']:.1f}x slower (GEMM-FLOP ratio {d['flop_ratio']:.1f})")

def times_one_thread(T, nh):
    with threadpool_limits(limits=1, user_api="blas"):
        return rnn.bptt_times(T, nh, B=8, repeat=2)

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
# * The double loop redoes the walk back for every output step: $T(T+1)/2$ walk steps, time
#   slope ≈ 2 on log–log axes. The sweep sums the errors before pushing them back: $T$ steps, slope ≈ 1.
# * Measured ratios track the GEMM-FLOP ratios when matrices are large; with small matrices
#   Python's per-call overhead adds to the double loop's many small products.
# * Only the line carrying `dh_next` is sequential in the sweep; the weight gradients are sums over
#   time and batch, one GEMM each. Chapter 03 makes those GEMMs big by batching.
#
# Next: [03 · batching](03_batching.ipynb).
