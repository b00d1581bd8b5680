"""course_lib.data.rotation: images made in code, rotation, the rotation task, CIFAR-10 reader."""
import pickle

import numpy as np
import pytest

from course_lib.data import rotation


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
