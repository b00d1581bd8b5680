"""Numerical gradients by central differences, in float64 (models/).

``dE/dW[i] ≈ (E(W + eps e_i) - E(W - eps e_i)) / (2 eps)``, one pair of loss evaluations per
entry: slow (O(#weights) forward passes) but simple enough to trust, which is the point -- it
is the reference that a hand-written backward pass is compared with.

* :func:`numerical_gradient` -- for any ``f(W) -> float`` of one array.
* :func:`rnn_numerical_gradients` -- the RNN loss w.r.t. ``Wxh``, ``Whh`` and ``Why``.
* :func:`relative_error` / :func:`gradient_errors` -- how far an analytic gradient is off.

Everything is computed in float64: in float32 the differences ``E(W+eps) - E(W-eps)`` lose most
of their digits to round-off.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import rnn
from ..core.validate import check_array, check_float

__all__ = ["numerical_gradient", "rnn_numerical_gradients", "relative_error", "gradient_errors"]


def numerical_gradient(f: Callable[[np.ndarray], float], W: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central-difference gradient of the scalar ``f`` at ``W`` (any shape), as float64.

    ``W`` is perturbed in place one entry at a time and restored exactly afterwards (even if
    ``f`` raises), so ``f`` may close over the very array it is differentiated with respect to.
    """
    if not callable(f):
        raise TypeError(f"f: expected a callable returning a float, got {type(f).__name__}")
    W = check_array(W, "W")
    if W.dtype != np.float64:
        raise TypeError(f"W: expected a float64 array (float32 round-off swamps the differences), got {W.dtype}")
    eps = check_float(eps, "eps", low=0.0, low_inclusive=False)
    grad = np.zeros(W.shape, dtype=np.float64)
    flat, gflat = W.reshape(-1), grad.reshape(-1)
    if not np.shares_memory(flat, W):  # pragma: no cover - non-contiguous input
        raise ValueError(f"W: expected a contiguous array, got strides {W.strides}")
    for i in range(flat.size):
        old = flat[i]
        try:
            flat[i] = old + eps
            up = float(f(W))
            flat[i] = old - eps
            down = float(f(W))
        finally:
            flat[i] = old
        gflat[i] = (up - down) / (2 * eps)
    return grad


def rnn_numerical_gradients(params: rnn.RNNParams, X: np.ndarray, Y: np.ndarray,
                            h0: np.ndarray | None = None, eps: float = 1e-6) -> rnn.RNNParams:
    """Numerical ``dE/dWxh``, ``dE/dWhh``, ``dE/dWhy`` of ``rnn.loss(rnn.forward(params, X, h0).Yhat, Y)``.

    All inputs are converted to float64 first; the result is float64. Keep sizes small: it costs
    ``2 * (nx nh + nh nh + nh ny)`` forward passes.
    """
    if not isinstance(params, rnn.RNNParams):
        raise TypeError(f"params: expected an RNNParams, got {type(params).__name__}")
    p64 = params.astype(np.float64).copy()
    X64 = check_array(X, "X").astype(np.float64)
    Y64 = check_array(Y, "Y").astype(np.float64)
    h64 = None if h0 is None else check_array(h0, "h0").astype(np.float64)
    rnn.forward(p64, X64, h64)  # validate shapes once, with the usual messages

    def E(_W):
        return rnn.loss(rnn.forward(p64, X64, h64).Yhat, Y64)

    return rnn.RNNParams(*(numerical_gradient(E, w, eps) for w in p64.arrays()))


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """``max|a - b| / max(max|a|, max|b|, 1e-12)``: 0 for equal arrays, ~1 for unrelated ones."""
    a = check_array(a, "a", dtype=None)
    b = check_array(b, "b", dtype=None)
    for arr, nm in ((a, "a"), (b, "b")):
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{nm}: expected a real numeric array, got dtype {arr.dtype}")
    a, b = a.astype(np.float64), b.astype(np.float64)
    if a.shape != b.shape:
        raise ValueError(f"b: expected the same shape as a {a.shape}, got {b.shape}")
    scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)), 1e-12)
    return float(np.max(np.abs(a - b), initial=0.0)) / scale


def gradient_errors(analytic: rnn.RNNParams, numeric: rnn.RNNParams) -> dict[str, float]:
    """``{"Wxh": rel. error, "Whh": ..., "Why": ...}`` between two gradient sets."""
    for g, nm in ((analytic, "analytic"), (numeric, "numeric")):
        if not isinstance(g, rnn.RNNParams):
            raise TypeError(f"{nm}: expected an RNNParams of gradients, got {type(g).__name__}")
    return {name: relative_error(a, n) for name, a, n in zip(analytic.names(), analytic.arrays(), numeric.arrays())}
