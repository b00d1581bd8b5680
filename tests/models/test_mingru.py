"""minGRU / minLSTM: the three evaluations agree with each other and a float64 loop; gradients; training."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.models import mingru
from helpers import raises_naming


def _loop(a, b, h0=None):
    h = np.zeros(a.shape[1:]) if h0 is None else h0
    out = []
    for t in range(a.shape[0]):
        h = a[t] * h + b[t]
        out.append(h)
    return np.stack(out)


@pytest.mark.parametrize("kind", mingru.KINDS)
def test_three_methods_agree_with_float64_loop(kind):
    p = mingru.init_params(kind, 3, 5, 2, seed=1)
    X = np.random.default_rng(0).standard_normal((50, 3, 3))
    h0 = np.abs(np.random.default_rng(1).standard_normal((3, 5)))
    ref = _loop(*mingru.coefficients(kind, p, X), h0)
    for m in mingru.METHODS:
        np.testing.assert_allclose(mingru.forward(kind, p, X, h0, method=m), ref, rtol=1e-12, atol=1e-13, err_msg=m)


@pytest.mark.parametrize("kind", mingru.KINDS)
def test_log_coefficients_are_logs_of_coefficients(kind):
    p = mingru.init_params(kind, 3, 4, seed=2)
    X = 5 * np.random.default_rng(2).standard_normal((20, 2, 3))
    a, b = mingru.coefficients(kind, p, X)
    la, lb = mingru.log_coefficients(kind, p, X)
    np.testing.assert_allclose(np.exp(la), a, rtol=1e-12)
    np.testing.assert_allclose(np.exp(lb), b, rtol=1e-12)
    assert np.all(mingru.g(np.linspace(-30, 30, 101)) > 0)


@pytest.mark.parametrize("kind", mingru.KINDS)
def test_gradients_match_finite_differences(kind):
    p = mingru.init_params(kind, 3, 4, 3, seed=3)
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((12, 5, 3)), rng.integers(0, 3, 5)
    _, _, grads = mingru.loss_and_grads(kind, p, X, y)
    assert type(grads) is type(p) and grads.names() == p.names()
    eps = 1e-6
    for name, g in zip(grads.names(), grads.arrays()):
        W = getattr(p, name)
        idx = tuple(rng.integers(0, s) for s in W.shape)
        old = W[idx]
        W[idx] = old + eps
        lp = mingru.loss_and_grads(kind, p, X, y)[0]
        W[idx] = old - eps
        lm = mingru.loss_and_grads(kind, p, X, y)[0]
        W[idx] = old
        assert abs((lp - lm) / (2 * eps) - g[idx]) < 1e-6 * max(1, abs(g[idx])), name


def test_float32_log_scan_drifts_more_than_linear_scan():
    p = mingru.init_params("mingru", 3, 4, seed=4)
    p32 = p.astype(np.float32)
    X = np.random.default_rng(4).standard_normal((4096, 2, 3))
    ref = _loop(*mingru.coefficients("mingru", p, X))
    err = {m: np.max(np.abs(mingru.forward("mingru", p32, X.astype(np.float32), method=m) - ref) / (np.abs(ref) + 1e-3))
           for m in mingru.METHODS}
    assert err["sequential"] < 1e-5 and err["chunked"] < 1e-5
    assert err["log_space"] > 10 * err["chunked"]


def test_training_returns_trainresult_and_learns_activity():
    r = mingru.train_activity("mingru", 64, n_train=256, n_val=128, epochs=6, nh=16, method="chunked")
    assert set(r.history) >= {"loss", "accuracy", "val_accuracy"} and r.seconds > 0
    assert isinstance(r.params, mingru.MinGRUParams)
    assert r.history["val_accuracy"][-1] > 0.5  # 4 classes: chance is 0.25
    assert np.mean(r.history["loss"][-8:]) < np.mean(r.history["loss"][:8])
    r2 = mingru.train_remember_first("minlstm", 8, n_train=64, n_val=32, epochs=1)
    assert len(r2.history["loss"]) == 2


@pytest.mark.parametrize("call,exc,name", [
    (lambda p, X: mingru.forward("mingru", p, X, method="fft"), ValueError, "method"),
    (lambda p, X: mingru.forward("gru", p, X), ValueError, "kind"),
    (lambda p, X: mingru.forward("minlstm", p, X), TypeError, "params"),
    (lambda p, X: mingru.forward("mingru", p, X[..., :2]), ValueError, "X"),
    (lambda p, X: mingru.forward("mingru", p, X, -np.ones((2, 4)), method="log_space"), ValueError, "h0"),
    (lambda p, X: mingru.forward("mingru", p, X, np.ones((3, 4))), ValueError, "h0"),
    (lambda p, X: mingru.loss_and_grads("mingru", p, X, np.array([0, 7])), ValueError, "y"),
    (lambda p, X: mingru.init_params("mingru", 0, 4), ValueError, "nx"),
])
def test_bad_inputs_name_the_argument(call, exc, name):
    p = mingru.init_params("mingru", 3, 4, seed=0)
    X = np.zeros((6, 2, 3))
    with pytest.raises(exc, match=rf"^{name}"):
        call(p, X)


# --------------------------------------------------------------------------- g and log_g
# agree and stay finite; bad input named
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(30)
@FAST
@given(st.lists(st.floats(-10, 30), min_size=1, max_size=6), st.floats(-1e6, -10))
def test_g_and_log_g_agree_and_stay_finite(vals, very_negative):
    x = np.array(vals)
    np.testing.assert_allclose(mingru.log_g(x), np.log(mingru.g(x)), rtol=1e-6, atol=1e-12)
    assert np.isfinite(mingru.log_g(np.array([very_negative]))).all()   # where log(g) would be -inf


@pytest.mark.timeout(30)
def test_g_rejects_garbage():
    raises_naming(ValueError, "x", mingru.g, np.array([np.nan]))
    raises_naming(TypeError, "x", mingru.log_g, np.array([1, 2]))
    raises_naming(TypeError, "x", mingru.g, None)


# ---- bad input (issue 29): a clear error naming the argument, or the right answer ---------------------------
_P = {k: mingru.init_params(k, 3, 4, seed=2) for k in mingru.KINDS}
_X = np.random.default_rng(3).standard_normal((5, 2, 3))


@pytest.mark.parametrize("kind", mingru.KINDS)
@pytest.mark.parametrize("method", mingru.METHODS)
@given(data=st.data())
@FAST
def test_forward_bad_X_clear_error_or_correct(kind, method, data):
    from helpers import bad_array, clear_error_or
    what, X = data.draw(bad_array(_X))
    p = _P[kind]
    out = clear_error_or("X", lambda: mingru.forward(kind, p, X, method=method),
                         lambda H: np.isfinite(H).all())
    if out is not None:  # only an exact re-typing may be accepted: then it is the float64 answer
        np.testing.assert_allclose(out, mingru.forward(kind, p, np.asarray(X, float), method="sequential"), rtol=1e-10)


@pytest.mark.parametrize("kind", mingru.KINDS)
@given(data=st.data())
@FAST
def test_bad_params_clear_error(kind, data):
    from helpers import bad_array, clear_error_or
    p = _P[kind].copy()
    field = data.draw(st.sampled_from(p.names()))
    what, bad = data.draw(bad_array(getattr(p, field)))
    setattr(p, field, bad)
    clear_error_or(("params", f"params.{field}", "X"), lambda: mingru.forward(kind, p, _X, method="log_space"),
                   lambda H: what == "int" and np.isfinite(H).all())


@pytest.mark.parametrize("kind", mingru.KINDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("method", mingru.METHODS)
def test_nonfinite_params_are_refused_by_every_method(kind, bad, method):
    for field in _P[kind].names():
        p = _P[kind].copy()
        getattr(p, field).flat[0] = bad
        raises_naming(ValueError, f"params.{field}", mingru.forward, kind, p, _X, method=method)
        raises_naming(ValueError, f"params.{field}", mingru.predict, kind, p, _X, method=method)


def test_log_space_scan_refuses_nan_and_plus_inf_but_takes_minus_inf():
    la, lb = -np.ones((4, 2, 3)), np.zeros((4, 2, 3))
    for bad, name in ((np.nan, "log_a"), (np.inf, "log_a")):
        a = la.copy()
        a[1, 0, 0] = bad
        raises_naming(ValueError, name, mingru.log_space_scan, a, lb)
    b = lb.copy()
    b[2, 1, 2] = np.nan
    raises_naming(ValueError, "log_b", mingru.log_space_scan, la, b)
    b[2, 1, 2] = -np.inf  # a zero b_t is allowed: log 0
    assert np.isfinite(mingru.log_space_scan(la, b)).all()
    raises_naming(ValueError, "log_a", mingru.log_space_scan, la[:0], lb[:0])


@pytest.mark.parametrize("kind", mingru.KINDS)
def test_empty_batch_and_bad_labels_are_refused_not_nan(kind):
    p = _P[kind]
    raises_naming(ValueError, "X", mingru.loss_and_grads, kind, p, _X[:, :0], np.zeros(0, int))
    raises_naming(ValueError, "y", mingru.loss_and_grads, kind, p, _X, np.array([0, 7]))
    raises_naming(ValueError, "y", mingru.loss_and_grads, kind, p, _X, np.array([-1, 0]))
    raises_naming(ValueError, "y", mingru.train_classifier, kind, _X, np.array([-1, 0]), epochs=1)


def test_absurd_sizes_fail_fast():
    from helpers import raises_fast
    raises_fast(ValueError, "epochs", mingru.train_classifier, "mingru", _X, np.array([0, 1]), epochs=10**10)
    raises_fast(ValueError, "nx", mingru.init_params, "mingru", 10**10, 4)
    raises_fast(ValueError, "n_classes", mingru.init_params, "mingru", 3, 4, 10**10)
