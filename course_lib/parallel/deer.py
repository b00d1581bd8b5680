"""DEER: run a nonlinear RNN in parallel over the sequence with Newton's method (parallel/).

The user-facing namespace of chapter 11::

    from course_lib.parallel import deer
    H, hist = deer.gru_forward(params, X, method="newton", return_history=True)   # == models.gru.gru_forward
    H = deer.elman_forward(params, X, method="quasi")                              # == models.rnn.forward(...).H
    grads, dh0 = deer.gru_gradient(params, X, dH)                                  # == models.gru.gru_backward

Every iteration evaluates the cell and its Jacobian at all T steps at once (independent: parallel
over time) and solves one linear recurrence with a scan (``scan="sequential"`` numba loop, or
``"chunked"``: parallel over time chunks). ``method``: ``"newton"`` (full Jacobian, DEER),
``"quasi"`` (its diagonal, quasi-DEER), ``"damped"`` (Jacobians clipped, ELK-style trust region).
See :mod:`course_lib.algorithms.newton` for the solver, the gradient and the Lyapunov exponent.
"""
from __future__ import annotations

import numpy as np

from ..algorithms.newton import (METHODS, NewtonDivergence, gradient, lyapunov_exponent, residual,  # noqa: F401
                                 solve, span_model)
from ..core.validate import check_array, check_bool, check_callable, check_float, check_int
from ..models import gru as _gru
from ..models import jacobians as _jx
from ..models.rnn import RNNParams

__all__ = [
    "METHODS",
    "NewtonDivergence",
    "solve",
    "gradient",
    "lyapunov_exponent",
    "span_model",
    "gru_system",
    "gru_forward",
    "gru_gradient",
    "gru_lyapunov",
    "elman_system",
    "elman_forward",
]


def _h0(h0, batch, nh, dtype):
    if h0 is None:
        return np.zeros((batch, nh), dtype=dtype)
    return check_array(h0, "h0", shape=(batch, nh)).astype(dtype, copy=False)


def _check_X(X):
    return check_array(X, "X", shape=("T", "B", "nx"), min_size={"T": 1, "B": 1, "nx": 1})


# --------------------------------------------------------------------------- GRU
def gru_system(params, *, implicit: bool = False, gamma: float = 1.0):
    """``(f, jac, jac_diag)`` of the GRU cell for :func:`solve` (inputs: the projection ``GI``)."""
    _gru.check_params(params)
    gamma = check_float(gamma, "gamma", low=0.0, low_inclusive=False)
    implicit = check_bool(implicit, "implicit")

    # checked once above; the solver's iterates are checked by the solver itself (a NaN or inf iterate is its
    # NewtonDivergence, not a bad-argument error from inside the cell)
    def f(Hprev, GI):
        return _jx.gru_step_unchecked(params, Hprev, GI, implicit=implicit, gamma=gamma)

    def jac(Hprev, GI):
        return _jx.gru_jacobian_unchecked(params, Hprev, GI, implicit=implicit, gamma=gamma)

    def jac_diag(Hprev, GI):
        return _jx.gru_jacobian_unchecked(params, Hprev, GI, implicit=implicit, gamma=gamma, diagonal=True)

    return f, jac, jac_diag


def gru_forward(params, X, h0=None, *, method: str = "newton", implicit: bool = False, gamma: float = 1.0,
                tol: float | None = None, max_iter: int | None = None, init=None, scan: str = "sequential",
                clip: float = 1.0, return_history: bool = False, callback=None):
    """The GRU of :mod:`course_lib.models.gru` over ``X`` (T, B, nx) from ``h0`` (B, H), solved by
    Newton over the sequence -> ``H`` (T, B, H) (or ``(H, history)``). Equal to
    ``models.gru.gru_forward(params, X, h0, implicit=implicit, dt=gamma)`` at convergence."""
    f, jac, jac_diag = gru_system(params, implicit=implicit, gamma=gamma)
    return_history = check_bool(return_history, "return_history")
    if callback is not None:
        check_callable(callback, "callback", "a function callback(k, H)")
    X = _check_X(X)
    GI = _jx.gru_input_projection(params, X)
    h0 = _h0(h0, X.shape[1], params.nh, GI.dtype)
    out, hist = solve(f, jac, h0, GI, method=method, tol=tol, max_iter=max_iter, init=init,
                      jac_diag=jac_diag, clip=clip, scan=scan, callback=callback)
    return (out, hist) if return_history else out


def gru_gradient(params, X, dH, h0=None, *, H=None, method: str = "newton", implicit: bool = False,
                 gamma: float = 1.0, tol: float | None = None, max_iter: int | None = None,
                 scan: str = "sequential"):
    """Gradients of a loss with ``dL/dH = dH`` (T, B, H) w.r.t. the GRU parameters and ``h0``.

    Forward by DEER (unless the states ``H`` are given), then the implicit function theorem: one
    transposed linear recurrence through the converged Jacobians gives the adjoint, and the weight
    gradients are independent per step (:func:`course_lib.models.gru.cell_param_grads`, the GRU's own
    cell backward). Returns ``(grads, dh0)`` like ``models.gru.gru_backward``: ``grads`` a
    :class:`~course_lib.models.gru.GRUParams`."""
    _, jac, _ = gru_system(params, implicit=implicit, gamma=gamma)
    X = _check_X(X)
    GI = _jx.gru_input_projection(params, X)
    nh = params.nh
    h0 = _h0(h0, X.shape[1], nh, GI.dtype)
    dH = check_array(dH, "dH", shape=X.shape[:2] + (nh,))
    if H is None:
        H = gru_forward(params, X, h0, method=method, implicit=implicit, gamma=gamma, tol=tol,
                        max_iter=max_iter, scan=scan)
    else:
        H = check_array(H, "H", shape=X.shape[:2] + (nh,))

    def vjp(Hprev, GI_, lam):
        return _gru.cell_param_grads(params, X, GI_, Hprev, lam, implicit=implicit, gamma=gamma)

    return gradient(jac, H, h0, GI, dH.astype(H.dtype), vjp=vjp, scan=scan)


def gru_lyapunov(params, X, h0=None, *, implicit: bool = False, gamma: float = 1.0, seed: int = 0) -> float:
    """Largest Lyapunov exponent of the GRU along its trajectory on ``X`` (per step)."""
    _, jac, _ = gru_system(params, implicit=implicit, gamma=gamma)
    seed = check_int(seed, "seed", low=0)
    X = _check_X(X)
    GI = _jx.gru_input_projection(params, X)
    h0 = _h0(h0, X.shape[1], params.nh, GI.dtype)
    Hs = _jx.gru_serial_numba(params, X, h0, implicit=implicit, gamma=gamma)
    return lyapunov_exponent(jac, Hs, h0, GI, seed=seed)


# --------------------------------------------------------------------------- Elman
def _elman_weights(params):
    if not isinstance(params, RNNParams):
        raise TypeError(f"params: expected RNNParams (models.rnn.init_params), got {type(params).__name__}")
    dims: dict = {}
    Wxh = check_array(params.Wxh, "params.Wxh", shape=("nx", "H"), dims=dims)
    Whh = check_array(params.Whh, "params.Whh", shape=("H", "H"), dims=dims)
    return Wxh, Whh


def elman_system(params):
    """``(f, jac, jac_diag)`` of the Elman step for :func:`solve` (inputs: ``XW = X Wxh``)."""
    _, Whh = _elman_weights(params)
    return (lambda Hprev, XW: _jx.elman_step_unchecked(Whh, Hprev, XW),
            lambda Hprev, XW: _jx.elman_jacobian(Whh, Hprev, XW),
            lambda Hprev, XW: _jx.elman_jacobian(Whh, Hprev, XW, diagonal=True))


def elman_forward(params, X, h0=None, *, method: str = "newton", tol: float | None = None,
                  max_iter: int | None = None, init=None, scan: str = "sequential", clip: float = 1.0,
                  return_history: bool = False, callback=None):
    """The Elman RNN of :mod:`course_lib.models.rnn` (``h_t = tanh(x_t Wxh + h_{t-1} Whh)``) by Newton
    over the sequence -> hidden states ``H`` (T, B, nh) (or ``(H, history)``)."""
    Wxh, _ = _elman_weights(params)
    return_history = check_bool(return_history, "return_history")
    if callback is not None:
        check_callable(callback, "callback", "a function callback(k, H)")
    X = _check_X(X)
    if X.shape[-1] != Wxh.shape[0]:
        raise ValueError(f"X: expected {Wxh.shape[0]} features (rows of Wxh), got shape {X.shape}")
    XW = X @ Wxh
    h0 = _h0(h0, X.shape[1], Wxh.shape[1], XW.dtype)
    f, jac, jac_diag = elman_system(params)
    out, hist = solve(f, jac, h0, XW, method=method, tol=tol, max_iter=max_iter, init=init, jac_diag=jac_diag,
                      clip=clip, scan=scan, callback=callback)
    return (out, hist) if return_history else out
