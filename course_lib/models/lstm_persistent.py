"""The persistent LSTM: each thread keeps its hidden units' weights for all T steps (models layer; chapter 09).

``lstm.lstm_forward(..., method="persistent")`` computes what ``"workspace"`` computes (same layout, same
maths), but not the recurrent product with a BLAS call per step. A BLAS GEMM copies ("packs") all of
``W_hh`` into its blocked layout on *every* call -- ``4H x H`` floats, 1 MB at H = 256 -- and at a small batch
that copy and the hand-off to the BLAS threads cost more than the multiplications (``benchmarks/lstm.py``
measures it: a product of 2 rows against one of B rows). Here the whole loop over T is one compiled function:

* **threads own hidden units.** Step t is one parallel loop over blocks of ``UNITS`` hidden units (numba
  ``prange``, split the same way every step). The thread that owns unit u reads the four rows of ``W_hh``
  for u's gates, ``W_hh[u], W_hh[H+u], W_hh[2H+u], W_hh[3H+u]`` (each ``H`` floats, contiguous), so a thread
  touches the same part of the matrix every step and it stays in that core's cache -- the idea of
  persistent RNN kernels (Diamos et al. 2016), on a CPU.
* **a block's step is dot products, then its cells.** For each unit, 16 dot products of length H (4 gate
  rows x 4 batch rows, ``_dots4x4``) share their loads; then the block's cells run as one SIMD loop over
  its units per batch row (``lstm_tuned.forward_row``). No other thread needs them before the next step.
* **backward, the same way round.** Unit u's gradient at step t needs ``dh_t[:, u]``, column u of
  ``dZ_{t+1} W_hh``: dot products of ``dZ_{t+1}``'s rows with row u of ``W_hh^T`` (a copy made once per
  call). So step t of the backward is one parallel loop too: the block's ``dh`` columns, then its gate
  gradients, ``dc`` and the bias gradient (each unit owns its four entries: no thread writes another's),
  and a copy of the block's gate gradients and ``h_{t-1}`` into transposed arrays, while they are in cache.
* **the products outside the loop** -- the input projection of all T steps, ``dX`` and the weight gradients
  -- are big; ``gemm_nt`` computes them as dot products along both operands' rows, in tiles that stay in
  a core's cache. Nothing here calls the BLAS, so no BLAS thread pool spins on the cores numba's threads
  need (a BLAS input projection left its pool spinning into the loop: on 2 cores the loop took 1.4x as long).

Shapes: ``X (T, B, nx)``, states ``(B, H)``, gates ``(B, 4H)`` = [i | f | g | o], ``W_ih (4H, nx)``,
``W_hh (4H, H)``. ``forward(...) -> (H, C, A)``; ``backward(...) -> (dW_ih, dW_hh, db, dX, dh0, dc0)``, the
signatures of :mod:`course_lib.models.lstm_tuned`.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..core.validate import check_dtype_float, check_shape
from . import lstm_tuned

__all__ = ["forward", "backward", "steps_forward", "steps_backward", "step_products", "gemm_nt", "transpose_into",
           "UNITS", "TILE", "CHUNK"]

_FLAGS = {"reassoc", "contract"}   # a dot product may be summed in any order (SIMD lanes) and use FMA; NaN stays NaN


# --------------------------------------------------------------------------- dot products, 4 rows at a time
@njit(cache=True, fastmath=_FLAGS)
def _dots4x4(w0, w1, w2, w3, x0, x1, x2, x3):
    """The 16 dot products ``w_g . x_r`` (g, r = 0..3) of 1-D arrays of one length, as a tuple of 4 tuples
    (one per w, one entry per x): one pass over k, every loaded number used 4 times."""
    z = w0.dtype.type(0.0)
    s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = z
    s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = z
    for k in range(w0.size):
        a, b, c, d = w0[k], w1[k], w2[k], w3[k]
        p, q, r, s = x0[k], x1[k], x2[k], x3[k]
        s00 += a * p; s01 += a * q; s02 += a * r; s03 += a * s      # noqa: E702
        s10 += b * p; s11 += b * q; s12 += b * r; s13 += b * s      # noqa: E702
        s20 += c * p; s21 += c * q; s22 += c * r; s23 += c * s      # noqa: E702
        s30 += d * p; s31 += d * q; s32 += d * r; s33 += d * s      # noqa: E702
    return (s00, s01, s02, s03), (s10, s11, s12, s13), (s20, s21, s22, s23), (s30, s31, s32, s33)


@njit(cache=True, fastmath=_FLAGS)
def _dots1x4(w, x0, x1, x2, x3):
    """The 4 dot products ``w . x_r`` (also ``_dots4x4``'s one-row case, with the roles of w and x swapped)."""
    z = w.dtype.type(0.0)
    s0 = s1 = s2 = s3 = z
    for k in range(w.size):
        a = w[k]
        s0 += a * x0[k]
        s1 += a * x1[k]
        s2 += a * x2[k]
        s3 += a * x3[k]
    return s0, s1, s2, s3


@njit(cache=True, fastmath=_FLAGS)
def _dot(w, x):
    s = w.dtype.type(0.0)
    for k in range(w.size):
        s += w[k] * x[k]
    return s


# --------------------------------------------------------------------------- products as dot products
@njit(cache=True)
def _dots_tile(W, X, out, j0, j1, r0, r1, k0, k1, add):
    """``out[r, j] (+)= X[r, k0:k1] . W[j, k0:k1]`` for rows r in [r0, r1) and j in [j0, j1): 4 rows of W
    times 4 of X at a time; ``add``: add to ``out`` (a later chunk of k) instead of writing it."""
    j = j0
    while j + 4 <= j1:
        w0, w1, w2, w3 = W[j, k0:k1], W[j + 1, k0:k1], W[j + 2, k0:k1], W[j + 3, k0:k1]
        r = r0
        while r + 4 <= r1:
            s = _dots4x4(w0, w1, w2, w3, X[r, k0:k1], X[r + 1, k0:k1], X[r + 2, k0:k1], X[r + 3, k0:k1])
            for g in range(4):
                for q in range(4):
                    out[r + q, j + g] = s[g][q] + (out[r + q, j + g] if add else 0.0)
            r += 4
        for q in range(r, r1):
            s1 = _dots1x4(X[q, k0:k1], w0, w1, w2, w3)
            for g in range(4):
                out[q, j + g] = s1[g] + (out[q, j + g] if add else 0.0)
        j += 4
    for jj in range(j, j1):
        w = W[jj, k0:k1]
        r = r0
        while r + 4 <= r1:
            s4 = _dots1x4(w, X[r, k0:k1], X[r + 1, k0:k1], X[r + 2, k0:k1], X[r + 3, k0:k1])
            for q in range(4):
                out[r + q, jj] = s4[q] + (out[r + q, jj] if add else 0.0)
            r += 4
        for q in range(r, r1):
            out[q, jj] = _dot(w, X[q, k0:k1]) + (out[q, jj] if add else 0.0)


TILE = 64    # rows of X and of W per parallel task of :func:`gemm_nt`
CHUNK = 512  # ... and the length of the pieces their dot products go in: 2 x 64 rows of 512 floats stay in a core's cache


@njit(cache=True, parallel=True)
def _gemm_nt(X, W, out):
    """``out (M, N) = X (M, K) @ W (N, K)^T``, both operands read along their rows (contiguous): tiles of
    ``TILE x TILE`` outputs, one per parallel task, each summed over k in chunks of ``CHUNK``."""
    M, N, K = X.shape[0], W.shape[0], X.shape[1]
    tm, tn = (M + TILE - 1) // TILE, (N + TILE - 1) // TILE
    for t in prange(tm * tn):
        i, j = t // tn, t % tn
        for k0 in range(0, max(K, 1), CHUNK):
            _dots_tile(W, X, out, j * TILE, min(N, (j + 1) * TILE), i * TILE, min(M, (i + 1) * TILE),
                       k0, min(K, k0 + CHUNK), k0 > 0)


# --------------------------------------------------------------------------- a block of units
UNITS = 32   # hidden units per parallel task: a block's cells run as SIMD loops over its units


@njit(cache=True)
def _z_block(W_hh, h, z, u0, u1):
    """Columns ``g*H + u`` (u in [u0, u1), every gate g) of ``z = h W_hh^T``: ``h (B, H)``, ``z (B, 4H)``."""
    B, nh = h.shape
    for u in range(u0, u1):
        wi, wf, wg, wo = W_hh[u], W_hh[nh + u], W_hh[2 * nh + u], W_hh[3 * nh + u]
        b0 = 0
        while b0 + 4 <= B:
            zi, zf, zg, zo = _dots4x4(wi, wf, wg, wo, h[b0], h[b0 + 1], h[b0 + 2], h[b0 + 3])
            for r in range(4):
                z[b0 + r, u], z[b0 + r, nh + u], z[b0 + r, 2 * nh + u], z[b0 + r, 3 * nh + u] = \
                    zi[r], zf[r], zg[r], zo[r]
            b0 += 4
        for b in range(b0, B):
            z[b, u], z[b, nh + u], z[b, 2 * nh + u], z[b, 3 * nh + u] = _dots1x4(h[b], wi, wf, wg, wo)


@njit(cache=True, parallel=True)
def _transpose_into(src, dst):
    """``dst (N, M) = src (M, N)^T``, in 32 x 32 tiles (each read and written along cache lines)."""
    M, N = src.shape
    for bi in prange((M + 31) // 32):
        for j0 in range(0, N, 32):
            for i in range(bi * 32, min(M, bi * 32 + 32)):
                for j in range(j0, min(N, j0 + 32)):
                    dst[j, i] = src[i, j]


@njit(cache=True, parallel=True)
def _step_products(W_hh, h, z):
    """One step's recurrent product ``z (B, 4H) = h (B, H) W_hh^T`` the persistent way: blocks of units in
    parallel, each a set of dot products (what :func:`steps_forward` does before each block's cells)."""
    nh = h.shape[1]
    for k in prange((nh + UNITS - 1) // UNITS):
        _z_block(W_hh, h, z, k * UNITS, min(nh, (k + 1) * UNITS))


# --------------------------------------------------------------------------- the loops over T
@njit(cache=True, parallel=True, error_model="numpy")
def _steps_forward(W_hh, A, bias, h0, c0, H, C, z):
    """All T steps. ``A (T, B, 4H)`` holds ``X W_ih^T`` and is replaced by the activated gates; writes
    ``H, C (T, B, H)``; ``bias (4H,)`` = ``b_ih + b_hh``; ``h0, c0 (B, H)``; ``z (B, 4H)`` scratch."""
    T, B, nh = H.shape
    blocks = (nh + UNITS - 1) // UNITS
    for t in range(T):
        h = h0 if t == 0 else H[t - 1]
        c = c0 if t == 0 else C[t - 1]
        a, ht, ct = A[t], H[t], C[t]
        for k in prange(blocks):
            u0, u1 = k * UNITS, min(nh, (k + 1) * UNITS)
            _z_block(W_hh, h, z, u0, u1)
            for b in range(B):          # the block's cells: one SIMD loop over its units per row (lstm_tuned's)
                r, s = a[b], z[b]
                lstm_tuned.forward_row(r[u0:u1], r[nh + u0:nh + u1], r[2 * nh + u0:2 * nh + u1],
                                       r[3 * nh + u0:3 * nh + u1], s[u0:u1], s[nh + u0:nh + u1],
                                       s[2 * nh + u0:2 * nh + u1], s[3 * nh + u0:3 * nh + u1],
                                       bias[u0:u1], bias[nh + u0:nh + u1], bias[2 * nh + u0:2 * nh + u1],
                                       bias[3 * nh + u0:3 * nh + u1], c[b, u0:u1], ct[b, u0:u1], ht[b, u0:u1])


@njit(cache=True)
def _keep_columns(dz, h_prev, dZT, HT, col, u0, u1):
    """Copy units [u0, u1) of one step into the transposed arrays the weight gradients read: rows
    ``g*H + u`` of ``dZT (4H, T*B)`` and rows u of ``HT (H, T*B)`` get ``dz[:, g*H + u]`` and ``h_prev[:, u]``
    at columns ``col .. col + B`` (a small transpose, of numbers still in cache)."""
    B = dz.shape[0]
    nh = h_prev.shape[1]
    for u in range(u0, u1):
        for g in range(4):
            row = dZT[g * nh + u]
            for b in range(B):
                row[col + b] = dz[b, g * nh + u]
        hrow = HT[u]
        for b in range(B):
            hrow[col + b] = h_prev[b, u]


@njit(cache=True, parallel=True, error_model="numpy")
def _steps_backward(W_hhT, A, C, c0, H, h0, dH, dh, dc, dZ, db, dZT, HT):
    """All T steps backwards. ``W_hhT (H, 4H)`` contiguous; ``A`` the activated gates, ``C, H (T, B, H)``;
    ``dh, dc (B, H)`` the gradients at the final state, replaced by those at ``h0, c0``; writes
    ``dZ (T, B, 4H)`` and its transpose ``dZT (4H, T*B)``, and ``HT (H, T*B)`` = ``[h0, H[:-1]]^T`` (what
    each ``dZ_t`` pairs with in ``dW_hh``); ``db (4H,)`` (zeros in) accumulates the bias gradient."""
    T, B, nh = C.shape
    blocks = (nh + UNITS - 1) // UNITS
    for t in range(T - 1, -1, -1):
        c_prev = c0 if t == 0 else C[t - 1]
        h_prev = h0 if t == 0 else H[t - 1]
        a, ct, dz, dHt = A[t], C[t], dZ[t], dH[t]
        for k in prange(blocks):
            u0, u1 = k * UNITS, min(nh, (k + 1) * UNITS)
            if t < T - 1:
                _dots_tile(W_hhT, dZ[t + 1], dh, u0, u1, 0, B, 0, 4 * nh, False)   # dh_t[:, block] = (dZ_{t+1} W_hh)[:, block]
            for b in range(B):
                r, d = a[b], dz[b]
                lstm_tuned.backward_row(r[u0:u1], r[nh + u0:nh + u1], r[2 * nh + u0:2 * nh + u1],
                                        r[3 * nh + u0:3 * nh + u1], ct[b, u0:u1], c_prev[b, u0:u1],
                                        dHt[b, u0:u1], dh[b, u0:u1], dc[b, u0:u1], d[u0:u1],
                                        d[nh + u0:nh + u1], d[2 * nh + u0:2 * nh + u1], d[3 * nh + u0:3 * nh + u1],
                                        db[u0:u1], db[nh + u0:nh + u1], db[2 * nh + u0:2 * nh + u1],
                                        db[3 * nh + u0:3 * nh + u1])
            _keep_columns(dz, h_prev, dZT, HT, t * B, u0, u1)
    for k in prange(blocks):                               # dh_0 = dZ_0 W_hh: the gradient at h0
        _dots_tile(W_hhT, dZ[0], dh, k * UNITS, min(nh, (k + 1) * UNITS), 0, B, 0, 4 * nh, False)


# --------------------------------------------------------------------------- the exported kernels, checked
def _check_kernel(**arrays) -> dict:
    """Each ``name=(array, shape pattern)``: a numpy array of the first one's float dtype, of that shape (named
    sizes agree across them). Cheap -- no pass over the data -- so a timed kernel call stays a kernel call."""
    dims: dict = {}
    dtype = None
    for name, (x, shape) in arrays.items():
        if not isinstance(x, np.ndarray):
            raise TypeError(f"{name}: expected a numpy array, got {type(x).__name__}")
        if dtype is None:
            check_dtype_float(x, name)
            dtype = x.dtype
        elif x.dtype != dtype:
            raise TypeError(f"{name}: expected the dtype of {next(iter(arrays))} ({dtype}), got {x.dtype}")
        check_shape(x, name, shape, dims)
        if 0 in x.shape:
            raise ValueError(f"{name}: axis {x.shape.index(0)} is empty (shape {x.shape}); expected at least one element")
    return dims


def _check_gates(dims: dict) -> None:
    if "4H" in dims and "H" in dims and dims["4H"] != 4 * dims["H"]:
        raise ValueError(f"W_hh: expected 4 * H = {4 * dims['H']} rows (one per gate and unit), got {dims['4H']}")


def _writable(**arrays) -> None:
    for name, x in arrays.items():
        if not x.flags.writeable:
            raise ValueError(f"{name}: the kernel writes into it, but it is read-only")


def gemm_nt(X, W, out):
    """``out (M, N) = X (M, K) @ W (N, K)^T``, both operands read along their rows (contiguous): tiles of
    ``TILE x TILE`` outputs, one per parallel task, each summed over k in chunks of ``CHUNK``."""
    _check_kernel(X=(X, ("M", "K")), W=(W, ("N", "K")), out=(out, ("M", "N")))
    _writable(out=out)
    _gemm_nt(X, W, out)


def transpose_into(src, dst):
    """``dst (N, M) = src (M, N)^T``, in 32 x 32 tiles (each read and written along cache lines)."""
    _check_kernel(src=(src, ("M", "N")), dst=(dst, ("N", "M")))
    _writable(dst=dst)
    _transpose_into(src, dst)


def step_products(W_hh, h, z):
    """One step's recurrent product ``z (B, 4H) = h (B, H) W_hh^T`` the persistent way: blocks of units in
    parallel, each a set of dot products (what :func:`steps_forward` does before each block's cells)."""
    _check_gates(_check_kernel(W_hh=(W_hh, ("4H", "H")), h=(h, ("B", "H")), z=(z, ("B", "4H"))))
    _writable(z=z)
    _step_products(W_hh, h, z)


def steps_forward(W_hh, A, bias, h0, c0, H, C, z):
    """All T steps (:func:`forward`'s loop). ``A (T, B, 4H)`` holds ``X W_ih^T`` and is replaced by the activated
    gates; writes ``H, C (T, B, H)``; ``bias (4H,)``; ``h0, c0 (B, H)``; ``z (B, 4H)`` scratch."""
    _check_gates(_check_kernel(W_hh=(W_hh, ("4H", "H")), A=(A, ("T", "B", "4H")), bias=(bias, ("4H",)),
                               h0=(h0, ("B", "H")), c0=(c0, ("B", "H")), H=(H, ("T", "B", "H")),
                               C=(C, ("T", "B", "H")), z=(z, ("B", "4H"))))
    _writable(A=A, H=H, C=C, z=z)
    _steps_forward(W_hh, A, bias, h0, c0, H, C, z)


def steps_backward(W_hhT, A, C, c0, H, h0, dH, dh, dc, dZ, db, dZT, HT):
    """All T steps backwards (:func:`backward`'s loop; the arguments of the compiled ``_steps_backward``):
    ``W_hhT (H, 4H)``, ``A (T, B, 4H)``, ``C, H, dH (T, B, H)``, ``c0, h0, dh, dc (B, H)``, ``dZ (T, B, 4H)``,
    ``db (4H,)``, ``dZT (4H, T*B)``, ``HT (H, T*B)``."""
    dims = _check_kernel(W_hhT=(W_hhT, ("H", "4H")), A=(A, ("T", "B", "4H")), C=(C, ("T", "B", "H")),
                         c0=(c0, ("B", "H")), H=(H, ("T", "B", "H")), h0=(h0, ("B", "H")), dH=(dH, ("T", "B", "H")),
                         dh=(dh, ("B", "H")), dc=(dc, ("B", "H")), dZ=(dZ, ("T", "B", "4H")), db=(db, ("4H",)),
                         dZT=(dZT, ("4H", "TB")), HT=(HT, ("H", "TB")))
    _check_gates(dims)
    if dims["TB"] != dims["T"] * dims["B"]:
        raise ValueError(f"dZT: expected T * B = {dims['T'] * dims['B']} columns, got {dims['TB']}")
    _writable(dh=dh, dc=dc, dZ=dZ, db=db, dZT=dZT, HT=HT)
    _steps_backward(W_hhT, A, C, c0, H, h0, dH, dh, dc, dZ, db, dZT, HT)


# --------------------------------------------------------------------------- forward and backward
def forward(W_ih, W_hh, b_ih, b_hh, X, h0, c0):
    """``X (T, B, nx)``, ``h0, c0 (B, H)`` (checked, contiguous, the weights' dtype) ->
    ``H, C (T, B, H)`` and the activated gates ``A (T, B, 4H)`` (fresh arrays). Shapes and dtypes are checked
    here (a wrong one would read past an array's end in the compiled loops); NaN is not: it stays NaN."""
    dims = _check_kernel(X=(X, ("T", "B", "nx")), W_ih=(W_ih, ("4H", "nx")), W_hh=(W_hh, ("4H", "H")),
                         b_ih=(b_ih, ("4H",)), b_hh=(b_hh, ("4H",)), h0=(h0, ("B", "H")), c0=(c0, ("B", "H")))
    _check_gates(dims)
    T, B, nx = X.shape
    nh = W_hh.shape[1]
    H, C = np.empty((T, B, nh), X.dtype), np.empty((T, B, nh), X.dtype)
    A = np.empty((T, B, 4 * nh), X.dtype)
    _gemm_nt(X.reshape(T * B, nx), np.ascontiguousarray(W_ih), A.reshape(T * B, 4 * nh))   # all T input projections
    _steps_forward(np.ascontiguousarray(W_hh), A, b_ih + b_hh, h0, c0, H, C, np.empty((B, 4 * nh), X.dtype))
    return H, C, A


def backward(W_ih, W_hh, X, h0, c0, H, C, A, dH, dh, dc):
    """Backpropagation through time from a :func:`forward`'s ``H, C, A``: the arguments and results of
    :func:`course_lib.models.lstm_tuned.backward` (``dh, dc`` are overwritten and come back as ``dh0, dc0``)."""
    dims = _check_kernel(X=(X, ("T", "B", "nx")), W_ih=(W_ih, ("4H", "nx")), W_hh=(W_hh, ("4H", "H")),
                         h0=(h0, ("B", "H")), c0=(c0, ("B", "H")), H=(H, ("T", "B", "H")), C=(C, ("T", "B", "H")),
                         A=(A, ("T", "B", "4H")), dH=(dH, ("T", "B", "H")), dh=(dh, ("B", "H")), dc=(dc, ("B", "H")))
    _check_gates(dims)
    _writable(dh=dh, dc=dc)
    T, B, nx = X.shape
    nh = W_hh.shape[1]
    dt = X.dtype
    dZ = lstm_tuned.workspace(T, B, nx, nh, dt).dZ
    db = np.zeros(4 * nh, dt)
    dZT, HT, XT = np.empty((4 * nh, T * B), dt), np.empty((nh, T * B), dt), np.empty((nx, T * B), dt)
    _steps_backward(np.ascontiguousarray(W_hh.T), A, C, c0, H, h0, dH, dh, dc, dZ, db, dZT, HT)
    dX = np.empty((T, B, nx), dt)
    _gemm_nt(dZ.reshape(T * B, 4 * nh), np.ascontiguousarray(W_ih.T), dX.reshape(T * B, nx))   # dX = dZ W_ih
    # the weight gradients sum over all T * B rows: dot products along them, of the transposed arrays
    _transpose_into(X.reshape(T * B, nx), XT)
    dW_ih, dW_hh = np.empty((4 * nh, nx), dt), np.empty((4 * nh, nh), dt)
    _gemm_nt(dZT, XT, dW_ih)                                                 # dW_ih = dZ^T X
    _gemm_nt(dZT, HT, dW_hh)                                                 # dW_hh = dZ^T [h0, H[:-1]]
    return dW_ih, dW_hh, db, dX, dh, dc
