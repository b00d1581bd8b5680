"""A character-level language model: the real task behind chapter 07 (models layer).

The network is the stacked softmax RNN of :mod:`course_lib.models.softmax_rnn` (column-vector parameters
``U, W, b`` per layer, ``V, c`` at the output), trained on Python's own help text
(:mod:`course_lib.data.corpus`) with backpropagation through time -- the O(T) reverse sweep of
chapter 02, adapted to a softmax output and the cross-entropy loss::

    loss = -1/(T B) sum_{t,b} log y[t, b, target]       d loss / d o = (y - onehot(target)) / (T B)

Then inference: perplexity ``exp(loss)`` on held-out text and sampled text.

``loss_and_grads(params, X_ids, Y_ids)`` -> (loss, grads as a SoftmaxRNNParams)
``train(params, ids, steps=, T=, batch=, lr=, seed=)`` -> :class:`course_lib.core.results.TrainResult`
    (``history["loss"]``: the loss of every step; tqdm progress bar)
``perplexity(params, ids, T=, max_windows=, predict=)``, ``perplexity_of(probs, targets)``,
``unigram_perplexity(train_ids, ids, vocab_size)``, ``eval_windows(ids, T)``
``sample(params, vocab, prime, n, seed=, temperature=)`` -> str

``perplexity`` runs the batched forward pass unless given another ``predict(params, X)``; the
parallel methods of :mod:`course_lib.parallel.inference` are plugged in by
:func:`course_lib.experiments.inference.perplexity_by_method`.
"""
from __future__ import annotations

import time

import numpy as np

from ..core.optim import Adam
from ..core.results import TrainResult
from ..core.validate import check_alloc, check_array, check_count, check_float, check_ids, check_int, check_positive_int
from ..data.corpus import Vocab, batch_windows, one_hot
from .softmax_rnn import (Layer, SoftmaxRNNParams, softmax_unchecked, step_unchecked, check_params, encode, forward, hidden_states,
                          output_probs)

MAX_SAMPLE = 1_000_000   # characters one call to sample() may generate (one forward step each)

__all__ = ["loss_and_grads", "train", "perplexity", "perplexity_of", "unigram_perplexity", "sample",
           "eval_windows"]


def _check_ids(params: SoftmaxRNNParams, ids, name: str) -> np.ndarray:
    ids = check_array(ids, name, ndim=2, dtype="int", finite=False)
    if ids.size == 0:
        raise ValueError(f"{name}: expected a non-empty (T, B) array of token ids, got shape {ids.shape}")
    if ids.min() < 0 or ids.max() >= params.vocab:
        raise ValueError(f"{name}: expected token ids in [0, {params.vocab}), got min {ids.min()}, max {ids.max()}")
    return ids


def loss_and_grads(params: SoftmaxRNNParams, X_ids, Y_ids) -> tuple[float, SoftmaxRNNParams]:
    """Mean cross-entropy of predicting ``Y_ids (T, B)`` from ``X_ids (T, B)`` and its gradient.

    BPTT with one reverse sweep per layer, top layer first: the gradient reaching layer ``l``'s
    state at step ``t`` is what comes from above (the output, or layer ``l+1`` through ``U``)
    plus what comes from step ``t+1`` through ``W``. Returns ``(loss, grads)`` where ``grads`` is
    a :class:`~course_lib.models.softmax_rnn.SoftmaxRNNParams` with the same shapes as ``params``.
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
    hs = hidden_states(params, X)
    probs = output_probs(params, hs[-1])
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
    return loss, SoftmaxRNNParams(grads, dV, dc)


def train(params: SoftmaxRNNParams, ids, *, steps: int = 300, T: int = 32, batch: int = 32, lr: float = 3e-3,
          seed: int = 0, clip: float = 5.0, progress: bool = True) -> TrainResult:
    """Adam on random windows of ``ids`` (1-D token ids); gradients clipped to global norm ``clip``.

    ``params`` is not modified: a trained copy is returned in the :class:`~course_lib.core.results.TrainResult`,
    with ``history["loss"]`` (the mean cross-entropy of every step, nats per character), ``seconds``
    and ``info`` (``steps``, ``T``, ``batch``, ``lr``). ``result.final("loss")`` is the mean of the last 10%.
    """
    params = check_params(params)
    ids = check_array(ids, "ids", ndim=1, dtype="int", finite=False)
    steps = check_count(steps, "steps")
    T = check_positive_int(T, "T")
    batch = check_positive_int(batch, "batch")
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
    from ..core.progress import progress_bar

    from threadpoolctl import threadpool_limits

    bar = progress_bar(range(1, steps + 1), desc="training", unit="step", disable=not progress, mininterval=0.5)
    t0 = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):  # small GEMMs: one BLAS thread is faster
        _adam_loop(p, ids, bar, T, batch, lr, clip, rng, losses)
    return TrainResult(p, {"loss": losses}, time.perf_counter() - t0, {"steps": steps, "T": T, "B": batch, "lr": lr})


def _adam_loop(p, ids, bar, T, batch, lr, clip, rng, losses):
    opt = Adam(p.arrays(), lr, clip=clip)
    for k in bar:
        X_ids, Y_ids = batch_windows(ids, T, batch, rng)
        loss, g = loss_and_grads(p, X_ids, Y_ids)
        losses.append(loss)
        opt.step(g.arrays())
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


def perplexity_of(probs, targets) -> float:
    """``exp(mean cross-entropy)`` of probabilities ``probs (T, B, vocab)`` for the token ids
    ``targets (T, B)`` that came next."""
    probs = check_array(probs, "probs", ndim=3)
    if min(probs.shape) < 1:
        raise ValueError(f"probs: expected a non-empty (T, B, vocab) array, got shape {probs.shape}")
    targets = check_array(targets, "targets", shape=probs.shape[:2], dtype="int", finite=False)
    if targets.min() < 0 or targets.max() >= probs.shape[2]:
        raise ValueError(f"targets: expected token ids in [0, {probs.shape[2]}), got min {targets.min()}, "
                         f"max {targets.max()}")
    picked = np.take_along_axis(probs, targets[..., None], axis=-1)[..., 0].astype(np.float64)
    return float(np.exp(-np.mean(np.log(np.maximum(picked, 1e-30)))))


def perplexity(params: SoftmaxRNNParams, ids, *, T: int = 64, max_windows: int | None = None,
               predict=None) -> float:
    """``exp(mean cross-entropy)`` of next-character prediction on ``ids`` (1-D), evaluated on
    consecutive windows of ``T`` characters (each starts from a zero state) as one batch.

    ``predict(params, X) -> probs`` computes the probabilities; default: the batched forward pass
    :func:`course_lib.models.softmax_rnn.forward`."""
    params = check_params(params)
    if predict is None:
        predict = forward
    elif not callable(predict):
        raise TypeError(f"predict: expected a function (params, X) -> probabilities, got {type(predict).__name__}")
    ids = check_ids(ids, "ids", params.vocab, ndim=1)
    X_ids, Y_ids = eval_windows(ids, T, max_windows)
    X = encode(X_ids, params.vocab, dtype=params.dtype)
    return perplexity_of(predict(params, X), Y_ids)


def unigram_perplexity(train_ids, ids, vocab_size: int) -> float:
    """Baseline: perplexity on ``ids`` of the character frequencies of ``train_ids`` (add-one smoothed)."""
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    check_alloc((vocab_size,), np.float64, "vocab_size", what="the character counts")
    train_ids = check_ids(train_ids, "train_ids", vocab_size, ndim=1)
    ids = check_ids(ids, "ids", vocab_size, ndim=1)
    if ids.size == 0:
        raise ValueError("ids: expected at least one token to score, got an empty array")
    counts = np.bincount(train_ids, minlength=vocab_size).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    return float(np.exp(-np.mean(logp[ids])))


def sample(params: SoftmaxRNNParams, vocab: Vocab, prime: str = "\n", n: int = 200, *, seed: int = 0,
           temperature: float = 1.0) -> str:
    """Feed ``prime`` through the network, then draw ``n`` characters one at a time from
    ``softmax(o / temperature)`` with ``np.random.default_rng(seed)``. Returns only the new text."""
    params = check_params(params)
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab: expected a course_lib.data.corpus.Vocab, got {type(vocab).__name__}")
    if vocab.size != params.vocab:
        raise ValueError(f"vocab: expected {params.vocab} characters (params.vocab), got {vocab.size}")
    if not isinstance(prime, str):
        raise TypeError(f"prime: expected a non-empty string, got {type(prime).__name__} {prime!r}")
    if not prime:
        raise ValueError(f"prime: expected a non-empty string, got {prime!r}")
    if len(prime) > MAX_SAMPLE:
        raise ValueError(f"prime: expected at most {MAX_SAMPLE} characters (each is one forward step), got {len(prime)}")
    # one forward step per character: 10**10 of them would run for days, so bound it
    n = check_int(n, "n", low=0, high=MAX_SAMPLE)
    temperature = check_float(temperature, "temperature", low=0.0, low_inclusive=False)
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    dt = params.dtype
    hs = [np.zeros(L.W.shape[0], dt) for L in params.layers]
    eye = np.eye(params.vocab, dtype=dt)          # row k: the one-hot character k

    for token in vocab.encode(prime):
        o = step_unchecked(params, eye[int(token)], hs)
    out = []
    for _ in range(n):
        with np.errstate(over="ignore"):
            z = o.astype(np.float64) / temperature
        if not np.all(np.isfinite(z)):
            raise ValueError(f"temperature: {temperature:g} is too small: the logits divided by it overflow")
        p = softmax_unchecked(z)
        token = int(rng.choice(params.vocab, p=p))
        out.append(token)
        o = step_unchecked(params, eye[token], hs)
    return vocab.decode(np.asarray(out, dtype=np.int64))
