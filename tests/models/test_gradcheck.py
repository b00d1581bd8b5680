"""course_lib.models.gradcheck: central differences."""
import numpy as np
import pytest

from course_lib.models import gradcheck, rnn
from helpers import raises_naming


def test_numerical_gradient_of_known_functions():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((3, 4))
    np.testing.assert_allclose(gradcheck.numerical_gradient(lambda A: float((A ** 2).sum()), W), 2 * W, rtol=1e-7)
    np.testing.assert_allclose(gradcheck.numerical_gradient(lambda A: float(np.sin(A).sum()), W), np.cos(W),
                               rtol=1e-6, atol=1e-9)


def test_w_is_restored_even_if_f_raises():
    W = np.arange(6, dtype=np.float64).reshape(2, 3)
    before = W.copy()
    gradcheck.numerical_gradient(lambda A: float(A.sum()), W)
    np.testing.assert_array_equal(W, before)

    def boom(A):
        raise RuntimeError("x")

    with pytest.raises(RuntimeError):
        gradcheck.numerical_gradient(boom, W)
    np.testing.assert_array_equal(W, before)


def test_rnn_numerical_gradients_agree_with_bptt():
    p = rnn.init_params(3, 4, 2, seed=0)  # float32 params are promoted to float64
    rng = np.random.default_rng(0)
    X, Y = rng.uniform(-1, 1, (4, 2, 3)), rng.uniform(-1, 1, (4, 2, 2))
    num = gradcheck.rnn_numerical_gradients(p, X, Y)
    assert num.Whh.dtype == np.float64
    ana = rnn.bptt_linear(p.astype(np.float64), X, Y)
    assert max(gradcheck.gradient_errors(ana, num).values()) < 1e-7


def test_relative_error():
    assert gradcheck.relative_error(np.ones(3), np.ones(3)) == 0.0
    assert gradcheck.relative_error(np.array([1.0, 2.0]), np.array([1.0, 1.0])) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="same shape"):
        gradcheck.relative_error(np.ones(3), np.ones(4))


def test_bad_input():
    with pytest.raises(TypeError, match="W: expected a float64"):
        gradcheck.numerical_gradient(lambda A: 0.0, np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="f: expected a callable"):
        gradcheck.numerical_gradient(3, np.zeros(3))
    with pytest.raises(ValueError, match="eps"):
        gradcheck.numerical_gradient(lambda A: 0.0, np.zeros(3), eps=0.0)
    with pytest.raises(ValueError, match="X: expected shape"):
        gradcheck.rnn_numerical_gradients(rnn.init_params(3, 4, 2), np.zeros((2, 1, 5)), np.zeros((2, 1, 2)))


# --------------------------------------------------------------------------- bad input
# a ValueError/TypeError naming the argument, or the right answer; never NaN, a hang or a crash
@pytest.mark.timeout(30)
def test_gradcheck_rejects_garbage():
    raises_naming(TypeError, "a", gradcheck.relative_error, None, None)         # used to return NaN
    raises_naming(ValueError, "b", gradcheck.relative_error, np.zeros(2), np.array([0, np.nan]))
    raises_naming(TypeError, "f", gradcheck.numerical_gradient, None, np.zeros(2))
    raises_naming(TypeError, "params", gradcheck.rnn_numerical_gradients, None, None, None)
    raises_naming(TypeError, "analytic", gradcheck.gradient_errors, None, None)
    assert gradcheck.relative_error([1, 2], [1, 2]) == 0.0
