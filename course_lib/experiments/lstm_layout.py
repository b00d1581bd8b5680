"""The seed's Fig. 3 for chapter 09 (experiments folder): the LSTM's input product in the two layouts,
``X W^T`` against ``W X^T`` -- timed with BLAS, timed as a plain dot-product loop nest (no BLAS blocking, so
the cache shows), modelled from the bytes each cache level moves, and measured with ``perf stat`` where the
machine exposes cache counters. Re-exported by :mod:`course_lib.experiments.lstm`.

``layout_gemm_times(batch, nh, nx)``      BLAS ``X W^T`` vs ``W X^T``
``loop_order_times(batch, nh, nx)``       the same product as a dot-product loop nest, in both layouts
``layout_traffic_model(batch, nh, nx)``   bytes moved through each cache level of this machine, modelled
``hardware_counters(batch, nh, nx)``      ``perf stat`` cache counters (``(None, why)`` where there are none)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from numba import njit

from ..core import backend
from ..core.timing import compare, gemm_flops
from ..core.validate import check_alloc_of, check_dtype, check_float, check_positive_int, check_repeat

__all__ = ["layout_gemm_times", "loop_order_times", "layout_traffic_model", "hardware_counters"]


def _sizes(batch, nh, nx, alloc=True):
    """``(batch, nh, nx)`` checked (nx defaults to nh), the GEMM's arrays bounded before allocating."""
    batch, nh = check_positive_int(batch, "batch", high=1 << 24), check_positive_int(nh, "nh", high=1 << 24)
    nx = nh if nx is None else check_positive_int(nx, "nx", high=1 << 24)
    if not alloc:
        return batch, nh, nx
    check_alloc_of(np.float64, "X", batch=batch, nx=nx)
    check_alloc_of(np.float64, "W", factor=4, nh=nh, nx=nx)
    check_alloc_of(np.float64, "Y", factor=4, batch=batch, nh=nh)
    return batch, nh, nx


def _gemm_operands(batch, nh, nx, dtype):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((batch, nx)).astype(dtype)
    W = rng.standard_normal((4 * nh, nx)).astype(dtype)
    return X, W


def layout_gemm_times(batch: int, nh: int, nx: int | None = None, *, dtype="float32", repeat: int = 5,
                      time_budget: float | None = None) -> dict:
    """The seed's observation 2 with the machine's BLAS: ``Y = X W^T`` vs ``Y^T = W X^T`` for ``X (B, nx)``,
    ``W (4H, nx)`` (each one BLAS call; numpy passes the transpose as a flag, no copy).

    Returns best-of-``repeat`` seconds ``XWt_s``, ``WXt_s``, ``ratio = t(XW^T) / t(WX^T)`` (> 1: the
    transposed layout is faster) and ``ratio_interval`` (where it lies, from the pairs), GFLOP/s of each and the
    ``comparison``. ``time_budget``: seconds :func:`~course_lib.core.timing.compare` may add rounds for while the
    interval is wide (default: its own)."""
    batch, nh, nx = _sizes(batch, nh, nx)
    dtype = check_dtype(dtype, "dtype")
    repeat = check_repeat(repeat)
    X, W = _gemm_operands(batch, nh, nx, dtype)
    Y, YT = np.empty((batch, 4 * nh), dtype), np.empty((4 * nh, batch), dtype)
    cmp = compare(repeat=repeat, warmup=1, time_budget=time_budget,
                  XWt=lambda: np.matmul(X, W.T, out=Y), WXt=lambda: np.matmul(W, X.T, out=YT))
    a, b = cmp.timings["XWt"].min, cmp.timings["WXt"].min
    flops = gemm_flops(batch, 4 * nh, nx)
    lo, hi = cmp.speedup_interval("WXt", over="XWt")    # the pairs' interval, widened to hold the best-of ratio
    return {"B": batch, "nh": nh, "nx": nx, "XWt_s": a, "WXt_s": b, "ratio": a / b,
            "ratio_interval": (min(lo, a / b), max(hi, a / b)),
            "gflops_XWt": flops / a / 1e9, "gflops_WXt": flops / b / 1e9, "comparison": cmp}


@njit(cache=True, fastmath=True)
def _rowdot(A, Bm, out):
    """``out[i, j] = A[i] . Bm[j]``: the outer loop walks the rows of ``A`` and, for each, streams ALL of
    ``Bm`` through the cache; each dot product is contiguous (vectorised)."""
    for i in range(A.shape[0]):
        a = A[i]
        for j in range(Bm.shape[0]):
            b = Bm[j]
            s = a.dtype.type(0.0)
            for k in range(a.size):
                s += a[k] * b[k]
            out[i, j] = s


def loop_order_times(batch: int, nh: int, nx: int | None = None, *, dtype="float32", repeat: int = 5,
                     time_budget: float | None = None) -> dict:
    """``Y = X W^T`` and ``Y^T = W X^T`` as the same plain loop nest (one dot product per output, written
    row by row), without a BLAS's cache blocking: ``XWt`` loops over the B rows of X and streams the whole
    ``W (4H, nx)`` once per row; ``WXt`` loops over the 4H rows of W and streams the small ``X (B, nx)``.
    Same FLOPs, same code -- only which operand is re-read differs.

    Returns best-of-``repeat`` seconds, ``ratio = t(XW^T) / t(WX^T)`` and its ``ratio_interval``, GFLOP/s, the
    ``comparison`` and ``agree`` (both give the same numbers). ``time_budget`` as in :func:`layout_gemm_times`."""
    batch, nh, nx = _sizes(batch, nh, nx)
    dtype = check_dtype(dtype, "dtype")
    repeat = check_repeat(repeat)
    X, W = _gemm_operands(batch, nh, nx, dtype)
    Y, YT = np.empty((batch, 4 * nh), dtype), np.empty((4 * nh, batch), dtype)
    cmp = compare(repeat=repeat, warmup=1, time_budget=time_budget,
                  XWt=lambda: _rowdot(X, W, Y), WXt=lambda: _rowdot(W, X, YT))
    a, b = cmp.timings["XWt"].min, cmp.timings["WXt"].min
    flops = gemm_flops(batch, 4 * nh, nx)
    tol = 1e-3 * np.sqrt(nx) * float(np.abs(Y).max() + 1)
    lo, hi = cmp.speedup_interval("WXt", over="XWt")    # the pairs' interval, widened to hold the best-of ratio
    return {"B": batch, "nh": nh, "nx": nx, "XWt_s": a, "WXt_s": b, "ratio": a / b,
            "ratio_interval": (min(lo, a / b), max(hi, a / b)),
            "gflops_XWt": flops / a / 1e9, "gflops_WXt": flops / b / 1e9, "comparison": cmp,
            "agree": bool(np.allclose(Y, YT.T, atol=tol))}


def layout_traffic_model(batch: int, nh: int, nx: int | None = None, *, caches: dict | None = None,
                         itemsize: int = 4, line: int = 64) -> dict:
    """Fig. 3's utilisation half, *modelled* (no hardware counter involved) for the loop nest of
    :func:`loop_order_times`.

    Each dot product loads one cache line of the outer row and one of the inner row per ``line`` bytes.
    The outer row is reused for the whole inner loop (it always hits); the inner operand is re-read
    once per outer row, so it hits in a cache level only if the *whole inner operand* fits there (LRU,
    cyclic access: if it does not fit, every line is gone before it is used again). Per cache level
    (``caches``: ``{"L1d": bytes, "L2": ..., ...}``, default :func:`course_lib.core.backend.cache_sizes`) this gives, for ``XWt`` (inner
    operand W, ``4H x nx``) and ``WXt`` (inner operand X, ``B x nx``): ``hit_rate`` (share of line loads
    served by that level or above) and ``bytes_from_below`` (bytes the level must fetch from further out).
    Returns ``{"levels": {...}, "loads_lines", "bytes_X", "bytes_W", "modelled": True}``.
    """
    batch, nh, nx = _sizes(batch, nh, nx, alloc=False)
    itemsize, line = check_positive_int(itemsize, "itemsize"), check_positive_int(line, "line")
    if caches is not None and not isinstance(caches, dict):
        raise TypeError(f"caches: expected a dict level -> bytes such as {{'L2': 1048576}}, got {caches!r:.40}")
    caches = backend.cache_sizes() if caches is None else dict(caches)
    if not caches:
        raise ValueError("caches: this system does not report its cache sizes; pass caches={'L2': bytes, ...}")
    for name, size in caches.items():
        check_positive_int(size, f"caches[{name!r}]")
    row_lines = -(-nx * itemsize // line)
    bytes_X, bytes_W = batch * nx * itemsize, 4 * nh * nx * itemsize
    loads = 2 * batch * 4 * nh * row_lines  # line loads: one outer + one inner row line per dot-product chunk
    levels = {}
    for name, size in sorted(caches.items(), key=lambda kv: kv[1]):
        row = {}
        for layout, outer_rows, inner_rows in (("XWt", batch, 4 * nh), ("WXt", 4 * nh, batch)):
            inner_bytes = inner_rows * row_lines * line
            fits = inner_bytes <= size
            misses = outer_rows * row_lines + inner_rows * row_lines * (1 if fits else outer_rows)
            row[layout] = {"inner_fits": fits, "hit_rate": 1.0 - misses / loads, "bytes_from_below": misses * line}
        levels[name] = dict(row, size=size)
    return {"B": batch, "nh": nh, "nx": nx, "bytes_X": bytes_X, "bytes_W": bytes_W, "loads_lines": loads,
            "levels": levels, "modelled": True}


_COUNTERS = ("cache-references", "cache-misses", "L1-dcache-loads", "L1-dcache-load-misses")
_PERF_SCRIPT = """
import sys, numpy as np
from course_lib.experiments.lstm_layout import _gemm_operands, _rowdot
B, H, nx, reps, layout = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
X, W = _gemm_operands(B, H, nx, "float32")
A, Bm = (X, W) if layout == "XWt" else (W, X)
out = np.empty((A.shape[0], Bm.shape[0]), np.float32)
_rowdot(A[:1], Bm[:1], out[:1, :1])
for _ in range(reps):
    _rowdot(A, Bm, out)
"""


def _parse_perf(text: str) -> dict:
    """``perf stat -x,`` output -> ``{event: count}``; events perf could not count are left out."""
    counts = {}
    for row in text.splitlines():
        parts = row.split(",")
        if len(parts) >= 3 and parts[2].strip() in _COUNTERS:
            try:
                counts[parts[2].strip()] = float(parts[0])
            except ValueError:  # "<not supported>" / "<not counted>"
                continue
    return counts


def hardware_counters(batch: int, nh: int, nx: int | None = None, *, reps: int = 20, timeout: float = 120.0):
    """Fig. 3's utilisation half *measured*: run :func:`loop_order_times`'s loop nest in each layout in a
    child process under ``perf stat`` and read the CPU's cache counters (the run with 0 repetitions is
    subtracted, so Python's start-up does not count).

    Returns ``(result, why)``: ``result`` is ``{"XWt": {event: count}, "WXt": {...}, "hit_rate": {layout:
    1 - misses/references}}`` and ``why`` is ``""``; or ``(None, reason)`` when this machine cannot measure
    it (no ``perf``, counters not exposed -- common in virtual machines -- or not permitted)."""
    batch, nh, nx = _sizes(batch, nh, nx)
    reps = check_positive_int(reps, "reps", high=100_000)
    timeout = check_float(timeout, "timeout", low=0.0, high=86400.0, low_inclusive=False)
    perf = shutil.which("perf")
    if perf is None:
        return None, "no `perf` on this machine"
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def run(layout, n):
        cmd = [perf, "stat", "-x,", "-e", ",".join(_COUNTERS), sys.executable, "-c", _PERF_SCRIPT,
               str(batch), str(nh), str(nx), str(n), layout]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"perf stat failed ({type(exc).__name__})"
        counts = _parse_perf(res.stderr)
        if res.returncode != 0 and not counts:
            return None, f"perf stat exited with {res.returncode}: {res.stderr.strip().splitlines()[-1:]}"
        if not {"cache-references", "cache-misses"} <= set(counts):
            return None, "perf runs, but this CPU/VM does not expose cache counters (<not supported>)"
        return counts, ""

    result = {}
    for layout in ("XWt", "WXt"):
        full, why = run(layout, reps)
        if full is None:
            return None, why
        base, why = run(layout, 0)
        if base is None:
            return None, why
        result[layout] = {k: max(full[k] - base.get(k, 0.0), 0.0) for k in full}
    result["hit_rate"] = {lay: 1.0 - result[lay]["cache-misses"] / max(result[lay]["cache-references"], 1.0)
                          for lay in ("XWt", "WXt")}
    return result, ""
