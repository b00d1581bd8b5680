"""Tests for course_lib.models.charlm: BPTT gradients vs finite differences, training lowers the loss and
returns a TrainResult, perplexity (batched, serial or any predict function), seeded sampling, bad inputs.
Perplexity through the parallel methods is tested in tests/experiments/test_inference.py."""
import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.core.results import TrainResult
from course_lib.data import corpus
from course_lib.models import charlm
from course_lib.models import softmax_rnn as inf
from helpers import raises_naming


def _model(vocab=6, nh=5, layers=2, seed=0):
    p = inf.init_params(vocab, nh, vocab, layers=layers, seed=seed, dtype=np.float64)
    rng = np.random.default_rng(seed)
    for L in p.layers:
        L.b[:] = rng.standard_normal(nh) * 0.2
    p.c[:] = rng.standard_normal(vocab) * 0.2
    return p


@pytest.mark.parametrize("layers", [1, 2])
def test_gradients_match_finite_differences(layers):
    p = _model(layers=layers)
    rng = np.random.default_rng(1)
    X_ids = rng.integers(0, 6, size=(5, 3))
    Y_ids = rng.integers(0, 6, size=(5, 3))
    _, g = charlm.loss_and_grads(p, X_ids, Y_ids)
    eps = 1e-6
    named = [(f"layers[{l}].{n}", getattr(p.layers[l], n), getattr(g.layers[l], n))
             for l in range(layers) for n in ("U", "W", "b")] + [("V", p.V, g.V), ("c", p.c, g.c)]
    for name, arr, grad in named:
        for idx in list(np.ndindex(arr.shape))[:: max(1, arr.size // 7)]:
            old = arr[idx]
            arr[idx] = old + eps
            lp, _ = charlm.loss_and_grads(p, X_ids, Y_ids)
            arr[idx] = old - eps
            lm, _ = charlm.loss_and_grads(p, X_ids, Y_ids)
            arr[idx] = old
            num = (lp - lm) / (2 * eps)
            assert grad[idx] == pytest.approx(num, rel=1e-5, abs=1e-8), (name, idx)


def test_initial_loss_is_about_log_vocab():
    p = inf.init_params(20, 8, 20, seed=0, dtype=np.float64)
    rng = np.random.default_rng(0)
    loss, _ = charlm.loss_and_grads(p, rng.integers(0, 20, (10, 4)), rng.integers(0, 20, (10, 4)))
    assert abs(loss - np.log(20)) < 0.3


def test_uniform_model_has_perplexity_equal_to_vocab():
    p = inf.init_params(9, 4, 9, layers=2, seed=0)
    p.V[:] = 0.0  # every output is softmax(0) = uniform
    ids = np.random.default_rng(0).integers(0, 9, 200)
    assert charlm.perplexity(p, ids, T=16) == pytest.approx(9.0, rel=1e-5)
    serial = lambda params, X: inf.forward(params, X, method="sequential")  # noqa: E731
    assert charlm.perplexity(p, ids, T=16, predict=serial) == pytest.approx(9.0, rel=1e-5)


def test_perplexity_of_probabilities():
    probs = np.full((2, 3, 4), 0.25)
    assert charlm.perplexity_of(probs, np.zeros((2, 3), np.int64)) == pytest.approx(4.0)
    probs[..., 1] = 1.0
    assert charlm.perplexity_of(probs, np.ones((2, 3), np.int64)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="targets: expected shape"):
        charlm.perplexity_of(probs, np.ones((3, 2), np.int64))
    with pytest.raises(ValueError, match=r"targets: expected token ids in \[0, 4\)"):
        charlm.perplexity_of(probs, np.full((2, 3), 4))


def test_training_lowers_loss_and_perplexity_and_keeps_the_input():
    text = corpus.load_text(20_000)
    voc = corpus.Vocab.from_text(text)
    ids = voc.encode(text)
    tr, va = corpus.split(ids, 0.2)
    p0 = inf.init_params(voc.size, 32, voc.size, seed=0, dtype=np.float64)
    W_before = p0.layers[0].W.copy()
    res = charlm.train(p0, tr, steps=60, T=16, batch=16, lr=1e-2, seed=0, progress=False)
    assert isinstance(res, TrainResult) and isinstance(res.params, inf.SoftmaxRNNParams)
    assert np.array_equal(p0.layers[0].W, W_before)
    losses = res.history["loss"]
    assert len(losses) == 60 and res.seconds > 0 and res.info["steps"] == 60
    assert res.final("loss") < losses[0] - 0.5
    assert charlm.perplexity(res.params, va, T=32) < charlm.perplexity(p0, va, T=32)
    params, history = res  # unpacks like every TrainResult
    assert params is res.params and history is res.history


def test_training_is_reproducible():
    ids = np.random.default_rng(0).integers(0, 5, 300)
    p = inf.init_params(5, 6, 5, seed=0, dtype=np.float64)
    a = charlm.train(p, ids, steps=5, T=8, batch=4, seed=3, progress=False).history["loss"]
    b = charlm.train(p, ids, steps=5, T=8, batch=4, seed=3, progress=False).history["loss"]
    assert a == b


def test_sample_is_seeded_and_in_vocabulary():
    voc = corpus.Vocab("abcde")
    p = inf.init_params(5, 6, 5, seed=0, dtype=np.float64)
    s1 = charlm.sample(p, voc, "ab", 40, seed=1)
    assert s1 == charlm.sample(p, voc, "ab", 40, seed=1)
    assert len(s1) == 40 and set(s1) <= set("abcde")
    assert s1 != charlm.sample(p, voc, "ab", 40, seed=2)
    assert charlm.sample(p, voc, "a", 0) == ""


def test_unigram_perplexity():
    assert charlm.unigram_perplexity(np.array([0, 1]), np.array([0, 1, 0, 1]), 2) == pytest.approx(2.0)


def test_eval_windows():
    X, Y = charlm.eval_windows(np.arange(11), 3)
    assert X.shape == (3, 3)
    np.testing.assert_array_equal(X[:, 1], [3, 4, 5])
    np.testing.assert_array_equal(Y[:, 1], [4, 5, 6])
    with pytest.raises(ValueError, match="at least T"):
        charlm.eval_windows(np.arange(3), 5)


def test_bad_inputs():
    p = _model()
    ok = np.zeros((3, 2), dtype=np.int64)
    with pytest.raises(ValueError, match=r"X_ids: expected token ids in \[0, 6\)"):
        charlm.loss_and_grads(p, ok + 6, ok)
    with pytest.raises(ValueError, match="Y_ids: expected the shape of X_ids"):
        charlm.loss_and_grads(p, ok, ok[:2])
    with pytest.raises(ValueError, match="non-empty"):
        charlm.loss_and_grads(p, ok[:0], ok[:0])
    q = inf.init_params(4, 5, 6, dtype=np.float64)
    with pytest.raises(ValueError, match="nx must equal vocab"):
        charlm.loss_and_grads(q, ok, ok)
    with pytest.raises(ValueError, match="ids: expected at least T"):
        charlm.train(p, np.arange(5) % 6, T=8, progress=False)
    with pytest.raises(ValueError, match="ids: expected token ids"):
        charlm.train(p, np.arange(50), T=8, progress=False)
    with pytest.raises(ValueError, match="steps"):
        charlm.train(p, np.arange(50) % 6, steps=0, progress=False)
    with pytest.raises(ValueError, match="vocab: expected 6"):
        charlm.sample(p, corpus.Vocab("abc"), "a")
    with pytest.raises(ValueError, match="prime"):
        charlm.sample(p, corpus.Vocab("abcdef"), "")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        charlm.sample(p, corpus.Vocab("abcdef"), "z")
    with pytest.raises(ValueError, match="temperature"):
        charlm.sample(p, corpus.Vocab("abcdef"), "a", temperature=0.0)
    with pytest.raises(ValueError, match="ids"):
        charlm.perplexity(p, np.array([0, 1]), T=4)
    with pytest.raises(TypeError, match="predict"):
        charlm.perplexity(p, np.arange(50) % 6, T=4, predict="batched")


# --------------------------------------------------------------------------- bad input: sample
@pytest.mark.timeout(5)
def test_sample_with_huge_n_is_refused_at_once():
    vocab = corpus.Vocab("abcde")
    p = inf.init_params(5, 4, 5, seed=0)
    raises_naming(ValueError, "n", charlm.sample, p, vocab, "a", 10**10)
    raises_naming(TypeError, "n", charlm.sample, p, vocab, "a", "10")
    raises_naming(TypeError, "prime", charlm.sample, p, vocab, 3)
    raises_naming(ValueError, "temperature", charlm.sample, p, vocab, "a", 5, temperature=1e-310)
    raises_naming(ValueError, "text", charlm.sample, p, vocab, "z", 5)
    out = charlm.sample(p, vocab, "ab", 7, seed=np.int64(1))
    assert len(out) == 7 and set(out) <= set("abcde")


# ---- issue 29: ids outside the vocabulary, empty inputs and absurd counts -------------------------------------
def test_ids_out_of_vocabulary_and_empty_inputs_are_named():
    p = inf.init_params(5, 4, 5, dtype=np.float64)
    ids = np.arange(40) % 5
    for bad in (-1, 5, 10**6):
        b = ids.copy()
        b[7] = bad
        raises_naming(ValueError, "ids", charlm.perplexity, p, b, T=8)
        raises_naming(ValueError, "ids", charlm.train, p, b, steps=1, T=4, batch=2, progress=False)
        raises_naming(ValueError, "ids", charlm.unigram_perplexity, ids, b, 5)
        raises_naming(ValueError, "train_ids", charlm.unigram_perplexity, b, ids, 5)
    raises_naming(ValueError, "ids", charlm.unigram_perplexity, ids, ids[:0], 5)  # used to return NaN
    raises_naming(ValueError, "probs", charlm.perplexity_of, np.full((0, 2, 5), 0.2), np.zeros((0, 2), int))


def test_absurd_counts_fail_fast():
    from helpers import raises_fast
    p = inf.init_params(5, 4, 5, dtype=np.float64)
    raises_fast(ValueError, "steps", charlm.train, p, np.arange(40) % 5, steps=10**10, T=4, batch=2, progress=False)
    raises_fast(ValueError, "vocab_size", charlm.unigram_perplexity, np.arange(9) % 3, np.arange(9) % 3, 10**12)
