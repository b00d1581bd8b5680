"""Issue 18, models layer, second pass (fast_rnn, gru, lstm): bad input is a ValueError/TypeError naming the
argument, or a correct result; never NaN weights, a hang or a crash."""
import dataclasses
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.models import fast_rnn, gru, lstm, rnn
from helpers import raises_naming

pytestmark = pytest.mark.timeout(30)
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NONFINITE = st.sampled_from([np.inf, -np.inf, np.nan])


def _rnn_problem(dtype=np.float32):
    p = rnn.init_params(3, 4, 2, seed=0, dtype=dtype)
    rng = np.random.default_rng(0)
    return p, rng.standard_normal((3, 2, 3)).astype(dtype), rng.standard_normal((3, 2, 2)).astype(dtype)


# --------------------------------------------------------------------------- fast_rnn
@FAST
@given(NONFINITE, st.sampled_from(["X", "Y"]), st.integers(0, 2), st.integers(0, 1))
def test_fast_rnn_non_finite_inputs_are_named_never_nan_weights(bad, which, t, b):
    p, X, Y = _rnn_problem()
    arr = X if which == "X" else Y
    arr[t, b, 0] = bad
    raises_naming(ValueError, which, fast_rnn.train_step, p, X, Y, 0.1)
    raises_naming(ValueError, which, fast_rnn.gradients, p, X, Y)
    raises_naming(ValueError, which, fast_rnn.NumpyStep(3, 2, 3, 4, 2), p.copy(), X, Y, 0.1)


def test_fast_rnn_inf_in_X_regression():
    # used to return a normal-looking loss and NaN weights (tanh saturates inf, Xᵀ Δz = inf * 0)
    p, X, Y = _rnn_problem()
    X[0, 0, 0] = np.inf
    raises_naming(ValueError, "X", fast_rnn.train_step, p, X, Y, 0.1)
    raises_naming(ValueError, "X", fast_rnn.gradients, p, X, Y)


def test_fast_rnn_argument_names():
    p, X, Y = _rnn_problem()
    raises_naming(ValueError, "threads", fast_rnn.train_step, p, X, Y, 0.1, threads=0)  # said "n: ..."
    raises_naming(TypeError, "threads", fast_rnn.train_step, p, X, Y, 0.1, threads="2")
    raises_naming(TypeError, "inplace", fast_rnn.train_step, p, X, Y, 0.1, inplace="yes")
    raises_naming(TypeError, "h0", fast_rnn.step_flops, 2, 2, 2, 2, 2, h0="no")
    raises_naming(ValueError, "T", fast_rnn.make_workspace, 10**9, 10**4, 1, 10**4, 1)  # refused before allocating
    raises_naming(ValueError, "T", fast_rnn.NumpyStep, 10**9, 10**4, 1, 10**4, 1)
    raises_naming(TypeError, "dtype", fast_rnn.NumpyStep, 1, 1, 1, 1, 1, np.int32)
    raises_naming(ValueError, "method", fast_rnn.FusedKernels, "gpu", {})


def test_descend_rejects_none_lr_and_integer_weights():
    p, X, Y = _rnn_problem()
    ws = fast_rnn.make_workspace(3, 2, 3, 4, 2)
    fast_rnn.gradients(p, X, Y, workspace=ws)
    raises_naming(TypeError, "lr", fast_rnn.descend, p, ws, None)       # used to give NaN weights
    raises_naming(ValueError, "lr", fast_rnn.descend, p, ws, np.nan)
    pint = rnn.RNNParams(*(np.ones(a.shape, np.int64) for a in (p.Wxh, p.Whh, p.Why)))
    raises_naming(TypeError, "params.Wxh", fast_rnn.descend, pint, ws, 0.1)  # used to truncate silently
    q = fast_rnn.descend(p, ws, 0.1)
    assert all(np.isfinite(a).all() for a in (q.Wxh, q.Whh, q.Why))


def test_phase_functions_check_their_arguments():
    p, X, Y = _rnn_problem()
    ws = fast_rnn.make_workspace(3, 2, 3, 4, 2)
    raises_naming(TypeError, "ws", fast_rnn.forward_into, None, p, X)
    raises_naming(ValueError, "X", fast_rnn.forward_into, ws, p, X[:, :1])
    raises_naming(TypeError, "X", fast_rnn.forward_into, ws, p, X.astype(np.float64))
    raises_naming(TypeError, "params", fast_rnn.output_pre_activation_into, ws, "p")
    raises_naming(ValueError, "Y", fast_rnn.output_delta_into, ws, Y[:2])
    raises_naming(ValueError, "params.Whh", fast_rnn.backward_into, ws, dataclasses.replace(p, Whh=p.Whh[:3, :3]))
    raises_naming(ValueError, "h0", fast_rnn.weight_gradients_into, ws, X, np.zeros((2, 5), np.float32))


@FAST
@given(st.one_of(st.integers(max_value=0), st.floats(), st.text(max_size=2), st.none(), st.booleans()),
       st.sampled_from(["T", "batch", "nx", "nh", "ny"]))
def test_numpy_step_and_workspace_sizes(bad, which):
    args = dict(T=2, batch=2, nx=2, nh=2, ny=2)
    args[which] = bad
    raises_naming((TypeError, ValueError), which, fast_rnn.NumpyStep, **args)
    raises_naming((TypeError, ValueError), which, fast_rnn.make_workspace, **args)


# --------------------------------------------------------------------------- gru
def _gru():
    p = gru.init_params(3, 4, seed=0, dtype=np.float64)
    rng = np.random.default_rng(1)
    return p, rng.standard_normal((2, 12)), rng.standard_normal((2, 4)), rng.standard_normal((5, 2, 3))


def test_gru_cell_functions_check_their_inputs():
    p, gi, h, X = _gru()
    for fn, extra in ((gru.gru_cell, ()), (gru.gates, ()), (gru.gru_cell_backward, (h,))):
        raises_naming(ValueError, "gi", fn, p, gi[:, :11], h, *extra)
        raises_naming(ValueError, "h", fn, p, gi, h[:, :3], *extra)
        bad = gi.copy()
        bad[0, 0] = np.nan
        raises_naming(ValueError, "gi", fn, p, bad, h, *extra)
        raises_naming(TypeError, "params", fn, "p", gi, h, *extra)
    raises_naming(ValueError, "dh_new", gru.gru_cell_backward, p, gi, h, h[:1])
    raises_naming(ValueError, "gamma", gru.gru_cell, p, gi, h, gamma=-1.0)
    raises_naming(TypeError, "implicit", gru.gru_cell, p, gi, h, implicit="yes")
    raises_naming(ValueError, "X", gru.input_projection, p, X[..., :2])
    raises_naming(TypeError, "X", gru.input_projection, p, X.astype(np.int64))
    Xn = X.copy()
    Xn[0, 0, 0] = np.inf
    raises_naming(ValueError, "X", gru.input_projection, p, Xn)
    np.testing.assert_allclose(gru.input_projection(p, X), X @ p.W_ih.T + p.b_ih)


def test_gru_params_and_helpers():
    p, *_ = _gru()
    raises_naming(ValueError, "params.W_hh", gru.GRUParams, p.W_ih, p.W_hh[:, :3], p.b_ih, p.b_hh)
    raises_naming(ValueError, "params.W_ih", gru.GRUParams, p.W_ih[:11], p.W_hh, p.b_ih, p.b_hh)
    raises_naming(TypeError, "dtype", p.astype, np.int8)
    raises_naming(TypeError, "module", gru.GRUParams.from_torch, object())
    raises_naming(ValueError, "m", gru.pad_to_hierarchy, 10, 1, 2)
    raises_naming(TypeError, "T", gru.pad_to_hierarchy, "10", 4, 2)
    raises_naming(ValueError, "W_out", gru.GRUClassifierParams, p, np.zeros((2, 5)), np.zeros(2))
    raises_naming(ValueError, "nh", gru.init_params, 3, 10**7)  # refused before allocating


@FAST
@given(st.floats(0.05, 20.0), st.booleans())
def test_gru_cell_is_the_private_cell(gamma, implicit):
    p, gi, h, _ = _gru()
    out = gru.gru_cell(p, gi, h, implicit=implicit, gamma=gamma)
    r, z, n = gru.gates(p, gi, h)
    a = gamma * (1 - z)
    want = (h + a * n) / (1 + a) if implicit else h + a * (n - h)
    np.testing.assert_allclose(out, want, rtol=1e-12)


# --------------------------------------------------------------------------- lstm
def test_lstm_from_torch_is_validated():
    raises_naming(TypeError, "lstm", lstm.LSTMParams.from_torch, object())
    p = lstm.init_params(3, 4) if hasattr(lstm, "init_params") else None

    class T:  # a stand-in exposing torch's attribute protocol (.detach().cpu().numpy())
        def __init__(self, a):
            self.a = a

        def detach(self):
            return self

        def cpu(self):
            return self

        def numpy(self):
            return self.a

    if p is not None:
        fake = types.SimpleNamespace(weight_ih_l0=T(p.W_ih), weight_hh_l0=T(p.W_hh.T.copy()),  # transposed
                                     bias_ih_l0=T(p.b_ih), bias_hh_l0=T(p.b_hh))
        with pytest.raises(ValueError):
            lstm.LSTMParams.from_torch(fake)
        fake.num_layers = 2
        raises_naming(ValueError, "lstm", lstm.LSTMParams.from_torch, fake)
