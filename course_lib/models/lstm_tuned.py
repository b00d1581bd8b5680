"""The tuned LSTM path: ``fused_pre`` with nothing left over (models layer; chapter 09, read it last).

``lstm.lstm_forward(..., method="workspace")`` and its ``lstm_backward`` compute exactly what
``"fused_pre"`` computes (same GEMMs, same maths, PyTorch's layout); this module removes the work
around the GEMMs that the maths does not need. Shapes: ``X (T, B, nx)``, states ``(B, H)``, gates
``(B, 4H)`` = [i | f | g | o], weights ``W_ih (4H, nx)``, ``W_hh (4H, H)``.

1. **Scratch lives in a** :class:`Workspace`, allocated once per shape and reused by every step and
   every later call of that shape (the recurrent product ``z``, the summed bias, the backward's
   ``dZ (T, B, 4H)``): no fresh arrays and no page faults inside the time loop. What the caller
   keeps -- ``H``, ``C``, the gates for the backward, gradients, ``dX`` -- is a fresh array each call,
   so results never alias each other.
2. **Every GEMM writes in place** (``np.matmul(..., out=)``): the input projection of all T steps
   goes straight into the gates buffer, the recurrent product into ``z``, ``dh`` into ``dh``.
3. **One kernel per step** (numba, one pass over the step's numbers): forward ``a = act(pre + z +
   b)``, ``c' = f c + i g``, ``h' = o tanh(c')`` -- the bias is added here, so no separate pass over
   the ``(T, B, 4H)`` gates; backward: the four gate gradients, the carried ``dc`` and the bias
   gradient, summed here, so no separate pass over ``dZ``.
4. **Weight gradients as one GEMM over all T** each; ``W_hh``'s pairs ``dZ_t`` with ``h_{t-1}`` as
   ``dZ[1:]^T H[:-1] + dZ[0]^T h0`` -- no stacked copy of ``h_0 .. h_{T-1}``.
5. **No transposes or copies**: ``W^T`` and ``dZ^T`` are views BLAS reads with its transpose flag.

What stays in Python is the loop over T: one BLAS call and one kernel call per step. A compiled loop
over T would have to call BLAS from numba, and numba's ``np.dot`` needs SciPy's BLAS bindings -- not
a dependency of this course -- so the loop stays here (its cost is the profile's "other" row,
:func:`course_lib.experiments.lstm.profile_training`).

``forward(W_ih, W_hh, b_ih, b_hh, X, h0, c0) -> (H, C, A)`` (arrays already checked, contiguous)
``backward(W_ih, W_hh, X, h0, c0, H, C, A, dH, dh, dc) -> (dW_ih, dW_hh, db, dX, dh0, dc0)``
``workspace(T, batch, nx, nh, dtype)`` -- this thread's workspace for a shape; ``release_workspaces()``
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..algorithms.activations import fast_sigmoid, fast_tanh

__all__ = ["Workspace", "workspace", "release_workspaces", "forward", "backward", "gates_forward",
           "gates_backward", "gradient_gemms", "forward_row", "backward_row",
           "KEEP"]

KEEP = 3  # workspaces kept per thread (most recently used shapes); a big shape's dZ is ~100 MB


@dataclass
class Workspace:
    """Scratch for one shape ``(T, B, nx, nh, dtype)``: ``z (B, 4H)`` the recurrent product,
    ``bias (4H,)`` = ``b_ih + b_hh``, ``dZ (T, B, 4H)`` the backward's gate gradients."""

    key: tuple
    z: np.ndarray
    bias: np.ndarray
    dZ: np.ndarray


_LOCAL = threading.local()  # one set of workspaces per thread: two threads never share scratch


def workspace(T: int, batch: int, nx: int, nh: int, dtype) -> Workspace:
    """This thread's workspace for the shape (made on first use; the ``KEEP`` most recent are kept)."""
    dt = np.dtype(dtype)
    key = (int(T), int(batch), int(nx), int(nh), dt.name)
    pool = getattr(_LOCAL, "pool", None)
    if pool is None:
        pool = _LOCAL.pool = OrderedDict()
    ws = pool.get(key)
    if ws is None:
        ws = Workspace(key, np.empty((batch, 4 * nh), dt), np.empty(4 * nh, dt), np.empty((T, batch, 4 * nh), dt))
        pool[key] = ws
        while len(pool) > KEEP:
            pool.popitem(last=False)
    pool.move_to_end(key)
    return ws


def release_workspaces() -> None:
    """Forget this thread's workspaces (their memory goes back when nothing else holds it)."""
    _LOCAL.pool = OrderedDict()


# --------------------------------------------------------------------------- the two kernels
# One loop over j per batch row, reading the four gate segments as 1-D slices (the form LLVM
# vectorises, see lstm.py); fast_tanh / fast_sigmoid as in lstm.py (exact in float64). The row helpers are
# inlined into the kernels (inline="always"): a call that passes 15 array views cost ~0.3 us per row.
@njit(cache=True, error_model="numpy", inline="always")
def forward_row(i, f, g, o, zi, zf, zg, zo, bi, bf, bg, bo, c_prev, c_out, h_out):
    for j in range(c_prev.size):
        ig = fast_sigmoid(i[j] + zi[j] + bi[j])
        fg = fast_sigmoid(f[j] + zf[j] + bf[j])
        gg = fast_tanh(g[j] + zg[j] + bg[j])
        og = fast_sigmoid(o[j] + zo[j] + bo[j])
        i[j], f[j], g[j], o[j] = ig, fg, gg, og
        c = fg * c_prev[j] + ig * gg
        c_out[j] = c
        h_out[j] = og * fast_tanh(c)


@njit(cache=True, error_model="numpy")
def gates_forward(z, a, bias, c_prev, c_out, h_out):
    """One forward step in one pass. ``a (B, 4H)`` holds ``x_t W_ih^T`` and is replaced by the
    activated gates of ``a + z + bias`` (``z (B, 4H)`` = ``h W_hh^T``); writes ``c_out, h_out (B, H)``."""
    H = c_prev.shape[1]
    b_i, b_f, b_g, b_o = bias[:H], bias[H:2 * H], bias[2 * H:3 * H], bias[3 * H:]
    for b in range(z.shape[0]):
        r, s = a[b], z[b]
        forward_row(r[:H], r[H:2 * H], r[2 * H:3 * H], r[3 * H:], s[:H], s[H:2 * H], s[2 * H:3 * H], s[3 * H:],
                     b_i, b_f, b_g, b_o, c_prev[b], c_out[b], h_out[b])


@njit(cache=True, error_model="numpy", inline="always")
def backward_row(i, f, g, o, c, c_prev, dH_t, dh_rec, dc, di, df, dg, do, dbi, dbf, dbg, dbo):
    one = i.dtype.type(1.0)
    for j in range(c.size):
        tc = fast_tanh(c[j])
        dh = dH_t[j] + dh_rec[j]
        dct = dc[j] + dh * o[j] * (one - tc * tc)
        gi = dct * g[j] * i[j] * (one - i[j])
        gf = dct * c_prev[j] * f[j] * (one - f[j])
        gg = dct * i[j] * (one - g[j] * g[j])
        go = dh * tc * o[j] * (one - o[j])
        di[j], df[j], dg[j], do[j] = gi, gf, gg, go
        dbi[j] += gi
        dbf[j] += gf
        dbg[j] += gg
        dbo[j] += go
        dc[j] = dct * f[j]


@njit(cache=True, error_model="numpy")
def gates_backward(a, c, c_prev, dH_t, dh_rec, dc, dz, db):
    """One backward step in one pass. In: gates ``a (B, 4H)``, ``c, c_prev``, ``dH_t`` and the
    recurrent ``dh_rec`` (B, H); ``dc (B, H)`` is read (from step t+1) and replaced by the gradient
    w.r.t. ``c_prev``. Out: ``dz (B, 4H)``; ``db (4H,)`` accumulates the bias gradient."""
    H = c.shape[1]
    for b in range(a.shape[0]):
        r, d = a[b], dz[b]
        backward_row(r[:H], r[H:2 * H], r[2 * H:3 * H], r[3 * H:], c[b], c_prev[b], dH_t[b], dh_rec[b], dc[b],
                      d[:H], d[H:2 * H], d[2 * H:3 * H], d[3 * H:], db[:H], db[H:2 * H], db[2 * H:3 * H], db[3 * H:])


# --------------------------------------------------------------------------- forward and backward
def forward(W_ih, W_hh, b_ih, b_hh, X, h0, c0, matmul=np.matmul):
    """``X (T, B, nx)``, ``h0, c0 (B, H)`` (checked, contiguous, the weights' dtype) ->
    ``H, C (T, B, H)`` and the activated gates ``A (T, B, 4H)`` (fresh arrays). ``matmul``: who computes the
    products (``np.matmul``, or :func:`course_lib.algorithms.gemm.matmul_for` of another provider)."""
    T, B, nx = X.shape
    nh = W_hh.shape[1]
    ws = workspace(T, B, nx, nh, X.dtype)
    H, C = np.empty((T, B, nh), X.dtype), np.empty((T, B, nh), X.dtype)
    A = np.empty((T, B, 4 * nh), X.dtype)
    matmul(X.reshape(T * B, nx), W_ih.T, out=A.reshape(T * B, 4 * nh))   # all T input projections
    np.add(b_ih, b_hh, out=ws.bias)
    z, W_hh_T = ws.z, W_hh.T
    h, c = h0, c0
    for t in range(T):
        matmul(h, W_hh_T, out=z)                            # z = h W_hh^T       (B, 4H)
        gates_forward(z, A[t], ws.bias, c, C[t], H[t])     # A[t] <- gates; C[t], H[t]
        h, c = H[t], C[t]
    return H, C, A


def backward(W_ih, W_hh, X, h0, c0, H, C, A, dH, dh, dc, matmul=np.matmul):
    """Backpropagation through time from a :func:`forward`'s ``H, C, A``; ``dH (T, B, H)``; ``dh, dc
    (B, H)`` the gradients at the final state (overwritten: they come back as ``dh0, dc0``).
    Returns ``(dW_ih (4H, nx), dW_hh (4H, H), db (4H,), dX (T, B, nx), dh0, dc0)``."""
    T, B, nx = X.shape
    nh = W_hh.shape[1]
    ws = workspace(T, B, nx, nh, X.dtype)
    dZ = ws.dZ
    db = np.zeros(4 * nh, X.dtype)
    for t in range(T - 1, -1, -1):
        gates_backward(A[t], C[t], C[t - 1] if t > 0 else c0, dH[t], dh, dc, dZ[t], db)
        matmul(dZ[t], W_hh, out=dh)                        # dh_{t-1} = dZ_t W_hh   (B, H)
    dW_ih, dW_hh, dX = gradient_gemms(W_ih, X, h0, H, dZ, matmul)
    return dW_ih, dW_hh, db, dX, dh, dc


def gradient_gemms(W_ih, X, h0, H, dZ, matmul=np.matmul):
    """What the backward does after its loop over T, as three GEMMs over all T steps: ``dZ (T, B, 4H)``,
    ``X (T, B, nx)``, ``H (T, B, H)``, ``h0 (B, H)`` -> ``(dW_ih (4H, nx), dW_hh (4H, H), dX (T, B, nx))``."""
    T, B, nx = X.shape
    nh = H.shape[2]
    dZ2 = dZ.reshape(T * B, 4 * nh)
    dW_ih = matmul(dZ2.T, X.reshape(T * B, nx))         # one GEMM over all T
    dW_hh = matmul(dZ[1:].reshape((T - 1) * B, 4 * nh).T, H[:-1].reshape((T - 1) * B, nh))
    dW_hh += dZ[0].T @ h0                                   # step 0 pairs with h0
    dX = matmul(dZ2, W_ih).reshape(T, B, nx)
    return dW_ih, dW_hh, dX
