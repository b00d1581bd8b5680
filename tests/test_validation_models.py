"""Issue 18, models layer (rnn, gradcheck, softmax_rnn, charlm, jacobians, mingru): bad input is a
ValueError/TypeError naming the argument, or a correct result; never NaN, a hang or a huge allocation."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.data.corpus import Vocab
from course_lib.models import charlm, gradcheck, jacobians, mingru, rnn, softmax_rnn as srnn
from helpers import raises_naming

pytestmark = pytest.mark.timeout(30)
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BAD_SIZES = st.one_of(st.integers(max_value=0), st.booleans(), st.floats(), st.text(max_size=3), st.none(),
                      st.just("3"), st.just(3.0))


# --------------------------------------------------------------------------- rnn counters (issue bullet 3, 5)
def test_forward_flops_regressions():
    raises_naming(ValueError, "T", rnn.forward_flops, -1, 2, 3, 4, 5)      # used to return -144
    raises_naming(TypeError, "batch", rnn.forward_flops, 1, "3", 3, 4, 5)      # used to return a string
    assert rnn.forward_flops(np.int64(2), 3, 4, 5, 6) == 2 * 2 * 3 * (4 * 5 + 25 + 30)


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


@FAST
@given(st.integers(1, 60), st.integers(0, 70))
def test_bptt_flops_truncated_matches_the_sum(T, tr):
    walk = sum(min(t + 1, tr + 1) for t in range(T))
    fwd = rnn.forward_flops(T, 2, 3, 4, 5)
    assert rnn.bptt_flops(T, 2, 3, 4, 5, "quadratic", tr) == fwd + T * 2 * 2 * (2 * 4 * 5) + walk * 2 * 2 * (2 * 16 + 12)


def test_output_error_checks_its_inputs():
    Y = np.zeros((2, 3, 4))
    raises_naming(ValueError, "Y", rnn.output_error, Y, np.zeros((2, 3, 5)))
    raises_naming(ValueError, "Yhat", rnn.output_error, np.full((2, 3, 4), np.nan), Y)
    raises_naming(TypeError, "Y", rnn.output_error, Y, np.zeros((2, 3, 4), np.int64))
    raises_naming(TypeError, "Yhat", rnn.output_error, None, Y)
    np.testing.assert_allclose(rnn.output_error(np.full((1, 1, 1), 0.5), np.zeros((1, 1, 1))), [[[0.75]]])


@FAST
@given(st.one_of(st.just(np.inf), st.just(-np.inf), st.just(np.nan)), st.sampled_from(["X", "Y", "h0"]))
def test_rnn_entry_points_reject_non_finite(bad, which):
    p = rnn.init_params(3, 4, 2, seed=0)
    args = dict(X=np.zeros((3, 2, 3), np.float32), Y=np.zeros((3, 2, 2), np.float32), h0=np.zeros((2, 4), np.float32))
    args[which][0, 0] = bad
    raises_naming(ValueError, which, rnn.bptt_linear, p, args["X"], args["Y"], args["h0"])


def test_rnn_init_and_astype():
    raises_naming(ValueError, "nh", rnn.init_params, 3, 10**6, 2)          # 8 TB of weights: refused first
    raises_naming(TypeError, "dtype", rnn.init_params, 3, 4, 2, dtype=np.int32)
    raises_naming(TypeError, "dtype", rnn.init_params(2, 2, 2).astype, "int8")


# --------------------------------------------------------------------------- gradcheck
def test_gradcheck_rejects_garbage():
    raises_naming(TypeError, "a", gradcheck.relative_error, None, None)         # used to return NaN
    raises_naming(ValueError, "b", gradcheck.relative_error, np.zeros(2), np.array([0, np.nan]))
    raises_naming(TypeError, "f", gradcheck.numerical_gradient, None, np.zeros(2))
    raises_naming(TypeError, "params", gradcheck.rnn_numerical_gradients, None, None, None)
    raises_naming(TypeError, "analytic", gradcheck.gradient_errors, None, None)
    assert gradcheck.relative_error([1, 2], [1, 2]) == 0.0


# --------------------------------------------------------------------------- softmax RNN / cell_step
@pytest.fixture(scope="module")
def params():
    return srnn.init_params(5, 4, 5, layers=2, seed=0)


def test_cell_step_checks(params):
    L = params.layers[0]
    x, h = np.zeros((3, 5), np.float32), np.zeros((3, 4), np.float32)
    assert srnn.cell_step(L, x, h).shape == (3, 4)
    raises_naming(TypeError, "layer", srnn.cell_step, "L", x, h)
    raises_naming(ValueError, "x", srnn.cell_step, L, np.zeros((3, 6), np.float32), h)
    raises_naming(ValueError, "h", srnn.cell_step, L, x, np.zeros((2, 4), np.float32))
    raises_naming(ValueError, "x", srnn.cell_step, L, np.full((3, 5), np.inf, np.float32), h)
    raises_naming(TypeError, "h", srnn.cell_step, L, x, h.astype(np.float64))


def test_step_softmax_output_probs_from_arrays(params):
    h = [np.zeros(4, np.float32) for _ in range(2)]
    assert srnn.step(params, np.zeros(5, np.float32), h).shape == (5,)
    raises_naming(ValueError, "x", srnn.step, params, np.zeros(4, np.float32), h)
    raises_naming(TypeError, "h", srnn.step, params, np.zeros(5, np.float32), h[:1])
    raises_naming(ValueError, "o", srnn.softmax, np.zeros(0))
    raises_naming(ValueError, "axis", srnn.softmax, np.zeros((2, 3)), axis=2)
    raises_naming(ValueError, "h", srnn.output_probs, params, np.zeros((2, 3), np.float32))
    raises_naming(ValueError, "arrays", srnn.SoftmaxRNNParams.from_arrays, {"layers.0.U": np.zeros((2, 2))})
    raises_naming(TypeError, "arrays", srnn.SoftmaxRNNParams.from_arrays, [1, 2])
    back = srnn.SoftmaxRNNParams.from_arrays(dict(zip(params.names(), params.arrays())))
    np.testing.assert_array_equal(back.V, params.V)


@FAST
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=8))
def test_softmax_is_a_distribution(vals):
    p = srnn.softmax(np.array(vals))
    assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)


# --------------------------------------------------------------------------- charlm.sample (issue bullet 5)
@pytest.mark.timeout(5)
def test_sample_with_huge_n_is_refused_at_once():
    vocab = Vocab("abcde")
    p = srnn.init_params(5, 4, 5, seed=0)
    raises_naming(ValueError, "n", charlm.sample, p, vocab, "a", 10**10)
    raises_naming(TypeError, "n", charlm.sample, p, vocab, "a", "10")
    raises_naming(TypeError, "prime", charlm.sample, p, vocab, 3)
    raises_naming(ValueError, "temperature", charlm.sample, p, vocab, "a", 5, temperature=1e-310)
    raises_naming(ValueError, "text", charlm.sample, p, vocab, "z", 5)
    out = charlm.sample(p, vocab, "ab", 7, seed=np.int64(1))
    assert len(out) == 7 and set(out) <= set("abcde")


# --------------------------------------------------------------------------- jacobians, mingru
def test_jacobian_helpers():
    W = np.eye(3)
    H = np.zeros((4, 2, 3))
    assert jacobians.elman_step(W, H, H).shape == H.shape
    raises_naming(ValueError, "Hprev", jacobians.elman_step, np.eye(2), H, H)     # H bound by Whh first
    raises_naming(ValueError, "Whh", jacobians.elman_step, np.ones((3, 2)), H, H)
    raises_naming(ValueError, "XW", jacobians.elman_step, W, H, np.zeros((4, 2, 2)))
    raises_naming(ValueError, "Hprev", jacobians.elman_step, W, np.full((4, 2, 3), np.nan), H)
    raises_naming(TypeError, "step", jacobians.finite_difference_jacobian, None, H)
    raises_naming(ValueError, "eps", jacobians.finite_difference_jacobian, np.tanh, H, eps=0.0)
    J = jacobians.finite_difference_jacobian(np.tanh, np.zeros(3))
    np.testing.assert_allclose(J, np.eye(3), atol=1e-8)


@FAST
@given(st.lists(st.floats(-10, 30), min_size=1, max_size=6), st.floats(-1e6, -10))
def test_g_and_log_g_agree_and_stay_finite(vals, very_negative):
    x = np.array(vals)
    np.testing.assert_allclose(mingru.log_g(x), np.log(mingru.g(x)), rtol=1e-6, atol=1e-12)
    assert np.isfinite(mingru.log_g(np.array([very_negative]))).all()   # where log(g) would be -inf


def test_g_rejects_garbage():
    raises_naming(ValueError, "x", mingru.g, np.array([np.nan]))
    raises_naming(TypeError, "x", mingru.log_g, np.array([1, 2]))
    raises_naming(TypeError, "x", mingru.g, None)
