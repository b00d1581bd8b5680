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
# time per sample falling as the batch grows from 100 to 1000 images.
#
# This chapter measures why. An RNN that reads **one sequence at a time** computes
#
# $$h_t = \tanh(x_t W_{xh} + h_{t-1} W_{hh}), \qquad x_t \in \mathbb{R}^{1\times n_x},\; h_{t-1} \in \mathbb{R}^{1\times n_h}$$
#
# with single rows: matrix-**vector** products (GEMV). Stack $B$ sequences as the rows of
# $X_t \in \mathbb{R}^{B\times n_x}$ and the very same arithmetic becomes a matrix-**matrix**
# product (GEMM) -- each weight, once fetched, is used $B$ times instead of once.

# %%
import numpy as np

import course_lib
from course_lib.experiments import batching
from course_lib.models import rnn
from course_lib.core import timing
from course_lib.teaching import plots, widgets
from course_lib.teaching.plots import perf

# %% [markdown]
# ## A small drawn example
#
# Three sequences of four steps, 5 inputs, 6 hidden units, 2 outputs. Batched, every time step is
# one product of a $(B, n_x) = (3, 5)$ block with $W_{xh}$; unbatched, it is three products of a
# $(1, 5)$ row. `batching.forward_one_at_a_time` is the unbatched loop (open
# `course_lib/batching.py`); `rnn.forward` from chapter 01 is the batched one.

# %%
params = rnn.init_params(5, 6, 2, seed=0, dtype=np.float64)
X = np.random.default_rng(0).uniform(-1, 1, (4, 3, 5))          # (T, B, nx)
print("X_t of one time step, all sequences:", X[0].shape, "-> one GEMM (3, 5) @ (5, 6)")
print("x_t of one sequence:                ", X[0, 0].shape, "  -> one GEMV (5,) @ (5, 6), three times")
H_loop, Yhat_loop = batching.forward_one_at_a_time(params, X)
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
    print(f"{B:>5} {batching.rnn_step_flops(B, n, n) / 1e6:>9.1f} {batching.rnn_step_bytes(B, n, n) / 1e6:>9.2f} "
          f"{batching.rnn_step_intensity(B, n, n):>10.2f}")

# %% [markdown]
# At $B = 1$ the step does half a FLOP per byte: however good the code, it waits for memory.
# The measured **roofline** (chapter 00) turns that into a speed limit: $\min(\text{peak},
# I \times \text{bandwidth})$. Let us measure the machine's two numbers and the two kinds of
# product: $B$ separate GEMVs against one GEMM of the same FLOPs.

# %% tags=["nbval-ignore-output"]
peak = timing.peak_gflops()
bw = timing.copy_bandwidth()
g = batching.gemv_vs_gemm(n=timing.scaled(1000, 512), B=timing.scaled(256, 128), repeat=3)
print(f"measured GEMM peak {peak:.1f} GFLOP/s, streaming bandwidth {bw:.1f} GB/s")
print(f"{g['B']} GEMVs ({g['n']}x{g['n']}): {g['gemv_s'] * 1e3:7.2f} ms = {g['gemv_gflops']:6.1f} GFLOP/s "
      f"(intensity {g['gemv_intensity']:.2f}, roofline bound {g['gemv_bound_gflops']:.1f})")
print(f"one GEMM (B={g['B']}):      {g['gemm_s'] * 1e3:7.2f} ms = {g['gemm_gflops']:6.1f} GFLOP/s "
      f"(intensity {g['gemm_intensity']:.1f}, roofline bound {g['gemm_bound_gflops']:.1f})")
print(f"same FLOPs, GEMM is {g['speedup']:.1f}x faster")

# %% [markdown]
# Same numbers out, too (float32 round-off only -- the two products may add in different orders):

# %%
print("GEMV loop and GEMM agree to 1e-3:", g["max_abs_diff"] < 1e-3)

# %% tags=["nbval-ignore-output"]
ax = plots.roofline_plot(peak, bw, [(g["gemv_intensity"], g["gemv_gflops"], f"{g['B']} GEMVs"),
                                    (g["gemm_intensity"], g["gemm_gflops"], f"one GEMM, B={g['B']}")])
ax.set_title("GEMV vs GEMM on this machine's measured roofline");

# %% [markdown]
# ## Time per sample against the batch size (seed Fig. 9)
#
# The seed trained with batches of 100 to 1000 images and normalised each epoch's time by the
# data set size. We do the same with one training step of chapter 01/02's reference code
# (`rnn.bptt_linear` + `rnn.sgd_step`): time one step on $B$ sequences, divide by $B$. $B = 1$ is
# "one sequence at a time". (Sizes shrink when `COURSE_BUDGET=small`.)

# %% tags=["nbval-ignore-output"]
width = timing.scaled(512, 128)
batches = timing.scaled((1, 4, 16, 64, 128, 256, 512), (1, 4, 16, 64))
sweep = batching.time_per_sample(batches, width=width, T=10, repeat=2)
for b, s, gf, bound in zip(sweep["batch"], sweep["per_sample_s"], sweep["gflops"], sweep["bound_gflops"]):
    print(f"B = {b:>4}: {s * 1e3:8.3f} ms per sequence, {gf:6.1f} GFLOP/s (roofline bound {bound:6.1f})")
gain = sweep["per_sample_s"][0] / sweep["per_sample_s"].min()
print(f"\nmeasured: the best batch is {gain:.1f}x cheaper per sequence than B = 1")
print("seed (Fig. 9, Halide on a Xeon Phi): time per sample falls steadily from B = 100 to B = 1000")

# %% tags=["nbval-ignore-output"]
perf.per_sample_plot(sweep);

# %% [markdown]
# Reading the plot: at small $B$ the step is on the slanted, bandwidth-bound part of the roof --
# doubling $B$ nearly doubles the work done per byte of weights and halves the cost per sequence.
# Once $B$ passes the ridge point (a few tens of sequences for float32 here) the GEMMs are
# compute-bound and the curve flattens: more batching stops paying, and only a faster kernel
# (chapters 04-05) moves it further. On a busy machine the large-$B$ points also show how much
# the *other* programs leave for you -- rerun the cell when the machine is quiet.
#
# ## Try it: batch size and width
#
# The panel calls `batching.batch_point(batch, width)` -- one training step timed now -- and
# draws the rate against the roofline's bound at that intensity. Work is capped.

# %%
sorted(batching.batch_point(4, 32, T=2, repeat=1))

# %% tags=["nbval-ignore-output"]
def show_point(d, ax):
    ax.bar(["reached", "roofline bound"], [d["gflops"], d["bound_gflops"]], color=["tab:blue", "grey"])
    ax.set_ylabel("GFLOP/s")
    return (f"B = {d['batch']}, width {d['width']}: {d['per_sample_s'] * 1e3:.3f} ms per sequence, "
            f"{d['gflops']:.1f} GFLOP/s; intensity {d['intensity']:.1f} FLOP/byte")

widgets.sweep_panel(
    batching.batch_point,
    controls={"batch": (1, 1000, 1, 64), "width": (32, 1024, 32, 256)},
    render=show_point,
    cost=lambda batch, width: 16 * 10 * batch * width * width, max_cost=16 * 10 * 1000 * 512 * 512,
)

# %% [markdown]
# ## What we learned
#
# * Batching does not change the arithmetic -- the batched and one-at-a-time forward passes give
#   the same numbers -- it changes how often each weight is **reused** once it is in cache.
# * A single sequence is a chain of GEMVs at ~0.5 FLOP/byte: bandwidth-bound. A batch of $B$
#   raises the intensity to about $B/2$ and lets the products reach the compute roof.
# * Past the ridge point, bigger batches stop helping per sequence (and cost memory and, for
#   training, statistical efficiency). The next chapters make each GEMM and element-wise pass faster.
#
# Worksheet: `exercises/03_batching.ipynb` (a batched forward pass; the intensity of a step).
# Next: [04 · tiling & SIMD](04_tiling_simd.ipynb).
