"""The numba kernels of :mod:`course_lib.algorithms.linear_attention`'s chunked form (algorithms folder): the
element-wise passes around the chunk products, fused, and the scan over chunk states. Callers go through
:func:`course_lib.algorithms.linear_attention.gated_linear_recurrence` (``method="chunked"``), which validates
the inputs, cuts them into chunks and runs the products.

``state_scan(a, dS, S, S_in)``                       the chunk states, one element-wise recurrence over chunks
``fold_states(K, G, Kw)``                            scalar decay: the pass before the chunk-state products
``carry_states(G, dS, S, R)``                        scalar decay: the state scan over one run of chunks, writing
                                                     each chunk's incoming state into its product operand
``fold_outputs(Q, K, G, V, P, Kd, R)``               scalar decay: the pass before the output products
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
def fold_outputs(Q, K, G, V, P, Kd, R):
    """Scalar decay, the element-wise passes before the output products of a group of chunks, in one: ``P[:, :, :d_k]
    = Qd = Q exp(G_i)``, ``Kd = (K exp(-G_i))^T`` (both factors within ``exp(+-FOLD_LIMIT)``: normal numbers; ``Kd``
    stored transposed, so that the scores ``Qd Kd`` are a plain product, which BLAS runs faster on small matrices than
    one with a transposed operand), and the values below the incoming states in the stacked right operand,
    ``R[:, d_k:] = V`` (:func:`carry_states` wrote ``R[:, :d_k] = S_in``). ``Q, K (g, c, d_k)``, ``Kd (g, d_k, c)``,
    ``G (g, c)``, ``V (g, c, d_v)``, ``P (g, c, d_k + c)``, ``R (g, d_k + c, d_v)``: C-contiguous."""
    g_, c, d_k = Q.shape
    d_v = V.shape[2]
    for b in range(g_):
        kd = Kd[b]
        for i in range(c):      # row by row, the transposed keys a column at a time (measured faster here than
            eq = Q.dtype.type(math.exp(G[b, i]))            # tiles of 16 for chunks up to 64, the useful ones)
            ek = Q.dtype.type(math.exp(-G[b, i]))
            q, k, qd = Q[b, i], K[b, i], P[b, i]
            for j in range(d_k):
                qd[j] = q[j] * eq
                kd[j, i] = k[j] * ek
        for i in range(c):
            src, dst = V[b, i], R[b, d_k + i]
            for j in range(d_v):
                dst[j] = src[j]


@njit(nogil=True, cache=True)
def tril_scores(P, d_k):
    """Zero the scores ``A = P[:, :, d_k:]`` above the diagonal (``P (g, c, d_k + c)``, C-contiguous), in place."""
    g_, c = P.shape[0], P.shape[1]
    z = P.dtype.type(0)
    for b in range(g_):
        for i in range(c):
            row = P[b, i]
            for j in range(d_k + i + 1, d_k + c):
                row[j] = z


def folded_buffers(g: int, c: int, d_k: int, d_v: int, dtype) -> dict:
    """One group's buffers of the fused scalar-decay path, for ``g`` chunks of ``c`` steps (small: they stay in the
    core's cache between the passes and the products): ``P (g, c, d_k + c)`` = ``[Qd | A]`` (decayed queries beside
    the masked scores), ``R (g, d_k + c, d_v)`` = ``[S_in ; V]`` (incoming states above the values), ``Kd (g, d_k,
    c)`` (the decayed keys, transposed). Then ``O = P R`` is ONE product per chunk, ``Qd S_in + tril(Qd Kd) V``, with no ``O +=`` pass."""
    e = lambda *shape: np.empty(shape, dtype)  # noqa: E731
    return {"P": e(g, c, d_k + c), "R": e(g, d_k + c, d_v), "Kd": e(g, d_k, c)}
