"""Linear recurrences with *matrix* coefficients: ``h_t = A_t h_{t-1} + b_t`` (algorithms folder).

Chapter 08 scanned the element-wise recurrence ``h_t = a_t * h_{t-1} + x_t``. A Newton step of a
nonlinear RNN (DEER, chapter 11) is the same recurrence with a *matrix* per step -- the Jacobian
``A_t = df/dh`` -- so the pair ``(A, b)`` is again an affine map ``h -> A h + b`` and composing two
of them is again one::

    (A1, b1) o (A2, b2) = (A2 A1, A2 b1 + b2)        first (A1, b1), then (A2, b2); identity (I, 0)

Associative, not commutative: a scan works, but each combine is now a matrix-matrix product
(``2 H^3`` flops) where the sequential loop does a matrix-vector product (``2 H^2``): the parallel
scan does ~H times more work. That is DEER's cost at large hidden sizes.

Column-vector maths here (``A_t @ h``): ``A`` has shape ``(T, *batch, H, H)``, ``b`` and the result
``(T, *batch, H)``, ``h0`` ``(*batch, H)``. Three structures:

* ``"full"``      ``A (T, *batch, H, H)``
* ``"block"``     ``A (T, *batch, nb, k, k)`` block-diagonal with ``nb`` blocks of size ``k`` (``H = nb k``)
* ``"diagonal"``  ``A (T, *batch, H)`` -- handed to :func:`course_lib.algorithms.scan.linear_recurrence`
  (chapter 08's element-wise scan), ``O(H)`` per step

Methods (``method=``, same numbers every time):

* ``"sequential"``     a numba loop, ``O(T H^2)`` work, ``T`` steps on the critical path
* ``"hillis_steele"``  numpy recursive doubling: ``ceil(log2 T)`` rounds of batched combines
* ``"chunked"``        numba, parallel over time chunks: reduce each chunk to one ``(A, b)``,
  march the carries, expand each chunk from its carry

Public API
----------
``combine(p, q)``, ``identity(nh)``, ``linear_recurrence(A, b, h0=None, *, structure="full", method="sequential", chunks=None)``,
``recurrence_float64(A, b, h0=None, *, structure="full")`` the reference loop,
``work_span(T, nh, *, structure, method, P)`` flop counts for the work/span model, ``random_problem(...)``,
``product(A)`` the flushed product ``A_{T-1} ... A_0`` of a chain of matrices.

Products of many matrices (a chunk's reduce, Hillis-Steele's doublings, :func:`product`) are *flushed*: an
entry below :data:`~course_lib.algorithms.scan_kernels.TINY` (1e-30) becomes 0, as in chapter 08's scan
kernels, so that a contracting chain never runs on subnormal numbers (slow on many CPUs). Each flushed entry
is off by less than 1e-30, which the carry it multiplies makes negligible beside ``b``.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from ..core.validate import (check_alloc, check_array, check_choice, check_finite, check_float, check_int,
                             check_positive_int, largest)
from . import scan as _scan
from .scan_kernels import TINY

__all__ = [
    "STRUCTURES",
    "METHODS",
    "combine",
    "identity",
    "linear_recurrence",
    "recurrence_float64",
    "work_span",
    "random_problem",
    "product",
]

STRUCTURES = ("full", "block", "diagonal")
METHODS = ("sequential", "hillis_steele", "chunked")


# --------------------------------------------------------------------------- the operator
def combine(p, q):
    """``p o q`` for affine maps ``p = (A1, b1)``, ``q = (A2, b2)``: first p, then q ->
    ``(A2 @ A1, A2 @ b1 + b2)``. ``A`` may carry leading batch axes (``(..., H, H)``, ``b`` ``(..., H)``)."""
    for name, pair in (("p", p), ("q", q)):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"{name}: expected a pair (A, b), got {type(pair).__name__}")
    A1, b1 = (np.asarray(v) for v in p)
    A2, b2 = (np.asarray(v) for v in q)
    if A1.ndim < 2 or A2.ndim < 2:
        raise ValueError(f"p, q: A must be a matrix (..., H, H), got shapes {A1.shape} and {A2.shape}")
    return A2 @ A1, (A2 @ b1[..., None])[..., 0] + b2


def identity(nh: int, dtype=np.float64):
    """The neutral element ``(I, 0)``."""
    nh = check_positive_int(nh, "nh")
    check_alloc((nh, nh), dtype, "nh", what="the identity matrix")
    return np.eye(nh, dtype=dtype), np.zeros(nh, dtype=dtype)


# --------------------------------------------------------------------------- validation
def _validate(A, b, h0, structure):
    check_choice(structure, "structure", STRUCTURES)
    b = check_array(b, "b", ndim=(1, 2, 3, 4, 5), finite=False)
    if b.ndim < 2:
        raise ValueError(f"b: expected shape (T, *batch, H), got {b.shape}")
    A = check_array(A, "A", finite=False)
    if A.dtype != b.dtype:
        raise TypeError(f"A: expected the dtype of b ({b.dtype}), got {A.dtype}")
    T, H = b.shape[0], b.shape[-1]
    if T < 1:
        raise ValueError(f"b: T (axis 0) must be >= 1, got shape {b.shape}")
    batch = b.shape[1:-1]
    if structure == "full":
        want = (T,) + batch + (H, H)
        if A.shape != want:
            raise ValueError(f"A: expected shape {want} (T, *batch, H, H) for structure='full', got {A.shape}")
    elif structure == "diagonal":
        if A.shape != b.shape:
            raise ValueError(f"A: expected shape {b.shape} (the shape of b) for structure='diagonal', got {A.shape}")
    else:
        if A.ndim != b.ndim + 2 or A.shape[:b.ndim - 1] != b.shape[:-1] or A.shape[-1] != A.shape[-2]:
            raise ValueError(f"A: expected shape {b.shape[:-1] + ('nb', 'k', 'k')} for structure='block', got {A.shape}")
        nb, k = A.shape[-3], A.shape[-1]
        if nb * k != H:
            raise ValueError(f"A: {nb} blocks of size {k} cover {nb * k} channels, but b has H = {H}")
    if h0 is None:
        h0 = np.zeros(b.shape[1:], dtype=b.dtype)
    else:
        h0 = check_array(h0, "h0", shape=b.shape[1:]).astype(b.dtype, copy=False)
    return A, b, h0


def _as_full(A, b, h0, structure):
    """Flatten to the full-matrix kernels' layout: A (T, N, k, k), b (T, N, k), h0 (N, k)."""
    T = b.shape[0]
    if structure == "block":
        k = A.shape[-1]
        A2 = A.reshape(T, -1, k, k)
        return (np.ascontiguousarray(A2), np.ascontiguousarray(b.reshape(T, -1, k)),
                np.ascontiguousarray(h0.reshape(-1, k)))
    H = b.shape[-1]
    return (np.ascontiguousarray(A.reshape(T, -1, H, H)), np.ascontiguousarray(b.reshape(T, -1, H)),
            np.ascontiguousarray(h0.reshape(-1, H)))


# --------------------------------------------------------------------------- numba kernels
@njit(cache=True)
def _sequential(A, b, h0, out):
    T, N, H = b.shape
    h = np.empty(H, dtype=b.dtype)
    for n in range(N):
        for i in range(H):
            h[i] = h0[n, i]
        for t in range(T):
            for i in range(H):
                s = b[t, n, i]
                for j in range(H):
                    s += A[t, n, i, j] * h[j]
                out[t, n, i] = s
            for i in range(H):
                h[i] = out[t, n, i]


@njit(cache=True, parallel=True)
def _chunked(A, b, h0, out, bounds):
    T, N, H = b.shape
    C = bounds.shape[0] - 1
    P = np.zeros((C, N, H, H), dtype=b.dtype)  # each chunk composed into one affine map
    q = np.zeros((C, N, H), dtype=b.dtype)
    for c in prange(C):  # 1. reduce: H^3 per step (matrix-matrix products)
        tmpP = np.empty((H, H), dtype=b.dtype)
        tmpq = np.empty(H, dtype=b.dtype)
        for n in range(N):
            for i in range(H):
                P[c, n, i, i] = 1.0
            for t in range(bounds[c], bounds[c + 1]):
                for i in range(H):
                    s = b[t, n, i]
                    for j in range(H):
                        s += A[t, n, i, j] * q[c, n, j]
                    tmpq[i] = s
                    for k in range(H):
                        s2 = 0.0
                        for j in range(H):
                            s2 += A[t, n, i, j] * P[c, n, j, k]
                        tmpP[i, k] = s2 if not (abs(s2) < TINY) else 0.0   # flush: never subnormal
                P[c, n] = tmpP
                q[c, n] = tmpq
    carry = np.empty((C, N, H), dtype=b.dtype)  # 2. march the carries (C steps)
    for n in range(N):
        for i in range(H):
            carry[0, n, i] = h0[n, i]
        for c in range(1, C):
            for i in range(H):
                s = q[c - 1, n, i]
                for j in range(H):
                    s += P[c - 1, n, i, j] * carry[c - 1, n, j]
                carry[c, n, i] = s
    for c in prange(C):  # 3. expand each chunk from its carry: H^2 per step
        h = np.empty(H, dtype=b.dtype)
        for n in range(N):
            for i in range(H):
                h[i] = carry[c, n, i]
            for t in range(bounds[c], bounds[c + 1]):
                for i in range(H):
                    s = b[t, n, i]
                    for j in range(H):
                        s += A[t, n, i, j] * h[j]
                    out[t, n, i] = s
                for i in range(H):
                    h[i] = out[t, n, i]


def _hillis_steele(A, b, h0):
    """Recursive doubling in numpy: after round d, element t holds the composition of steps
    ``max(0, t-2^d+1) .. t``; h0 is folded into step 0 first."""
    A = A.copy()
    b = b.copy()
    b[0] = (A[0] @ h0[..., None])[..., 0] + b[0]
    A[0] = 0.0  # step 0 no longer depends on anything before it
    T = A.shape[0]
    d = 1
    while d < T:
        A_new, b_new = combine((A[:-d], b[:-d]), (A[d:], b[d:]))
        _scan.flush(A_new)   # flush (module docstring): H^2 per combine against its 2 H^3
        A[d:], b[d:] = A_new, b_new
        d *= 2
    return b


@njit(cache=True)
def _compose(A, P):
    """``P[n] = A[T-1, n] @ ... @ A[0, n]`` for ``A (T, N, H, H)`` into ``P (N, H, H)``, entries below TINY
    flushed to 0 after every product (NaN stays NaN)."""
    T, N, H, _ = A.shape
    tmp = np.empty((H, H), P.dtype)
    for n in range(N):
        P[n] = 0.0
        for i in range(H):
            P[n, i, i] = 1.0
        for t in range(T):
            tmp[:] = 0.0
            for i in range(H):
                for j in range(H):
                    aij = A[t, n, i, j]
                    for k in range(H):
                        tmp[i, k] += aij * P[n, j, k]
            for i in range(H):
                for k in range(H):
                    v = tmp[i, k]
                    P[n, i, k] = v if not (abs(v) < TINY) else 0.0


def product(A) -> np.ndarray:
    """The composition of a chain of steps' matrices, ``A_{T-1} @ ... @ A_0``, flushed (module docstring):
    ``A (T, *batch, H, H)`` float32/64 -> ``(*batch, H, H)`` in A's dtype. An ``(A, b)`` pair's ``A`` part."""
    A = check_array(A, "A", ndim=None)           # finite: a NaN would come back as the product
    if A.ndim < 3 or A.shape[-1] != A.shape[-2] or A.shape[0] < 1:
        raise ValueError(f"A: expected square matrices (T, *batch, H, H) with T >= 1, got shape {A.shape}")
    H = A.shape[-1]
    A4 = np.ascontiguousarray(A).reshape(A.shape[0], -1, H, H)
    if H <= 16:                      # small matrices: one compiled loop (numpy's calls per step would dominate)
        P = np.empty(A4.shape[1:], A.dtype)
        _compose(A4, P)
        return P.reshape(A.shape[1:])
    P = np.broadcast_to(np.eye(H, dtype=A.dtype), A4.shape[1:]).copy()
    with np.errstate(under="ignore"):
        for At in A4:                # larger ones: BLAS per step (2 H^3 flops), the flush is H^2
            P = At @ P
            np.copyto(P, 0.0, where=np.abs(P) < TINY)
    return P.reshape(A.shape[1:])


def _chunk_bounds(T: int, C: int) -> np.ndarray:
    C = max(1, min(C, T))
    return np.linspace(0, T, C + 1).round().astype(np.int64)


# --------------------------------------------------------------------------- public entry
def linear_recurrence(A, b, h0=None, *, structure: str = "full", method: str = "sequential",
                      chunks: int | None = None) -> np.ndarray:
    """``h_t = A_t h_{t-1} + b_t`` for ``t = 0 .. T-1`` from ``h0`` (zeros by default) -> ``h`` shaped like ``b``.

    ``structure`` (``"full"``, ``"block"``, ``"diagonal"``) says how ``A`` is stored (module doc);
    ``method`` (``"sequential"``, ``"hillis_steele"``, ``"chunked"``) how it is computed;
    ``chunks`` (``"chunked"`` only): number of time chunks, default 2 per numba thread.
    Raises FloatingPointError when the result is not finite (overflow or non-finite inputs)."""
    check_choice(method, "method", METHODS)
    A, b, h0 = _validate(A, b, h0, structure)
    if chunks is not None:
        chunks = check_positive_int(chunks, "chunks")
        if method != "chunked":
            raise TypeError(f"chunks: only used with method='chunked', got method={method!r}")
    if structure == "diagonal":
        T = b.shape[0]
        out = _scan.linear_recurrence(np.ascontiguousarray(A).reshape(T, -1), np.ascontiguousarray(b).reshape(T, -1),
                                      h0.reshape(-1), method=method, **({"chunks": chunks} if chunks else {}))
        out = out.reshape(b.shape)
    else:
        A2, b2, h02 = _as_full(A, b, h0, structure)
        if method == "sequential":
            out = np.empty_like(b2)
            _sequential(A2, b2, h02, out)
        elif method == "chunked":
            out = np.empty_like(b2)
            C = chunks or 2 * numba.get_num_threads()
            _chunked(A2, b2, h02, out, _chunk_bounds(b2.shape[0], C))
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                out = _hillis_steele(A2, b2, h02)
        out = out.reshape(b.shape)
    last = out[-1]
    if not np.all(np.isfinite(last)):
        raise FloatingPointError(
            f"linear_recurrence: the result is not finite at the last step ({int(np.sum(~np.isfinite(last)))} entries); "
            "products of the A_t overflowed or A/b contain NaN/inf")
    return out


def recurrence_float64(A, b, h0=None, *, structure: str = "full") -> np.ndarray:
    """The reference: a plain Python/numpy loop in float64 (slow; small problems only)."""
    A, b, h0 = _validate(A, b, h0, structure)
    check_finite(A, "A")
    check_finite(b, "b")
    A = A.astype(np.float64)
    b = b.astype(np.float64)
    h = h0.astype(np.float64)
    out = np.empty(b.shape, np.float64)
    for t in range(b.shape[0]):
        if structure == "diagonal":
            h = A[t] * h + b[t]
        elif structure == "full":
            h = (A[t] @ h[..., None])[..., 0] + b[t]
        else:
            k = A.shape[-1]
            hb = h.reshape(h.shape[:-1] + (-1, k))
            h = (A[t] @ hb[..., None])[..., 0].reshape(h.shape) + b[t]
        out[t] = h
    return out


# --------------------------------------------------------------------------- counting
def work_span(T: int, nh: int, *, structure: str = "full", method: str = "chunked", P: int = 1,
              k: int | None = None) -> dict:
    """Flops of one recurrence (one sequence) and its critical path (span) on ``P`` processors.

    sequential: work = span = ``2 H^2 T`` (full), ``2 k H T`` (block of size k), ``2 H T`` (diagonal).
    chunked/hillis_steele on P processors: reduce ``ceil(T/P)`` combines of ``2 c^3`` per block
    (``c`` = H, k or 1), a tree over the P chunk results (``2 ceil(log2 P)`` combines) and an expand of
    ``ceil(T/P)`` matrix-vector steps. Returns ``{"work", "span", "speedup"}`` (speedup over sequential)."""
    T = check_positive_int(T, "T")
    nh = check_positive_int(nh, "nh")
    P = check_positive_int(P, "P")
    check_choice(structure, "structure", STRUCTURES)
    check_choice(method, "method", METHODS)
    if structure == "full":
        c, nblocks = nh, 1
    elif structure == "diagonal":
        c, nblocks = 1, nh
    else:
        if k is None:
            raise TypeError("k: the block size is required for structure='block'")
        k = check_int(k, "k", low=1, high=nh)
        if nh % k:
            raise ValueError(f"k: must divide H = {nh}, got {k}")
        c, nblocks = k, nh // k
    matvec = 2.0 * c * c * nblocks
    matmat = 2.0 * c ** 3 * nblocks + matvec
    seq = matvec * T
    if method == "sequential":
        return {"work": seq, "span": seq, "speedup": 1.0}
    P_eff = min(P, T)
    per = math.ceil(T / P_eff)
    tree = 2 * math.ceil(math.log2(P_eff)) if P_eff > 1 else 0
    if method == "hillis_steele":
        rounds = math.ceil(math.log2(T)) if T > 1 else 0
        work = matmat * T * max(rounds, 1)
        span = matmat * rounds * math.ceil(T / P_eff)
    else:
        work = matmat * T + matmat * P_eff * (tree > 0) + matvec * T
        span = matmat * per + matmat * tree + matvec * per
    return {"work": work, "span": span, "speedup": seq / span if span else float("inf")}


def random_problem(T: int, nh: int, batch: tuple = (), *, structure: str = "full", k: int | None = None,
                   scale: float = 0.9, seed: int = 0, dtype=np.float64):
    """Seeded ``(A, b, h0)``: random matrices of spectral norm about ``scale`` (stable for scale < 1)."""
    T = check_positive_int(T, "T")
    nh = check_positive_int(nh, "nh")
    check_choice(structure, "structure", STRUCTURES)
    batch = tuple(check_positive_int(n, "batch") for n in batch)
    check_alloc((T, *batch, nh, nh if structure == "full" else 1), np.float64, largest(T=T, nh=nh), what="A")
    scale = check_float(scale, "scale", low=0.0)
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    if structure == "full":
        A = rng.standard_normal((T,) + batch + (nh, nh)) * scale / (2 * math.sqrt(nh))
    elif structure == "diagonal":
        A = rng.uniform(-scale, scale, size=(T,) + batch + (nh,))
    else:
        if k is None or nh % k:
            raise ValueError(f"k: a block size dividing H = {nh} is required for structure='block', got {k}")
        A = rng.standard_normal((T,) + batch + (nh // k, k, k)) * scale / (2 * math.sqrt(k))
    b = rng.standard_normal((T,) + batch + (nh,))
    h0 = rng.standard_normal(batch + (nh,))
    return A.astype(dtype), b.astype(dtype), h0.astype(dtype)
