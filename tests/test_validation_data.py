"""Issue 18, data layer (rotation, corpus): huge sizes are refused before allocating or looping, naming
the argument and the memory; bad input is a ValueError/TypeError naming the argument."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.data import corpus, rotation
from helpers import raises_naming

pytestmark = pytest.mark.timeout(30)
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(5)
def test_huge_sizes_are_refused_before_allocating():
    msg = raises_naming(ValueError, "T", rotation.rotation_sequences, None, 10**10)
    assert "would need" in msg and "TiB" in msg
    raises_naming(ValueError, "n", rotation.shape_images, 10**10)
    raises_naming(ValueError, "vocab_size", corpus.one_hot, np.zeros((1000, 1000), np.int64), 10**9)
    raises_naming(ValueError, "batch", corpus.batch_windows, np.arange(10), 3, 10**12, np.random.default_rng(0))


@FAST
@given(st.one_of(st.integers(max_value=0), st.booleans(), st.floats(), st.text(max_size=2), st.none()))
def test_rotation_sizes(bad):
    raises_naming((TypeError, ValueError), "T", rotation.rotation_sequences, None, bad)
    raises_naming((TypeError, ValueError), "n", rotation.shape_images, bad)


@FAST
@given(st.integers(1, 6), st.floats(-720, 720))
def test_rotation_sequences_are_finite_and_shifted(T, angle):
    X, Y = rotation.rotation_sequences(rotation.shape_images(2, 8), T, angle)
    assert X.shape == (T, 2, 64) and np.all(np.isfinite(X))
    np.testing.assert_array_equal(X[1:], Y[:-1])


def test_rotation_bad_inputs(tmp_path):
    raises_naming(ValueError, "images", rotation.rotate, np.full((4, 4), np.nan), 10.0)
    raises_naming(ValueError, "angle_deg", rotation.rotate, np.zeros((4, 4)), float("inf"))
    raises_naming(TypeError, "dtype", rotation.shape_images, 2, 8, dtype="int8")
    raises_naming(TypeError, "dtype", rotation.shape_images, 2, 8, dtype="not-a-dtype")
    raises_naming(TypeError, "path", rotation.load_cifar10, 3)
    (tmp_path / "test_batch").write_bytes(b"not a pickle")
    raises_naming(ValueError, "test_batch", rotation.load_cifar10, tmp_path)
    raises_naming(ValueError, "batches", rotation.load_cifar10, tmp_path, batches=["../x"])


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


@FAST
@given(st.lists(st.integers(0, 9), min_size=1, max_size=20))
def test_one_hot_round_trip(ids):
    oh = corpus.one_hot(np.array(ids), 10)
    np.testing.assert_array_equal(oh.argmax(-1), ids)
    assert oh.sum() == len(ids)
