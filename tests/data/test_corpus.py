import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.data import corpus
from helpers import raises_naming


def test_text_ships_with_python_and_is_deterministic():
    text = corpus.load_text()
    assert len(text) > 100_000
    assert text == corpus.load_text()
    assert corpus.load_text(1000) == text[:1000]
    with pytest.raises(ValueError, match="max_chars: expected an integer >= 1, got 0"):
        corpus.load_text(0)


def test_vocab_round_trip_and_errors():
    text = corpus.load_text(5000)
    v = corpus.Vocab.from_text(text)
    ids = v.encode(text)
    assert ids.dtype == np.int64 and v.decode(ids) == text
    assert len(v) == v.size == len(set(text))
    with pytest.raises(ValueError, match="character '\\\\x00' is not in the vocabulary"):
        v.encode("\x00")
    with pytest.raises(ValueError, match=r"ids: expected token ids in \[0, "):
        v.decode(np.array([v.size]))
    with pytest.raises(ValueError, match="text: expected a non-empty string"):
        corpus.Vocab.from_text("")


def test_split_and_windows():
    ids = np.arange(100)
    train, val = corpus.split(ids, 0.1)
    assert train.size == 90 and val.size == 10 and val[0] == 90
    X, Y = corpus.batch_windows(ids, T=5, batch=3, rng=np.random.default_rng(0))
    assert X.shape == Y.shape == (5, 3)
    np.testing.assert_array_equal(Y, X + 1)
    np.testing.assert_array_equal(np.diff(X, axis=0), 1)
    with pytest.raises(ValueError, match="T: expected at most 99"):
        corpus.batch_windows(ids, T=100, batch=1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="val_fraction: expected a number <= 0.9"):
        corpus.split(ids, 0.95)
    with pytest.raises(TypeError, match="ids: expected an integer array"):
        corpus.split(np.zeros(5), 0.1)


def test_one_hot():
    oh = corpus.one_hot(np.array([[0, 2], [1, 1]]), 3)
    assert oh.shape == (2, 2, 3) and oh.dtype == np.float32
    np.testing.assert_array_equal(oh.argmax(-1), [[0, 2], [1, 1]])
    assert oh.sum() == 4
    with pytest.raises(ValueError, match=r"ids: expected token ids in \[0, 3\), got min 0, max 3"):
        corpus.one_hot(np.array([0, 3]), 3)


# --------------------------------------------------------------------------- bad input
# a ValueError/TypeError naming the argument, or the right answer; never NaN, a hang or a crash
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(30)
def test_corpus_bad_inputs():
    v = corpus.Vocab.from_text("hello")
    raises_naming(TypeError, "text", corpus.Vocab.from_text, 3)
    raises_naming(TypeError, "text", v.encode, None)
    raises_naming(ValueError, "text", v.encode, "z")
    raises_naming(TypeError, "chars", corpus.Vocab, "")
    raises_naming(ValueError, "chars", corpus.Vocab, "aa")
    raises_naming(TypeError, "rng", corpus.batch_windows, np.arange(10), 3, 2, 0)
    raises_naming(TypeError, "dtype", corpus.one_hot, np.arange(3), 4, dtype=np.int64)
    raises_naming(ValueError, "ids", corpus.one_hot, np.array([5]), 4)


@pytest.mark.timeout(30)
@FAST
@given(st.lists(st.integers(0, 9), min_size=1, max_size=20))
def test_one_hot_round_trip(ids):
    oh = corpus.one_hot(np.array(ids), 10)
    np.testing.assert_array_equal(oh.argmax(-1), ids)
    assert oh.sum() == len(ids)
