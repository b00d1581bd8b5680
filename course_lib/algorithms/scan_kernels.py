"""The numba kernels of :mod:`course_lib.algorithms.scan` (algorithms folder): the loops that run
``h_t = a_t h_{t-1} + x_t`` over validated C-contiguous ``(T, n)`` arrays (``n`` = channels), writing ``h (T, n)``.

Callers go through :func:`course_lib.algorithms.scan.linear_recurrence`, which validates the input, picks the
kernel (:func:`course_lib.algorithms.scan.kernel_for` names it) and checks the result. The kernels:

``sequential(a, x, h0, h)``                 the loop over time, channels in the inner (vectorised) loop
``channels(a, x, h0, h, bounds)``           parallel over channel groups, each the serial loop (``channel_group``)
``chunked(a, x, h0, h, bounds)``            the textbook split: reduce chunks -> carries -> expand, one thread
``chunked_par(a, x, h0, h, bounds)``        the same on numba threads
``lanes(a, x, h0, h, K)``                   one thread, K SIMD lanes per channel over time (one channel with
                                            16 lanes: :mod:`~course_lib.algorithms.scan_lanes`' L1 blocks)
``flat_lanes(n, K)``                         whether ``n`` channels on ``K`` lanes run ``scan_lanes`` (one channel)
``chunked_blocked(a, x, h0, h, p, L, K, c0)``  p threads, cache-blocked and pipelined, lanes or the channel loop
``phase_reduce``, ``phase_carries``, ``phase_expand``  the textbook split's three phases (timed one by one)
``level(sA, sB, dA, dB, d, N)``             one doubling pass of the lane windows
``chunk_bounds(T, C)``, ``x_chunk(L)``      the chunk splits the kernels expect
``product(a, out)``                         the flushed product of ``a (T, n)`` over time, into ``out (n,)``
``stream(a, x, h)``                         no recurrence, the same bytes: ``h = a + x`` on threads (the bandwidth
                                            reference a scan is measured against)

Every running product of many factors here is *flushed*: a value below ``TINY`` becomes 0. Factors in
[0.5, 1) do not underflow to 0 by themselves -- under round-to-nearest a product sticks at the smallest
subnormal (``2^-149 * a`` rounds back to ``2^-149`` for ``a > 0.5``; float64: ``5e-324``) -- and every later
multiply of a subnormal takes a microcode assist on many CPUs (chapter 08 measures 12.7x on an Intel Xeon).
A flushed product of factors with ``|a| <= 1`` is off by less than ``TINY`` (absolutely): beside the
``B``/``x`` terms the product multiplies, far below float32 round-off.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..core.validate import check_positive_int
from . import scan_lanes

__all__ = [
    "TINY",
    "LANE_TILE",
    "sequential",
    "channels",
    "channel_group",
    "chunked",
    "chunked_par",
    "lanes",
    "flat_lanes",
    "chunked_blocked",
    "phase_reduce",
    "phase_carries",
    "phase_expand",
    "level",
    "chunk_bounds",
    "x_chunk",
    "product",
    "stream",
    "STREAM_BLOCK",
]

TINY = scan_lanes.TINY  # running products below this are flushed to zero (subnormal arithmetic is slow)

# --------------------------------------------------------------------------- sequential (numba)
@njit(cache=True)
def sequential(a, x, h0, h):
    """h[t] = a[t] * h[t-1] + x[t] over (T, N) from the carry ``h0``; channels in the inner
    (vectorised) loop. The chunked scans use it to expand each chunk from its carry."""
    T, n = a.shape
    prev = h0.copy()
    for t in range(T):
        at = a[t]
        xt = x[t]
        ht = h[t]
        for j in range(n):
            prev[j] = at[j] * prev[j] + xt[j]
            ht[j] = prev[j]


@njit(cache=True)
def _product_rows(a, out):
    """``out (n,) = a[0] * ... * a[T-1]`` over the rows of ``a (T, n)``, flushed below TINY (NaN stays NaN);
    channels in the inner (vectorised) loop, one multiply and a select each."""
    T, n = a.shape
    tiny = out.dtype.type(TINY)
    zero = out.dtype.type(0)
    for j in range(n):
        out[j] = 1.0
    for t in range(T):
        at = a[t]
        for j in range(n):
            p = out[j] * at[j]
            out[j] = p if not (abs(p) < tiny) else zero


def product(a, out):
    """``out[j] = a[0, j] * ... * a[T-1, j]`` for C-contiguous ``a (T, n)``, accumulated in ``out``'s dtype
    ``(n,)`` (float64 for float32 factors is fine), every running product below ``TINY`` flushed to 0 (module
    docstring): it never runs on subnormals. Fewer than 16 channels get ``16 // n`` independent chains over time
    (rows of ``K n`` steps x channels, as chapter 08's lanes), joined at the end. Returns ``out``."""
    T, n = a.shape
    K = 1 if n >= 16 else 16 // n
    R = T // K
    if K == 1 or R == 0:
        _product_rows(a, out)
        return out
    parts = np.ones((2, K * n), out.dtype)       # K chains per channel; the remainder's product after them
    _product_rows(a[:R * K].reshape(R, K * n), parts[0])
    _product_rows(a[R * K:], parts[1, :n])
    _product_rows(parts.reshape(2 * K, n), out)
    return out


# --------------------------------------------------------------------------- chunked (numba, parallel)
@njit(cache=True)
def _reduce_chunk(a, x, A, B):
    """Compose the pairs of one chunk ``(L, n)``: ``A = prod a`` (flushed to 0 below TINY; NaN stays
    NaN), ``B`` = the chunk's last h when it starts from 0. Loops from 0 over sliced rows (faster
    than range(s, e) with a run-time start)."""
    L, n = a.shape
    tiny = a.dtype.type(TINY)  # compare in the array's dtype: a float64 constant would widen the loop
    zero = a.dtype.type(0)
    for j in range(n):
        A[j] = 1.0
        B[j] = 0.0
    for t in range(L):
        at = a[t]
        xt = x[t]
        for j in range(n):
            p = A[j] * at[j]
            A[j] = p if not (abs(p) < tiny) else zero  # flush: subnormal products are very slow
            B[j] = at[j] * B[j] + xt[j]


@njit(cache=True)
def chunked(a, x, h0, h, bounds):
    """The textbook split, serial: reduce every chunk but the last -> scan the chunk carries ->
    expand every chunk from its carry. (:func:`chunked_par` is the same on threads.)"""
    C = bounds.shape[0] - 1
    n = a.shape[1]
    A = np.empty((C, n), a.dtype)
    B = np.empty((C, n), a.dtype)
    carry = np.empty((C, n), a.dtype)
    phase_reduce(a, x, bounds, A, B)
    phase_carries(A, B, h0, carry)
    phase_expand(a, x, bounds, carry, h)


@njit(cache=True)
def phase_reduce(a, x, bounds, A, B):
    for c in range(bounds.shape[0] - 2):
        s, e = bounds[c], bounds[c + 1]
        _reduce_chunk(a[s:e], x[s:e], A[c], B[c])


@njit(cache=True)
def phase_carries(A, B, h0, carry):
    """carry[c] = h just before chunk c (a serial scan over the C chunks)."""
    carry[0] = h0
    for c in range(1, carry.shape[0]):
        for j in range(carry.shape[1]):
            carry[c, j] = A[c - 1, j] * carry[c - 1, j] + B[c - 1, j]


@njit(cache=True)
def phase_expand(a, x, bounds, carry, h):
    for c in range(bounds.shape[0] - 1):
        s, e = bounds[c], bounds[c + 1]
        sequential(a[s:e], x[s:e], carry[c], h[s:e])


@njit(cache=True, parallel=True)
def chunked_par(a, x, h0, h, bounds):
    """The textbook split on threads: reduce every chunk but the last (chunk 0 is scanned outright:
    its carry in is h0) -> scan the chunk carries (serial, C steps) -> expand chunks 1.. in parallel."""
    C = bounds.shape[0] - 1
    n = a.shape[1]
    A = np.empty((C, n), a.dtype)
    B = np.empty((C, n), a.dtype)
    for c in prange(C):
        s, e = bounds[c], bounds[c + 1]
        if c == 0:
            sequential(a[s:e], x[s:e], h0, h[s:e])
        elif c < C - 1:
            _reduce_chunk(a[s:e], x[s:e], A[c], B[c])
    carry = np.empty((C, n), a.dtype)  # carry[c] = h just before chunk c
    carry[0] = h0
    if C > 1:
        carry[1] = h[bounds[1] - 1]
    for c in range(2, C):
        for j in range(n):
            carry[c, j] = A[c - 1, j] * carry[c - 1, j] + B[c - 1, j]
    for c in prange(1, C):
        s, e = bounds[c], bounds[c + 1]
        sequential(a[s:e], x[s:e], carry[c], h[s:e])


# --------------------------------------------------------------------------- SIMD lanes over time
LANE_TILE = 8192  # elements per tile of the lane kernels: 4 scratch arrays of 32 KB (float32) stay in L2


@njit(cache=True)
def level(sA, sB, dA, dB, d, N):
    """One doubling pass over a tile of N elements: ``(dA, dB)[i] = (sA, sB)[i-d] o (sA, sB)[i]``
    for ``i >= d`` (a copy below). Written over slices so that numba vectorises it."""
    z = sA.dtype.type(0)
    tiny = sA.dtype.type(TINY)  # in the arrays' dtype: a float64 constant halves the vector width
    for i in range(min(d, N)):
        dA[i] = sA[i]
        dB[i] = sB[i]
    if d >= N:
        return
    ar = sA[d:N]
    al = sA[:N - d]
    br = sB[d:N]
    bl = sB[:N - d]
    oa = dA[d:N]
    ob = dB[d:N]
    for i in range(N - d):
        p = ar[i] * al[i]
        oa[i] = p if not (abs(p) < tiny) else z
        ob[i] = ar[i] * bl[i] + br[i]


@njit(cache=True)
def _windows(a, x, n, W, scratch):
    """Windows of ``K = W / n`` steps for a flat tile ``a, x (N,)`` of n channels: returns arrays
    (A, B) with ``(A, B)[i]`` = the composition of the pairs of the last K steps up to element i,
    truncated at the tile start. ``scratch (4, >= N)``. ``log2 K`` passes of :func:`level`."""
    N = a.shape[0]
    d = n
    lev = 0
    while d < W:
        if lev == 0:
            level(a, x, scratch[0], scratch[1], d, N)
        elif lev % 2 == 1:
            level(scratch[0], scratch[1], scratch[2], scratch[3], d, N)
        else:
            level(scratch[2], scratch[3], scratch[0], scratch[1], d, N)
        lev += 1
        d *= 2
    if lev == 0:
        return a, x
    if lev % 2 == 1:
        return scratch[0][:N], scratch[1][:N]
    return scratch[2][:N], scratch[3][:N]


@njit(cache=True)
def _lanes_rows(A, B, carry, h, n, W, prev):
    """The second half of a lane scan, over one tile: ``h_t = A_t h_{t-K} + B_t`` row by row (rows of
    ``W = K n`` elements, each lane its own chain, run by the vectorised :func:`sequential`) from the
    windows ``A, B (N,)`` of the tile, starting from ``carry (n,)``; leaves ``carry`` = the tile's
    last step."""
    N = A.shape[0]
    for k in range(W):
        prev[k] = carry[k % n]
    R = N // W
    if R:
        sequential(A[:R * W].reshape(R, W), B[:R * W].reshape(R, W), prev, h[:R * W].reshape(R, W))
        if R * W < N:
            for k in range(W):
                prev[k] = h[R * W - W + k]
    o = R * W
    for k in range(N - o):
        h[o + k] = A[o + k] * prev[k] + B[o + k]
    for j in range(n):
        carry[j] = h[N - n + j]


@njit(cache=True)
def _lanes_scan(a, x, carry, h, n, K, scratch, prev):
    """Scan the flat range ``a, x -> h`` (``T * n`` elements, time-major) from ``carry (n,)`` with
    ``K`` SIMD lanes per channel, tile by tile: windows of K steps (:func:`_windows`), then the rows
    (:func:`_lanes_rows`). Leaves ``carry`` = the last step's h."""
    W = K * n
    tile = max(W, (LANE_TILE // W) * W)
    total = a.shape[0]
    s = 0
    while s < total:
        e = min(total, s + tile)
        A, B = _windows(a[s:e], x[s:e], n, W, scratch)
        _lanes_rows(A, B, carry, h[s:e], n, W, prev)
        s = e


@njit(cache=True)
def _lanes_expand(WA, WB, carry, h, n, K, prev):
    """Expand a chunk whose windows ``WA, WB`` (flat, as :func:`_lanes_reduce` kept them) are still
    in this core's cache: only the rows remain to be run (no :func:`_windows` pass)."""
    W = K * n
    tile = max(W, (LANE_TILE // W) * W)
    total = WA.shape[0]
    c = carry.copy()
    s = 0
    while s < total:
        e = min(total, s + tile)
        _lanes_rows(WA[s:e], WB[s:e], c, h[s:e], n, W, prev)
        s = e


@njit(cache=True)
def _lanes_reduce(a, x, n, K, scratch, PA, PB, A_out, B_out, WA, WB):
    """Compose all pairs of the flat range ``a, x`` (``L * n`` elements) into ``(A_out, B_out) (n,)``
    with K lanes per channel: windows per tile, then every lane composes its chain over the rows
    (:func:`_reduce_chunk`), and the lanes that hold each channel's last step give the tile's pair.
    The windows are kept in ``WA, WB`` (flat, ``L * n``) for :func:`_lanes_expand`, which then skips
    the window passes."""
    W = K * n
    tile = max(W, (LANE_TILE // W) * W)
    total = a.shape[0]
    tiny = a.dtype.type(TINY)
    zero = a.dtype.type(0)
    for j in range(n):
        A_out[j] = 1.0
        B_out[j] = 0.0
    s = 0
    while s < total:
        e = min(total, s + tile)
        N = e - s
        A, B = _windows(a[s:e], x[s:e], n, W, scratch)
        WA[s:e] = A
        WB[s:e] = B
        R = N // W
        if R:
            _reduce_chunk(A[:R * W].reshape(R, W), B[:R * W].reshape(R, W), PA, PB)
        else:
            for k in range(W):
                PA[k] = 1.0
                PB[k] = 0.0
        o = R * W
        for k in range(N - o):
            p = A[o + k] * PA[k]
            PA[k] = p if not (abs(p) < tiny) else zero
            PB[k] = A[o + k] * PB[k] + B[o + k]
        for j in range(n):
            k = (N - n + j) % W
            p = PA[k] * A_out[j]
            B_out[j] = PA[k] * B_out[j] + PB[k]
            A_out[j] = p if not (abs(p) < tiny) else zero
        s = e


@njit(cache=True)
def flat_lanes(n, K):
    """Whether ``n`` channels with ``K`` lanes run :mod:`~course_lib.algorithms.scan_lanes` (one channel, 16
    lanes: windows made in L1 blocks in two passes) rather than the windows of :func:`_windows`."""
    return n == 1 and K == scan_lanes.LANES


@njit(cache=True)
def lanes(a, x, h0, h, K):
    """One thread, K lanes per channel, over the whole ``(T, n)`` problem."""
    T, n = a.shape
    if flat_lanes(n, K):
        scan_lanes.scan(a.reshape(T), x.reshape(T), h0.copy(), h.reshape(T))
        return
    W = K * n
    scratch = np.empty((4, max(W, (LANE_TILE // W) * W)), a.dtype)
    prev = np.empty(W, a.dtype)
    carry = h0.copy()
    _lanes_scan(a.reshape(T * n), x.reshape(T * n), carry, h.reshape(T * n), n, K, scratch, prev)


@njit(cache=True)
def _chunk_scan(a, x, carry, h, K, scratch, prev):
    """Scan one chunk ``(L, n)`` from ``carry``: the channel loop (K = 1) or K lanes."""
    L, n = a.shape
    if K == 1:
        sequential(a, x, carry, h)
    elif flat_lanes(n, K):
        scan_lanes.scan(a.reshape(L), x.reshape(L), carry.copy(), h.reshape(L))
    else:
        c = carry.copy()
        _lanes_scan(a.reshape(L * n), x.reshape(L * n), c, h.reshape(L * n), n, K, scratch, prev)


@njit(cache=True)
def _chunk_reduce(a, x, A, B, K, scratch, PA, PB, WA, WB):
    """Compose one chunk ``(L, n)`` into ``(A, B) (n,)``: the channel loop (K = 1) or K lanes (which
    keep the chunk's windows in ``WA, WB`` for :func:`_lanes_expand`; one channel on 16 lanes keeps nothing)."""
    L, n = a.shape
    if K == 1:
        _reduce_chunk(a, x, A, B)
    elif flat_lanes(n, K):
        AB = np.empty(2, a.dtype)
        scan_lanes.compose(a.reshape(L), x.reshape(L), AB)
        A[0] = AB[0]
        B[0] = AB[1]
    else:
        _lanes_reduce(a.reshape(L * n), x.reshape(L * n), n, K, scratch, PA, PB, A, B, WA[:L * n], WB[:L * n])


@njit(cache=True)
def _chunk_expand(a, x, carry, h, K, WA, WB, prev):
    """Expand one chunk ``(L, n)`` that this thread reduced: the channel loop re-reads ``a, x`` from
    its cache (K = 1; one channel on 16 lanes, :mod:`~course_lib.algorithms.scan_lanes`, too); with other
    lanes the kept windows leave only the rows to run."""
    L, n = a.shape
    if K == 1:
        sequential(a, x, carry, h)
    elif flat_lanes(n, K):
        scan_lanes.scan(a.reshape(L), x.reshape(L), carry.copy(), h.reshape(L))
    else:
        _lanes_expand(WA[:L * n], WB[:L * n], carry, h.reshape(L * n), n, K, prev)


@njit(cache=True, parallel=True)
def chunked_blocked(a, x, h0, h, p, L, K, c0):
    """The chunked scan on ``p`` threads, cache-blocked and pipelined. Time is cut into rounds, each
    a chunk X (``c0`` steps) followed by chunks Y^1..Y^{p-1} (``L`` steps each). In round i

    * thread 0 scans X_i from the carry (h just before it) -- one pass over memory;
    * thread k >= 1 first expands Y_{i-1}^k, the chunk it reduced in the previous round -- ``a`` and
      ``x`` (or, with lanes, the windows computed from them) are still in its cache, so this costs
      no memory traffic but writing ``h`` -- then reduces Y_i^k to one pair (A, B);

    then, between rounds (serial, p steps), the carries are composed: h before Y_i^1 is the end of
    X_i, h before Y_i^{k+1} is (A, B)^k applied to it, and so on to the next round's carry. A last
    round only expands. Every element of ``a`` and ``x`` thus crosses the memory bus once (12 bytes
    per element with ``h``, as in the serial loop), every thread is busy in every round, and rounds
    are separated by one join. ``prange(p)`` hands iteration k to thread k (static schedule), which
    keeps a reduced chunk and its expansion on the same core. Inside a chunk each thread runs the
    channel loop (``K = 1``) or ``K`` SIMD lanes per channel (:func:`_lanes_scan`)."""
    T, n = a.shape
    W = K * n
    tile = max(W, (LANE_TILE // W) * W)
    scratch = np.empty((p, 4, tile), a.dtype)
    lane = np.empty((p, 3, W), a.dtype)  # prev, PA, PB per thread
    keep = L * n if K > 1 and not flat_lanes(n, K) else 0
    WA = np.empty((p, keep), a.dtype)  # windows kept between reduce and expand (lanes only)
    WB = np.empty((p, keep), a.dtype)
    A = np.empty((p, n), a.dtype)
    B = np.empty((p, n), a.dtype)
    starts = np.empty((p, n), a.dtype)  # starts[k]: h just before Y^k of the last round
    carry = h0.copy()                    # h just before X of this round
    prev = np.zeros(p + 1, np.int64)     # chunk bounds of the last round (nothing yet)
    cur = np.zeros(p + 1, np.int64)
    s0 = 0
    while True:
        e0 = min(T, s0 + c0 + (p - 1) * L)
        cur[0] = min(T, s0)
        cur[1] = min(e0, s0 + c0)
        for k in range(2, p + 1):
            cur[k] = min(e0, cur[k - 1] + L)
        for k in prange(p):
            kk = np.int64(k)  # prange's index may be unsigned; keep the chunk index an int64
            if kk == 0:
                if cur[1] > cur[0]:
                    _chunk_scan(a[cur[0]:cur[1]], x[cur[0]:cur[1]], carry, h[cur[0]:cur[1]], K, scratch[0],
                                lane[0, 0])
            else:
                s, e = prev[kk], prev[kk + 1]
                if e > s:
                    _chunk_expand(a[s:e], x[s:e], starts[kk], h[s:e], K, WA[kk], WB[kk], lane[kk, 0])
                s, e = cur[kk], cur[kk + 1]
                if e > s:
                    _chunk_reduce(a[s:e], x[s:e], A[kk], B[kk], K, scratch[kk], lane[kk, 1], lane[kk, 2],
                                  WA[kk], WB[kk])
        if s0 >= T:  # that was the last round: expansions only
            break
        for j in range(n):
            carry[j] = h[cur[1] - 1, j]  # the end of X
        for k in range(1, p):
            starts[k] = carry
            if cur[k + 1] > cur[k]:
                for j in range(n):
                    carry[j] = A[k, j] * carry[j] + B[k, j]
        for k in range(p + 1):
            prev[k] = cur[k]
        s0 = e0


def x_chunk(L: int) -> int:
    """Length of chunk X of :func:`chunked_blocked` for Y chunks of ``L`` steps. Thread 0 makes one
    pass over X while every other thread reduces a Y (one pass) and expands the previous one from
    its cache (a lighter pass): X gets a third more steps than a Y, which balanced the threads on
    the course's test machines for the channel loop and for lanes alike. (One channel on 16 lanes,
    :mod:`~course_lib.algorithms.scan_lanes`, on one Zen 5 core by CPU time: a scan from memory 0.83 ns per
    step against a fold from memory 0.36 plus a rescan from cache 0.66 -- X = 1.23 Y would balance them.)"""
    return max(1, (4 * check_positive_int(L, "L")) // 3)


@njit(cache=True, parallel=True)
def channels(a, x, h0, h, bounds):
    """Parallel over channel groups: each thread runs the serial loop over the whole time axis on its
    channels ``bounds[b]:bounds[b+1]`` (:func:`channel_group`)."""
    nb = bounds.shape[0] - 1
    for b in prange(nb):
        channel_group(a, x, h0, h, bounds[b], bounds[b + 1])


@njit(cache=True)
def channel_group(a, x, h0, h, s, e):
    """The serial loop on channels ``s:e`` of C-contiguous ``(T, N)`` arrays. It slices each *row*
    (``a[t, s:e]``: contiguous, so the inner loop vectorises) rather than taking the column block
    ``a[:, s:e]`` once: numba compiles that strided 2-D view for any layout and the loop loses its SIMD
    (measured 2.5x slower at T = 16384, N = 128 on one thread)."""
    prev = h0[s:e].copy()
    n = e - s
    for t in range(a.shape[0]):
        at = a[t, s:e]
        xt = x[t, s:e]
        ht = h[t, s:e]
        for j in range(n):
            prev[j] = at[j] * prev[j] + xt[j]
            ht[j] = prev[j]


def chunk_bounds(T: int, C: int) -> np.ndarray:
    """Chunk 0 gets 2/3 of the others' length: it does a full scan (read a, x, write h) while the
    others only reduce (read a, x), so both finish together."""
    if C == 1:
        return np.array([0, T], np.int64)
    L = T / (C - 1 + 2 / 3)
    first = int(round(2 * L / 3))
    rest = np.linspace(first, T, C).round().astype(np.int64)
    return np.concatenate([[0], rest]).astype(np.int64)


STREAM_BLOCK = 1 << 14  # elements per block of :func:`stream`: long enough for the vector loop, many blocks per thread


@njit(cache=True, parallel=True)
def stream(a, x, h):
    """``h = a + x`` over C-contiguous ``(T, n)`` arrays, taken flat in blocks of ``STREAM_BLOCK`` elements spread
    over the numba threads: the recurrence's memory traffic (read ``a`` and ``x``, write ``h``: 12 bytes per float32
    element) without its dependency -- the fastest any scan of these arrays can be when memory is the limit. (Flat,
    so that a row of one channel does not make it a loop of one element per row.)"""
    af, xf, hf = a.reshape(a.size), x.reshape(x.size), h.reshape(h.size)
    N = af.shape[0]
    for b in prange((N + STREAM_BLOCK - 1) // STREAM_BLOCK):
        s = b * STREAM_BLOCK
        e = min(N, s + STREAM_BLOCK)
        ao, xo, ho = af[s:e], xf[s:e], hf[s:e]
        for i in range(e - s):
            ho[i] = ao[i] + xo[i]
