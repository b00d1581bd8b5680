"""The fast RNN step in plain numpy: the same GEMMs and buffers, no fused kernels (models layer; chapter 05).

:class:`NumpyStep` is :mod:`course_lib.models.fast_rnn`'s step with each element-wise operation as its own numpy
pass (``np.tanh(..., out=)``, ``np.multiply(..., out=)``, ...): the "separate passes" side of chapter 05's
fusion comparison and a column of ``benchmarks/rnn_step.py``. ``fast_rnn.NumpyStep`` is this class.

``NumpyStep(T, batch, nx, nh, ny, dtype=np.float32)(params, X, Y, lr) -> (params, loss)`` -- updates in place
"""
from __future__ import annotations

import math

import numpy as np

from ..core.validate import check_alloc, check_array, check_dtype, check_float, check_positive_int
from .rnn import RNNParams
from .step_checks import blame, check_grads

__all__ = ["NumpyStep"]


class NumpyStep:
    """Plain numpy, written carefully: one GEMM for each of X Wxh, H Why, Δŷ Whyᵀ and the three
    gradients, preallocated buffers, ``np.matmul(..., out=)`` and ufuncs with ``out=`` -- but no
    fused kernels: each element-wise operation is its own pass over memory, single-threaded.
    The "separate passes" side of chapter 05's fusion comparison and a benchmark column."""

    def __init__(self, T, batch, nx, nh, ny, dtype=np.float32):
        T, batch, nx, nh, ny = (check_positive_int(v, n) for v, n in
                            ((T, "T"), (batch, "batch"), (nx, "nx"), (nh, "nh"), (ny, "ny")))
        dtype = check_dtype(dtype, "dtype")
        check_alloc((T, batch, 2 * nh + 2 * ny), dtype, "T", what="the NumpyStep buffers")
        self.dtype = dtype
        self.shape = (T, batch, nx, nh, ny)
        e = lambda *s: np.empty(s, dtype)  # noqa: E731
        self.H, self.D, self.DZ = e(T, batch, nh), e(T, batch, ny), e(T, batch, nh)
        self.tmp, self.tmp2 = e(batch, nh), e(T, batch, ny)
        self.g = [e(nx, nh), e(nh, nh), e(nh, ny)]

    def __call__(self, p: RNNParams, X: np.ndarray, Y: np.ndarray, lr: float):
        """One step, updating ``p``'s arrays in place; returns ``(p, loss)``. X (T, B, nx), Y (T, B, ny)."""
        lr = check_float(lr, "lr", low=0.0)
        if not isinstance(p, RNNParams):
            raise TypeError(f"p: expected an RNNParams, got {type(p).__name__}")
        X = check_array(X, "X", ndim=3, dtype=self.dtype, finite=False)
        T, B, nx = X.shape
        if (T, B, nx, p.nh, p.ny) != self.shape:
            raise ValueError(f"X, params: this NumpyStep was made for (T, B, nx, nh, ny) = {self.shape}, "
                             f"got {(T, B, nx, p.nh, p.ny)}")
        for name, shape in (("Wxh", (nx, self.shape[3])), ("Whh", self.shape[3:4] * 2), ("Why", self.shape[3:])):
            check_array(getattr(p, name), f"p.{name}", shape=shape, dtype=self.dtype)  # updated in place: no ints
        Y = check_array(Y, "Y", shape=(T, B, self.shape[4]), dtype=self.dtype, finite=False)
        nh, ny = p.Whh.shape[0], p.Why.shape[1]
        H, D, DZ, tmp, tmp2 = self.H, self.D, self.DZ, self.tmp, self.tmp2
        H2, D2, DZ2 = H.reshape(T * B, nh), D.reshape(T * B, ny), DZ.reshape(T * B, nh)
        np.matmul(X.reshape(T * B, nx), p.Wxh, out=H2)
        np.tanh(H[0], out=H[0])
        for t in range(1, T):
            np.matmul(H[t - 1], p.Whh, out=tmp)
            np.add(H[t], tmp, out=H[t])
            np.tanh(H[t], out=H[t])
        np.matmul(H2, p.Why, out=D2)
        np.tanh(D, out=D)                              # ŷ
        np.subtract(D, Y, out=tmp2)                    # e = ŷ − y
        loss = float(np.vdot(tmp2, tmp2))
        np.multiply(D, D, out=D)                       # ŷ²
        np.subtract(1, D, out=D)                       # 1 − ŷ²
        np.multiply(D, tmp2, out=D)
        np.multiply(D, 2, out=D)                       # Δŷ = 2 e (1 − ŷ²)
        np.matmul(D2, p.Why.T, out=DZ2)
        sq = tmp2.reshape(T, B, ny)[0] if ny == nh else np.empty((B, nh), H.dtype)
        for t in range(T - 1, -1, -1):
            if t < T - 1:
                np.matmul(DZ[t + 1], p.Whh.T, out=tmp)
                np.add(DZ[t], tmp, out=DZ[t])
            np.multiply(H[t], H[t], out=sq)
            np.subtract(1, sq, out=sq)
            np.multiply(DZ[t], sq, out=DZ[t])
        gx, gh, gy = self.g
        np.matmul(H2.T, D2, out=gy)
        np.matmul(H[:-1].reshape((T - 1) * B, nh).T, DZ[1:].reshape((T - 1) * B, nh), out=gh)
        np.matmul(X.reshape(T * B, nx).T, DZ2, out=gx)
        if not math.isfinite(loss):  # checked after the fact (as the fused step does): no extra pass
            blame(X, Y, None)
        check_grads(self.g, X, Y, None)
        for w, g in zip((p.Wxh, p.Whh, p.Why), self.g):
            g *= lr
            w -= g
        return p, loss
