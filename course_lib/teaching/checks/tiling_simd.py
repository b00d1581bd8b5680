"""Checks for worksheet 04 (tiling & SIMD): a tiled matmul and a ``prange`` parallel matmul.

``check_tiled_matmul(tiled_matmul)``      Exercise 4.1: ``tiled_matmul(A, B, tile) -> C``
``check_parallel_matmul(parallel_matmul)`` Exercise 4.2: ``parallel_matmul(A, B) -> C``, compiled
                                           with ``@njit(parallel=True)`` and a ``prange`` loop.

"Really parallel" is checked *structurally*, not with a stopwatch (a shared 2-core machine makes
speedups noisy): the function must be a numba function compiled with ``parallel=True``, and
numba's parallel diagnostics must list at least one loop that came from a user ``prange``.
``parallel_structure(fn, *args)`` returns what was found, for the notebook to print.
"""
from __future__ import annotations

import numpy as np

from .core import ExerciseFailed, Case, check_function

__all__ = ["check_tiled_matmul", "check_parallel_matmul", "parallel_structure", "reference_matmul"]

_RTOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10}


def reference_matmul(A, B, tile=None):
    """numpy's product, computed in float64 and returned in A's dtype (``tile`` is ignored)."""
    return (np.asarray(A, np.float64) @ np.asarray(B, np.float64)).astype(np.asarray(A).dtype)


def _matrices(rng, m, k, n, dtype):
    A = rng.standard_normal((m, k)).astype(dtype)
    B = rng.standard_normal((k, n)).astype(dtype)
    return A, B


def _tiled_cases(dtype):
    rng = np.random.default_rng(4)
    # (m, k, n, tile): a tile that divides, tiles that leave ragged edges, tile 1, tile = matrix
    shapes = [(8, 8, 8, 4), (13, 7, 10, 4), (33, 17, 65, 16), (5, 9, 3, 1), (24, 24, 24, 24)]
    cases = []
    for m, k, n, tile in shapes:
        A, B = _matrices(rng, m, k, n, dtype)
        cases.append(Case(kwargs=dict(A=A, B=B, tile=tile), label=f"A {A.shape}, B {B.shape}, tile {tile}"))
    return cases


def check_tiled_matmul(student, dtype=np.float32) -> str:
    """Exercise 4.1: ``tiled_matmul(A, B, tile)`` must equal ``A @ B`` for tiles that divide the
    matrix and tiles that leave ragged edges."""
    dtype = np.dtype(dtype)
    return check_function(
        "4.1", student, reference_matmul, _tiled_cases(dtype),
        rtol=_RTOL[dtype], atol=_RTOL[dtype], time_axis=0, time_name="row",
        hint=("when the size is not a multiple of the tile, the last tile is smaller: stop each "
              "tile loop at min(start + tile, size); and start from C = 0 before accumulating."),
    )


def parallel_structure(fn, *args) -> dict:
    """What numba says about ``fn``'s parallelism after compiling it for ``args``.

    Returns ``{"numba": bool, "parallel_option": bool, "prange_loops": int, "other_parallel_loops":
    int, "problem": str or None}``. ``prange_loops`` counts loops numba turned into parallel loops
    *from a prange*; array expressions such as ``np.zeros`` are counted separately. The function is
    recompiled once without the on-disk cache, because cached code carries no diagnostics.
    """
    info = {"numba": False, "parallel_option": False, "prange_loops": 0, "other_parallel_loops": 0,
            "problem": None}
    py_func = getattr(fn, "py_func", None)
    options = getattr(fn, "targetoptions", None)
    if py_func is None or options is None:
        info["problem"] = ("this is a plain Python function: decorate it with @njit(parallel=True) "
                           "(from numba import njit, prange)")
        return info
    info["numba"] = True
    info["parallel_option"] = bool(options.get("parallel"))
    if not info["parallel_option"]:
        info["problem"] = ("the function is compiled without parallel=True, so prange runs like range "
                           "on one thread: use @njit(parallel=True)")
        return info
    from numba import njit  # noqa: PLC0415

    fresh = njit(**{k: v for k, v in options.items() if k not in ("cache", "nopython")})(py_func)
    fresh(*args)
    diag = fresh.get_metadata(fresh.signatures[0]).get("parfor_diagnostics")
    parfors = list(getattr(diag, "initial_parfors", []) or [])
    for p in parfors:
        if any(pat and pat[0] == "prange" for pat in getattr(p, "patterns", [])):
            info["prange_loops"] += 1
        else:
            info["other_parallel_loops"] += 1
    if info["prange_loops"] == 0:
        info["problem"] = ("numba found no prange loop to run in parallel: write the outer loop over "
                           "rows (or row blocks) as `for i in prange(m):`")
    return info


def _parallel_cases(dtype):
    rng = np.random.default_rng(42)
    shapes = [(1, 1, 1), (8, 8, 8), (13, 7, 10), (64, 32, 48), (3, 50, 70)]
    cases = []
    for m, k, n in shapes:
        A, B = _matrices(rng, m, k, n, dtype)
        cases.append(Case(kwargs=dict(A=A, B=B), label=f"A {A.shape}, B {B.shape}"))
    return cases


def check_parallel_matmul(student, dtype=np.float32) -> str:
    """Exercise 4.2: ``parallel_matmul(A, B)`` equals ``A @ B`` on 5 cases **and** is a numba
    function compiled with ``parallel=True`` whose loop over rows is a ``prange``."""
    dtype = np.dtype(dtype)
    cases = _parallel_cases(dtype)
    line = check_function(
        "4.2", student, reference_matmul, cases, rtol=_RTOL[dtype], atol=_RTOL[dtype],
        time_axis=0, time_name="row", quiet=True,
        hint=("each prange iteration must write its own rows of C only (no two iterations may "
              "add into the same element), and C must start at zero."),
    )
    probe = cases[3].kwargs
    try:
        info = parallel_structure(student, probe["A"], probe["B"])
    except NotImplementedError:
        raise
    except Exception as exc:  # pragma: no cover - numba internals changed
        raise ExerciseFailed(
            f"Exercise 4.2 failed:\n  the results are right, but numba's parallel diagnostics could not "
            f"be read ({type(exc).__name__}: {exc}).\n  Hint: time it with 1 and 2 threads "
            f"(backend.set_threads) to see the speedup yourself.") from exc
    if info["problem"]:
        raise ExerciseFailed(
            "Exercise 4.2 failed:\n  the results are right, but it does not run in parallel: "
            f"{info['problem']}.")
    print(line)
    print(f"  numba parallel=True, {info['prange_loops']} prange loop(s) turned into parallel loops")
    return line
