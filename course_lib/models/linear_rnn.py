"""RNN layers built on the linear-recurrence scan (models layer). Seed 001, Martin & Cundy 2018.

Every layer computes all its gates from the *inputs* (one big GEMM over all time steps), and the
only thing carried along time is a linear recurrence ``c_t = f_t c_{t-1} + u_t`` -- which
:func:`course_lib.algorithms.scan.linear_recurrence` evaluates with any ``method`` (serial, parallel
over channels, parallel over time). Backward passes use
:func:`course_lib.algorithms.scan.linear_recurrence_backward` (the reverse scan).

Layers (the ``layer`` of their parameters), shapes time-major: ``X (T, B, nx)`` -> ``Hs (T, B, H)``

* ``"gilr_lstm"`` (seed 001's equations), :class:`GILRParams`::

      g = sigmoid(X Wg + bg), j = tanh(X Wj + bj),  ht_t = g_t ht_{t-1} + (1 - g_t) j_t   (scan 1)
      [f, i, o, z] = [sigmoid, sigmoid, sigmoid, tanh](X V + ht_{t-1} U + b)
      c_t = f_t c_{t-1} + i_t z_t  (scan 2),   h_t = o_t c_t

* ``"sru"``, :class:`SRUParams`::  [xt, f, r] = [id, sigmoid, sigmoid](X W + b);
  c_t = f c_{t-1} + (1-f) xt;  h_t = r tanh(c_t) + (1 - r) xt   (the highway goes through the
  projection xt, so nx may differ from H)
* ``"qrnn"`` (window k), :class:`QRNNParams`::  [z, f, o] = [tanh, sigmoid, sigmoid](conv_k(X) W + b),
  conv_k(X)_t = [x_t, x_{t-1}, ..., x_{t-k+1}];  c_t = f c_{t-1} + (1-f) z;  h_t = o c_t  ("fo-pooling")
* ``"lstm"``, :class:`SerialLSTMParams`: the classic serial LSTM (the baseline: its gates need
  h_{t-1}, so no scan)::  [f, i, o, z] = [sigmoid, sigmoid, sigmoid, tanh](x_t W + h_{t-1} U + b);
  c_t = f c + i z; h_t = o tanh(c_t)

Public API: ``init_params(layer, nx, nh, *, k=2, seed=0)`` -> the layer's params dataclass;
``forward(params, X, *, method=)`` -> ``(Hs, cache)``; ``backward(params, cache, dHs, *, method=)``
-> ``(grads, dX)`` (grads: the params' dataclass holding gradients); ``remember_first_batch(T, batch, nx,
rng)``; ``classifier_loss(...)``; ``train_remember_first(layer, T, ...)`` -> :class:`TrainResult`
whose params are a :class:`ClassifierParams`. ``method`` is always the scan method (the serial
``"lstm"`` has no scan and ignores it).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..algorithms.activations import sigmoid
from ..algorithms.scan import linear_recurrence, linear_recurrence_backward
from ..core.optim import Adam
from ..core.params import Params
from ..core.results import TrainResult
from ..core.validate import (check_array, check_choice, check_count, check_finite, check_float, check_ids,
                             check_positive_int)

__all__ = [
    "LAYERS",
    "GILRParams",
    "SRUParams",
    "QRNNParams",
    "SerialLSTMParams",
    "ClassifierParams",
    "init_params",
    "forward",
    "backward",
    "remember_first_batch",
    "classifier_loss",
    "train_remember_first",
]

LAYERS = ("gilr_lstm", "sru", "qrnn", "lstm")


# --------------------------------------------------------------------------- parameters
class _Params(Params):
    """Shared behaviour of the layers' parameter dataclasses: ``layer`` (a class constant naming
    the layer), ``nx``, ``nh`` (also ``H``), and the :class:`course_lib.core.params.Params` protocol
    (``names()``, ``arrays()``, ``copy()``, ``zeros_like()``, ...). Gradients come back in the same class."""

    layer: ClassVar[str] = ""
    _input: ClassVar[str] = "W"  # the matrix whose rows are the inputs

    def __post_init__(self):
        # shapes and float dtypes only (O(1)); finiteness is checked where the arrays are used
        self.b = check_array(self.b, "params.b", ndim=1, finite=False)
        G = self.b.shape[0]
        if G == 0 or G % self._gates:
            raise ValueError(f"params.b: expected {self._gates}*H entries (one bias per gate and unit), "
                             f"got shape {self.b.shape}")
        H = G // self._gates
        rows = self._input_rows()
        for name, shape in self._layout(H, rows):
            setattr(self, name, check_array(getattr(self, name), f"params.{name}", shape=shape, finite=False))
        dts = {a.dtype for a in self.arrays()}
        if len(dts) != 1:
            raise TypeError(f"params: expected all arrays of one dtype, got {sorted(str(d) for d in dts)}")

    def _input_rows(self) -> int:
        name = self._input
        setattr(self, name, check_array(getattr(self, name), f"params.{name}", ndim=2, finite=False))
        return getattr(self, name).shape[0]

    def _layout(self, nh: int, rows: int):  # pragma: no cover - every layer defines it
        raise NotImplementedError

    @property
    def nh(self) -> int:
        return self.b.shape[0] // self._gates

    @property
    def H(self) -> int:
        return self.nh

    @property
    def nx(self) -> int:
        return getattr(self, self._input).shape[0]

@dataclass
class GILRParams(_Params):
    """GILR-LSTM: ``Wg, Wj (nx, H)``, ``bg, bj (H,)`` (the linear gate and its input), ``V (nx, 4H)``,
    ``U (H, 4H)``, ``b (4H,)`` (the LSTM gates f, i, o, z from x_t and ht_{t-1})."""

    layer: ClassVar[str] = "gilr_lstm"
    _input: ClassVar[str] = "Wg"
    _gates: ClassVar[int] = 4
    Wg: np.ndarray
    bg: np.ndarray
    Wj: np.ndarray
    bj: np.ndarray
    V: np.ndarray
    U: np.ndarray
    b: np.ndarray

    def _layout(self, H, nx):
        return (("Wg", (nx, H)), ("bg", (H,)), ("Wj", (nx, H)), ("bj", (H,)), ("V", (nx, 4 * H)),
                ("U", (H, 4 * H)))


@dataclass
class SRUParams(_Params):
    """SRU: ``W (nx, 3H)``, ``b (3H,)`` for [xt, f, r]."""

    layer: ClassVar[str] = "sru"
    _gates: ClassVar[int] = 3
    W: np.ndarray
    b: np.ndarray

    def _layout(self, H, nx):
        return (("W", (nx, 3 * H)),)


@dataclass
class QRNNParams(_Params):
    """QRNN with a causal window of ``k`` steps: ``W (k nx, 3H)``, ``b (3H,)`` for [z, f, o]."""

    layer: ClassVar[str] = "qrnn"
    _gates: ClassVar[int] = 3
    W: np.ndarray
    b: np.ndarray
    k: int = 2

    def _input_rows(self) -> int:
        self.k = check_positive_int(self.k, "params.k")
        rows = super()._input_rows()
        if rows == 0 or rows % self.k:
            raise ValueError(f"params.W: expected k*nx = {self.k}*nx rows (a window of k={self.k} inputs), "
                             f"got shape {self.W.shape}")
        return rows

    def _layout(self, H, rows):
        return (("W", (rows, 3 * H)),)

    @property
    def nx(self) -> int:
        return self.W.shape[0] // self.k


@dataclass
class SerialLSTMParams(_Params):
    """The serial LSTM baseline: ``W (nx, 4H)``, ``U (H, 4H)``, ``b (4H,)`` for [f, i, o, z]."""

    layer: ClassVar[str] = "lstm"
    _gates: ClassVar[int] = 4
    W: np.ndarray
    U: np.ndarray
    b: np.ndarray

    def _layout(self, H, nx):
        return (("W", (nx, 4 * H)), ("U", (H, 4 * H)))


PARAMS = {c.layer: c for c in (GILRParams, SRUParams, QRNNParams, SerialLSTMParams)}


@dataclass
class ClassifierParams(Params):
    """A layer and a logistic head on its last state: ``rnn`` (a layer's params), ``w_out (H,)``,
    ``b_out (1,)``. What :func:`train_remember_first` trains; gradients come back in the same class."""

    rnn: _Params
    w_out: np.ndarray
    b_out: np.ndarray

    def __post_init__(self):
        if not isinstance(self.rnn, _Params):
            raise TypeError(f"rnn: expected a layer's params from init_params, got {type(self.rnn).__name__}")
        self.w_out = check_array(self.w_out, "w_out", shape=(self.rnn.H,), finite=False)
        self.b_out = check_array(self.b_out, "b_out", shape=(1,), finite=False)

    @property
    def layer(self) -> str:
        return self.rnn.layer

    @property
    def nx(self) -> int:
        return self.rnn.nx

    @property
    def nh(self) -> int:
        return self.rnn.nh


def _shift(h):
    """``h_{t-1}`` for every t (zeros at t = 0)."""
    out = np.zeros_like(h)
    out[1:] = h[:-1]
    return out


def _unshift(d):
    """Adjoint of :func:`_shift`: gradient w.r.t. ``h_t`` from gradient w.r.t. ``h_{t-1}``."""
    out = np.zeros_like(d)
    out[:-1] = d[1:]
    return out


def _sum_outer(X, D):
    """``sum_{t,b} X[t,b]^T D[t,b]``: (T, B, n) x (T, B, m) -> (n, m)."""
    return X.reshape(-1, X.shape[-1]).T @ D.reshape(-1, D.shape[-1])


def _window(X, k):
    """``(T, B, nx) -> (T, B, k*nx)``: ``[x_t, x_{t-1}, ..., x_{t-k+1}]`` (zeros before t = 0)."""
    T = X.shape[0]
    parts = []
    for s in range(k):
        p = np.zeros_like(X)
        p[s:] = X[:T - s]
        parts.append(p)
    return np.concatenate(parts, axis=-1)


def init_params(layer: str, nx: int, nh: int, *, k: int = 2, seed: int = 0, dtype="float64",
                forget_bias: float = 1.0):
    """Parameters of one ``layer`` (one of :data:`LAYERS`), seeded: its params dataclass. The
    forget/keep gates' biases start at ``forget_bias`` (a longer memory at initialisation, the
    usual trick); ``k`` is the QRNN's window."""
    check_choice(layer, "layer", LAYERS)
    nx = check_positive_int(nx, "nx")
    nh = check_positive_int(nh, "nh")
    k = check_positive_int(k, "k")
    forget_bias = check_float(forget_bias, "forget_bias")
    rng = np.random.default_rng(seed)

    def w(n, m):
        return (rng.standard_normal((n, m)) / np.sqrt(n)).astype(dtype)

    if layer == "gilr_lstm":
        p = GILRParams(Wg=w(nx, nh), bg=np.full(nh, forget_bias, dtype), Wj=w(nx, nh), bj=np.zeros(nh, dtype),
                       V=w(nx, 4 * nh), U=w(nh, 4 * nh), b=np.zeros(4 * nh, dtype))
        p.b[:nh] = forget_bias
    elif layer == "sru":
        p = SRUParams(W=w(nx, 3 * nh), b=np.zeros(3 * nh, dtype))
        p.b[nh:2 * nh] = forget_bias
    elif layer == "qrnn":
        p = QRNNParams(W=w(k * nx, 3 * nh), b=np.zeros(3 * nh, dtype), k=k)
        p.b[nh:2 * nh] = forget_bias
    else:
        p = SerialLSTMParams(W=w(nx, 4 * nh), U=w(nh, 4 * nh), b=np.zeros(4 * nh, dtype))
        p.b[:nh] = forget_bias
    return p


def _check_inputs(params, X):
    if not isinstance(params, _Params):
        raise TypeError(f"params: expected a layer's params from init_params (GILRParams, SRUParams, "
                        f"QRNNParams or SerialLSTMParams), got {type(params).__name__}")
    params.__post_init__()  # the shapes again: the arrays may have been replaced since construction (O(1))
    for name, a in zip(params.names(), params.arrays()):
        check_finite(a, f"params.{name}")
    X = check_array(X, "X", shape=("T", "B", None), min_size={"T": 1})
    if X.shape[2] != params.nx:
        raise ValueError(f"X: expected shape (T, B, {params.nx}) to match the {params.layer} params, got {X.shape}")
    return X


# --------------------------------------------------------------------------- forward
def forward(params, X, *, method: str = "sequential"):
    """Run one layer over ``X (T, B, nx)``; returns ``(Hs (T, B, H), cache)`` (cache for backward).
    ``method`` is the scan method (ignored by the serial ``"lstm"``)."""
    X = _check_inputs(params, X)
    scan = lambda a, u: linear_recurrence(a, u, method=method)  # noqa: E731
    layer, H = params.layer, params.H
    if layer == "gilr_lstm":
        g = sigmoid(X @ params.Wg + params.bg)
        j = np.tanh(X @ params.Wj + params.bj)
        ht = scan(g, (1 - g) * j)
        hp = _shift(ht)
        P = X @ params.V + hp @ params.U + params.b
        f, i, o = (sigmoid(P[..., s * H:(s + 1) * H]) for s in range(3))
        z = np.tanh(P[..., 3 * H:])
        c = scan(f, i * z)
        return o * c, dict(X=X, g=g, j=j, ht=ht, hp=hp, f=f, i=i, o=o, z=z, c=c)
    if layer == "sru":
        Z = X @ params.W + params.b
        xt, f, r = Z[..., :H], sigmoid(Z[..., H:2 * H]), sigmoid(Z[..., 2 * H:])
        c = scan(f, (1 - f) * xt)
        tc = np.tanh(c)
        return r * tc + (1 - r) * xt, dict(X=X, xt=xt, f=f, r=r, c=c, tc=tc)
    if layer == "qrnn":
        Xk = _window(X, params.k)
        Z = Xk @ params.W + params.b
        z, f, o = np.tanh(Z[..., :H]), sigmoid(Z[..., H:2 * H]), sigmoid(Z[..., 2 * H:])
        c = scan(f, (1 - f) * z)
        return o * c, dict(X=X, Xk=Xk, z=z, f=f, o=o, c=c)
    # serial LSTM
    T, B, _ = X.shape
    XW = X @ params.W + params.b
    hs = np.zeros((T + 1, B, H), X.dtype)
    cs = np.zeros((T + 1, B, H), X.dtype)
    gates = np.empty((T, B, 4 * H), X.dtype)
    for t in range(T):
        P = XW[t] + hs[t] @ params.U
        gates[t, :, :3 * H] = sigmoid(P[:, :3 * H])
        gates[t, :, 3 * H:] = np.tanh(P[:, 3 * H:])
        f, i, o, z = (gates[t, :, s * H:(s + 1) * H] for s in range(4))
        cs[t + 1] = f * cs[t] + i * z
        hs[t + 1] = o * np.tanh(cs[t + 1])
    return hs[1:].copy(), dict(X=X, hs=hs, cs=cs, gates=gates)


# --------------------------------------------------------------------------- backward
def backward(params, cache: dict, dHs, *, method: str = "sequential"):
    """Gradients of a loss w.r.t. the layer's parameters, given ``dHs = dL/dHs (T, B, H)`` and the
    ``cache`` of :func:`forward`. Returns ``(grads, dX)``: ``grads`` is the params' dataclass
    holding dL/d(each array), ``dX = dL/dX (T, B, nx)``."""
    if not isinstance(params, _Params):
        raise TypeError(f"params: expected a layer's params from init_params, got {type(params).__name__}")
    X = cache["X"]
    dHs = check_array(dHs, "dHs", shape=X.shape[:2] + (params.H,))
    bwd = lambda a, h, dh: linear_recurrence_backward(a, h, None, dh, method=method)[:2]  # noqa: E731
    layer = params.layer
    if layer == "gilr_lstm":
        f, i, o, z, c, g, j = (cache[n] for n in ("f", "i", "o", "z", "c", "g", "j"))
        do = dHs * c
        df, diz = bwd(f, c, dHs * o)
        dP = np.concatenate([df * f * (1 - f), diz * z * i * (1 - i), do * o * (1 - o),
                             diz * i * (1 - z * z)], axis=-1)
        dht = _unshift(dP @ params.U.T)
        dg_a, du = bwd(g, cache["ht"], dht)
        dZg = (dg_a - du * j) * g * (1 - g)
        dZj = du * (1 - g) * (1 - j * j)
        grads = GILRParams(Wg=_sum_outer(X, dZg), bg=dZg.sum((0, 1)), Wj=_sum_outer(X, dZj),
                           bj=dZj.sum((0, 1)), V=_sum_outer(X, dP), U=_sum_outer(cache["hp"], dP),
                           b=dP.sum((0, 1)))
        return grads, dZg @ params.Wg.T + dZj @ params.Wj.T + dP @ params.V.T
    if layer == "sru":
        xt, f, r, c, tc = (cache[n] for n in ("xt", "f", "r", "c", "tc"))
        dr = dHs * (tc - xt)
        df_a, du = bwd(f, c, dHs * r * (1 - tc * tc))
        dZ = np.concatenate([dHs * (1 - r) + du * (1 - f), (df_a - du * xt) * f * (1 - f),
                             dr * r * (1 - r)], axis=-1)
        return SRUParams(W=_sum_outer(X, dZ), b=dZ.sum((0, 1))), dZ @ params.W.T
    if layer == "qrnn":
        z, f, o, c = (cache[n] for n in ("z", "f", "o", "c"))
        k = params.k
        df_a, du = bwd(f, c, dHs * o)
        dZ = np.concatenate([du * (1 - f) * (1 - z * z), (df_a - du * z) * f * (1 - f),
                             dHs * c * o * (1 - o)], axis=-1)
        dXk = dZ @ params.W.T
        nx = X.shape[2]
        dX = np.zeros_like(X)
        for s in range(k):
            dX[:X.shape[0] - s] += dXk[s:, :, s * nx:(s + 1) * nx]
        return QRNNParams(W=_sum_outer(cache["Xk"], dZ), b=dZ.sum((0, 1)), k=k), dX
    # serial LSTM: backpropagation through time
    hs, cs, gates = cache["hs"], cache["cs"], cache["gates"]
    T, B, _ = X.shape
    H = params.H
    dP = np.empty_like(gates)
    dh_next = np.zeros((B, H), X.dtype)
    dc_next = np.zeros((B, H), X.dtype)
    for t in range(T - 1, -1, -1):
        f, i, o, z = (gates[t, :, s * H:(s + 1) * H] for s in range(4))
        tc = np.tanh(cs[t + 1])
        dh = dHs[t] + dh_next
        dc = dc_next + dh * o * (1 - tc * tc)
        dP[t] = np.concatenate([dc * cs[t] * f * (1 - f), dc * z * i * (1 - i), dh * tc * o * (1 - o),
                                dc * i * (1 - z * z)], axis=-1)
        dc_next = dc * f
        dh_next = dP[t] @ params.U.T
    grads = SerialLSTMParams(W=_sum_outer(X, dP), U=_sum_outer(hs[:-1], dP), b=dP.sum((0, 1)))
    return grads, dP @ params.W.T


# --------------------------------------------------------------------------- the task
def remember_first_batch(T: int, batch: int, nx: int, rng: np.random.Generator, *, noise: float = 1.0,
                         dtype="float64"):
    """Seed 001's synthetic task (Martin & Cundy's Table 3): ``x_0 = +-e_1``, then ``T-1`` steps of
    Gaussian noise; the target at the end is the sign of the first element.
    Returns ``X (T, B, nx)`` and labels ``y (B,)`` in {0, 1}."""
    T = check_positive_int(T, "T")
    batch = check_positive_int(batch, "batch")
    nx = check_positive_int(nx, "nx")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    y = rng.integers(0, 2, size=batch)
    X = (noise * rng.standard_normal((T, batch, nx))).astype(dtype)
    X[0] = 0
    X[0, :, 0] = 2 * y - 1
    return X, y


def classifier_loss(h_last, w, b0, y):
    """Logistic head on the last state: ``logit = h_last . w + b0``; mean binary cross-entropy.
    Returns ``(loss, accuracy, dlogit)`` with ``dlogit = dL/dlogit (B,)``."""
    dims: dict = {}
    h_last = check_array(h_last, "h_last", shape=("B", "H"), dims=dims, min_size={"B": 1})
    w = check_array(w, "w", shape=("H",), dims=dims)
    b0 = check_float(b0, "b0")
    y = check_ids(y, "y", 2, shape=("B",), dims=dims, what="labels")
    logit = h_last @ w + b0
    p = sigmoid(logit)
    eps = 1e-12
    loss = float(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
    acc = float(np.mean((logit > 0) == (y == 1)))
    return loss, acc, (p - y) / y.shape[0]


def train_remember_first(layer: str, T: int, *, nh: int = 16, nx: int = 4, batch: int = 32,
                         train_size: int = 512, max_epochs: int = 40, lr: float = 0.02, seed: int = 0,
                         k: int = 2, method: str = "sequential", progress: bool = False,
                         forget_bias: float = 3.0) -> TrainResult:
    """Train one ``layer`` + a logistic head with Adam on the remember-the-first-element task, the
    seed's way: a fixed training set of ``train_size`` sequences, shuffled into batches of ``batch``
    each epoch; after every epoch a held-out set of 256 sequences is classified, and training stops
    at the first epoch where it is 100% right (or after ``max_epochs``).

    Returns a :class:`~course_lib.core.results.TrainResult`: ``params`` a :class:`ClassifierParams`;
    ``history`` per epoch: ``"epoch"``, ``"loss"`` (mean training loss), ``"val_accuracy"``,
    ``"seconds"`` (cumulative wall time); ``seconds`` the whole loop; ``info``: ``layer``, ``T``,
    ``method``, ``converged``, ``epochs`` (run), ``steps``."""
    check_choice(layer, "layer", LAYERS)
    T = check_positive_int(T, "T")
    batch = check_positive_int(batch, "batch")
    train_size = check_positive_int(train_size, "train_size")
    max_epochs = check_count(max_epochs, "max_epochs")
    lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
    rng = np.random.default_rng(seed)
    rnn = init_params(layer, nx, nh, k=k, seed=seed, forget_bias=forget_bias)
    model = ClassifierParams(rnn, np.random.default_rng(seed + 1).standard_normal(nh) / np.sqrt(nh), np.zeros(1))
    X_all, y_all = remember_first_batch(T, train_size, nx, np.random.default_rng(seed + 777))
    Xv, yv = remember_first_batch(T, 256, nx, np.random.default_rng(seed + 12345))
    opt = Adam(model.arrays(), lr)
    history = {"epoch": [], "loss": [], "val_accuracy": [], "seconds": []}
    info = {"layer": layer, "T": T, "method": method, "converged": False, "epochs": 0, "steps": 0}
    bar = None
    if progress:
        from ..core.progress import progress_bar

        bar = progress_bar(total=max_epochs, desc=f"{layer} T={T}", unit="epoch")
    t0 = time.perf_counter()
    for epoch in range(1, max_epochs + 1):
        order = rng.permutation(train_size)
        losses = []
        for s in range(0, train_size, batch):
            idx = order[s:s + batch]
            Hs, cache = forward(rnn, X_all[:, idx], method=method)
            loss, _, dlogit = classifier_loss(Hs[-1], model.w_out, model.b_out[0], y_all[idx])
            dHs = np.zeros_like(Hs)
            dHs[-1] = np.outer(dlogit, model.w_out)
            grads, _ = backward(rnn, cache, dHs, method=method)
            opt.step(ClassifierParams(grads, Hs[-1].T @ dlogit, np.array([dlogit.sum()])).arrays())
            losses.append(loss)
            info["steps"] += 1
        Hv, _ = forward(rnn, Xv, method=method)
        _, vacc, _ = classifier_loss(Hv[-1], model.w_out, model.b_out[0], yv)
        history["epoch"].append(epoch)
        history["loss"].append(float(np.mean(losses)))
        history["val_accuracy"].append(vacc)
        history["seconds"].append(time.perf_counter() - t0)
        info["epochs"] = epoch
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{history['loss'][-1]:.3f}", val_acc=f"{vacc:.2f}")
        if vacc == 1.0:
            info["converged"] = True
            break
    seconds = time.perf_counter() - t0
    if bar is not None:
        bar.total = info["epochs"]  # a run that stopped early because it succeeded is a full bar
        bar.refresh()
        bar.close()
    return TrainResult(params=model, history=history, seconds=seconds, info=info)
