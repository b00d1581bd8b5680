"""The numba kernels of :mod:`course_lib.algorithms.linear_attention`'s chunked form (algorithms folder): the
element-wise passes around the chunk products, fused, and the scan over chunk states. Callers go through
:func:`course_lib.algorithms.linear_attention.gated_linear_recurrence` (``method="chunked"``), which validates
the inputs, cuts them into chunks and runs the products.

``state_scan(a, dS, S, S_in)``                       the chunk states, one element-wise recurrence over chunks
``fold_states(K, G, Kw)``                            scalar decay: the pass before the chunk-state products
``carry_states(G, dS, S, R)``                        scalar decay: the state scan over one run of chunks, writing
                                                     each chunk's incoming state into its product operand
``fold_outputs(Q, K, G, V, P, Kd, R)``               scalar decay: the pass before the output products (it also
                                                     says whether every element of ``Q, K, V`` is finite)
``tril_scores(P, d_k)``                              the causal mask on the scores, in place
``folded_buffers(g, c, d_k, d_v, dtype)``            one group's buffers for those passes and products

Shapes: ``m`` chunks (or a group of ``g``) of ``c`` steps; ``d_k``, ``d_v`` the key and value widths. The fused
kernels hold no GIL (the chunked form's threads run them side by side) and multiply only by factors within
``exp(+-FOLD_LIMIT)`` -- normal float32 numbers; the state scan flushes below ``TINY`` (no subnormal arithmetic).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .scan_kernels import TINY

__all__ = ["state_scan", "fold_states", "carry_states", "fold_outputs", "tril_scores", "folded_buffers"]


@njit(parallel=True, cache=True)
def state_scan(a, dS, S, S_in):
    """The scan over chunk states, in place: for each (sequence-head, key row) -- in parallel -- march over the
    chunks: ``S_in[:, c, :d_k] = S``, then ``S = a[:, c] * S + dS[:, c]``. ``a (BH, n, d_k)``, ``dS (BH, n, d_k, d_v)``,
    ``S_in (BH, n, >= d_k, d_v)`` (rows past ``d_k`` untouched), ``S (BH, d_k, d_v)`` ends as the final state. The decay is broadcast over the
    ``d_v`` columns here, never materialised. A state entry below ``TINY`` is flushed to 0: with no new
    input (``dS = 0``) it would otherwise decay into subnormal numbers, which many CPUs compute far slower."""
    BH, n, d_k = a.shape
    d_v = dS.shape[3]
    tiny = S.dtype.type(TINY)
    zero = S.dtype.type(0)
    for r in prange(BH * d_k):
        b, i = r // d_k, r % d_k
        row = S[b, i]
        for c in range(n):
            ac = a[b, c, i]
            for j in range(d_v):
                S_in[b, c, i, j] = row[j]
                x = ac * row[j] + dS[b, c, i, j]
                row[j] = x if not (abs(x) < tiny) else zero


@njit(nogil=True, cache=True, error_model="numpy")
def fold_states(K, G, Kw):
    """Scalar decay, the element-wise pass before the chunk-state products, in one (no GIL: the caller's threads run
    it side by side). ``K (g, c, d_k)``, ``G (g, c)`` cumulative log decays (float64, each chunk above
    ``-FOLD_LIMIT``) -> ``Kw = K exp(G_c - G_i)`` ``(g, c, d_k)``. Every factor lies in ``[exp(-40), 1]``: a normal
    float32 number (no subnormal product here)."""
    g_, c, d_k = K.shape
    for b in range(g_):
        last = G[b, c - 1]
        for i in range(c):
            ew = K.dtype.type(math.exp(last - G[b, i]))
            k, kw = K[b, i], Kw[b, i]
            for j in range(d_k):
                kw[j] = k[j] * ew


@njit(nogil=True, cache=True, error_model="numpy")
def carry_states(G, dS, S, R):
    """Scalar decay, the state scan over a run of consecutive chunks of ONE sequence-head, in place (no GIL: each of
    the caller's threads carries its own run). For each chunk ``b`` in order: ``R[b, :d_k] = S`` (the state entering
    it; skipped when ``R`` has no rows), then ``S = exp(G[b, c-1]) S + dS[b]``. ``G (g, c)`` cumulative log decays,
    ``dS (g, d_k, d_v)`` the chunks' own states, ``S (d_k, d_v)`` the state entering chunk 0 (ends as the state after
    the last), ``R (g, >= d_k, d_v)`` or ``(0, ...)`` (rows past ``d_k`` untouched). A state entry below ``TINY`` is
    flushed to 0 (no subnormal arithmetic, as in :func:`state_scan`)."""
    g_, c = G.shape
    d_k, d_v = S.shape
    tiny = S.dtype.type(TINY)
    zero = S.dtype.type(0)
    write = R.shape[0] > 0
    for b in range(g_):
        a = S.dtype.type(math.exp(G[b, c - 1]))
        a = a if not (a < tiny) else zero   # a float32 exp(-90) is subnormal (phase 2's pieces can decay that far)
        for i in range(d_k):
            row, src = S[i], dS[b, i]
            if write:
                dst = R[b, i]
                for j in range(d_v):
                    dst[j] = row[j]
            for j in range(d_v):
                x = a * row[j] + src[j]
                row[j] = x if not (abs(x) < tiny) else zero


@njit(nogil=True, cache=True, error_model="numpy")
def fold_outputs(Q, K, G, V, P, Kd, R, place_values=True):
    """Scalar decay, the element-wise passes before the output products of a group of chunks, in one: ``P[:, :, :d_k]
    = Qd = Q exp(G_i)``, ``Kd = (K exp(-G_i))^T`` (both factors within ``exp(+-FOLD_LIMIT)``: normal numbers; ``Kd``
    stored transposed, so that the scores ``Qd Kd`` are a plain product, which BLAS runs faster on small matrices than
    one with a transposed operand), and the values below the incoming states in the stacked right operand,
    ``R[:, d_k:] = V`` (:func:`carry_states` wrote ``R[:, :d_k] = S_in``; ``place_values=False``: ``V`` is only read,
    for a caller whose second product reads it where it lies). ``Q, K (g, c, d_k)``, ``Kd (g, d_k, c)``,
    ``G (g, c)``, ``V (g, c, d_v)``, ``P (g, c, d_k + c)``, ``R (g, d_k + c, d_v)``: C-contiguous.

    Returns the sum of ``0 * x`` over every element ``x`` of ``Q``, ``K`` and ``V`` read here: 0 when all are finite,
    NaN when one is not (``0 * inf`` is NaN, and a NaN survives any sum): the inputs' finiteness checked in the loops
    that read them, instead of in a pass over memory of its own."""
    g_, c, d_k = Q.shape
    zero = Q.dtype.type(0)
    seen = zero
    ek = np.empty(c, Q.dtype)
    for b in range(g_):
        seen += _decayed_rows(Q[b], G[b], P[b], ek) + _zero_sum(K[b])
        if c >= _TILED_FROM:
            _transpose_keys(K[b], ek, Kd[b])
        else:
            _scaled_columns(K[b], ek, Kd[b])
        seen += _copy_rows(V[b], R[b, d_k:]) if place_values else _zero_sum(V[b])
    return seen


@njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _zero_sum(X):
    """The sum of ``0 * x`` over C-contiguous ``X (r, n)``: 0 when every element is finite, else NaN."""
    flat = X.reshape(X.size)
    zero = X.dtype.type(0)
    seen = zero
    for i in range(flat.shape[0]):
        seen += flat[i] * zero
    return seen


# The helpers below return the sum of 0 * x over what they read (see fold_outputs); ``reassoc`` lets that sum
# vectorise, and without ``nnan``/``nsz`` the compiler may not fold 0 * x to 0.
@njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _decayed_rows(Q, G, P, ek):
    """One chunk: ``P[:, :d_k] = Q exp(G)`` and ``ek = exp(-G)`` (``Q (c, d_k)``, ``G (c,)``)."""
    c, d_k = Q.shape
    zero = Q.dtype.type(0)
    seen = zero
    for i in range(c):
        eq = Q.dtype.type(math.exp(G[i]))
        ek[i] = Q.dtype.type(math.exp(-G[i]))
        q, qd = Q[i], P[i]
        for j in range(d_k):
            qd[j] = q[j] * eq
            seen += q[j] * zero
    return seen


@njit(nogil=True, cache=True, error_model="numpy")
def _scaled_columns(K, ek, Kd):
    """``Kd[j, i] = K[i, j] ek[i]`` for one short chunk, ``K (c, d_k)``, ``ek (c,)``, ``Kd (d_k, c)``: a row of
    ``Kd`` per column of ``K``. (Written in the same loop as the decayed queries, the two stores defeated the
    compiler's vector code: that pass ran 1.4x slower here.)"""
    c, d_k = K.shape
    for j in range(d_k):
        dst = Kd[j]
        for i in range(c):
            dst[i] = K[i, j] * ek[i]


@njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def _copy_rows(V, R):
    """``R[i] = V[i]`` for ``V (c, d_v)`` into the rows ``R (c, d_v)``."""
    zero = V.dtype.type(0)
    seen = zero
    for i in range(V.shape[0]):
        src, dst = V[i], R[i]
        for j in range(V.shape[1]):
            dst[j] = src[j]
            seen += src[j] * zero
    return seen


_TILE = 16         # keys transposed in tiles of 16 x 16: one tile's rows and columns stay in L1 and registers
_TILED_FROM = 128  # ... in chunks of at least this many steps (shorter ones: a column per row, as fast or faster)


@njit(nogil=True, cache=True, error_model="numpy")
def _transpose_keys(K, ek, Kd):
    """``Kd[j, i] = K[i, j] ek[i]`` for one chunk, ``K (c, d_k)``, ``ek (c,)``, ``Kd (d_k, c)``: whole tiles of
    ``_TILE x _TILE`` go through a small local tile (read by rows, written by rows), the edges one element at a
    time. :func:`fold_outputs` calls it for chunks of ``_TILED_FROM`` steps or more; shorter ones go through
    :func:`_scaled_columns` (for chunks of 32-64 steps, from cache, that pass ran 1.5x faster than tiles here; for
    128 the two were alike, for 256 tiles ran 2.3x faster)."""
    c, d_k = K.shape
    t = np.empty((_TILE, _TILE), K.dtype)
    ci, cj = c - c % _TILE, d_k - d_k % _TILE
    for i0 in range(0, ci, _TILE):
        for j0 in range(0, cj, _TILE):
            for ii in range(_TILE):
                e, row = ek[i0 + ii], K[i0 + ii]
                for jj in range(_TILE):
                    t[jj, ii] = row[j0 + jj] * e
            for jj in range(_TILE):
                dst = Kd[j0 + jj]
                for ii in range(_TILE):
                    dst[i0 + ii] = t[jj, ii]
    for i in range(c):              # the edges: columns past cj in every row, rows past ci in the columns before cj
        for j in range(cj if i < ci else 0, d_k):
            Kd[j, i] = K[i, j] * ek[i]


@njit(nogil=True, cache=True)
def tril_scores(P, d_k):
    """Zero the scores ``A = P[:, :, d_k:]`` above the diagonal (``P (g, c, d_k + c)``, C-contiguous), in place. (A
    slice assignment per row: numba makes it one fill; an element loop over the same row ran 5x slower here.)"""
    g_, c = P.shape[0], P.shape[1]
    z = P.dtype.type(0)
    for b in range(g_):
        for i in range(c - 1):
            P[b, i, d_k + i + 1:] = z


def folded_buffers(g: int, c: int, d_k: int, d_v: int, dtype) -> dict:
    """One group's buffers of the fused scalar-decay path, for ``g`` chunks of ``c`` steps (small: they stay in the
    core's cache between the passes and the products): ``P (g, c, d_k + c)`` = ``[Qd | A]`` (decayed queries beside
    the masked scores), ``R (g, d_k + c, d_v)`` = ``[S_in ; V]`` (incoming states above the values), ``Kd (g, d_k,
    c)`` (the decayed keys, transposed). Then ``O = P R`` is ONE product per chunk, ``Qd S_in + tril(Qd Kd) V``, with no ``O +=`` pass."""
    e = lambda *shape: np.empty(shape, dtype)  # noqa: E731
    return {"P": e(g, c, d_k + c), "R": e(g, d_k + c, d_v), "Kd": e(g, d_k, c)}
