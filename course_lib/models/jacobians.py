"""Step functions and their analytic Jacobians, for Newton over the sequence (models/).

DEER (course_lib.algorithms.newton) needs, for every time step at once, the step ``f(h_{t-1}, x_t)``
and its Jacobian ``J_t = df/dh_{t-1}`` (column convention: ``J[..., i, j] = d h_t[i] / d h_{t-1}[j]``).

Elman RNN (chapter 01, row-vector maths, ``XW = X Wxh`` precomputed)::

    h_t = tanh(XW_t + h_{t-1} Whh)              J_t[i, j] = (1 - h_t[i]^2) Whh[j, i]

GRU (chapters 09/10, PyTorch layout and gate order r, z, n; ``GI = X W_ih^T + b_ih`` precomputed,
``gh = h W_hh^T + b_hh``, ``W_r, W_z, W_n`` the three row blocks of ``W_hh``)::

    r = sigma(GI_r + gh_r)   z = sigma(GI_z + gh_z)   n = tanh(GI_n + r * gh_n)     a = gamma (1 - z)
    classic:   h' = h + a (n - h)                  implicit:  h' = (h + a n) / (1 + a)

    dr[i, j] = r_i (1 - r_i) W_r[i, j]      dz[i, j] = z_i (1 - z_i) W_z[i, j]
    dn[i, j] = (1 - n_i^2) (dr[i, j] gh_n[i] + r_i W_n[i, j])
    classic:   J = diag(1 - a) + a_i dn[i, j] - gamma (n_i - h_i) dz[i, j]
    implicit:  J = diag(1 / (1 + a)) + a_i / (1 + a_i) dn[i, j] - gamma (n_i - h'_i) / (1 + a_i) dz[i, j]

``diagonal=True`` returns only ``diag(J_t)`` (quasi-DEER) in ``O(H)`` per step.
GRU parameters are a :class:`course_lib.models.gru.GRUParams`; the cell and its gates are that
module's own (``gru_step`` and ``gru_gates`` only put the state first, DEER's argument order). The
numba loops ``gru_serial_numba`` and ``elman_serial_numba`` are the compiled sequential baselines
DEER has to beat (the same cell, written as one loop so no Python runs per step).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..core.validate import check_alloc, check_array, check_float, check_shape
from . import gru as _gru

__all__ = [
    "gru_input_projection",
    "gru_gates",
    "gru_step",
    "gru_jacobian",
    "gru_serial_numba",
    "elman_step",
    "elman_jacobian",
    "elman_serial_numba",
    "finite_difference_jacobian",
]


def _gru_params(params) -> _gru.GRUParams:
    """``params`` checked (a :class:`~course_lib.models.gru.GRUParams`: shapes, float dtypes, finite)."""
    p, _, _ = _gru.check_params(params)
    return p


# --------------------------------------------------------------------------- GRU
# The cell and its gates are models.gru's own (the one GRU); here they take DEER's argument order
# (state first, all steps at once). The public functions check their arguments (shapes, dtypes, NaN/inf);
# the ``*_unchecked`` twins skip that, for a solver's inner loop whose divergence detectors expect NaN/inf
# to pass through.
def _check_states(p, Hprev, GI):
    """``Hprev (..., H)`` and ``GI (..., 3H)`` (the same leading axes), float and finite."""
    H = p.W_hh.shape[1]
    Hprev = check_array(Hprev, "Hprev", ndim=(1, 2, 3, 4))
    check_shape(Hprev, "Hprev", (None,) * (Hprev.ndim - 1) + (H,))
    GI = check_array(GI, "GI", ndim=(1, 2, 3, 4))
    check_shape(GI, "GI", (None,) * (GI.ndim - 1) + (3 * H,))
    if GI.shape[:-1] != Hprev.shape[:-1]:
        raise ValueError(f"Hprev, GI: expected the same leading axes (T, *batch), got Hprev {Hprev.shape} "
                         f"and GI {GI.shape}")
    return Hprev, GI


def gru_input_projection(params, X) -> np.ndarray:
    """``GI = X W_ih^T + b_ih``: (T, B, nx) -> (T, B, 3H), one GEMM for all steps (:func:`models.gru.input_projection`)."""
    return _gru.input_projection(params, X)


def gru_gates(params, Hprev, GI):
    """``(r, z, n, gh)`` at the states ``Hprev`` (..., H) with input projections ``GI`` (..., 3H)
    (the gates of :mod:`course_lib.models.gru`, plus ``gh = h W_hh^T + b_hh``)."""
    p = _gru_params(params)
    Hprev, GI = _check_states(p, Hprev, GI)
    return _gru.gates_unchecked(p, GI, Hprev)


def gru_step(params, Hprev, GI, *, implicit: bool = False, gamma: float = 1.0) -> np.ndarray:
    """The GRU cell of :mod:`course_lib.models.gru` for all steps at once: ``f(h_{t-1}, x_t)``."""
    p = _gru_params(params)
    Hprev, GI = _check_states(p, Hprev, GI)
    gamma = check_float(gamma, "gamma", low=0.0, low_inclusive=False)
    return _gru.cell_unchecked(p, GI, Hprev, implicit=implicit, gamma=gamma)


def gru_step_unchecked(params, Hprev, GI, *, implicit: bool = False, gamma: float = 1.0) -> np.ndarray:
    """:func:`gru_step` without checking the states (NaN/inf pass through): a solver's inner loop."""
    return _gru.cell_unchecked(params, GI, Hprev, implicit=implicit, gamma=gamma)


def gru_jacobian(params, Hprev, GI, *, implicit: bool = False, gamma: float = 1.0,
                 diagonal: bool = False) -> np.ndarray:
    """``J_t = d gru_step / d h_{t-1}``: ``(..., H, H)`` (or its diagonal ``(..., H)``), see the module doc."""
    p = _gru_params(params)
    Hprev, GI = _check_states(p, Hprev, GI)
    gamma = check_float(gamma, "gamma", low=0.0, low_inclusive=False)
    check_alloc(Hprev.shape + (1 if diagonal else p.W_hh.shape[1],), Hprev.dtype, "Hprev", what="the Jacobians")
    return gru_jacobian_unchecked(p, Hprev, GI, implicit=implicit, gamma=gamma, diagonal=diagonal)


def gru_jacobian_unchecked(p, Hprev, GI, *, implicit: bool = False, gamma: float = 1.0,
                           diagonal: bool = False) -> np.ndarray:
    """:func:`gru_jacobian` without checking its arguments (NaN/inf pass through): a solver's inner loop."""
    W_hh = p.W_hh
    H = W_hh.shape[1]
    r, z, n, gh = _gru.gates_unchecked(p, GI, Hprev)
    a = gamma * (1.0 - z)
    ghn = gh[..., 2 * H:]
    Wr, Wz, Wn = W_hh[:H], W_hh[H:2 * H], W_hh[2 * H:]
    if implicit:
        hnew = (Hprev + a * n) / (1.0 + a)
        c_diag = 1.0 / (1.0 + a)
        c_n = a / (1.0 + a)
        c_z = -gamma * (n - hnew) / (1.0 + a)
    else:
        c_diag = 1.0 - a
        c_n = a
        c_z = -gamma * (n - Hprev)
    sr = r * (1.0 - r)
    sz = z * (1.0 - z)
    sn = 1.0 - n * n
    if diagonal:
        dr = sr * np.diagonal(Wr)
        dz = sz * np.diagonal(Wz)
        dn = sn * (dr * ghn + r * np.diagonal(Wn))
        return c_diag + c_n * dn + c_z * dz
    dr = sr[..., :, None] * Wr  # (..., H, H)
    dz = sz[..., :, None] * Wz
    dn = sn[..., :, None] * (dr * ghn[..., :, None] + r[..., :, None] * Wn)
    J = c_n[..., :, None] * dn + c_z[..., :, None] * dz
    idx = np.arange(H)
    J[..., idx, idx] += c_diag
    return J


@njit(cache=True)
def _gru_loop(GI, W_hh, b_hh, h0, implicit, gamma, out):
    T, B, H3 = GI.shape
    H = H3 // 3
    h = np.empty(H, dtype=GI.dtype)
    gh = np.empty(H3, dtype=GI.dtype)
    for b in range(B):
        for i in range(H):
            h[i] = h0[b, i]
        for t in range(T):
            for g in range(H3):
                s = b_hh[g]
                for j in range(H):
                    s += W_hh[g, j] * h[j]
                gh[g] = s
            for i in range(H):
                r = 0.5 * (1.0 + np.tanh(0.5 * (GI[t, b, i] + gh[i])))
                z = 0.5 * (1.0 + np.tanh(0.5 * (GI[t, b, H + i] + gh[H + i])))
                n = np.tanh(GI[t, b, 2 * H + i] + r * gh[2 * H + i])
                a = gamma * (1.0 - z)
                if implicit:
                    out[t, b, i] = (h[i] + a * n) / (1.0 + a)
                else:
                    out[t, b, i] = h[i] + a * (n - h[i])
            for i in range(H):
                h[i] = out[t, b, i]


def gru_serial_numba(params, X, h0=None, *, implicit: bool = False, gamma: float = 1.0) -> np.ndarray:
    """The sequential GRU march as one compiled loop (the baseline; no Python per step) -> (T, B, H)."""
    p = _gru_params(params)
    W_hh, b_hh = p.W_hh, p.b_hh
    GI = np.ascontiguousarray(_gru.input_projection(p, X))
    if GI.ndim != 3:
        raise ValueError(f"X: expected shape (T, B, nx), got {np.shape(X)}")
    H = W_hh.shape[1]
    h0 = np.zeros((GI.shape[1], H), GI.dtype) if h0 is None else check_array(h0, "h0", shape=(GI.shape[1], H))
    gamma = check_float(gamma, "gamma", low=0.0, low_inclusive=False)
    out = np.empty(GI.shape[:2] + (H,), dtype=GI.dtype)
    _gru_loop(GI, np.ascontiguousarray(W_hh, dtype=GI.dtype), np.ascontiguousarray(b_hh, dtype=GI.dtype),
              np.ascontiguousarray(h0, dtype=GI.dtype), bool(implicit), gamma, out)
    return out


# --------------------------------------------------------------------------- Elman RNN
def elman_step(Whh, Hprev, XW) -> np.ndarray:
    """``tanh(XW + H_prev Whh)`` for all steps at once (``XW = X Wxh``)."""
    dims: dict = {}
    Whh = check_array(Whh, "Whh", shape=("H", "H"), dims=dims)
    Hprev = check_array(Hprev, "Hprev", ndim=(1, 2, 3))
    check_shape(Hprev, "Hprev", (None,) * (Hprev.ndim - 1) + ("H",), dims)
    XW = check_array(XW, "XW", shape=Hprev.shape)
    return elman_step_unchecked(Whh, Hprev, XW)


def elman_step_unchecked(Whh, Hprev, XW) -> np.ndarray:
    return np.tanh(XW + Hprev @ Whh)


def elman_jacobian(Whh, Hprev, XW, *, diagonal: bool = False) -> np.ndarray:
    """``J_t[i, j] = (1 - h_t[i]^2) Whh[j, i]``: ``(..., H, H)`` or the diagonal ``(..., H)``."""
    dims: dict = {}
    Whh = check_array(Whh, "Whh", shape=("H", "H"), dims=dims)
    Hprev = check_array(Hprev, "Hprev", ndim=(1, 2, 3))
    check_shape(Hprev, "Hprev", (None,) * (Hprev.ndim - 1) + ("H",), dims)
    XW = check_array(XW, "XW", ndim=(1, 2, 3))
    if XW.shape != Hprev.shape:
        raise ValueError(f"Hprev, XW: expected the same shape, got Hprev {Hprev.shape} and XW {XW.shape}")
    check_alloc(Hprev.shape + (1 if diagonal else dims["H"],), Hprev.dtype, "Hprev", what="the Jacobians")
    return elman_jacobian_unchecked(Whh, Hprev, XW, diagonal=diagonal)


def elman_jacobian_unchecked(Whh, Hprev, XW, *, diagonal: bool = False) -> np.ndarray:
    """:func:`elman_jacobian` without checking its arguments (NaN/inf pass through): a solver's inner loop."""
    h = np.tanh(XW + Hprev @ Whh)
    s = 1.0 - h * h
    if diagonal:
        return s * np.diagonal(Whh)
    return s[..., :, None] * Whh.T


@njit(cache=True)
def _elman_loop(XW, Whh, h0, out):
    T, B, H = XW.shape
    h = np.empty(H, dtype=XW.dtype)
    for b in range(B):
        for i in range(H):
            h[i] = h0[b, i]
        for t in range(T):
            for i in range(H):
                s = XW[t, b, i]
                for j in range(H):
                    s += h[j] * Whh[j, i]
                out[t, b, i] = np.tanh(s)
            for i in range(H):
                h[i] = out[t, b, i]


def elman_serial_numba(Wxh, Whh, X, h0=None) -> np.ndarray:
    """The sequential Elman march as one compiled loop -> (T, B, H)."""
    dims: dict = {}
    Wxh = check_array(Wxh, "Wxh", shape=("nx", "H"), dims=dims)
    Whh = check_array(Whh, "Whh", shape=("H", "H"), dims=dims)
    X = check_array(X, "X", shape=("T", "B", "nx"), dims=dims)
    XW = np.ascontiguousarray(X @ Wxh)
    h0 = np.zeros((dims["B"], dims["H"]), XW.dtype) if h0 is None else check_array(h0, "h0", shape=(dims["B"], dims["H"]))
    out = np.empty_like(XW)
    _elman_loop(XW, np.ascontiguousarray(Whh, dtype=XW.dtype), np.ascontiguousarray(h0, dtype=XW.dtype), out)
    return out


# --------------------------------------------------------------------------- checking
def finite_difference_jacobian(step, Hprev, eps: float = 1e-6) -> np.ndarray:
    """Central differences of ``step(Hprev) -> (..., H)`` w.r.t. ``Hprev`` (..., H) -> (..., H, H) (float64)."""
    if not callable(step):
        raise TypeError(f"step: expected a function step(Hprev) -> (..., H), got {type(step).__name__}")
    Hprev = check_array(Hprev, "Hprev", ndim=(1, 2, 3, 4), dtype=None)
    if Hprev.dtype.kind not in "iuf" or Hprev.shape[-1] < 1:
        raise TypeError(f"Hprev: expected a real array (..., H) with H >= 1, got dtype {Hprev.dtype}, shape {Hprev.shape}")
    Hprev = Hprev.astype(np.float64)
    eps = check_float(eps, "eps", low=0.0, low_inclusive=False)
    H = Hprev.shape[-1]
    check_alloc(Hprev.shape + (H,), np.float64, "Hprev", what="the Jacobian")
    J = np.empty(Hprev.shape + (H,))
    for j in range(H):
        e = np.zeros(H)
        e[j] = eps
        J[..., :, j] = (step(Hprev + e) - step(Hprev - e)) / (2 * eps)
    return J
