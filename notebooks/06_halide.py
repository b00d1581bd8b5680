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
# # 06 · The seed's own tool: the RNN step as a Halide algorithm with schedules
#
# Seed 000 (Han & Uboweja) did not write its fast RNN in numba or numpy: it wrote it in
# **Halide**, a language that splits a program in two.
#
# * The **algorithm** says *what* each value is: `h[j, i] = tanh(P[j, i] + Σ_k h_prev[k, i] · Whh[j, k])`.
# * The **schedule** says *in which order, in which tiles, on how many threads and with how many
#   SIMD lanes* the loops run: `h.tile(j, i, jo, io, ji, ii, 16, 64).vectorize(ji).parallel(io)`.
#
# Changing the schedule never changes the numbers, only the speed. Chapters 04 and 05 built the
# same optimisations by hand in numba; here we ask the seed's questions with the seed's tool
# (Figs. 8, 10-14 and the headline speed-up), using Halide's Python bindings
# (`pip install halide`, `import halide as hl`).
#
# Open `course_lib/models/halide_rnn.py`: the step is five small pipelines (the input
# projection, the hidden step, the output layer with its error, the backward step, the gradient +
# SGD update), each a matrix product with an element-wise epilogue, and `SCHEDULES` names the
# ways of running them.

# %%
import numpy as np

import course_lib  # noqa: F401  (first: backend decisions)
from course_lib.models import halide_rnn
from course_lib.core import timing
from course_lib.experiments import halide as halide_exp
from course_lib.models import rnn
from course_lib.teaching import claims, widgets
from course_lib.teaching.plots import halide as halide_plots
from course_lib.teaching.verdict import verdict

HALIDE, WHY = halide_rnn.available()
print("Halide available:", HALIDE)
if not HALIDE:
    print("Every Halide cell below is skipped:", WHY)

# %% [markdown]
# ## The schedules
#
# The seed ran "8 tests for testing all the different combinations of 3 Halide optimization
# techniques, namely, tiling, parallel using multiple OpenMP threads and SIMD vectorization"
# (Fig. 10), then tried a specialised schedule for the element-wise stages (Fig. 13), single-
# expression definitions instead of a pure + update definition (§4.9), and ahead-of-time instead of
# just-in-time compilation (Fig. 14). Our `SCHEDULES`:

# %%
for name, s in halide_rnn.SCHEDULES.items():
    print(f"{name:<21} {s.figure:<8} tile={s.tile!s:<9} vector={s.vector!s:<5} parallel={s.parallel!s:<5} "
          f"fused={s.fused!s:<5} elementwise={s.elementwise:<6} compile={s.compile}")
print(claims.show("000.halide.fig10.tile_rows", "000.halide.fig10.tile_cols"))

# %% [markdown]
# A word on compiling. Every schedule except `jit_per_call` builds its five pipelines once and
# keeps the compiled machine code (`Pipeline.compile_to_callable`), so every later step only runs
# it. That is the analogue, inside one Python process, of the seed's ahead-of-time (AOT) build:
# we do not write a library to disk and load it as a C extension; we compile once and reuse.
# `jit_per_call` rebuilds and compiles on every step, as the seed's JIT code re-compiled its stages.
#
# ## First: the same maths under every schedule
#
# Each schedule's step must equal the reference step `rnn.sgd_step(params, rnn.bptt_linear(...), lr)`
# of chapter 02 to float32 round-off -- at a size that is not a multiple of the 64 x 16 tiles.

# %%
if HALIDE:
    p = rnn.init_params(37, 45, 29, seed=1)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (4, 70, 37)).astype(np.float32)
    Y = rng.uniform(-1, 1, (4, 70, 29)).astype(np.float32)
    ref = rnn.sgd_step(p, rnn.bptt_linear(p, X, Y), 0.05)
    ref_loss = rnn.loss(rnn.forward(p, X).Yhat, Y)
    for name in halide_rnn.SCHEDULES:
        new, loss = halide_rnn.train_step(p, X, Y, 0.05, schedule=name)
        worst = max(float(np.max(np.abs(getattr(new, k) - getattr(ref, k)))) / float(np.max(np.abs(getattr(ref, k))))
                    for k in ("Wxh", "Whh", "Why"))
        print(f"{name:<21} same step as the reference (relative difference < 1e-5): {worst < 1e-5};  "
              f"same loss: {abs(loss - ref_loss) < 1e-5 * ref_loss}")

# %% [markdown]
# ## What a schedule does to the loops
#
# Halide prints the loop nest a schedule produces (`print_loop_nest`). Here is the hidden-state
# product `h = tanh(P + h_prev Whh)` under four schedules. Look for `vectorized` (SIMD lanes),
# `parallel` (threads) and split loop names such as `i.io` / `i.ii` (the tiles), and where the
# accumulator `hidden_prod` is computed: once per row, once per tile, or -- in the `specialized`
# schedule -- over the whole matrix before the element-wise stage runs as a pass of its own.

# %%
if HALIDE:
    for name in ("serial", "simd+parallel", "tiled+simd+parallel", "specialized", "fused"):
        print(f"===== {name} =====")
        print(halide_rnn.loop_nest(name))

# %% [markdown]
# ## Fig. 10 · Eight combinations of tiling, SIMD and parallel
#
# The seed's size: `n = 1000` features in, hidden and out (not 1024: the seed found powers of two
# cause cache conflicts), `T = 10` steps, float32. The seed used a batch of 1000; our batch is
# smaller so the whole table runs in seconds on a laptop, and all eight schedules are timed
# interleaved in this one process.
#
# The seed's findings, in words: tiling 64 x 16 gave "a significant speed up compared to the serial
# Halide implementation"; "tiling with parallel() performs worse than parallel() optimization
# (alone)"; all three combined were fastest. Chapter 04's numba kernels *reversed* the tiling
# finding on this kind of machine.
#
# **Predict** before you run: will Halide's tiling help the serial step here? Will tiling +
# parallel be slower than parallel alone, as on the Xeon Phi? Which schedule will win?

# %% tags=["nbval-ignore-output"]
if HALIDE:
    B_table = timing.scaled(32, 8)
    table = halide_exp.fig10_table(B_table, n=1000, T=10, repeat=timing.scaled(3, 2))
    for r in table["rows"]:
        print(f"{r['name']:<21} {r['seconds'] * 1e3:8.1f} ms  {r['gflops']:6.1f} GFLOP/s  {r['speedup']:5.1f}x over serial")
    print(table["cmp"].noise if hasattr(table["cmp"], "noise") else "")

# %% tags=["nbval-ignore-output"]
if HALIDE:
    halide_plots.schedule_bars(table);

# %% tags=["nbval-ignore-output"]
if HALIDE:
    f = halide_exp.fig10_findings(table)
    cmp = table["cmp"]

    def effect(tiled, plain, band=1.05):  # judged from the interleaved pairs: 5% either way is an effect
        if cmp.faster(tiled, by=band, over=plain) == "yes":
            return "helps"
        if cmp.faster(plain, by=band, over=tiled) == "yes":
            return "hurts"
        if cmp.faster(tiled, by=band, over=plain) == "no" and cmp.faster(plain, by=band, over=tiled) == "no":
            return "makes no clear difference (under 5% either way)"
        return "cannot be told apart from no effect by these pairs"

    t1, t2 = effect("tiled", "serial"), effect("tiled+parallel", "parallel")
    print(f"tiling alone over serial: {f['tiling']:.2f}x -> tiling {t1} here (seed: it helped) -- "
          + ("same direction as the seed" if t1 == "helps" else
             "what the pairs support: " + cmp.said("tiled", over="serial") if t1.startswith("cannot") else
             "the seed finding does not hold here"))
    print(f"tiled+parallel over parallel: {f['tiling_with_parallel']:.2f}x -> tiling {t2} with parallel() "
          f"(seed: it hurt) -- "
          + ("as the seed found" if t2 == "hurts" else
             "what the pairs support: " + cmp.said("tiled+parallel", over="parallel") if t2.startswith("cannot") else
             "unlike the seed")
          + f"; with SIMD too: {f['tiling_with_simd_parallel']:.2f}x ({effect('tiled+simd+parallel', 'simd+parallel')})")

# %% [markdown]
# Why might the answer differ from the seed's? Our "untiled" schedules are not the textbook
# triple loop: each computes one *row* of the product at a time, walking the rows of `Whh`
# contiguously (chapter 04's `ikj` order), which already has good locality. The tiled schedule
# keeps a 64 x 16 block of accumulators; whether that beats a row of accumulators depends on
# the caches and on the batch size (with a small batch the hidden-state product has few rows to tile).
#
# ## Figs. 11 and 12 · What SIMD and parallel() each add
#
# The seed: SIMD gave only about half of what its 16 lanes promise, and `parallel()` worked "better
# with vectorization than with tiling", far from the ideal of one core's worth per core. The seed's
# numbers are printed in the verdict lines below.

# %% tags=["nbval-ignore-output"]
if HALIDE:
    for what in ("simd", "parallel"):
        print(f"{what} speed-up: " + ", ".join(f"{k} {v:.2f}x" for k, v in f[what].items()))
    cores = halide_exp.cores()
    print(verdict("000.halide.fig11.simd_speedup", ours=table["cmp"].speedup("tiled+simd+parallel", over="tiled+parallel"),
                  here=f"{cores} cores",
                  reasons=[(f["simd"]["alone"] > f["simd"]["with tiling+parallel"],
                            "SIMD gains less once threads share the memory bus")],
                  noise=table["cmp"].noise,
                  interval=table["cmp"].speedup_interval("tiled+simd+parallel", over="tiled+parallel")))
    print(verdict("000.halide.fig12.parallel_ideal", ours=table["cmp"].speedup("simd+parallel", over="simd"),
                  here=f"{cores} cores",
                  reasons=[(cores < 8, f"{cores} cores here, not {claims.claim('000.halide.fig12.parallel_ideal').value:.0f}"),
                           (B_table < claims.claim("000.task.batch").value,
                            f"batch {B_table} here, not {claims.claim('000.task.batch').value:.0f}: each thread gets little work")],
                  noise=table["cmp"].noise, interval=table["cmp"].speedup_interval("simd+parallel", over="simd")))

# %% [markdown]
# ## The headline · Best schedule over serial Halide (the seed's summary number, on its 61-core Xeon Phi)
#
# **Predict:** on this machine's cores, how far can the best schedule get above serial Halide?
# Think of what each ingredient can give at most: SIMD up to its lane count, threads up to the core count.

# %% tags=["nbval-ignore-output"]
if HALIDE:
    print(f"best schedule (fastest median): {f['best']}, {table['cmp'].speedup(f['best']):.1f}x over serial Halide "
          f"(median of the pairs) on {cores} core(s)")
    print(verdict("000.halide.summary.speedup", ours=table["cmp"].speedup(f["best"]), here=f"{cores} cores, B={B_table}",
                  reasons=[(cores < 16, f"{cores} cores here, not {claims.claim('000.halide.fig12.parallel_ideal').value:.0f}: "
                                         f"threads can add at most {cores}x"),
                           (B_table < claims.claim("000.task.batch").value,
                            f"batch {B_table}, not {claims.claim('000.task.batch').value:.0f}: less work per product")],
                  noise=table["cmp"].noise, interval=table["cmp"].speedup_interval(f["best"])))

# %% [markdown]
# ## Fig. 13 and §4.9 · Specialised element-wise stages; one expression instead of two stages
#
# The seed gave the element-wise stages their own schedule (parallel over rows) and found it
# "only provided marginal speedup", because the products dominate. It also wrote definitions
# as "a single long expression" instead of a pure + update definition and saw a "minor speedup".
# **Predict** the sign of both effects here.

# %% tags=["nbval-ignore-output"]
if HALIDE:
    sp = halide_exp.specialized_vs_best(B_table, n=1000, T=10, repeat=timing.scaled(3, 2))
    print(sp["cmp"].table())
    for name, label in (("specialized", "specialised element-wise stages"), ("fused", "single-expression definitions")):
        v, best_name = sp["cmp"].speedup(name), sp["cmp"].baseline
        if sp["cmp"].faster(name, by=1.1, over=best_name) == "yes":
            said = "faster by 10% or more in the pairs: not marginal"
        elif sp["cmp"].faster(best_name, by=1.1, over=name) == "yes":
            said = "slower by 10% or more in the pairs: not marginal"
        elif sp["cmp"].faster(name, by=1.1, over=best_name) == "no" and sp["cmp"].faster(best_name, by=1.1, over=name) == "no":
            said = "within 10% either way in the pairs: marginal, as the seed found"
        else:
            said = "the pairs cannot place it against 10%: " + sp["cmp"].said(name, over=best_name)
        print(f"{label}: {v:.2f}x the best two-stage schedule (median) -> {said}")

# %% [markdown]
# The single expression `tanh(P + hl.sum(h_prev * W))` computes each output's dot product in one
# go (its `sum` is computed inside the vectorised loop, see the loop nest above), while the
# two-stage schedules keep a tile of accumulators and sweep `k` outside the tile. Which is faster
# depends on how Halide's vector accumulators and the tile fit the registers and the L1 cache.
#
# ## Fig. 14 · JIT on every call vs compiled once
#
# The seed's JIT version re-compiled its stages as training went; moving to AOT made each epoch
# several times faster (the verdict line prints the seed's number). **Predict:** how much does compiling on every step cost here, compared to one
# compiled step? (Compiling the five pipelines takes LLVM a fraction of a second.)

# %% tags=["nbval-ignore-output"]
if HALIDE:
    jv = halide_exp.jit_vs_once(timing.scaled(16, 4), n=1000, T=10, steps=2, repeat=timing.scaled(2, 1))
    print(jv["cmp"].table())
    print(f"compiling the five pipelines once: {jv['compile_s']:.2f} s; one compiled step: {jv['run_s'] * 1e3:.1f} ms")
    print(verdict("000.halide.fig14.aot_speedup", ours=jv["speedup"], here=f"{cores} cores",
                  reasons=[(jv["compile_s"] > 3 * jv["run_s"],
                            "here a compile costs many steps' worth of work, so recompiling every step loses more"),
                           (jv["compile_s"] < jv["run_s"], "here a step costs more than a compile")],
                  noise=getattr(jv["cmp"], "noise", None)))

# %% [markdown]
# ## Fig. 8 · The best Halide schedule against numpy, per epoch
#
# The seed's best Halide was several times slower than its NumPy (BLAS) implementation on the
# Xeon Phi (the verdict line prints the seed's number). **Predict** which side of numpy Halide lands on here. An "epoch" here is a few real SGD steps (the weights change), the same steps in both.

# %% tags=["nbval-ignore-output"]
if HALIDE:
    ep = halide_exp.epoch_comparison(B_table, n=1000, T=10, steps=2, repeat=timing.scaled(2, 1))
    print(ep["cmp"].table())
    halide_rate = next(r["gflops"] for r in table["rows"] if r["name"] == "tiled+simd+parallel")
    blas_peak = timing.peak_gflops("float32")
    print(verdict("000.halide.fig8.halide_vs_numpy", ours=ep["slower"], here=f"{cores} cores, B={B_table}",
                  reasons=[(ep["slower"] > 1 and halide_rate < blas_peak,
                            f"BLAS's hand-written GEMM reaches {blas_peak:.0f} GFLOP/s here, our best schedule's "
                            f"whole step {halide_rate:.0f} GFLOP/s")],
                  noise=getattr(ep["cmp"], "noise", None)))

# %%
if HALIDE:
    print("same weights after the epoch (Halide vs numpy):", ep["final_params_close"])

# %% [markdown]
# ## Halide beside numba, BLAS and `fast_rnn`
#
# The products first: one 1000 x 1000 x 1000 product with Halide's best schedule, chapter 04's
# fastest numba kernel (`algorithms.matmul.matmul_parallel_tiled`) and BLAS. Then the whole step:
# Halide's best, the numpy reference and chapter 05's `fast_rnn.train_step`.

# %% tags=["nbval-ignore-output"]
if HALIDE:
    gm = halide_exp.gemm_comparison(1000, repeat=timing.scaled(3, 2))
    for k, v in gm["gflops"].items():
        print(f"{k:<8} {v:7.1f} GFLOP/s")
    st = halide_exp.step_comparison(B_table, n=1000, T=10, repeat=timing.scaled(3, 2))
    print(st["cmp"].table())
    halide_plots.rate_bars({**{f"{k} GEMM": v for k, v in gm["gflops"].items()},
                      **{f"{k} step": v for k, v in st["gflops"].items()}}, title="GFLOP/s, products and whole steps");

# %%
if HALIDE:
    print("products agree with BLAS (relative error < 1e-5):", gm["max_err"] < 1e-5,
          "| Halide's loss equals the reference:", st["losses_agree"])

# %% [markdown]
# ## Try it: your own schedule
#
# Pick tile sizes (rows 0 = no tiling), the vector width (1 = scalar) and parallel on/off. The
# panel compiles your schedule (watch the compile time), times one training step against the
# course's best schedule in the same run, and shows the loop nest your choice produces.

# %% tags=["nbval-ignore-output"]
def _render(d, ax):
    ax.bar(["yours", "course best"], [d["seconds"] * 1e3, d["best_seconds"] * 1e3], color=["tab:purple", "tab:grey"])
    ax.set_ylabel("ms per step")
    return (f"{d['schedule'].name}: {d['ratio']:.2f}x the best schedule's time, {d['gflops']:.1f} GFLOP/s, "
            f"compiled in {d['compile_s']:.2f} s, correct: {d['correct']}\n{d['loop_nest']}")


if HALIDE:
    panel = widgets.sweep_panel(
        lambda tile_rows, tile_cols, vector, parallel: halide_exp.schedule_time(tile_rows, tile_cols, vector, parallel,
                                                                       batch=timing.scaled(16, 4), repeat=2),
        controls={"tile_rows": (0, 256, 8, 64), "tile_cols": (8, 256, 8, 16),
                  "vector": {"1 (scalar)": 1, "4": 4, "8": 8, "16": 16, "32": 32}, "parallel": True},
        render=_render, title="one training step, n = 1000, T = 10")
    panel.controls["vector"].value = 16
    display(panel)  # noqa: F821

# %% [markdown]
# ## What to take away
#
# * The algorithm/schedule split makes the seed's experiments one-line changes; the numbers never move.
# * Which schedule wins is a property of the machine and the sizes: rerun this notebook elsewhere
#   and the table can reorder. The verdict cells above compare, from measured facts, where this
#   machine agrees with the seed's Xeon Phi and where not -- or say what this run cannot decide.
# * Compile once, run many times: a compiler inside the training loop costs more than the loop.
# * Worksheet 06: write a schedule for the hidden-state product yourself, and fuse two stages into one.
#
# Worksheet: [exercises/06_halide.ipynb](../exercises/06_halide.ipynb).
# Next: [07 · parallel inference](07_parallel_inference.ipynb).
