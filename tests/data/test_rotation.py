"""course_lib.data.rotation: images made in code, rotation, the rotation task, CIFAR-10 reader."""
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.data import corpus
from course_lib.data import rotation
from helpers import raises_naming


def test_shape_images():
    imgs = rotation.shape_images(7, 12, seed=0)
    assert imgs.shape == (7, 12, 12) and imgs.dtype == np.float32
    assert imgs.min() >= 0 and imgs.max() <= 1 and all(im.sum() > 0 for im in imgs)
    np.testing.assert_array_equal(imgs, rotation.shape_images(7, 12, seed=0))
    assert not np.array_equal(imgs, rotation.shape_images(7, 12, seed=1))
    with pytest.raises(ValueError, match="size"):
        rotation.shape_images(2, 3)


def test_sample_images_come_from_matplotlib():
    imgs = rotation.sample_images(3, 16, seed=0, dtype=np.float64)
    assert imgs.shape == (3, 16, 16) and imgs.dtype == np.float64
    assert 0 <= imgs.min() and imgs.max() <= 1 and imgs.std() > 0
    with pytest.raises(ValueError, match="n"):
        rotation.sample_images(0)


def test_rotate_is_anticlockwise_and_exact_for_quarter_turns():
    img = np.zeros((5, 5))
    img[0, 4] = 1.0                       # top right
    r = rotation.rotate(img, 90)
    assert r[0, 0] == pytest.approx(1.0)  # -> top left: anti-clockwise
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 1, (2, 6, 6))
    np.testing.assert_allclose(rotation.rotate(a, 90), np.rot90(a, 1, axes=(1, 2)), atol=1e-12)
    np.testing.assert_allclose(rotation.rotate(a, 0), a)
    with pytest.raises(ValueError, match="images"):
        rotation.rotate(np.zeros(5), 10)


def test_rotation_sequences():
    imgs = rotation.shape_images(3, 10)
    X, Y = rotation.rotation_sequences(imgs, T=4, angle_deg=10.0)
    assert X.shape == Y.shape == (4, 3, 100)
    np.testing.assert_array_equal(Y[:-1], X[1:])
    np.testing.assert_allclose(X[0], imgs.reshape(3, 100))
    np.testing.assert_allclose(X[2], rotation.rotate(imgs, 20.0).reshape(3, 100), atol=1e-6)
    X2, _ = rotation.rotation_sequences(imgs, T=2, n_features=90)
    assert X2.shape == (2, 3, 90)
    Xd, _ = rotation.rotation_sequences(T=3)
    assert Xd.shape == (3, 8, 256)
    with pytest.raises(ValueError, match="T"):
        rotation.rotation_sequences(imgs, T=0)
    with pytest.raises(ValueError, match="n_features"):
        rotation.rotation_sequences(imgs, T=2, n_features=101)
    with pytest.raises(ValueError, match="images"):
        rotation.rotation_sequences(imgs[0], T=2)


def _write_batch(path, name, n, seed):
    rng = np.random.default_rng(seed)
    d = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": list(range(n)),
         b"batch_label": name.encode(), b"filenames": [b"x.png"] * n}
    with open(path / name, "wb") as fh:
        pickle.dump(d, fh)
    return d[b"data"]


def test_load_cifar10_reads_python_batches(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    raw1 = _write_batch(folder, "data_batch_1", 3, 0)
    raw2 = _write_batch(folder, "data_batch_2", 2, 1)
    for where in (folder, tmp_path):  # the folder itself or its parent
        out = rotation.load_cifar10(where)
        assert out.shape == (5, 1000) and out.dtype == np.float32
    rgb = raw1.reshape(3, 3, 1024) / 255.0
    gray = 0.299 * rgb[:, 0] + 0.587 * rgb[:, 1] + 0.114 * rgb[:, 2]
    np.testing.assert_allclose(out[:3], gray[:, :1000], rtol=1e-6)
    assert rotation.load_cifar10(folder, n_features=1024, max_images=4).shape == (4, 1024)
    assert rotation.load_cifar10(folder, batches="data_batch_2").shape == (2, 1000)
    assert raw2.shape == (2, 3072)


def test_load_cifar10_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist.*never downloads"):
        rotation.load_cifar10(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no CIFAR-10 python batches"):
        rotation.load_cifar10(tmp_path)
    with pytest.raises(ValueError, match="n_features"):
        rotation.load_cifar10(tmp_path, n_features=2000)
    (tmp_path / "data_batch_1").write_bytes(pickle.dumps({b"data": np.zeros((2, 10), np.uint8)}))
    with pytest.raises(ValueError, match=r"\(N, 3072\)"):
        rotation.load_cifar10(tmp_path)


# --------------------------------------------------------------------------- bad input
# huge sizes refused before allocating (naming the argument and the memory); bad arguments named
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(5)
def test_huge_sizes_are_refused_before_allocating():
    msg = raises_naming(ValueError, "T", rotation.rotation_sequences, None, 10**10)
    assert "would need" in msg and "TiB" in msg
    raises_naming(ValueError, "n", rotation.shape_images, 10**10)
    raises_naming(ValueError, "vocab_size", corpus.one_hot, np.zeros((1000, 1000), np.int64), 10**9)
    raises_naming(ValueError, "batch", corpus.batch_windows, np.arange(10), 3, 10**12, np.random.default_rng(0))


@pytest.mark.timeout(30)
@FAST
@given(st.one_of(st.integers(max_value=0), st.booleans(), st.floats(), st.text(max_size=2), st.none()))
def test_rotation_sizes(bad):
    raises_naming((TypeError, ValueError), "T", rotation.rotation_sequences, None, bad)
    raises_naming((TypeError, ValueError), "n", rotation.shape_images, bad)


@pytest.mark.timeout(30)
@FAST
@given(st.integers(1, 6), st.floats(-720, 720))
def test_rotation_sequences_are_finite_and_shifted(T, angle):
    X, Y = rotation.rotation_sequences(rotation.shape_images(2, 8), T, angle)
    assert X.shape == (T, 2, 64) and np.all(np.isfinite(X))
    np.testing.assert_array_equal(X[1:], Y[:-1])


@pytest.mark.timeout(30)
def test_rotation_bad_inputs(tmp_path):
    raises_naming(ValueError, "images", rotation.rotate, np.full((4, 4), np.nan), 10.0)
    raises_naming(ValueError, "angle_deg", rotation.rotate, np.zeros((4, 4)), float("inf"))
    raises_naming(TypeError, "dtype", rotation.shape_images, 2, 8, dtype="int8")
    raises_naming(TypeError, "dtype", rotation.shape_images, 2, 8, dtype="not-a-dtype")
    raises_naming(TypeError, "path", rotation.load_cifar10, 3)
    (tmp_path / "test_batch").write_bytes(b"not a pickle")
    raises_naming(ValueError, "test_batch", rotation.load_cifar10, tmp_path)
    raises_naming(ValueError, "batches", rotation.load_cifar10, tmp_path, batches=["../x"])
