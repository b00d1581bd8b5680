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
# # 05 · Threads, loop fusion, JIT vs AOT -- and the fastest CPU training step
#
# Chapters 03 and 04 made each matrix product efficient: batch it, tile it, vectorise it. This
# chapter puts a whole training step together and asks the seed's remaining questions
# (Han & Uboweja §4.1 and §4.6-4.10):
#
# 1. **Threads** (seed Fig. 12): how does each workload scale from 1 thread to all cores, and
#    why did *tiling + parallel* scale worse than *parallel* alone for the seed?
# 2. **Loop fusion** (seed §4.9): doing all element-wise work of a step in one pass instead of
#    one pass per operation.
# 3. **Where the time goes** (seed §4.10): the phase breakdown of one step, the seed's ten rows.
# 4. **A compiled step vs hand-written numpy** (seed Fig. 7), large and small.
# 5. **JIT vs ahead-of-time** (seed Fig. 14): what compiling costs, and what a compile cache saves.
#
# The result is `course_lib.models.fast_rnn.train_step` -- open `course_lib/models/fast_rnn.py`: five
# ideas, each a few lines (one GEMM for the input projection of all time steps; preallocated
# workspaces; fused element-wise kernels, each one body compiled serial and `prange`; BLAS with
# transposes as views; threads for BLAS and numba together).

# %%
import numpy as np

import course_lib  # noqa: F401  (first: it sets up numba's CUDA mode)
from course_lib.core import backend, timing
from course_lib.models import fast_rnn, rnn
from course_lib.experiments import jit as jit_exp, profile as profile_exp
from course_lib.experiments.batching import cache_level, cache_sizes
from course_lib.teaching import claims, widgets
from course_lib.teaching.claims.seed000_perf import S410_PHASES
from course_lib.teaching.plots import perf as perf_plots
from course_lib.teaching.verdict import verdict

CORES = backend.max_threads()  # cores, capped by NUMBA_NUM_THREADS

# %% [markdown]
# ## First: the same maths
#
# A fast step is worth nothing if it computes something else. The gradients of the fast step
# agree with chapter 02's `bptt_linear`, in float64 to round-off and in float32 (where the fast
# step uses the course's vectorisable rational `tanh`, `course_lib.algorithms.activations.fast_tanh`)
# to float32 accuracy.

# %%
rng = np.random.default_rng(0)
for dtype, tol in ((np.float64, 1e-10), (np.float32, 1e-4)):
    p = rnn.init_params(6, 8, 4, seed=1, dtype=dtype)
    X = rng.uniform(-1, 1, (7, 5, 6)).astype(dtype)
    Y = rng.uniform(-1, 1, (7, 5, 4)).astype(dtype)
    ref = rnn.bptt_linear(p, X, Y)
    fast, loss = fast_rnn.gradients(p, X, Y)
    worst = max(np.max(np.abs(getattr(fast, k) - getattr(ref, k))) / np.max(np.abs(getattr(ref, k)))
                for k in ("Wxh", "Whh", "Why"))
    new_ref = rnn.sgd_step(p, ref, 0.05)
    new_fast, _ = fast_rnn.train_step(p, X, Y, 0.05)
    same_update = all(np.allclose(getattr(new_fast, k), getattr(new_ref, k), rtol=tol, atol=tol) for k in ("Wxh", "Whh", "Why"))
    print(f"{np.dtype(dtype).name}: gradients within {tol:g} (relative): {worst < tol}; same SGD update: {same_update}; "
          f"loss {loss:.4f}")

# %% [markdown]
# ## 1 · Threads: 1 … all cores for each workload (seed Fig. 12)
#
# `backend.set_threads(n)` sets the BLAS library's and numba's thread counts together.
# We time three matrix products -- BLAS, chapter 04's `prange` kernel parallel over rows, and the
# parallel + tiled kernel -- plus a fused element-wise kernel and two whole training steps, at every
# thread count (interleaved: 1, 2, 1, 2, ...), and plot the speedup over one thread.
#
# **Predict**: with this machine's core count (printed), which workloads get close to the ideal line,
# and which gain little? The seed's 61 cores gave far less than 61x (its words below).

# %%
print(claims.show("000.halide.fig12.parallel_ideal"))

# %% tags=["nbval-ignore-output"]
print(f"cores: {CORES}, numba threads now: {backend.get_threads()}")
n_threads_demo = timing.scaled(384, 128)
scaling = None
if CORES < 2:  # one usable thread: a sweep would print "speedup at 1 threads: 1.00x" for every workload
    print(f"only {CORES} thread usable here (this process's CPU affinity, capped by NUMBA_NUM_THREADS): a thread "
          "sweep has nothing to compare, so it is skipped. On a machine with 2+ cores this cell times each "
          "workload at 1 ... all threads; the seed's own words above say what 61 cores gave.")
else:
    scaling = profile_exp.thread_scaling(profile_exp.WORKLOADS, n=n_threads_demo, repeat=5)
    top = scaling["threads"][-1]
    l2 = cache_sizes().get("L2")
    trusted = scaling["noise"].ok
    if not trusted:  # first the warning, then the numbers without explanations: nothing is concluded from them
        print(scaling["noise"].warning())
    for w in profile_exp.WORKLOADS:
        secs = ", ".join(f"{t} thr {s * 1e3:7.2f} ms" for t, s in zip(scaling["threads"], scaling["seconds"][w]))
        sp = scaling["speedup"][w][-1]
        why = ""
        if trusted and sp > 1.1 * top / scaling["threads"][0]:
            ws = scaling["working_set"][w]
            why = (f"  superlinear: the working set ({ws / 2**20:.1f} MiB) does not fit one core's L2 but each of {top} "
                   f"threads' share does" if l2 and ws > l2 >= ws / top else
                   "  superlinear with no cache explanation: the 1-thread run was probably slowed by other programs")
        elif trusted and sp < 1.0:
            why = "  slower on more threads: too little work per thread, or the cores are busy"
        print(f"{w:<30} {secs}   speedup at {top} threads: {sp:.2f}x{why}")

# %% tags=["nbval-ignore-output"]
if scaling is not None:
    perf_plots.thread_scaling_plot(scaling);

# %% [markdown]
# The seed's reading of its Fig. 12: Halide's `parallel()` scaled well with vectorisation but
# *worse* with tiling, because one thread processed tiles far apart in the matrix (poor locality)
# and each tile was too little work per thread. On a machine with few cores the ideal line is
# short, and the *other* programs running matter: when they did, the cell above printed its warning
# first and explained none of the ratios.
#
# ## Tiling × parallel interplay: see chapter 06
#
# The seed's Figure 10 (eight combinations of tiling, SIMD and `parallel()`, among them *"tiling +
# parallel was slower than parallel alone"*) is a statement about Halide schedules, so the course
# times it once, with Halide itself, in [06 · Fig. 10 · Eight combinations of tiling, SIMD and
# parallel](06_halide.ipynb#Fig.-10-·-Eight-combinations-of-tiling,-SIMD-and-parallel). This chapter
# stays with threads over whole workloads (above) and fusion (below).

# %% [markdown]
# ## 2 · Loop fusion vs separate passes (seed §4.9)
#
# Apart from its GEMMs, a training step does element-wise work on $T \cdot B \cdot n$ numbers:
# $\tanh$ of the pre-activations, the loss, the output delta $2(\hat y - y)(1-\hat y^2)$, the
# hidden delta $(\Delta h + \Delta z\,W_{hh}^T)(1-h^2)$. Written as numpy expressions each
# operation is its own pass over memory (11 passes for the two below); fused into numba loops
# it is **one pass per kernel** -- each number is loaded once, everything is done to it while it
# sits in a register, and it is stored once. `profile_exp.fusion_comparison` times both on one thread,
# and the fused kernels again on all threads. **Predict** the fusion speedup, given the seed's.

# %%
print(claims.show("000.halide.s49.loop_fusion"))

# %% tags=["nbval-ignore-output"]
fB, fn_ = timing.scaled(256, 128), timing.scaled(512, 256)
fus = profile_exp.fusion_comparison(batch=fB, n=fn_, T=10, repeat=7)
arrays = 10 * fB * fn_ * 4
print(f"separate numpy passes (1 thread): {fus['separate_s'] * 1e3:7.2f} ms")
print(f"fused numba kernels   (1 thread): {fus['fused_1thread_s'] * 1e3:7.2f} ms  -> fusion alone {fus['fusion_speedup']:.2f}x")
print(f"fused numba kernels ({CORES} thread{'s' if CORES > 1 else ''}): {fus['fused_all_s'] * 1e3:7.2f} ms  -> "
      + (f"with threads {fus['total_speedup']:.2f}x" if CORES > 1 else "the same kernels again: one thread is all there is here"))
if CORES > 1 and not fus["threads_noise"].ok:
    print("  (the run on all threads: " + fus["threads_noise"].warning() + ")")
print(verdict("000.halide.s49.loop_fusion", fus["fusion_speedup"], here=f"1 thread, numpy vs numba, {arrays / 2**20:.0f} MiB per array",
              reasons=[(cache_level(arrays) == "DRAM",
                        f"each array ({arrays / 2**20:.0f} MiB) is larger than the last cache level, so every extra "
                        "numpy pass is a trip to main memory"),
                       (cache_level(arrays) != "DRAM", f"each array ({arrays / 2**20:.0f} MiB) fits in "
                        f"{cache_level(arrays)}, where numpy's extra passes cost less than trips to main memory")],
              noise=fus["noise"]))

# %%
print("fused and separate agree (max abs diff < 1e-5):", fus["max_abs_diff"] < 1e-5,
      "| same loss (rel. diff < 1e-5):", fus["loss_rel_diff"] < 1e-5)

# %% [markdown]
# ### A trap on the way: numba's error model
#
# A fused pass only pays if its loop is vectorised (SIMD, chapter 04). While building `fast_rnn`
# we found our `tanh` kernel running far slower than expected: it had a division, and numba's
# default `error_model="python"` checks every divisor for zero so it can raise
# `ZeroDivisionError` -- a branch inside the loop that LLVM's vectoriser gives up on.
# `error_model="numpy"` (IEEE semantics: `x / 0` is `inf`) removes the branch. Same loop, both
# ways. **Predict** the ratio.

# %% tags=["nbval-ignore-output"]
em = profile_exp.error_model_comparison(timing.scaled(4_000_000, 1_000_000), repeat=7)
print(f"error_model='python': {em['python_s'] * 1e3:6.2f} ms   error_model='numpy': {em['numpy_s'] * 1e3:6.2f} ms"
      f"   -> {em['speedup']:.1f}x")
print(em["noise"].warning() or "(run looked reliable)")

# %%
print("same values either way:", em["same_result"])

# %% [markdown]
# ## 3 · Where the time goes (seed §4.10)
#
# `profile_exp.profile_step` runs one step phase by phase with a clock between phases -- the seed's ten
# rows, in its order. The *reference* is organised like the seed's step: a forward loop that
# computes $h_t$, then $\hat y_t$, then copies both into the arrays kept for backpropagation; the
# loss; a reverse loop with the output delta, hidden delta and gradient updates of each step; the
# descent. The *fast* step does each phase as one GEMM over all time steps plus a fused kernel,
# saves nothing (it computes intermediates where backpropagation reads them), allocates nothing
# (the "initialize" rows are its input checks) and fuses the loss into the output delta.
#
# The seed spent about a quarter of its epoch "saving all intermediate variables". **Predict**: how
# much does saving cost the reference here?

# %% tags=["nbval-ignore-output"]
size = timing.scaled(384, 128)
prof = {m: profile_exp.profile_step(m, T=10, batch=size, n=size, repeat=3) for m in ("reference", "fast")}
seed_pct = {ph: claims.CLAIMS[S410_PHASES[ph]].value for ph in profile_exp.PHASES}
print(f"{'phase (seed row)':<26} {'seed %':>7} {'reference %':>12} {'fast %':>8}")
for i, ph in enumerate(profile_exp.PHASES, 1):
    print(f"{f'{i}. {ph}':<26} {seed_pct[ph]:>7.2f} {prof['reference']['percent'][ph]:>12.2f} {prof['fast']['percent'][ph]:>8.2f}")
print(f"\nstep time: reference {prof['reference']['total_s'] * 1e3:.1f} ms, fast {prof['fast']['total_s'] * 1e3:.1f} ms "
      f"({prof['reference']['total_s'] / prof['fast']['total_s']:.2f}x)")
ref_pct = prof["reference"]["percent"]
gemm_pct = sum(ref_pct[k] for k in ("compute h_t", "hidden delta", "gradient updates"))
print(verdict("000.ch05.s410.saving", ref_pct["saving intermediates"], pivot=None, unit="%",
              here=f"numpy reference, B = n = {size}, T = 10",
              reasons=[(gemm_pct > 50,
                        f"copying h_t and ŷ_t here is a plain memory copy, small next to the GEMM phases "
                        f"({gemm_pct:.0f}% of our step); the seed saved its intermediates through Halide's JIT path "
                        "(§4.8: 'we still use JIT in some part of the AOT code, mainly to save the intermediate variables')")],
              noise=prof["reference"]["noise"]))

# %% tags=["nbval-ignore-output"]
perf_plots.phase_bars({"reference (numpy, per time step)": prof["reference"], "fast_rnn": prof["fast"]}, seed=seed_pct);

# %% [markdown]
# The seed found the three GEMM phases (compute $h_t$, hidden delta, gradient updates) at about a
# quarter each, and a quarter spent *copying*. In the fast step, where every phase is a large GEMM
# plus one fused pass and nothing is copied, the bars can only sit on the GEMM phases -- the table
# says how close to that it gets here. The phases' percentages must add to 100:

# %%
print("percentages add to 100:", all(abs(sum(p["percent"].values()) - 100) < 1e-6 for p in prof.values()))
print("phases (the seed's rows):", ", ".join(profile_exp.PHASES))

# %% [markdown]
# The seed also tried to make the saving row cheaper by keeping the states as an *array of 2-D
# images* instead of one 3-D image, and got no faster (its §4.10): *"that resulted in poorer cache
# locality for the Gradient Update steps and hence resulted in similar timing for epoch training time
# (using an array of 2D Image pointer instead a single 3D Image)"*. `profile_exp.saved_state_layouts`
# does both here: one new `(B, n)` array per step vs one `(T + 1, B, n)` array, and a gradient
# update that is one GEMM over contiguous states vs one GEMM per step. **Predict**: which phase does
# each layout win, and is the whole step similar?

# %% tags=["nbval-ignore-output"]
lay = profile_exp.saved_state_layouts(T=10, batch=timing.scaled(100, 32), n=timing.scaled(256, 128), repeat=7)
print("same gradient either way:", lay["same_gradient"])
for phase in ("save", "update", "step"):
    c = lay[phase]
    print(f"{phase:<7} one 3-D array {c.timings['one 3-D array'].median * 1e3:8.3f} ms   array of 2-D "
          f"{c.timings['array of 2-D'].median * 1e3:8.3f} ms (medians)   pairs: {c.ratio('array of 2-D'):.2f}x "
          "the 3-D time (median pair ratio)")
two_d_faster = lay["step"].faster("array of 2-D", by=1.1)
three_d_faster = lay["step"].faster("one 3-D array", by=1.1, over="array of 2-D")
if "yes" in (two_d_faster, three_d_faster):
    print("whole step: " + ("the array of 2-D" if two_d_faster == "yes" else "the single 3-D array")
          + " is more than 1.1x faster here -- unlike the seed's 'similar timing'")
elif two_d_faster == three_d_faster == "no":
    print("whole step: within 1.1x either way in the pairs' interval -- similar, as in the seed")
else:
    print("whole step: these pairs cannot tell (" + lay["step"].said("array of 2-D") + ")")

# %% [markdown]
# ### The whole step against the GEMM peak
#
# Steps of the same maths, timed interleaved with a plain GEMM: the fast step (its fused
# element-wise passes on the calling thread, `method="loop"`, the default), the same with those
# passes split over numba's threads (`make_workspace(..., method="prange")`), a careful numpy step
# (same GEMMs and buffers, but one numpy pass per element-wise operation: `fast_rnn.NumpyStep`) and
# the reference (`bptt_linear` + `sgd_step`). GFLOP/s counts the step's GEMM FLOPs
# (`fast_rnn.step_flops`). `python benchmarks/rnn_step.py` does this at the seed's full size
# (B = 1000, n = 1000, T = 10), with PyTorch columns when torch is installed.

# %% tags=["nbval-ignore-output"]
T, B, n = 10, timing.scaled(384, 128), timing.scaled(384, 128)
p0 = rnn.init_params(n, n, n, seed=0)
X = rng.uniform(-1, 1, (T, B, n)).astype(np.float32)
Y = rng.uniform(-1, 1, (T, B, n)).astype(np.float32)
ws, pf, pn, np_step = fast_rnn.make_workspace(T, B, n, n, n), p0.copy(), p0.copy(), fast_rnn.NumpyStep(T, B, n, n, n)
ws_par, pp = fast_rnn.make_workspace(T, B, n, n, n, method="prange"), p0.copy()
A1, A2, C = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(3))
cmp = timing.compare(
    fast=lambda: fast_rnn.train_step(pf, X, Y, 0.0, workspace=ws, inplace=True),
    fast_prange=lambda: fast_rnn.train_step(pp, X, Y, 0.0, workspace=ws_par, inplace=True),
    numpy=lambda: np_step(pn, X, Y, 0.0),
    reference=lambda: rnn.sgd_step(p0, rnn.bptt_linear(p0, X, Y), 0.0),
    gemm=lambda: [np.matmul(A1, A2, out=C) for _ in range(8 * T * B // n)], repeat=5)
flops = fast_rnn.step_flops(T, B, n, n, n)
peak_now = 8 * T * B // n * timing.gemm_flops(n, n, n) / cmp.timings["gemm"].min / 1e9
rates = {k: flops / cmp.timings[k].min / 1e9 for k in ("fast", "fast_prange", "numpy", "reference")}
for k, r in rates.items():
    print(f"{k:<12} {cmp.timings[k].min * 1e3:8.1f} ms  {r:7.1f} GFLOP/s  {100 * r / peak_now:5.1f}% of the GEMM peak")
print(f"GEMM peak measured alongside ({n}^3): {peak_now:.1f} GFLOP/s")
cmp.noise.add(max(rates.values()) > 1.05 * peak_now, "a step ran above the GEMM peak measured beside it")
if not cmp.noise.ok:
    print(cmp.noise.warning())
else:
    fastest = min(rates, key=lambda k: cmp.timings[k].min)
    pr = cmp.timings["fast_prange"].min / cmp.timings["fast"].min
    print(f"fastest here: {fastest}; splitting the fused passes over threads took {pr:.2f}x the serial passes' step time")

# %% tags=["nbval-ignore-output"]
perf_plots.step_bars(rates, peak_now);

# %% [markdown]
# Why `fast_rnn` keeps the fused passes on the calling thread by default: they are memory-bound, so
# a second thread can gain at most what a second core adds to memory bandwidth; and a numba parallel
# region that starts right after a multi-threaded BLAS call may have to wait for cores on which
# BLAS's idle threads are still spinning. The GEMMs carry almost all the FLOPs and get every thread
# either way. When the comparison above is reliable it names the fastest variant here; when it is not,
# it prints its warning and only what the interleaved pairs still show.
#
# ## 4 · A compiled step vs hand-written numpy (seed Fig. 7)
#
# Before Halide, the seed compared its hand-written NumPy RNN with the same RNN in Theano, a
# framework that compiles the whole computation, on a 2-core Intel Core i5 (its §4.1): competitive at its sizes, and
# NumPy ahead for much smaller data, "primarily because of the overhead of calling a compiled Theano
# function". Our compiled step is `fast_rnn.train_step` (numba kernels + BLAS); with torch installed,
# `torch.nn.RNN` + autograd + SGD joins as the framework column. We time one step at sizes from tiny
# to large, and each method's cost on a 1 x 1 problem -- the price of a call before any arithmetic.
# The verdict times the smallest size once more with every library on one thread: at that size
# there is too little work to share between threads.
#
# **Predict**: at the smallest sizes, is hand-written numpy faster than the compiled step here?

# %%
print(claims.show("000.ch05.fig7.small_data", "000.ch05.fig7.cores"))

# %% tags=["nbval-ignore-output"]
fw = profile_exp.framework_vs_numpy(timing.scaled((4, 8, 16, 32, 64, 128, 256, 512), (4, 16, 64)), T=10, repeat=5)
print(f"{'n':>5} " + " ".join(f"{m + ' ms':>12}" for m in fw["methods"]) + "   " +
      " ".join(f"{m + ' vs numpy':>16}" for m in fw["methods"] if m != "numpy"))
for i, s in enumerate(fw["sizes"]):
    print(f"{s:>5} " + " ".join(f"{fw['seconds'][m][i] * 1e3:>12.3f}" for m in fw["methods"]) + "   " +
          " ".join(f"{fw['vs_numpy'][m][i]:>15.2f}x" for m in fw["methods"] if m != "numpy"))
print("cost of one call on a 1x1, T = 1 problem: " +
      ", ".join(f"{m} {fw['call_overhead_s'][m] * 1e6:.0f} µs" for m in fw["methods"]))
if "torch" not in fw["methods"]:
    print("(torch is not installed: only the numba column; pip install -e '.[bench]' adds torch.nn.RNN)")
framework = "torch" if "torch" in fw["methods"] else "numba"
# the verdict: the smallest size again, every library on one thread (threads only wait at this size, and a
# one-thread step is timed by its thread's CPU clock, which other programs cannot inflate)
small = profile_exp.framework_vs_numpy(fw["sizes"][:1], T=10, repeat=7, threads=1)
numpy_ahead = 1.0 / small["vs_numpy"][framework][0]     # how many times faster numpy is at the smallest size
oh = small["call_overhead_s"]
print(f"at n = {fw['sizes'][0]} on one thread: numpy {small['seconds']['numpy'][0] * 1e3:.3f} ms, "
      f"{framework} {small['seconds'][framework][0] * 1e3:.3f} ms")
print(verdict("000.ch05.fig7.small_data", numpy_ahead, here=f"1 thread, {framework} step, n = {fw['sizes'][0]}",
              reasons=[(framework == "numba" and oh["numba"] < oh["numpy"],
                        f"a call of the numba step costs {oh['numba'] * 1e6:.0f} µs, less than numpy's "
                        f"{oh['numpy'] * 1e6:.0f} µs: numba compiles ahead of the call, with no graph to launch"),
                       (framework == "torch" and oh["torch"] > oh["numpy"],
                        f"a torch.nn.RNN step costs {oh.get('torch', 0) * 1e6:.0f} µs before any arithmetic "
                        f"(numpy: {oh['numpy'] * 1e6:.0f} µs): the framework's per-call overhead")],
              noise=small["noise"]))

# %% tags=["nbval-ignore-output"]
perf_plots.framework_plot(fw);

# %% [markdown]
# ## 5 · JIT vs a cached compile (seed Fig. 14)
#
# The seed's Halide code got faster per epoch when it moved from just-in-time to ahead-of-time
# compilation, because its JIT version recompiled stages during training. numba compiles each
# function on its first call in a process; `@njit(cache=True)` stores the machine code on disk
# so the next process only loads it -- numba's AOT. `jit_exp.compile_times` measures both in fresh
# subprocesses sharing a temporary cache directory (the first compiles, the second loads), and in
# each it times whole runs of 1, 10 and 100 calls. **Predict**: how does the JIT/cached ratio of a
# run change as the run gets longer?

# %%
print(claims.show("000.halide.fig14.aot_speedup"))

# %% tags=["nbval-ignore-output"]
jt = jit_exp.compile_times(timing.scaled("fast_rnn", "toy"))
for mode in ("jit", "cached"):
    r = jt[mode]
    print(f"{mode:<7} import {r['import_s']:.2f} s, first call {r['first_call_s']:.3f} s, second call {r['second_call_s'] * 1e3:.2f} ms")
print(jt["noise"].warning() or f"the cache saves {jt['compile_s']:.2f} s on the first call "
      f"({jt['first_call_ratio']:.1f}x faster first call)")
for k in map(str, jit_exp.RUN_LENGTHS):
    print(f"a run of {k:>3} calls (measured): JIT {jt['jit']['run_s'][k]:.3f} s vs cached {jt['cached']['run_s'][k]:.3f} s "
          f"({jt['run_ratio'][k]:.2f}x)")
longest = str(max(jit_exp.RUN_LENGTHS))
step = jt["jit"]["second_call_s"]
print(verdict("000.halide.fig14.aot_speedup", jt["run_ratio"][longest], here=f"numba, {jt['target']}, a run of {longest} calls",
              reasons=[(jt["compile_s"] > 10 * int(longest) * step,
                        f"our calls are short ({step * 1e3:.2f} ms), so even {longest} of them are dominated by the one-time "
                        f"{jt['compile_s']:.2f} s compile; over a long training run the ratio falls towards 1"),
                       (jt["jit"]["second_call_s"] < 1.5 * jt["cached"]["second_call_s"],
                        f"numba compiles once per process (a second call: JIT {jt['jit']['second_call_s'] * 1e3:.2f} ms,"
                        f" cached {jt['cached']['second_call_s'] * 1e3:.2f} ms); the seed's JIT Halide recompiled "
                        "stages at every step")],
              noise=jt["noise"]))

# %% tags=["nbval-ignore-output"]
perf_plots.jit_bars(jt);

# %% [markdown]
# numba pays its compile cost once per process (and the cache removes even that), so over a long
# enough run the two converge -- unlike the seed's JIT Halide, which kept recompiling. The lesson
# carries over: compile before the loop, never inside it.
#
# ## Try it: threads and workload
#
# `profile_exp.workload_time(workload, threads, n)` times one workload at one thread count now.

# %%
profile_exp.WORKLOADS

# %% tags=["nbval-ignore-output"]
def show_workload(d, ax):
    ax.bar([f"{d['workload']}\n{d['threads']} thread(s)"], [d["seconds"] * 1e3], color="tab:blue")
    ax.set_ylim(0, 1.2 * d["seconds"] * 1e3)
    ax.set_ylabel("ms")
    rate = f", {d['gflops']:.1f} GFLOP/s" if d["gflops"] is not None else ""
    warn = "" if d["noise"].ok else "  [unreliable: the machine was busy]"
    return f"{d['workload']} at n = {d['n']} on {d['threads']} thread(s): {d['seconds'] * 1e3:.2f} ms{rate}{warn}"

widgets.sweep_panel(
    profile_exp.workload_time,
    controls={"workload": list(profile_exp.WORKLOADS), "threads": (1, backend.get_threads(), 1, backend.get_threads()),
              "n": (64, 1024, 64, 256)},
    render=show_workload,
    cost=lambda workload, threads, n: n ** 3, max_cost=1024 ** 3,
)

# %% [markdown]
# ## What we learned
#
# * The recurrence is the only sequential part of a step: the input projection, the outputs,
#   the output's share of the hidden gradient and the three weight gradients are each **one GEMM
#   over all time steps**. Transposes are views; BLAS reads them with a flag.
# * Element-wise work is memory traffic: **fusing** it into one pass per kernel (and a `tanh`
#   that vectorises) removes passes over memory; how much that saves depends on where the arrays
#   live. Check that the fused loop really vectorises: one division under numba's Python error model
#   is enough to stop it.
# * Threads help large, contiguous work; small or scattered pieces (and busy machines) scale poorly.
#   Give the threads to the GEMMs; keep short memory-bound passes off the barrier.
# * Saving intermediates need not cost anything: compute them where they will be read.
# * A compiled step's call overhead decides the small-data regime (seed Fig. 7); compile once,
#   outside the loop, and a compile cache makes even the first call cheap.
#
# Worksheet: [exercises/05_threads_fusion.ipynb](../exercises/05_threads_fusion.ipynb) (fused kernels of the backward pass).
#
# Next: [06 · Halide](06_halide.ipynb).
