"""A steady heap for speed checks (teaching folder).

A speed check that gives every timed call a fresh input (:func:`.speed.judge_speed`) allocates and frees
megabytes between the calls. glibc serves blocks above its *mmap threshold* (128 KiB at first) with fresh
pages from the kernel and returns them on free, so a function's output array (``np.empty_like(x)``, 1 MiB
for 8.5's ``T = 2^18`` float32) is page-faulted in again on every call: about 0.3 ms at 8.5's size, as much as
the scan itself. Which side of a comparison pays depends on what the check allocated in between, so the
same function measured as "yours" ran 1.7x slower than as the baseline (measured 2026-11-26, 2-core EPYC).

:func:`steady_heap` raises glibc's mmap threshold to 32 MiB and its trim threshold to 64 MiB (``mallopt``),
so freed blocks below 32 MiB are reused without new page faults -- the state a long-running kernel
reaches anyway (glibc raises the threshold itself as large blocks are freed). It is process-wide and
idempotent, and does nothing where the C library is not glibc.
"""
from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["steady_heap", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

MMAP_THRESHOLD = 32 << 20   # glibc's largest allowed value on 64-bit (HEAP_MAX_SIZE / 2)
TRIM_THRESHOLD = 64 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_done: list = []


def steady_heap() -> bool:
    """Set glibc's mmap and trim thresholds (module doc) once; True where they are set (glibc), else False."""
    if _done:
        return _done[0]
    ok = False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        mallopt = None
    if mallopt is not None:
        ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    _done.append(ok)
    return ok
