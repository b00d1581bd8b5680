"""course_lib.models.rnn: forward, loss, both BPTT algorithms vs numerical gradients, training, bad input."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.models import gradcheck, rnn
from helpers import raises_naming

SHAPES = [(1, 1, 2, 3, 2), (3, 2, 3, 4, 2), (6, 3, 4, 5, 3), (9, 2, 5, 3, 4)]


def problem(T, B, nx, nh, ny, dtype=np.float64, seed=0, h0=True):
    rng = np.random.default_rng(seed)
    p = rnn.init_params(nx, nh, ny, seed=seed + 1, dtype=dtype)
    X = rng.uniform(-1, 1, (T, B, nx)).astype(dtype)
    Y = rng.uniform(-1, 1, (T, B, ny)).astype(dtype)
    h = rng.uniform(-0.5, 0.5, (B, nh)).astype(dtype) if h0 else None
    return p, X, Y, h


def test_init_params_shapes_scale_and_seed():
    p = rnn.init_params(300, 200, 100, seed=3)
    assert (p.Wxh.shape, p.Whh.shape, p.Why.shape) == ((300, 200), (200, 200), (200, 100))
    assert p.dtype == np.float32 and (p.nx, p.nh, p.ny) == (300, 200, 100)
    assert abs(p.Wxh.std() - 1 / np.sqrt(300)) < 0.1 / np.sqrt(300)
    assert abs(p.Whh.std() - 1 / np.sqrt(200)) < 0.1 / np.sqrt(200)
    q = rnn.init_params(300, 200, 100, seed=3)
    assert np.array_equal(p.Whh, q.Whh)
    assert not np.array_equal(p.Whh, rnn.init_params(300, 200, 100, seed=4).Whh)
    assert rnn.init_params(2, 3, 4, dtype=np.float64).dtype == np.float64


def test_forward_matches_step_loop():
    p, X, _, h0 = problem(5, 3, 4, 6, 2)
    c = rnn.forward(p, X, h0)
    h = h0
    for t in range(5):
        h = np.tanh(X[t] @ p.Wxh + h @ p.Whh)
        np.testing.assert_allclose(c.H[t], h, rtol=1e-12)
        np.testing.assert_allclose(c.Yhat[t], np.tanh(h @ p.Why), rtol=1e-12)
        np.testing.assert_allclose(rnn.forward_step(X[t], c.H_prev[t], p.Wxh, p.Whh), c.H[t], rtol=1e-12)
    assert c.H.shape == (5, 3, 6) and c.Yhat.shape == (5, 3, 2)
    np.testing.assert_array_equal(c.H_prev[0], h0)
    # default h0 = zeros
    np.testing.assert_allclose(rnn.forward(p, X).H, rnn.forward(p, X, np.zeros_like(h0)).H)


def test_loss_is_sum_of_squares():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 2, 4)), rng.standard_normal((3, 2, 4))
    assert rnn.loss(a, b) == pytest.approx(float(((a - b) ** 2).sum()))
    assert rnn.loss(a, a) == 0.0


@pytest.mark.parametrize("shape", SHAPES)
def test_both_bptt_match_numerical_gradient(shape):
    p, X, Y, h0 = problem(*shape)
    num = gradcheck.rnn_numerical_gradients(p, X, Y, h0)
    for fn in (rnn.bptt_linear, rnn.bptt_quadratic):
        errs = gradcheck.gradient_errors(fn(p, X, Y, h0), num)
        assert max(errs.values()) < 1e-7, (fn.__name__, errs)


@pytest.mark.parametrize("shape", SHAPES)
def test_linear_equals_quadratic_in_float32(shape):
    p, X, Y, h0 = problem(*shape, dtype=np.float32)
    a, b = rnn.bptt_linear(p, X, Y, h0), rnn.bptt_quadratic(p, X, Y, h0)
    for name in ("Wxh", "Whh", "Why"):
        assert getattr(a, name).dtype == np.float32
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-4, atol=1e-5)


def test_truncation():
    p, X, Y, h0 = problem(7, 2, 3, 4, 2)
    exact = rnn.bptt_linear(p, X, Y, h0)
    full = rnn.bptt_quadratic(p, X, Y, h0, truncate=6)
    assert max(gradcheck.gradient_errors(full, exact).values()) < 1e-12
    t0 = rnn.bptt_quadratic(p, X, Y, h0, truncate=0)
    np.testing.assert_allclose(t0.Why, exact.Why)            # Why needs no walk
    assert gradcheck.relative_error(t0.Whh, exact.Whh) > 1e-3  # the others do
    errs = [gradcheck.relative_error(rnn.bptt_quadratic(p, X, Y, h0, truncate=k).Wxh, exact.Wxh) for k in range(7)]
    assert errs[-1] < 1e-12 and errs[0] > errs[3]


def test_bptt_flops_counts():
    # the ratios quoted in the course design: 2.6x at T=10, ~10x at T=50 for square layers
    r10 = rnn.bptt_flops(10, 1000, 1000, 1000, 1000, "quadratic") / rnn.bptt_flops(10, 1000, 1000, 1000, 1000)
    assert r10 == pytest.approx(2.6875)
    assert rnn.bptt_flops(5, 2, 3, 4, 5, "quadratic", truncate=None) == rnn.bptt_flops(5, 2, 3, 4, 5, "quadratic", truncate=4)
    assert rnn.bptt_flops(1, 1, 1, 1, 1) == 2 * 3 + 2 * 2 + 2 * 3
    with pytest.raises(ValueError, match="method"):
        rnn.bptt_flops(1, 1, 1, 1, 1, "cubic")


def test_sgd_step():
    p, X, Y, _ = problem(3, 2, 3, 4, 2)
    g = rnn.bptt_linear(p, X, Y)
    q = rnn.sgd_step(p, g, 0.1)
    np.testing.assert_allclose(q.Whh, p.Whh - 0.1 * g.Whh)
    assert q.Whh is not p.Whh
    with pytest.raises(ValueError, match="lr"):
        rnn.sgd_step(p, g, -1.0)
    with pytest.raises(ValueError, match="grads.Whh"):
        rnn.sgd_step(p, rnn.RNNParams(g.Wxh, g.Whh[:1], g.Why), 0.1)


def test_train_reduces_loss_and_is_reproducible():
    rng = np.random.default_rng(0)
    p = rnn.init_params(4, 8, 4, seed=0)
    X = rng.uniform(0, 1, (5, 16, 4)).astype(np.float32)
    Y = np.roll(X, 1, axis=2) * 0.8
    res = rnn.train(p, X, Y, epochs=30, lr=0.05, batch=4, seed=0, progress=False)
    assert len(res.history["loss"]) == 31 and len(res.history["step_loss"]) == 30 * 4
    assert res.history["loss"][-1] < 0.5 * res.history["loss"][0] and res.seconds > 0
    params, history = rnn.train(p, X, Y, epochs=30, lr=0.05, batch=4, seed=0, progress=False)
    np.testing.assert_array_equal(params.Whh, res.params.Whh)
    assert history == res.history
    np.testing.assert_array_equal(p.Whh, rnn.init_params(4, 8, 4, seed=0).Whh)  # input untouched


def test_train_progress_bar(capsys):
    p = rnn.init_params(2, 3, 2, seed=0)
    X = np.zeros((2, 4, 2), np.float32)
    rnn.train(p, X, X, epochs=1, lr=0.01, batch=2, seed=0, progress=True)
    assert "training" in capsys.readouterr().err


def test_train_explodes_with_clear_message():
    rng = np.random.default_rng(1)
    p = rnn.init_params(16, 16, 16, seed=0)
    X = rng.uniform(0, 1, (4, 8, 16)).astype(np.float32)
    with pytest.raises(rnn.TrainingDiverged, match="smaller learning rate"):
        rnn.train(p, X, X, epochs=5, lr=50.0, batch=4, seed=0, progress=False)


# --------------------------------------------------------------------------- bad input
def test_bad_shapes_and_dtypes():
    p, X, Y, h0 = problem(3, 2, 3, 4, 2, dtype=np.float32)
    with pytest.raises(ValueError, match=r"X: expected shape"):
        rnn.forward(p, X[:, :, :2])
    with pytest.raises(ValueError, match=r"Y: expected shape"):
        rnn.bptt_linear(p, X, Y[:2])
    with pytest.raises(ValueError, match=r"Y: expected shape"):
        rnn.bptt_quadratic(p, X, Y[:, :, :1])
    with pytest.raises(ValueError, match=r"h0: expected shape"):
        rnn.forward(p, X, h0[:, :3])
    with pytest.raises(ValueError, match=r"T \(axis 0\) must be >= 1"):
        rnn.forward(p, X[:0])
    with pytest.raises(ValueError, match=r"X: expected dtype float32"):
        rnn.forward(p, X.astype(np.float64))
    with pytest.raises(ValueError, match=r"h0: expected dtype float32"):
        rnn.bptt_linear(p, X, Y, h0.astype(np.float64))
    with pytest.raises(TypeError, match="X: expected a float32 or float64"):
        rnn.forward(p, X.astype(np.int64))
    with pytest.raises(TypeError, match="params: expected an RNNParams"):
        rnn.forward({"Wxh": p.Wxh}, X)
    with pytest.raises(ValueError, match="params.Whh"):
        rnn.forward(rnn.RNNParams(p.Wxh, p.Whh[:, :3], p.Why), X)
    with pytest.raises(ValueError, match="truncate"):
        rnn.bptt_quadratic(p, X, Y, truncate=-1)


def test_non_finite_inputs():
    p, X, Y, _ = problem(3, 2, 3, 4, 2, dtype=np.float32)
    X[1, 0, 2] = np.nan
    with pytest.raises(ValueError, match=r"X: contains 1 non-finite value.*\(1, 0, 2\)"):
        rnn.bptt_linear(p, X, Y)
    Y[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="Y: contains"):
        rnn.bptt_quadratic(p, np.zeros_like(X), Y)


def test_other_bad_arguments():
    with pytest.raises(ValueError, match="nh"):
        rnn.init_params(2, 0, 2)
    with pytest.raises(TypeError, match="dtype"):
        rnn.init_params(2, 2, 2, dtype=np.int32)
    with pytest.raises(ValueError, match="Y: expected the same shape as Yhat"):
        rnn.loss(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="x_t"):
        rnn.forward_step(np.zeros((2, 5)), np.zeros((2, 4)), np.zeros((3, 4)), np.zeros((4, 4)))
    p, X, Y, _ = problem(3, 4, 3, 4, 2, dtype=np.float32)
    with pytest.raises(ValueError, match="batch"):
        rnn.train(p, X, Y, epochs=1, lr=0.1, batch=5, seed=0, progress=False)
    with pytest.raises(ValueError, match="lr"):
        rnn.train(p, X, Y, epochs=1, lr=float("nan"), batch=2, seed=0, progress=False)


# --------------------------------------------------------------------------- bad input
# flop counters, output_error, entry points, init
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


BAD_SIZES = st.one_of(st.integers(max_value=0), st.booleans(), st.floats(), st.text(max_size=3), st.none(),
                      st.just("3"), st.just(3.0))


@pytest.mark.timeout(30)
def test_forward_flops_regressions():
    raises_naming(ValueError, "T", rnn.forward_flops, -1, 2, 3, 4, 5)      # used to return -144
    raises_naming(TypeError, "batch", rnn.forward_flops, 1, "3", 3, 4, 5)      # used to return a string
    assert rnn.forward_flops(np.int64(2), 3, 4, 5, 6) == 2 * 2 * 3 * (4 * 5 + 25 + 30)


@pytest.mark.timeout(30)
@FAST
@given(BAD_SIZES, st.sampled_from(["T", "batch", "nx", "nh", "ny"]))
def test_flop_counters_reject_bad_sizes(bad, which):
    args = dict(T=3, batch=2, nx=4, nh=5, ny=6)
    args[which] = bad
    raises_naming((TypeError, ValueError), which, rnn.forward_flops, **args)
    raises_naming((TypeError, ValueError), which, rnn.bptt_flops, **args)


@pytest.mark.timeout(5)
def test_bptt_flops_huge_T_is_closed_form_not_a_loop():
    n = rnn.bptt_flops(10**10, 1, 1, 1, 1, method="quadratic", truncate=10**9)
    assert isinstance(n, int) and n > 0


@pytest.mark.timeout(30)
@FAST
@given(st.integers(1, 60), st.integers(0, 70))
def test_bptt_flops_truncated_matches_the_sum(T, tr):
    walk = sum(min(t + 1, tr + 1) for t in range(T))
    fwd = rnn.forward_flops(T, 2, 3, 4, 5)
    assert rnn.bptt_flops(T, 2, 3, 4, 5, "quadratic", tr) == fwd + T * 2 * 2 * (2 * 4 * 5) + walk * 2 * 2 * (2 * 16 + 12)


@pytest.mark.timeout(30)
def test_output_error_checks_its_inputs():
    Y = np.zeros((2, 3, 4))
    raises_naming(ValueError, "Y", rnn.output_error, Y, np.zeros((2, 3, 5)))
    raises_naming(ValueError, "Yhat", rnn.output_error, np.full((2, 3, 4), np.nan), Y)
    raises_naming(TypeError, "Y", rnn.output_error, Y, np.zeros((2, 3, 4), np.int64))
    raises_naming(TypeError, "Yhat", rnn.output_error, None, Y)
    np.testing.assert_allclose(rnn.output_error(np.full((1, 1, 1), 0.5), np.zeros((1, 1, 1))), [[[0.75]]])


@pytest.mark.timeout(30)
@FAST
@given(st.one_of(st.just(np.inf), st.just(-np.inf), st.just(np.nan)), st.sampled_from(["X", "Y", "h0"]))
def test_rnn_entry_points_reject_non_finite(bad, which):
    p = rnn.init_params(3, 4, 2, seed=0)
    args = dict(X=np.zeros((3, 2, 3), np.float32), Y=np.zeros((3, 2, 2), np.float32), h0=np.zeros((2, 4), np.float32))
    args[which][0, 0] = bad
    raises_naming(ValueError, which, rnn.bptt_linear, p, args["X"], args["Y"], args["h0"])


@pytest.mark.timeout(30)
def test_rnn_init_and_astype():
    raises_naming(ValueError, "nh", rnn.init_params, 3, 10**6, 2)          # 8 TB of weights: refused first
    raises_naming(TypeError, "dtype", rnn.init_params, 3, 4, 2, dtype=np.int32)
    raises_naming(TypeError, "dtype", rnn.init_params(2, 2, 2).astype, "int8")
