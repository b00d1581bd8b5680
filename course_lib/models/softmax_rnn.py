"""The stacked softmax RNN of chapter 07 (seed 004): parameters and the single-core forward passes.

The model is the seed's pseudocode, stacked ``L`` layers deep, in the **column-vector**
convention of the seed (layer ``l`` reads the hidden state of layer ``l-1``; layer 0 reads ``x``)::

    a[l, t] = b_l + W_l h[l, t-1] + U_l h[l-1, t]        h[-1, t] = x[t],  h[l, -1] = 0
    h[l, t] = tanh(a[l, t])
    o[t]    = c + V h[L-1, t]
    y[t]    = softmax(o[t])

Shapes: ``U_l (H, n_in)``, ``W_l (H, H)``, ``b_l (H,)``, ``V (vocab, H)``, ``c (vocab,)`` -- the
layout of ``torch.nn.RNN`` (``weight_ih_l{l}``, ``weight_hh_l{l}``) followed by a ``torch.nn.Linear``
(:meth:`SoftmaxRNNParams.from_torch` / :meth:`~SoftmaxRNNParams.to_torch`). Inputs are time-major
``X (T, B, nx)``; outputs are probabilities ``(T, B, vocab)``. With a batch of row vectors the same
maths reads ``A = X U^T + H W^T + b`` -- that is how the batched code is written.

``init_params(nx, nh, vocab, layers=, seed=, dtype=)``  -> :class:`SoftmaxRNNParams`
``forward(params, X, method="batched"|"sequential")``      -> probabilities ``(T, B, vocab)``
``hidden_states(params, X)``                           -> every layer's states, ``[(T, B, H)] * L``
``step(params, x, h)``                                 one time step of one sequence (the seed's loop body)
``cell_step``, ``output_probs``, ``softmax``, ``encode``, ``one_hot``, ``flops``

The parallel strategies over threads, ranks and a GPU are in :mod:`course_lib.parallel.inference`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.params import Params
from ..core.validate import check_alloc, check_array, check_choice, check_dtype, check_int, check_positive_int, largest
from ..data.corpus import one_hot as _one_hot

__all__ = [
    "Layer",
    "SoftmaxRNNParams",
    "METHODS",
    "init_params",
    "check_params",
    "check_inputs",
    "encode",
    "one_hot",
    "softmax",
    "step",
    "cell_step",
    "output_probs",
    "hidden_states",
    "forward",
    "batched_core",
    "flops",
]

METHODS = ("sequential", "batched")


# --------------------------------------------------------------------------- parameters
@dataclass
class Layer(Params):
    """One recurrent layer: ``U (H, n_in)``, ``W (H, H)``, ``b (H,)`` (``torch.nn.RNN``'s
    ``weight_ih``, ``weight_hh`` and ``bias_ih + bias_hh``)."""

    U: np.ndarray
    W: np.ndarray
    b: np.ndarray

    @property
    def nx(self) -> int:
        return int(self.U.shape[1])

    @property
    def nh(self) -> int:
        return int(self.W.shape[0])


@dataclass
class SoftmaxRNNParams(Params):
    """A stacked softmax RNN: ``layers[l]`` (a :class:`Layer`), output ``V (vocab, H)``, ``c (vocab,)``.

    Also holds gradients (same shapes) in :func:`course_lib.models.charlm.loss_and_grads`. The
    :class:`course_lib.core.params.Params` protocol names the arrays ``layers.0.U, layers.0.W,
    layers.0.b, ..., V, c``; ``dict(zip(p.names(), p.arrays()))`` is what ``np.savez`` takes and
    :meth:`from_arrays` reads back."""

    layers: list
    V: np.ndarray
    c: np.ndarray

    @property
    def nx(self) -> int:
        return int(self.layers[0].U.shape[1])

    @property
    def nh(self) -> int:
        return int(self.layers[-1].W.shape[0])

    @property
    def vocab(self) -> int:
        return int(self.V.shape[0])

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @classmethod
    def from_arrays(cls, arrays) -> "SoftmaxRNNParams":
        """Inverse of ``dict(zip(params.names(), params.arrays()))`` (accepts an ``np.load`` result;
        other keys are ignored); checked with :func:`check_params`."""
        if not hasattr(arrays, "keys") or not hasattr(arrays, "__getitem__"):
            raise TypeError(f"arrays: expected a mapping such as dict(zip(params.names(), params.arrays())) "
                            f"or np.load(...), got {type(arrays).__name__}")
        keys = set(arrays.keys())
        n = 0
        while f"layers.{n}.U" in keys:
            n += 1
        need = [f"layers.{i}.{c}" for i in range(n) for c in "UWb"] + ["V", "c"]
        missing = [k for k in need if k not in keys]
        if n == 0 or missing:
            raise ValueError(f"arrays: expected the keys layers.0.U, layers.0.W, layers.0.b, ..., V, c; "
                             f"missing {missing or ['layers.0.U', 'layers.0.W', 'layers.0.b']}")
        layers = [Layer(*(np.asarray(arrays[f"layers.{i}.{c}"]) for c in "UWb")) for i in range(n)]
        return check_params(cls(layers, np.asarray(arrays["V"]), np.asarray(arrays["c"])), "arrays")

    @classmethod
    def from_torch(cls, rnn, linear) -> "SoftmaxRNNParams":
        """Copy a ``torch.nn.RNN(nonlinearity="tanh")`` and the ``torch.nn.Linear`` on top of it.

        Same layout, so no transposes: ``U_l = weight_ih_l{l}``, ``W_l = weight_hh_l{l}``,
        ``b_l = bias_ih_l{l} + bias_hh_l{l}``, ``V = linear.weight``, ``c = linear.bias``."""
        if getattr(rnn, "nonlinearity", "tanh") != "tanh" or getattr(rnn, "batch_first", False):
            raise ValueError("rnn: expected a time-major torch.nn.RNN with nonlinearity='tanh'")
        get = lambda m, n: getattr(m, n).detach().cpu().numpy().copy()  # noqa: E731
        layers = []
        for l in range(rnn.num_layers):
            b = get(rnn, f"bias_ih_l{l}") + get(rnn, f"bias_hh_l{l}") if rnn.bias else \
                np.zeros(rnn.hidden_size, get(rnn, f"weight_hh_l{l}").dtype)
            layers.append(Layer(get(rnn, f"weight_ih_l{l}"), get(rnn, f"weight_hh_l{l}"), b))
        return check_params(cls(layers, get(linear, "weight"), get(linear, "bias")))

    def to_torch(self):
        """``(torch.nn.RNN, torch.nn.Linear)`` with these weights (``bias_hh`` zero); imports torch.

        ``softmax(linear(rnn(X)[0]), -1)`` then equals :func:`forward` to float round-off."""
        import torch

        check_params(self)
        dt = torch.float64 if self.dtype == np.float64 else torch.float32
        rnn = torch.nn.RNN(self.nx, self.nh, num_layers=self.n_layers, nonlinearity="tanh", bias=True).to(dt)
        linear = torch.nn.Linear(self.nh, self.vocab).to(dt)
        with torch.no_grad():
            for l, L in enumerate(self.layers):
                getattr(rnn, f"weight_ih_l{l}").copy_(torch.from_numpy(np.ascontiguousarray(L.U)))
                getattr(rnn, f"weight_hh_l{l}").copy_(torch.from_numpy(np.ascontiguousarray(L.W)))
                getattr(rnn, f"bias_ih_l{l}").copy_(torch.from_numpy(np.ascontiguousarray(L.b)))
                getattr(rnn, f"bias_hh_l{l}").zero_()
            linear.weight.copy_(torch.from_numpy(np.ascontiguousarray(self.V)))
            linear.bias.copy_(torch.from_numpy(np.ascontiguousarray(self.c)))
        return rnn, linear


def init_params(nx: int, nh: int, vocab: int, *, layers: int = 1, seed: int = 0,
                dtype=np.float32) -> SoftmaxRNNParams:
    """Random parameters: entries ~ U(-1/sqrt(n_in), 1/sqrt(n_in)), biases zero.

    ``nx`` input features, ``nh`` hidden units per layer, ``vocab`` output classes, ``layers`` deep.
    """
    nx = check_positive_int(nx, "nx")
    nh = check_positive_int(nh, "nh")
    vocab = check_positive_int(vocab, "vocab")
    layers = check_positive_int(layers, "layers")
    seed = check_int(seed, "seed", low=0)
    dt = check_dtype(dtype, "dtype")
    stack = {("layers" if layers > nh else "nh"): nh * layers}     # blame the factor that made the stack large
    check_alloc((nx + (2 * layers - 1) * nh + vocab, nh), np.float64, largest(nx=nx, vocab=vocab, **stack),
                what="the weights")
    rng = np.random.default_rng(seed)

    def uni(shape, fan_in):
        s = 1.0 / math.sqrt(fan_in)
        return rng.uniform(-s, s, size=shape).astype(dt)

    out = []
    n_in = nx
    for _ in range(layers):
        out.append(Layer(uni((nh, n_in), n_in), uni((nh, nh), nh), np.zeros(nh, dt)))
        n_in = nh
    return SoftmaxRNNParams(out, uni((vocab, nh), nh), np.zeros(vocab, dt))


def check_params(params, name: str = "params") -> SoftmaxRNNParams:
    """Validate a :class:`SoftmaxRNNParams`: consistent layer sizes and one float dtype. Returns it."""
    if not isinstance(params, SoftmaxRNNParams):
        raise TypeError(f"{name}: expected a course_lib.models.softmax_rnn.SoftmaxRNNParams (from init_params), "
                        f"got {type(params).__name__}")
    if not params.layers:
        raise ValueError(f"{name}.layers: expected at least one layer, got none")
    dt = params.V.dtype
    n_in = params.layers[0].U.shape[1] if np.ndim(params.layers[0].U) == 2 else None
    for i, L in enumerate(params.layers):
        dims: dict = {}
        U = check_array(L.U, f"{name}.layers[{i}].U", shape=("H", n_in), dims=dims)
        check_array(L.W, f"{name}.layers[{i}].W", shape=("H", "H"), dims=dims)
        check_array(L.b, f"{name}.layers[{i}].b", shape=("H",), dims=dims)
        for nm, arr in (("U", L.U), ("W", L.W), ("b", L.b)):
            if arr.dtype != dt:
                raise TypeError(f"{name}.layers[{i}].{nm}: expected dtype {dt} (the dtype of V), got {arr.dtype}")
        n_in = U.shape[0]
    check_array(params.V, f"{name}.V", shape=(None, n_in))
    check_array(params.c, f"{name}.c", shape=(params.V.shape[0],))
    if params.c.dtype != dt:
        raise TypeError(f"{name}.c: expected dtype {dt} (the dtype of V), got {params.c.dtype}")
    return params


def check_inputs(params: SoftmaxRNNParams, X, name: str = "X") -> np.ndarray:
    """Validate time-major inputs ``X (T, B, nx)`` (non-empty) against ``params``; cast to its dtype."""
    params = check_params(params)
    X = check_array(X, name, shape=("T", "B", params.nx))
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name}: expected at least one time step and one sequence, got shape {X.shape} (empty)")
    return X.astype(params.dtype, copy=False)


# --------------------------------------------------------------------------- pieces
def one_hot(ids, vocab_size: int, dtype=np.float32) -> np.ndarray:
    """One-hot features ``(...,) -> (..., vocab_size)`` (:func:`course_lib.data.corpus.one_hot`)."""
    return _one_hot(ids, vocab_size, dtype=dtype)


def encode(ids, vocab_size: int, dtype=np.float32) -> np.ndarray:
    """Token ids ``(T, B)`` (or ``(T,)`` for one sequence) -> one-hot inputs ``X (T, B, vocab_size)``.

    Raises ValueError for ids outside ``[0, vocab_size)`` and for empty sequences.
    """
    ids = check_array(ids, "ids", ndim=(1, 2), dtype="int", finite=False)
    if ids.ndim == 1:
        ids = ids[:, None]
    if ids.size == 0:
        raise ValueError(f"ids: expected a non-empty (T, B) array of token ids, got shape {ids.shape}")
    return _one_hot(ids, vocab_size, dtype=dtype)


def softmax(o, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax: ``exp(o - max o) / sum exp(o - max o)`` along ``axis``."""
    o = check_array(o, "o")
    if o.ndim == 0 or o.size == 0:
        raise ValueError(f"o: expected a non-empty array with at least one axis, got shape {tuple(o.shape)}")
    axis = check_int(axis, "axis", low=-o.ndim, high=o.ndim - 1)
    return softmax_unchecked(o, axis)


def softmax_unchecked(o: np.ndarray, axis: int = -1) -> np.ndarray:
    z = o - o.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def step(params: SoftmaxRNNParams, x: np.ndarray, h: list) -> np.ndarray:
    """The seed's loop body for ONE sequence, column vectors: ``x (nx,)``; ``h`` the list of the
    layers' states ``(H,)``, updated in place to step ``t``. Returns the logits ``o (vocab,)``.
    (Validated; the loops that run it once per character use the unchecked ``step_unchecked``.)"""
    params = check_params(params)
    x = check_array(x, "x", shape=(params.nx,))
    if not isinstance(h, list) or len(h) != params.n_layers:
        raise TypeError(f"h: expected a list of {params.n_layers} state vectors (one per layer, updated in place), "
                        f"got {type(h).__name__}" + (f" of length {len(h)}" if isinstance(h, list) else ""))
    for l, L in enumerate(params.layers):
        h[l] = check_array(h[l], f"h[{l}]", shape=(L.W.shape[0],))
    return step_unchecked(params, x, h)


def step_unchecked(params: SoftmaxRNNParams, x: np.ndarray, h: list) -> np.ndarray:
    """:func:`step` without validation (hot loop)."""
    below = x
    for l, L in enumerate(params.layers):
        h[l] = np.tanh(L.b + L.W @ h[l] + L.U @ below)      # a = b + W h[t-1] + U x[t]; h = tanh(a)
        below = h[l]
    return params.c + params.V @ below                       # o = c + V h


def cell_step(layer: Layer, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """One cell for a batch of rows: ``tanh(x U^T + h W^T + b)``; ``x (B, n_in)``, ``h (B, H)`` -> ``(B, H)``."""
    if not isinstance(layer, Layer):
        raise TypeError(f"layer: expected a course_lib.models.softmax_rnn.Layer, got {type(layer).__name__}")
    dims: dict = {}
    U = check_array(layer.U, "layer.U", shape=("H", "n_in"), dims=dims)
    check_array(layer.W, "layer.W", shape=("H", "H"), dims=dims)
    check_array(layer.b, "layer.b", shape=("H",), dims=dims)
    x = check_array(x, "x", shape=("B", "n_in"), dims=dims)
    h = check_array(h, "h", shape=("B", "H"), dims=dims)
    if not (x.dtype == h.dtype == U.dtype):
        raise TypeError(f"h: expected the dtype of layer.U ({U.dtype}) for x and h, got {x.dtype} and {h.dtype}")
    return cell_step_unchecked(layer, x, h)


def cell_step_unchecked(layer: Layer, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """:func:`cell_step` without validation (the wavefront's inner loop)."""
    return np.tanh(x @ layer.U.T + h @ layer.W.T + layer.b)


def output_probs(params: SoftmaxRNNParams, h: np.ndarray) -> np.ndarray:
    """``softmax(h V^T + c)`` for ``h (..., H)`` -> ``(..., vocab)``."""
    params = check_params(params)
    h = check_array(h, "h")
    if h.ndim < 1 or h.shape[-1] != params.nh:
        raise ValueError(f"h: expected shape (..., {params.nh}) (the last axis is params.nh), got {tuple(h.shape)}")
    return _output_probs(params, h)


def _output_probs(params: SoftmaxRNNParams, h: np.ndarray) -> np.ndarray:
    return softmax_unchecked(h @ params.V.T + params.c)


# --------------------------------------------------------------------------- forward passes
def _serial(params: SoftmaxRNNParams, X: np.ndarray) -> np.ndarray:
    T, B, _ = X.shape
    Y = np.empty((T, B, params.vocab), params.dtype)
    for s in range(B):                      # one sequence,
        h = [np.zeros(L.W.shape[0], params.dtype) for L in params.layers]
        for t in range(T):                  # one time step,
            Y[t, s] = softmax_unchecked(step_unchecked(params, X[t, s], h))   # one layer at a time (GEMV)
    return Y


def _states(params: SoftmaxRNNParams, X: np.ndarray) -> list[np.ndarray]:
    """No validation: layer by layer, the input projection of all T steps is one GEMM."""
    T, B, _ = X.shape
    out, below = [], X
    for L in params.layers:
        H = L.W.shape[0]
        Z = (below.reshape(T * B, -1) @ L.U.T + L.b).reshape(T, B, H)
        hs = np.empty_like(Z)
        h = np.zeros((B, H), Z.dtype)
        WT = L.W.T
        for t in range(T):
            h = np.tanh(Z[t] + h @ WT)
            hs[t] = h
        out.append(hs)
        below = hs
    return out


def batched_core(params: SoftmaxRNNParams, X: np.ndarray) -> np.ndarray:
    """:func:`forward` with ``method="batched"`` and no validation (for workers that validated already)."""
    return _output_probs(params, _states(params, X)[-1])


def hidden_states(params: SoftmaxRNNParams, X) -> list[np.ndarray]:
    """Every layer's states for inputs ``X (T, B, nx)``: a list of ``L`` arrays ``(T, B, H)`` (training needs them)."""
    params = check_params(params)
    return _states(params, check_inputs(params, X))


def forward(params: SoftmaxRNNParams, X, *, method: str = "batched") -> np.ndarray:
    """Probabilities ``(T, B, vocab)`` for inputs ``X (T, B, nx)``, on one core.

    ``method="sequential"``: the seed's loop verbatim -- one sequence, one time step, one layer at a
    time, matrix-*vector* products. ``method="batched"``: all ``B`` sequences at once (GEMM): per
    layer ``Z = X U^T + b`` for every step, then ``h_t = tanh(Z_t + h_{t-1} W^T)``, then
    ``softmax(h V^T + c)``. Both give the same numbers to float round-off.
    """
    method = check_choice(method, "method", METHODS)
    params = check_params(params)
    X = check_inputs(params, X)
    return _serial(params, X) if method == "sequential" else batched_core(params, X)


def flops(T: int, batch: int, nx: int, nh: int, vocab: int, layers: int = 1) -> int:
    """Matrix-product FLOPs of one forward pass: ``2 T B (H nx + (L-1) H^2 + L H^2 + vocab H)``."""
    T, batch, nx, nh, vocab, layers = (check_positive_int(v, n) for v, n in
                                       ((T, "T"), (batch, "batch"), (nx, "nx"), (nh, "nh"), (vocab, "vocab"),
                                        (layers, "layers")))
    return 2 * T * batch * (nh * nx + (layers - 1) * nh * nh + layers * nh * nh + vocab * nh)
