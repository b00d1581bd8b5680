"""One channel on 16 SIMD lanes over time, in L1-sized blocks (algorithms folder): the numba kernels that
:mod:`course_lib.algorithms.scan_kernels` runs for ``h_t = a_t h_{t-1} + x_t`` when there is a single channel
(``H = 1``: flat arrays ``a, x, h (N,)``) and 16 lanes.

**The idea.** One channel's loop is one chain of dependent multiply-adds: each step waits for the last. Give
lane ``l`` of a 16-wide vector every 16th step instead (``t = 16 r + l``): if ``(A_t, B_t)`` is the composition
of the 16 pairs ``t-15 .. t`` (a *window*), then ``h_t = A_t h_{t-16} + B_t`` -- one vector multiply-add moves
all 16 lanes one row on. The windows are made in two passes over a block that stays in L1 cache:

``_quads``          windows of 4 steps ``(QA, QB)[t]`` from ``a, x`` (four contiguous, shifted loads each)
``_window``         a window of 16 steps from four quads (steps ``t-12, t-8, t-4, t``)
``rows_scan``       row by row, ``h_t = A_t h_{t-16} + B_t`` for 16 lanes at once, writing h

The reduce of a chunked scan wants only the pair of a whole range, not every h, and folds instead:

``_fold4``          the pair of every 4 consecutive steps (a quarter as many pairs; stride-4 loads, vectorised)
``_fold_block``     folds of 4 over one L1 block until a few pairs are left

Every element of ``a`` and ``x`` is read from memory once (and ``h`` written once), with a few dozen vector
operations per 16 elements and no ``log2 16`` passes over scratch arrays. The entry points:

``scan(a, x, carry, h)``          ``h`` from the carry (the h just before ``a[0]``); ``carry`` left = ``h[-1]``
``compose(a, x, out)``            ``out = (A, B)``: the whole range as one pair, ``h_end = A h_before + B``

Running products are flushed below ``TINY`` (as everywhere in :mod:`~course_lib.algorithms.scan_kernels`): a
product of many factors in [0.5, 1) would otherwise stick at the smallest subnormal and slow every later
multiply. A flushed product is off by less than ``TINY`` absolutely, far below float32 round-off.
"""
from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["TINY", "LANES", "BLOCK", "scan", "compose", "rows_scan"]

TINY = 1e-30  # running products below this are flushed to zero (subnormal arithmetic is slow)
LANES = 16    # lanes per row: 16 float32 = one 512-bit vector (two 256-bit ones)
BLOCK = 2048  # steps per block: a, x, h and the quads of one block (40 KB of float32) stay in L1
_HEAD = 3 * 4  # the quads of a block start 12 steps before it (its first window reaches back 15 steps)


@njit(cache=True)
def _flush(p, tiny, zero):
    """``p``, or 0 where ``|p| < tiny`` (NaN stays NaN)."""
    return p if not (abs(p) < tiny) else zero


@njit(cache=True, fastmath={"contract"})
def _quads(a, x, s, m, QA, QB):
    """Windows of 4 steps for ``t = s .. s+m-1`` (``s >= 3``) of flat ``a, x (N,)`` into ``QA, QB (>= m,)``:
    ``QA[i] = a[t] a[t-1] a[t-2] a[t-3]`` (flushed) and ``QB[i]`` = h at t from h = 0 before ``t-3``, ``t = s+i``.
    The four shifted slices make the loop four contiguous loads per array (it vectorises)."""
    tiny = a.dtype.type(TINY)  # in the array's dtype: a float64 constant would halve the vector width
    zero = a.dtype.type(0)
    a0, a1, a2, a3 = a[s:s + m], a[s - 1:s - 1 + m], a[s - 2:s - 2 + m], a[s - 3:s - 3 + m]
    x0, x1, x2, x3 = x[s:s + m], x[s - 1:s - 1 + m], x[s - 2:s - 2 + m], x[s - 3:s - 3 + m]
    for i in range(m):
        p = _flush(a0[i] * a1[i], tiny, zero)
        QA[i] = _flush(p * (a2[i] * a3[i]), tiny, zero)
        QB[i] = ((x3[i] * a2[i] + x2[i]) * a1[i] + x1[i]) * a0[i] + x0[i]


@njit(cache=True, fastmath={"contract"})
def _window(q0, q1, q2, q3, b0, b1, b2, b3, tiny, zero):
    """The 16-step window ``(A, B)`` of a step from the quads of steps ``t-12, t-8, t-4, t`` (oldest first)."""
    A = _flush(_flush(q3 * q2, tiny, zero) * _flush(q1 * q0, tiny, zero), tiny, zero)
    B = ((b0 * q1 + b1) * q2 + b2) * q3 + b3
    return A, B


@njit(cache=True, fastmath={"contract"})
def rows_scan(QA, QB, c, h):
    """Rows of 16 lanes over one block: ``QA, QB (m + 12,)`` the quads of the block's steps and of the 12
    before it, ``h (m,)`` the block's output, ``m`` a multiple of 16. Step ``j`` of the block takes its window
    from quads ``j, j+4, j+8, j+12`` (:func:`_window`) and moves lane ``l = j % 16`` on by 16 steps:
    ``c[l] = A c[l] + B``, ``h[j] = c[l]``. ``c (16,)``: the 16 steps before the block in, its last 16 out."""
    tiny = QA.dtype.type(TINY)
    zero = QA.dtype.type(0)
    m = h.shape[0]
    for r in range(m // LANES):
        for l in range(LANES):
            j = r * LANES + l
            A, B = _window(QA[j], QA[j + 4], QA[j + 8], QA[j + 12], QB[j], QB[j + 4], QB[j + 8], QB[j + 12], tiny, zero)
            c[l] = A * c[l] + B
            h[j] = c[l]


@njit(cache=True)
def _run(a, x, c, h):
    """Lanes over flat ``a, x (N,)``, ``N >= 32``, whose first 16 steps are already in ``h`` and ``c``, block by
    block (:func:`_quads`, then :func:`rows_scan`) up to the last full row; returns the step where that ended."""
    N = a.shape[0]
    QA = np.empty(BLOCK + _HEAD, a.dtype)
    QB = np.empty(BLOCK + _HEAD, a.dtype)
    s = LANES
    while N - s >= LANES:
        m = min(BLOCK, (N - s) // LANES * LANES)
        _quads(a, x, s - _HEAD, m + _HEAD, QA, QB)
        rows_scan(QA, QB, c, h[s:s + m])
        s += m
    return s


@njit(cache=True)
def scan(a, x, carry, h):
    """``h[t] = a[t] h[t-1] + x[t]`` over flat ``a, x, h (N,)`` from ``carry (1,)`` (h just before ``a[0]``);
    leaves ``carry`` = ``h[N-1]``. The first 16 steps and the last ``< 16`` run the plain loop; short ranges
    (under two rows) run it throughout."""
    N = a.shape[0]
    prev = carry[0]
    head = N if N < 2 * LANES else LANES
    for t in range(head):
        prev = a[t] * prev + x[t]
        h[t] = prev
    if head < N:
        c = h[:LANES].copy()
        s = _run(a, x, c, h)
        prev = h[s - 1]
        for t in range(s, N):
            prev = a[t] * prev + x[t]
            h[t] = prev
    if N:
        carry[0] = prev


@njit(cache=True, fastmath={"contract"})
def _fold4(a, x, m, A, B):
    """``(A, B)[i]`` = the pair of steps ``4i .. 4i+3`` of ``a, x`` for ``i < m``: a quarter as many pairs. The
    loads have stride 4; the compiler de-interleaves four vectors with shuffles (it vectorises)."""
    tiny = a.dtype.type(TINY)
    zero = a.dtype.type(0)
    for i in range(m):
        a1, a2, a3 = a[4 * i + 1], a[4 * i + 2], a[4 * i + 3]
        A[i] = _flush(_flush(a[4 * i] * a1, tiny, zero) * _flush(a2 * a3, tiny, zero), tiny, zero)
        B[i] = ((x[4 * i] * a1 + x[4 * i + 1]) * a2 + x[4 * i + 2]) * a3 + x[4 * i + 3]


@njit(cache=True)
def _then(pa, pb, qa, qb, tiny, zero):
    """The pair ``(pa, pb)`` followed by ``(qa, qb)``: ``h -> qa (pa h + pb) + qb``."""
    return _flush(qa * pa, tiny, zero), qa * pb + qb


@njit(cache=True)
def _serial(a, x, s, e, pa, pb, tiny, zero):
    """``(pa, pb)`` followed by the steps ``s .. e-1`` of ``a, x``, one at a time."""
    for t in range(s, e):
        pa, pb = _then(pa, pb, a[t], x[t], tiny, zero)
    return pa, pb


@njit(cache=True)
def _fold_block(a, x, A1, B1, A2, B2):
    """The pair of a block ``a, x (n,)``, ``n <= BLOCK``: folds of 4 (:func:`_fold4`) into ``A1, B1 (BLOCK/4,)``,
    then back and forth with ``A2, B2 (BLOCK/16,)`` until under 16 pairs are left, which run one at a time. The
    up to 3 pairs a fold leaves over at its end come after everything before them: they join the ``tail``."""
    tiny = a.dtype.type(TINY)
    zero = a.dtype.type(0)
    n = a.shape[0]
    if n < 16:
        return _serial(a, x, 0, n, a.dtype.type(1), zero, tiny, zero)
    m = n // 4
    _fold4(a, x, m, A1, B1)
    ta, tb = _serial(a, x, 4 * m, n, a.dtype.type(1), zero, tiny, zero)  # the tail: applied last
    n, up = m, True
    while n >= 16:
        m = n // 4
        if up:
            _fold4(A1, B1, m, A2, B2)
            la, lb = _serial(A1, B1, 4 * m, n, a.dtype.type(1), zero, tiny, zero)
        else:
            _fold4(A2, B2, m, A1, B1)
            la, lb = _serial(A2, B2, 4 * m, n, a.dtype.type(1), zero, tiny, zero)
        ta, tb = _then(la, lb, ta, tb, tiny, zero)
        n, up = m, not up
    if up:
        ra, rb = _serial(A1, B1, 0, n, a.dtype.type(1), zero, tiny, zero)
    else:
        ra, rb = _serial(A2, B2, 0, n, a.dtype.type(1), zero, tiny, zero)
    return _then(ra, rb, ta, tb, tiny, zero)


@njit(cache=True)
def compose(a, x, out):
    """The pair of the whole flat range ``a, x (N,)``: ``out (2,) = (A, B)`` with ``A = prod a`` (flushed) and
    ``B`` = the last h from h = 0, so that ``h_end = A h_before + B``. No lanes over time here (only one pair is
    wanted): every L1 block is folded by fours (:func:`_fold_block`), the blocks' pairs composed in order."""
    tiny = a.dtype.type(TINY)
    zero = a.dtype.type(0)
    N = a.shape[0]
    A1, B1 = np.empty(BLOCK // 4, a.dtype), np.empty(BLOCK // 4, a.dtype)
    A2, B2 = np.empty(BLOCK // 16, a.dtype), np.empty(BLOCK // 16, a.dtype)
    pa, pb = a.dtype.type(1), zero
    for s in range(0, N, BLOCK):
        e = min(N, s + BLOCK)
        qa, qb = _fold_block(a[s:e], x[s:e], A1, B1, A2, B2)
        pa, pb = _then(pa, pb, qa, qb, tiny, zero)
    out[0] = pa
    out[1] = pb
