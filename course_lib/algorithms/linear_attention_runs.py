"""The chunked form's fused path, one run of chunks in ONE compiled call (algorithms folder): the element-wise
kernels of :mod:`.linear_attention_kernels` and numpy's own BLAS (:func:`course_lib.algorithms.gemm.compiled_gemm`)
called from numba, group after group, with no Python -- and no GIL -- in between.

Unlike the Python path, the output product is two BLAS calls, ``O = Qd S_in`` and then ``O += A V`` with ``beta = 1``
on ``V`` where it lies: the copy of ``V`` into the stacked operand is gone (a pass of 12-22 ns per token at d = 64
here, against 3 ns for the second call).

Why: the Python path (:mod:`.linear_attention_fused`) goes back to Python between every kernel and every stack of
products, seven times a group. On one thread that costs about 10 us a group; on two threads each return to Python
waits for the other thread's turn with the GIL, and a group cost about 40 us more (measured at d = 4, where the
arithmetic is nothing). Here a thread enters numba once per run.

``outputs(gemm, Q, K, V, G, S, O, Kw, dS, P, R, Kd, group, products_only)``   phase 3 on one run (returns the
                                                                             finiteness sum of ``fold_outputs``)
``states(gemm, K, V, G, agg, Kw, dS, group, products_only)``                   phase 1 on one piece

``gemm`` is :func:`course_lib.algorithms.gemm.compiled_gemm` of the arrays' dtype (None there: take the Python path).
It is an argument, not a global: numba then caches the compiled functions on disk like the other kernels (a function
address baked into the code could not be cached, and compiling took 2.8 s in every process).

Shapes as in :mod:`.linear_attention_fused`: ``Q, K (g, c, d_k)``, ``V (g, c, d_v)``, ``G (g, c)`` float64, ``O (g, c,
d_v)``: one run's chunks, each matrix with unit column stride; ``S``/``agg (d_k, d_v)`` the state, updated in place;
the group buffers ``Kw (group, c, d_k)``, ``dS (group, d_k, d_v)``, ``P (group, c, d_k + c)``, ``R (group, d_k + c,
d_v)``, ``Kd (group, d_k, c)`` (:func:`.linear_attention_kernels.folded_buffers`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .linear_attention_kernels import carry_states, fold_outputs, fold_states, tril_scores

__all__ = ["outputs", "states"]

_ROW, _N, _T = 101, 111, 112    # CBLAS: row-major, no transpose, transpose


@njit(nogil=True, cache=True, error_model="numpy")
def _own_states(gemm, Kw, V, dS):
    """``dS[b] = Kw[b]^T V[b]`` for every chunk ``b`` of a group."""
    one, zero = Kw.dtype.type(1), Kw.dtype.type(0)
    size = Kw.itemsize
    for b in range(Kw.shape[0]):
        gemm(_ROW, _T, _N, Kw.shape[2], V.shape[2], Kw.shape[1], one, Kw[b].ctypes.data, Kw.strides[1] // size,
             V[b].ctypes.data, V.strides[1] // size, zero, dS[b].ctypes.data, dS.strides[1] // size)


@njit(nogil=True, cache=True, error_model="numpy")
def _group_states(gemm, K, V, G, Kw, dS, S, R, products_only):
    """One group: its chunks' own states ``dS = (K exp(G_c - G))^T V``, then ``S`` carried over them, each chunk's
    incoming state written into ``R`` (no rows: not written). ``products_only``: ``dS = K^T V`` alone."""
    if products_only:
        _own_states(gemm, K, V, dS)
        return
    fold_states(K, G, Kw)
    _own_states(gemm, Kw, V, dS)
    carry_states(G, dS, S, R)


@njit(nogil=True, cache=True, error_model="numpy")
def outputs(gemm, Q, K, V, G, S, O, Kw, dS, P, R, Kd, group, products_only):
    """Phase 3 on one run, a group of ``group`` chunks at a time (as ``linear_attention_fused._folded_outputs``)."""
    m, c, d_k = Q.shape
    d_v, size = V.shape[2], Q.itemsize
    one, zero = Q.dtype.type(1), Q.dtype.type(0)
    ld_p, ld_r, ld_o, ld_kd = P.strides[1] // size, R.strides[1] // size, O.strides[1] // size, Kd.strides[1] // size
    ld_v = V.strides[1] // size
    seen = zero
    for s in range(0, m, group):
        e = min(m, s + group)
        g = e - s
        Pg, Rg, Kdg = P[:g], R[:g], Kd[:g]
        _group_states(gemm, K[s:e], V[s:e], G[s:e], Kw[:g], dS[:g], S, Rg, products_only)
        if not products_only:
            seen += fold_outputs(Q[s:e], K[s:e], G[s:e], V[s:e], Pg, Kdg, Rg, False)
        for b in range(g):          # the scores A = Qd Kd, beside Qd in P
            gemm(_ROW, _N, _N, c, c, d_k, one, Pg[b].ctypes.data, ld_p, Kdg[b].ctypes.data, ld_kd,
                 zero, Pg[b, :, d_k:].ctypes.data, ld_p)
        if not products_only:
            tril_scores(Pg, d_k)
        for b in range(g):          # O = Qd S_in, then O += A V with V where it lies (no copy of V into R)
            gemm(_ROW, _N, _N, c, d_v, d_k, one, Pg[b].ctypes.data, ld_p, Rg[b].ctypes.data, ld_r,
                 zero, O[s + b].ctypes.data, ld_o)
            gemm(_ROW, _N, _N, c, d_v, c, one, Pg[b, :, d_k:].ctypes.data, ld_p, V[s + b].ctypes.data, ld_v,
                 one, O[s + b].ctypes.data, ld_o)
    return seen


@njit(nogil=True, cache=True, error_model="numpy")
def states(gemm, K, V, G, agg, Kw, dS, group, products_only):
    """Phase 1 on one piece, a group at a time (as ``linear_attention_fused._piece_state``)."""
    m = K.shape[0]
    none = np.empty((0, agg.shape[0], agg.shape[1]), agg.dtype)
    for s in range(0, m, group):
        e = min(m, s + group)
        _group_states(gemm, K[s:e], V[s:e], G[s:e], Kw[:e - s], dS[:e - s], agg, none, products_only)
