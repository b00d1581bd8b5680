"""Measuring helpers for chapter 06 (Halide) and ``benchmarks/halide.py`` (experiments folder).

Everything is timed with :func:`course_lib.core.timing.compare` (interleaved, one process), and
every function returns plain data (dicts, lists, the ``Comparison``) -- the notebook prints,
plots and draws verdicts from it. Sizes come from the caller (the notebook uses
``timing.scaled``), so nothing here depends on ``COURSE_BUDGET``.
"""
from __future__ import annotations

import time

import numpy as np

from ..models import halide_rnn as H
from ..algorithms import matmul as nb_matmul
from ..core import backend, timing
from ..core.validate import check_alloc_of, check_bool, check_float, check_int, check_positive_int, check_repeat
from ..models import fast_rnn, rnn

__all__ = [
    "problem",
    "fig10_table",
    "fig10_findings",
    "step_comparison",
    "epoch_comparison",
    "gemm_comparison",
    "jit_vs_once",
    "specialized_vs_best",
    "schedule_time",
    "cores",
    "compile_seconds",
]


def cores() -> int:
    """Logical cores this process may use."""
    return backend.cpu_count()


def problem(batch: int, n: int = 1000, T: int = 10, *, seed: int = 0):
    """``(params, X, Y)``: the seed's problem shape (``nx = nh = ny = n``), float32, seeded."""
    batch = check_positive_int(batch, "batch", high=100_000)
    n = check_positive_int(n, "n", high=8192)
    T = check_positive_int(T, "T", high=10_000)
    seed = check_int(seed, "seed", low=0)
    check_alloc_of(np.float32, "the inputs X (and Y)", T=T, batch=batch, n=n)
    p = rnn.init_params(n, n, n, seed=seed)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (T, batch, n)).astype(np.float32)
    Y = rng.uniform(-1, 1, (T, batch, n)).astype(np.float32)
    return p, X, Y


def _step_fn(name, p, X, Y, lr=0.0):
    """A zero-argument callable running one Halide step (compiled before it is returned)."""
    H.compiled_step(name)  # compile outside the timed region (except jit_per_call, by design)
    return lambda: H.train_step(p, X, Y, lr, schedule=name)


# --------------------------------------------------------------------------- Fig. 10 / 11 / 12
def fig10_table(batch: int, n: int = 1000, T: int = 10, *, repeat: int = 3, names=None) -> dict:
    """Time one training step under each of the eight tiling x SIMD x parallel schedules, interleaved.

    Returns ``{"rows": [{name, seconds, gflops, speedup}], "cmp": Comparison, "B", "n", "T",
    "flops", "compile_s"}``; ``speedup`` is over ``"serial"`` (the seed's Fig. 10 y-axis is seconds).
    """
    repeat = check_repeat(repeat)
    if names is not None and (isinstance(names, str) or not hasattr(names, "__iter__")):
        raise TypeError(f"names: expected a list of schedule names, got {names!r}")
    names = tuple(names if names is not None else H.FIG10_NAMES)
    if not names:
        raise ValueError("names: expected at least one schedule name, got none")
    for i, nm in enumerate(names):
        try:
            H.get_schedule(nm)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"names[{i}]: {exc}") from None
    p, X, Y = problem(batch, n, T)
    compile_s = {}
    fns = {}
    for nm in names:
        t0 = time.perf_counter()
        fns[nm] = _step_fn(nm, p, X, Y)
        compile_s[nm] = time.perf_counter() - t0
    cmp = timing.compare(repeat=repeat, warmup=1, baseline=names[0], **fns)
    flops = H.step_flops(T, batch, n, n, n)
    base = cmp.timings[names[0]].median
    rows = [{"name": nm, "seconds": cmp.timings[nm].median, "min_s": cmp.timings[nm].min,
             "gflops": flops / cmp.timings[nm].min / 1e9, "speedup": base / cmp.timings[nm].median}
            for nm in names]
    return {"rows": rows, "cmp": cmp, "B": batch, "n": n, "T": T, "flops": flops, "compile_s": compile_s}


def fig10_findings(table: dict) -> dict:
    """The seed's Fig. 10-12 questions answered from one :func:`fig10_table` (ratios > 1 = faster).

    ``tiling``: tiled over serial; ``tiling_with_simd``: tiled+simd over simd; ``tiling_with_parallel``:
    tiled+parallel over parallel (the seed found < 1: "tiling with parallel() performs worse than
    parallel() optimization (alone)"); ``simd``: per pair, SIMD over scalar (Fig. 11);
    ``parallel``: per pair, parallel over one thread (Fig. 12); ``best``: the fastest name and its
    speedup over serial (the 39x analogue).
    """
    if not isinstance(table, dict) or not isinstance(table.get("rows"), list):
        raise TypeError(f"table: expected the dict fig10_table() returns (with 'rows'), got {type(table).__name__}")
    try:
        s = {r["name"]: check_float(r["seconds"], "table", low=0.0, low_inclusive=False) for r in table["rows"]}
    except (KeyError, TypeError, IndexError) as exc:
        raise TypeError(f"table: every row needs 'name' and 'seconds' (as fig10_table() returns): {exc}") from exc
    need = set(H.FIG10_NAMES)
    if not need <= set(s):
        raise ValueError(f"table: expected rows for all of {', '.join(H.FIG10_NAMES)}")
    sp = lambda slow, fast: s[slow] / s[fast]  # noqa: E731
    best = min(H.FIG10_NAMES, key=lambda k: s[k])
    return {
        "tiling": sp("serial", "tiled"),
        "tiling_with_simd": sp("simd", "tiled+simd"),
        "tiling_with_parallel": sp("parallel", "tiled+parallel"),
        "tiling_with_simd_parallel": sp("simd+parallel", "tiled+simd+parallel"),
        "simd": {"alone": sp("serial", "simd"), "with tiling": sp("tiled", "tiled+simd"),
                 "with parallel": sp("parallel", "simd+parallel"),
                 "with tiling+parallel": sp("tiled+parallel", "tiled+simd+parallel")},
        "parallel": {"alone": sp("serial", "parallel"), "with tiling": sp("tiled", "tiled+parallel"),
                     "with simd": sp("simd", "simd+parallel"),
                     "with tiling+simd": sp("tiled+simd", "tiled+simd+parallel")},
        "best": best,
        "best_speedup": sp("serial", best),
    }


# --------------------------------------------------------------------------- beside the others
def step_comparison(batch: int, n: int = 1000, T: int = 10, *, schedule="tiled+simd+parallel",
                    repeat: int = 3) -> dict:
    """One training step: Halide's ``schedule``, the numpy reference (``bptt_linear`` + ``sgd_step``,
    BLAS) and ``fast_rnn.train_step``, interleaved. Returns ``{"cmp", "gflops", "flops", "losses_agree"}``."""
    H.get_schedule(schedule)
    repeat = check_repeat(repeat)
    p, X, Y = problem(batch, n, T)
    hal = _step_fn(schedule, p, X, Y)
    ws = fast_rnn.make_workspace(T, batch, n, n, n)
    fns = {"halide": hal,
           "numpy": lambda: rnn.sgd_step(p, rnn.bptt_linear(p, X, Y), 0.0),
           "fast_rnn": lambda: fast_rnn.train_step(p, X, Y, 0.0, workspace=ws)}
    cmp = timing.compare(repeat=repeat, warmup=1, baseline="numpy", **fns)
    flops = H.step_flops(T, batch, n, n, n)
    ref = rnn.loss(rnn.forward(p, X).Yhat, Y)
    agree = abs(H.train_step(p, X, Y, 0.0, schedule=schedule)[1] - ref) <= 1e-4 * abs(ref)
    return {"cmp": cmp, "flops": flops, "gflops": {k: flops / cmp.timings[k].min / 1e9 for k in fns},
            "losses_agree": bool(agree)}


def epoch_comparison(batch: int, n: int = 1000, T: int = 10, *, steps: int = 3, schedule="tiled+simd+parallel",
                     repeat: int = 2, lr: float = 1e-3) -> dict:
    """Seed Fig. 8: an "epoch" of ``steps`` real SGD steps (weights updated) with Halide and with numpy.

    Returns ``{"cmp", "halide_s", "numpy_s", "slower"}`` where ``slower`` = Halide time / numpy time
    (the seed: about 3, Halide slower), and ``final_loss_close`` (both trained to the same weights).
    """
    steps = check_positive_int(steps, "steps", high=1000)
    H.get_schedule(schedule)
    repeat = check_repeat(repeat)
    lr = check_float(lr, "lr", low=0.0)
    p0, X, Y = problem(batch, n, T)
    H.compiled_step(schedule)
    out = {}

    def epoch_halide():
        p = p0
        for _ in range(steps):
            p, _ = H.train_step(p, X, Y, lr, schedule=schedule)
        out["halide"] = p

    def epoch_numpy():
        p = p0
        for _ in range(steps):
            p = rnn.sgd_step(p, rnn.bptt_linear(p, X, Y), lr)
        out["numpy"] = p

    cmp = timing.compare(repeat=repeat, warmup=0, baseline="numpy", halide=epoch_halide, numpy=epoch_numpy)
    close = all(np.allclose(getattr(out["halide"], k), getattr(out["numpy"], k), rtol=1e-3, atol=1e-4)
                for k in ("Wxh", "Whh", "Why"))
    h, nmp = cmp.timings["halide"].median, cmp.timings["numpy"].median
    return {"cmp": cmp, "halide_s": h, "numpy_s": nmp, "slower": h / nmp, "steps": steps,
            "final_params_close": bool(close)}


def gemm_comparison(n: int = 1000, *, schedule="tiled+simd+parallel", repeat: int = 3) -> dict:
    """One ``(n, n) @ (n, n)`` float32 product: Halide's ``gemm`` pipeline under ``schedule``, numba's
    best kernel (``algorithms.matmul.matmul_parallel_tiled``) and BLAS (``np.matmul``), interleaved.

    Returns ``{"cmp", "gflops": {name: GFLOP/s by best time}, "max_err"}``.
    """
    n = check_positive_int(n, "n", high=4096)
    H.get_schedule(schedule)
    repeat = check_repeat(repeat)
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n)).astype(np.float32)
    Bm = rng.standard_normal((n, n)).astype(np.float32)
    C1, C2, C3 = (np.empty((n, n), np.float32) for _ in range(3))
    g = H.compiled_step(schedule)["gemm"]
    fns = {"halide": lambda: g(A, Bm, C1),
           "numba": lambda: nb_matmul.matmul_parallel_tiled(A, Bm, out=C2),
           "blas": lambda: np.matmul(A, Bm, out=C3)}
    cmp = timing.compare(repeat=repeat, warmup=1, baseline="blas", **fns)
    flops = timing.gemm_flops(n, n, n)
    scale = float(np.max(np.abs(C3)))
    err = max(float(np.max(np.abs(C1 - C3))), float(np.max(np.abs(C2 - C3)))) / scale
    return {"cmp": cmp, "gflops": {k: flops / cmp.timings[k].min / 1e9 for k in fns}, "max_err": err}


# --------------------------------------------------------------------------- Fig. 13 and Fig. 14
def specialized_vs_best(batch: int, n: int = 1000, T: int = 10, *, repeat: int = 3) -> dict:
    """Seed Fig. 13 and §4.9: the best Fig. 10 schedule against the specialised element-wise schedule
    and against the single-expression (fused) definitions, interleaved.
    Returns ``{"cmp", "specialized_speedup", "fused_speedup"}`` (> 1: faster than the best)."""
    repeat = check_repeat(repeat)
    p, X, Y = problem(batch, n, T)
    names = ("tiled+simd+parallel", "specialized", "fused")
    cmp = timing.compare(repeat=repeat, warmup=1, baseline=names[0], **{k: _step_fn(k, p, X, Y) for k in names})
    return {"cmp": cmp, "specialized_speedup": cmp.speedup("specialized"), "fused_speedup": cmp.speedup("fused")}


def jit_vs_once(batch: int, n: int = 1000, T: int = 10, *, steps: int = 3, repeat: int = 2) -> dict:
    """Seed Fig. 14: an epoch of ``steps`` steps with the pipelines rebuilt and JIT-compiled on every
    step (``jit_per_call``) against compiled once and reused (the AOT analogue), interleaved.

    Returns ``{"cmp", "speedup"}`` (per-call time / compile-once time) and ``"compile_s"`` (building
    and compiling the five pipelines once, measured now) and ``"run_s"`` (one compiled step).
    """
    steps = check_positive_int(steps, "steps", high=100)
    repeat = check_repeat(repeat)
    p, X, Y = problem(batch, n, T)
    once = _step_fn("tiled+simd+parallel", p, X, Y)

    def epoch(step):
        def run():
            for _ in range(steps):
                step()
        return run

    per_call = lambda: H.train_step(p, X, Y, 0.0, schedule="jit_per_call")  # noqa: E731
    cmp = timing.compare(repeat=repeat, warmup=0, baseline="compiled once",
                         **{"JIT per call": epoch(per_call), "compiled once": epoch(once)})
    compile_s = compile_seconds("tiled+simd+parallel")
    return {"cmp": cmp, "speedup": cmp.ratio("JIT per call"), "compile_s": compile_s,
            "run_s": cmp.timings["compiled once"].median / steps, "steps": steps}


# --------------------------------------------------------------------------- the widget
def schedule_time(tile_rows: int = 64, tile_cols: int = 16, vector: int = 16, parallel: bool = True,
                  batch: int = 8, n: int = 1000, T: int = 10, *, repeat: int = 3) -> dict:
    """Compile a custom schedule (``tile_rows = 0`` means no tiling, ``vector = 1`` scalar) and time
    one training step with it against the course's best schedule, interleaved.

    Returns ``{"schedule", "seconds", "best_seconds", "ratio" (custom / best), "gflops",
    "compile_s", "loop_nest", "correct"}``.
    """
    tile_rows = check_int(tile_rows, "tile_rows", low=0, high=1024)
    tile_cols = check_int(tile_cols, "tile_cols", low=1, high=1024)
    vector = check_int(vector, "vector", low=1, high=64)
    parallel = check_bool(parallel, "parallel")
    repeat = check_repeat(repeat)
    tile = (tile_rows, tile_cols) if tile_rows > 0 else None
    sched = H.make_schedule(tile=tile, vector=vector, parallel=parallel)
    p, X, Y = problem(batch, n, T)
    t0 = time.perf_counter()
    H.compiled_step(sched)
    compile_s = time.perf_counter() - t0
    mine = lambda: H.train_step(p, X, Y, 0.0, schedule=sched)  # noqa: E731
    best = _step_fn("tiled+simd+parallel", p, X, Y)
    cmp = timing.compare(repeat=repeat, warmup=1, baseline="best", mine=mine, best=best)
    ref = rnn.loss(rnn.forward(p, X).Yhat, Y)
    flops = H.step_flops(T, batch, n, n, n)
    return {"schedule": sched, "seconds": cmp.timings["mine"].median, "best_seconds": cmp.timings["best"].median,
            "ratio": cmp.ratio("mine"), "gflops": flops / cmp.timings["mine"].min / 1e9, "compile_s": compile_s,
            "loop_nest": H.loop_nest(sched), "correct": abs(mine()[1] - ref) <= 1e-4 * abs(ref), "cmp": cmp}


def compile_seconds(schedule, repeat: int = 1) -> float:
    """Seconds to build and JIT-compile the five pipelines of ``schedule`` now (uncached; best of ``repeat``)."""
    schedule = H.get_schedule(schedule)  # ValueError naming ``schedule`` before anything compiles
    repeat = check_repeat(repeat)
    return timing.measure(H.build, schedule, repeat=repeat, warmup=0, number=1).min
