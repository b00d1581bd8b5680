"""Linear recurrences in parallel: the scan (algorithms layer). Seed 001, Martin & Cundy 2018, Blelloch 1990.

The recurrence, element-wise over channels::

    h_t = a_t * h_{t-1} + x_t,      t = 0 .. T-1,   h_{-1} = h0 (zeros by default)

Each step is the affine map ``h -> a h + x``, written as the pair ``(a, x)``. Applying
``(a1, b1)`` and then ``(a2, b2)`` is again such a map::

    (a1, b1) o (a2, b2) = (a2 a1, a2 b1 + b2)        identity (1, 0)

The operator is associative (so the pairs can be grouped in any tree: a *scan*) but not
commutative (order matters). ``h_t`` is the ``b`` part of ``(1, h0) o (a_0, x_0) o ... o (a_t, x_t)``.

Public API
----------
``combine(p, q)``                       the operator on pairs of arrays
``linear_recurrence(a, x, h0=None, *, method="sequential", **opts)`` -> h; ``method`` is one of
    ``"sequential"``    the numba loop over time, channels in the inner (vectorised) loop;
    ``"channels"``      parallel over channels: each thread runs the whole time loop on a group
                        of channels (opt ``groups``) -- seed 001's "serial kernel" is this one;
    ``"hillis_steele"``, ``"blelloch"``  readable numpy references (:func:`hillis_steele`,
                        :func:`blelloch` count their work and span);
    ``"chunked"``       parallel over *time*: reduce chunks -> scan the carries -> expand, on
                        threads and, for few channels, on SIMD lanes too (see below);
    ``"cuda_chunked"``  :mod:`course_lib.algorithms.scan_cuda`'s reduce/scan/expand kernels
                        (opts ``block``, ``chunk``).
``linear_recurrence_backward(a, h, h0, grad_h, *, method=...)`` -> (grad_a, grad_x, grad_h0)
``phase_steps(a, x, h0=None, *, chunks)``   the chunked scan's three phases as separate callables
``choose_chunks(T, N, threads)``, ``choose_lanes(N, itemsize, vector_bytes)``, ``chunk_steps(N, itemsize)``
                                        the splits ``"chunked"`` uses by default
``kernel_for(a, x, *, method, threads, **opts)``  the name of the kernel a call runs
                                        (the numba kernels live in :mod:`.scan_kernels`)
``scan_counts(method, T)``             combines (work) and parallel steps (span) of each method
``closed_form(a, x, h0)``              cumprod/cumsum formula -- overflows: a cautionary tale
``recurrence_float64(a, x, h0)``       plain float64 loop, the reference
``random_problem(T, nh, batch=None, ...)``  a seeded test problem

**SIMD lanes over time.** With one channel the serial loop is one dependent multiply-add per
step: the core waits for the previous result and its vector units sit idle. ``"chunked"`` then
gives each SIMD lane its own stretch of time: ``log2 K`` doubling passes over contiguous memory
turn the pairs into windows of ``K`` steps (``(A_t, B_t) = p_{t-K+1} o ... o p_t``), after which
``h_t = A_t h_{t-K} + B_t`` -- the same recurrence with stride ``K``, i.e. ``K`` independent chains
that the vectorised channel loop runs side by side, one per lane. Threads then split time as well.
One channel on 16 lanes makes its windows in two passes over L1-sized blocks instead
(:mod:`~course_lib.algorithms.scan_lanes`: windows of 4 steps, then of 16), reading ``a, x`` once.

Shapes: ``a, x`` are ``(T, H)`` or ``(T, B, H)`` (time-major); ``h0`` has the shape of one
time step (``(H,)`` or ``(B, H)``); ``h`` has the shape of ``x``. Every method returns the float64
loop's values to round-off; running products below ``TINY`` are flushed to zero (subnormal
numbers are many times slower), and a result that turns NaN/inf raises ValueError naming the
first time step and channel.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core import backend
from ..core.validate import (check_alloc, check_array, check_choice, check_dtype, check_float, check_int,
                              check_positive_int, check_power_of_two, largest)
from . import scan_kernels as kernels
from .scan_kernels import TINY

__all__ = [
    "METHODS",
    "TINY",
    "ScanCounts",
    "combine",
    "linear_recurrence",
    "linear_recurrence_backward",
    "hillis_steele",
    "blelloch",
    "choose_chunks",
    "choose_lanes",
    "kernel_for",
    "KERNELS",
    "chunk_steps",
    "phase_steps",
    "scan_counts",
    "closed_form",
    "recurrence_float64",
    "random_problem",
]

METHODS = ("sequential", "channels", "hillis_steele", "blelloch", "chunked", "cuda_chunked")
KERNELS = ("sequential", "channels", "hillis_steele", "blelloch", "chunked", "chunked_par", "lanes",
           "chunked_blocked", "cuda_chunked")  # what :func:`kernel_for` may answer


# --------------------------------------------------------------------------- validation
def _validate(a, x, h0, name_a="a", name_x="x", name_h0="h0", *, finite=False):
    """Check shapes/dtypes; return a, x as (T, N) C-contiguous views, h0 as (N,), and the shape.

    ``a`` and ``x`` are not scanned for NaN/inf here: that would be two extra passes over memory
    (as expensive as the recurrence itself). Instead the result's last step is checked
    (:func:`_check_result`), which catches every non-finite input and every overflow."""
    a = check_array(a, name_a, ndim=(2, 3), finite=False)
    dims: dict = {}
    pattern = ("T",) + tuple(f"d{i}" for i in range(1, a.ndim))
    check_array(a, name_a, shape=pattern, dims=dims, min_size={"T": 1}, finite=finite)
    x = check_array(x, name_x, shape=pattern, dims=dims, finite=finite)
    if a.dtype != x.dtype:
        raise TypeError(f"{name_x}: expected the dtype of {name_a} ({a.dtype}), got {x.dtype}")
    step_shape = a.shape[1:]
    if h0 is None:
        h0 = np.zeros(step_shape, a.dtype)
    else:
        h0 = check_array(h0, name_h0, shape=step_shape)
        h0 = h0.astype(a.dtype, copy=False)
    T = a.shape[0]
    n = int(np.prod(step_shape))
    return (np.ascontiguousarray(a).reshape(T, n), np.ascontiguousarray(x).reshape(T, n),
            np.ascontiguousarray(h0).reshape(n), a.shape)


def random_problem(T: int, nh: int, batch: int | None = None, *, seed: int = 0, dtype="float32",
                   low: float = 0.5, high: float = 1.0):
    """A seeded test problem: ``a`` uniform in ``[low, high)``, ``x`` standard normal, ``h0`` normal.

    Returns ``(a, x, h0)`` with ``a, x`` of shape ``(T, H)`` (or ``(T, B, H)``)."""
    T = check_positive_int(T, "T")
    nh = check_positive_int(nh, "nh")
    low = check_float(low, "low")
    high = check_float(high, "high", low=low)
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    sizes = {"T": T, "nh": nh} if batch is None else {"T": T, "batch": check_positive_int(batch, "batch"), "nh": nh}
    shape = (T, nh) if batch is None else (T, sizes["batch"], nh)
    dt = check_dtype(dtype, "dtype")
    check_alloc((2,) + shape, dt, largest(**sizes), what="a and x")
    a = rng.random(shape, dtype=dt)
    a *= high - low
    a += low
    x = rng.standard_normal(shape, dtype=dt)
    h0 = rng.standard_normal(shape[1:], dtype=dt)
    return a, x, h0


# --------------------------------------------------------------------------- the operator
def combine(p, q):
    """``p o q`` for pairs ``p = (a1, b1)``, ``q = (a2, b2)``: first p, then q -> ``(a2 a1, a2 b1 + b2)``.
    The entries may be numbers or arrays of one shape (element-wise)."""
    for name, pair in (("p", p), ("q", q)):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"{name}: expected a pair (a, b), got {type(pair).__name__}"
                            + (f" of length {len(pair)}" if isinstance(pair, (tuple, list)) else ""))
    a1, b1 = p
    a2, b2 = q
    return a2 * a1, a2 * b1 + b2


def recurrence_float64(a, x, h0=None):
    """The reference: a plain loop in float64. Returns float64 ``h`` of the shape of ``x``.
    NaN/inf in ``a`` or ``x``, or an overflow, raise ValueError (as :func:`linear_recurrence` does)."""
    a2, x2, h02, shape = _validate(a, x, h0)
    h = np.empty(a2.shape, np.float64)
    prev = h02.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(a2.shape[0]):
            prev = a2[t].astype(np.float64) * prev + x2[t]
            h[t] = prev
    _check_result(h, a2, x2, "a", "x")
    return h.reshape(shape)


def closed_form(a, x, h0=None):
    """``h_t = P_t (h0 + sum_{s<=t} x_s / P_s)`` with ``P_t = a_0 ... a_t``: one cumprod, one cumsum.

    Exact in real numbers, useless in floating point: ``P_t`` underflows and ``1 / P_s``
    overflows after a few thousand steps (a cautionary tale, not a method): its inf/NaN from
    *overflow* are returned as they are (that is the lesson), but NaN/inf *inputs* are a ValueError."""
    a2, x2, h02, shape = _validate(a, x, h0, finite=True)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        P = np.cumprod(a2, axis=0)
        h = P * (h02 + np.cumsum(x2 / P, axis=0))
    return h.reshape(shape)


@dataclass
class ScanCounts:
    """Work (combines of the operator) and span (parallel steps) of one scan of length T."""

    method: str
    T: int
    work: int
    span: int

    def __post_init__(self):
        check_choice(self.method, "method", ("sequential", "hillis_steele", "blelloch"))
        self.T = check_positive_int(self.T, "T")
        self.work = check_int(self.work, "work", low=0)
        self.span = check_int(self.span, "span", low=0)

    def __str__(self) -> str:
        return f"{self.method:>13}: T={self.T:<6d} work={self.work:<8d} span={self.span}"


def scan_counts(method: str, T: int) -> ScanCounts:
    """Combines and parallel steps of ``"sequential"``, ``"hillis_steele"`` or ``"blelloch"`` at length T.

    sequential: work T-1, span T-1.  Hillis-Steele: span ceil(log2 T), work sum_d (T - 2^d)
    ~ T log2 T.  Blelloch (padded to n = 2^ceil(log2 T)): up-sweep n-1 and down-sweep n-1
    combines, span 2 log2 n."""
    check_choice(method, "method", ("sequential", "hillis_steele", "blelloch"))
    T = check_positive_int(T, "T")
    if method == "sequential":
        return ScanCounts(method, T, T - 1, T - 1)
    levels = math.ceil(math.log2(T)) if T > 1 else 0
    if method == "hillis_steele":
        return ScanCounts(method, T, sum(T - 2 ** d for d in range(levels)), levels)
    n = 2 ** levels
    return ScanCounts(method, T, 2 * (n - 1), 2 * levels)


def flush(A):
    """``A`` with every product below ``max(TINY, sqrt(smallest normal))`` set to 0 (in place; NaN stays): the
    references compose thousands of factors, which would otherwise stick at the smallest subnormal (module
    docstring). They multiply two such products together, so the threshold's square must be normal too (float32:
    1.1e-19, still far below its round-off beside the ``B`` term)."""
    A[np.abs(A) < max(TINY, math.sqrt(np.finfo(A.dtype).tiny))] = 0
    return A


def hillis_steele(a, x, h0=None):
    """Hillis-Steele inclusive scan in numpy: at step d every element combines with the one 2^d
    before it (all at once). Returns ``(h, ScanCounts)`` with the combines actually done.
    NaN/inf in ``a`` or ``x``, or an overflow, raise ValueError."""
    a2, x2, h02, shape = _validate(a, x, h0)
    with np.errstate(over="ignore", invalid="ignore"):
        h, counts = _hillis_steele(a2, x2, h02)
    _check_result(h, a2, x2, "a", "x")
    return h.reshape(shape), counts


def _hillis_steele(a2, x2, h02):
    A = a2.copy()
    B = x2.copy()
    B[0] = A[0] * h02 + B[0]  # fold h0 into the first element
    T = A.shape[0]
    work = span = 0
    d = 1
    while d < T:
        # element i <- (element i-d) o (element i); right-hand sides are read before writing
        A_new, B_new = combine((A[:-d], B[:-d]), (A[d:], B[d:]))
        A[d:], B[d:] = flush(A_new), B_new
        work += T - d
        span += 1
        d *= 2
    return B, ScanCounts("hillis_steele", T, work, span)


def blelloch(a, x, h0=None):
    """Blelloch's work-efficient scan in numpy: an up-sweep (reduce) tree and a down-sweep tree
    over ``n = 2^ceil(log2 T)`` slots (padded with the identity (1, 0)). Returns ``(h, ScanCounts)``.
    NaN/inf in ``a`` or ``x``, or an overflow, raise ValueError."""
    a2, x2, h02, shape = _validate(a, x, h0)
    with np.errstate(over="ignore", invalid="ignore"):
        h, counts = _blelloch(a2, x2, h02)
    _check_result(h, a2, x2, "a", "x")
    return h.reshape(shape), counts


def _blelloch(a2, x2, h02):
    T, m = a2.shape
    n = 1 << max(0, math.ceil(math.log2(T)))
    A = np.ones((n, m), a2.dtype)
    B = np.zeros((n, m), a2.dtype)
    A[:T], B[:T] = a2, x2
    work = span = 0
    # up-sweep: the right child of each pair becomes (left o right)
    step = 1
    while step < n:
        right = np.arange(2 * step - 1, n, 2 * step)
        left = right - step
        A_up, B[right] = combine((A[left], B[left]), (A[right], B[right]))
        A[right] = flush(A_up)
        work += len(right)
        span += 1
        step *= 2
    # down-sweep: root gets the identity; left child <- parent, right child <- parent o left
    A[n - 1], B[n - 1] = 1, 0
    step = n // 2
    while step >= 1:
        right = np.arange(2 * step - 1, n, 2 * step)
        left = right - step
        left_sum = (A[left].copy(), B[left].copy())
        A[left], B[left] = A[right], B[right]
        A_down, B[right] = combine((A[right], B[right]), left_sum)
        A[right] = flush(A_down)
        work += len(right)
        span += 1
        step //= 2
    # (A, B)[t] is now the exclusive prefix: h_{t-1} = A h0 + B; one more step gives h_t
    h = a2 * (A[:T] * h02 + B[:T]) + x2
    return h, ScanCounts("blelloch", T, work, span)


def chunk_steps(n: int, itemsize: int, cache_bytes: int = 3 << 19) -> int:
    """Steps per chunk of the cache-blocked scan: ``a`` and ``x`` of one chunk (``2 n itemsize``
    bytes per step) fill about ``cache_bytes`` (1.5 MB: a per-core L2 of 1-2 MB, the rest caught by
    L3; on the course's test machines larger chunks gained nothing and smaller ones lost)."""
    n = check_positive_int(n, "n")
    itemsize = check_positive_int(itemsize, "itemsize")
    cache_bytes = check_positive_int(cache_bytes, "cache_bytes")
    return max(8, cache_bytes // (2 * n * itemsize))


def choose_lanes(n: int, itemsize: int = 4, vector_bytes: int | None = None) -> int:
    """SIMD lanes per channel for ``method="chunked"``: with ``n`` channels of ``itemsize`` bytes
    the channel loop fills ``n * itemsize`` bytes of a ``vector_bytes`` vector (default: this
    CPU's, :func:`course_lib.core.backend.simd_bytes` -- 64 with AVX-512, 32 with AVX2). Up to 16
    bytes (float32: nh <= 4) the loop is latency-bound and the vector mostly idle, so each channel
    gets the largest power of two ``<= vector_bytes / (n * itemsize)`` lanes over time; wider rows
    already fill the vector (1: no lanes). Lanes are a power of two: the windows double in length."""
    n = check_positive_int(n, "n")
    itemsize = check_positive_int(itemsize, "itemsize")
    vector_bytes = backend.simd_bytes() if vector_bytes is None else check_positive_int(vector_bytes, "vector_bytes")
    if n * itemsize > 16 or n * itemsize > vector_bytes:
        return 1
    return 1 << int(math.log2(vector_bytes // (n * itemsize)))


def choose_chunks(T: int, N: int = 1, threads: int | None = None) -> int:
    """Number of time chunks (threads that split time) for ``method="chunked"``.

    Small problems (fewer than 2^20 elements -- about a millisecond of serial work -- or under
    64 steps per chunk) stay on one thread (1 chunk): starting threads would cost more than they
    save. Otherwise ``threads + 1`` chunks: chunk 0 is scanned outright while the other threads
    reduce theirs, then ``threads`` chunks are expanded -- both phases keep every thread busy."""
    T = check_positive_int(T, "T")
    N = check_positive_int(N, "N")
    p = backend.get_threads() if threads is None else check_positive_int(threads, "threads")
    if p == 1 or T * N < (1 << 20):
        return 1
    return max(1, min(p + 1, T // 64))



def phase_steps(a, x, h0=None, *, chunks: int) -> dict:
    """The textbook chunked scan's three phases as separate zero-argument callables, on one thread,
    over preallocated buffers (so that each can be timed on its own -- see
    :func:`course_lib.experiments.scan.chunked_phases`):

    ``"reduce"``  compose chunks 0..C-2 into pairs ``(A_c, B_c)``;
    ``"scan"``    the carries: h just before each chunk (C serial steps);
    ``"expand"``  every chunk from its carry, writing h;
    ``"result"``  returns h, shaped like ``x`` (valid after the three phases ran in order).
    Also ``"chunks"``: C. Each phase may be called repeatedly (it recomputes the same numbers)."""
    a2, x2, h02, shape = _validate(a, x, h0, finite=True)   # the phases check no result: a NaN would come back as h
    T, n = a2.shape
    C = check_int(chunks, "chunks", low=1, high=T)
    bounds = kernels.chunk_bounds(T, C)
    A = np.empty((C, n), a2.dtype)
    B = np.empty((C, n), a2.dtype)
    carry = np.empty((C, n), a2.dtype)
    h = np.empty_like(a2)
    return {"chunks": C,
            "reduce": lambda: kernels.phase_reduce(a2, x2, bounds, A, B),
            "scan": lambda: kernels.phase_carries(A, B, h02, carry),
            "expand": lambda: kernels.phase_expand(a2, x2, bounds, carry, h),
            "result": lambda: h.reshape(shape)}


# --------------------------------------------------------------------------- public entry points
_OPTS = {"sequential": {"out"}, "channels": {"groups", "out"},
         "chunked": {"chunks", "chunk", "lanes", "out"}, "cuda_chunked": {"block", "chunk"}}


def linear_recurrence(a, x, h0=None, *, method: str = "sequential", **opts):
    """``h_t = a_t * h_{t-1} + x_t`` for all t. ``a, x``: ``(T, H)`` or ``(T, B, H)``, float32/64;
    ``h0``: one step's shape or None (zeros). Returns ``h`` with the shape and dtype of ``x``.

    ``method`` (all give the float64 loop's numbers to round-off; module docstring;
    :func:`kernel_for` names the kernel a call runs):

    * ``"sequential"``; ``"channels"`` (opt ``groups``: channel groups, default the numba thread
      count); ``"hillis_steele"``; ``"blelloch"``;
    * ``"chunked"``: by default cache-blocked over the numba threads (opt ``chunk`` = steps per
      chunk, default :func:`chunk_steps`) with ``lanes`` SIMD lanes per channel (default
      :func:`choose_lanes`; 1 = the channel loop); small problems or one thread run the lanes on
      one thread; rows of 5..16 float32 channels (one vector, no lanes to add) run the sequential
      loop, the fastest form there (``chunk=``/``lanes=`` force the chunked scan). ``chunks=C`` runs the textbook split into C chunks instead (reduce -> carries ->
      expand over the whole sequence, on threads, no lanes);
    * ``"cuda_chunked"`` (opts ``block`` = CUDA threads per block, ``chunk`` = steps per CUDA thread;
      :mod:`course_lib.algorithms.scan_cuda`).

    ``"sequential"``, ``"channels"`` and ``"chunked"`` take ``out=``: a preallocated C-contiguous
    result array to write into. NaN/inf in ``a`` or ``x``, or a recurrence that overflows, raise
    ValueError naming the first time step and channel (see :func:`_check_result`)."""
    check_choice(method, "method", METHODS)
    a2, x2, h02, shape = _validate(a, x, h0)
    with np.errstate(over="ignore", invalid="ignore"):  # reported below, as a clear ValueError
        h = _run(method, a2, x2, h02, opts, x)
    _check_result(h, a2, x2, "a", "x")
    return h.reshape(shape)


def kernel_for(a, x, *, method: str = "sequential", threads: int | None = None, **opts) -> str:
    """The name of the kernel that ``linear_recurrence(a, x, method=method, **opts)`` runs with
    ``threads`` numba threads (default: the current count) -- one of :data:`KERNELS`: a function of
    :mod:`course_lib.algorithms.scan_kernels` (``"sequential"``, ``"channels"``, ``"chunked"``,
    ``"chunked_par"``, ``"lanes"``, ``"chunked_blocked"``), a numpy reference (``"hillis_steele"``,
    ``"blelloch"``) or ``"cuda_chunked"``. :func:`linear_recurrence` itself dispatches through the same choice."""
    check_choice(method, "method", METHODS)
    a2, _, _, _ = _validate(a, x, None)
    p = backend.get_threads() if threads is None else check_positive_int(threads, "threads")
    return _plan(method, a2.shape, a2.dtype.itemsize, opts, p)[0]


def _plan(method, shape, itemsize, opts, p):
    """The kernel for ``method`` on a validated ``(T, n)`` problem of ``itemsize``-byte numbers with ``p``
    numba threads: ``(name, args)``, ``args`` the kernel's arguments after ``(a, x, h0, h)``."""
    T, n = shape
    allowed = _OPTS.get(method, set())
    unknown = set(opts) - allowed
    if unknown:
        raise ValueError(f"opts: method {method!r} accepts {sorted(allowed) or 'no options'}, got {sorted(unknown)}")
    if method == "channels":
        groups = opts.get("groups")
        nb = p if groups is None else check_int(groups, "groups", low=1, high=n)
        return "channels", (np.linspace(0, n, min(nb, n) + 1).round().astype(np.int64),)
    if method != "chunked":
        return method, ()
    chunks, chunk, lanes = opts.get("chunks"), opts.get("chunk"), opts.get("lanes")
    if chunks is not None and (chunk is not None or lanes is not None):
        raise ValueError("opts: give chunks (the textbook split of the whole sequence) or chunk/lanes "
                         "(the cache-blocked scan), not both")
    if chunks is not None:
        bounds = kernels.chunk_bounds(T, check_int(chunks, "chunks", low=1, high=T))
        return ("chunked_par" if p > 1 else "chunked"), (bounds,)
    K = choose_lanes(n, itemsize) if lanes is None else check_power_of_two(lanes, "lanes")
    L = chunk_steps(n, itemsize) if chunk is None else check_int(chunk, "chunk", low=1)
    narrow = K == 1 and n * itemsize <= 64  # one vector per row and no lanes to add
    if chunk is None and lanes is None and narrow:
        # 5..16 float32 channels: the row already fills the vector, and splitting time into chunks
        # only adds a second dependent pass per element -- the loop is the fastest form here
        return "sequential", ()
    if chunk is None and choose_chunks(T, n, p) == 1:  # small problem or one thread: no threads
        return ("sequential", ()) if K == 1 else ("lanes", (K,))
    return "chunked_blocked", (p, L, K, kernels.x_chunk(L))


def _run(method, a2, x2, h02, opts, x):
    """Run ``method`` on validated ``(T, n)`` arrays; returns ``h (T, n)``."""
    name, args = _plan(method, a2.shape, a2.dtype.itemsize, opts, backend.get_threads())
    out = _check_out(opts.get("out"), x)
    if name == "hillis_steele":
        return _hillis_steele(a2, x2, h02)[0]
    if name == "blelloch":
        return _blelloch(a2, x2, h02)[0]
    if name == "cuda_chunked":
        from . import scan_cuda

        return scan_cuda.linear_recurrence_cuda(a2, x2, h02, **opts)
    h = np.empty_like(a2) if out is None else out.reshape(a2.shape)
    getattr(kernels, name)(a2, x2, h02, h, *args)
    return h


def _check_result(h, a, x, name_a, name_x, *, reversed_time=False):
    """Raise ValueError if the recurrence produced NaN/inf, at O(channels) cost.

    Only multiplications and additions happen, so a non-finite value never becomes finite
    again (``0 * inf`` and ``0 * nan`` are NaN): the last time step is non-finite in a channel
    exactly when some earlier one was. Only then is that channel searched for the first bad step.
    """
    last = h[-1]
    if np.all(np.isfinite(last)):
        return
    c = int(np.argmin(np.isfinite(last)))
    t = int(np.argmin(np.isfinite(h[:, c])))
    T = h.shape[0]
    step = T - 1 - t if reversed_time else t
    culprit = "non-finite input" if not (np.isfinite(a[t, c]) and np.isfinite(x[t, c])) else \
        "overflow: |a| > 1 made h grow without bound"
    raise ValueError(
        f"{name_a}, {name_x}: the recurrence became non-finite at time step {step}, channel {c} "
        f"({name_a}={a[t, c]}, {name_x}={x[t, c]}): {culprit}")


def _check_out(out, x):
    """``out``: an optional preallocated, C-contiguous result array of x's shape and dtype. Reusing
    one saves the page faults of a fresh allocation (first touch of new memory is slow, and
    serialised between threads)."""
    if out is None:
        return None
    out = check_array(out, "out", shape=np.shape(x), dtype=np.asarray(x).dtype, finite=False, contiguous=True)
    return out


def linear_recurrence_backward(a, h, h0, grad_h, *, method: str = "sequential", **opts):
    """Gradients of a loss L through ``h = linear_recurrence(a, x, h0)``, by the reverse scan::

        g_t = a_{t+1} g_{t+1} + dL/dh_t    (g_{T-1} = dL/dh_{T-1})
        dL/da_t = h_{t-1} g_t,   dL/dx_t = g_t,   dL/dh0 = a_0 g_0

    ``a, h, grad_h``: ``(T, H)`` or ``(T, B, H)``; ``h0``: one step's shape or None (zeros).
    Returns ``(grad_a, grad_x, grad_h0)``; ``method`` (and ``opts``) run the reverse scan, any of
    :data:`METHODS` -- the backward pass is the same scan, so it gets the same parallelism."""
    check_choice(method, "method", METHODS)
    a2, h2, h02, shape = _validate(a, h, h0, "a", "h", "h0")
    _, g2, _, _ = _validate(a, grad_h, None, "a", "grad_h")
    a_rev = np.empty_like(a2)  # a_{t+1}, reversed in time
    a_rev[0] = 0
    a_rev[1:] = a2[:0:-1]
    g_rev = np.ascontiguousarray(g2[::-1])
    with np.errstate(over="ignore", invalid="ignore"):
        g_rev_out = _run(method, a_rev, g_rev, np.zeros_like(h02), opts, g_rev)
    _check_result(g_rev_out, a_rev, g_rev, "a", "grad_h", reversed_time=True)
    g = np.ascontiguousarray(g_rev_out[::-1])
    grad_a = np.empty_like(h2)
    with np.errstate(over="ignore", invalid="ignore"):
        np.multiply(h02, g[0], out=grad_a[0])          # dL/da_t = h_{t-1} g_t, h_{-1} = h0
        np.multiply(h2[:-1], g[1:], out=grad_a[1:])   # one pass, no shifted copy of h
        grad_h0 = a2[0] * g[0]
    # the reverse scan never reads h or a[0]: a NaN there shows up only in grad_a / grad_h0
    # (x * NaN is NaN for every x), so checking them (one pass) catches every non-finite input
    if not (np.isfinite(grad_a).all() and np.isfinite(grad_h0).all()):
        check_array(h2, "h", dtype=None)
        check_array(a2[:1], "a", dtype=None)
        raise ValueError("a, h, grad_h: the gradients overflowed (|a| > 1 or huge values)")
    return grad_a.reshape(shape), g.reshape(shape), grad_h0.reshape(shape[1:])
