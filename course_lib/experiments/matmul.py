"""Timing the matmul ladder of :mod:`course_lib.algorithms.matmul` (experiments layer; chapters 04-05).

Plain functions that measure now and return data (for the notebook's tables, plots and widget, and
for benchmarks). Every timing goes through :func:`course_lib.core.timing.compare` (interleaved, with
the noise guard) or :func:`~course_lib.core.timing.measure`; every result carries the run's
:class:`~course_lib.core.timing.Noise` under ``"noise"`` so a caller can refuse to conclude.

``method`` names a rung of the ladder (a key of ``matmul.MATMUL_KERNELS``), ``"numpy"`` (BLAS) or a
callable ``f(A, B, out=None)``; ``methods`` is a list of them.

``ladder(n, methods=None)``                 GFLOP/s of each rung and numpy on ``(n, n) @ (n, n)``
``gflops_of(method, n, **tiles)``           one rate (float)
``tile_sweep(n, tiles_i, tiles_j)``         GFLOP/s over a grid of tile sizes (heat map)
``tile_rate(n, tile_i, tile_j, tile_k)``    one tiled kernel vs numpy (the widget's compute function)
``compare_sizes(sizes, methods)``           GFLOP/s at e.g. 1000 and the power of two 1024
``time_combinations(n)``                    seed Fig. 10: the 8 combinations of tiling x SIMD x parallel
``vector_instructions(kernel)``             SIMD vs scalar floating-point instructions in a rung's core
``simd_ops(dispatcher, argtypes)``          the same count for any numba function
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..algorithms import matmul as mm
from ..core import timing
from ..core.validate import check_dtype, check_int, check_positive_int, check_repeat, check_sizes

__all__ = ["ladder", "gflops_of", "tile_sweep", "tile_rate", "compare_sizes", "time_combinations",
           "vector_instructions", "simd_ops"]


def _operands(n: int, dtype: str, seed: int):
    dtype = check_dtype(dtype, "dtype")
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    A = rng.standard_normal((n, n)).astype(dtype)
    B = rng.standard_normal((n, n)).astype(dtype)
    return A, B


def _numpy(A, B, *tiles, out=None):
    return np.matmul(A, B, out=out)


def _resolve(method, name: str = "method") -> Callable:
    if callable(method):
        return method
    if method == "numpy":
        return _numpy
    if not isinstance(method, str) or method not in mm.MATMUL_KERNELS:
        raise ValueError(f"{name}: expected one of {', '.join(mm.MATMUL_KERNELS)}, 'numpy' or a callable, "
                         f"got {method!r}")
    return mm.MATMUL_KERNELS[method]


def _name(method) -> str:
    return method if isinstance(method, str) else getattr(method, "__name__", "kernel")


def gflops_of(method="tiled_simd", n: int = 256, *, dtype: str = "float32", repeat: int = 3,
              seed: int = 0, **tiles) -> float:
    """GFLOP/s of ``method`` on ``(n, n) @ (n, n)``: best of ``repeat`` runs after one warm-up.
    ``tiles``: ``tile_i`` / ``tile_j`` / ``tile_k`` for the tiled rungs."""
    n = check_positive_int(n, "n", high=4096)
    repeat = check_repeat(repeat)
    f = _resolve(method)
    A, B = _operands(n, dtype, seed)
    C = np.empty((n, n), dtype)
    t = timing.measure(f, A, B, out=C, repeat=repeat, warmup=1, number=1, **tiles)
    return timing.gemm_flops(n, n, n) / t.min / 1e9


def ladder(n: int, methods=None, *, dtype: str = "float32", repeat: int = 3, seed: int = 0) -> dict:
    """Time each method (default: every rung, then numpy) on ``(n, n) @ (n, n)``, interleaved.

    Returns ``{"n", "rows": [...], "noise", "cmp"}``; one row per method: name, seconds (best of
    ``repeat``), gflops, pct_of_blas (100 * gflops / numpy's, numpy timed in the same run),
    max_abs_err vs numpy in float64; ``cmp`` is the interleaved comparison itself (``cmp.pairs(a, b)``:
    any two methods' pair ratios, e.g. for a verdict that judges one of them against numpy).
    """
    n = check_positive_int(n, "n", high=4096)
    repeat = check_repeat(repeat)
    if methods is not None and (isinstance(methods, str) or not hasattr(methods, "__iter__")):
        raise TypeError(f"methods: expected a list of kernel names or callables, got {methods!r}")
    methods = list(mm.MATMUL_KERNELS) if methods is None else list(methods)
    if "numpy" not in methods:
        methods.append("numpy")
    fns = {_name(m): _resolve(m, "methods") for m in methods}
    A, B = _operands(n, dtype, seed)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    outs = {k: np.empty((n, n), dtype) for k in fns}
    cmp = timing.compare(repeat=repeat, warmup=1,
                         **{k: (lambda f=f, C=outs[k]: f(A, B, out=C)) for k, f in fns.items()})
    flops = timing.gemm_flops(n, n, n)
    rows = []
    for k in fns:
        t = cmp.timings[k].min
        rows.append({"name": k, "seconds": t, "gflops": flops / t / 1e9,
                     "max_abs_err": float(np.max(np.abs(outs[k] - ref))) if n else 0.0})
    blas = next(r for r in rows if r["name"] == "numpy")["gflops"]
    for r in rows:
        r["pct_of_blas"] = 100.0 * r["gflops"] / blas
    return {"n": n, "rows": rows, "noise": cmp.noise, "cmp": cmp}


def tile_sweep(n: int, tiles_i=(8, 16, 32, 64, 128), tiles_j=(16, 32, 64, 128, 256), *,
               tile_k: int = 64, method="tiled_simd", dtype: str = "float32", repeat: int = 2,
               seed: int = 0) -> dict:
    """GFLOP/s of a tiled rung over a grid of tile sizes.

    Returns ``{"grid": array (len(tiles_i), len(tiles_j)), "tiles_i", "tiles_j", "tile_k", "n",
    "noise"}``. Tiles larger than ``n`` are NaN (not run).
    """
    n = check_positive_int(n, "n", high=4096)
    if isinstance(method, str) and method not in mm.TILED_KERNELS:
        raise ValueError(f"method: expected one of {', '.join(mm.TILED_KERNELS)}, got {method!r}")
    tile_k = check_positive_int(tile_k, "tile_k", high=4096)
    repeat = check_repeat(repeat)
    tiles_i = check_sizes(tiles_i, "tiles_i", high=4096)
    tiles_j = check_sizes(tiles_j, "tiles_j", high=4096)
    f = _resolve(method)
    A, B = _operands(n, dtype, seed)
    C = np.empty((n, n), dtype)
    f(A, B, out=C)  # compile once
    grid = np.full((len(tiles_i), len(tiles_j)), np.nan)
    noise = timing.Noise()
    for a, ti in enumerate(tiles_i):
        for b, tj in enumerate(tiles_j):
            if ti > n or tj > n or tile_k > n:
                continue
            t = timing.measure(f, A, B, ti, tj, min(tile_k, n), out=C, repeat=repeat, warmup=0, number=1)
            grid[a, b] = timing.gemm_flops(n, n, n) / t.min / 1e9
            noise = noise | t.noise
    return {"grid": grid, "tiles_i": tiles_i, "tiles_j": tiles_j, "tile_k": tile_k, "n": n, "noise": noise}


def tile_rate(n: int = 256, tile_i: int = 64, tile_j: int = 64, tile_k: int = 64, *,
              method: str = "tiled_simd", repeat: int = 2) -> dict:
    """For the tile-size widget: GFLOP/s of a tiled rung and of numpy on ``(n, n) @ (n, n)``, interleaved.

    Tiles larger than ``n`` are clipped to ``n``. Returns ``{"n", "tiles": (ti, tj, tk), "method",
    "ours", "numpy", "pct_of_blas", "noise"}``.
    """
    n = check_positive_int(n, "n", high=4096)
    if method not in mm.TILED_KERNELS:
        raise ValueError(f"method: expected one of {', '.join(mm.TILED_KERNELS)}, got {method!r}")
    tiles = tuple(min(check_positive_int(t, nm), n) for t, nm in
                  ((tile_i, "tile_i"), (tile_j, "tile_j"), (tile_k, "tile_k")))
    repeat = check_repeat(repeat)
    f = mm.MATMUL_KERNELS[method]
    A, B = _operands(n, "float32", 0)
    C1, C2 = np.empty((n, n), np.float32), np.empty((n, n), np.float32)
    cmp = timing.compare(ours=lambda: f(A, B, *tiles, out=C1), numpy=lambda: np.matmul(A, B, out=C2),
                         repeat=repeat, warmup=1)
    flops = timing.gemm_flops(n, n, n)
    ours, blas = flops / cmp.timings["ours"].min / 1e9, flops / cmp.timings["numpy"].min / 1e9
    return {"n": n, "tiles": tiles, "method": method, "ours": ours, "numpy": blas,
            "pct_of_blas": 100.0 * ours / blas, "noise": cmp.noise}


def compare_sizes(sizes=(1000, 1024), methods=("ikj", "tiled_simd", "parallel_tiled", "numpy"), *,
                  dtype: str = "float32", repeat: int = 3, seed: int = 0) -> dict:
    """GFLOP/s of each method at each size in ``sizes`` (e.g. 1000 and the power of two 1024),
    all timed interleaved so a slow moment of a shared machine hits every size alike.

    Returns ``{"sizes", "rates": {name: (rate at sizes[0], rate at sizes[1], ...)}, "noise"}``.
    """
    sizes = tuple(check_sizes(sizes, "sizes", high=4096))
    if isinstance(methods, str) or not hasattr(methods, "__iter__"):
        raise TypeError(f"methods: expected a list of kernel names or callables, got {methods!r}")
    if len(sizes) < 2:
        raise ValueError(f"sizes: expected at least two sizes, got {sizes}")
    repeat = check_repeat(repeat)
    fns = {_name(m): _resolve(m, "methods") for m in methods}
    if not fns:
        raise ValueError("methods: expected at least one kernel name or callable, got none")
    ops = {s: _operands(s, dtype, seed) for s in sizes}
    outs = {s: np.empty((s, s), dtype) for s in sizes}
    runs = {f"{k}@{s}": (lambda f=f, s=s: f(*ops[s], out=outs[s])) for k, f in fns.items() for s in sizes}
    cmp = timing.compare(repeat=repeat, warmup=1, **runs)
    rates = {k: tuple(timing.gemm_flops(s, s, s) / cmp.timings[f"{k}@{s}"].min / 1e9 for s in sizes) for k in fns}
    return {"sizes": sizes, "rates": rates, "noise": cmp.noise}


def time_combinations(n: int, *, dtype: str = "float32", repeat: int = 3, seed: int = 0,
                      tile_i: int = 64, tile_j: int = 16, tile_k: int = 64) -> dict:
    """Time the 8 combinations of seed Fig. 10 on ``(n, n) @ (n, n)``, interleaved.

    Returns ``{"n", "rows", "noise"}``; one row per combination: tiled, simd, parallel, name,
    seconds (median), gflops, speedup (over the all-off serial kernel).
    """
    n = check_positive_int(n, "n", high=4096)
    repeat = check_repeat(repeat)
    tile_i, tile_j, tile_k = (check_positive_int(v, k, high=4096) for k, v in
                              (("tile_i", tile_i), ("tile_j", tile_j), ("tile_k", tile_k)))
    A, B = _operands(n, dtype, seed)
    C = np.empty((n, n), dtype)
    kernels = {mm.combination_name(*c): mm.combination_kernel(*c, tile_i=tile_i, tile_j=tile_j, tile_k=tile_k)
               for c in mm.COMBINATIONS}
    cmp = timing.compare(repeat=repeat, warmup=1, **{k: (lambda f=f: f(A, B, out=C)) for k, f in kernels.items()})
    flops = timing.gemm_flops(n, n, n)
    base = cmp.timings["serial"].median
    rows = []
    for c in mm.COMBINATIONS:
        name = mm.combination_name(*c)
        t = cmp.timings[name].median
        rows.append({"tiled": c[0], "simd": c[1], "parallel": c[2], "name": name,
                     "seconds": t, "gflops": flops / t / 1e9, "speedup": base / t})
    return {"n": n, "rows": rows, "noise": cmp.noise}


def simd_ops(dispatcher, argtypes) -> dict:
    """Count packed (SIMD) and scalar floating-point multiply/add/FMA instructions in the machine
    code numba generates for ``dispatcher`` (an ``@njit`` function) at the numba types ``argtypes``.

    Returns ``{"vector": count, "scalar": count, "widest": "zmm" | "ymm" | "xmm" | None}``
    (zmm = 512-bit, ymm = 256-bit, xmm = 128-bit registers). The function is recompiled without the
    on-disk cache (numba cannot show the assembly of cached code): a second or two.
    """
    from numba import njit

    if not hasattr(dispatcher, "py_func") or not hasattr(dispatcher, "targetoptions"):
        raise TypeError(f"dispatcher: expected a numba @njit function, got {type(dispatcher).__name__}")
    opts = {k: v for k, v in dispatcher.targetoptions.items() if k not in ("cache", "nopython")}
    fresh = njit(**opts)(dispatcher.py_func)
    fresh.compile(tuple(argtypes))
    asm = "\n".join(fresh.inspect_asm().values())
    regs = ("zmm", "ymm", "xmm")
    vec = scal = 0
    widest = None
    for line in asm.splitlines():
        parts = line.split()
        if not parts:
            continue
        op = parts[0]
        if not op.startswith(("vfmadd", "vfnmadd", "vmul", "vadd", "vsub", "vdiv", "mul", "add", "sub", "div")):
            continue
        if op.endswith(("ps", "pd")):
            vec += 1
            reg = next((r for r in regs if r in line), None)
            if reg and (widest is None or regs.index(reg) < regs.index(widest)):
                widest = reg
        elif op.endswith(("ss", "sd")):
            scal += 1
    return {"vector": vec, "scalar": scal, "widest": widest}


def vector_instructions(kernel: str, dtype: str = "float32") -> dict:
    """:func:`simd_ops` for the core of a ladder rung (``"parallel_tiled"``: its micro-kernel).
    A structural check that the compiler really emitted SIMD code."""
    from numba import typeof

    if not isinstance(kernel, str) or kernel not in mm.KERNEL_CORES:
        raise ValueError(f"kernel: expected one of {', '.join(mm.KERNEL_CORES)}, got {kernel!r}")
    disp, n_ints = mm.KERNEL_CORES[kernel]
    arr = typeof(np.zeros((2, 2), dtype=check_dtype(dtype, "dtype")))
    return simd_ops(disp, (arr, arr, arr) + (typeof(1),) * n_ints)
