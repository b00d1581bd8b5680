"""course_lib.models.linear_rnn: GILR-LSTM, SRU, QRNN, serial LSTM -- gradients, scan methods, training."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (before numba)
from course_lib.models import linear_rnn as L


def _numgrad(kind, params, X, W, name):
    arr = X if name == "X" else params[name]
    num = np.zeros_like(arr)
    for idx in np.ndindex(arr.shape):
        old = arr[idx]
        arr[idx] = old + 1e-6
        up = (L.forward(kind, params, X)[0] * W).sum()
        arr[idx] = old - 1e-6
        dn = (L.forward(kind, params, X)[0] * W).sum()
        arr[idx] = old
        num[idx] = (up - dn) / 2e-6
    return num


@pytest.mark.parametrize("kind", L.LAYERS)
def test_gradients_match_finite_differences(kind):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 2, 3))
    params = L.init_params(kind, 3, 4, k=3, seed=1)
    Hs, cache = L.forward(kind, params, X)
    assert Hs.shape == (5, 2, 4)
    W = rng.standard_normal(Hs.shape)
    grads = L.backward(kind, params, cache, W)
    assert set(grads) == set(params) | {"X"}
    for name in list(params) + ["X"]:
        np.testing.assert_allclose(grads[name], _numgrad(kind, params, X, W, name), rtol=1e-5, atol=1e-7,
                                   err_msg=f"{kind}: d/d{name}")


@pytest.mark.parametrize("kind", ["gilr_lstm", "sru", "qrnn"])
@pytest.mark.parametrize("method", ["blelloch", "chunked", "hillis_steele"])
def test_any_scan_method_gives_the_same_layer(kind, method):
    X = np.random.default_rng(1).standard_normal((9, 2, 3))
    params = L.init_params(kind, 3, 4, seed=2)
    H1, c1 = L.forward(kind, params, X)
    H2, c2 = L.forward(kind, params, X, method=method)
    np.testing.assert_allclose(H2, H1, rtol=1e-10, atol=1e-12)
    W = np.ones_like(H1)
    g1, g2 = L.backward(kind, params, c1, W), L.backward(kind, params, c2, W, method=method)
    for n in g1:
        np.testing.assert_allclose(g2[n], g1[n], rtol=1e-9, atol=1e-11)


def test_qrnn_is_causal():
    X = np.random.default_rng(2).standard_normal((8, 1, 2))
    params = L.init_params("qrnn", 2, 3, k=2, seed=0)
    H1 = L.forward("qrnn", params, X)[0]
    X2 = X.copy()
    X2[5:] += 1.0
    H2 = L.forward("qrnn", params, X2)[0]
    np.testing.assert_allclose(H1[:5], H2[:5])


def test_remember_first_batch():
    X, y = L.remember_first_batch(10, 6, 3, np.random.default_rng(0))
    assert X.shape == (10, 6, 3) and y.shape == (6,)
    np.testing.assert_array_equal(X[0, :, 0], 2 * y - 1)
    assert np.all(X[0, :, 1:] == 0)


@pytest.mark.parametrize("kind", ["gilr_lstm", "lstm"])
def test_training_reaches_100_percent_on_short_sequences(kind):
    res = L.train_remember_first(kind, 8, H=8, max_steps=300, progress=False)
    assert res.converged and res.steps <= 300 and res.accuracies[-1][1] == 1.0
    assert res.losses[-1] < res.losses[0]


def test_bad_inputs():
    with pytest.raises(ValueError, match="kind: expected one of"):
        L.init_params("gru", 2, 3)
    with pytest.raises(ValueError, match="H: expected an integer >= 1"):
        L.init_params("sru", 2, 0)
    params = L.init_params("sru", 3, 4)
    with pytest.raises(ValueError, match="X: expected shape \\(T, B, 3\\)"):
        L.forward("sru", params, np.zeros((4, 2, 5)))
    with pytest.raises(ValueError, match="X: expected a 3-D array"):
        L.forward("sru", params, np.zeros((4, 3)))
    with pytest.raises(TypeError, match="params: expected a dict"):
        L.forward("sru", [1, 2], np.zeros((4, 2, 3)))
    with pytest.raises(ValueError, match="params: expected the keys"):
        L.forward("lstm", {"U": 1}, np.zeros((4, 2, 3)))
    _, cache = L.forward("sru", params, np.zeros((4, 2, 3)))
    with pytest.raises(ValueError, match="dHs: expected shape"):
        L.backward("sru", params, cache, np.zeros((3, 2, 4)))
    with pytest.raises(TypeError, match="rng: expected a numpy Generator"):
        L.remember_first_batch(4, 2, 3, 0)
    with pytest.raises(ValueError, match="lr: expected a number > 0"):
        L.train_remember_first("sru", 4, lr=0.0, progress=False)


def test_classifier_loss_and_its_errors():
    h = np.array([[1.0, 0.0], [0.0, -1.0]])
    loss, acc, d = L.classifier_loss(h, np.array([1.0, 1.0]), 0.0, np.array([1, 0]))
    assert acc == 1.0 and loss > 0 and d.shape == (2,)
    with pytest.raises(ValueError, match="w: expected shape"):
        L.classifier_loss(h, np.ones(3), 0.0, np.array([1, 0]))
    with pytest.raises(TypeError, match="y: expected an integer array"):
        L.classifier_loss(h, np.ones(2), 0.0, np.array([1.0, 0.0]))
