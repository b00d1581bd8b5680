"""Matrix-multiply kernels in numba, as a ladder (algorithms layer; chapters 04 and 05).

Chapter 04 climbs this ladder; chapter 05 adds threads. Every rung computes the same
``C (m, n) = A (m, k) @ B (k, n)`` and is checked against numpy in ``tests/algorithms/test_matmul.py``.

=========================  =======================================================================
``matmul_naive``           ijk: the textbook triple loop. The inner loop is a dot product that walks
                           down a *column* of B (stride n): poor locality, and a strict-order sum
                           the compiler may not vectorise.
``matmul_ikj``             the same loops reordered: the inner loop ``C[i, :] += A[i, p] * B[p, :]``
                           walks rows, so it is contiguous and LLVM turns it into SIMD code.
``matmul_tiled``           ijk on tiles ``tile_i x tile_j x tile_k`` that fit in cache (locality),
                           still a scalar dot product inside.
``matmul_tiled_simd``      tiles + a contiguous ikj inner loop + ``fastmath``: tiling *and* SIMD.
``matmul_parallel``        ikj with ``prange`` over blocks of rows (each thread owns rows of C).
``matmul_parallel_tiled``  the fast one: ``prange`` over row blocks, B packed into contiguous
                           ``tile_k x tile_j`` panels, and a register-blocked micro-kernel that
                           updates 4 rows of C with 8 values of k at a time (each C element is
                           loaded and stored once per 8 multiply-adds), ``fastmath``.
=========================  =======================================================================

The serial and ``prange`` versions are written out separately on purpose: the pair *is* chapter 04's
lesson (seed Fig. 10's eight combinations of tiling, SIMD and parallel: :func:`combination_kernel`).

All public functions validate their inputs (2-D float32/float64 arrays of the same dtype, matching
inner dimensions). Non-contiguous inputs are **copied** to C order first (one extra pass over the
input, documented, never a silent wrong answer); an ``out=`` array must be C-contiguous with the
right shape and dtype (it cannot be copied), otherwise ``ValueError``. Tile sizes must be
``1 <= tile <= the dimension they tile``; ``None`` (the default) means ``min(64, dimension)``
(``matmul_parallel_tiled``: 64 rows, 512 columns, 256 values of k, clipped to the matrix).

The numba cores (``_*`` functions) are ``@njit(cache=True)`` and take an output array; the public
wrappers are plain Python so their error messages are ordinary Python exceptions. ``KERNEL_CORES``
names the core of each rung (for looking at its machine code). Timing them is
:mod:`course_lib.experiments.matmul`'s job.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from numba import njit, prange

from ..core.validate import check_array, check_bool, check_int, check_positive_int

__all__ = [
    "matmul_naive",
    "matmul_ikj",
    "matmul_tiled",
    "matmul_tiled_simd",
    "matmul_parallel",
    "matmul_parallel_tiled",
    "MATMUL_KERNELS",
    "TILED_KERNELS",
    "KERNEL_CORES",
    "COMBINATIONS",
    "combination_kernel",
    "combination_name",
    "DEFAULT_TILE",
]

DEFAULT_TILE = 64


# =========================================================================== numba cores
@njit(cache=True)
def _naive(A, B, C):
    """ijk: C[i, j] = sum_p A[i, p] * B[p, j]; the inner loop strides down a column of B."""
    m, k = A.shape
    n = B.shape[1]
    for i in range(m):
        for j in range(n):
            s = 0.0
            for p in range(k):
                s += A[i, p] * B[p, j]
            C[i, j] = s


@njit(cache=True)
def _ikj(A, B, C):
    """ikj: for each (i, p), C[i, :] += A[i, p] * B[p, :] -- contiguous inner loop."""
    m, k = A.shape
    n = B.shape[1]
    C[:, :] = 0
    for i in range(m):
        for p in range(k):
            a = A[i, p]
            for j in range(n):
                C[i, j] += a * B[p, j]


@njit(cache=True)
def _tiled(A, B, C, ti, tj, tk):
    """ijk on tiles: each (ti x tk) tile of A meets a (tk x tj) tile of B while both are in cache.

    (Inner loops run over row/column *views* starting at 0: numba must handle negative indices
    for ``range(start, stop)`` with a run-time start, which blocks vectorisation.)
    """
    m, k = A.shape
    n = B.shape[1]
    C[:, :] = 0
    for i0 in range(0, m, ti):
        i1 = min(i0 + ti, m)
        for j0 in range(0, n, tj):
            j1 = min(j0 + tj, n)
            for p0 in range(0, k, tk):
                p1 = min(p0 + tk, k)
                for i in range(i0, i1):
                    a_row = A[i, p0:p1]
                    c_row = C[i, j0:j1]
                    for j in range(j1 - j0):
                        b_col = B[p0:p1, j0 + j]
                        s = c_row[j]
                        for q in range(p1 - p0):
                            s += a_row[q] * b_col[q]
                        c_row[j] = s


@njit(cache=True, fastmath=True)
def _tiled_simd(A, B, C, ti, tj, tk):
    """Tiles, and inside a tile the ikj order: the j loop is contiguous and becomes SIMD code."""
    m, k = A.shape
    n = B.shape[1]
    C[:, :] = 0
    for i0 in range(0, m, ti):
        i1 = min(i0 + ti, m)
        for p0 in range(0, k, tk):
            p1 = min(p0 + tk, k)
            for j0 in range(0, n, tj):
                j1 = min(j0 + tj, n)
                for i in range(i0, i1):
                    c_row = C[i, j0:j1]
                    for p in range(p0, p1):
                        a = A[i, p]
                        b_row = B[p, j0:j1]
                        for j in range(j1 - j0):
                            c_row[j] += a * b_row[j]


# ---------------------------------------------------------------- the 8 combinations (Fig. 10)
# "scalar" = dot-product inner loop (strict-order sum: not vectorised); "simd" = contiguous
# axpy inner loop with fastmath (vectorised). Untiled = one tile as large as the matrix.
@njit(cache=True, parallel=True)
def _tiled_parallel_scalar(A, B, C, ti, tj, tk):
    """matmul_tiled with prange over blocks of ti rows (a thread owns whole rows of C)."""
    m, k = A.shape
    n = B.shape[1]
    nblocks = (m + ti - 1) // ti
    for b in prange(nblocks):
        i0 = b * ti
        i1 = min(i0 + ti, m)
        for i in range(i0, i1):
            for j in range(n):
                C[i, j] = 0
        for j0 in range(0, n, tj):
            j1 = min(j0 + tj, n)
            for p0 in range(0, k, tk):
                p1 = min(p0 + tk, k)
                for i in range(i0, i1):
                    a_row = A[i, p0:p1]
                    c_row = C[i, j0:j1]
                    for j in range(j1 - j0):
                        b_col = B[p0:p1, j0 + j]
                        s = c_row[j]
                        for q in range(p1 - p0):
                            s += a_row[q] * b_col[q]
                        c_row[j] = s


@njit(cache=True, parallel=True, fastmath=True)
def _tiled_parallel_simd(A, B, C, ti, tj, tk):
    """matmul_tiled_simd with prange over blocks of ti rows (ti = 1: plain parallel ikj)."""
    m, k = A.shape
    n = B.shape[1]
    nblocks = (m + ti - 1) // ti
    for b in prange(nblocks):
        i0 = b * ti
        i1 = min(i0 + ti, m)
        for i in range(i0, i1):
            for j in range(n):
                C[i, j] = 0
        for p0 in range(0, k, tk):
            p1 = min(p0 + tk, k)
            for j0 in range(0, n, tj):
                j1 = min(j0 + tj, n)
                for i in range(i0, i1):
                    c_row = C[i, j0:j1]
                    for p in range(p0, p1):
                        a = A[i, p]
                        b_row = B[p, j0:j1]
                        for j in range(j1 - j0):
                            c_row[j] += a * b_row[j]


# ---------------------------------------------------------------- the fast kernel
@njit(cache=True, fastmath=True)
def _pack_panel(B, p0, p1, j0, j1, panel):
    """Copy B[p0:p1, j0:j1] into the contiguous ``panel`` (rows of length j1 - j0)."""
    for r in range(p1 - p0):
        src = B[p0 + r, j0:j1]
        dst = panel[r]
        for j in range(j1 - j0):
            dst[j] = src[j]


@njit(cache=True, fastmath=True)
def _micro_rows(A, C, panel, i0, i1, p0, p1, j0, j1):
    """C[i0:i1, j0:j1] += A[i0:i1, p0:p1] @ panel, 4 rows x 8 values of k at a time.

    Register blocking: for a block of 4 rows and 8 values of k, the 32 numbers of A sit in
    registers, and each element of the 4 rows of C is loaded and stored once per 8 multiply-adds
    (once per 1 in the ikj kernel). The j loop is contiguous and compiles to SIMD code.
    """
    w = j1 - j0
    kk = p1 - p0
    i = i0
    while i + 4 <= i1:
        c0 = C[i, j0:j1]
        c1 = C[i + 1, j0:j1]
        c2 = C[i + 2, j0:j1]
        c3 = C[i + 3, j0:j1]
        r = 0
        while r + 8 <= kk:
            p = p0 + r
            # 4 x 8 block of A, one row of the block per line
            a00 = A[i, p]; a01 = A[i, p + 1]; a02 = A[i, p + 2]; a03 = A[i, p + 3]  # noqa: E702
            a04 = A[i, p + 4]; a05 = A[i, p + 5]; a06 = A[i, p + 6]; a07 = A[i, p + 7]  # noqa: E702
            a10 = A[i + 1, p]; a11 = A[i + 1, p + 1]; a12 = A[i + 1, p + 2]; a13 = A[i + 1, p + 3]  # noqa: E702
            a14 = A[i + 1, p + 4]; a15 = A[i + 1, p + 5]; a16 = A[i + 1, p + 6]; a17 = A[i + 1, p + 7]  # noqa: E702
            a20 = A[i + 2, p]; a21 = A[i + 2, p + 1]; a22 = A[i + 2, p + 2]; a23 = A[i + 2, p + 3]  # noqa: E702
            a24 = A[i + 2, p + 4]; a25 = A[i + 2, p + 5]; a26 = A[i + 2, p + 6]; a27 = A[i + 2, p + 7]  # noqa: E702
            a30 = A[i + 3, p]; a31 = A[i + 3, p + 1]; a32 = A[i + 3, p + 2]; a33 = A[i + 3, p + 3]  # noqa: E702
            a34 = A[i + 3, p + 4]; a35 = A[i + 3, p + 5]; a36 = A[i + 3, p + 6]; a37 = A[i + 3, p + 7]  # noqa: E702
            b0 = panel[r]; b1 = panel[r + 1]; b2 = panel[r + 2]; b3 = panel[r + 3]  # noqa: E702
            b4 = panel[r + 4]; b5 = panel[r + 5]; b6 = panel[r + 6]; b7 = panel[r + 7]  # noqa: E702
            for j in range(w):
                # read everything first, then write: the compiler cannot prove that C and the
                # panel do not overlap, so a store before a load would force it to reload
                x0 = b0[j]; x1 = b1[j]; x2 = b2[j]; x3 = b3[j]  # noqa: E702
                x4 = b4[j]; x5 = b5[j]; x6 = b6[j]; x7 = b7[j]  # noqa: E702
                v0 = (c0[j] + a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3
                      + a04 * x4 + a05 * x5 + a06 * x6 + a07 * x7)
                v1 = (c1[j] + a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3
                      + a14 * x4 + a15 * x5 + a16 * x6 + a17 * x7)
                v2 = (c2[j] + a20 * x0 + a21 * x1 + a22 * x2 + a23 * x3
                      + a24 * x4 + a25 * x5 + a26 * x6 + a27 * x7)
                v3 = (c3[j] + a30 * x0 + a31 * x1 + a32 * x2 + a33 * x3
                      + a34 * x4 + a35 * x5 + a36 * x6 + a37 * x7)
                c0[j] = v0
                c1[j] = v1
                c2[j] = v2
                c3[j] = v3
            r += 8
        while r < kk:  # leftover k, one at a time
            p = p0 + r
            a0 = A[i, p]; a1 = A[i + 1, p]; a2 = A[i + 2, p]; a3 = A[i + 3, p]  # noqa: E702
            b = panel[r]
            for j in range(w):
                c0[j] += a0 * b[j]
                c1[j] += a1 * b[j]
                c2[j] += a2 * b[j]
                c3[j] += a3 * b[j]
            r += 1
        i += 4
    while i < i1:  # leftover rows, one at a time
        c = C[i, j0:j1]
        for r in range(kk):
            a = A[i, p0 + r]
            b = panel[r]
            for j in range(w):
                c[j] += a * b[j]
        i += 1


@njit(cache=True, parallel=True, fastmath=True)
def _parallel_tiled(A, B, C, ti, tj, tk):
    """prange over blocks of ti rows; for each (k, j) tile, B is packed into a contiguous panel
    (per thread: packing costs k*n per row block, small next to the 2*ti*k*n FLOPs)."""
    m, k = A.shape
    n = B.shape[1]
    nblocks = (m + ti - 1) // ti
    for b in prange(nblocks):
        i0 = b * ti
        i1 = min(i0 + ti, m)
        panel = np.empty((tk, tj), dtype=A.dtype)
        for i in range(i0, i1):
            for j in range(n):
                C[i, j] = 0
        for j0 in range(0, n, tj):
            j1 = min(j0 + tj, n)
            for p0 in range(0, k, tk):
                p1 = min(p0 + tk, k)
                _pack_panel(B, p0, p1, j0, j1, panel)
                _micro_rows(A, C, panel, i0, i1, p0, p1, j0, j1)


# =========================================================================== validation
def _check_operands(A, B, out):
    """Validate (A, B, out) of a matmul; return C-contiguous A, B and the output array."""
    dims: dict = {}
    A = check_array(A, "A", shape=("m", "k"), dims=dims)
    B = check_array(B, "B", shape=("k", "n"), dims=dims)
    if A.dtype != B.dtype:
        raise ValueError(f"B: expected the same dtype as A ({A.dtype}), got {B.dtype}")
    A = np.ascontiguousarray(A)  # documented copy of non-contiguous inputs
    B = np.ascontiguousarray(B)
    m, n = A.shape[0], B.shape[1]
    if out is None:
        out = np.empty((m, n), dtype=A.dtype)
    else:
        out = check_array(out, "out", shape=(m, n), dtype=A.dtype, finite=False, contiguous=True)
        if np.shares_memory(out, A) or np.shares_memory(out, B):
            raise ValueError("out: must not share memory with A or B (the kernels write C while reading them)")
    return A, B, out


def _tile(value, name, dim, dim_name):
    """A tile size: None -> min(64, dim); else an int in [1, dim]."""
    if dim == 0:
        return 1
    if value is None:
        return min(DEFAULT_TILE, dim)
    value = check_int(value, name, low=1)
    if value > dim:
        raise ValueError(f"{name}: expected a tile size between 1 and {dim_name} = {dim}, got {value}")
    return value


def _tiles(A, B, tile_i, tile_j, tile_k):
    m, k = A.shape
    n = B.shape[1]
    return (_tile(tile_i, "tile_i", m, "m (rows of A)"), _tile(tile_j, "tile_j", n, "n (columns of B)"),
            _tile(tile_k, "tile_k", k, "k (columns of A)"))


# =========================================================================== public matmuls
def matmul_naive(A, B, *, out=None):
    """ijk triple loop. A (m, k), B (k, n) -> C (m, n). Slow: time it at small n only."""
    A, B, C = _check_operands(A, B, out)
    _naive(A, B, C)
    return C


def matmul_ikj(A, B, *, out=None):
    """Loop-reordered ikj: contiguous, vectorisable inner loop. A (m, k), B (k, n) -> C (m, n)."""
    A, B, C = _check_operands(A, B, out)
    _ikj(A, B, C)
    return C


def matmul_tiled(A, B, tile_i=None, tile_j=None, tile_k=None, *, out=None):
    """ijk on ``tile_i x tile_j x tile_k`` tiles (scalar dot product inside). -> C (m, n).

    Tile sizes: ``None`` means ``min(64, dimension)``; otherwise ``1 <= tile <= dimension``.
    """
    A, B, C = _check_operands(A, B, out)
    ti, tj, tk = _tiles(A, B, tile_i, tile_j, tile_k)
    _tiled(A, B, C, ti, tj, tk)
    return C


def matmul_tiled_simd(A, B, tile_i=None, tile_j=None, tile_k=None, *, out=None):
    """Tiles + contiguous ikj inner loop + fastmath (tiling and SIMD). -> C (m, n)."""
    A, B, C = _check_operands(A, B, out)
    ti, tj, tk = _tiles(A, B, tile_i, tile_j, tile_k)
    _tiled_simd(A, B, C, ti, tj, tk)
    return C


def matmul_parallel(A, B, *, out=None, rows_per_block=None):
    """ikj with ``prange`` over blocks of rows of C (no tiling). -> C (m, n).

    ``rows_per_block`` (default ``ceil(m / (4 * threads))``, at least 1) sets the work per task.
    """
    import numba

    A, B, C = _check_operands(A, B, out)
    m, k = A.shape
    n = B.shape[1]
    if rows_per_block is None:
        rows_per_block = max(1, -(-m // (4 * numba.get_num_threads())))
    rb = _tile(rows_per_block, "rows_per_block", m, "m (rows of A)")
    _tiled_parallel_simd(A, B, C, rb, max(n, 1), max(k, 1))
    return C


def matmul_parallel_tiled(A, B, tile_i=None, tile_j=None, tile_k=None, *, out=None):
    """The fast kernel: prange over blocks of ``tile_i`` rows, B packed into contiguous
    ``tile_k x tile_j`` panels, a 4x8 register-blocked micro-kernel, fastmath. -> C (m, n).

    Defaults (``None``): ``tile_i = 64``, ``tile_j = 512``, ``tile_k = 256`` (clipped to the
    matrix): a packed panel of 512 KB float32 stays in L2, 4 rows of C (8 KB) in L1.
    """
    A, B, C = _check_operands(A, B, out)
    m, k = A.shape
    n = B.shape[1]
    if tile_j is None:
        tile_j = min(512, max(n, 1))
    if tile_k is None:
        tile_k = min(256, max(k, 1))
    ti, tj, tk = _tiles(A, B, tile_i, tile_j, tile_k)
    _parallel_tiled(A, B, C, ti, tj, tk)
    return C


MATMUL_KERNELS: dict[str, Callable] = {
    "naive": matmul_naive,
    "ikj": matmul_ikj,
    "tiled": matmul_tiled,
    "tiled_simd": matmul_tiled_simd,
    "parallel": matmul_parallel,
    "parallel_tiled": matmul_parallel_tiled,
}
"""The ladder, slowest first: name -> ``f(A, B) -> C``."""

TILED_KERNELS = ("tiled", "tiled_simd", "parallel_tiled")
"""The rungs that take tile sizes ``(A, B, tile_i, tile_j, tile_k)``."""

KERNEL_CORES = {"naive": (_naive, 0), "ikj": (_ikj, 0), "tiled": (_tiled, 3), "tiled_simd": (_tiled_simd, 3),
                "parallel": (_tiled_parallel_simd, 3), "parallel_tiled": (_micro_rows, 6)}
"""Rung name -> (its numba core, how many int arguments follow the three arrays). The core of
``parallel_tiled`` is its micro-kernel (the loop that must vectorise)."""


# =========================================================================== seed Fig. 10
COMBINATIONS = [
    (tiled, simd, parallel)
    for tiled in (False, True) for simd in (False, True) for parallel in (False, True)
]
"""The 8 combinations (tiled, simd, parallel) of seed Fig. 10, in a fixed order."""


def combination_name(tiled: bool, simd: bool, parallel: bool) -> str:
    """E.g. ``"tiled + simd + parallel"``; ``"serial"`` when none is on."""
    tiled, simd, parallel = (check_bool(v, n) for v, n in ((tiled, "tiled"), (simd, "simd"), (parallel, "parallel")))
    parts = [name for name, on in (("tiled", tiled), ("simd", simd), ("parallel", parallel)) if on]
    return " + ".join(parts) if parts else "serial"


def combination_kernel(tiled: bool, simd: bool, parallel: bool, tile_i: int = 64, tile_j: int = 16,
                       tile_k: int = 64) -> Callable:
    """``f(A, B) -> C`` for one of the 8 combinations of seed Fig. 10.

    * ``simd``: the inner loop is a contiguous axpy over j compiled with fastmath (vectorised);
      otherwise a strict-order dot product over k (the compiler keeps it scalar).
    * ``tiled``: loops run over ``tile_i x tile_j x tile_k`` tiles (the seed used 64 rows x 16
      columns, 16 = one 512-bit vector of float32); untiled = one tile as large as the matrix.
    * ``parallel``: ``prange`` over blocks of ``tile_i`` rows (untiled: over single rows).
    """
    for v, nm in ((tiled, "tiled"), (simd, "simd"), (parallel, "parallel")):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{nm}: expected a bool, got {type(v).__name__} {v!r}")
    for v, nm in ((tile_i, "tile_i"), (tile_j, "tile_j"), (tile_k, "tile_k")):
        check_positive_int(v, nm)

    def kernel(A, B, *, out=None):
        A, B, C = _check_operands(A, B, out)
        m, k = A.shape
        n = B.shape[1]
        if tiled:
            ti, tj, tk = min(tile_i, max(m, 1)), min(tile_j, max(n, 1)), min(tile_k, max(k, 1))
        else:
            ti, tj, tk = (1 if parallel else max(m, 1)), max(n, 1), max(k, 1)
        if parallel:
            (_tiled_parallel_simd if simd else _tiled_parallel_scalar)(A, B, C, ti, tj, tk)
        elif simd:
            _tiled_simd(A, B, C, ti, tj, tk)
        else:
            _tiled(A, B, C, ti, tj, tk)
        return C

    kernel.__name__ = "matmul_" + combination_name(tiled, simd, parallel).replace(" + ", "_")
    kernel.__doc__ = f"Seed Fig. 10 combination: {combination_name(tiled, simd, parallel)}."
    return kernel
