"""Issue 18, models layer, third pass (linear_rnn, lstm_lm, lstm dataclasses) and the activations:
parameter dataclasses refuse wrong shapes at construction, naming the field; bad input is a
ValueError/TypeError naming the argument, or a correct result; never NaN, a hang or a crash."""
import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.algorithms import activations
from course_lib.models import linear_rnn, lstm, lstm_lm
from helpers import raises_naming

pytestmark = pytest.mark.timeout(30)
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- linear_rnn params
@FAST
@given(st.sampled_from(linear_rnn.LAYERS), st.data())
def test_linear_rnn_params_refuse_a_wrong_shape_by_name(layer, data):
    p = linear_rnn.init_params(layer, 3, 4, k=2)
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


@FAST
@given(st.sampled_from(linear_rnn.LAYERS), st.sampled_from(["list", "int", "str"]))
def test_linear_rnn_params_dtype_and_kind(layer, how):
    p = linear_rnn.init_params(layer, 3, 4)
    kw = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
    if how == "list":  # a nested list of floats is accepted (converted), a correct result
        kw["b"] = kw["b"].tolist()
        q = type(p)(**kw)
        assert isinstance(q.b, np.ndarray) and q.H == 4
        return
    kw["b"] = kw["b"].astype(np.int64) if how == "int" else "b"
    raises_naming(TypeError, "params.b", type(p), **kw)


def test_linear_rnn_classifier_and_qrnn_window():
    p = linear_rnn.init_params("qrnn", 3, 4, k=2)
    raises_naming(ValueError, "params.W", linear_rnn.QRNNParams, W=p.W, b=p.b, k=4)  # 6 rows is not 4*nx
    raises_naming((ValueError, TypeError), "params.k", linear_rnn.QRNNParams, W=p.W, b=p.b, k=0)
    raises_naming(TypeError, "rnn", linear_rnn.ClassifierParams, "p", np.zeros(4), np.zeros(1))
    raises_naming(ValueError, "w_out", linear_rnn.ClassifierParams, p, np.zeros(5), np.zeros(1))
    raises_naming(ValueError, "b_out", linear_rnn.ClassifierParams, p, np.zeros(4), np.zeros(2))
    # unchanged behaviour: grads of the same class, forward/backward agree in shape
    X = np.random.default_rng(0).standard_normal((5, 2, 3))
    Hs, cache = linear_rnn.forward(p, X)
    g, dX = linear_rnn.backward(p, cache, np.ones_like(Hs))
    assert isinstance(g, linear_rnn.QRNNParams) and dX.shape == X.shape and np.all(np.isfinite(g.W))


# --------------------------------------------------------------------------- lstm dataclasses
def test_lstm_params_ranks_checked_layout_left_to_check_params():
    p = lstm.init_params(3, 4)
    raises_naming(ValueError, "params.b_ih", lstm.LSTMParams, p.W_ih, p.W_hh, p.W_hh, p.b_hh)
    raises_naming(TypeError, "params.W_hh", lstm.LSTMParams, p.W_ih, p.W_hh.astype(int), p.b_ih, p.b_hh)
    # a transposed weight still constructs: lstm_forward explains the layout (chapter 09's teaching moment)
    bad = lstm.LSTMParams(p.W_ih.T.copy(), p.W_hh, p.b_ih, p.b_hh)
    raises_naming(ValueError, "params.W_ih", lstm.lstm_forward, bad, np.zeros((2, 1, 3), np.float32))


def test_lstm_cache_and_grads_shapes():
    p = lstm.init_params(3, 4, dtype=np.float64)
    X = np.random.default_rng(0).standard_normal((3, 2, 3))
    out = lstm.lstm_forward(p, X, method="naive", return_cache=True)
    cache = out[-1]
    raises_naming(ValueError, "cache.method", dataclasses.replace, cache, method="nope")
    raises_naming(ValueError, "cache.A", dataclasses.replace, cache, A=cache.A[..., :-1])
    raises_naming(ValueError, "cache.H", dataclasses.replace, cache, H=cache.H[:-1])
    g, dX, dh0, dc0 = lstm.lstm_backward(p, cache, np.ones_like(cache.H))
    assert type(g) is lstm.LSTMParams and dX.shape == X.shape and dh0.shape == dc0.shape == (2, p.nh)
    assert all(np.all(np.isfinite(a)) for a in (*g.arrays(), dX, dh0, dc0))


# --------------------------------------------------------------------------- lstm_lm
@FAST
@given(st.integers(-3, -1) | st.integers(5, 9))
def test_lm_ids_out_of_vocabulary_named(bad):
    params = lstm_lm.init_lm(5, 4, seed=0)
    X = np.zeros((3, 2), np.int64)
    Y = np.ones((3, 2), np.int64)
    Xb = X.copy()
    Xb[1, 1] = bad
    raises_naming(ValueError, "X_ids", lstm_lm.lm_loss_and_grads, params, Xb, Y)
    raises_naming(ValueError, "Y_ids", lstm_lm.lm_loss_and_grads, params, X, Xb)
    ids = np.arange(40) % 5
    ids[7] = bad
    raises_naming(ValueError, "ids", lstm_lm.train_lm, ids, 5, nh=4, T=3, batch=2, steps=1)


def test_lm_params_and_sizes():
    params = lstm_lm.init_lm(5, 4, seed=0)
    raises_naming(TypeError, "lstm", lstm_lm.LMParams, "x", params.W_out, params.b_out)
    raises_naming(ValueError, "W_out", lstm_lm.LMParams, params.lstm, params.W_out.T, params.b_out)
    raises_naming(ValueError, "b_out", lstm_lm.LMParams, params.lstm, params.W_out, params.b_out[:-1])
    raises_naming(TypeError, "params", lstm_lm.lm_loss_and_grads, {"W_out": 1}, np.zeros((2, 1), int), np.zeros((2, 1), int))
    raises_naming(ValueError, "method", lstm_lm.lm_loss_and_grads, params, np.zeros((2, 1), int), np.zeros((2, 1), int), "fast")
    raises_naming(ValueError, "nh", lstm_lm.init_lm, 5, 10**9)
    raises_naming(ValueError, "batch", lstm_lm.train_lm, np.arange(40) % 5, 5, nh=4, T=3, batch=10**12, steps=1)
    raises_naming(ValueError, "clip", lstm_lm.train_lm, np.arange(40) % 5, 5, nh=4, T=3, batch=2, steps=1, clip=-1.0)
    loss, grads = lstm_lm.lm_loss_and_grads(params, np.zeros((3, 2), int), np.ones((3, 2), int))
    assert math.isfinite(loss) and isinstance(grads, lstm_lm.LMParams)


# --------------------------------------------------------------------------- activations
@FAST
@given(st.one_of(st.just("x"), st.just(None), st.just(True), st.just([1.0])))
def test_activation_scalars(bad):
    raises_naming(TypeError, "x", activations.fast_tanh, bad)
    raises_naming(TypeError, "x", activations.fast_sigmoid, bad)


@FAST
@given(st.floats(allow_nan=False))
def test_activation_values_correct(x):
    assert activations.fast_tanh(x) == math.tanh(x)
    s = activations.fast_sigmoid(x)
    assert 0.0 <= s <= 1.0
    assert np.isclose(activations.sigmoid(np.array([x]))[0], s)


def test_activation_nan_and_kinds():
    raises_naming(ValueError, "x", activations.fast_tanh, float("nan"))
    raises_naming(TypeError, "z", activations.sigmoid, np.array(["a"]))
    raises_naming(TypeError, "z", activations.sigmoid, None)
    assert activations.sigmoid(np.array([-np.inf, 0, np.inf])).tolist() == [0.0, 0.5, 1.0]
