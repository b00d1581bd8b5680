"""course_lib.models.lstm_lm: train_lm returns a TrainResult, every LSTM method gives the same losses,
the loss falls, gradients match finite differences, bad input names the argument."""
import numpy as np
import pytest

from course_lib.core.results import TrainResult
from course_lib.models import lstm, lstm_lm


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
