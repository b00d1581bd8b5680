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
# # 09 · LSTM, data layout and an autotuner — "optimising once and for all"
#
# Seed 003 is **EcoRNN** (Zheng & Pekhimenko), which builds on the classic GPU optimisations of
# **Appleyard, Kočiský & Blunsom 2016** ("Optimizing Performance of Recurrent Neural Networks on
# GPUs"). It makes three observations on a GPU, which we re-measure on this CPU:
#
# 1. **The fully-connected layers (GEMMs) dominate** an LSTM: most of cuDNN's compute time is in `sgemm`.
# 2. **Data layout matters**: $Y = XW^T$ and $Y^T = WX^T$ are the same product, yet at
#    $X: 64\times512$, $W: 2048\times512$ the second ran almost twice as fast on their GPU, because it
#    hit the cache far more often.
# 3. **Many small launches cost**: the framework default paid several times more `cudaLaunch`
#    overhead than cuDNN. Appleyard et al.'s cure: stack the four gates into one GEMM, precompute
#    the input projection of all steps in one big GEMM, fuse the element-wise work into one kernel.
#
# And the idea in the title: every cell of every layer and time step has the *same shape*, so a
# micro-benchmark of a few milliseconds can pick the best implementation for a training run of
# hours — an **autotuner**. The seed's numbers, from the course's claims registry:

# %%
from course_lib.teaching.claims import CLAIMS, show

print(show("003.obs1.gemm_share", "003.fig2a.launch_overhead", "003.fig3.hit_rate_WXt",
           "003.fig3.hit_rate_XWt", "003.summary.vs_default", "003.summary.vs_cudnn"))

# %% [markdown]
# The code: [`course_lib/models/lstm.py`](../course_lib/models/lstm.py) (the layer, computed five ways),
# [`course_lib/models/lstm_lm.py`](../course_lib/models/lstm_lm.py) (a character LM),
# [`course_lib/experiments/lstm.py`](../course_lib/experiments/lstm.py) (every measurement below) and
# [`course_lib/experiments/autotune.py`](../course_lib/experiments/autotune.py).
#
# This chapter is about layout and library calls, not threads (chapter 05 did threads): every
# measurement runs with **one** thread, so two threads fighting over a busy machine do not blur it.

# %%
import os
import tempfile

# the autotuner's decisions go to a fresh folder, so this notebook never reads a stale cache
os.environ["COURSE_CACHE_DIR"] = tempfile.mkdtemp(prefix="course_autotune_")

import matplotlib.pyplot as plt
import numpy as np

from course_lib.core import backend, timing
from course_lib.data import corpus
from course_lib.experiments import autotune as autotune_exp
from course_lib.experiments import lstm as lstm_exp
from course_lib.models import lstm
from course_lib.teaching import widgets
from course_lib.teaching.plots import lstm as lstm_plots
from course_lib.teaching.verdict import verdict

backend.set_threads(1)

try:
    import torch
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

# %% [markdown]
# ## The LSTM cell
#
# One step on a batch, row-vector maths as in the rest of the course, parameters in **PyTorch's
# layout** so weights move between `torch.nn.LSTM` and our code unchanged
# (`LSTMParams.from_torch(module)`, `params.to_torch()`):
#
# $$z = x_t W_{ih}^T + h_{t-1} W_{hh}^T + b_{ih} + b_{hh} = [\,z_i \mid z_f \mid z_g \mid z_o\,] \in \mathbb{R}^{B\times 4H}$$
# $$i, f, o = \sigma(z_i), \sigma(z_f), \sigma(z_o), \quad g = \tanh(z_g), \quad c_t = f\odot c_{t-1} + i\odot g, \quad h_t = o \odot \tanh(c_t)$$
#
# `W_ih (4H, nx)`, `W_hh (4H, H)`, `b_ih, b_hh (4H,)`, gate blocks stacked in the order i, f, g, o.

# %%
lstm_plots.draw_cell()
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
    lstm.lstm_forward(bad, np.zeros((3, 2, 8), np.float32), method="fused")
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# ## Five ways to compute the same thing
#
# `lstm_forward(params, X, method=...)` takes one of `lstm.METHODS`; a plain call uses `fused_pre`
# and never measures anything.
#
# | method | per time step | library calls / step |
# |---|---|---|
# | `naive` | one GEMM per gate and operand (8), separate numpy element-wise passes | 34 |
# | `fused` | concatenate $x_t$ and $h$, one GEMM with the stacked weights, **one** fused numba kernel (+ 2 copies) | 4 |
# | `fused_pre` | the input GEMM of *all* T steps done up front as one big GEMM; per step $h W_{hh}^T$ + kernel | 2 |
# | `transposed` | as `fused_pre` with the state stored as $h^T$ (H, B): $Z^T = W_{hh} h^T$ — the seed's layout | 2 |
# | `gemv` | as `fused_pre`, but $h W_{hh}^T$ as B matrix–vector products $W_{hh} h_b$ (for small batches, below) | B + 1 |
#
# The fused kernel makes one pass over the $(B, 4H)$ gates: it adds the bias or projection,
# applies σ/tanh, and updates $c$ and $h$ — every number is read once and written once. In
# float32 it uses the course's `fast_tanh` / `fast_sigmoid` (`course_lib.algorithms.activations`:
# a rational approximation within a few float32 ulps) so that LLVM can vectorise the loop;
# float64 uses the exact tanh.
#
# All methods agree to round-off, with each other and with `torch.nn.LSTM` (float64):

# %%
T, B, nx, H = 6, 4, 5, 7
p64 = lstm.init_params(nx, H, seed=1, dtype=np.float64)
rng = np.random.default_rng(0)
X = rng.standard_normal((T, B, nx))
h0, c0 = rng.standard_normal((B, H)), rng.standard_normal((B, H))
ref, (hT_ref, cT_ref) = lstm.lstm_forward(p64, X, h0, c0, method="naive")
for m in lstm.METHODS:
    out, (hT, cT) = lstm.lstm_forward(p64, X, h0, c0, method=m)
    print(f"{m:11s} max |H - naive| < 1e-12: {np.abs(out - ref).max() < 1e-12}   "
          f"h_T == H[-1]: {np.array_equal(hT, out[-1])}")

# %% tags=["nbval-ignore-output"]
if HAVE_TORCH:
    with torch.no_grad():
        out_t, _ = p64.to_torch()(torch.from_numpy(X), (torch.from_numpy(h0)[None], torch.from_numpy(c0)[None]))
    print(f"torch.nn.LSTM vs ours: max |difference| = {np.abs(out_t.numpy() - ref).max():.1e}")
else:
    print("torch is not installed: skipping the comparison with torch.nn.LSTM")

# %% [markdown]
# The backward pass (`lstm_backward(params, cache, dH)`, with the cache from
# `lstm_forward(..., return_cache=True)`) returns the weights' gradients as an `LSTMParams` (same
# names and shapes as the weights), then the inputs' `dX, dh0, dc0`. It is checked against numerical
# gradients in float64:

# %%
_, _, cache = lstm.lstm_forward(p64, X, h0, c0, method="fused_pre", return_cache=True)
Wl = rng.standard_normal((T, B, H))            # loss = sum(Wl * H)
grads, dX, dh0, dc0 = lstm.lstm_backward(p64, cache, Wl)
eps, worst = 1e-6, 0.0
for name in ("W_ih", "W_hh", "b_ih"):
    arr = getattr(p64, name)
    for idx in [(0,) * arr.ndim, tuple(s - 1 for s in arr.shape)]:
        old = arr[idx]
        arr[idx] = old + eps
        up = np.sum(Wl * lstm.lstm_forward(p64, X, h0, c0, method="fused")[0])
        arr[idx] = old - eps
        down = np.sum(Wl * lstm.lstm_forward(p64, X, h0, c0, method="fused")[0])
        arr[idx] = old
        num = (up - down) / (2 * eps)
        worst = max(worst, abs(num - getattr(grads, name)[idx]) / max(1e-3, abs(num)))
print(f"worst relative error, analytic vs numerical gradient < 1e-5: {worst < 1e-5}")

# %% [markdown]
# ## Observation 1 · where does a step spend its time?
#
# The seed profiled cuDNN and found most of the compute time in matrix multiplies. `lstm_exp.profile_step`
# times every library call of one step separately and sorts them into GEMMs and element-wise work;
# it also counts the calls — the CPU analogue of the seed's kernel launches. The shape is the
# seed's LSTM: B = 64, H = nx = 512.
#
# **Predict:** in the `naive` step (8 small GEMMs, 26 separate numpy passes), what share of the time
# is GEMM? And after fusion (`fused_pre`: one GEMM, one kernel)? Does fusion raise the share, or
# does it mostly shrink the whole step?

# %% tags=["nbval-ignore-output"]
B_PROF, H_PROF = 64, 512
profiles = [lstm_exp.profile_step(B_PROF, H_PROF, method=m, repeat=timing.scaled(9, 5)) for m in lstm.METHODS]
prof = {p["method"]: p for p in profiles}
print(f"{'method':11s} {'calls/step':>10s} {'GEMM ms':>8s} {'elem ms':>8s} {'GEMM share':>10s}")
for p in profiles:
    print(f"{p['method']:11s} {p['calls_per_step']:>10d} {p['gemm_s'] * 1e3:>8.3f} "
          f"{p['elementwise_s'] * 1e3:>8.3f} {100 * p['gemm_share']:>9.0f}%")
lstm_plots.profile_bars(profiles, seed_share=CLAIMS["003.obs1.gemm_share"].value / 100)
plt.show()
noise1 = profiles[0]["noise"]
for p in profiles[1:]:
    noise1 = noise1 | p["noise"]
pre, nai = prof["fused_pre"], prof["naive"]
t_pre, t_nai = pre["gemm_s"] + pre["elementwise_s"], nai["gemm_s"] + nai["elementwise_s"]
print(verdict("003.obs1.gemm_share", 100 * pre["gemm_share"], pivot=None, within=1.2, noise=noise1,
              here=f"fused_pre step, B = {B_PROF}, H = nx = {H_PROF}, 1 thread",
              reasons=[(pre["elementwise_s"] > pre["gemm_s"],
                        "the one element-wise kernel outweighs the one GEMM at this shape")]))
if noise1.ok:
    if nai["gemm_share"] > 0.8:
        print(f"naive is already {nai['gemm_share']:.0%} GEMM here: fusion did not make the step 'all GEMM'; what it "
              f"changed is the calls per step ({nai['calls_per_step']} -> {pre['calls_per_step']}) and the step time "
              f"({t_nai / t_pre:.1f}x shorter)")
    else:
        print(f"fusion raised the GEMM share from {nai['gemm_share']:.0%} (naive) to {pre['gemm_share']:.0%} "
              f"and made the step {t_nai / t_pre:.1f}x shorter")

# %% [markdown]
# ## Observation 2 · $XW^T$ versus $WX^T$: the runtime
#
# Same FLOPs ($2 \cdot 64 \cdot 2048 \cdot 512$), one BLAS call each — only the layout differs.
# numpy passes `W.T` to BLAS as a transpose flag, no copy.
#
# **Predict:** will the seed's layout $Y^T = WX^T$ be faster with this machine's BLAS too?

# %% tags=["nbval-ignore-output"]
peak = timing.peak_gflops()
seed_case = lstm_exp.layout_gemm_times(64, 512, 512, repeat=timing.scaled(15, 7))
noise2 = seed_case["comparison"].noise
noise2.add(max(seed_case["gflops_XWt"], seed_case["gflops_WXt"]) > 1.1 * peak, "faster than the measured GEMM peak")
print(f"Y  = X Wᵀ : {seed_case['XWt_s'] * 1e6:7.1f} µs  ({seed_case['gflops_XWt']:.0f} GFLOP/s)")
print(f"Yᵀ = W Xᵀ : {seed_case['WXt_s'] * 1e6:7.1f} µs  ({seed_case['gflops_WXt']:.0f} GFLOP/s)")
print(f"GEMM peak measured here: {peak:.0f} GFLOP/s (1 thread)")


def layout_line(what, r, noise, interval):
    """One computed line: which layout won, by how much, against the seed's 'almost twice as fast'."""
    if "003.fig3.runtime" in CLAIMS:
        return verdict("003.fig3.runtime", r, here=what, noise=noise, interval=interval)
    if not noise.ok:
        return f"{what}: {noise.warning()}"
    side = ("Yᵀ = W Xᵀ faster: the seed's direction" if r > 1.1 else "Y = X Wᵀ faster: the opposite of the seed"
            if r < 1 / 1.1 else "no real difference, unlike the seed")
    return (f"Seed 003, Fig. 3b: Yᵀ = W Xᵀ 'almost twice as fast' (Titan Xp, cuBLAS). Here ({what}): "
            f"t(X Wᵀ) / t(W Xᵀ) = {r:.2f} -- {side}.")


print(layout_line("BLAS sgemm, 1 thread", seed_case["ratio"], noise2, seed_case["ratio_interval"]))

# %% [markdown]
# ## Observation 2 · the utilisation half: what the cache does
#
# The seed explains its result with the right half of Fig. 3: the transposed product hit the cache
# much more often (numbers above). Why would the *order* of operands change the hit rate?
# Write each product as the plain loop nest that produces its output row by row, one dot product
# per element:
#
# * $Y = XW^T$: for each of the B rows of X, stream **all of W** ($4H \times n_x$) past it;
# * $Y^T = WX^T$: for each of the 4H rows of W, stream **all of X** ($B \times n_x$) past it.
#
# The streamed operand hits in a cache level only if *all* of it fits there (otherwise each line is
# evicted before its next use). At the seed's shape, X is small and W is large. Hardware counters
# would measure this directly (`perf stat -e cache-references,cache-misses`); the code asks for them
# and says whether it got them. Where it did not, the hit rates are **modelled** from the bytes each
# loop nest moves through each cache level of this machine — and then the loop nests are timed, to
# see whether the model's prediction shows up in the clock.
#
# **Predict:** which cache level separates the two layouts on this machine?

# %% tags=["nbval-ignore-output"]
counters, why_not = lstm_exp.hardware_counters(64, 512, 512, reps=timing.scaled(10, 3))
model = lstm_exp.layout_traffic_model(64, 512, 512)
print(f"X: {model['bytes_X'] // 1024} KiB, W: {model['bytes_W'] // 1024} KiB")
for lvl, row in model["levels"].items():
    print(f"{lvl:3s} ({row['size'] // 1024:6d} KiB): "
          + "   ".join(f"{name} hit {100 * row[k]['hit_rate']:3.0f}%, fetches {row[k]['bytes_from_below'] / 2**20:6.1f} MiB"
                       for k, name in (("XWt", "X Wᵀ"), ("WXt", "W Xᵀ"))))
if counters is not None:
    print("MEASURED with perf stat: hit rate "
          + ", ".join(f"{k} {100 * v:.0f}%" for k, v in counters["hit_rate"].items()))
else:
    print(f"hardware counters: not available here ({why_not}); the hit rates above are MODELLED, not measured")
lstm_plots.hit_rate_bars(model, seed={"XWt": CLAIMS["003.fig3.hit_rate_XWt"].value,
                                  "WXt": CLAIMS["003.fig3.hit_rate_WXt"].value},
                     source="measured" if counters is not None else "modelled")
plt.show()

# %% tags=["nbval-ignore-output"]
split = [lvl for lvl, row in model["levels"].items() if row["XWt"]["inner_fits"] != row["WXt"]["inner_fits"]]
L = split[0] if split else next(iter(model["levels"]))
row = model["levels"][L]
for key, cid in (("XWt", "003.fig3.hit_rate_XWt"), ("WXt", "003.fig3.hit_rate_WXt")):
    r = row[key]
    streamed = "W" if key == "XWt" else "X"
    print(verdict(cid, 100 * r["hit_rate"], pivot=None, within=1.5, here=f"modelled, {L} of this CPU",
                  reasons=[(r["inner_fits"], f"all of {streamed} fits in {L}, so after the first pass every "
                                             "re-read of it hits"),
                           (not r["inner_fits"] and r["hit_rate"] > 0.4,
                            "the model counts every line load: the row held fixed is re-used from L1 on every dot "
                            f"product (half the loads hit), while the streamed {streamed} misses every time")]))

# %% [markdown]
# The model predicts which loop nest must fetch more from beyond that cache level. Does the clock
# agree? `lstm_exp.loop_order_times` runs the two loop nests (the same numba code, operands swapped, no BLAS);
# then compare with the BLAS numbers above.

# %% tags=["nbval-ignore-output"]
loops = lstm_exp.loop_order_times(64, 512, 512, repeat=timing.scaled(7, 3))
noise3 = loops["comparison"].noise
print(f"plain loop nest: X Wᵀ {loops['XWt_s'] * 1e3:.2f} ms, W Xᵀ {loops['WXt_s'] * 1e3:.2f} ms, "
      f"same numbers: {loops['agree']}")
print(layout_line("plain loop nest, 1 thread", loops["ratio"], noise3, loops["ratio_interval"]))
if noise2.ok and noise3.ok:
    predicted = bool(split)
    seen = loops["ratio"] > 1.1
    print(("The model predicted a faster W Xᵀ (its streamed operand stays in " + L + ")" if predicted else
           "The model predicted no difference (both operands fit, or neither, in every level)")
          + (", and the loop nest measured it." if predicted == seen else ", but the loop nest did not show it."))
    blas_flat = 0.9 < seed_case["ratio"] < 1.1
    print("BLAS: " + ("both layouts alike -- it copies (packs) blocks of both operands into cache-sized panels "
                      "before multiplying, so which one is 'streamed' no longer depends on the layout flag."
                      if blas_flat else f"the layouts differ by {max(seed_case['ratio'], 1 / seed_case['ratio']):.2f}x "
                      "even with packing; the BLAS picks a different kernel for each transpose flag."))

# %% [markdown]
# The seed measured one shape. A sweep over batch and hidden size around it shows where (and
# whether) the transposed layout wins with this machine's BLAS — the autotuner's job is to not have
# to guess.

# %% tags=["nbval-ignore-output"]
BS = timing.scaled([16, 32, 64, 128, 256], [16, 64, 256])
HS = timing.scaled([128, 256, 512, 1024], [128, 512])
cells = [[lstm_exp.layout_gemm_times(b, h, repeat=5) for b in BS] for h in HS]
ratios = np.array([[c["ratio"] for c in row] for row in cells])
noise4 = cells[0][0]["comparison"].noise
for c in (c for row in cells for c in row):
    noise4 = noise4 | c["comparison"].noise
lstm_plots.ratio_heatmap(BS, HS, ratios)
plt.show()
print(noise4.warning() or f"transposed layout faster (by > 5%) in {int((ratios > 1.05).sum())} of {ratios.size} "
      f"cells, slower in {int((ratios < 0.95).sum())}")

# %% [markdown]
# ## Observation 3 · library-call overhead against batch size
#
# Per step, `naive` makes 34 calls, `fused_pre` and `transposed` 2. Each call has a fixed cost
# (Python, numpy dispatch, BLAS set-up). At small batch the work per call is tiny and that fixed
# cost weighs most; at large batch the GEMMs do. The seed compares the *overhead* (time spent
# launching), not the number of launches. At B = 1 the work per call is smallest, so the time ratio
# naive / fused_pre there is our closest analogue.
#
# **Predict:** will the ratio at B = 1 be nearer the call-count ratio, or the seed's overhead ratio?

# %% tags=["nbval-ignore-output"]
ov = lstm_exp.overhead_vs_batch(timing.scaled([1, 4, 16, 64, 256], [1, 16, 256]), nh=128,
                         methods=("naive", "fused_pre", "transposed"), T=timing.scaled(20, 10))
lstm_plots.overhead_plot(ov)
plt.show()
for b, tn, tf, tt in zip(ov["B"], ov["naive"], ov["fused_pre"], ov["transposed"]):
    print(f"B = {b:4d}: naive / fused_pre = {tn / tf:5.1f}x   naive / transposed = {tn / tt:5.1f}x")
calls = {m: lstm_exp.profile_step(1, 128, method=m, repeat=1)["calls_per_step"] for m in ("naive", "fused_pre")}
calls_ratio = calls["naive"] / calls["fused_pre"]
r1 = ov["naive"][0] / ov["fused_pre"][0]
seed_launch = CLAIMS["003.fig2a.launch_overhead"].value
print(f"calls per step, naive / fused_pre: {calls_ratio:.0f}x (a count, the same on every machine)")
print(verdict("003.fig2a.launch_overhead", r1, here=f"B = {ov['B'][0]}, H = 128, time naive / fused_pre, 1 thread",
              noise=ov["noise"],
              reasons=[(r1 > seed_launch and calls_ratio > seed_launch,
                        f"naive makes {calls_ratio:.0f}x the calls of fused_pre, and "
                                                     "a numpy call costs about as much as a tiny GEMM here"),
                       (r1 < calls_ratio, "fused_pre's two calls are each more expensive than a numpy ufunc (a GEMM call "
                                "and a numba kernel call), so the time ratio stays below the call ratio")]))

# %% [markdown]
# ## The methods side by side
#
# Forward and forward + backward at the seed's shape (B = 64, H = nx = 512), T steps, per step.
# (`benchmarks/lstm.py` runs more shapes and puts `torch.nn.LSTM` in the same table.)
#
# **Predict:** which method is fastest end to end here — and is it the seed's transposed layout?

# %% tags=["nbval-ignore-output"]
T_RUN = timing.scaled(20, 8)
fwd = lstm_exp.method_times(64, 512, 512, T_RUN, repeat=3)
both = lstm_exp.method_times(64, 512, 512, T_RUN, backward=True, repeat=3)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))


def flag(noise):
    """A plot title's suffix when the noise guard says the run is unreliable."""
    return "" if noise.ok else "  (unreliable run: see the warning)"


lstm_plots.method_bars(fwd["ms_per_step"], axes[0], title="forward" + flag(fwd["comparison"].noise))
lstm_plots.method_bars(both["ms_per_step"], axes[1], title="forward + backward" + flag(both["comparison"].noise))
fig.tight_layout()
plt.show()
gemm_flop = 2 * timing.gemm_flops(64, 4 * 512, 512)   # x W_ih^T and h W_hh^T per step
for m, ms in fwd["ms_per_step"].items():
    rate = gemm_flop / (ms * 1e-3) / 1e9
    print(f"{m:11s} forward {ms:7.3f} ms/step = {rate:6.1f} GFLOP/s ({100 * rate / peak:4.0f}% "
          f"of peak)   fwd+bwd {both['ms_per_step'][m]:7.3f} ms/step")
noise5 = fwd["comparison"].noise | both["comparison"].noise
print(noise5.warning() or f"fastest here: forward {fwd['best']}, forward + backward {both['best']} "
      f"({both['ms_per_step']['naive'] / both['ms_per_step'][both['best']]:.1f}x faster than naive)")
if not noise5.ok:
    print("What the timed pairs still support, forward + backward: " + both["comparison"].said("fused_pre", over="naive"))

# %% [markdown]
# **The seed's other baseline: a library's fused LSTM.** The seed measured EcoRNN beside cuDNN, NVIDIA's
# closed fused LSTM, which it says speeds up the frameworks' default; where cuDNN won, EcoRNN was close
# (both numbers are printed below, from the registry). On a CPU the analogue is `torch.nn.LSTM` (oneDNN's
# fused kernels), timed on one thread beside `naive` (the default) and `fused_pre` (ours) -- where torch is
# installed.

# %% tags=["nbval-ignore-output"]
print(show("003.intro.cudnn_vs_default", "003.fig4.cudnn_margin"))
fb = lstm_exp.fused_baseline(64, 512, 512, T_RUN, repeat=3)
if not fb["available"]:
    print(f"Skipped: {fb['why']}; with torch installed this cell times torch.nn.LSTM beside naive and fused_pre.")
else:
    fbc = fb["comparison"]
    print("  ".join(f"{k} {v:.3f} ms/step" for k, v in fb["ms_per_step"].items()))
    print(verdict("003.intro.cudnn_vs_default", fbc.speedup("torch"), here="torch.nn.LSTM vs naive, 1 thread",
                  noise=fbc.noise, interval=fbc.speedup_interval("torch"),
                  reasons=[(fb["ms_per_step"]["naive"] / fb["ms_per_step"]["fused_pre"] > 2,
                            "our own fused_pre is already more than 2x naive here: the default's small calls cost "
                            "much on this CPU")]))
    gap = fbc.ratio("fused_pre", "torch")  # > 1: torch faster
    margin = 1 + CLAIMS["003.fig4.cudnn_margin"].value / 100
    print(f"fused_pre vs torch.nn.LSTM: fused_pre takes {gap:.2f}x torch's time. "
          + {"yes": f"torch is at least {margin:.2f}x faster in the pairs: ours is NOT within the seed's margin here.",
             "no": f"torch is not {margin:.2f}x faster in the pairs: ours is within the seed's margin (or ahead).",
             "cannot tell": f"The pairs cannot tell whether the gap exceeds {margin:.2f}x: " + fbc.said("torch", over="fused_pre")}
          [fbc.faster("torch", by=margin, over="fused_pre")])

# %% [markdown]
# ## At the GEMM limit: where a training pass spends its time
#
# Fusion removed calls; what is left? `lstm_exp.profile_training` splits one forward + backward pass of
# `fused_pre` into its phases -- the big input GEMM, the T recurrent GEMMs, the gate kernels, the
# backward GEMMs, copies, allocations -- times each on its own, and compares their sum with the
# whole pass timed end to end (the rest is Python per step and threads waiting for each other).
# Every GEMM row is also given as a share of this BLAS's measured peak.
#
# **Predict:** what share of the pass is GEMM at the seed's shape? If it is most of it, what is the
# only way left to go faster?

# %% tags=["nbval-ignore-output"]
tp = lstm_exp.profile_training(64, 512, 512, timing.scaled(20, 8), repeat=3, peak=peak)
for row in tp["rows"]:
    rate = "" if row["gflops"] is None else f"  {row['gflops']:6.0f} GFLOP/s = {row['pct_peak']:3.0f}% of peak"
    print(f"{row['phase']:<40} {row['ms']:7.3f} ms/step {100 * row['share']:5.1f}%{rate}")
print(f"{'other (Python per step, threads waiting)':<40} {tp['other_ms']:7.3f} ms/step")
gemm_share = sum(r["ms"] for r in tp["rows"] if r["kind"] == "gemm") / tp["total_ms"]
bits = backend.blas_vector_bits()
if not tp["noise"].ok:
    print(tp["noise"].warning())
else:
    print(f"GEMMs take {gemm_share:.0%} of the pass here"
          + ("; what remains is a faster GEMM" if gemm_share > 0.75 else
             "; the rest of the step still matters here"))
if bits["kernel_bits"] and bits["kernel_bits"] < bits["cpu_bits"]:
    print(f"This BLAS runs its {bits['kernel']} kernels ({bits['kernel_bits']}-bit vectors) on a CPU with "
          f"{bits['cpu_bits']}-bit ones"
          + (f" (OPENBLAS_CORETYPE={bits['coretype_env']} says so)" if bits["coretype_env"] else "")
          + ": a library that uses the full width (oneDNN inside torch does) has a higher GEMM peak.")
else:
    print(f"This BLAS's GEMM kernels ({bits['kernel'] or 'unnamed'}) use the CPU's full vector width as far as "
          "the course can tell.")

# %% [markdown]
# ## Small batches: one GEMM, or B matrix–vector products?
#
# At inference a server often has only a few requests at once. A BLAS GEMM first *packs* its
# operands -- copies $W_{hh}$ into cache-sized panels -- and at B = 2 that copy of 4H × H weights
# can cost more than the multiplications. `gemv` instead runs one matrix–vector product per batch
# row, streaming $W_{hh}$ as stored -- B passes over the weights instead of one packed copy.
#
# **Predict:** going from B = 1 to B = 2 doubles the arithmetic. How much longer will one step take
# with one GEMM per step? With `gemv`? Up to which B will `gemv` stay ahead?

# %% tags=["nbval-ignore-output"]
lat = lstm_exp.latency_vs_batch(timing.scaled([1, 2, 4, 8, 16, 64], [1, 2, 8]), nh=timing.scaled(512, 256),
                         methods=("fused_pre", "transposed", "gemv"), T=timing.scaled(20, 8))
lstm_plots.latency_plot(lat)
plt.show()
for i, b in enumerate(lat["B"]):
    print(f"B = {b:3d}: " + "   ".join(f"{m} {lat[m][i]:.3f}" for m in ("fused_pre", "transposed", "gemv"))
          + " ms/step")
if not lat["noise"].ok:
    print(lat["noise"].warning())
else:
    wins = [b for i, b in enumerate(lat["B"]) if lat["gemv"][i] < min(lat["fused_pre"][i], lat["transposed"][i])]
    g1, g2 = lat["fused_pre"][0], lat["fused_pre"][1]
    v1, v2 = lat["gemv"][0], lat["gemv"][1]
    print(f"B = {lat['B'][0]} -> {lat['B'][1]}: one GEMM per step took {g2 / g1:.1f}x as long, gemv {v2 / v1:.1f}x")
    print(f"gemv was the fastest at B = {', '.join(map(str, wins))}" if wins else
          "gemv was never the fastest here: this BLAS's GEMM handles small batches well")

# %% [markdown]
# ## The autotuner decides
#
# `autotune_exp.tune(B, H, nx, T, dtype, threads)` times every method's forward pass for a few steps,
# keeps the fastest and writes the decision to a JSON file under the cache directory
# (`$COURSE_CACHE_DIR`, else `~/.cache/parallel-rnns-course`), keyed by shape, dtype, threads and
# machine. You ask for it explicitly: `autotune_exp.best_method(...)` returns the name to pass as
# `method=`, and `autotune_exp.lstm_forward_tuned(params, X)` does both. A second request for the same
# key reads the cache and measures nothing; `force=True` measures again.

# %% tags=["nbval-ignore-output"]
decision = autotune_exp.tune(64, 512, 512, 100, "float32", force=True)
print(decision.key)
print(decision.table())
print(f"(measured in {decision.probe['seconds']:.2f} s, stored in $COURSE_CACHE_DIR/{autotune_exp.cache_path().name})")

# %%
again = autotune_exp.tune(64, 512, 512, 100, "float32")
print("second call measured again:", again.measured_now)
print("same decision as the first call:", again.best == decision.best)
print("the tuned forward agrees with 'naive' to round-off:",
      np.allclose(autotune_exp.lstm_forward_tuned(p64, X, h0, c0)[0], ref, atol=1e-12))

# %% [markdown]
# **The seed's layout, isolated and end to end.** The transposed layout changes more than one GEMM:
# its fused kernel walks the gates along the batch (rows of B values) instead of along 4H, and the
# results are copied back to the caller's (T, B, H) layout at the end. The next cell puts the
# isolated-GEMM ratio, the end-to-end ratio and the autotuner's choice side by side, and picks the
# explanation from the measurements.

# %% tags=["nbval-ignore-output"]
g_r = seed_case["ratio"]                                             # > 1: transposed GEMM faster
e_r = fwd["ms_per_step"]["fused_pre"] / fwd["ms_per_step"]["transposed"]   # > 1: transposed faster end to end
ew_r = prof["transposed"]["elementwise_s"] / prof["fused_pre"]["elementwise_s"]
# per step, what the end-to-end time holds beyond the GEMM and the gate kernel (the copies back fall there)
rest = {m: fwd["ms_per_step"][m] / 1e3 - prof[m]["gemm_s"] - prof[m]["elementwise_s"] for m in ("fused_pre", "transposed")}


def word(r):
    return "faster" if r > 1.05 else "slower" if r < 1 / 1.05 else "about as fast"


# the copy back, timed on its own: (T, H, B) -> the caller's (T, B, H), per step
Ht_ = np.zeros((T_RUN, 512, 64), np.float32)
copy_s = timing.measure(lambda: np.ascontiguousarray(Ht_.transpose(0, 2, 1)), repeat=5).min / T_RUN
noise6 = noise2 | fwd["comparison"].noise
if not noise6.ok:
    print(noise6.warning())
    print("What the timed pairs still support -- isolated GEMM: " + seed_case["comparison"].said("WXt", over="XWt")
          + "; end to end: " + fwd["comparison"].said("transposed", over="fused_pre"))
else:
    print(f"isolated GEMM: the transposed layout is {word(g_r)} ({g_r:.2f}x)")
    print(f"end to end (forward per step): transposed is {word(e_r)} than fused_pre ({e_r:.2f}x)")
    print(f"the autotuner picked: {decision.best}")
    reasons = [(noise1.ok and ew_r > 1.2, f"its gate kernel is {ew_r:.1f}x slower than fused_pre's: each row holds only B = 64 "
                            "values, short vectors instead of rows of 4H = 2048"),
               (g_r < 1 / 1.05, "its recurrent GEMM is already slower in isolation"),
               (copy_s > 0.5 * (rest["transposed"] - rest["fused_pre"]) > 0.05 * fwd["ms_per_step"]["fused_pre"] / 1e3,
                f"outside its GEMM and gate kernel a transposed step takes "
                f"{(rest['transposed'] - rest['fused_pre']) * 1e3:.3f} ms more than fused_pre's, and the copy back to "
                f"the (T, B, H) layout, timed alone, costs {copy_s * 1e3:.3f} ms per step of it")]
    if g_r > 1.05 and e_r < 1 / 1.05:
        print("so the layout that wins the isolated GEMM loses end to end: "
              + next((t for c, t in reasons if c), "no measured fact here explains it"))
    elif e_r > 1.05:
        print("so the seed's layout also wins end to end here")
    else:
        print("so the layout decides little here: the GEMM is the same work either way")

# %% [markdown]
# ## Training a character-level language model
#
# The seed's Fig. 4 compares training throughput (PTB, Wikitext-2) of MXNet's default LSTM, cuDNN
# and EcoRNN. Our laptop-sized version: a character LM on the pydoc help text (the course corpus,
# as in chapter 07), one-hot input → LSTM → softmax, Adam. Every method sees the same batches, so
# the losses agree and only the speed differs. `naive` plays the framework default (many small
# calls).
#
# **Predict:** how much more throughput than `naive` will the fastest method give at this small size?

# %%
text = corpus.load_text(200_000)
vocab = corpus.Vocab.from_text(text)
ids = vocab.encode(text)
LM = dict(nh=128, T=32, batch=32, steps=20, seed=0)
print(f"{len(text)} characters, vocabulary {vocab.size}; {LM['steps']} steps of {LM['T']} x {LM['batch']} characters")

# %% tags=["nbval-ignore-output"]
lm = lstm_exp.lm_throughput(ids, vocab.size, repeat=timing.scaled(3, 1), **LM)
tps = lm["tokens_per_s"]
for m, v in tps.items():
    print(f"{m:11s} {v:8.0f} tokens/s")
lstm_plots.method_bars(tps, ylabel="tokens / s (higher is better)", higher_is_better=True,
                   title="char-LM training throughput" + flag(lm["comparison"].noise))
plt.show()
lm_prof = lstm_exp.profile_step(LM["batch"], LM["nh"], vocab.size, method="naive", repeat=3)
gain = tps[lm["best"]] / tps["naive"]
print(verdict("003.summary.vs_default", gain, here=f"char LM, H = {LM['nh']}, T = B = {LM['T']}, "
              f"{lm['best']} vs naive, 1 thread", noise=lm["comparison"].noise,
              reasons=[(lm_prof["gemm_share"] > 0.7,
                        f"naive already spends {lm_prof['gemm_share']:.0%} of a step in GEMMs here, which fusion "
                        "does not shrink; the seed's GPU also paid a launch cost per kernel"),
                       (lm_prof["gemm_share"] < 0.5,
                        f"naive spends only {lm_prof['gemm_share']:.0%} of a step in GEMMs here: the rest is numpy "
                        "calls on small arrays, whose overhead fusion removes")]))

# %%
finals = {m: round(losses[-1], 2) for m, losses in lm["loss"].items()}
print(f"loss after {LM['steps']} steps: {finals['naive']:.2f} nats (started at {lm['loss']['naive'][0]:.2f}; "
      f"ln V = {np.log(vocab.size):.2f})")
print("all methods reach the same loss:", len(set(finals.values())) == 1)

# %% [markdown]
# ## Try it: batch, hidden size and method
#
# Milliseconds per forward step of the chosen method next to `naive` (nx = H). Move B down (call
# overhead grows in importance) and H up (the GEMMs take over) and watch the ratio.

# %% tags=["nbval-ignore-output"]
def _render(data, ax):
    lstm_plots.method_bars(data["ms_per_step"], ax, title=f"B = {data['B']}, nh = {data['nh']}")
    m = data["method"]
    return f"{m}: {data['ms_per_step'][m]:.3f} ms/step, {data['gflops'][m]:.1f} GFLOP/s"


widgets.sweep_panel(lstm_exp.widget_compute,
                    {"batch": (1, 256, 1, 64), "nh": (32, 1024, 32, 256), "method": list(lstm.METHODS[1:])},
                    render=_render, cost=lambda batch, nh, method: batch * nh * nh, max_cost=256 * 1024 * 1024)

# %% [markdown]
# ## The chapter on this machine, on one screen
#
# What this run measured, and what its timed pairs let the chapter conclude ("cannot tell" where the
# machine was too busy to decide). The lessons below hold whatever these numbers are.

# %% tags=["nbval-ignore-output"]
print(f"GEMM share of a fused_pre step (B = 64, H = 512): {100 * pre['gemm_s'] / t_pre:.0f}% "
      f"(naive: {100 * nai['gemm_s'] / t_nai:.0f}%); library calls per step 34 -> 2")
print(f"layout, BLAS: Y^T = W X^T took {1 / seed_case['ratio']:.2f}x the time of Y = X W^T; "
      f"W X^T at least 1.1x faster in the pairs: {seed_case['comparison'].faster('WXt', by=1.1, over='XWt')}")
print(f"layout, plain loop nest: ratio {loops['ratio']:.2f}x; W X^T at least 1.1x faster in the pairs: "
      f"{loops['comparison'].faster('WXt', by=1.1, over='XWt')}")
print(f"call overhead at B = 1: naive / fused_pre = {r1:.1f}x in time, {calls_ratio:.0f}x in calls")
print(f"end to end (forward, B = 64, H = 512): fastest median {fwd['best']}; fused_pre over transposed: "
      + fwd["comparison"].said("fused_pre", over="transposed"))
print(f"the autotuner picked {decision.best}; the copy back to (T, B, H) costs {copy_s * 1e3:.3f} ms per step")
print(f"char LM: {lm['best']} at {gain:.2f}x naive's tokens/s; all methods reach the same loss: "
      f"{len(set(finals.values())) == 1}")

# %% [markdown]
# ## What we learned
#
# * Where a step's time goes is measured, not assumed: the profile above says how much of each
#   method is GEMM on this machine; fusion's sure effect is fewer library calls per step (34 → 2).
# * $XW^T$ vs $WX^T$ is the same arithmetic in a different layout. In a plain loop nest the layout
#   decides which operand is re-read, and the cache model says in which level that shows; a BLAS
#   packs its operands into cache-sized panels, which can take that decision away from the layout.
#   The lines printed under each measurement say what happened on this machine.
# * A faster GEMM is not a faster layer: the rest of the step moves with the layout too, which is
#   why the autotuner times the whole forward pass.
# * Because every step has the same shape, a few milliseconds of measuring decide the method for
#   the whole run — once per shape and machine, and only when asked (`autotune_exp.best_method`).
# * Once the GEMMs are most of the pass, only a faster GEMM helps; the profile says how far this
#   BLAS is from its own peak, and whether its kernels use the CPU's full vector width.
# * Small batches change the answer: a GEMM's packing can cost more than its arithmetic, and B
#   matrix–vector products that stream the weights as stored can win.
#
# Worksheet: [exercises/09_lstm_layout.ipynb](../exercises/09_lstm_layout.ipynb).
# Next: [10 · MGRIT](10_mgrit.ipynb) — parallel in time.
