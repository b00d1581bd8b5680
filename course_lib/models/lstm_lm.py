"""A character-level LSTM language model on the course corpus (models layer; chapter 09).

The seed (EcoRNN, Fig. 4) compares training throughput of LSTM implementations on PTB and
Wikitext-2 language modelling; this is the same experiment at laptop scale: one-hot characters
``(T, B, V)`` -> :func:`course_lib.models.lstm.lstm_forward` -> a softmax head ``W_out (V, H)``, trained
with Adam on the pydoc help text (:mod:`course_lib.data.corpus`). Every LSTM method computes the
same numbers, so the losses agree and only the tokens per second differ.

``init_lm(V, nh, seed)`` -> :class:`LMParams`
``lm_loss_and_grads(params, X_ids, Y_ids, method)`` -> (mean cross-entropy in nats, grads)
``train_lm(ids, V, nh=..., T=..., batch=..., steps=..., method=...)`` -> :class:`~course_lib.core.results.TrainResult`
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from . import lstm
from ..core.optim import Adam
from ..core.params import Params
from ..core.results import TrainResult
from ..core.validate import (check_alloc, check_array, check_choice, check_count, check_dtype, check_fields,
                             check_finite, check_float, check_ids, check_int, check_positive_int, largest)
from ..data.corpus import batch_windows, one_hot

__all__ = ["LMParams", "init_lm", "lm_loss_and_grads", "train_lm"]


@dataclass
class LMParams(Params):
    """``lstm`` (PyTorch layout, nx = V) and the softmax head ``W_out (V, H)``, ``b_out (V,)``.
    Gradients come back in the same class."""

    lstm: lstm.LSTMParams
    W_out: np.ndarray
    b_out: np.ndarray

    def __post_init__(self):
        if not isinstance(self.lstm, lstm.LSTMParams):
            raise TypeError(f"lstm: expected lstm.LSTMParams, got {type(self.lstm).__name__}")
        V, H = self.lstm.nx, self.lstm.nh  # one-hot inputs: nx = V
        self.W_out = check_array(self.W_out, "W_out", shape=(V, H), finite=False)
        self.b_out = check_array(self.b_out, "b_out", shape=(V,), finite=False)

    @property
    def nx(self) -> int:
        return self.lstm.nx

    @property
    def nh(self) -> int:
        return self.lstm.nh


def init_lm(V: int, nh: int, *, seed: int = 0, dtype=np.float32) -> LMParams:
    """A character LM for a vocabulary of ``V`` symbols and ``nh`` hidden units."""
    V = check_positive_int(V, "V")
    nh = check_positive_int(nh, "nh")
    seed, dtype = check_int(seed, "seed", low=0), check_dtype(dtype, "dtype")
    check_alloc((4 * nh, V + nh + 2), dtype, largest(nh=nh, V=V), what="the LSTM weights")
    p = lstm.init_params(V, nh, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed + 1000)
    k = 1.0 / np.sqrt(nh)
    return LMParams(p, rng.uniform(-k, k, (V, nh)).astype(dtype), np.zeros(V, dtype))


def lm_loss_and_grads(params: LMParams, X_ids, Y_ids, method: str = "fused_pre"):
    """Mean next-character cross-entropy (nats) of ``X_ids (T, B)`` predicting ``Y_ids (T, B)``
    and the gradients as an :class:`LMParams` of arrays."""
    if not isinstance(params, LMParams):
        raise TypeError(f"params: expected LMParams (see init_lm), got {type(params).__name__}")
    lstm.check_params(params.lstm)
    check_fields(params, "params", {"W_out": (params.lstm.nx, params.lstm.nh), "b_out": (params.lstm.nx,)})
    for name, a in zip(params.lstm.names(), params.lstm.arrays()):
        check_finite(a, f"params.lstm.{name}")
    X_ids = check_array(X_ids, "X_ids", ndim=2, dtype="int")
    Y_ids = check_array(Y_ids, "Y_ids", shape=X_ids.shape, dtype="int")
    check_choice(method, "method", lstm.METHODS)
    V = params.W_out.shape[0]
    for name, ids in (("X_ids", X_ids), ("Y_ids", Y_ids)):
        if ids.size and (ids.min() < 0 or ids.max() >= V):
            raise ValueError(f"{name}: expected symbol ids in [0, V={V}), got values in [{ids.min()}, {ids.max()}]")
    T, B = X_ids.shape
    X = one_hot(X_ids, V, dtype=params.W_out.dtype)
    Hs, _, cache = lstm.lstm_forward(params.lstm, X, method=method, return_cache=True)
    H2 = Hs.reshape(T * B, -1)
    logits = H2 @ params.W_out.T + params.b_out                 # (T*B, V)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    y = Y_ids.reshape(-1)
    loss = float(-np.mean(np.log(p[np.arange(y.size), y] + 1e-30)))
    dlogits = p
    dlogits[np.arange(y.size), y] -= 1.0
    dlogits /= y.size
    dW_out = dlogits.T @ H2
    db_out = dlogits.sum(axis=0)
    dH = (dlogits @ params.W_out).reshape(Hs.shape)
    g, _, _, _ = lstm.lstm_backward(params.lstm, cache, dH)
    return loss, LMParams(g, dW_out, db_out)


def train_lm(ids, V: int, *, nh: int = 128, T: int = 32, batch: int = 32, steps: int = 40,
             method: str = "fused_pre", lr: float = 1e-2, clip: float = 5.0, seed: int = 0) -> TrainResult:
    """Adam on random windows of ``ids`` (the same windows for every method at a given seed).

    Returns a :class:`~course_lib.core.results.TrainResult`: ``params`` (:class:`LMParams`), ``history``
    ``{"loss": [mean cross-entropy per step]}``, ``seconds`` of the whole loop (forward, backward and
    update) and ``info`` ``{"method", "tokens_per_s", "nh", "T", "B", "steps"}``; ``tokens_per_s`` counts
    ``steps * T * B`` characters over ``seconds``. (For the fastest method on this machine ask
    :func:`course_lib.experiments.autotune.best_method` and pass its answer.)"""
    ids = check_array(ids, "ids", ndim=1, dtype="int")
    V = check_positive_int(V, "V")
    nh, T, batch = check_positive_int(nh, "nh"), check_positive_int(T, "T"), check_positive_int(batch, "batch")
    steps = check_count(steps, "steps")
    lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
    method = check_choice(method, "method", lstm.METHODS)
    if clip is not None:
        clip = check_float(clip, "clip", low=0.0, low_inclusive=False)
    ids = check_ids(ids, "ids", V)
    if ids.size < T + 1:
        raise ValueError(f"ids: expected at least T + 1 = {T + 1} tokens (one window and its target), got {ids.size}")
    check_alloc((T, batch, V), np.float32, largest(T=T, batch=batch, V=V), what="one batch of one-hot inputs")
    params = init_lm(V, nh, seed=seed)
    rng = np.random.default_rng(seed)
    batches = [batch_windows(ids, T, batch, rng) for _ in range(steps)]
    opt = Adam(params.arrays(), lr, clip=clip)
    losses = []
    t0 = time.perf_counter()
    for x_ids, y_ids in batches:
        loss, grads = lm_loss_and_grads(params, x_ids, y_ids, method)
        losses.append(loss)
        opt.step(grads.arrays())
    seconds = time.perf_counter() - t0
    return TrainResult(params, {"loss": losses}, seconds,
                       {"method": method, "tokens_per_s": steps * T * batch / seconds, "nh": nh, "T": T, "B": batch,
                        "steps": steps})
