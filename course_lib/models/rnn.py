"""The serial Elman RNN of seed 000, its loss, and backpropagation through time (models layer).

Row-vector maths, time-major arrays, exactly as in the seed (Han & Uboweja, §2.1)::

    h_t  = tanh(x_t Wxh + h_{t-1} Whh)        x_t (B, nx), h_t (B, nh)
    ŷ_t  = tanh(h_t Why)                       ŷ_t (B, ny)
    E    = Σ_t Σ (ŷ_t - y_t)²                  a *sum* over time, batch and outputs

Shapes: ``X (T, B, nx)``, ``Y (T, B, ny)``, ``h0 (B, nh)``, ``Wxh (nx, nh)``, ``Whh (nh, nh)``,
``Why (nh, ny)``.  No biases (the seed leaves them out too).

Two ways to get the gradient of ``E`` (chapter 02):

* :func:`bptt_quadratic` -- the "WildML" double loop: for every output step t, walk the error
  back towards step 0 and add each step's term on the way. O(T²) matrix products.
* :func:`bptt_linear` -- one reverse sweep that carries ``dh_next`` from step t+1 to step t, so
  each step's error is pushed back once. O(T).

Both return an :class:`RNNParams` holding the gradients (same field names as the weights).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..core.params import Params
from ..core.results import TrainResult
from ..core.validate import (check_alloc, check_array, check_count, check_dtype, check_float, check_int,
                             check_positive_int, largest)

__all__ = [
    "RNNParams",
    "RNNCache",
    "TrainResult",
    "TrainingDiverged",
    "init_params",
    "forward_step",
    "forward",
    "loss",
    "output_error",
    "bptt_quadratic",
    "bptt_linear",
    "sgd_step",
    "train",
    "predict",
    "bptt_flops",
    "forward_flops",
]


# --------------------------------------------------------------------------- containers
@dataclass
class RNNParams(Params):
    """The three weight matrices (also used to hold their gradients); the protocol of
    :class:`course_lib.core.params.Params` (``names()``, ``arrays()``, ``copy()``, ``astype()``, ...).

    ``Wxh (nx, nh)`` input -> hidden, ``Whh (nh, nh)`` hidden -> hidden, ``Why (nh, ny)`` hidden -> output.
    """

    Wxh: np.ndarray
    Whh: np.ndarray
    Why: np.ndarray

    @property
    def nx(self) -> int:
        return self.Wxh.shape[0]

    @property
    def nh(self) -> int:
        return self.Whh.shape[0]

    @property
    def ny(self) -> int:
        return self.Why.shape[1]



@dataclass
class RNNCache:
    """Everything a forward pass computed that backpropagation needs.

    ``X (T, B, nx)`` the inputs, ``h0 (B, nh)`` the initial state, ``H (T, B, nh)`` the hidden
    states ``h_1..h_T`` (``H[t]`` is the state after reading ``X[t]``), ``Yhat (T, B, ny)`` the outputs.
    """

    X: np.ndarray
    h0: np.ndarray
    H: np.ndarray
    Yhat: np.ndarray

    @property
    def H_prev(self) -> np.ndarray:
        """``(T, B, nh)``: the state each step started from, ``[h0, H[0], ..., H[T-2]]``."""
        return np.concatenate([self.h0[None], self.H[:-1]], axis=0)


class TrainingDiverged(FloatingPointError):
    """Raised by :func:`train` when the loss or the weights blow up."""


# --------------------------------------------------------------------------- validation
def _check_params(params) -> RNNParams:
    if not isinstance(params, RNNParams):
        raise TypeError(f"params: expected an RNNParams, got {type(params).__name__}")
    dims: dict = {}
    check_array(params.Wxh, "params.Wxh", shape=("nx", "nh"), dims=dims)
    check_array(params.Whh, "params.Whh", shape=("nh", "nh"), dims=dims)
    check_array(params.Why, "params.Why", shape=("nh", "ny"), dims=dims)
    dt = params.Wxh.dtype
    for name, w in zip(params.names(), params.arrays()):
        if w.dtype != dt:
            raise ValueError(f"params.{name}: expected dtype {dt} like params.Wxh, got {w.dtype}")
    return params


def check_inputs(params: RNNParams, X, Y=None, h0=None):
    """Validate ``X (T, B, nx)``, ``Y (T, B, ny)``, ``h0 (B, nh)`` against ``params``."""
    _check_params(params)
    dims = {"nx": params.nx, "nh": params.nh, "ny": params.ny}
    X = check_array(X, "X", shape=("T", "B", "nx"), dims=dims, min_size={"T": 1, "B": 1})
    _same_dtype(X, "X", params)
    if Y is not None:
        Y = check_array(Y, "Y", shape=("T", "B", "ny"), dims=dims)
        _same_dtype(Y, "Y", params)
    if h0 is None:
        h0 = np.zeros((X.shape[1], params.nh), dtype=params.dtype)
    else:
        h0 = check_array(h0, "h0", shape=("B", "nh"), dims=dims)
        _same_dtype(h0, "h0", params)
    return X, Y, h0


def _same_dtype(a: np.ndarray, name: str, params: RNNParams) -> None:
    if a.dtype != params.dtype:
        raise ValueError(
            f"{name}: expected dtype {params.dtype} (the dtype of params), got {a.dtype} with shape "
            f"{tuple(a.shape)}; convert one of them with .astype(...)")


# --------------------------------------------------------------------------- model
def init_params(nx: int, nh: int, ny: int, *, seed: int = 0, dtype=np.float32) -> RNNParams:
    """Random weights with a fan-in scale: every entry ~ N(0, 1/fan_in).

    ``Wxh`` uses ``1/nx``, ``Whh`` and ``Why`` use ``1/nh``. With that scale the pre-activations
    ``x_t Wxh + h_{t-1} Whh`` have a variance of order 1 for inputs of unit size, so ``tanh``
    neither saturates nor vanishes at the start of training, and ``Whh``'s spectral radius is
    about 1 (signals neither explode nor die out quickly along the sequence).
    """
    nx = check_positive_int(nx, "nx")
    nh = check_positive_int(nh, "nh")
    ny = check_positive_int(ny, "ny")
    seed = check_int(seed, "seed", low=0)
    dt = check_dtype(dtype, "dtype")
    check_alloc((nx + nh + ny, nh), np.float64, largest(nx=nx, nh=nh, ny=ny), what="the weights")
    rng = np.random.default_rng(seed)
    Wxh = rng.standard_normal((nx, nh)) / math.sqrt(nx)
    Whh = rng.standard_normal((nh, nh)) / math.sqrt(nh)
    Why = rng.standard_normal((nh, ny)) / math.sqrt(nh)
    return RNNParams(Wxh.astype(dt), Whh.astype(dt), Why.astype(dt))


def forward_step(x_t: np.ndarray, h_prev: np.ndarray, Wxh: np.ndarray, Whh: np.ndarray) -> np.ndarray:
    """One step: ``h_t = tanh(x_t Wxh + h_prev Whh)``; ``x_t (B, nx)``, ``h_prev (B, nh)`` -> ``(B, nh)``."""
    dims: dict = {}
    Wxh = check_array(Wxh, "Wxh", shape=("nx", "nh"), dims=dims)
    Whh = check_array(Whh, "Whh", shape=("nh", "nh"), dims=dims)
    x_t = check_array(x_t, "x_t", shape=("B", "nx"), dims=dims)
    h_prev = check_array(h_prev, "h_prev", shape=("B", "nh"), dims=dims)
    return np.tanh(x_t @ Wxh + h_prev @ Whh)


def forward(params: RNNParams, X: np.ndarray, h0: np.ndarray | None = None) -> RNNCache:
    """Run the RNN over ``X (T, B, nx)`` from ``h0 (B, nh)`` (zeros by default).

    Only ``h_{t-1} Whh`` is truly sequential: the input projections of all T steps are one GEMM
    ``(T*B, nx) @ (nx, nh)`` before the loop, and the outputs of all steps one GEMM after it.
    Returns an :class:`RNNCache` with ``H (T, B, nh)`` and ``Yhat (T, B, ny)``.
    """
    X, _, h0 = check_inputs(params, X, None, h0)
    T, B, nx = X.shape
    nh = params.nh
    pre = (X.reshape(T * B, nx) @ params.Wxh).reshape(T, B, nh)  # x_t Wxh for every t
    H = np.empty((T, B, nh), dtype=params.dtype)
    h = h0
    for t in range(T):
        pre[t] += h @ params.Whh
        h = np.tanh(pre[t], out=H[t])
    Yhat = np.tanh((H.reshape(T * B, nh) @ params.Why)).reshape(T, B, params.ny)
    return RNNCache(X=X, h0=h0, H=H, Yhat=Yhat)


def predict(params: RNNParams, X: np.ndarray, h0: np.ndarray | None = None) -> np.ndarray:
    """``Yhat (T, B, ny)`` of :func:`forward`."""
    return forward(params, X, h0).Yhat


def loss(Yhat: np.ndarray, Y: np.ndarray) -> float:
    """The seed's loss ``E = Σ_t Σ (ŷ_t - y_t)²`` summed over time, batch and outputs (float64 sum)."""
    Yhat = check_array(Yhat, "Yhat", ndim=(1, 2, 3))
    Y = check_array(Y, "Y", ndim=(1, 2, 3))
    if Yhat.shape != Y.shape:
        raise ValueError(f"Y: expected the same shape as Yhat {tuple(Yhat.shape)}, got {tuple(Y.shape)}")
    diff = Yhat.astype(np.float64) - Y.astype(np.float64)
    return float(np.sum(diff * diff))


def output_error(Yhat: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``dE/d(h_t Why) = 2 (ŷ_t - y_t) (1 - ŷ_t²)``, shape ``(T, B, ny)`` (the seed's first factor)."""
    Yhat = check_array(Yhat, "Yhat", ndim=(1, 2, 3))
    Y = check_array(Y, "Y", ndim=(1, 2, 3))
    if Yhat.shape != Y.shape:
        raise ValueError(f"Y: expected the same shape as Yhat {tuple(Yhat.shape)}, got {tuple(Y.shape)}")
    return _output_error(Yhat, Y)


def _output_error(Yhat: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """:func:`output_error` without validation (the BPTT functions validated already)."""
    return 2.0 * (Yhat - Y) * (1.0 - Yhat * Yhat)


# --------------------------------------------------------------------------- BPTT
def bptt_quadratic(params: RNNParams, X: np.ndarray, Y: np.ndarray, h0: np.ndarray | None = None,
                   truncate: int | None = None) -> RNNParams:
    """Gradients of ``E`` by the WildML double loop: O(T²) when ``truncate`` is None.

    For every output step ``t`` (from T-1 down to 0) the error of ``ŷ_t`` is pushed back to
    step ``t``, then walked back one step at a time towards step 0, and at every step ``s`` on
    the way its contribution to ``dWxh`` and ``dWhh`` is added. Step ``s`` is therefore
    revisited by every later ``t``: T(T+1)/2 walk steps of 3 matrix products each.
    ``truncate`` (>= 0) stops each walk after ``truncate`` steps back, like WildML's
    ``bptt_truncate`` (the result is then an approximation).
    """
    X, Y, h0 = check_inputs(params, X, Y, h0)
    if truncate is not None:
        truncate = check_int(truncate, "truncate", low=0)
    cache = forward(params, X, h0)
    H, H_prev = cache.H, cache.H_prev
    dO = _output_error(cache.Yhat, Y)                                  # (T, B, ny)
    g = params.zeros_like()
    T = X.shape[0]
    for t in range(T - 1, -1, -1):
        g.Why += H[t].T @ dO[t]
        delta = (dO[t] @ params.Why.T) * (1.0 - H[t] * H[t])           # dE_t/d(pre_t), (B, nh)
        stop = -1 if truncate is None else max(-1, t - truncate - 1)
        for s in range(t, stop, -1):                                   # walk back towards step 0
            g.Whh += H_prev[s].T @ delta
            g.Wxh += X[s].T @ delta
            delta = (delta @ params.Whh.T) * (1.0 - H_prev[s] * H_prev[s])   # to d(pre_{s-1})
    return g


def bptt_linear(params: RNNParams, X: np.ndarray, Y: np.ndarray, h0: np.ndarray | None = None) -> RNNParams:
    """Gradients of ``E`` by one reverse sweep: O(T).

    Going from t = T-1 down to 0, ``dh = dE/dh_t`` is the error arriving from this step's
    output plus ``dh_next`` carried back from step t+1; ``dpre_t = dh * (1 - h_t²)`` and
    ``dh_next = dpre_t Whh^T``. Only that line is sequential: the weight gradients are sums over
    time *and* batch, so each is a single GEMM over all ``T*B`` rows once the sweep is done::

        dWxh = Σ_t x_t^T dpre_t,   dWhh = Σ_t h_{t-1}^T dpre_t,   dWhy = Σ_t h_t^T dO_t
    """
    X, Y, h0 = check_inputs(params, X, Y, h0)
    cache = forward(params, X, h0)
    T, B, nx = X.shape
    nh, ny = params.nh, params.ny
    dO = _output_error(cache.Yhat, Y)                                  # (T, B, ny)
    dH = (dO.reshape(T * B, ny) @ params.Why.T).reshape(T, B, nh)      # error reaching h_t from ŷ_t
    dpre = np.empty_like(dH)
    dh_next = np.zeros((B, nh), dtype=params.dtype)
    for t in range(T - 1, -1, -1):
        dh = dH[t] + dh_next
        dpre[t] = dh * (1.0 - cache.H[t] * cache.H[t])
        dh_next = dpre[t] @ params.Whh.T
    rows = lambda A: A.reshape(T * B, -1)  # noqa: E731  (T, B, n) -> (T*B, n)
    return RNNParams(
        Wxh=rows(X).T @ rows(dpre),
        Whh=rows(cache.H_prev).T @ rows(dpre),
        Why=rows(cache.H).T @ rows(dO),
    )


# --------------------------------------------------------------------------- training
def sgd_step(params: RNNParams, grads: RNNParams, lr: float) -> RNNParams:
    """``W - lr * dW`` for each weight; returns new params (the inputs are not modified)."""
    _check_params(params)
    if not isinstance(grads, RNNParams):
        raise TypeError(f"grads: expected an RNNParams, got {type(grads).__name__}")
    lr = check_float(lr, "lr", low=0.0)
    out = {}
    for name, w, g in zip(params.names(), params.arrays(), grads.arrays()):
        g = check_array(g, f"grads.{name}", shape=w.shape, finite=False)
        out[name] = (w - lr * g).astype(w.dtype, copy=False)
    return RNNParams(**out)


def _finite_params(params: RNNParams) -> str | None:
    for name, w in zip(params.names(), params.arrays()):
        if not np.all(np.isfinite(w)):
            return name
    return None


def train(params: RNNParams, X: np.ndarray, Y: np.ndarray, *, epochs: int, lr: float, batch: int,
          seed: int = 0, progress: bool = True, explode_factor: float = 3.0) -> TrainResult:
    """Mini-batch SGD with :func:`bptt_linear` gradients.

    ``X (T, N, nx)``, ``Y (T, N, ny)``: N training sequences. Each epoch shuffles the sequences
    (with ``np.random.default_rng(seed)``) and takes one step per mini-batch of ``batch``
    sequences, with the gradient of ``E / batch_size`` (the loss per sequence), so ``lr`` does
    not depend on the batch size. A tqdm progress bar shows the running loss when ``progress``.

    Returns a :class:`~course_lib.core.results.TrainResult` (``params, history = train(...)``) whose
    ``history["loss"]`` is the mean loss per sequence (``E / B``) over each epoch, preceded by the loss
    before training (``epochs + 1`` values), and ``history["step_loss"]`` the loss per sequence of every
    mini-batch step. Raises
    :class:`TrainingDiverged` (a ``FloatingPointError``) with a hint to lower ``lr`` when the
    loss or the weights become non-finite, or the loss grows above ``explode_factor`` times
    its starting value.
    """
    X, Y, _ = check_inputs(params, X, Y, None)
    epochs = check_count(epochs, "epochs", low=0)
    lr = check_float(lr, "lr", low=0.0)
    N = X.shape[1]
    batch = check_positive_int(batch, "batch", high=N)
    seed = check_int(seed, "seed", low=0)
    explode_factor = check_float(explode_factor, "explode_factor", low=1.0)
    rng = np.random.default_rng(seed)
    steps_per_epoch = math.ceil(N / batch)

    start = loss(forward(params, X).Yhat, Y) / N
    t0 = time.perf_counter()
    epoch_losses, step_losses = [start], []
    bar = None
    if progress:
        from ..core.progress import progress_bar

        bar = progress_bar(total=epochs * steps_per_epoch, desc="training", unit="step")

    def diverged(where: str, what: str) -> TrainingDiverged:
        return TrainingDiverged(
            f"training diverged at {where}: {what} (lr={lr:g}, starting loss {start:.4g} per sequence). "
            f"Try a smaller learning rate, e.g. lr={lr / 10:g}.")

    p = params.copy()
    try:
        for epoch in range(epochs):
            order = rng.permutation(N)
            total = 0.0
            for k in range(steps_per_epoch):
                idx = order[k * batch:(k + 1) * batch]
                xb, yb = X[:, idx], Y[:, idx]
                g = bptt_linear(p, xb, yb)
                step_loss = loss(forward(p, xb).Yhat, yb) / len(idx)
                where = f"epoch {epoch + 1}, step {k + 1}"
                if not math.isfinite(step_loss) or step_loss > explode_factor * max(start, 1e-12):
                    raise diverged(where, f"the loss per sequence is {step_loss:.4g}")
                p = sgd_step(p, RNNParams(*(w / len(idx) for w in g.arrays())), lr)
                bad = _finite_params(p)
                if bad is not None:
                    raise diverged(where, f"params.{bad} became non-finite")
                step_losses.append(step_loss)
                total += step_loss * len(idx)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{step_loss:.4g}")
            epoch_losses.append(total / N)
    finally:
        if bar is not None:
            bar.close()
    return TrainResult(p, {"loss": epoch_losses, "step_loss": step_losses}, time.perf_counter() - t0,
                       {"epochs": epochs, "batch_size": batch, "lr": lr})


# --------------------------------------------------------------------------- work
def forward_flops(T: int, batch: int, nx: int, nh: int, ny: int) -> int:
    """GEMM FLOPs of :func:`forward`: ``2 T B (nx nh + nh nh + nh ny)``."""
    T, batch, nx, nh, ny = (check_positive_int(v, name) for v, name in
                        ((T, "T"), (batch, "batch"), (nx, "nx"), (nh, "nh"), (ny, "ny")))
    return 2 * T * batch * (nx * nh + nh * nh + nh * ny)


def bptt_flops(T: int, batch: int, nx: int, nh: int, ny: int, method: str = "linear",
               truncate: int | None = None) -> int:
    """GEMM FLOPs of one gradient computation (forward pass included), as implemented here.

    ``linear``: forward + ``2TB(ny nh)`` (error into h) + ``2TB(nh nh)`` (dh_next) + the three
    weight gradients ``2TB(nx nh + nh nh + nh ny)``.
    ``quadratic``: forward + per output step ``2B(nh ny)`` twice (dWhy, delta), plus per walk
    step ``2B(nh nh + nx nh + nh nh)`` (dWhh, dWxh, delta back); there are T(T+1)/2 walk steps
    untruncated.
    """
    T, batch, nx, nh, ny = (check_positive_int(v, name) for v, name in
                        ((T, "T"), (batch, "batch"), (nx, "nx"), (nh, "nh"), (ny, "ny")))
    fwd = forward_flops(T, batch, nx, nh, ny)
    if method == "linear":
        return fwd + 2 * T * batch * (ny * nh + nh * nh) + 2 * T * batch * (nx * nh + nh * nh + nh * ny)
    if method == "quadratic":
        if truncate is None:
            walk = T * (T + 1) // 2
        else:
            truncate = check_int(truncate, "truncate", low=0)
            k = min(truncate + 1, T)                  # walk = sum_t min(t + 1, truncate + 1), closed form
            walk = k * (k + 1) // 2 + (T - k) * k
        return fwd + T * 2 * batch * (2 * nh * ny) + walk * 2 * batch * (2 * nh * nh + nx * nh)
    raise ValueError(f"method: expected 'linear' or 'quadratic', got {method!r}")
