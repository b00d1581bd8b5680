"""Matrix-state linear recurrences -- gated linear attention, Mamba-2's SSD -- three ways (algorithms folder).

Production recurrent layers (Mamba-2/SSD, gated linear attention, DeltaNet, KDA) keep a *matrix* state per
head and update it linearly::

    S_t = a_t * S_{t-1} + k_t v_t^T          S_t: (d_k, d_v), k_t: (d_k,), v_t: (d_v,)
    o_t = S_t^T q_t                           o_t: (d_v,)

with a decay ``a_t`` in (0, 1] that is one number per head (``decay (T, B, heads)``: Mamba-2's scalar * I) or
one per key channel (``decay (T, B, heads, d_k)``: gated linear attention, row ``c`` of ``S`` scaled by
``a_t[c]``). ``gated_linear_recurrence(q, k, v, decay, method=...)`` computes ``o (T, B, heads, d_v)``:

* ``"sequential"``  march over time one step after another (a numba loop over the state, in the
  inputs' dtype; :func:`recurrence_float64` runs it in float64 -- the oracle);
* ``"scan"``        chapter 08's element-wise scan over the *flattened* state: every one of the
  ``d_k d_v`` state entries is a recurrence ``h = a h + x`` with ``x_t = k_t v_t^T`` -- run by
  :func:`course_lib.algorithms.scan.linear_recurrence` block by block in time (memory stays bounded);
* ``"chunked"``     the chunked matmul form: split time into chunks of ``chunk`` steps. Inside a chunk,
  with ``G_i = log a_1 + ... + log a_i`` (cumulative log decay from the chunk start),

      o_i = sum_{j <= i} (q_i . k_j) exp(G_i - G_j) v_j  +  (q_i * exp(G_i))^T S_in
          = ((Q K^T) * L) V                              +  Q~ S_in               (scalar decay)

  where ``L_ij = exp(G_i - G_j)`` for ``j <= i`` and 0 above the diagonal is built in log space (never
  ``exp(G_i) / exp(G_j)``, which overflows for long chunks); the chunk's own state contribution is
  ``K^T V`` with ``K_j`` scaled by ``exp(G_C - G_j)``, and the chunk states ``S_in`` are one element-wise
  recurrence over chunks (a numba loop, parallel over the state's rows). The chunks' products run on
  ``threads`` CPU threads, a cache-sized group of chunks at a time. Every exponent here is ``<= 0``: nothing overflows, underflow is to the true tiny
  value. (A chunk whose total log decay stays above ``-FOLD_LIMIT`` -- decays near 1, the common case --
  folds the mask into the operands instead, ``exp(G_i - G_j) = exp(G_i) exp(-G_j)`` with both factors normal
  numbers, which leaves only a triangular mask to apply: GLA's trick, taken only where it is safe. There the
  element-wise passes around the products are fused into numba kernels on cache-sized groups of chunks -- one pass
  makes ``K exp(G_c - G)``, one carries the state over the group's chunks and writes each chunk's incoming state
  ``S_in`` straight into its product operand, one makes ``Q exp(G)``, ``K exp(-G)`` and places ``V``, one masks the
  scores -- and each chunk's output is ONE product ``[Qd | A] [S_in ; V]`` (:func:`folded_buffers`; the numba kernels
  live in :mod:`.linear_attention_kernels`, the path in :mod:`.linear_attention_fused`, a run compiled end to end in
  :mod:`.linear_attention_runs`), with no ``O +=`` pass. The threads take runs of consecutive chunks; the
  own state of each run but a head's last is made first (all threads sharing it), a scan over the few runs joins them,
  and each run then makes its chunks' states in cache as it goes: no array of chunk states or incoming states is ever
  made. The same pass checks ``q, k, v`` for NaN/inf while they are in cache.) Per-channel decay cannot be pulled out
  of ``Q K^T``; each sub-block of ``SUB`` key positions
  is taken relative to its own end (two factors ``<= 1``), and the diagonal sub-blocks are formed
  element-wise (flash-linear-attention's chunk_gla does the same).

Flops of the chunked form per token (``c`` = chunk): ``2 c (d_k + d_v) + 4 d_k d_v`` in matrix
products (:func:`chunked_flops`) against ``~4 d_k d_v`` element-wise operations (and ``~5 d_k d_v``
numbers moved) per token for the loop and the scan: the chunked form trades a little more arithmetic
for arithmetic that runs at the GEMM rate.

The delta rule (DeltaNet) is in :mod:`course_lib.algorithms.delta_rule`. Shapes throughout: ``q, k``
``(T, B, heads, d_k)``, ``v`` ``(T, B, heads, d_v)``, ``S0`` ``(B, heads, d_k, d_v)``; float32 or float64.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..core import backend
from ..core.validate import (check_array, check_bool, check_choice, check_dtype, check_int, check_nonempty,
                             check_positive_int)
from . import scan as _scan
from .linear_attention_inputs import check_finite_qkv, check_inputs, random_problem
from .gemm import check_provider
from .linear_attention_fused import chunked_folded, chunked_products_call, chunks_per_group, on_units, split
from .linear_attention_kernels import carry_states, folded_buffers, state_scan
from .scan_kernels import TINY

__all__ = [
    "METHODS",
    "SUB",
    "FOLD_LIMIT",
    "check_inputs",
    "gated_linear_recurrence",
    "recurrence_float64",
    "chunk_states",
    "intra_chunk",
    "decay_mask",
    "folded_buffers",
    "carry_states",
    "chunked_products",
    "chunked_flops",
    "default_chunk", "chunk_views", "chunks_per_group",
    "random_problem",
]

METHODS = ("sequential", "scan", "chunked")
SUB = 16                    # per-channel decay: key positions per sub-block (relative to its own end)
FOLD_LIMIT = 40.0           # scalar decay: a chunk whose log decay stays above -40 folds its mask into Q and K
_LOG_TINY = -1e4            # log of a decay of 0: exp() of it is 0, and differences stay finite
MAX_THREADS = 1024           # "chunked": more CPU threads than any machine has is a typo, refused up front
_SCAN_BLOCK_BYTES = 1 << 23  # "scan": time steps per block so that one block of x is about 8 MB


# --------------------------------------------------------------------------- sequential
@njit(parallel=True, cache=True)
def _loop(q, k, v, decay, S, o):
    """``S (B, heads, d_k, d_v)`` updated in place over all T; ``decay (T, B, heads, d_k)`` (broadcast)."""
    T, B, heads, d_k = q.shape
    d_v = v.shape[3]
    for bh in prange(B * heads):
        b, h = bh // heads, bh % heads
        St = S[b, h]
        for t in range(T):
            for i in range(d_k):
                a = decay[t, b, h, i]
                kk = k[t, b, h, i]
                for j in range(d_v):
                    St[i, j] = a * St[i, j] + kk * v[t, b, h, j]
            for j in range(d_v):
                o[t, b, h, j] = 0.0
            for i in range(d_k):
                qq = q[t, b, h, i]
                for j in range(d_v):
                    o[t, b, h, j] += St[i, j] * qq


def _sequential(q, k, v, decay, per_channel, S0):
    T, B, heads, d_k = q.shape
    dec = decay if per_channel else np.broadcast_to(decay[..., None], q.shape)
    S = np.zeros((B, heads, d_k, v.shape[3]), q.dtype) if S0 is None else S0.copy()
    o = np.empty(v.shape, q.dtype)
    _loop(q, k, v, np.ascontiguousarray(dec), S, o)
    return o, S


def recurrence_float64(q, k, v, decay, S0=None, *, return_state: bool = False):
    """The oracle: the sequential loop in float64. Returns float64 ``o`` (and ``S_T`` with ``return_state``)."""
    return_state = check_bool(return_state, "return_state")
    q, k, v, decay, per_channel, S0 = check_inputs(q, k, v, decay, S0)
    f = lambda x: None if x is None else x.astype(np.float64)  # noqa: E731
    o, S = _sequential(f(q), f(k), f(v), f(decay), per_channel, f(S0))
    return (o, S) if return_state else o


# --------------------------------------------------------------------------- the element-wise scan
def _scan_method(q, k, v, decay, per_channel, S0):
    """Chapter 08's scan over the flattened state, ``steps`` time steps at a time (bounded memory)."""
    T, B, heads, d_k = q.shape
    d_v = v.shape[3]
    n = B * heads * d_k * d_v
    steps = max(1, min(T, _SCAN_BLOCK_BYTES // (n * q.dtype.itemsize)))
    S = np.zeros((B, heads, d_k, d_v), q.dtype) if S0 is None else S0.copy()
    o = np.empty(v.shape, q.dtype)
    hbuf = np.empty((steps, B, heads, d_k, d_v), q.dtype)
    for s in range(0, T, steps):
        e = min(T, s + steps)
        x = np.einsum("tbhi,tbhj->tbhij", k[s:e], v[s:e])
        a = decay[s:e, ..., None] if per_channel else decay[s:e, ..., None, None]
        a = np.ascontiguousarray(np.broadcast_to(a, x.shape))
        h = _scan.linear_recurrence(a.reshape(e - s, n), x.reshape(e - s, n), S.reshape(n), method="chunked",
                                    out=hbuf[:e - s].reshape(e - s, n)).reshape(x.shape)
        np.einsum("tbhij,tbhi->tbhj", h, q[s:e], out=o[s:e])
        S = h[-1].copy()
    return o, S


# --------------------------------------------------------------------------- the chunked matmul form
def default_chunk(T: int, d_k: int) -> int:
    """Chunk length when none is given: 2 d_k rounded to a power of two (the intra-chunk products
    ``(c x d_k)(d_k x c)`` then cost as much as the state products), at most T."""
    T = check_positive_int(T, "T")
    d_k = check_positive_int(d_k, "d_k")
    return max(1, min(T, 1 << max(4, int(math.ceil(math.log2(2 * d_k))))))


def chunked_flops(T: int, d_k: int, d_v: int, chunk: int, heads: int = 1) -> float:
    """Matrix-product flops of the chunked form: per chunk of ``c`` steps and head ``2 c^2 d_k`` (Q K^T),
    ``2 c^2 d_v`` (masked scores times V), ``2 c d_k d_v`` (state contribution) and ``2 c d_k d_v``
    (queries times the incoming state); a partial last chunk is padded, so it costs a whole one."""
    T, d_k, d_v, c, heads = (check_positive_int(x, n) for x, n in
                             ((T, "T"), (d_k, "d_k"), (d_v, "d_v"), (chunk, "chunk"), (heads, "heads")))
    n = math.ceil(T / c)
    return float(heads * n * (2 * c * c * (d_k + d_v) + 4 * c * d_k * d_v))


def _log_decay(decay, T_pad, per_channel):
    """Log decays in float64, padded with log 1 = 0 to ``T_pad`` steps; decay 0 becomes _LOG_TINY."""
    with np.errstate(divide="ignore"):
        g = np.log(decay.astype(np.float64))
    g = np.maximum(g, _LOG_TINY)
    pad = [(0, T_pad - decay.shape[0])] + [(0, 0)] * (decay.ndim - 1)
    return np.pad(g, pad)


def _to_chunks(x, c):
    """``(T_pad, B, heads, ...)`` -> ``(B, heads, n, c, ...)`` (contiguous)."""
    n = x.shape[0] // c
    y = x.reshape((n, c) + x.shape[1:])
    return np.ascontiguousarray(np.transpose(y, (2, 3, 0, 1) + tuple(range(4, y.ndim))))


def _check_G(G, shape, axis):
    """Cumulative log decays ``G`` of ``shape``: real, finite and non-increasing along ``axis`` (every decay in
    [0, 1]: ``log a <= 0``). A rise would be a decay above 1, which the mask's clip to ``<= 0`` hides."""
    G = check_array(G, "G", shape=shape)
    if G.shape[axis] > 1:
        rise = np.diff(G, axis=axis)
        if rise.max() > 0:
            raise ValueError(f"G: expected cumulative log decays, non-increasing along the chunk (every decay in [0, 1]), "
                             f"got a rise of {float(rise.max()):.3g} (a decay of {math.exp(min(float(rise.max()), 700)):.3g})")
    return G


def _check_chunks(K, V, G, per_channel, Q=None):
    """``K (..., c, d_k)``, ``V (..., c, d_v)``, ``G (..., c[, d_k])``, ``Q`` like ``K``: one float dtype for Q, K, V."""
    K = check_nonempty(check_array(K, "K", ndim=range(2, 9)), "K")
    lead, c = K.shape[:-2], K.shape[-2]
    if Q is not None:
        Q = check_array(Q, "Q", shape=K.shape)
    V = check_nonempty(check_array(V, "V", shape=lead + (c, None)), "V")
    for name, arr in (("Q", Q), ("V", V)):
        if arr is not None and arr.dtype != K.dtype:
            raise TypeError(f"{name}: expected the dtype of K ({K.dtype}), got {arr.dtype}")
    per_channel = check_bool(per_channel, "per_channel")
    G = _check_G(G, lead + (c,) + ((K.shape[-1],) if per_channel else ()), -2 if per_channel else -1)
    return Q, K, V, G


def decay_mask(G, dtype=np.float64):
    """The decay mask of one chunk from cumulative log decays ``G (..., c)``: ``L[..., i, j] = exp(G_i - G_j)``
    for ``j <= i``, 0 above the diagonal, in ``dtype``. Built in log space (SSD's segsum): the differences and
    their ``exp`` in float64 (``G`` is a long sum; only the decay is rounded to ``dtype``, 0 below ``TINY`` -- no
    subnormals), differences clipped to ``<= 0`` before ``exp`` (a ``G`` that rises -- a decay above 1 -- is
    refused: the clip would hide it)."""
    G = check_nonempty(check_array(G, "G", ndim=range(1, 9)), "G")
    return _decay_mask(_check_G(G, G.shape, -1), check_dtype(dtype))


def _decay_mask(G, dtype):
    G = np.asarray(G, np.float64)
    return _decays(np.minimum(G[..., :, None] - G[..., None, :], 0.0), dtype) * np.tri(G.shape[-1], dtype=dtype)


def _decays(g, dtype):
    """``exp(g)`` of log decays ``g <= 0`` (float64) in ``dtype``, 0 where it falls below ``TINY``: a float32
    ``exp(-90)`` is a subnormal number, and every product with one takes a microcode assist on CPUs that have one
    (chapter 08 measures 13x on an Intel Xeon). A decay below ``TINY`` changes a result by less than ``TINY`` times
    what it multiplies."""
    e = np.exp(np.asarray(g, np.float64))
    e[e < TINY] = 0.0
    return e.astype(dtype, copy=False)


def intra_chunk(Q, K, V, G):
    """Inside chunks, scalar decay: ``((Q K^T) * L) V`` with ``L = decay_mask(G)``. ``Q, K (..., c, d_k)``,
    ``V (..., c, d_v)``, ``G (..., c)`` -> ``(..., c, d_v)``: two batched matrix products."""
    return _intra_chunk(*_check_chunks(K, V, G, False, check_array(Q, "Q", ndim=range(2, 9))))


def _intra_chunk(Q, K, V, G):
    A = np.matmul(Q, np.swapaxes(K, -1, -2))
    A *= _decay_mask(G, A.dtype)
    return np.matmul(A, V)


def _intra_folded(Qd, K, V, G):
    """Inside chunks, scalar decay, when every chunk decays by at most ``exp(-FOLD_LIMIT)``: the mask's two
    factors fold into the operands, ``L_ij = exp(G_i) exp(-G_j)``, so ``(Q K^T) * L = tril(Qd Kd^T)`` with
    ``Qd = Q * exp(G)`` (shared with the inter-chunk product) and ``Kd = K * exp(-G)`` -- ``O(c d)`` element-wise
    work per chunk instead of the mask's ``O(c^2)``. Both factors stay within ``exp(+-FOLD_LIMIT)``: normal
    float32 numbers, and every score is a product of exact-ish factors (no cancellation)."""
    Kd = K * np.exp(-G).astype(K.dtype)[..., None]
    A = np.matmul(Qd, np.swapaxes(Kd, -1, -2))
    A *= np.tri(A.shape[-1], dtype=A.dtype)
    return np.matmul(A, V)


def _intra_per_channel(Q, K, V, G):
    """Inside chunks, per-channel decay ``G (..., c, d_k)``: scores ``A_ij = sum_m Q_im K_jm exp(G_im - G_jm)``.
    Columns are taken ``SUB`` at a time relative to their sub-block's end (both factors <= 1) by matrix
    products; within a diagonal sub-block the scores are formed element-wise."""
    c = Q.shape[-2]
    A = np.zeros(Q.shape[:-1] + (c,), Q.dtype)
    for s in range(0, c, SUB):
        e = min(c, s + SUB)
        ref = G[..., e - 1:e, :]
        Kt = K[..., s:e, :] * _decays(ref - G[..., s:e, :], Q.dtype)
        if e < c:  # rows after the sub-block: exponent G_i - G_ref <= 0
            Qt = Q[..., e:, :] * _decays(G[..., e:, :] - ref, Q.dtype)
            A[..., e:, s:e] = np.matmul(Qt, np.swapaxes(Kt, -1, -2))
        d = _decays(np.minimum(G[..., s:e, None, :] - G[..., None, s:e, :], 0.0), Q.dtype)
        blk = np.einsum("...im,...jm,...ijm->...ij", Q[..., s:e, :], K[..., s:e, :], d)
        A[..., s:e, s:e] = np.tril(blk)
    return np.matmul(A, V)


def chunk_states(K, V, G, per_channel):
    """Each chunk's own state ``sum_j (k_j * exp(G_c - G_j)) v_j^T`` and its total decay ``exp(G_c)``:
    ``K (..., n, c, d_k)``, ``V (..., n, c, d_v)``, ``G`` cumulative log decays ``(..., n, c[, d_k])``.
    Returns ``(dS (..., n, d_k, d_v), a (..., n, d_k))``."""
    _, K, V, G = _check_chunks(K, V, G, per_channel)
    return _chunk_states(K, V, G, per_channel)


def _chunk_states(K, V, G, per_channel):
    if per_channel:
        last = G[..., -1:, :]                                   # (..., n, 1, d_k)
        Kw = K * _decays(last - G, K.dtype)
        a = _decays(last[..., 0, :], K.dtype)
    else:
        last = G[..., -1:]                                      # (..., n, 1)
        Kw = K * _decays(last - G, K.dtype)[..., None]
        a = np.broadcast_to(_decays(last, K.dtype), K.shape[:-2] + (K.shape[-1],))
    dS = np.matmul(np.swapaxes(Kw, -1, -2), V)
    return dS, np.ascontiguousarray(a, dtype=K.dtype)


def _on_threads(fn, n: int, threads: int, group: int = 1 << 30) -> None:
    """Run ``fn(slice)`` over ``range(n)`` split in ``threads`` parts, each with one BLAS thread and taken
    ``group`` items at a time: many small matrix products are best spread over cores by the caller (a
    multi-threaded BLAS on a small matrix spends its time waking threads), and a group small enough keeps
    the element-wise temporaries between the products in the core's cache."""
    def run(part):
        for s in range(part.start, part.stop, group):
            fn(slice(s, min(part.stop, s + group)))

    on_units(run, split(n, threads), threads)


def chunk_views(q, k, v, decay, per_channel, chunk):
    """``(c, n, Q, K, V, G)``: chunk length and count, the inputs as ``(m, c, .)`` chunks (padded), ``G`` the
    cumulative log decays ``(m, c[, d_k])`` in float64."""
    T, B, heads, d_k = q.shape
    c = min(T, default_chunk(T, d_k) if chunk is None else check_int(chunk, "chunk", low=1))
    n = -(-T // c)
    Tp, m = n * c, B * heads * n
    pad = lambda x: np.pad(x, [(0, Tp - T)] + [(0, 0)] * (x.ndim - 1)) if Tp > T else x  # noqa: E731
    Q, K, V = (_to_chunks(pad(x), c).reshape((m, c, -1)) for x in (q, k, v))
    G = _to_chunks(_log_decay(decay, Tp, per_channel), c).reshape((m, c) + ((d_k,) if per_channel else ()))
    return c, n, Q, K, V, G


def _chunked(q, k, v, decay, per_channel, S0, chunk, threads, provider):
    T, B, heads, d_k = q.shape
    d_v = v.shape[3]
    c, n, Q, K, V, G = chunk_views(q, k, v, decay, per_channel, chunk)
    Tp, m = n * c, B * heads * n
    S_init = np.zeros((B, heads, d_k, d_v), q.dtype) if S0 is None else np.ascontiguousarray(S0)
    if not per_channel:
        G = np.cumsum(G, axis=1)
        if -G[:, -1].min() <= FOLD_LIMIT:    # the common case: every element-wise pass fused (_fold_operands)
            O, S_last, finite = chunked_folded(Q, K, V, G, S_init, B, heads, n, threads, provider)
            if not finite:          # a NaN/inf went through the fused pass: name the argument it came in by
                check_finite_qkv(q, k, v)
            o = np.transpose(O.reshape(B, heads, n, c, d_v), (2, 3, 0, 1, 4)).reshape(Tp, B, heads, d_v)[:T]
            return np.ascontiguousarray(o), S_last.reshape(B, heads, d_k, d_v)
    check_finite_qkv(q, k, v)   # the unfused paths read q, k, v in numpy passes: check them here, before those run
    dS = np.empty((m, d_k, d_v), q.dtype)
    a = np.empty((m, d_k), q.dtype)
    O = np.empty((m, c, d_v), q.dtype)

    def states(sl):  # each chunk's own state and total decay
        if per_channel:
            G[sl] = np.cumsum(G[sl], axis=1)
        dS[sl], a[sl] = _chunk_states(K[sl], V[sl], G[sl], per_channel)

    group = chunks_per_group(c, d_k, d_v, q.dtype.itemsize)  # chunks per cache-sized group
    _on_threads(states, m, threads, group)
    # inter-chunk: one element-wise scan over the n chunks gives the state entering each chunk
    S_in = np.empty((B * heads, n, d_k, d_v), q.dtype)
    S_last = S_init.reshape(B * heads, d_k, d_v).copy()
    state_scan(a.reshape(B * heads, n, d_k), dS.reshape(B * heads, n, d_k, d_v), S_last, S_in)
    S_in = S_in.reshape(m, d_k, d_v)

    def outputs(sl):  # the incoming state seen through the decayed queries, plus the intra-chunk part
        eG = _decays(G[sl], q.dtype)
        Qd = Q[sl] * (eG if per_channel else eG[..., None])
        np.matmul(Qd, S_in[sl], out=O[sl])
        if per_channel:
            O[sl] += _intra_per_channel(Q[sl], K[sl], V[sl], G[sl])
        elif -G[sl][:, -1].min() <= FOLD_LIMIT:
            O[sl] += _intra_folded(Qd, K[sl], V[sl], G[sl])
        else:
            O[sl] += _intra_chunk(Q[sl], K[sl], V[sl], G[sl])

    _on_threads(outputs, m, threads, group)
    o = np.transpose(O.reshape(B, heads, n, c, d_v), (2, 3, 0, 1, 4)).reshape(Tp, B, heads, d_v)[:T]
    return np.ascontiguousarray(o), S_last.reshape(B, heads, d_k, d_v)


def chunked_products(q, k, v, decay, *, chunk: int | None = None, threads: int | None = None,
                     provider: str = "numpy"):
    """A zero-argument callable that runs ONLY the matrix products ``method="chunked"`` runs on these inputs (the
    fused scalar-decay path: ``Kw^T V``, ``Qd Kd^T`` and ``[Qd | A] [S_in ; V]`` per chunk), on the same threads,
    groups and buffer shapes, with none of the element-wise work (the group buffers are still allocated): timed beside the whole call it gives the share
    of time in products (:func:`course_lib.experiments.linear_attention.product_share`). Scalar decay only, and
    every chunk must fold (decay above ``exp(-FOLD_LIMIT)`` per chunk), else ValueError naming ``decay``.
    ``provider``: the library of the products (:func:`course_lib.algorithms.gemm.gemm_batch`)."""
    threads = backend.cpu_count() if threads is None else check_positive_int(threads, "threads", high=MAX_THREADS)
    provider = check_provider(provider)
    q, k, v, decay, per_channel, _ = check_inputs(q, k, v, decay)
    if per_channel:
        raise ValueError("decay: chunked_products times the scalar-decay path; got a per-channel decay (T, B, heads, d_k)")
    if chunk is not None:
        check_positive_int(chunk, "chunk")
    c, n, Q, K, V, G = chunk_views(q, k, v, decay, False, chunk)
    if -np.cumsum(G, axis=1)[:, -1].min() > FOLD_LIMIT:
        raise ValueError(f"decay: a chunk decays below exp(-{FOLD_LIMIT:g}); that takes the unfused path, not timed here")
    return chunked_products_call(Q, K, V, G, q.shape[1] * q.shape[2], n, threads, provider)


# --------------------------------------------------------------------------- public entry point
def gated_linear_recurrence(q, k, v, decay, *, method: str = "sequential", chunk: int | None = None,
                            S0=None, return_state: bool = False, threads: int | None = None, provider: str = "numpy"):
    """``S_t = a_t S_{t-1} + k_t v_t^T``, ``o_t = S_t^T q_t`` for all t (module docstring).

    ``q, k (T, B, heads, d_k)``, ``v (T, B, heads, d_v)``, ``decay (T, B, heads)`` (scalar per head) or
    ``(T, B, heads, d_k)`` (per key channel), values in [0, 1]; one float dtype. ``S0 (B, heads, d_k, d_v)``: the
    state before step 0 (zeros). ``method``: ``"sequential"`` | ``"scan"`` | ``"chunked"`` (``chunk``: steps per
    chunk, default :func:`default_chunk`; only for ``"chunked"``). Returns ``o (T, B, heads, d_v)`` in the
    inputs' dtype, and with ``return_state=True`` also the final state ``S_T (B, heads, d_k, d_v)``.
    ``threads``: CPU threads of ``"chunked"`` (default: all cores), each running its share of the chunks'
    matrix products on one BLAS thread. ``provider``: the library of those products on the fused path (scalar decay,
    the common case; :func:`course_lib.algorithms.gemm.gemm_batch` -- ``"numpy"``, or ``"mkl"``/``"blis"`` with the
    ``[fast]`` extra); only for ``"chunked"``. The other paths use numpy's BLAS."""
    check_choice(method, "method", METHODS)
    return_state = check_bool(return_state, "return_state")
    threads = backend.cpu_count() if threads is None else check_positive_int(threads, "threads", high=MAX_THREADS)
    # "chunked" checks q, k, v for NaN/inf itself (_chunked): in its fused pass, while they are in cache
    q, k, v, decay, per_channel, S0 = check_inputs(q, k, v, decay, S0, finite=method != "chunked")
    if chunk is not None:
        if method != "chunked":
            raise ValueError(f"chunk: only method='chunked' takes a chunk length, got method={method!r}")
        check_positive_int(chunk, "chunk")
    if provider != "numpy":
        if method != "chunked":
            raise ValueError(f"provider: only method='chunked' runs matrix products, got method={method!r}")
        check_provider(provider)
    if method == "sequential":
        o, S = _sequential(q, k, v, decay, per_channel, S0)
    elif method == "scan":
        o, S = _scan_method(q, k, v, decay, per_channel, S0)
    else:
        with np.errstate(under="ignore", invalid="ignore"):    # a NaN input is named just after its pass (_chunked)
            o, S = _chunked(q, k, v, decay, per_channel, S0, chunk, threads, provider)
    if not np.isfinite(o[-1]).all():
        raise ValueError("q, k, v: the outputs became non-finite (huge inputs?)")
    return (o, S) if return_state else o
