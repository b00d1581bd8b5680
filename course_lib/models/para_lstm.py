"""An LSTM designed for parallel Newton: element-wise recurrent terms, a 2x2 block-diagonal Jacobian (models/).

ParaRNN (Danieli et al., Apple, ICLR 2026; code ``apple/ml-pararnn``) makes the LSTM's recurrent
terms element-wise ("ParaLSTM"), like the GRU of :mod:`course_lib.models.diag_gru`. ParaRNN's released
cell also couples the input and forget gates (CIFG) and adds peephole terms on c; this one keeps the four
gates of the course's LSTM -- the Jacobian has the same 2x2 block structure. Row-vector maths,
time-major ``X (T, B, nx)``, gates from one input GEMM plus element-wise recurrent terms::

    i_t = sigmoid(x_t W_i + u_i * h_{t-1} + b_i)      f_t = sigmoid(x_t W_f + u_f * h_{t-1} + b_f)
    g_t = tanh(x_t W_g + u_g * h_{t-1} + b_g)         o_t = sigmoid(x_t W_o + u_o * h_{t-1} + b_o)
    c_t = f_t * c_{t-1} + i_t * g_t                   h_t = o_t * tanh(c_t)

Unit j's pair ``(c_t[j], h_t[j])`` depends only on ``(c_{t-1}[j], h_{t-1}[j])``: the Jacobian of the
whole state is **2x2 block-diagonal**. The solver's state is ``S (T, B, nh, 2)`` (``S[..., 0] = c``,
``S[..., 1] = h``) and its Jacobian ``(T, B, nh, 2, 2)`` -- a scan over 2x2 matrices per unit, O(T nh)
per iteration, where the dense LSTM's Newton scan combines ``2nh x 2nh`` matrices.

``forward(params, X, h0=None, *, method)``: ``"sequential"`` (the loop), ``"newton"`` (DEER with the
full ``2nh x 2nh`` Jacobian, the 2x2 blocks embedded in it) or ``"quasi"`` (the 2x2 blocks only: for
this cell the block-diagonal approximation *is* the Jacobian, so quasi and Newton give the same
iterates). ``init="f0"`` starts from ``S^0_t = f(0, x_t)`` (ParaRNN), ``"zeros"`` from zeros; ``iters``
fixes the number of iterations, ``None`` runs to ``tol``. ``h0`` here is the initial *state*
``(B, nh, 2)`` (c and h; default zeros). ``forward`` returns ``S (T, B, nh, 2)``; ``S[..., 1]`` are
the hidden states.

Public API: ``ParaLSTMParams``, ``METHODS``, ``INITS``, ``init_params``, ``system``, ``jacobian_blocks``,
``forward``, ``solve``, ``backward``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..algorithms import newton
from ..core.params import Params
from ..core.validate import (check_alloc, check_array, check_choice, check_count, check_dtype, check_fields, check_float,
                             check_int, check_positive_int, largest)

__all__ = ["ParaLSTMParams", "METHODS", "INITS", "init_params", "system", "jacobian_blocks", "forward", "solve",
           "backward", "check_params"]

METHODS = ("sequential", "newton", "quasi")
INITS = ("f0", "zeros")


@dataclass
class ParaLSTMParams(Params):
    """``W_x (nx, 4 nh)`` (i, f, g, o blocks), ``u (4 nh,)`` the element-wise recurrent weights,
    ``b (4 nh,)``. Gradients come back in the same class."""

    W_x: np.ndarray
    u: np.ndarray
    b: np.ndarray

    @property
    def nx(self) -> int:
        return self.W_x.shape[0]

    @property
    def nh(self) -> int:
        return self.u.shape[0] // 4


def init_params(nx: int, nh: int, *, seed: int = 0, dtype="float64", recurrent_scale: float = 1.0) -> ParaLSTMParams:
    """Uniform(-1/sqrt(nx), 1/sqrt(nx)) input weights, ``u ~ Uniform(-s, s)`` (s = ``recurrent_scale``),
    forget-gate bias +1 (lean towards keeping the cell)."""
    nx, nh = check_positive_int(nx, "nx"), check_positive_int(nh, "nh")
    s = check_float(recurrent_scale, "recurrent_scale", low=0.0)
    seed, dtype = check_int(seed, "seed", low=0), check_dtype(dtype)
    check_alloc((nx + 2, 4 * nh), np.float64, largest(nx=nx, nh=nh), what="the weights")
    rng = np.random.default_rng(seed)
    k = 1.0 / np.sqrt(nx)
    b = np.zeros(4 * nh)
    b[nh:2 * nh] = 1.0
    return ParaLSTMParams(W_x=rng.uniform(-k, k, (nx, 4 * nh)).astype(dtype),
                          u=rng.uniform(-s, s, 4 * nh).astype(dtype), b=b.astype(dtype))


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def check_params(params) -> ParaLSTMParams:
    """``params`` must be a :class:`ParaLSTMParams` with consistent, finite arrays of one float dtype
    (``W_x (nx, 4 nh)``, ``u, b (4 nh,)``)."""
    if not isinstance(params, ParaLSTMParams):
        raise TypeError(f"params: expected ParaLSTMParams (para_lstm.init_params), got {type(params).__name__}")
    dims = check_fields(params, "params", {"W_x": ("nx", "4nh"), "u": ("4nh",), "b": ("4nh",)})
    if dims["4nh"] % 4 or dims["4nh"] == 0:
        raise ValueError(f"params.u: expected 4 * nh entries (one per gate and unit, nh >= 1), got {dims['4nh']}")
    if dims["nx"] == 0:
        raise ValueError("params.W_x: expected at least one input row (nx >= 1), got shape "
                         f"{np.shape(params.W_x)}")
    return params


def _check_X(params, X):
    return check_array(X, "X", shape=("T", "B", "nx"), dims={"nx": params.nx}, min_size={"T": 1, "B": 1})


def _s0(params, h0, B, dtype):
    if h0 is None:
        return np.zeros((B, params.nh, 2), dtype=dtype)
    return check_array(h0, "h0", shape=(B, params.nh, 2)).astype(dtype, copy=False)


def _gates(params, Sprev, GI):
    """``i, f, g, o`` ``(T, B, nh)`` from ``Sprev (T, B, nh, 2)`` and ``GI = X W_x + b (T, B, 4 nh)``."""
    n = params.nh
    h = Sprev[..., 1]
    a = GI + params.u * np.concatenate([h, h, h, h], axis=-1)
    return _sigmoid(a[..., :n]), _sigmoid(a[..., n:2 * n]), np.tanh(a[..., 2 * n:3 * n]), _sigmoid(a[..., 3 * n:])


def _f(params, Sprev, GI):
    i, f, g, o = _gates(params, Sprev, GI)
    c = f * Sprev[..., 0] + i * g
    return np.stack([c, o * np.tanh(c)], axis=-1)


def jacobian_blocks(params, Sprev, GI):
    """``d(c_t, h_t)/d(c_{t-1}, h_{t-1})`` per unit: ``(T, B, nh, 2, 2)`` (column convention,
    index 0 = c, 1 = h) -- the whole Jacobian, it is block-diagonal."""
    check_params(params)
    Sprev = check_array(Sprev, "Sprev", shape=(None, None, params.nh, 2))
    GI = check_array(GI, "GI", shape=Sprev.shape[:2] + (4 * params.nh,))
    if GI.dtype != Sprev.dtype:
        raise TypeError(f"GI: expected the dtype of Sprev ({Sprev.dtype}), got {GI.dtype}")
    return _jacobian_blocks(params, Sprev, GI)


def _jacobian_blocks(params, Sprev, GI):
    n = params.nh
    u_i, u_f, u_g, u_o = params.u[:n], params.u[n:2 * n], params.u[2 * n:3 * n], params.u[3 * n:]
    i, f, g, o = _gates(params, Sprev, GI)
    c_prev = Sprev[..., 0]
    c = f * c_prev + i * g
    tc = np.tanh(c)
    k = o * (1.0 - tc * tc)
    dc_dh = c_prev * f * (1.0 - f) * u_f + g * i * (1.0 - i) * u_i + i * (1.0 - g * g) * u_g
    J = np.empty(Sprev.shape + (2,), dtype=np.result_type(Sprev, GI))
    J[..., 0, 0] = f
    J[..., 0, 1] = dc_dh
    J[..., 1, 0] = k * f
    J[..., 1, 1] = o * (1.0 - o) * u_o * tc + k * dc_dh
    return J


def system(params):
    """``(f, jac_blocks, jac_dense, f_dense)`` for :func:`course_lib.algorithms.newton.solve` with
    ``X`` = the input projections ``GI = X W_x + b`` (T, B, 4 nh): ``f``/``jac_blocks`` on the block
    layout ``(T, B, nh, 2)`` (Jacobian ``(T, B, nh, 2, 2)``), ``f_dense``/``jac_dense`` on the flat
    state ``(T, B, 2 nh)`` (``[c_0, h_0, c_1, h_1, ...]``; Jacobian ``(T, B, 2nh, 2nh)``)."""
    check_params(params)
    n = params.nh

    def f(Sprev, GI):
        return _f(params, Sprev, GI)

    def jac_blocks(Sprev, GI):
        return _jacobian_blocks(params, Sprev, GI)

    def f_dense(Fprev, GI):
        return _f(params, Fprev.reshape(Fprev.shape[:-1] + (n, 2)), GI).reshape(Fprev.shape)

    def jac_dense(Fprev, GI):
        Jb = _jacobian_blocks(params, Fprev.reshape(Fprev.shape[:-1] + (n, 2)), GI)
        J = np.zeros(Fprev.shape + (2 * n,), dtype=Jb.dtype)
        for a in range(2):
            for b in range(2):
                J[..., np.arange(n) * 2 + a, np.arange(n) * 2 + b] = Jb[..., a, b]
        return J
    return f, jac_blocks, jac_dense, f_dense


def _projections(params, X):
    return X @ params.W_x + params.b


def solve(params, X, h0=None, *, method: str = "quasi", init: str = "f0", iters: int | None = None,
          tol: float | None = None):
    """Parallel Newton forward: ``(S (T, B, nh, 2), history)`` (history: max |residual| per iterate).
    ``"quasi"``: the 2x2-block scan; ``"newton"``: the dense ``2nh x 2nh`` scan. ``iters`` fixed
    iterations (``tol`` then ignored) or ``None``: run until ``max |r| <= tol``."""
    check_params(params)
    check_choice(method, "method", ("newton", "quasi"))
    check_choice(init, "init", INITS)
    iters = None if iters is None else check_count(iters, "iters", low=0)
    tol = None if tol is None else check_float(tol, "tol", low=0.0)
    X = _check_X(params, X)
    s0 = _s0(params, h0, X.shape[1], np.result_type(X, params.W_x))   # the dtype of GI: one dtype in the solver
    GI = _projections(params, X)
    f, jac_blocks, jac_dense, f_dense = system(params)
    T, B, n = X.shape[0], X.shape[1], params.nh
    start = f(np.zeros((T,) + s0.shape, dtype=s0.dtype), GI) if init == "f0" else None
    kw = dict(tol=0.0, max_iter=iters, diverge_factor=1e300) if iters is not None \
        else dict(tol=tol)
    if method == "quasi":
        return newton.solve(f, jac_blocks, s0, GI, method="newton", init=start, **kw)
    flat = None if start is None else start.reshape(T, B, 2 * n)
    S, hist = newton.solve(f_dense, jac_dense, s0.reshape(B, 2 * n), GI, method="newton", init=flat, **kw)
    return S.reshape(T, B, n, 2), hist


def forward(params, X, h0=None, *, method: str = "sequential", init: str = "f0", iters: int | None = None,
            tol: float | None = None) -> np.ndarray:
    """All states ``S (T, B, nh, 2)`` (``S[..., 1]`` the hidden states); ``method`` one of :data:`METHODS`
    (``init``, ``iters`` and ``tol`` are the parallel methods'; checked for every method)."""
    check_params(params)
    check_choice(method, "method", METHODS)
    check_choice(init, "init", INITS)
    if iters is not None:
        check_count(iters, "iters", low=0)
    if tol is not None:
        check_float(tol, "tol", low=0.0)
    if method != "sequential":
        return solve(params, X, h0, method=method, init=init, iters=iters, tol=tol)[0]
    X = _check_X(params, X)
    s = _s0(params, h0, X.shape[1], X.dtype)
    GI = _projections(params, X)
    out = np.empty((X.shape[0],) + s.shape, dtype=X.dtype)
    for t in range(X.shape[0]):
        s = _f(params, s[None], GI[t:t + 1])[0]
        out[t] = s
    return out


def _step_vjp(params, Sprev, X, lam):
    """Parameter gradients of ``sum_t <lam_t, f(s_{t-1}, x_t)>`` (all t at once, ``lam (T, B, nh, 2)``)
    and ``lam`` pulled back to ``s_{t-1}``."""
    n = params.nh
    h, c_prev = Sprev[..., 1], Sprev[..., 0]
    i, f, g, o = _gates(params, Sprev, _projections(params, X))
    c = f * c_prev + i * g
    tc = np.tanh(c)
    dc = lam[..., 0] + lam[..., 1] * o * (1.0 - tc * tc)
    da = [dc * g * i * (1.0 - i), dc * c_prev * f * (1.0 - f), dc * i * (1.0 - g * g), lam[..., 1] * tc * o * (1.0 - o)]
    dA = np.concatenate(da, axis=-1)
    gr = params.zeros_like()
    gr.W_x = np.tensordot(X, dA, axes=([0, 1], [0, 1]))
    gr.b = dA.sum(axis=(0, 1))
    gr.u = np.concatenate([(d * h).sum(axis=(0, 1)) for d in da])
    dh = sum(d * params.u[k * n:(k + 1) * n] for k, d in enumerate(da))
    return gr, np.stack([dc * f, dh], axis=-1)


def backward(params, X, S, dS, h0=None, *, method: str = "sequential"):
    """Gradients of a loss with ``dL/dS = dS (T, B, nh, 2)``: ``(grads, ds0)``, ``grads`` a
    :class:`ParaLSTMParams`. ``"sequential"``: BPTT through the loop, one step at a time;
    ``"newton"``/``"quasi"``: the adjoint ``lam_t = dS_t + J_{t+1}^T lam_{t+1}`` by one scan of 2x2
    blocks backwards (:func:`course_lib.algorithms.newton.gradient`), then every step's parameter
    gradient at once."""
    check_params(params)
    check_choice(method, "method", METHODS)
    X = _check_X(params, X)
    S = check_array(S, "S", shape=X.shape[:2] + (params.nh, 2))
    dS = check_array(dS, "dS", shape=S.shape)
    s0 = _s0(params, h0, X.shape[1], X.dtype)
    Sprev = np.concatenate([s0[None], S[:-1]], axis=0)
    if method == "sequential":
        g, ds = params.zeros_like(), np.zeros_like(s0)
        for t in range(X.shape[0] - 1, -1, -1):
            gt, ds = _step_vjp(params, Sprev[t:t + 1], X[t:t + 1], dS[t:t + 1] + ds[None])
            ds = ds[0]
            for name in ("W_x", "u", "b"):
                setattr(g, name, getattr(g, name) + getattr(gt, name))
        return g, ds
    _, jac_blocks, _, _ = system(params)
    lam, ds0 = newton.gradient(jac_blocks, S, s0, _projections(params, X), dS)
    g, _ = _step_vjp(params, Sprev, X, lam)
    return g, ds0
