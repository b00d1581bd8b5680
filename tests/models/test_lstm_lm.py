"""course_lib.models.lstm_lm: train_lm returns a TrainResult, every LSTM method gives the same losses,
the loss falls, gradients match finite differences, bad input names the argument."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.core.results import TrainResult
from course_lib.models import lstm, lstm_lm
from helpers import raises_naming


def _ids(n=400, V=7):
    return np.arange(n) % V  # a periodic "text": easy to learn


def test_train_returns_train_result_and_methods_agree():
    ids = _ids()
    runs = {m: lstm_lm.train_lm(ids, 7, nh=8, T=6, batch=4, steps=12, method=m, seed=1) for m in lstm.METHODS}
    for m, r in runs.items():
        assert isinstance(r, TrainResult) and isinstance(r.params, lstm_lm.LMParams)
        assert len(r.history["loss"]) == 12 and r.seconds > 0
        assert r.info["method"] == m and r.info["tokens_per_s"] == pytest.approx(12 * 6 * 4 / r.seconds)
        np.testing.assert_allclose(r.history["loss"], runs["naive"].history["loss"], rtol=1e-4)
    r = runs["fused_pre"]
    assert r.last("loss") < r.history["loss"][0]  # a periodic sequence is easy to learn
    params, history = r                             # unpacks like (params, history)
    assert history is r.history


def test_loss_gradient_matches_finite_differences():
    p = lstm_lm.init_lm(5, 4, seed=0, dtype=np.float64)
    rng = np.random.default_rng(0)
    X, Y = rng.integers(0, 5, (3, 2)), rng.integers(0, 5, (3, 2))
    loss, g = lstm_lm.lm_loss_and_grads(p, X, Y, method="fused")
    eps = 1e-6
    for arr, grad in ((p.W_out, g.W_out), (p.lstm.W_hh, g.lstm.W_hh), (p.lstm.b_ih, g.lstm.b_ih)):
        idx = (0,) * arr.ndim
        old = arr[idx]
        arr[idx] = old + eps
        up = lstm_lm.lm_loss_and_grads(p, X, Y)[0]
        arr[idx] = old - eps
        down = lstm_lm.lm_loss_and_grads(p, X, Y)[0]
        arr[idx] = old
        assert grad[idx] == pytest.approx((up - down) / (2 * eps), rel=1e-5, abs=1e-9)


def test_bad_input():
    with pytest.raises(ValueError, match="method: expected one of"):
        lstm_lm.train_lm(_ids(), 7, nh=4, T=4, batch=2, steps=1, method="auto")
    with pytest.raises(ValueError, match="steps: expected an integer >= 1"):
        lstm_lm.train_lm(_ids(), 7, steps=0)
    with pytest.raises(ValueError, match="V: expected an integer >= 1"):
        lstm_lm.init_lm(0, 4)


# --------------------------------------------------------------------------- bad input
# a ValueError/TypeError naming the argument, or the right answer; never NaN, a hang or a crash
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(30)
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


@pytest.mark.timeout(30)
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


# ---- issue 29: the allocation guard names the argument that made the batch large; params checked per call ----
def test_allocation_guard_names_the_large_argument():
    from helpers import raises_fast
    ids = np.arange(50) % 5
    msg = raises_fast(ValueError, "V", lstm_lm.train_lm, ids, 10**10, nh=4, T=4, batch=2, steps=1)
    assert msg.startswith("V: too large"), msg  # it used to blame "batch"
    raises_fast(ValueError, "batch", lstm_lm.train_lm, ids, 5, nh=4, T=4, batch=10**11, steps=1)
    raises_fast(ValueError, "steps", lstm_lm.train_lm, ids, 5, nh=4, T=4, batch=2, steps=10**10)
    raises_naming(ValueError, "ids", lstm_lm.train_lm, ids[:3], 5, nh=4, T=4, batch=2, steps=1)


@given(data=st.data())
@FAST
def test_bad_params_clear_error(data):
    from helpers import bad_array, clear_error_or
    p = lstm_lm.init_lm(5, 4, dtype=np.float64)
    X, Y = np.array([[0, 1], [2, 3], [4, 0]]), np.array([[1, 2], [3, 4], [0, 1]])
    field = data.draw(st.sampled_from(["W_out", "b_out"]))
    what, bad = data.draw(bad_array(getattr(p, field)))
    object.__setattr__(p, field, bad)
    clear_error_or(("params", f"params.{field}", "X"), lambda: lstm_lm.lm_loss_and_grads(p, X, Y),
                   lambda out: what == "int" and np.isfinite(out[0]))


@pytest.mark.parametrize("kw, name", [(dict(seed=None), "seed"), (dict(seed=-1), "seed"), (dict(seed=True), "seed"),
                                      (dict(dtype="int64"), "dtype"), (dict(dtype="bogus"), "dtype")])
def test_init_lm_checks_seed_and_dtype(kw, name):
    raises_naming((ValueError, TypeError), name, lstm_lm.init_lm, 5, 4, **kw)
