import numpy as np
import pytest

from course_lib.data import activity as A


@pytest.mark.parametrize("length", [128, 4096])
def test_shapes_balance_determinism(length):
    X, y = A.make_activity(12, length, seed=3)
    assert X.shape == (length, 12, 3) and X.dtype == np.float32 and y.dtype == np.int64
    assert np.bincount(y, minlength=4).tolist() == [3, 3, 3, 3]
    X2, y2 = A.make_activity(12, length, seed=3)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    assert not np.array_equal(X, A.make_activity(12, length, seed=4)[0])


def test_class_is_spread_over_the_sequence():
    # the dominant period on channel 0 differs between walk (~16) and run (~8) in every quarter
    X, y = A.make_activity(40, 1024, noise=0.3, seed=0)
    for q in range(4):
        seg = X[q * 256:(q + 1) * 256, :, 0]
        spec = np.abs(np.fft.rfft(seg - seg.mean(axis=0), axis=0))
        peak = np.argmax(spec[1:], axis=0) + 1
        period = 256 / peak
        assert np.median(period[y == 1]) > 12 and np.median(period[y == 2]) < 10


def test_train_test_and_bad_input():
    Xtr, ytr, Xte, yte = A.train_test(8, 4, 128)
    assert Xtr.shape == (128, 8, 3) and Xte.shape == (128, 4, 3)
    with pytest.raises(ValueError, match="length: expected an integer >= 16"):
        A.make_activity(4, 8)
    with pytest.raises(ValueError, match="n_classes: expected an integer <= 6"):
        A.make_activity(4, 128, n_classes=9)
    with pytest.raises(TypeError, match="n: expected an integer"):
        A.make_activity(2.5, 128)
