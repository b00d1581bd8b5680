"""Counting work: FLOPs of matrix products, bytes of arrays, GFLOP/s and log-log slopes (core/).

Plain arithmetic, nothing timed: :mod:`course_lib.core.timing` measures, this module counts what the
measured call did, so a rate (GFLOP/s, GB/s) or an intensity (FLOP per byte) can be formed.

``gemm_flops(m, n, k)``, ``gemv_flops(m, k)``, ``array_bytes(*arrays)``, ``gemm_intensity(m, n, k)``,
``gflops(flops, seconds)``, ``loglog_slope(sizes, times)`` -- also importable from ``core.timing``.
"""
from __future__ import annotations


import numpy as np

from .validate import as_array, check_float, check_int, check_positive_int

__all__ = ["gemm_flops", "gemv_flops", "array_bytes", "gemm_intensity", "gflops", "loglog_slope"]


def gemm_flops(m: int, n: int, k: int) -> int:
    """FLOPs of ``(m, k) @ (k, n)``: one multiply and one add per term, ``2 m n k``."""
    m, n, k = (check_int(v, nm, low=0) for v, nm in ((m, "m"), (n, "n"), (k, "k")))
    return 2 * m * n * k      # Python ints: numpy integers in, no int64 overflow out


def gemv_flops(m: int, k: int) -> int:
    """FLOPs of ``(m, k) @ (k,)``: ``2 m k``."""
    return gemm_flops(m, 1, k)


def array_bytes(*arrays) -> int:
    """Total bytes of the given arrays (what a kernel must at least read or write)."""
    total = 0
    for i, a in enumerate(arrays):
        if isinstance(a, np.ndarray):
            total += a.nbytes
            continue
        arr = as_array(a, f"arrays[{i}]")
        if arr.dtype.kind not in "biufc":
            raise TypeError(f"arrays[{i}]: expected a numeric array, got dtype {arr.dtype}")
        total += arr.nbytes
    return int(total)


def gemm_intensity(m: int, n: int, k: int, itemsize: int = 4) -> float:
    """Arithmetic intensity (FLOP/byte) of ``C (m, n) = A (m, k) @ B (k, n)`` when each matrix
    crosses the memory bus once: ``2mnk / (itemsize * (mk + kn + mn))``."""
    m, n, k, itemsize = (check_positive_int(v, nm) for v, nm in ((m, "m"), (n, "n"), (k, "k"), (itemsize, "itemsize")))
    return gemm_flops(m, n, k) / (itemsize * (m * k + k * n + m * n))


def gflops(flops: float, seconds: float) -> float:
    """GFLOP/s."""
    flops = check_float(flops, "flops", low=0.0)
    if isinstance(seconds, (int, float, np.integer, np.floating)) and not isinstance(seconds, (bool, np.bool_)) \
            and seconds <= 0:
        raise ValueError(f"seconds: expected a positive time, got {seconds}")
    seconds = check_float(seconds, "seconds", low=0.0, low_inclusive=False)
    return flops / seconds / 1e9


def loglog_slope(sizes, times) -> float:
    """Least-squares slope of ``log(times)`` against ``log(sizes)``: ~1 for O(N), ~2 for O(N^2)."""
    sizes = as_array(sizes, "sizes")
    times = as_array(times, "times")
    for arr, nm in ((sizes, "sizes"), (times, "times")):
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{nm}: expected real numbers, got dtype {arr.dtype}")
        if arr.ndim != 1:
            raise ValueError(f"{nm}: expected a 1-D sequence of values, got shape {tuple(arr.shape)}")
    sizes = sizes.astype(float)
    times = times.astype(float)
    if sizes.shape != times.shape or sizes.size < 2:
        raise ValueError(f"sizes, times: expected two equal-length sequences of >= 2 values, "
                         f"got {sizes.size} and {times.size}")
    if not (np.all(sizes > 0) and np.all(times > 0) and np.all(np.isfinite(sizes)) and np.all(np.isfinite(times))):
        raise ValueError("sizes, times: expected positive, finite values")
    if np.ptp(np.log(sizes)) == 0:
        raise ValueError(f"sizes: expected at least two different sizes to fit a slope, got {sizes.tolist()}")
    return float(np.polyfit(np.log(sizes), np.log(times), 1)[0])


