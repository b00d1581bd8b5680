"""A character-level language model: the real task behind chapter 07 (layer 2: methods).

The network is the stacked softmax RNN of :mod:`course_lib.parallel.inference` (column-vector parameters
``U, W, b`` per layer, ``V, c`` at the output), trained on Python's own help text
(:mod:`course_lib.data.corpus`) with backpropagation through time -- the O(T) reverse sweep of
chapter 02, adapted to a softmax output and the cross-entropy loss::

    loss = -1/(T B) sum_{t,b} log y[t, b, target]       d loss / d o = (y - onehot(target)) / (T B)

Then inference: perplexity ``exp(loss)`` on held-out text (with any strategy of
:func:`course_lib.parallel.inference.predict`) and sampled text.

``loss_and_grads(params, X_ids, Y_ids)`` -> (loss, grads as a Params)
``train(params, ids, steps=, T=, B=, lr=, seed=)`` -> :class:`TrainResult` (tqdm progress bar)
``perplexity(params, ids, T=, strategy=)``, ``unigram_perplexity(train_ids, ids, vocab_size)``
``sample(params, vocab, prime, n, seed=, temperature=)`` -> str
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data.corpus import Vocab, batch_windows, one_hot
from ..core.optim import Adam
from ..parallel.inference import Layer, Params, check_params, encode, predict, softmax
from ..core.validate import check_array, check_float, check_int, check_positive_int

__all__ = ["forward", "loss_and_grads", "TrainResult", "train", "perplexity", "unigram_perplexity", "sample",
           "eval_windows"]


def _check_ids(params: Params, ids, name: str) -> np.ndarray:
    ids = check_array(ids, name, ndim=2, dtype="int", finite=False)
    if ids.size == 0:
        raise ValueError(f"{name}: expected a non-empty (T, B) array of token ids, got shape {ids.shape}")
    if ids.min() < 0 or ids.max() >= params.vocab:
        raise ValueError(f"{name}: expected token ids in [0, {params.vocab}), got min {ids.min()}, max {ids.max()}")
    return ids


def forward(params: Params, X: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Batched forward pass keeping every layer's states: ``X (T, B, nx)`` ->
    (``hs``: list of ``(T, B, H)`` per layer, probabilities ``(T, B, vocab)``)."""
    T, B, _ = X.shape
    hs, below = [], X
    for L in params.layers:
        H = L.W.shape[0]
        Z = (below.reshape(T * B, -1) @ L.U.T + L.b).reshape(T, B, H)
        Hs = np.empty_like(Z)
        h = np.zeros((B, H), Z.dtype)
        for t in range(T):
            h = np.tanh(Z[t] + h @ L.W.T)
            Hs[t] = h
        hs.append(Hs)
        below = Hs
    return hs, softmax(below @ params.V.T + params.c)


def loss_and_grads(params: Params, X_ids, Y_ids) -> tuple[float, Params]:
    """Mean cross-entropy of predicting ``Y_ids (T, B)`` from ``X_ids (T, B)`` and its gradient.

    BPTT with one reverse sweep per layer, top layer first: the gradient reaching layer ``l``'s
    state at step ``t`` is what comes from above (the output, or layer ``l+1`` through ``U``)
    plus what comes from step ``t+1`` through ``W``. Returns ``(loss, grads)`` where ``grads`` is
    a :class:`~course_lib.parallel.inference.Params` with the same shapes as ``params``.
    """
    params = check_params(params)
    X_ids = _check_ids(params, X_ids, "X_ids")
    Y_ids = _check_ids(params, Y_ids, "Y_ids")
    if X_ids.shape != Y_ids.shape:
        raise ValueError(f"Y_ids: expected the shape of X_ids {X_ids.shape}, got {Y_ids.shape}")
    if params.nx != params.vocab:
        raise ValueError(f"params: a character model reads one-hot characters, so nx must equal vocab = "
                         f"{params.vocab}, got nx = {params.nx}")
    dt = params.dtype
    T, B = X_ids.shape
    X = one_hot(X_ids, params.vocab, dtype=dt)
    hs, probs = forward(params, X)
    picked = np.take_along_axis(probs, Y_ids[..., None], axis=-1)[..., 0]
    loss = float(-np.mean(np.log(np.maximum(picked, np.finfo(dt).tiny))))

    dO = probs.copy()
    np.put_along_axis(dO, Y_ids[..., None], np.take_along_axis(dO, Y_ids[..., None], axis=-1) - 1, axis=-1)
    dO /= T * B
    top = hs[-1]
    dV = dO.reshape(T * B, -1).T @ top.reshape(T * B, -1)
    dc = dO.sum(axis=(0, 1))
    d_above = dO @ params.V                       # (T, B, H): gradient arriving from the output
    grads = [None] * params.n_layers
    for l in range(params.n_layers - 1, -1, -1):
        L, Hs = params.layers[l], hs[l]
        inputs = X if l == 0 else hs[l - 1]
        dA = np.empty_like(Hs)
        dh_next = np.zeros_like(Hs[0])
        for t in range(T - 1, -1, -1):           # the O(T) reverse sweep of chapter 02
            da = (d_above[t] + dh_next) * (1.0 - Hs[t] ** 2)
            dA[t] = da
            dh_next = da @ L.W
        H_prev = np.concatenate([np.zeros_like(Hs[:1]), Hs[:-1]])
        flat = dA.reshape(T * B, -1)
        grads[l] = Layer(flat.T @ inputs.reshape(T * B, -1), flat.T @ H_prev.reshape(T * B, -1), dA.sum(axis=(0, 1)))
        if l > 0:
            d_above = dA @ L.U
    return loss, Params(grads, dV, dc)


@dataclass
class TrainResult:
    """Trained parameters and the loss of every step."""

    params: Params
    losses: list = field(default_factory=list)

    @property
    def final_loss(self) -> float:
        """Mean loss of the last 10% of steps (a smoothed 'where training ended')."""
        k = max(1, len(self.losses) // 10)
        return float(np.mean(self.losses[-k:]))


def _flat(p: Params) -> list[np.ndarray]:
    out = []
    for L in p.layers:
        out += [L.U, L.W, L.b]
    return out + [p.V, p.c]


def train(params: Params, ids, *, steps: int = 300, T: int = 32, B: int = 32, lr: float = 3e-3,
          seed: int = 0, clip: float = 5.0, progress: bool = True) -> TrainResult:
    """Adam on random windows of ``ids`` (1-D token ids); gradients clipped to global norm ``clip``.

    ``params`` is not modified: a trained copy is returned in the :class:`TrainResult`.
    """
    params = check_params(params)
    ids = check_array(ids, "ids", ndim=1, dtype="int", finite=False)
    steps = check_positive_int(steps, "steps")
    T = check_positive_int(T, "T")
    B = check_positive_int(B, "B")
    lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
    clip = check_float(clip, "clip", low=0.0, low_inclusive=False)
    seed = check_int(seed, "seed", low=0)
    if ids.size < T + 1:
        raise ValueError(f"ids: expected at least T + 1 = {T + 1} tokens, got {ids.size}")
    if ids.min() < 0 or ids.max() >= params.vocab:
        raise ValueError(f"ids: expected token ids in [0, {params.vocab}), got min {ids.min()}, max {ids.max()}")
    p = params.astype(params.dtype)               # a copy
    rng = np.random.default_rng(seed)
    losses: list = []
    from tqdm.auto import tqdm  # noqa: PLC0415

    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    bar = tqdm(range(1, steps + 1), desc="training", disable=not progress, mininterval=0.5)
    with threadpool_limits(limits=1, user_api="blas"):  # small GEMMs: one BLAS thread is faster
        _adam_loop(p, ids, bar, T, B, lr, clip, rng, losses)
    return TrainResult(p, losses)


def _adam_loop(p, ids, bar, T, B, lr, clip, rng, losses):
    opt = Adam(_flat(p), lr, clip=clip)
    for k in bar:
        X_ids, Y_ids = batch_windows(ids, T, B, rng)
        loss, g = loss_and_grads(p, X_ids, Y_ids)
        losses.append(loss)
        opt.step(_flat(g))
        if k % 25 == 0:
            bar.set_postfix(loss=f"{loss:.3f}")


def eval_windows(ids, T: int, max_windows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Cut 1-D ``ids`` into consecutive, non-overlapping windows: inputs and next-character targets
    ``(T, n_windows)`` each (time-major: every window is one sequence of the batch)."""
    ids = check_array(ids, "ids", ndim=1, dtype="int", finite=False)
    T = check_positive_int(T, "T")
    n = (ids.size - 1) // T
    if max_windows is not None:
        n = min(n, check_positive_int(max_windows, "max_windows"))
    if n < 1:
        raise ValueError(f"ids: expected at least T + 1 = {T + 1} tokens, got {ids.size}")
    X = ids[: n * T].reshape(n, T).T
    Y = ids[1: n * T + 1].reshape(n, T).T
    return np.ascontiguousarray(X), np.ascontiguousarray(Y)


def perplexity(params: Params, ids, *, T: int = 64, max_windows: int | None = None,
               strategy: str = "batched", **opts) -> float:
    """``exp(mean cross-entropy)`` of next-character prediction on ``ids`` (1-D), evaluated on
    consecutive windows of ``T`` characters (each starts from a zero state) as one batch, with
    :func:`course_lib.parallel.inference.predict` and the given ``strategy``."""
    params = check_params(params)
    X_ids, Y_ids = eval_windows(ids, T, max_windows)
    X = encode(X_ids, params.vocab, dtype=params.dtype)
    probs = predict(params, X, strategy=strategy, **opts)
    picked = np.take_along_axis(probs, Y_ids[..., None], axis=-1)[..., 0].astype(np.float64)
    return float(np.exp(-np.mean(np.log(np.maximum(picked, 1e-30)))))


def unigram_perplexity(train_ids, ids, vocab_size: int) -> float:
    """Baseline: perplexity on ``ids`` of the character frequencies of ``train_ids`` (add-one smoothed)."""
    train_ids = check_array(train_ids, "train_ids", ndim=1, dtype="int", finite=False)
    ids = check_array(ids, "ids", ndim=1, dtype="int", finite=False)
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    counts = np.bincount(train_ids, minlength=vocab_size).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    return float(np.exp(-np.mean(logp[ids])))


def sample(params: Params, vocab: Vocab, prime: str = "\n", n: int = 200, *, seed: int = 0,
           temperature: float = 1.0) -> str:
    """Feed ``prime`` through the network, then draw ``n`` characters one at a time from
    ``softmax(o / temperature)`` with ``np.random.default_rng(seed)``. Returns only the new text."""
    params = check_params(params)
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab: expected a course_lib.data.corpus.Vocab, got {type(vocab).__name__}")
    if vocab.size != params.vocab:
        raise ValueError(f"vocab: expected {params.vocab} characters (params.vocab), got {vocab.size}")
    if not isinstance(prime, str) or not prime:
        raise ValueError(f"prime: expected a non-empty string, got {prime!r}")
    n = check_int(n, "n", low=0)
    temperature = check_float(temperature, "temperature", low=0.0, low_inclusive=False)
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    dt = params.dtype
    hs = [np.zeros(L.W.shape[0], dt) for L in params.layers]

    def step(token: int) -> np.ndarray:
        below = np.zeros(params.vocab, dt)
        below[token] = 1.0
        for l, L in enumerate(params.layers):
            hs[l] = np.tanh(L.b + L.W @ hs[l] + L.U @ below)
            below = hs[l]
        return params.c + params.V @ below

    for token in vocab.encode(prime):
        o = step(int(token))
    out = []
    for _ in range(n):
        p = softmax((o / temperature).astype(np.float64))
        token = int(rng.choice(params.vocab, p=p))
        out.append(token)
        o = step(token)
    return vocab.decode(np.asarray(out, dtype=np.int64))
