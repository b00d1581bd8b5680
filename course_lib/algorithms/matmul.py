"""Matrix-multiply kernels in numba, as a ladder, and fused element-wise RNN kernels (layer 2).

Chapter 04 climbs this ladder; chapter 05 adds threads and fusion. Every rung computes the same
``C (m, n) = A (m, k) @ B (k, n)`` and is checked against numpy in ``tests/test_kernels.py``.

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

All public functions validate their inputs (2-D float32/float64 arrays of the same dtype, matching
inner dimensions). Non-contiguous inputs are **copied** to C order first (one extra pass over the
input, documented, never a silent wrong answer); an ``out=`` array must be C-contiguous with the
right shape and dtype (it cannot be copied), otherwise ``ValueError``. Tile sizes must be
``1 <= tile <= the dimension they tile``; ``None`` (the default) means ``min(64, dimension)``
(``matmul_parallel_tiled``: 64 rows, 512 columns, 256 values of k, clipped to the matrix).

The numba cores (``_*`` functions) are ``@njit(cache=True)`` and take an output array; the public
wrappers are plain Python so their error messages are ordinary Python exceptions.

Helpers for the notebook (plain functions that return data, used by widgets and benchmarks):
``gflops_of``, ``ladder``, ``tile_sweep``, ``compare_sizes``, ``tile_rate``, ``COMBINATIONS`` / ``combination_kernel`` /
``time_combinations`` (seed Fig. 10: tiling x vectorisation x parallel), ``vector_instructions``.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
from numba import njit, prange

from ..core.timing import gemm_flops, measure
from ..core.validate import check_array, check_int, check_positive_int, check_same_shape

__all__ = [
    "matmul_naive",
    "matmul_ikj",
    "matmul_tiled",
    "matmul_tiled_simd",
    "matmul_parallel",
    "matmul_parallel_tiled",
    "MATMUL_KERNELS",
    "tanh_backward",
    "tanh_backward_parallel",
    "output_delta",
    "output_delta_parallel",
    "COMBINATIONS",
    "combination_kernel",
    "time_combinations",
    "gflops_of",
    "ladder",
    "tile_sweep",
    "vector_instructions",
    "compare_sizes",
    "tile_rate",
    "combination_name",
    "DEFAULT_TILE",
]

DEFAULT_TILE = 64
MR = 4  # rows of C updated together by the micro-kernel of matmul_parallel_tiled
KU = 8  # values of k folded into each load/store of C by that micro-kernel


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
    import numba  # noqa: PLC0415

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


# =========================================================================== element-wise RNN
@njit(cache=True, fastmath=True)
def _tanh_backward(dh, h, out):
    for i in range(out.size):
        out[i] = dh[i] * (1 - h[i] * h[i])


@njit(cache=True, fastmath=True, parallel=True)
def _tanh_backward_par(dh, h, out):
    for i in prange(out.size):
        out[i] = dh[i] * (1 - h[i] * h[i])


@njit(cache=True, fastmath=True)
def _output_delta(yhat, y, out):
    for i in range(out.size):
        out[i] = 2 * (yhat[i] - y[i]) * (1 - yhat[i] * yhat[i])


@njit(cache=True, fastmath=True, parallel=True)
def _output_delta_par(yhat, y, out):
    for i in prange(out.size):
        out[i] = 2 * (yhat[i] - y[i]) * (1 - yhat[i] * yhat[i])


def _check_pair(x, x_name, y, y_name, out):
    """Same-shape, same-dtype float arrays; returns flat contiguous views and the flat output."""
    x = check_array(x, x_name, dtype="float")
    y = check_array(y, y_name, dtype="float")
    check_same_shape(x, x_name, y, y_name)
    if y.dtype != x.dtype:
        raise ValueError(f"{y_name}: expected the same dtype as {x_name} ({x.dtype}), got {y.dtype}")
    if out is None:
        out = np.empty(x.shape, dtype=x.dtype)
    else:
        out = check_array(out, "out", shape=x.shape, dtype=x.dtype, finite=False, contiguous=True)
    xf = np.ascontiguousarray(x).reshape(-1)  # documented copy of non-contiguous inputs
    yf = np.ascontiguousarray(y).reshape(-1)
    return xf, yf, out


def tanh_backward(dh, h, *, out=None):
    """Gradient through ``h = tanh(z)``: ``dz = dh * (1 - h**2)``. dh, h: same shape -> dz.

    ``out`` may be ``dh`` itself (in place). Serial twin of :func:`tanh_backward_parallel`.
    """
    dhf, hf, out = _check_pair(dh, "dh", h, "h", out)
    _tanh_backward(dhf, hf, out.reshape(-1))
    return out


def tanh_backward_parallel(dh, h, *, out=None):
    """:func:`tanh_backward` with ``prange`` over the elements."""
    dhf, hf, out = _check_pair(dh, "dh", h, "h", out)
    _tanh_backward_par(dhf, hf, out.reshape(-1))
    return out


def output_delta(yhat, y, *, out=None):
    """Output delta of ``L = sum (yhat - y)**2`` with ``yhat = tanh(z)``:
    ``dz = 2 (yhat - y) (1 - yhat**2)``. yhat, y: same shape -> dz (same shape)."""
    yf, tf, out = _check_pair(yhat, "yhat", y, "y", out)
    _output_delta(yf, tf, out.reshape(-1))
    return out


def output_delta_parallel(yhat, y, *, out=None):
    """:func:`output_delta` with ``prange`` over the elements."""
    yf, tf, out = _check_pair(yhat, "yhat", y, "y", out)
    _output_delta_par(yf, tf, out.reshape(-1))
    return out


# =========================================================================== seed Fig. 10
COMBINATIONS = [
    (tiled, simd, parallel)
    for tiled in (False, True) for simd in (False, True) for parallel in (False, True)
]
"""The 8 combinations (tiled, simd, parallel) of seed Fig. 10, in a fixed order."""


def combination_name(tiled: bool, simd: bool, parallel: bool) -> str:
    """E.g. ``"tiled + simd + parallel"``; ``"serial"`` when none is on."""
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


def _operands(n: int, dtype: str, seed: int, m: int | None = None, k: int | None = None):
    rng = np.random.default_rng(seed)
    m = n if m is None else m
    k = n if k is None else k
    A = rng.standard_normal((m, k)).astype(dtype)
    B = rng.standard_normal((k, n)).astype(dtype)
    return A, B


def time_combinations(n: int, *, dtype: str = "float32", repeat: int = 3, seed: int = 0,
                      tile_i: int = 64, tile_j: int = 16, tile_k: int = 64) -> list[dict]:
    """Time the 8 combinations of seed Fig. 10 on ``(n, n) @ (n, n)``, interleaved.

    Returns one dict per combination: tiled, simd, parallel, name, seconds (median), gflops,
    speedup (over the all-off serial kernel).
    """
    n = check_positive_int(n, "n", high=4096)
    repeat = check_positive_int(repeat, "repeat")
    A, B = _operands(n, dtype, seed)
    C = np.empty((n, n), dtype)
    kernels = {c: combination_kernel(*c, tile_i=tile_i, tile_j=tile_j, tile_k=tile_k) for c in COMBINATIONS}
    for f in kernels.values():  # compile + warm up
        f(A, B, out=C)
    times = {c: [] for c in COMBINATIONS}
    for _ in range(repeat):
        for c, f in kernels.items():
            t0 = time.perf_counter()
            f(A, B, out=C)
            times[c].append(time.perf_counter() - t0)
    flops = gemm_flops(n, n, n)
    base = float(np.median(times[COMBINATIONS[0]]))
    rows = []
    for c in COMBINATIONS:
        t = float(np.median(times[c]))
        rows.append({"tiled": c[0], "simd": c[1], "parallel": c[2], "name": combination_name(*c),
                     "seconds": t, "gflops": flops / t / 1e9, "speedup": base / t})
    return rows


# =========================================================================== measuring helpers
def _kernel(kernel) -> Callable:
    if callable(kernel):
        return kernel
    if kernel == "numpy":
        return lambda A, B, out=None: np.matmul(A, B, out=out)
    if kernel not in MATMUL_KERNELS:
        raise ValueError(f"kernel: expected one of {', '.join(MATMUL_KERNELS)}, 'numpy' or a callable, got {kernel!r}")
    return MATMUL_KERNELS[kernel]


def gflops_of(kernel="tiled_simd", n: int = 256, *, dtype: str = "float32", repeat: int = 3,
              seed: int = 0, **tiles) -> float:
    """GFLOP/s of ``kernel`` (a name in :data:`MATMUL_KERNELS`, ``"numpy"`` or a callable) on
    ``(n, n) @ (n, n)``; best of ``repeat`` runs after one warm-up. ``tiles``: tile_i/tile_j/tile_k."""
    n = check_positive_int(n, "n", high=4096)
    repeat = check_positive_int(repeat, "repeat")
    f = _kernel(kernel)
    A, B = _operands(n, dtype, seed)
    C = np.empty((n, n), dtype)
    t = measure(f, A, B, out=C, repeat=repeat, warmup=1, number=1, **tiles)
    return gemm_flops(n, n, n) / t.min / 1e9


def ladder(n: int, kernels=None, *, dtype: str = "float32", repeat: int = 3, seed: int = 0) -> list[dict]:
    """Time each kernel (default: all of :data:`MATMUL_KERNELS`, then numpy) on ``(n, n) @ (n, n)``.

    Returns one dict per kernel: name, seconds (best of ``repeat``), gflops, pct_of_blas
    (100 * gflops / numpy's gflops, numpy measured in the same call), max_abs_err vs numpy
    (in float64).
    """
    n = check_positive_int(n, "n", high=4096)
    repeat = check_positive_int(repeat, "repeat")
    names = list(MATMUL_KERNELS) if kernels is None else list(kernels)
    if "numpy" not in names:
        names.append("numpy")
    A, B = _operands(n, dtype, seed)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    flops = gemm_flops(n, n, n)
    rows = []
    for name in names:
        f = _kernel(name)
        C = np.empty((n, n), dtype)
        t = measure(f, A, B, out=C, repeat=repeat, warmup=1, number=1)
        rows.append({"name": name if isinstance(name, str) else getattr(name, "__name__", "kernel"),
                     "seconds": t.min, "gflops": flops / t.min / 1e9,
                     "max_abs_err": float(np.max(np.abs(C - ref))) if n else 0.0})
    blas = next(r for r in rows if r["name"] == "numpy")["gflops"]
    for r in rows:
        r["pct_of_blas"] = 100.0 * r["gflops"] / blas
    return rows


def tile_sweep(n: int, tiles_i=(8, 16, 32, 64, 128), tiles_j=(16, 32, 64, 128, 256), *,
               tile_k: int = 64, kernel="tiled_simd", dtype: str = "float32", repeat: int = 2,
               seed: int = 0) -> np.ndarray:
    """GFLOP/s of a tiled kernel over a grid of tile sizes: array (len(tiles_i), len(tiles_j)).

    Tile sizes larger than ``n`` are reported as NaN (not run). For the heat map and the widget.
    """
    n = check_positive_int(n, "n", high=4096)
    name = kernel if isinstance(kernel, str) else None
    if name is not None and name not in TILED_KERNELS:
        raise ValueError(f"kernel: expected one of {', '.join(TILED_KERNELS)}, got {kernel!r}")
    check_positive_int(tile_k, "tile_k")
    tiles_i = [check_positive_int(t, "tiles_i") for t in tiles_i]
    tiles_j = [check_positive_int(t, "tiles_j") for t in tiles_j]
    f = _kernel(kernel)
    A, B = _operands(n, dtype, seed)
    C = np.empty((n, n), dtype)
    f(A, B, out=C)  # compile once
    grid = np.full((len(tiles_i), len(tiles_j)), np.nan)
    for a, ti in enumerate(tiles_i):
        for b, tj in enumerate(tiles_j):
            if ti > n or tj > n or tile_k > n:
                continue
            t = measure(f, A, B, ti, tj, min(tile_k, n), out=C, repeat=repeat, warmup=0, number=1)
            grid[a, b] = gemm_flops(n, n, n) / t.min / 1e9
    return grid


def vector_instructions(kernel: str, dtype: str = "float32") -> dict:
    """Count SIMD and scalar floating-point multiply/add/FMA instructions in the machine code
    numba generates for the core of a ladder kernel (``"parallel_tiled"``: its micro-kernel).

    Returns ``{"vector": count, "scalar": count, "widest": "zmm" | "ymm" | "xmm" | None}``
    (zmm = 512-bit, ymm = 256-bit, xmm = 128-bit registers). The core is recompiled without the
    on-disk cache (numba cannot show the assembly of cached code), which takes a second or two.
    A structural check that the compiler really emitted SIMD code.
    """
    from numba import typeof  # noqa: PLC0415

    cores = {"naive": (_naive, 0), "ikj": (_ikj, 0), "tiled": (_tiled, 3), "tiled_simd": (_tiled_simd, 3),
             "parallel": (_tiled_parallel_simd, 3), "parallel_tiled": (_micro_rows, 6)}
    if kernel not in cores:
        raise ValueError(f"kernel: expected one of {', '.join(cores)}, got {kernel!r}")
    disp, n_ints = cores[kernel]
    arr = typeof(np.zeros((2, 2), dtype=np.dtype(dtype)))
    sig = (arr, arr, arr) + (typeof(1),) * n_ints
    opts = {k: v for k, v in disp.targetoptions.items() if k not in ("cache", "nopython")}
    fresh = njit(**opts)(disp.py_func)
    fresh.compile(sig)
    asm = "\n".join(fresh.inspect_asm().values())
    regs = ("zmm", "ymm", "xmm")
    vec = scal = 0
    widest = None
    for line in asm.splitlines():
        parts = line.split()
        if not parts:
            continue
        op = parts[0]
        if not op.startswith(("vfmadd", "vfnmadd", "vmul", "vadd", "mul", "add")):
            continue
        if op.endswith(("ps", "pd")):
            vec += 1
            reg = next((r for r in regs if r in line), None)
            if reg and (widest is None or regs.index(reg) < regs.index(widest)):
                widest = reg
        elif op.endswith(("ss", "sd")):
            scal += 1
    return {"vector": vec, "scalar": scal, "widest": widest}


def compare_sizes(sizes=(1000, 1024), kernels=("ikj", "tiled_simd", "parallel_tiled", "numpy"), *,
                  dtype: str = "float32", repeat: int = 3, seed: int = 0) -> dict:
    """GFLOP/s of each kernel at each size in ``sizes`` (e.g. 1000 and the power of two 1024).

    Returns ``{name: (rate at sizes[0], rate at sizes[1], ...)}``; sizes are timed alternately
    (repeat by repeat) so a slow moment of a shared machine hits both.
    """
    sizes = tuple(check_positive_int(s, "sizes", high=4096) for s in sizes)
    if len(sizes) < 2:
        raise ValueError(f"sizes: expected at least two sizes, got {sizes}")
    repeat = check_positive_int(repeat, "repeat")
    fns = {name: _kernel(name) for name in kernels}
    ops = {s: _operands(s, dtype, seed) for s in sizes}
    outs = {s: np.empty((s, s), dtype) for s in sizes}
    best = {(name, s): np.inf for name in fns for s in sizes}
    for name, f in fns.items():
        for s in sizes:
            f(*ops[s], out=outs[s])  # compile / warm up
    for _ in range(repeat):
        for name, f in fns.items():
            for s in sizes:
                t0 = time.perf_counter()
                f(*ops[s], out=outs[s])
                best[(name, s)] = min(best[(name, s)], time.perf_counter() - t0)
    return {name: tuple(gemm_flops(s, s, s) / best[(name, s)] / 1e9 for s in sizes) for name in fns}


def tile_rate(n: int = 256, tile_i: int = 64, tile_j: int = 64, tile_k: int = 64, *,
              kernel: str = "tiled_simd", repeat: int = 2) -> dict:
    """For the tile-size widget: GFLOP/s of a tiled kernel and of numpy on ``(n, n) @ (n, n)``.

    Tiles larger than ``n`` are clipped to ``n``. Returns ``{"n", "tiles": (ti, tj, tk), "kernel",
    "ours", "numpy", "pct_of_blas"}``.
    """
    n = check_positive_int(n, "n", high=4096)
    if kernel not in TILED_KERNELS:
        raise ValueError(f"kernel: expected one of {', '.join(TILED_KERNELS)}, got {kernel!r}")
    tiles = tuple(min(check_positive_int(t, nm), n) for t, nm in
                  ((tile_i, "tile_i"), (tile_j, "tile_j"), (tile_k, "tile_k")))
    ours = gflops_of(kernel, n, repeat=repeat, tile_i=tiles[0], tile_j=tiles[1], tile_k=tiles[2])
    blas = gflops_of("numpy", n, repeat=repeat)
    return {"n": n, "tiles": tiles, "kernel": kernel, "ours": ours, "numpy": blas,
            "pct_of_blas": 100.0 * ours / blas}
