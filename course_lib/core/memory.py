"""A steady allocator for every measurement (core layer).

glibc's ``malloc`` maps a large block (above its *mmap threshold*) afresh from the kernel and returns it when
freed -- and the first touch of every new page then costs a page fault (about 0.5-2 µs on a virtual machine).
The threshold is *dynamic*: it rises, up to 32 MiB, whenever a large mapped block is freed. So whether a
function that allocates a 250 KB temporary faults in 60 new pages per call or reuses warm heap pages depends on
what the process allocated before -- seen in this course: a linear recurrence's backward took 480 µs in a fresh
process and 120 µs in one that had run other code first, and exercise 5.1's fused kernel measured 13x over
numpy before its first check and under 4x after it.

:func:`steady_memory` pins the two thresholds to the values glibc's own heuristic moves towards (large blocks up
to :data:`MMAP_THRESHOLD` come from the heap, up to :data:`TRIM_THRESHOLD` of free heap is kept), once per
process: every measurement then sees a warmed-up process. ``core.timing`` calls it before it times anything.
Off glibc (macOS, Windows) nothing is changed.
"""
from __future__ import annotations

__all__ = ["steady_memory", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

MMAP_THRESHOLD = 32 << 20   # glibc's largest dynamic mmap threshold (64-bit): larger blocks are mapped afresh
TRIM_THRESHOLD = 64 << 20   # free heap glibc keeps before returning it (twice the above, as glibc pairs them)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # mallopt's parameter numbers (malloc.h)
_steady: bool | None = None


def steady_memory() -> bool:
    """Pin glibc's allocator (see the module docstring), once per process; whether it applies here."""
    global _steady
    if _steady is None:
        _steady = False
        try:
            import ctypes
            import ctypes.util

            mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
        except (OSError, AttributeError, TypeError):
            return False
        mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        _steady = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _steady
