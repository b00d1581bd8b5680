"""The delta rule (DeltaNet; Gated DeltaNet in Qwen3-Next, KDA in Kimi Linear) two ways (algorithms folder).

The state ``S (d_k, d_v)`` is a fast-weight memory: each step first *erases* what it held for key ``k_t``
and then writes ``v_t`` there, with strength ``beta_t`` in [0, 1]::

    S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T          o_t = S_t^T q_t

(the transpose of DeltaNet's ``S_{t-1}(I - beta k k^T) + beta v k^T``: keys index rows here, as in
:mod:`course_lib.algorithms.linear_attention`). ``delta_rule(q, k, v, beta, method=...)``:

* ``"sequential"``  march over time one step after another: ``S += beta_t k_t (v_t - S^T k_t)^T``;
* ``"chunked"``     the WY / UT representation (flash-linear-attention's chunk_delta_rule): inside a
  chunk of ``c`` steps the product of the ``c`` rank-one updates is ``I - K^T W`` with
  ``W = T (beta * K)``, ``U = T (beta * V)`` and ``T = (I + tril(diag(beta) K K^T, -1))^{-1}`` -- a unit
  lower-triangular solve, here by forward substitution (:func:`wy_representation`). Then per chunk
  three products and a state update, all GEMMs::

      V_new = U - W S_in                     (what each step really writes, given the state so far)
      O     = Q S_in + tril(Q K^T) V_new
      S_out = S_in + K^T V_new

  The chunks are marched in order: the map ``S -> (I - K^T W) S + K^T U`` carries a *dense*
  ``d_k x d_k`` matrix, so a parallel scan over chunks would compose ``d_k x d_k`` matrices, ``2 d_k^3``
  flops per combine against ``2 c d_k d_v`` to apply one (chapter 11's ``matrix_scan.work_span`` prices
  it: :func:`scan_price`). Production keeps the march over chunks and puts its parallelism in the
  heads, the batch and the GEMMs.

Shapes: ``q, k (T, B, heads, d_k)``, ``v (T, B, heads, d_v)``, ``beta (T, B, heads)``, ``o (T, B, heads, d_v)``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..core.validate import (check_alloc, check_array, check_bool, check_choice, check_dtype, check_int, check_nonempty,
                             check_positive_int, largest)
from . import matrix_scan

__all__ = ["METHODS", "delta_rule", "recurrence_float64", "wy_representation", "scan_price", "random_problem"]

METHODS = ("sequential", "chunked")


def _validate(q, k, v, beta, S0):
    dims: dict = {}
    q = check_nonempty(check_array(q, "q", shape=("T", "B", "heads", "d_k"), dims=dims), "q")
    k = check_array(k, "k", shape=("T", "B", "heads", "d_k"), dims=dims)
    v = check_nonempty(check_array(v, "v", shape=("T", "B", "heads", "d_v"), dims=dims), "v")
    beta = check_array(beta, "beta", shape=("T", "B", "heads"), dims=dims)
    if beta.size and (beta.min() < 0 or beta.max() > 1):
        raise ValueError(f"beta: expected writing strengths in [0, 1], got range [{beta.min():.3g}, {beta.max():.3g}]")
    for name, arr in (("k", k), ("v", v), ("beta", beta)):
        if arr.dtype != q.dtype:
            raise TypeError(f"{name}: expected the dtype of q ({q.dtype}), got {arr.dtype}")
    if S0 is not None:
        S0 = check_array(S0, "S0", shape=(dims["B"], dims["heads"], dims["d_k"], dims["d_v"])).astype(q.dtype, copy=False)
    return q, k, v, beta, S0


def random_problem(T: int, batch: int = 1, heads: int = 2, d_k: int = 8, d_v: int | None = None, *, seed: int = 0,
                   dtype="float32"):
    """Seeded ``(q, k, v, beta)``: q, k of unit length (DeltaNet L2-normalises them), normal v, beta in (0, 1)."""
    T, batch, heads, d_k = (check_positive_int(x, n) for x, n in ((T, "T"), (batch, "batch"), (heads, "heads"), (d_k, "d_k")))
    d_v = d_k if d_v is None else check_positive_int(d_v, "d_v")
    dtype, seed = check_dtype(dtype), check_int(seed, "seed", low=0)
    big = largest(T=T, batch=batch, heads=heads, d_k=d_k, d_v=d_v)
    check_alloc((3, T, batch, heads, max(d_k, d_v)), np.float64, big, what="q, k and v")
    rng = np.random.default_rng(seed)
    q, k = (x / np.linalg.norm(x, axis=-1, keepdims=True) for x in rng.standard_normal((2, T, batch, heads, d_k)))
    v = rng.standard_normal((T, batch, heads, d_v))
    beta = rng.uniform(0, 1, (T, batch, heads))
    return tuple(np.ascontiguousarray(x, dtype=dtype) for x in (q, k, v, beta))


# --------------------------------------------------------------------------- sequential
@njit(parallel=True, cache=True)
def _loop(q, k, v, beta, S, o):
    T, B, heads, d_k = q.shape
    d_v = v.shape[3]
    for bh in prange(B * heads):
        b, h = bh // heads, bh % heads
        St = S[b, h]
        u = np.empty(d_v, S.dtype)
        for t in range(T):
            for j in range(d_v):           # u = v_t - S^T k_t: what the memory returns for k_t, corrected
                u[j] = v[t, b, h, j]
            for i in range(d_k):
                kk = k[t, b, h, i]
                for j in range(d_v):
                    u[j] -= St[i, j] * kk
            for i in range(d_k):
                bk = beta[t, b, h] * k[t, b, h, i]
                for j in range(d_v):
                    St[i, j] += bk * u[j]
            for j in range(d_v):
                o[t, b, h, j] = 0.0
            for i in range(d_k):
                qq = q[t, b, h, i]
                for j in range(d_v):
                    o[t, b, h, j] += St[i, j] * qq


def _sequential(q, k, v, beta, S0):
    T, B, heads, d_k = q.shape
    S = np.zeros((B, heads, d_k, v.shape[3]), q.dtype) if S0 is None else S0.copy()
    o = np.empty(v.shape, q.dtype)
    _loop(q, k, v, beta, S, o)
    return o, S


def recurrence_float64(q, k, v, beta, S0=None, *, return_state: bool = False):
    """The oracle: the sequential loop in float64 (float64 ``o``, and ``S_T`` with ``return_state``)."""
    return_state = check_bool(return_state, "return_state")
    q, k, v, beta, S0 = _validate(q, k, v, beta, S0)
    f = lambda x: None if x is None else x.astype(np.float64)  # noqa: E731
    o, S = _sequential(f(q), f(k), f(v), f(beta), f(S0))
    return (o, S) if return_state else o


# --------------------------------------------------------------------------- chunked (WY / UT)
def wy_representation(K, V, beta):
    """``W = T (beta * K)`` and ``U = T (beta * V)`` with ``T = (I + tril(diag(beta) K K^T, -1))^{-1}`` for
    chunks ``K (..., c, d_k)``, ``V (..., c, d_v)``, ``beta (..., c)``: forward substitution, row ``i`` is
    ``[W|U]_i = beta_i [k_i|v_i] - sum_{j<i} beta_i (k_i . k_j) [W|U]_j`` (one batched product per row)."""
    K = check_nonempty(check_array(K, "K", ndim=range(2, 9)), "K")
    V = check_nonempty(check_array(V, "V", shape=K.shape[:-1] + (None,)), "V")
    beta = check_array(beta, "beta", shape=K.shape[:-1])
    for name, arr in (("V", V), ("beta", beta)):
        if arr.dtype != K.dtype:
            raise TypeError(f"{name}: expected the dtype of K ({K.dtype}), got {arr.dtype}")
    if beta.min() < 0 or beta.max() > 1:
        raise ValueError(f"beta: expected writing strengths in [0, 1], got range [{beta.min():.3g}, {beta.max():.3g}]")
    return _wy(K, V, beta)


def _wy(K, V, beta):
    A = beta[..., :, None] * np.matmul(K, np.swapaxes(K, -1, -2))
    R = beta[..., None] * np.concatenate([K, V], axis=-1)
    for i in range(1, K.shape[-2]):
        R[..., i, :] -= np.matmul(A[..., i:i + 1, :i], R[..., :i, :])[..., 0, :]
    d_k = K.shape[-1]
    return R[..., :d_k], R[..., d_k:]


def _chunked(q, k, v, beta, S0, chunk):
    T, B, heads, d_k = q.shape
    d_v = v.shape[3]
    c = min(T, 64 if chunk is None else check_int(chunk, "chunk", low=1))
    n = -(-T // c)
    Tp = n * c
    pad = lambda x: np.pad(x, [(0, Tp - T)] + [(0, 0)] * (x.ndim - 1)) if Tp > T else x  # noqa: E731
    chunks = lambda x: np.ascontiguousarray(  # noqa: E731
        np.transpose(pad(x).reshape((n, c) + x.shape[1:]), (2, 3, 0, 1) + tuple(range(4, x.ndim + 1))))
    Q, K, V, Bt = (chunks(x) for x in (q, k, v, beta))            # (B, heads, n, c, d) and (B, heads, n, c)
    W, U = _wy(K, V, Bt)                             # all chunks at once
    S = np.zeros((B, heads, d_k, d_v), q.dtype) if S0 is None else S0.copy()
    O = np.empty((B, heads, n, c, d_v), q.dtype)
    mask = np.tri(c, dtype=q.dtype)
    for i in range(n):                                            # the march over chunks
        Qi, Ki = Q[:, :, i], K[:, :, i]
        V_new = U[:, :, i] - np.matmul(W[:, :, i], S)
        O[:, :, i] = np.matmul(Qi, S) + np.matmul(np.matmul(Qi, np.swapaxes(Ki, -1, -2)) * mask, V_new)
        S = S + np.matmul(np.swapaxes(Ki, -1, -2), V_new)
    o = np.transpose(O, (2, 3, 0, 1, 4)).reshape(Tp, B, heads, d_v)[:T]
    return np.ascontiguousarray(o), S


def scan_price(T: int, d_k: int, d_v: int, chunk: int = 64, P: int = 1) -> dict:
    """What a parallel scan over the chunks would cost, priced with :func:`course_lib.algorithms.matrix_scan.work_span`
    (a dense ``d_k x d_k`` map per chunk): ``{"march": flops of the in-order march's state updates,
    "scan_work", "scan_span": the chunked scan's work and span over T/chunk maps on P processors,
    "ratio": scan work / march}``."""
    T, d_k, d_v, chunk, P = (check_positive_int(x, n) for x, n in
                             ((T, "T"), (d_k, "d_k"), (d_v, "d_v"), (chunk, "chunk"), (P, "P")))
    n = math.ceil(T / chunk)
    march = n * 2.0 * 2 * chunk * d_k * d_v                  # W S and K^T V_new per chunk
    ws = matrix_scan.work_span(n, d_k, structure="full", method="chunked", P=P)
    matvec, matmat = 2.0 * d_k * d_k, 2.0 * d_k ** 3 + 2.0 * d_k * d_k
    combines = (ws["work"] - matvec * n) / matmat            # compositions of two chunk maps
    span_combines = (ws["span"] - matvec * math.ceil(n / min(P, n))) / matmat
    # each composition: A2 A1 (2 d_k^3) and A2 B1 on the d_v columns; the expand applies a map to d_v columns
    work = combines * (2.0 * d_k ** 3 + matvec * d_v) + n * matvec * d_v
    span = span_combines * (2.0 * d_k ** 3 + matvec * d_v) + math.ceil(n / min(P, n)) * matvec * d_v
    return {"march": march, "scan_work": work, "scan_span": span, "ratio": work / march}


# --------------------------------------------------------------------------- public entry point
def delta_rule(q, k, v, beta, *, method: str = "sequential", chunk: int | None = None, S0=None,
               return_state: bool = False):
    """``S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T``, ``o_t = S_t^T q_t`` (module docstring).

    ``q, k (T, B, heads, d_k)``, ``v (T, B, heads, d_v)``, ``beta (T, B, heads)`` in [0, 1], one float dtype;
    ``S0 (B, heads, d_k, d_v)`` or None (zeros). ``method``: ``"sequential"`` | ``"chunked"`` (``chunk`` steps per
    chunk, default 64). Returns ``o (T, B, heads, d_v)`` (and ``S_T`` with ``return_state=True``)."""
    check_choice(method, "method", METHODS)
    q, k, v, beta, S0 = _validate(q, k, v, beta, S0)
    if chunk is not None and method != "chunked":
        raise ValueError(f"chunk: only method='chunked' takes a chunk length, got method={method!r}")
    return_state = check_bool(return_state, "return_state")
    chunk = None if chunk is None else check_positive_int(chunk, "chunk")
    o, S = _sequential(q, k, v, beta, S0) if method == "sequential" else _chunked(q, k, v, beta, S0, chunk)
    if not np.isfinite(o[-1]).all():
        raise ValueError("q, k, v: the outputs became non-finite (keys of length > 1 make the delta rule unstable)")
    return (o, S) if return_state else o
