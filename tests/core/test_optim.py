import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.core.optim import Adam
from helpers import raises_naming


def test_adam_matches_the_textbook_update_and_updates_in_place():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 2))
    w_ref = w.copy()
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    opt = Adam([w], 0.1)
    for t in range(1, 6):
        g = rng.standard_normal((3, 2))
        opt.step([g])
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w_ref -= 0.1 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    np.testing.assert_allclose(w, w_ref, rtol=1e-12)
    assert opt.params[0] is w


def test_adam_minimises_a_quadratic_and_clips():
    w = np.array([5.0, -3.0])
    opt = Adam([w], 0.1, clip=1.0)
    for _ in range(500):
        norm = opt.step([2 * w])
    assert np.all(np.abs(w) < 1e-2) and norm < 0.1


def test_adam_bad_input():
    w = np.zeros(3)
    with pytest.raises(TypeError, match="params: expected a non-empty list of numpy arrays"):
        Adam([], 0.1)
    with pytest.raises(ValueError, match="lr: expected a number > 0"):
        Adam([w], 0.0)
    opt = Adam([w], 0.1)
    with pytest.raises(ValueError, match="grads: expected 1 arrays"):
        opt.step([w, w])
    with pytest.raises(ValueError, match=r"grads\[0\]: expected shape \(3,\), got \(4,\)"):
        opt.step([np.zeros(4)])
    with pytest.raises(FloatingPointError, match="gradients are not finite .* smaller learning rate"):
        opt.step([np.array([np.nan, 0, 0])])
    assert np.all(w == 0), "a failed step must not touch the weights"


# --------------------------------------------------------------------------- bad input
# a ValueError/TypeError naming the argument, or the right answer; never NaN, a hang or a crash
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kw, name", [({"b1": 1.0}, "b1"), ({"b2": 1.0}, "b2"), ({"b1": -0.1}, "b1"),
                                      ({"b1": True}, "b1"), ({"eps": 0.0}, "eps"), ({"clip": -1.0}, "clip")])
def test_adam_rejects_settings_that_give_nan_weights(kw, name):
    raises_naming((ValueError, TypeError), name, Adam, [np.zeros(3)], 0.1, **kw)


@pytest.mark.timeout(30)
def test_adam_rejects_bad_params_and_grads():
    raises_naming(TypeError, "lr", Adam, [np.zeros(3)], None)
    raises_naming(TypeError, "params[0]", Adam, [np.zeros(3, np.int64)], 0.1)
    raises_naming(ValueError, "params[0]", Adam, [np.array([np.nan])], 0.1)
    opt = Adam([np.zeros(3)], 0.1)
    raises_naming(TypeError, "grads", opt.step, np.zeros(3))
    raises_naming(ValueError, "grads[0]", opt.step, [np.zeros(4)])
    raises_naming(TypeError, "grads[0]", opt.step, [np.array(["a", "b", "c"])])


@pytest.mark.timeout(30)
@FAST
@given(b1=st.floats(0, 0.999), b2=st.floats(0, 0.999), lr=st.floats(1e-6, 1.0))
def test_adam_valid_settings_never_make_nan(b1, b2, lr):
    w = np.ones(4)
    opt = Adam([w], lr, b1=b1, b2=b2)
    for _ in range(3):
        opt.step([np.full(4, 0.5)])
    assert np.all(np.isfinite(w))
