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
# # 03 · Batching: from matrix-vector to matrix-matrix products
#
# The seed paper (Han & Uboweja, §3.2 item 1 and §4.3) lists batching as its first optimisation:
# *"Having matrix-matrix multiplication is faster than a lot of small matrix-vector
# multiplication due to spatial locality and temporal locality."* Its Fig. 9 shows the training
# time per sample falling as the batch grows over its range (printed below from the course's
# registry of seed claims).
#
# This chapter measures why -- and where it stops. An RNN that reads **one sequence at a time** computes
#
# $$h_t = \tanh(x_t W_{xh} + h_{t-1} W_{hh}), \qquad x_t \in \mathbb{R}^{1\times n_x},\; h_{t-1} \in \mathbb{R}^{1\times n_h}$$
#
# with single rows: matrix-**vector** products (GEMV). Stack $B$ sequences as the rows of
# $X_t \in \mathbb{R}^{B\times n_x}$ and the very same arithmetic becomes a matrix-**matrix**
# product (GEMM) -- each weight, once fetched, is used $B$ times instead of once.

# %%
import numpy as np

import course_lib  # noqa: F401  (first: it sets up numba's CUDA mode)
from course_lib.experiments import batching as batching_exp
from course_lib.models import rnn
from course_lib.core import timing
from course_lib.teaching import claims, plots, widgets
from course_lib.teaching.plots import perf as perf_plots

print(claims.show("000.ch03.fig9.batch_min", "000.ch03.s43.small_workload"))

# %% [markdown]
# ## A small drawn example
#
# Three sequences of four steps, 5 inputs, 6 hidden units, 2 outputs. Batched, every time step is
# one product of a $(B, n_x) = (3, 5)$ block with $W_{xh}$; unbatched, it is three products of a
# $(1, 5)$ row. `batching_exp.forward_one_at_a_time` is the unbatched loop (open
# `course_lib/experiments/batching.py`); `rnn.forward` from chapter 01 is the batched one.

# %%
params = rnn.init_params(5, 6, 2, seed=0, dtype=np.float64)
X = np.random.default_rng(0).uniform(-1, 1, (4, 3, 5))          # (T, B, nx)
print("X_t of one time step, all sequences:", X[0].shape, "-> one GEMM (3, 5) @ (5, 6)")
print("x_t of one sequence:                ", X[0, 0].shape, "  -> one GEMV (5,) @ (5, 6), three times")
H_loop, Yhat_loop = batching_exp.forward_one_at_a_time(params, X)
cache = rnn.forward(params, X)
print("same hidden states:", np.allclose(H_loop, cache.H, rtol=1e-12, atol=1e-12),
      "| same outputs:", np.allclose(Yhat_loop, cache.Yhat, rtol=1e-12, atol=1e-12))

# %% [markdown]
# ## Counting: FLOPs, bytes, arithmetic intensity
#
# One recurrent step $x_t W_{xh} + h_{t-1} W_{hh}$ for $B$ sequences does $2B(n_x+n_h)n_h$ FLOPs
# and must move at least the two weight matrices, the inputs and the outputs:
# $4\,(n_x n_h + n_h^2 + B n_x + 2 B n_h)$ bytes in float32. The weights dominate until $B$ is
# large, so the intensity grows roughly like $B/2$ FLOP/byte.

# %%
n = 1000
print(f"{'B':>5} {'MFLOP':>9} {'MB moved':>9} {'FLOP/byte':>10}")
for B in (1, 10, 100, 1000):
    print(f"{B:>5} {batching_exp.rnn_step_flops(B, n, n) / 1e6:>9.1f} "
          f"{batching_exp.rnn_step_bytes(B, n, n) / 1e6:>9.2f} "
          f"{batching_exp.rnn_step_intensity(B, n, n):>10.2f}")

# %% [markdown]
# At $B = 1$ the step does half a FLOP per byte of weights it reads. The measured **roofline**
# (chapter 00) turns an intensity into a speed limit: $\min(\text{peak}, I \times \text{bandwidth})$,
# where the bandwidth is DRAM's, measured by streaming a large array. Let us measure the machine's two
# numbers and the two kinds of product: $B$ separate GEMVs against one GEMM of the same FLOPs.
#
# **Predict** before you run: will the $B$ GEMVs land on the roofline's slanted (bandwidth) part,
# below it, or above it?

# %% tags=["nbval-ignore-output"]
bw = timing.copy_bandwidth()
caches = batching_exp.cache_sizes()
g = batching_exp.gemv_vs_gemm(n=timing.scaled(1000, 512), batch=timing.scaled(256, 128), repeat=5)
peak = max(timing.peak_gflops(), g["gemm_gflops"])  # a busy moment can only make a measured peak too low
if peak > timing.peak_gflops():
    print("(the GEMM below ran above the peak measured earlier: the machine's load changed; the higher rate is the peak)")
print(f"measured GEMM peak {peak:.1f} GFLOP/s, DRAM streaming bandwidth {bw:.1f} GB/s, caches "
      + ", ".join(f"{k} {v / 2**10:g} KiB" if v < 2**20 else f"{k} {v / 2**20:g} MiB" for k, v in caches.items()))
print(f"{g['B']} GEMVs ({g['n']}x{g['n']}): {g['gemv_s'] * 1e3:7.2f} ms = {g['gemv_gflops']:6.1f} GFLOP/s "
      f"(intensity {g['gemv_intensity']:.2f}, DRAM roofline bound {g['gemv_bound_gflops']:.1f})")
print(f"one GEMM (B={g['B']}):      {g['gemm_s'] * 1e3:7.2f} ms = {g['gemm_gflops']:6.1f} GFLOP/s "
      f"(intensity {g['gemm_intensity']:.1f}, roofline bound {g['gemm_bound_gflops']:.1f})")
gemm_faster = g["noise"].faster("gemm", over="gemv")  # "yes" / "no" / "cannot tell", from the interleaved pairs
if gemm_faster == "cannot tell":
    print("same FLOPs; these pairs cannot tell whether the GEMM is faster"
          + (": " + "; ".join(g["noise"].said) if g["noise"].said else ""))
else:
    print(f"same FLOPs, GEMM takes {g['gemm_s'] / g['gemv_s']:.3g}x the GEMVs' time: "
          + ("faster in every pair's interval" if gemm_faster == "yes" else "not faster here"))
above = g["gemv_gflops"] > 1.1 * g["gemv_bound_gflops"]
if not g["noise"].ok:
    print(g["noise"].warning())
elif above:
    print(f"The GEMVs ran ABOVE the DRAM roof: W is {g['w_bytes'] / 2**20:.1f} MiB and fits in {g['w_level']}, so "
          f"after the first GEMV the other {g['B'] - 1} read W from that cache, not from DRAM.")
else:
    print(f"The GEMVs ran at or below the DRAM roof: W ({g['w_bytes'] / 2**20:.1f} MiB, fits in: {g['w_level']}) "
          "was streamed at memory speed.")

# %% [markdown]
# Same numbers out, too (float32 round-off only -- the two products may add in different orders):

# %%
print("GEMV loop and GEMM agree to 1e-3:", g["max_abs_diff"] < 1e-3)

# %% tags=["nbval-ignore-output"]
ax = plots.roofline_plot(peak, bw, [(g["gemv_intensity"], g["gemv_gflops"], f"{g['B']} GEMVs"),
                                    (g["gemm_intensity"], g["gemm_gflops"], f"one GEMM, B={g['B']}")])
ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
ax.set_title("GEMV vs GEMM on this machine's measured (DRAM) roofline");

# %% [markdown]
# ## Cache residency: bandwidth-bound on *which* memory?
#
# "Bandwidth-bound" is only half a statement: bound by the bandwidth of the memory the data lives
# in. A roofline drawn with DRAM's bandwidth assumes every byte comes from DRAM. But a GEMV run again
# and again on the same `W` -- exactly what the loop over $B$ sequences does -- reads `W` from a cache
# whenever `W` fits in one, and caches deliver many times DRAM's bandwidth. A point can then sit
# *above* the DRAM roof without breaking any law: it is under the cache's roof.
#
# `batching_exp.gemv_residency` times one GEMV (one BLAS thread) with matrices from a few hundred KiB
# (inside L2) to far beyond the last-level cache. **Predict**: how does the bandwidth change as the
# working set crosses each cache size?

# %% tags=["nbval-ignore-output"]
res = batching_exp.gemv_residency(timing.scaled((256, 512, 1024, 2048, 4096, 8192), (256, 1024, 4096)), repeat=5)
for n, ws, lvl, gf, gb in zip(res["n"], res["working_set"], res["level"], res["gflops"], res["gbps"]):
    print(f"n = {n:>5}: working set {ws / 2**20:8.2f} MiB -> fits in {lvl:<4}  {gb:6.1f} GB/s  ({gf:5.1f} GFLOP/s)")
print(f"DRAM streaming bandwidth (copy): {res['dram_gbps']:.1f} GB/s")
inside = [b for b, lvl in zip(res["gbps"], res["level"]) if lvl != "DRAM"]
outside = [b for b, lvl in zip(res["gbps"], res["level"]) if lvl == "DRAM"]
if not res["noise"].ok:
    print(res["noise"].warning())
elif inside and outside:
    print(f"measured: in cache {max(inside):.0f} GB/s at best, from DRAM {max(outside):.0f} GB/s at best "
          f"({max(inside) / max(outside):.1f}x): the same GEMV, a different memory behind it.")
else:
    print("this sweep stayed on one side of the last cache: widen `sizes` to see both regimes")

# %% tags=["nbval-ignore-output"]
perf_plots.residency_plot(res);

# %% [markdown]
# So the GEMV's roof depends on where $W$ lives. The chapter's $n = 1000$ float32 weights are 4 MB:
# the "fits in" column above says which memory holds them on this machine. Batching still wins -- a GEMM reuses each loaded weight $B$
# times *in registers and L1*, which no cache level can match -- but "a single sequence waits for
# DRAM" is only true once the weights outgrow the last-level cache.
#
# ## Time per sample against the batch size (seed Fig. 9)
#
# The seed trained with batches over its range at $n = 1000$ and normalised each epoch's time by
# the data-set size. We do the same with one training step of chapter 05's fast step
# (`fast_rnn.train_step`): time one step on $B$ sequences, divide by $B$, from $B = 1$ (one
# sequence at a time) to the seed's largest batch. (Sizes shrink when `COURSE_BUDGET=small`.)
#
# **Predict**: over the seed's own range -- from its smallest batch to its largest -- does the time
# per sequence still fall here?

# %% tags=["nbval-ignore-output"]
width = timing.scaled(1000, 128)
b_lo, b_hi = (int(claims.CLAIMS[k].value) for k in ("000.ch03.fig9.batch_min", "000.ch03.fig9.batch_max"))
seed_range = timing.scaled((b_lo, 200, 400, 700, b_hi), (10, 40, 100))
batches = timing.scaled((1, 10), (1, 4)) + seed_range
sweep = batching_exp.time_per_sample(batches, width=width, T=10, method="fast", repeat=2)
peak = max(peak, sweep["gflops"].max())
for b, s, gf, ai in zip(sweep["batch"], sweep["per_sample_s"], sweep["gflops"], sweep["intensity"]):
    print(f"B = {b:>4}: {s * 1e3:8.3f} ms per sequence, {gf:6.1f} GFLOP/s, intensity {ai:6.1f} FLOP/byte")
ridge = peak / bw
i0, i1 = list(sweep["batch"]).index(seed_range[0]), len(sweep["batch"]) - 1
fall_range = sweep["per_sample_s"][i0] / sweep["per_sample_s"][i1]
fall_all = sweep["per_sample_s"][0] / sweep["per_sample_s"].min()
print(f"\nfrom B = 1 to the best batch: {fall_all:.1f}x cheaper per sequence")
print(f"over the seed's range (B = {seed_range[0]} -> {seed_range[-1]}): {fall_range:.2f}x")
if not sweep["noise"].ok:
    print(sweep["noise"].warning())
elif fall_range < 1.25:
    print(f"flat over the seed's range: at B = {seed_range[0]} a recurrent step already has intensity "
          f"{sweep['intensity'][i0]:.0f} FLOP/byte, above this machine's ridge point ({ridge:.1f}), so every point "
          f"of the range is compute-bound and costs the same FLOPs per sequence; the step runs at "
          f"{sweep['gflops'][i0]:.0f}-{sweep['gflops'][i1]:.0f} GFLOP/s of a {peak:.0f} GFLOP/s peak.")
elif sweep["intensity"][i0] < ridge:
    print(f"still falling over the range: at B = {seed_range[0]} a recurrent step has intensity "
          f"{sweep['intensity'][i0]:.1f} FLOP/byte, below this machine's ridge point ({ridge:.1f}): the start of the "
          "range is still bandwidth-bound, and batching raises the intensity.")
else:
    print(f"still falling over the range although it is compute-bound throughout (intensity "
          f"{sweep['intensity'][i0]:.0f} FLOP/byte at B = {seed_range[0]}, ridge {ridge:.1f}): the step reaches "
          f"{sweep['gflops'][i0]:.0f} GFLOP/s at B = {seed_range[0]} but {sweep['gflops'][i1]:.0f} at B = "
          f"{seed_range[-1]} -- the kernel, not memory, gets better with bigger matrices.")

# %% tags=["nbval-ignore-output"]
import matplotlib.pyplot as plt

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 3.6))
perf_plots.per_sample_plot(sweep, ax=ax1, title=f"B = 1 ... {seed_range[-1]} (log-log)")
sub = {k: (v[i0:] if isinstance(v, np.ndarray) else v) for k, v in sweep.items()}
perf_plots.per_sample_plot(sub, ax=ax2, log_batch=False, title="the seed's range, linear axes from 0")
fig.tight_layout()

# %% [markdown]
# The seed's curve fell over this range on its Halide code; ours may be flat. When the sweep measured
# reliably, its cell says which and why, from the intensity and the measured ridge point; when it did
# not, the intensity column and the ridge point (both printed whatever the load) still tell the story:
# once the recurrent GEMM is past the ridge, more batching does not change the FLOPs per sequence, only how close the kernel gets to the
# peak. A kernel far below the peak at small $B$ (like the seed's Halide GEMMs, chapter 06) keeps
# improving with $B$; a kernel already near its best at the smallest batch of the range cannot.
#
# ## Small workloads (seed §4.3)
#
# The seed also tried layers of width 32 (and 4096) and reported that for small workloads fixed
# costs -- for Halide, JIT compilation -- dominated. Our fixed cost is the Python and library calls a
# step makes, whatever the size. **Predict**: at width 32, how far does the time per sequence fall
# from $B = 1$ to $B = 1000$ -- about like at width 1000, or much more?

# %% tags=["nbval-ignore-output"]
small_w = int(claims.CLAIMS["000.ch03.s43.small_workload"].value)
small = batching_exp.time_per_sample((1, 10, 100, 1000), width=small_w, T=10, method="fast", repeat=5)
for b, s, st, fl in zip(small["batch"], small["per_sample_s"], small["step_s"], small["flops"]):
    busy = min(1.0, fl / (peak * 1e9) / st)
    print(f"width {small_w}, B = {b:>4}: {s * 1e6:8.2f} µs per sequence; at the peak its FLOPs would fill "
          f"{100 * busy:5.1f}% of the step")
fall_small = small["per_sample_s"][0] / small["per_sample_s"][-1]
print(f"\nwidth {small_w}: {fall_small:.0f}x cheaper per sequence from B = 1 to B = 1000 "
      f"(width {width}: {fall_all:.1f}x from B = 1 to its best batch)")
if not small["noise"].ok:
    print(small["noise"].warning())
else:
    fixed = small["step_s"][0]
    print(f"the step at B = 1 takes {fixed * 1e6:.0f} µs for {small['flops'][0] / 1e3:.0f} kFLOP: that is the fixed "
          f"cost of the calls; batching spreads it over B sequences" +
          (", which is why small workloads gain far more from batching." if fall_small > 2 * fall_all else "."))

# %% [markdown]
# ## Try it: batch size and width
#
# The panel calls `batching_exp.batch_point(batch, width)` -- one training step timed now -- and
# draws the rate against the roofline's bound at that intensity. Work is capped.

# %%
sorted(batching_exp.batch_point(4, 32, T=2, repeat=1))

# %% tags=["nbval-ignore-output"]
def show_point(d, ax):
    ax.bar(["reached", "roofline bound"], [d["gflops"], d["bound_gflops"]], color=["tab:blue", "grey"])
    ax.set_ylim(0, 1.2 * max(d["gflops"], d["bound_gflops"]))
    ax.set_ylabel("GFLOP/s")
    warn = "" if d["noise"].ok else "  [unreliable: the machine was busy]"
    return (f"B = {d['batch']}, width {d['width']}: {d['per_sample_s'] * 1e3:.3f} ms per sequence, "
            f"{d['gflops']:.1f} GFLOP/s; intensity {d['intensity']:.1f} FLOP/byte{warn}")

widgets.sweep_panel(
    batching_exp.batch_point,
    controls={"batch": (1, 1000, 1, 64), "width": (32, 1024, 32, 256)},
    render=show_point,
    cost=lambda batch, width: 16 * 10 * batch * width * width, max_cost=16 * 10 * 1000 * 512 * 512,
)

# %% [markdown]
# ## What we learned
#
# * Batching does not change the arithmetic -- the batched and one-at-a-time forward passes give
#   the same numbers -- it changes how often each weight is **reused** once it is loaded.
# * A single sequence is a chain of GEMVs at about 0.5 FLOP/byte: bandwidth-bound -- on the
#   bandwidth of wherever the weights live. Weights that fit in a cache are read at cache speed,
#   which is how GEMV points can sit above a roofline drawn with DRAM's bandwidth.
# * A batch of $B$ raises the intensity to about $B/2$ and lets the products reach the compute roof.
#   Past the ridge point, bigger batches stop helping per sequence -- the seed's range may already
#   be there on your machine: look for where the sweep's measured curve flattens in its plot.
# * Small layers gain most from batching: their steps are dominated by fixed per-call costs.
#
# Worksheet: [exercises/03_batching.ipynb](../exercises/03_batching.ipynb) (a batched forward pass; the intensity of a step).
# Next: [04 · tiling & SIMD](04_tiling_simd.ipynb).
