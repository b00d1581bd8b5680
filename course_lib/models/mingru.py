"""minGRU and minLSTM: gates that ignore h_{t-1}, so the RNN is a linear recurrence (models/).

Feng et al. ("Were RNNs all we needed?", 2024) drop ``h_{t-1}`` from the gates and the candidate.
Row-vector maths, time-major ``X (T, B, nx)``, ``g(x) = x + 0.5`` for ``x >= 0`` and ``sigmoid(x)``
below (positive, so that the log-space scan works)::

    minGRU:   z = sigmoid(X W_z + b_z),  ht = g(X W_h + b_h),   h_t = (1 - z_t) h_{t-1} + z_t ht_t
    minLSTM:  f = sigmoid(X W_f + b_f),  i = sigmoid(X W_i + b_i),  ht = g(X W_h + b_h),
              f' = f / (f + i),  i' = i / (f + i),                 h_t = f'_t h_{t-1} + i'_t ht_t

Both are ``h_t = a_t h_{t-1} + b_t`` with everything computed from the inputs in one GEMM; three ways
to evaluate it (``method=``):

* ``"sequential"`` -- chapter 08's numba loop (:func:`course_lib.algorithms.scan.linear_recurrence`);
* ``"chunked"``    -- the same recurrence by the parallel chunked scan (linear space);
* ``"log_space"``  -- Heinsen's two prefix sums in log space: ``a*_t = cumsum(log a)``,
  ``log h_t = a*_t + logcumsumexp(log b_s - a*_s)`` (needs ``b, h0 >= 0``: hence ``g``).

A linear head on the last state and softmax cross-entropy make a classifier; training uses
:class:`course_lib.core.optim.Adam` and returns a :class:`TrainResult` (history of loss/accuracy per
step, params, seconds).

Public API: ``MinGRUParams``, ``MinLSTMParams``, ``init_params(kind, nx, nh, n_classes)``,
``coefficients(kind, params, X)``, ``forward(kind, params, X, h0=None, *, method)``,
``backward(kind, params, X, Hs, dHs, h0=None)``, ``loss_and_grads``, ``predict``,
``train_classifier``, ``train_remember_first``, ``train_activity``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..algorithms.scan import linear_recurrence, linear_recurrence_backward
from ..core.optim import Adam
from ..core.params import Params
from ..core.results import TrainResult
from ..core.validate import (check_alloc, check_array, check_choice, check_count, check_fields, check_float, check_ids,
                             check_int, check_positive_int, largest)

__all__ = [
    "KINDS",
    "METHODS",
    "MinGRUParams",
    "MinLSTMParams",
    "TrainResult",
    "g",
    "log_g",
    "init_params",
    "coefficients",
    "log_coefficients",
    "forward",
    "log_space_scan",
    "backward",
    "loss_and_grads",
    "predict",
    "train_classifier",
    "train_remember_first",
    "train_activity",
]

KINDS = ("mingru", "minlstm")
METHODS = ("sequential", "chunked", "log_space")


class _MinParams(Params):
    """Sizes shared by both layers: ``nx, nh`` from ``W_h (nx, H)``."""

    @property
    def nx(self) -> int:
        return self.W_h.shape[0]

    @property
    def nh(self) -> int:
        return self.W_h.shape[1]


@dataclass
class MinGRUParams(_MinParams):
    """``W_z, W_h (nx, H)``, ``b_z, b_h (H,)``; head ``W_out (H, C)``, ``b_out (C,)``.
    Gradients come back in the same class."""

    W_z: np.ndarray
    b_z: np.ndarray
    W_h: np.ndarray
    b_h: np.ndarray
    W_out: np.ndarray
    b_out: np.ndarray


@dataclass
class MinLSTMParams(_MinParams):
    """``W_f, W_i, W_h (nx, H)``, ``b_f, b_i, b_h (H,)``; head ``W_out (H, C)``, ``b_out (C,)``.
    Gradients come back in the same class."""

    W_f: np.ndarray
    b_f: np.ndarray
    W_i: np.ndarray
    b_i: np.ndarray
    W_h: np.ndarray
    b_h: np.ndarray
    W_out: np.ndarray
    b_out: np.ndarray


def _kind_of(kind, params):
    check_choice(kind, "kind", KINDS)
    want = MinGRUParams if kind == "mingru" else MinLSTMParams
    if not isinstance(params, want):
        raise TypeError(f"params: expected {want.__name__} for kind={kind!r}, got {type(params).__name__}")
    gates = ("z",) if kind == "mingru" else ("f", "i")
    shapes = {"W_h": ("nx", "nh"), "b_h": ("nh",)}
    for gate in gates:
        shapes |= {f"W_{gate}": ("nx", "nh"), f"b_{gate}": ("nh",)}
    check_fields(params, "params", shapes | {"W_out": ("nh", "C"), "b_out": ("C",)})


# --------------------------------------------------------------------------- elementwise pieces
def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _softplus(x):
    return np.logaddexp(0.0, x)


def g(x):
    """``x + 0.5`` for ``x >= 0``, ``sigmoid(x)`` below: positive and continuous (Feng et al.)."""
    return _g(check_array(x, "x"))


def _g(x):
    return np.where(x >= 0, x + 0.5, _sigmoid(np.minimum(x, 0)))


def _dg(x):
    s = _sigmoid(np.minimum(x, 0))
    return np.where(x >= 0, 1.0, s * (1 - s))


def log_g(x):
    """``log g(x)`` without forming ``g``: ``log(x + 0.5)`` or ``-softplus(-x)``."""
    return _log_g(check_array(x, "x"))


def _log_g(x):
    return np.where(x >= 0, np.log(np.maximum(x, 0) + 0.5), -_softplus(-np.minimum(x, 0)))


# --------------------------------------------------------------------------- parameters
def init_params(kind: str, nx: int, nh: int, n_classes: int = 2, *, seed: int = 0, dtype="float64",
                retain_bias: float = 2.0):
    """Uniform(-1/sqrt(nx), 1/sqrt(nx)) input weights; the gate biases start at "keep the old state"
    (minGRU ``b_z = -retain_bias``, minLSTM ``b_f = +retain_bias``); a small head."""
    check_choice(kind, "kind", KINDS)
    nx = check_positive_int(nx, "nx")
    nh = check_positive_int(nh, "nh")
    n_classes = check_int(n_classes, "n_classes", low=2)
    retain_bias = check_float(retain_bias, "retain_bias")
    check_alloc((3 * nx + n_classes, nh), dtype, largest(nx=nx, nh=nh, n_classes=n_classes), what="the weights")
    rng = np.random.default_rng(seed)
    k = 1.0 / np.sqrt(nx)

    def W():
        return rng.uniform(-k, k, size=(nx, nh)).astype(dtype)

    def b():
        return np.zeros(nh, dtype=dtype)

    head = dict(W_out=(rng.standard_normal((nh, n_classes)) / np.sqrt(nh)).astype(dtype),
                b_out=np.zeros(n_classes, dtype=dtype))
    if kind == "mingru":
        return MinGRUParams(W_z=W(), b_z=b() - retain_bias, W_h=W(), b_h=b(), **head)
    return MinLSTMParams(W_f=W(), b_f=b() + retain_bias, W_i=W(), b_i=b(), W_h=W(), b_h=b(), **head)


def _check_X(params, X):
    W = params.W_h
    X = check_array(X, "X", shape=("T", "B", "nx"), dims={"nx": W.shape[0]}, min_size={"T": 1, "B": 1})
    return X


def _preacts(kind, params, X):
    if kind == "mingru":
        return {"z": X @ params.W_z + params.b_z, "h": X @ params.W_h + params.b_h}
    return {"f": X @ params.W_f + params.b_f, "i": X @ params.W_i + params.b_i, "h": X @ params.W_h + params.b_h}


def coefficients(kind: str, params, X):
    """``(a, b)`` of the recurrence ``h_t = a_t h_{t-1} + b_t``, each (T, B, H), from the inputs alone."""
    _kind_of(kind, params)
    X = _check_X(params, X)
    k = _preacts(kind, params, X)
    ht = _g(k["h"])
    if kind == "mingru":
        z = _sigmoid(k["z"])
        return 1.0 - z, z * ht
    f, i = _sigmoid(k["f"]), _sigmoid(k["i"])
    s = f + i
    return f / s, i / s * ht


def log_coefficients(kind: str, params, X):
    """``(log a, log b)`` computed stably in log space (never ``log`` of a rounded-to-0 gate)."""
    _kind_of(kind, params)
    X = _check_X(params, X)
    k = _preacts(kind, params, X)
    lg = _log_g(k["h"])
    if kind == "mingru":
        return -_softplus(k["z"]), -_softplus(-k["z"]) + lg
    diff = _softplus(-k["f"]) - _softplus(-k["i"])
    return -_softplus(diff), -_softplus(-diff) + lg


def _check_log(x, name):
    """A log-space coefficient may be ``-inf`` (the coefficient is 0) but never NaN or ``+inf``."""
    bad = np.isnan(x) | np.isposinf(x)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name}: expected log-coefficients in [-inf, inf) (no NaN, no +inf), "
                         f"got {x[idx]} at index {idx}")
    return x


def log_space_scan(log_a, log_b, h0=None):
    """Heinsen's scan: ``h_t = exp(a*_t + logcumsumexp_{s<=t}(log b_s - a*_s))`` with
    ``a*_t = sum_{s<=t} log a_s``; ``h0 >= 0`` enters as the term ``log h0`` at s = -1."""
    log_a = _check_log(check_array(log_a, "log_a", ndim=(2, 3), finite=False), "log_a")
    log_b = _check_log(check_array(log_b, "log_b", shape=log_a.shape, finite=False), "log_b")
    if log_a.shape[0] == 0:
        raise ValueError(f"log_a: expected at least one time step (axis 0), got shape {log_a.shape}")
    a_star = np.cumsum(log_a, axis=0)
    terms = log_b - a_star
    if h0 is not None:
        h0 = check_array(h0, "h0", shape=log_a.shape[1:])
        if np.any(h0 < 0):
            raise ValueError("h0: the log-space scan needs h0 >= 0 (it takes log h0)")
        with np.errstate(divide="ignore"):
            terms = np.concatenate([np.log(h0)[None].astype(terms.dtype), terms])
        acc = np.logaddexp.accumulate(terms, axis=0)[1:]
    else:
        acc = np.logaddexp.accumulate(terms, axis=0)
    return np.exp(a_star + acc)


# --------------------------------------------------------------------------- forward / backward
def forward(kind: str, params, X, h0=None, *, method: str = "sequential"):
    """Hidden states ``Hs`` (T, B, H) of a minGRU/minLSTM layer over ``X`` (T, B, nx) from ``h0``
    (zeros by default; ``>= 0`` for ``"log_space"``). All three methods compute the same numbers."""
    check_choice(method, "method", METHODS)
    _kind_of(kind, params)
    X = _check_X(params, X)
    H = params.W_h.shape[1]
    if h0 is not None:
        h0 = check_array(h0, "h0", shape=(X.shape[1], H))
    if method == "log_space":
        la, lb = log_coefficients(kind, params, X)
        return log_space_scan(la, lb, h0)
    a, b = coefficients(kind, params, X)
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return linear_recurrence(a, b, h0, method="sequential" if method == "sequential" else "chunked")


def backward(kind: str, params, X, Hs, dHs, h0=None):
    """Gradients given ``dHs = dL/dHs`` (T, B, H): the reverse scan of chapter 08, then the per-step
    chain rule. Returns ``(grads, dh0)``: ``grads`` the params' class (the head's ``W_out, b_out``
    are zero: the states do not depend on the head), ``dh0`` (B, H)."""
    _kind_of(kind, params)
    X = _check_X(params, X)
    Hs = check_array(Hs, "Hs", shape=X.shape[:2] + (params.W_h.shape[1],))
    dHs = check_array(dHs, "dHs", shape=Hs.shape)
    k = _preacts(kind, params, X)
    a, b = coefficients(kind, params, X)
    ga, gb, gh0 = linear_recurrence_backward(np.ascontiguousarray(a), Hs, h0, dHs)
    ht = _g(k["h"])
    if kind == "mingru":
        z = 1.0 - a
        dk = {"z": (-ga + gb * ht) * z * (1 - z), "h": gb * z * _dg(k["h"])}
    else:
        f, i = _sigmoid(k["f"]), _sigmoid(k["i"])
        s2 = (f + i) ** 2
        df = (ga - gb * ht) * i / s2
        di = (gb * ht - ga) * f / s2
        dk = {"f": df * f * (1 - f), "i": di * i * (1 - i), "h": gb * i / (f + i) * _dg(k["h"])}
    grads = params.zeros_like()
    for gate, d in dk.items():
        setattr(grads, f"W_{gate}", np.einsum("tbx,tbh->xh", X, d))
        setattr(grads, f"b_{gate}", d.sum(axis=(0, 1)))
    return grads, gh0


def _head(params, h_last, y):
    logits = h_last @ params.W_out + params.b_out
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    B = y.shape[0]
    loss = float(-logp[np.arange(B), y].mean())
    acc = float(np.mean(np.argmax(logits, axis=-1) == y))
    dlogits = np.exp(logp)
    dlogits[np.arange(B), y] -= 1.0
    return loss, acc, dlogits / B


def loss_and_grads(kind: str, params, X, y, *, method: str = "sequential"):
    """Softmax cross-entropy of the head on the last state: ``(loss, accuracy, grads)`` with ``grads``
    the params' class."""
    _kind_of(kind, params)
    X = _check_X(params, X)
    y = check_ids(y, "y", params.W_out.shape[1], shape=(X.shape[1],), what="labels")
    Hs = forward(kind, params, X, method=method)
    loss, acc, dlogits = _head(params, Hs[-1], y)
    dHs = np.zeros_like(Hs)
    dHs[-1] = dlogits @ params.W_out.T
    grads, _ = backward(kind, params, X, Hs, dHs)
    grads.W_out = Hs[-1].T @ dlogits
    grads.b_out = dlogits.sum(axis=0)
    return loss, acc, grads


def predict(kind: str, params, X, *, method: str = "sequential") -> np.ndarray:
    """Class index per sequence (B,)."""
    Hs = forward(kind, params, X, method=method)
    return np.argmax(Hs[-1] @ params.W_out + params.b_out, axis=-1)


def _n_classes(y, n_classes):
    """``n_classes`` checked, or inferred from the labels (at most one class per example: a label far beyond
    the number of examples is a mistake, not a reason to build a huge head)."""
    if n_classes is not None:
        return check_int(n_classes, "n_classes", low=2)
    y = check_ids(y, "y", max(2, y.shape[0]), what="labels (n_classes=None infers one class per label up to the "
                  "number of examples; pass n_classes for more)")
    return max(int(y.max()) + 1, 2)


# --------------------------------------------------------------------------- training
def train_classifier(kind: str, X, y, *, nh: int = 16, n_classes: int | None = None, epochs: int = 5,
                     batch: int = 32, lr: float = 1e-2, seed: int = 0, method: str = "sequential",
                     X_val=None, y_val=None) -> TrainResult:
    """Adam on shuffled mini-batches of ``X`` (T, N, nx), ``y`` (N,). ``history``: ``loss`` and
    ``accuracy`` per step (training batch), plus ``val_accuracy`` per epoch when ``X_val`` is given."""
    check_choice(kind, "kind", KINDS)
    X = check_array(X, "X", shape=("T", "N", "nx"), min_size={"T": 1, "N": 1})
    y = check_array(y, "y", shape=(X.shape[1],), dtype="int")
    epochs = check_count(epochs, "epochs")
    batch = check_positive_int(batch, "batch")
    lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
    C = _n_classes(y, n_classes)
    y = check_ids(y, "y", C, shape=(X.shape[1],), what="labels")
    if X_val is not None:
        X_val = check_array(X_val, "X_val", shape=(X.shape[0], None, X.shape[2]))
        y_val = check_ids(y_val, "y_val", C, shape=(X_val.shape[1],), what="labels")
    params = init_params(kind, X.shape[2], nh, max(C, 2), seed=seed, dtype=X.dtype)
    opt = Adam(params.arrays(), lr, clip=5.0)
    rng = np.random.default_rng(seed)
    history: dict = {"loss": [], "accuracy": []}
    if X_val is not None:
        history["val_accuracy"] = []
    N = X.shape[1]
    t0 = time.perf_counter()
    for _ in range(epochs):
        order = rng.permutation(N)
        for s in range(0, N, batch):
            idx = order[s:s + batch]
            loss, acc, grads = loss_and_grads(kind, params, X[:, idx], y[idx], method=method)
            opt.step(grads.arrays())
            history["loss"].append(loss)
            history["accuracy"].append(acc)
        if X_val is not None:
            history["val_accuracy"].append(float(np.mean(predict(kind, params, X_val, method=method) == y_val)))
    return TrainResult(history=history, params=params, seconds=time.perf_counter() - t0)


def train_remember_first(kind: str, T: int, *, n_train: int = 512, n_val: int = 256, nx: int = 4, nh: int = 16,
                         epochs: int = 5, batch: int = 32, lr: float = 2e-2, seed: int = 0,
                         method: str = "sequential") -> TrainResult:
    """Chapter 08's remember-the-first-element task (:func:`models.linear_rnn.remember_first_batch`)."""
    from .linear_rnn import remember_first_batch

    check_choice(kind, "kind", KINDS)
    epochs = check_count(epochs, "epochs")
    X, y = remember_first_batch(T, n_train, nx, np.random.default_rng(seed))
    Xv, yv = remember_first_batch(T, n_val, nx, np.random.default_rng(seed + 12345))
    return train_classifier(kind, X, y, nh=nh, n_classes=2, epochs=epochs, batch=batch, lr=lr, seed=seed,
                            method=method, X_val=Xv, y_val=yv)


def train_activity(kind: str, length: int = 128, *, n_train: int = 256, n_val: int = 128, nh: int = 16,
                   epochs: int = 5, batch: int = 32, lr: float = 2e-2, seed: int = 0,
                   method: str = "sequential") -> TrainResult:
    """Chapter 10's activity task (:mod:`course_lib.data.activity`), float64."""
    from ..data.activity import train_test

    check_choice(kind, "kind", KINDS)
    epochs = check_count(epochs, "epochs")
    Xtr, ytr, Xte, yte = train_test(n_train, n_val, length, seed=seed)
    return train_classifier(kind, Xtr.astype(np.float64), ytr, nh=nh, n_classes=4, epochs=epochs, batch=batch,
                            lr=lr, seed=seed, method=method, X_val=Xte.astype(np.float64), y_val=yte)
