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
# # 08 · LSTM, data layout and an autotuner — "optimising once and for all"
#
# Seed 003 is **EcoRNN** (Zheng & Pekhimenko), which builds on the classic GPU optimisations of
# **Appleyard, Kočiský & Blunsom 2016** ("Optimizing Performance of Recurrent Neural Networks on
# GPUs"). Its three observations, which we re-measure on this CPU:
#
# 1. **The fully-connected layers (GEMMs) dominate** an LSTM: > 85 % of cuDNN's time is in `sgemm`.
# 2. **Data layout matters**: $Y = XW^T$ and $Y^T = WX^T$ are the same product, yet at
#    $X: 64\times512$, $W: 2048\times512$ the second ran almost 2× faster on their GPU.
# 3. **Many small launches cost**: the framework default launched ≈ 5× more kernels than cuDNN.
#    Appleyard et al.'s cure: stack the four gates into one GEMM, precompute the input
#    projection of all steps in one big GEMM, fuse the element-wise work into one kernel.
#
# And the idea in the title: every cell of every layer and time step has the *same shape*, so a
# micro-benchmark of a few milliseconds can pick the best implementation for a training run of
# hours — an **autotuner**.
#
# The code is in [`course_lib/lstm.py`](../course_lib/lstm.py) (the variants, the profiler),
# [`course_lib/autotune.py`](../course_lib/autotune.py) and
# [`course_lib/lstm_lm.py`](../course_lib/lstm_lm.py) (a character LM for the throughput test).

# %%
import os
import tempfile

# the autotuner's decisions go to a fresh folder, so this notebook never reads a stale cache
os.environ["COURSE_CACHE_DIR"] = tempfile.mkdtemp(prefix="course_autotune_")

import matplotlib.pyplot as plt
import numpy as np

from course_lib.experiments import autotune
from course_lib.data import corpus
from course_lib.models import lstm, lstm_lm
from course_lib.core import timing
from course_lib.teaching import widgets
from course_lib.teaching.plots import lstm as lplots

try:
    import torch
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

# %% [markdown]
# ## The LSTM cell
#
# One step on a batch, row-vector maths as in the rest of the course, parameters in **PyTorch's
# layout** so weights move between `torch.nn.LSTM` and our code unchanged:
#
# $$z = x_t W_{ih}^T + h_{t-1} W_{hh}^T + b_{ih} + b_{hh} = [\,z_i \mid z_f \mid z_g \mid z_o\,] \in \mathbb{R}^{B\times 4H}$$
# $$i, f, o = \sigma(z_i), \sigma(z_f), \sigma(z_o), \quad g = \tanh(z_g), \quad c_t = f\odot c_{t-1} + i\odot g, \quad h_t = o \odot \tanh(c_t)$$
#
# `W_ih (4H, nx)`, `W_hh (4H, H)`, `b_ih, b_hh (4H,)`, gate blocks stacked in the order i, f, g, o.

# %%
lplots.draw_cell()
plt.show()

# %%
params = lstm.init_params(nx=8, nh=5, seed=0)
for name in ("W_ih", "W_hh", "b_ih", "b_hh"):
    print(f"{name:5s} {getattr(params, name).shape} {getattr(params, name).dtype}")

# %% [markdown]
# A weight in the other layout (as written in many textbooks, `(nx, 4H)`) is refused with a
# message that names the layout expected:

# %%
bad = lstm.LSTMParams(params.W_ih.T.copy(), params.W_hh, params.b_ih, params.b_hh)
try:
    lstm.lstm_forward(bad, np.zeros((3, 2, 8), np.float32), variant="fused")
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# ## Four ways to compute the same thing
#
# | variant | per time step | library calls / step |
# |---|---|---|
# | `naive` | one GEMM per gate and operand (8), ~26 separate numpy element-wise passes | ~34 |
# | `fused` | `[x_t | h] [W_ih | W_hh]^T`: **one** GEMM, **one** fused numba kernel (+ 2 copies) | 4 |
# | `fused_pre` | the input GEMM of *all* T steps done up front as one big GEMM; per step `h W_hhᵀ` + kernel | 2 |
# | `transposed` | as `fused_pre` with the state stored as $h^T$ (H, B): $Z^T = W_{hh} h^T$ — the seed's layout | 2 |
#
# The fused kernel makes one pass over the $(B, 4H)$ gates: it adds the bias or projection,
# applies σ/tanh, and updates $c$ and $h$ — every number is read once and written once. In
# float32 it uses a rational approximation of tanh (a few float32 ulps) so that LLVM can
# vectorise the loop; float64 uses the exact `np.tanh`.
#
# All variants agree to round-off, with each other and with `torch.nn.LSTM` (float64):

# %%
T, B, nx, H = 6, 4, 5, 7
p64 = lstm.init_params(nx, H, seed=1, dtype=np.float64)
rng = np.random.default_rng(0)
X = rng.standard_normal((T, B, nx))
h0, c0 = rng.standard_normal((B, H)), rng.standard_normal((B, H))
ref, (hT_ref, cT_ref) = lstm.lstm_forward(p64, X, h0, c0, variant="naive")
for v in lstm.VARIANTS:
    out, (hT, cT) = lstm.lstm_forward(p64, X, h0, c0, variant=v)
    print(f"{v:11s} max |H - naive| < 1e-12: {np.abs(out - ref).max() < 1e-12}   "
          f"h_T == H[-1]: {np.array_equal(hT, out[-1])}")

# %% tags=["nbval-ignore-output"]
if HAVE_TORCH:
    m = torch.nn.LSTM(nx, H).double()
    with torch.no_grad():
        for tname, arr in (("weight_ih_l0", p64.W_ih), ("weight_hh_l0", p64.W_hh),
                           ("bias_ih_l0", p64.b_ih), ("bias_hh_l0", p64.b_hh)):
            getattr(m, tname).copy_(torch.from_numpy(arr))
        out_t, _ = m(torch.from_numpy(X), (torch.from_numpy(h0)[None], torch.from_numpy(c0)[None]))
    print(f"torch.nn.LSTM vs ours: max |difference| = {np.abs(out_t.numpy() - ref).max():.1e}")
else:
    print("torch is not installed: skipping the comparison with torch.nn.LSTM")

# %% [markdown]
# The backward pass (`lstm_backward(params, cache, dH)`, with the cache from
# `lstm_forward(..., return_cache=True)`) is checked against numerical gradients in float64:

# %%
_, _, cache = lstm.lstm_forward(p64, X, h0, c0, variant="fused_pre", return_cache=True)
W = rng.standard_normal((T, B, H))            # loss = sum(W * H)
grads = lstm.lstm_backward(p64, cache, W)
eps, worst = 1e-6, 0.0
for name in ("W_ih", "W_hh", "b_ih"):
    arr = getattr(p64, name)
    for idx in [(0,) * arr.ndim, tuple(s - 1 for s in arr.shape)]:
        old = arr[idx]
        arr[idx] = old + eps
        up = np.sum(W * lstm.lstm_forward(p64, X, h0, c0, variant="fused")[0])
        arr[idx] = old - eps
        down = np.sum(W * lstm.lstm_forward(p64, X, h0, c0, variant="fused")[0])
        arr[idx] = old
        num = (up - down) / (2 * eps)
        worst = max(worst, abs(num - getattr(grads, name)[idx]) / max(1e-3, abs(num)))
print(f"worst relative error, analytic vs numerical gradient < 1e-5: {worst < 1e-5}")

# %% [markdown]
# ## Observation 1 · where does a step spend its time?
#
# `lstm.profile_step` times every library call of one step separately and sorts them into GEMMs
# and element-wise work; it also counts the calls — the CPU analogue of the seed's
# `cudaLaunch` count. The shape is the seed's LSTM: B = 64, H = nx = 512.

# %% tags=["nbval-ignore-output"]
B_PROF, H_PROF = 64, 512
profiles = [lstm.profile_step(B_PROF, H_PROF, variant=v, repeat=timing.scaled(5, 3)) for v in lstm.VARIANTS]
print(f"{'variant':11s} {'calls/step':>10s} {'GEMM ms':>8s} {'elem ms':>8s} {'GEMM share':>10s}")
for p in profiles:
    print(f"{p['variant']:11s} {p['calls_per_step']:>10d} {p['gemm_s'] * 1e3:>8.3f} "
          f"{p['elementwise_s'] * 1e3:>8.3f} {100 * p['gemm_share']:>9.0f}%")
print(f"calls per step, naive / fused_pre: {profiles[0]['calls_per_step'] / profiles[2]['calls_per_step']:.0f}x"
      f"   (seed: the framework default made 5x more cudaLaunch calls than cuDNN)")
print("seed: > 85% of cuDNN's LSTM time is in sgemm")
lplots.profile_bars(profiles)
plt.show()

# %% [markdown]
# ## Observation 2 · $XW^T$ versus $WX^T$
#
# Same FLOPs ($2 \cdot 64 \cdot 2048 \cdot 512$), one BLAS call each — only the layout differs.
# numpy passes `W.T` to BLAS as a transpose flag, no copy; which operand the BLAS kernel streams
# through its cache blocks is what changes.

# %% tags=["nbval-ignore-output"]
seed_case = lstm.layout_gemm_times(64, 512, 512, repeat=timing.scaled(15, 7))
print(f"Y  = X Wᵀ : {seed_case['XWt_s'] * 1e6:7.1f} µs  ({seed_case['gflops_XWt']:.0f} GFLOP/s)")
print(f"Yᵀ = W Xᵀ : {seed_case['WXt_s'] * 1e6:7.1f} µs  ({seed_case['gflops_WXt']:.0f} GFLOP/s)")
print(f"ratio t(XWᵀ)/t(WXᵀ) here: {seed_case['ratio']:.2f}    seed (Titan Xp, cuBLAS): ~2 "
      f"(cache hit rate 50% vs 10%)")
print(f"GEMM peak measured here: {timing.peak_gflops():.0f} GFLOP/s")

# %% [markdown]
# The seed measured one shape. A sweep over batch and hidden size around it shows where (and
# whether) the transposed layout wins on this CPU — the autotuner's job is to not have to guess.

# %% tags=["nbval-ignore-output"]
BS = timing.scaled([16, 32, 64, 128, 256], [16, 64, 256])
HS = timing.scaled([128, 256, 512, 1024], [128, 512])
ratios = np.array([[lstm.layout_gemm_times(b, h, repeat=5)["ratio"] for b in BS] for h in HS])
lplots.ratio_heatmap(BS, HS, ratios)
plt.show()
print(f"transposed layout faster in {int((ratios > 1.05).sum())} of {ratios.size} cells, "
      f"slower in {int((ratios < 0.95).sum())}")

# %% [markdown]
# ## Observation 3 · library-call overhead against batch size
#
# Per step, `naive` makes ~34 calls, `fused_pre` and `transposed` 2. Each call has a fixed cost (Python, numpy
# dispatch, BLAS set-up) of about a microsecond or more. At small batch the work per call is tiny
# and that fixed cost dominates; at large batch the GEMMs do.

# %% tags=["nbval-ignore-output"]
ov = lstm.overhead_vs_batch(timing.scaled([1, 4, 16, 64, 256], [1, 16, 256]), H=128,
                            variants=("naive", "fused_pre", "transposed"), T=timing.scaled(20, 10))
lplots.overhead_plot(ov)
plt.show()
for b, tn, tf, tt in zip(ov["B"], ov["naive"], ov["fused_pre"], ov["transposed"]):
    print(f"B = {b:4d}: naive / fused_pre = {tn / tf:5.1f}x   naive / transposed = {tn / tt:5.1f}x")

# %% [markdown]
# ## The variants side by side
#
# Forward and forward + backward at the seed's shape (B = 64, H = nx = 512), T steps, per step.
# (`benchmarks/lstm.py` runs more shapes and puts `torch.nn.LSTM` in the same table.)

# %% tags=["nbval-ignore-output"]
T_RUN = timing.scaled(20, 8)
fwd = lstm.variant_times(64, 512, 512, T_RUN, repeat=3)
both = lstm.variant_times(64, 512, 512, T_RUN, backward=True, repeat=3)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
lplots.variant_bars(fwd["ms_per_step"], axes[0], title="forward")
lplots.variant_bars(both["ms_per_step"], axes[1], title="forward + backward")
fig.tight_layout()
plt.show()
gemm_flop = timing.gemm_flops(64, 4 * 512, 512) * 2   # x W_ih^T and h W_hh^T per step
for v, ms in fwd["ms_per_step"].items():
    rate = gemm_flop / (ms * 1e-3) / 1e9
    print(f"{v:11s} forward {ms:7.3f} ms/step = {rate:6.1f} GFLOP/s ({100 * rate / timing.peak_gflops():4.0f}% "
          f"of peak)   fwd+bwd {both['ms_per_step'][v]:7.3f} ms/step")
print(f"fastest fwd+bwd here: {both['best']}, "
      f"{both['ms_per_step']['naive'] / both['ms_per_step'][both['best']]:.1f}x faster than naive "
      f"(seed: EcoRNN up to 3x over MXNet's default and 1.5x over cuDNN)")

# %% [markdown]
# ## The autotuner decides
#
# `autotune.tune(B, H, nx, T, dtype, threads)` times every variant's forward pass for a few steps,
# keeps the fastest and writes the decision to a JSON file under the cache directory
# (`$COURSE_CACHE_DIR`, else `~/.cache/parallel-rnns-course`), keyed by shape, dtype, threads and
# machine. `lstm_forward(..., variant="auto")` asks it. A second request for the same key reads
# the cache and measures nothing; `force=True` measures again.

# %% tags=["nbval-ignore-output"]
decision = autotune.tune(64, 512, 512, 100, "float32", force=True)
print(decision.key)
print(decision.table())
print(f"(measured in {decision.probe['seconds']:.2f} s, stored in {autotune.cache_path()})")

# %%
again = autotune.tune(64, 512, 512, 100, "float32")
print("second call measured again:", again.measured_now)
print("same decision as the first call:", again.best == decision.best)
print("'auto' agrees with 'naive' to round-off:",
      np.allclose(lstm.lstm_forward(p64, X, h0, c0, variant="auto")[0], ref, atol=1e-12))

# %% [markdown]
# ## Training a character-level language model
#
# The seed's Fig. 4 compares training throughput (PTB, Wikitext-2) of MXNet's default LSTM,
# cuDNN and EcoRNN. Our laptop-sized version: a character LM on the pydoc help text (the
# course corpus, as in chapter 07), one-hot input → LSTM → softmax, Adam. Every variant sees the
# same batches, so the losses agree and only the speed differs.

# %%
text = corpus.load_text(200_000)
vocab = corpus.Vocab.from_text(text)
ids = vocab.encode(text)
LM = dict(H=128, T=32, B=32, steps=20, seed=0)
print(f"{len(text)} characters, vocabulary {vocab.size}; {LM['steps']} steps of {LM['T']} x {LM['B']} characters")

# %% [markdown]
# These GEMMs are small ($32 \times 128$ by $128 \times 512$), where a second BLAS thread mostly
# adds synchronisation (and on a busy machine it can stall badly), so every variant trains with
# one BLAS thread: the comparison is about the LSTM code, not about threads.

# %% tags=["nbval-ignore-output"]
from threadpoolctl import threadpool_limits

with threadpool_limits(1):
    runs = {v: lstm_lm.train_lm(ids, vocab.size, variant=v, **LM)
            for v in ("naive", "fused", "fused_pre", "transposed", "auto")}
for v, r in runs.items():
    print(f"{v:11s} ({r['variant']:10s}) {r['tokens_per_s']:8.0f} tokens/s   {r['seconds']:.2f} s")
best_v = max(runs, key=lambda v: runs[v]["tokens_per_s"])
print(f"fastest: {best_v}, {runs[best_v]['tokens_per_s'] / runs['naive']['tokens_per_s']:.1f}x the naive "
      f"throughput (seed, Fig. 4: EcoRNN vs MXNet default up to ~3x)")
lplots.variant_bars({v: r["tokens_per_s"] for v, r in runs.items()}, ylabel="tokens / s (higher is better)",
                    title="char-LM training throughput")
plt.show()

# %%
finals = [round(r["final_loss"], 2) for r in runs.values()]
print(f"loss after {LM['steps']} steps: {finals[0]:.2f} nats (started at {runs['naive']['losses'][0]:.2f}; "
      f"ln V = {np.log(vocab.size):.2f})")
print("all variants reach the same loss:", len(set(finals)) == 1)

# %% [markdown]
# ## Try it: batch, hidden size and variant
#
# Milliseconds per forward step of the chosen variant next to `naive` (nx = H). Watch the gap
# grow as B shrinks (call overhead) and shrink as H grows (the GEMMs take over).

# %% tags=["nbval-ignore-output"]
def _render(data, ax):
    lplots.variant_bars(data["ms_per_step"], ax, title=f"B = {data['B']}, H = {data['H']}")
    v = data["variant"]
    return f"{v}: {data['ms_per_step'][v]:.3f} ms/step, {data['gflops'][v]:.1f} GFLOP/s"


widgets.sweep_panel(lstm.widget_compute,
                    {"B": (1, 256, 1, 64), "H": (32, 1024, 32, 256), "variant": list(lstm.VARIANTS[1:])},
                    render=_render, cost=lambda B, H, variant: B * H * H, max_cost=256 * 1024 * 1024)

# %% [markdown]
# ## What we learned
#
# * The GEMMs are the LSTM: once the element-wise work is fused into one pass, nearly all of a
#   step is matrix multiplication — the seed's observation 1, measured above on this CPU.
# * Stacking the four gates and precomputing the input projection cut a step from ~34 library
#   calls to 2; that matters most at small batch, where a call's fixed cost dominates.
# * $XW^T$ vs $WX^T$ is the same arithmetic in a different layout; whether it helps depends on
#   the BLAS, the machine and the shape (the heat map) — so measure rather than guess.
# * Because every step has the same shape, a few milliseconds of measuring decide the variant for
#   the whole run: `variant="auto"` caches that decision per shape and machine.
#
# Next: [09 · MGRIT](10_mgrit.ipynb) — parallel in time.
