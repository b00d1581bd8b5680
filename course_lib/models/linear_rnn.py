"""RNN layers built on the linear-recurrence scan (layer 2: methods). Seed 001, Martin & Cundy 2018.

Every layer computes all its gates from the *inputs* (one big GEMM over all time steps), and the
only thing carried along time is a linear recurrence ``c_t = f_t c_{t-1} + u_t`` -- which
:func:`course_lib.algorithms.scan.linear_recurrence` evaluates with any method (serial or parallel over time).
Backward passes use :func:`course_lib.algorithms.scan.linear_recurrence_backward` (the reverse scan).

Layers (``kind``), shapes time-major: ``X (T, B, nx)`` -> ``Hs (T, B, H)``

* ``"gilr_lstm"`` (seed 001's equations)::

      g = sigmoid(X Wg + bg), j = tanh(X Wj + bj),  ht_t = g_t ht_{t-1} + (1 - g_t) j_t   (scan 1)
      [f, i, o, z] = [sigmoid, sigmoid, sigmoid, tanh](X V + ht_{t-1} U + b)
      c_t = f_t c_{t-1} + i_t z_t  (scan 2),   h_t = o_t c_t

* ``"sru"``::  [xt, f, r] = [id, sigmoid, sigmoid](X W + b);  c_t = f c_{t-1} + (1-f) xt;
  h_t = r tanh(c_t) + (1 - r) xt   (the highway goes through the projection xt, so nx may differ from H)
* ``"qrnn"`` (window k)::  [z, f, o] = [tanh, sigmoid, sigmoid](conv_k(X) W + b), conv_k(X)_t =
  [x_t, x_{t-1}, ..., x_{t-k+1}];  c_t = f c_{t-1} + (1-f) z;  h_t = o c_t   ("fo-pooling")
* ``"lstm"``: the classic serial LSTM (the baseline: its gates need h_{t-1}, so no scan)::
  [f, i, o, z] = [sigmoid, sigmoid, sigmoid, tanh](x_t W + h_{t-1} U + b); c_t = f c + i z; h_t = o tanh(c_t)

Public API: ``init_params(kind, nx, H, *, k=2, seed=0)``, ``forward(kind, params, X, *, method=)``
-> ``(Hs, cache)``, ``backward(kind, params, cache, dHs, *, method=)`` -> grads (dict like params),
``remember_first_batch(T, B, nx, rng)``, ``classifier_loss(...)``, ``train_remember_first(...)``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..core.optim import Adam
from ..algorithms.scan import linear_recurrence, linear_recurrence_backward
from ..core.validate import check_array, check_choice, check_float, check_positive_int

__all__ = [
    "LAYERS",
    "sigmoid",
    "init_params",
    "forward",
    "backward",
    "remember_first_batch",
    "classifier_loss",
    "TrainResult",
    "train_remember_first",
]

LAYERS = ("gilr_lstm", "sru", "qrnn", "lstm")


def sigmoid(z):
    """Logistic function, written with tanh so it never overflows."""
    return 0.5 * (1.0 + np.tanh(0.5 * z))


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


def init_params(kind: str, nx: int, H: int, *, k: int = 2, seed: int = 0, dtype="float64",
                forget_bias: float = 1.0) -> dict:
    """Parameters of one layer, seeded. The forget/keep gates' biases start at ``forget_bias``
    (a longer memory at initialisation, the usual trick)."""
    check_choice(kind, "kind", LAYERS)
    nx = check_positive_int(nx, "nx")
    H = check_positive_int(H, "H")
    k = check_positive_int(k, "k")
    forget_bias = check_float(forget_bias, "forget_bias")
    rng = np.random.default_rng(seed)

    def w(n, m):
        return (rng.standard_normal((n, m)) / np.sqrt(n)).astype(dtype)

    if kind == "gilr_lstm":
        p = {"Wg": w(nx, H), "bg": np.full(H, forget_bias, dtype), "Wj": w(nx, H), "bj": np.zeros(H, dtype),
             "V": w(nx, 4 * H), "U": w(H, 4 * H), "b": np.zeros(4 * H, dtype)}
        p["b"][:H] = forget_bias
    elif kind == "sru":
        p = {"W": w(nx, 3 * H), "b": np.zeros(3 * H, dtype)}
        p["b"][H:2 * H] = forget_bias
    elif kind == "qrnn":
        p = {"W": w(k * nx, 3 * H), "b": np.zeros(3 * H, dtype)}
        p["b"][H:2 * H] = forget_bias
    else:
        p = {"W": w(nx, 4 * H), "U": w(H, 4 * H), "b": np.zeros(4 * H, dtype)}
        p["b"][:H] = forget_bias
    return p


def _check_inputs(kind, params, X):
    check_choice(kind, "kind", LAYERS)
    if not isinstance(params, dict):
        raise TypeError(f"params: expected a dict from init_params, got {type(params).__name__}")
    X = check_array(X, "X", shape=("T", "B", None), min_size={"T": 1})
    first = {"gilr_lstm": "Wg", "sru": "W", "qrnn": "W", "lstm": "W"}[kind]
    if first not in params:
        raise ValueError(f"params: expected the keys of init_params({kind!r}, ...), missing {first!r}")
    n_in = params[first].shape[0]
    if kind != "qrnn" and n_in != X.shape[2]:
        raise ValueError(f"X: expected shape (T, B, {n_in}) to match params[{first!r}], got {X.shape}")
    if kind == "qrnn" and n_in % X.shape[2]:
        raise ValueError(f"X: expected nx dividing params['W'].shape[0] = {n_in} (k * nx), got {X.shape}")
    return X


# --------------------------------------------------------------------------- forward
def forward(kind: str, params: dict, X, *, method: str = "sequential"):
    """Run one layer over ``X (T, B, nx)``; returns ``(Hs (T, B, H), cache)`` (cache for backward).
    ``method`` is the scan method (ignored by the serial ``"lstm"``)."""
    X = _check_inputs(kind, params, X)
    scan = lambda a, u: linear_recurrence(a, u, method=method)  # noqa: E731
    if kind == "gilr_lstm":
        H = params["bg"].shape[0]
        g = sigmoid(X @ params["Wg"] + params["bg"])
        j = np.tanh(X @ params["Wj"] + params["bj"])
        ht = scan(g, (1 - g) * j)
        hp = _shift(ht)
        P = X @ params["V"] + hp @ params["U"] + params["b"]
        f, i, o = (sigmoid(P[..., s * H:(s + 1) * H]) for s in range(3))
        z = np.tanh(P[..., 3 * H:])
        c = scan(f, i * z)
        return o * c, dict(X=X, g=g, j=j, ht=ht, hp=hp, f=f, i=i, o=o, z=z, c=c)
    if kind == "sru":
        H = params["b"].shape[0] // 3
        Z = X @ params["W"] + params["b"]
        xt, f, r = Z[..., :H], sigmoid(Z[..., H:2 * H]), sigmoid(Z[..., 2 * H:])
        c = scan(f, (1 - f) * xt)
        tc = np.tanh(c)
        return r * tc + (1 - r) * xt, dict(X=X, xt=xt, f=f, r=r, c=c, tc=tc)
    if kind == "qrnn":
        H = params["b"].shape[0] // 3
        k = params["W"].shape[0] // X.shape[2]
        Xk = _window(X, k)
        Z = Xk @ params["W"] + params["b"]
        z, f, o = np.tanh(Z[..., :H]), sigmoid(Z[..., H:2 * H]), sigmoid(Z[..., 2 * H:])
        c = scan(f, (1 - f) * z)
        return o * c, dict(X=X, Xk=Xk, k=k, z=z, f=f, o=o, c=c)
    # serial LSTM
    T, B, _ = X.shape
    H = params["U"].shape[0]
    XW = X @ params["W"] + params["b"]
    hs = np.zeros((T + 1, B, H), X.dtype)
    cs = np.zeros((T + 1, B, H), X.dtype)
    gates = np.empty((T, B, 4 * H), X.dtype)
    for t in range(T):
        P = XW[t] + hs[t] @ params["U"]
        gates[t, :, :3 * H] = sigmoid(P[:, :3 * H])
        gates[t, :, 3 * H:] = np.tanh(P[:, 3 * H:])
        f, i, o, z = (gates[t, :, s * H:(s + 1) * H] for s in range(4))
        cs[t + 1] = f * cs[t] + i * z
        hs[t + 1] = o * np.tanh(cs[t + 1])
    return hs[1:].copy(), dict(X=X, hs=hs, cs=cs, gates=gates)


# --------------------------------------------------------------------------- backward
def backward(kind: str, params: dict, cache: dict, dHs, *, method: str = "sequential") -> dict:
    """Gradients of a loss w.r.t. the layer's parameters, given ``dHs = dL/dHs (T, B, H)``.
    Returns a dict with the keys of ``params`` (plus ``"X"``: dL/dX)."""
    check_choice(kind, "kind", LAYERS)
    X = cache["X"]
    dHs = check_array(dHs, "dHs", shape=X.shape[:2] + (None,))
    bwd = lambda a, h, dh: linear_recurrence_backward(a, h, None, dh, method=method)[:2]  # noqa: E731
    if kind == "gilr_lstm":
        f, i, o, z, c, g, j = (cache[n] for n in ("f", "i", "o", "z", "c", "g", "j"))
        do = dHs * c
        df, diz = bwd(f, c, dHs * o)
        dP = np.concatenate([df * f * (1 - f), diz * z * i * (1 - i), do * o * (1 - o),
                             diz * i * (1 - z * z)], axis=-1)
        dht = _unshift(dP @ params["U"].T)
        dg_a, du = bwd(g, cache["ht"], dht)
        dZg = (dg_a - du * j) * g * (1 - g)
        dZj = du * (1 - g) * (1 - j * j)
        grads = {"Wg": _sum_outer(X, dZg), "bg": dZg.sum((0, 1)), "Wj": _sum_outer(X, dZj),
                 "bj": dZj.sum((0, 1)), "V": _sum_outer(X, dP), "U": _sum_outer(cache["hp"], dP),
                 "b": dP.sum((0, 1))}
        grads["X"] = dZg @ params["Wg"].T + dZj @ params["Wj"].T + dP @ params["V"].T
        return grads
    if kind == "sru":
        xt, f, r, c, tc = (cache[n] for n in ("xt", "f", "r", "c", "tc"))
        dr = dHs * (tc - xt)
        df_a, du = bwd(f, c, dHs * r * (1 - tc * tc))
        dZ = np.concatenate([dHs * (1 - r) + du * (1 - f), (df_a - du * xt) * f * (1 - f),
                             dr * r * (1 - r)], axis=-1)
        return {"W": _sum_outer(X, dZ), "b": dZ.sum((0, 1)), "X": dZ @ params["W"].T}
    if kind == "qrnn":
        z, f, o, c, k = (cache[n] for n in ("z", "f", "o", "c", "k"))
        df_a, du = bwd(f, c, dHs * o)
        dZ = np.concatenate([du * (1 - f) * (1 - z * z), (df_a - du * z) * f * (1 - f),
                             dHs * c * o * (1 - o)], axis=-1)
        dXk = dZ @ params["W"].T
        nx = X.shape[2]
        dX = np.zeros_like(X)
        for s in range(k):
            dX[:X.shape[0] - s] += dXk[s:, :, s * nx:(s + 1) * nx]
        return {"W": _sum_outer(cache["Xk"], dZ), "b": dZ.sum((0, 1)), "X": dX}
    # serial LSTM: backpropagation through time
    hs, cs, gates = cache["hs"], cache["cs"], cache["gates"]
    T, B, _ = X.shape
    H = params["U"].shape[0]
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
        dh_next = dP[t] @ params["U"].T
    return {"W": _sum_outer(X, dP), "U": _sum_outer(hs[:-1], dP), "b": dP.sum((0, 1)),
            "X": dP @ params["W"].T}


# --------------------------------------------------------------------------- the task
def remember_first_batch(T: int, B: int, nx: int, rng: np.random.Generator, *, noise: float = 1.0,
                         dtype="float64"):
    """Seed 001's synthetic task (Martin & Cundy's Table 3): ``x_0 = +-e_1``, then ``T-1`` steps of
    Gaussian noise; the target at the end is the sign of the first element.
    Returns ``X (T, B, nx)`` and labels ``y (B,)`` in {0, 1}."""
    T = check_positive_int(T, "T")
    B = check_positive_int(B, "B")
    nx = check_positive_int(nx, "nx")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    y = rng.integers(0, 2, size=B)
    X = (noise * rng.standard_normal((T, B, nx))).astype(dtype)
    X[0] = 0
    X[0, :, 0] = 2 * y - 1
    return X, y


def classifier_loss(h_last, w, b0, y):
    """Logistic head on the last state: ``logit = h_last . w + b0``; mean binary cross-entropy.
    Returns ``(loss, accuracy, dlogit)`` with ``dlogit = dL/dlogit (B,)``."""
    dims: dict = {}
    h_last = check_array(h_last, "h_last", shape=("B", "H"), dims=dims)
    w = check_array(w, "w", shape=("H",), dims=dims)
    y = check_array(y, "y", shape=("B",), dims=dims, dtype="int")
    logit = h_last @ w + b0
    p = sigmoid(logit)
    eps = 1e-12
    loss = float(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
    acc = float(np.mean((logit > 0) == (y == 1)))
    return loss, acc, (p - y) / y.shape[0]


@dataclass
class TrainResult:
    """Outcome of :func:`train_remember_first`."""

    kind: str
    T: int
    converged: bool
    steps: int
    seconds: float
    losses: list = field(default_factory=list)
    accuracies: list = field(default_factory=list)

    def __str__(self) -> str:
        state = f"100% after {self.steps} steps" if self.converged else f"not converged in {self.steps} steps"
        return f"{self.kind:>9} T={self.T:<5d}: {state}, {self.seconds:.2f} s"


def train_remember_first(kind: str, T: int, *, H: int = 16, nx: int = 4, batch: int = 32,
                         max_steps: int = 300, lr: float = 0.02, seed: int = 0, k: int = 2,
                         method: str = "sequential", eval_every: int = 5, progress: bool = True,
                         forget_bias: float = 3.0) -> TrainResult:
    """Train one layer + a logistic head with Adam on the remember-the-first-element task until a
    fixed validation batch of 256 sequences is classified 100% right (checked every ``eval_every``
    steps) or ``max_steps``. Returns a :class:`TrainResult` (steps, wall time, curves)."""
    check_choice(kind, "kind", LAYERS)
    T = check_positive_int(T, "T")
    max_steps = check_positive_int(max_steps, "max_steps")
    lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
    rng = np.random.default_rng(seed)
    params = init_params(kind, nx, H, k=k, seed=seed, forget_bias=forget_bias)
    params["w_out"] = np.random.default_rng(seed + 1).standard_normal(H) / np.sqrt(H)
    params["b_out"] = np.zeros(1)
    Xv, yv = remember_first_batch(T, 256, nx, np.random.default_rng(seed + 12345))
    names = list(params)
    opt = Adam([params[n] for n in names], lr)
    layer = {n: v for n, v in params.items() if n not in ("w_out", "b_out")}
    from tqdm.auto import tqdm  # noqa: PLC0415

    bar = tqdm(range(1, max_steps + 1), desc=f"{kind} T={T}", disable=not progress, mininterval=0.5)
    result = TrainResult(kind, T, False, max_steps, 0.0)
    t0 = time.perf_counter()
    for step in bar:
        X, y = remember_first_batch(T, batch, nx, rng)
        Hs, cache = forward(kind, layer, X, method=method)
        loss, acc, dlogit = classifier_loss(Hs[-1], params["w_out"], params["b_out"][0], y)
        dHs = np.zeros_like(Hs)
        dHs[-1] = np.outer(dlogit, params["w_out"])
        grads = backward(kind, layer, cache, dHs, method=method)
        grads["w_out"] = Hs[-1].T @ dlogit
        grads["b_out"] = np.array([dlogit.sum()])
        opt.step([grads[n] for n in names])
        result.losses.append(loss)
        if step % eval_every == 0:
            Hv, _ = forward(kind, layer, Xv, method=method)
            _, vacc, _ = classifier_loss(Hv[-1], params["w_out"], params["b_out"][0], yv)
            result.accuracies.append((step, vacc))
            bar.set_postfix(loss=f"{loss:.3f}", val_acc=f"{vacc:.2f}")
            if vacc == 1.0:
                result.converged, result.steps = True, step
                break
    bar.close()
    result.seconds = time.perf_counter() - t0
    return result
