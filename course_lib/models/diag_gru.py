"""A GRU designed for parallel Newton: element-wise recurrent terms, a diagonal Jacobian (models/).

ParaRNN (Danieli et al., Apple, ICLR 2026; code ``apple/ml-pararnn``) replaces the GRU's recurrent
matrices ``U h`` by element-wise products ``u * h`` ("ParaGRU"). Row-vector maths, time-major
``X (T, B, nx)``, gates from one input GEMM plus diagonal recurrent terms::

    z_t = sigmoid(x_t W_z + u_z * h_{t-1} + b_z)
    r_t = sigmoid(x_t W_r + u_r * h_{t-1} + b_r)
    c_t = tanh(x_t W_c + u_c * (r_t * h_{t-1}) + b_c)
    h_t = (1 - z_t) * h_{t-1} + z_t * c_t

Unit i of ``h_t`` depends only on unit i of ``h_{t-1}``, so ``J_t = dh_t/dh_{t-1}`` is *diagonal*:
quasi-Newton (diag J) **is** Newton, the Newton scan is element-wise (O(T nh) per iteration, no nh^3
matrix products), and the adjoint of the backward pass is an element-wise scan too. Units still mix
through the input projections of the next layer (or the head); this cell trades recurrent mixing for
parallel-Newton speed.

``forward(params, X, h0=None, *, method)``: ``"sequential"`` (the loop), ``"newton"`` (DEER with the
full, diagonal-embedded Jacobian) or ``"quasi"`` (the diagonal only); ``init="f0"`` starts from
``h_t^0 = f(0, x_t)`` (ParaRNN's start), ``"zeros"`` from zeros; ``iters`` fixes the number of Newton
iterations (ParaRNN uses 3), ``None`` runs to ``tol``.

Public API: ``DiagGRUParams``, ``METHODS``, ``INITS``, ``init_params``, ``system``, ``jacobian_diagonal``,
``forward``, ``solve``, ``backward``, ``loss_and_grads``, ``predict``, ``train_classifier``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..algorithms import newton
from ..algorithms.scan import linear_recurrence
from ..core.optim import Adam
from ..core.params import Params
from ..core.results import TrainResult
from ..core.validate import (check_alloc, check_array, check_choice, check_count, check_dtype, check_fields, check_float,
                             check_ids, check_int, check_positive_int, largest)

__all__ = ["DiagGRUParams", "METHODS", "INITS", "init_params", "system", "jacobian_diagonal", "forward", "solve",
           "backward", "loss_and_grads", "predict", "train_classifier", "check_params"]

METHODS = ("sequential", "newton", "quasi")
INITS = ("f0", "zeros")


@dataclass
class DiagGRUParams(Params):
    """``W_x (nx, 3 nh)`` (z, r, c blocks), ``u (3 nh,)`` the element-wise recurrent weights,
    ``b (3 nh,)``; head ``W_out (nh, C)``, ``b_out (C,)``. Gradients come back in the same class."""

    W_x: np.ndarray
    u: np.ndarray
    b: np.ndarray
    W_out: np.ndarray
    b_out: np.ndarray

    @property
    def nx(self) -> int:
        return self.W_x.shape[0]

    @property
    def nh(self) -> int:
        return self.u.shape[0] // 3


def init_params(nx: int, nh: int, n_classes: int = 2, *, seed: int = 0, dtype="float64",
                recurrent_scale: float = 1.0) -> DiagGRUParams:
    """Uniform(-1/sqrt(nx), 1/sqrt(nx)) input weights, ``u ~ Uniform(-s, s)`` (s = ``recurrent_scale``),
    update-gate bias -1 (lean towards keeping the state), a small head."""
    nx, nh = check_positive_int(nx, "nx"), check_positive_int(nh, "nh")
    n_classes = check_int(n_classes, "n_classes", low=2)
    s = check_float(recurrent_scale, "recurrent_scale", low=0.0)
    seed, dtype = check_int(seed, "seed", low=0), check_dtype(dtype)
    check_alloc((nx + 3 + n_classes, 3 * nh), dtype, largest(nx=nx, nh=nh, n_classes=n_classes), what="the weights")
    rng = np.random.default_rng(seed)
    k = 1.0 / np.sqrt(nx)
    b = np.zeros(3 * nh)
    b[:nh] = -1.0
    return DiagGRUParams(W_x=rng.uniform(-k, k, (nx, 3 * nh)).astype(dtype),
                         u=rng.uniform(-s, s, 3 * nh).astype(dtype), b=b.astype(dtype),
                         W_out=(rng.standard_normal((nh, n_classes)) / np.sqrt(nh)).astype(dtype),
                         b_out=np.zeros(n_classes, dtype=dtype))


def check_params(params) -> DiagGRUParams:
    """``params`` must be a :class:`DiagGRUParams` with consistent, finite arrays of one float dtype."""
    if not isinstance(params, DiagGRUParams):
        raise TypeError(f"params: expected a DiagGRUParams, got {type(params).__name__}")
    dims = check_fields(params, "params", {"W_x": ("nx", "3nh"), "u": ("3nh",), "b": ("3nh",),
                                           "W_out": ("nh", "C"), "b_out": ("C",)})
    if dims["3nh"] != 3 * dims["nh"]:
        raise ValueError(f"params.u: expected 3 * nh = {3 * dims['nh']} entries (nh from params.W_out), "
                         f"got {dims['3nh']}")
    return params


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _check_X(params, X):
    return check_array(X, "X", shape=("T", "B", "nx"), dims={"nx": params.nx}, min_size={"T": 1, "B": 1})


def _h0(params, h0, B, dtype):
    if h0 is None:
        return np.zeros((B, params.nh), dtype=dtype)
    return check_array(h0, "h0", shape=(B, params.nh)).astype(dtype, copy=False)


def _gates(params, Hprev, GI):
    """``z, r, c`` for all steps at once from ``Hprev (T, B, nh)`` and ``GI = X W_x + b (T, B, 3 nh)``."""
    n = params.nh
    u_z, u_r, u_c = params.u[:n], params.u[n:2 * n], params.u[2 * n:]
    z = _sigmoid(GI[..., :n] + u_z * Hprev)
    r = _sigmoid(GI[..., n:2 * n] + u_r * Hprev)
    c = np.tanh(GI[..., 2 * n:] + u_c * (r * Hprev))
    return z, r, c


def _f(params, Hprev, GI):
    z, _, c = _gates(params, Hprev, GI)
    return (1.0 - z) * Hprev + z * c


def jacobian_diagonal(params, Hprev, GI):
    """``diag(dh_t/dh_{t-1})`` for all t: ``(T, B, nh)`` (the whole Jacobian: it is diagonal)."""
    check_params(params)
    Hprev = check_array(Hprev, "Hprev", shape=(None, None, params.nh), dims={})
    GI = check_array(GI, "GI", shape=Hprev.shape[:2] + (3 * params.nh,))
    return _jacobian_diagonal(params, Hprev, GI)


def _jacobian_diagonal(params, Hprev, GI):
    n = params.nh
    u_z, u_r, u_c = params.u[:n], params.u[n:2 * n], params.u[2 * n:]
    z, r, c = _gates(params, Hprev, GI)
    dz = z * (1.0 - z) * u_z
    dc = (1.0 - c * c) * u_c * (r + Hprev * r * (1.0 - r) * u_r)
    return (1.0 - z) + (c - Hprev) * dz + z * dc


def system(params):
    """``(f, jac, jac_diag)`` for :func:`course_lib.algorithms.newton.solve`, with ``X`` = the input
    projections ``GI = X W_x + b`` (T, B, 3 nh); ``jac`` embeds the diagonal in a full (nh, nh) matrix."""
    check_params(params)
    def f(Hprev, GI):
        return _f(params, Hprev, GI)

    def jac_diag(Hprev, GI):
        return _jacobian_diagonal(params, Hprev, GI)

    def jac(Hprev, GI):
        D = jac_diag(Hprev, GI)
        return D[..., :, None] * np.eye(D.shape[-1], dtype=D.dtype)
    return f, jac, jac_diag


def _projections(params, X):
    return X @ params.W_x + params.b


def solve(params, X, h0=None, *, method: str = "quasi", init: str = "f0", iters: int | None = None,
          tol: float | None = None):
    """Parallel Newton forward: ``(Hs (T, B, nh), history)`` (history: max |residual| per iterate).
    ``iters`` fixed iterations (``tol`` then ignored) or ``None``: run until ``max |r| <= tol``."""
    check_params(params)
    check_choice(method, "method", ("newton", "quasi", "picard", "jacobi"))
    check_choice(init, "init", INITS)
    iters = None if iters is None else check_count(iters, "iters", low=0)
    tol = None if tol is None else check_float(tol, "tol", low=0.0)
    X = _check_X(params, X)
    h0 = _h0(params, h0, X.shape[1], np.result_type(X, params.W_x))   # the dtype of GI: one dtype in the solver
    GI = _projections(params, X)
    f, jac, jac_diag = system(params)
    start = f(np.broadcast_to(np.zeros_like(h0), (X.shape[0],) + h0.shape), GI) if init == "f0" else None
    if iters is not None:
        return newton.solve(f, jac, h0, GI, method=method, jac_diag=jac_diag, init=start, tol=0.0,
                            max_iter=iters, diverge_factor=1e300)
    return newton.solve(f, jac, h0, GI, method=method, jac_diag=jac_diag, init=start, tol=tol)


def forward(params, X, h0=None, *, method: str = "sequential", init: str = "f0", iters: int | None = None,
            tol: float | None = None) -> np.ndarray:
    """All hidden states ``(T, B, nh)``; ``method`` one of :data:`METHODS` (module doc)."""
    check_params(params)
    check_choice(method, "method", METHODS)
    if method != "sequential":
        return solve(params, X, h0, method=method, init=init, iters=iters, tol=tol)[0]
    X = _check_X(params, X)
    h = _h0(params, h0, X.shape[1], X.dtype)
    GI = _projections(params, X)
    out = np.empty((X.shape[0],) + h.shape, dtype=X.dtype)
    for t in range(X.shape[0]):
        h = _f(params, h[None], GI[t:t + 1])[0]
        out[t] = h
    return out


def _step_vjp(params, Hprev, X, lam):
    """Parameter gradients of ``sum_t <lam_t, f(h_{t-1}, x_t)>`` (all t at once) and ``lam * J``."""
    n = params.nh
    u_z, u_r, u_c = params.u[:n], params.u[n:2 * n], params.u[2 * n:]
    z, r, c = _gates(params, Hprev, _projections(params, X))
    daz = lam * (c - Hprev) * z * (1.0 - z)
    dac = lam * z * (1.0 - c * c)
    dar = dac * u_c * Hprev * r * (1.0 - r)
    dA = np.concatenate([daz, dar, dac], axis=-1)
    g = params.zeros_like()
    g.W_x = np.tensordot(X, dA, axes=([0, 1], [0, 1]))
    g.b = dA.sum(axis=(0, 1))
    g.u = np.concatenate([(daz * Hprev).sum(axis=(0, 1)), (dar * Hprev).sum(axis=(0, 1)),
                          (dac * r * Hprev).sum(axis=(0, 1))])
    dHprev = lam * (1.0 - z) + daz * u_z + dar * u_r + dac * u_c * r
    return g, dHprev


def backward(params, X, Hs, dHs, h0=None, *, method: str = "sequential"):
    """Gradients of a loss with ``dL/dHs = dHs (T, B, nh)``: ``(grads, dh0)``, ``grads`` a
    :class:`DiagGRUParams` (head zero). ``"sequential"``: BPTT through the loop, one step at a time;
    ``"newton"``/``"quasi"``: the adjoint ``lam_t = dHs_t + J_{t+1} * lam_{t+1}`` by one element-wise
    scan backwards, then every step's parameter gradient at once."""
    check_params(params)
    check_choice(method, "method", METHODS)
    X = _check_X(params, X)
    Hs = check_array(Hs, "Hs", shape=X.shape[:2] + (params.nh,))
    dHs = check_array(dHs, "dHs", shape=Hs.shape)
    h0 = _h0(params, h0, X.shape[1], X.dtype)
    Hprev = np.concatenate([h0[None], Hs[:-1]], axis=0)
    if method == "sequential":
        g, dh = params.zeros_like(), np.zeros_like(h0)
        for t in range(X.shape[0] - 1, -1, -1):
            gt, dh = _step_vjp(params, Hprev[t:t + 1], X[t:t + 1], dHs[t:t + 1] + dh[None])
            dh = dh[0]
            for name in ("W_x", "u", "b"):
                setattr(g, name, getattr(g, name) + getattr(gt, name))
        return g, dh
    J = _jacobian_diagonal(params, Hprev, _projections(params, X))
    A = np.empty_like(J)
    A[0] = 0.0
    A[1:] = J[:0:-1]
    lam = linear_recurrence(np.ascontiguousarray(A), np.ascontiguousarray(dHs[::-1]))[::-1]
    g, dHprev = _step_vjp(params, Hprev, X, lam)
    return g, dHprev[0]


def _head(params, h_last, y):
    logits = h_last @ params.W_out + params.b_out
    zl = logits - logits.max(axis=-1, keepdims=True)
    logp = zl - np.log(np.exp(zl).sum(axis=-1, keepdims=True))
    B = y.shape[0]
    dlogits = np.exp(logp)
    dlogits[np.arange(B), y] -= 1.0
    return float(-logp[np.arange(B), y].mean()), float(np.mean(np.argmax(logits, -1) == y)), dlogits / B


def loss_and_grads(params, X, y, *, method: str = "sequential", iters: int | None = None):
    """Softmax cross-entropy of the head on the last state: ``(loss, accuracy, grads)``."""
    X = _check_X(check_params(params), X)
    y = check_ids(y, "y", params.W_out.shape[1], shape=(X.shape[1],), what="labels")
    Hs = forward(params, X, method=method, iters=iters)
    loss, acc, dlogits = _head(params, Hs[-1], y)
    dHs = np.zeros_like(Hs)
    dHs[-1] = dlogits @ params.W_out.T
    grads, _ = backward(params, X, Hs, dHs, method=method)
    grads.W_out = Hs[-1].T @ dlogits
    grads.b_out = dlogits.sum(axis=0)
    return loss, acc, grads


def predict(params, X, *, method: str = "sequential", iters: int | None = None) -> np.ndarray:
    """Class index per sequence (B,)."""
    check_params(params)
    Hs = forward(params, X, method=method, iters=iters)
    return np.argmax(Hs[-1] @ params.W_out + params.b_out, axis=-1)


def _n_classes(y, n_classes):
    """``n_classes`` checked, or inferred from the labels (at most one class per example: a label far beyond
    the number of examples is a mistake, not a reason to build a huge head)."""
    if n_classes is not None:
        return check_int(n_classes, "n_classes", low=2)
    y = check_ids(y, "y", max(2, y.shape[0]), what="labels (n_classes=None infers one class per label up to the "
                  "number of examples; pass n_classes for more)")
    return max(int(y.max()) + 1, 2)


def train_classifier(X, y, *, nh: int = 16, n_classes: int | None = None, epochs: int = 5, batch: int = 32,
                     lr: float = 1e-2, seed: int = 0, method: str = "sequential", iters: int | None = None,
                     X_val=None, y_val=None) -> TrainResult:
    """Adam on shuffled mini-batches of ``X (T, N, nx)``, ``y (N,)``; ``history``: ``loss``/``accuracy``
    per step, ``val_accuracy`` per epoch when ``X_val`` is given."""
    X = check_array(X, "X", shape=("T", "N", "nx"), min_size={"T": 1, "N": 1, "nx": 1})
    y = check_array(y, "y", shape=(X.shape[1],), dtype="int")
    epochs, batch = check_count(epochs, "epochs"), check_positive_int(batch, "batch")
    lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
    C = _n_classes(y, n_classes)
    y = check_ids(y, "y", C, shape=(X.shape[1],), what="labels")
    if X_val is not None:
        X_val = check_array(X_val, "X_val", shape=(X.shape[0], None, X.shape[2]))
        y_val = check_ids(y_val, "y_val", C, shape=(X_val.shape[1],), what="labels")
    params = init_params(X.shape[2], nh, max(C, 2), seed=seed, dtype=X.dtype)
    opt = Adam(params.arrays(), lr, clip=5.0)
    rng = np.random.default_rng(seed)
    history: dict = {"loss": [], "accuracy": []} | ({"val_accuracy": []} if X_val is not None else {})
    t0 = time.perf_counter()
    for _ in range(epochs):
        order = rng.permutation(X.shape[1])
        for s in range(0, X.shape[1], batch):
            idx = order[s:s + batch]
            loss, acc, grads = loss_and_grads(params, X[:, idx], y[idx], method=method, iters=iters)
            opt.step(grads.arrays())
            history["loss"].append(loss)
            history["accuracy"].append(acc)
        if X_val is not None:
            history["val_accuracy"].append(float(np.mean(predict(params, X_val, method=method, iters=iters)
                                                         == y_val)))
    return TrainResult(history=history, params=params, seconds=time.perf_counter() - t0)
