"""course_lib.models.linear_rnn: GILR-LSTM, SRU, QRNN, serial LSTM -- params dataclasses, gradients,
scan methods, training (TrainResult)."""
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import course_lib  # noqa: F401  (before numba)
from course_lib.core.results import TrainResult
from course_lib.models import linear_rnn as L
from helpers import raises_naming


def _numgrad(params, X, W, name):
    arr = X if name == "X" else getattr(params, name)
    num = np.zeros_like(arr)
    for idx in np.ndindex(arr.shape):
        old = arr[idx]
        arr[idx] = old + 1e-6
        up = (L.forward(params, X)[0] * W).sum()
        arr[idx] = old - 1e-6
        dn = (L.forward(params, X)[0] * W).sum()
        arr[idx] = old
        num[idx] = (up - dn) / 2e-6
    return num


@pytest.mark.parametrize("layer", L.LAYERS)
def test_gradients_match_finite_differences(layer):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 2, 3))
    params = L.init_params(layer, 3, 4, k=3, seed=1)
    assert params.layer == layer and params.H == params.nh == 4 and params.nx == 3
    Hs, cache = L.forward(params, X)
    assert Hs.shape == (5, 2, 4)
    W = rng.standard_normal(Hs.shape)
    grads, dX = L.backward(params, cache, W)
    assert type(grads) is type(params) and grads.names() == params.names()
    for name, g in zip(grads.names(), grads.arrays()):
        np.testing.assert_allclose(g, _numgrad(params, X, W, name), rtol=1e-5, atol=1e-7,
                                   err_msg=f"{layer}: d/d{name}")
    np.testing.assert_allclose(dX, _numgrad(params, X, W, "X"), rtol=1e-5, atol=1e-7, err_msg=f"{layer}: d/dX")


@pytest.mark.parametrize("layer", ["gilr_lstm", "sru", "qrnn"])
@pytest.mark.parametrize("method", ["blelloch", "chunked", "hillis_steele", "channels"])
def test_any_scan_method_gives_the_same_layer(layer, method):
    X = np.random.default_rng(1).standard_normal((9, 2, 3))
    params = L.init_params(layer, 3, 4, seed=2)
    H1, c1 = L.forward(params, X)
    H2, c2 = L.forward(params, X, method=method)
    np.testing.assert_allclose(H2, H1, rtol=1e-10, atol=1e-12)
    W = np.ones_like(H1)
    (g1, d1), (g2, d2) = L.backward(params, c1, W), L.backward(params, c2, W, method=method)
    for n, a, b in zip(g1.names(), g1.arrays(), g2.arrays()):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-11, err_msg=n)
    np.testing.assert_allclose(d2, d1, rtol=1e-9, atol=1e-11)


def test_params_dataclasses():
    p = L.init_params("qrnn", 2, 3, k=4, seed=0)
    assert isinstance(p, L.QRNNParams) and p.k == 4 and p.nx == 2 and p.W.shape == (8, 9)
    q = p.copy()
    q.W[0, 0] += 1
    assert p.W[0, 0] != q.W[0, 0] and q.k == 4
    z = L.init_params("gilr_lstm", 2, 3).zeros_like()
    assert isinstance(z, L.GILRParams) and not any(v.any() for v in z.arrays())
    assert L.init_params("lstm", 2, 3).names() == ["W", "U", "b"]


def test_qrnn_is_causal():
    X = np.random.default_rng(2).standard_normal((8, 1, 2))
    params = L.init_params("qrnn", 2, 3, k=2, seed=0)
    H1 = L.forward(params, X)[0]
    X2 = X.copy()
    X2[5:] += 1.0
    H2 = L.forward(params, X2)[0]
    np.testing.assert_allclose(H1[:5], H2[:5])


def test_remember_first_batch():
    X, y = L.remember_first_batch(10, 6, 3, np.random.default_rng(0))
    assert X.shape == (10, 6, 3) and y.shape == (6,)
    np.testing.assert_array_equal(X[0, :, 0], 2 * y - 1)
    assert np.all(X[0, :, 1:] == 0)


@pytest.mark.parametrize("layer", ["gilr_lstm", "lstm"])
def test_training_reaches_100_percent_on_short_sequences(layer):
    res = L.train_remember_first(layer, 8, nh=8, max_epochs=30)
    assert isinstance(res, TrainResult) and isinstance(res.params, L.ClassifierParams)
    assert res.info["converged"] and res.history["val_accuracy"][-1] == 1.0
    assert res.info["epochs"] == len(res.history["epoch"]) <= 30
    assert res.info["steps"] == res.info["epochs"] * 512 // 32
    assert res.history["loss"][-1] < res.history["loss"][0] and res.seconds > 0
    assert res.params.layer == layer


def test_bad_inputs():
    with pytest.raises(ValueError, match="layer: expected one of"):
        L.init_params("gru", 2, 3)
    with pytest.raises(ValueError, match="nh: expected an integer >= 1"):
        L.init_params("sru", 2, 0)
    params = L.init_params("sru", 3, 4)
    with pytest.raises(ValueError, match="X: expected shape \\(T, B, 3\\)"):
        L.forward(params, np.zeros((4, 2, 5)))
    with pytest.raises(ValueError, match="X: expected a 3-D array"):
        L.forward(params, np.zeros((4, 3)))
    with pytest.raises(TypeError, match="params: expected a layer's params"):
        L.forward({"W": 1}, np.zeros((4, 2, 3)))
    _, cache = L.forward(params, np.zeros((4, 2, 3)))
    with pytest.raises(ValueError, match="dHs: expected shape"):
        L.backward(params, cache, np.zeros((3, 2, 4)))
    with pytest.raises(TypeError, match="rng: expected a numpy Generator"):
        L.remember_first_batch(4, 2, 3, 0)
    with pytest.raises(ValueError, match="lr: expected a number > 0"):
        L.train_remember_first("sru", 4, lr=0.0)
    with pytest.raises(ValueError, match="max_epochs: expected an integer >= 1"):
        L.train_remember_first("sru", 4, max_epochs=0)


def test_classifier_loss_and_its_errors():
    h = np.array([[1.0, 0.0], [0.0, -1.0]])
    loss, acc, d = L.classifier_loss(h, np.array([1.0, 1.0]), 0.0, np.array([1, 0]))
    assert acc == 1.0 and loss > 0 and d.shape == (2,)
    with pytest.raises(ValueError, match="w: expected shape"):
        L.classifier_loss(h, np.ones(3), 0.0, np.array([1, 0]))
    with pytest.raises(TypeError, match="y: expected an integer array"):
        L.classifier_loss(h, np.ones(2), 0.0, np.array([1.0, 0.0]))


# --------------------------------------------------------------------------- bad input
# the parameter dataclasses refuse wrong shapes at construction, naming the field
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(30)
@FAST
@given(st.sampled_from(L.LAYERS), st.data())
def test_linear_rnn_params_refuse_a_wrong_shape_by_name(layer, data):
    p = L.init_params(layer, 3, 4, k=2)
    name = data.draw(st.sampled_from(p.names()))
    arr = getattr(p, name)
    axis = data.draw(st.integers(0, arr.ndim - 1))
    bad = np.delete(arr, 0, axis=axis)  # one row/column short
    kw = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
    kw[name] = bad
    try:
        q = type(p)(**kw)
    except ValueError as exc:  # named: the field, or (when the input matrix set a smaller nx) the one that disagrees
        assert str(exc).startswith("params."), str(exc)
        assert name in str(exc) or (name == p._input and axis == 0), str(exc)
    else:  # only a one-matrix layer whose input rows define nx: a consistent, smaller layer
        assert name == p._input and axis == 0 and q.nx == p.nx - 1 and q.H == p.H


@pytest.mark.timeout(30)
@FAST
@given(st.sampled_from(L.LAYERS), st.sampled_from(["list", "int", "str"]))
def test_linear_rnn_params_dtype_and_kind(layer, how):
    p = L.init_params(layer, 3, 4)
    kw = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
    if how == "list":  # a nested list of floats is accepted (converted), a correct result
        kw["b"] = kw["b"].tolist()
        q = type(p)(**kw)
        assert isinstance(q.b, np.ndarray) and q.H == 4
        return
    kw["b"] = kw["b"].astype(np.int64) if how == "int" else "b"
    raises_naming(TypeError, "params.b", type(p), **kw)


@pytest.mark.timeout(30)
def test_linear_rnn_classifier_and_qrnn_window():
    p = L.init_params("qrnn", 3, 4, k=2)
    raises_naming(ValueError, "params.W", L.QRNNParams, W=p.W, b=p.b, k=4)  # 6 rows is not 4*nx
    raises_naming((ValueError, TypeError), "params.k", L.QRNNParams, W=p.W, b=p.b, k=0)
    raises_naming(TypeError, "rnn", L.ClassifierParams, "p", np.zeros(4), np.zeros(1))
    raises_naming(ValueError, "w_out", L.ClassifierParams, p, np.zeros(5), np.zeros(1))
    raises_naming(ValueError, "b_out", L.ClassifierParams, p, np.zeros(4), np.zeros(2))
    # unchanged behaviour: grads of the same class, forward/backward agree in shape
    X = np.random.default_rng(0).standard_normal((5, 2, 3))
    Hs, cache = L.forward(p, X)
    g, dX = L.backward(p, cache, np.ones_like(Hs))
    assert isinstance(g, L.QRNNParams) and dX.shape == X.shape and np.all(np.isfinite(g.W))


# ---- issue 29: params are checked where they are used (NaN/inf, replaced arrays), and the head's inputs --------
@pytest.mark.parametrize("layer", L.LAYERS)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_or_reshaped_params_are_named(layer, bad):
    p = L.init_params(layer, 3, 4)
    X = np.random.default_rng(0).standard_normal((6, 2, 3))
    for name in p.names():
        q = p.copy()
        getattr(q, name).flat[0] = bad
        raises_naming(ValueError, f"params.{name}", L.forward, q, X)
    q = p.copy()
    q.b = q.b[:-1]
    raises_naming(ValueError, "params.b", L.forward, q, X)


def test_classifier_loss_checks_b0_labels_and_batch():
    h = np.ones((2, 3))
    raises_naming(ValueError, "b0", L.classifier_loss, h, np.ones(3), float("nan"), np.array([0, 1]))
    raises_naming(ValueError, "y", L.classifier_loss, h, np.ones(3), 0.0, np.array([0, 2]))
    raises_naming(ValueError, "h_last", L.classifier_loss, h[:0], np.ones(3), 0.0, np.zeros(0, int))
