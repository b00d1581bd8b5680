"""course_lib.algorithms.activations: the scalar fast_tanh/fast_sigmoid and the array sigmoid are right and name
bad input."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.algorithms import activations
from helpers import raises_naming


# --------------------------------------------------------------------------- bad input
# a ValueError/TypeError naming the argument, or the right answer; never NaN, a hang or a crash
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(30)
@FAST
@given(st.one_of(st.just("x"), st.just(None), st.just(True), st.just([1.0])))
def test_activation_scalars(bad):
    raises_naming(TypeError, "x", activations.fast_tanh, bad)
    raises_naming(TypeError, "x", activations.fast_sigmoid, bad)


@pytest.mark.timeout(30)
@FAST
@given(st.floats(allow_nan=False))
def test_activation_values_correct(x):
    assert activations.fast_tanh(x) == math.tanh(x)
    s = activations.fast_sigmoid(x)
    assert 0.0 <= s <= 1.0
    assert np.isclose(activations.sigmoid(np.array([x]))[0], s)


@pytest.mark.timeout(30)
def test_activation_nan_and_kinds():
    raises_naming(ValueError, "x", activations.fast_tanh, float("nan"))
    raises_naming(TypeError, "z", activations.sigmoid, np.array(["a"]))
    raises_naming(TypeError, "z", activations.sigmoid, None)
    assert activations.sigmoid(np.array([-np.inf, 0, np.inf])).tolist() == [0.0, 0.5, 1.0]
