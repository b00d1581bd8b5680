"""course_lib.models.jacobians: the Elman step and the finite-difference Jacobian check their inputs and are right."""
import numpy as np
import pytest

from course_lib.models import jacobians
from helpers import raises_naming


# --------------------------------------------------------------------------- bad input
# a ValueError/TypeError naming the argument, or the right answer; never NaN, a hang or a crash
@pytest.mark.timeout(30)
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


# ---- issue 29: the GRU/Elman steps and Jacobians check the states (NaN/inf, shapes, dtypes) -----------------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from course_lib.models import gru  # noqa: E402

_GP = gru.init_params(3, 4, dtype=np.float64, seed=0)
_HP = np.random.default_rng(1).standard_normal((5, 2, 4)) * 0.5
_GI = gru.input_projection(_GP, np.random.default_rng(2).standard_normal((5, 2, 3)))
_FNS = [lambda p, H, G: jacobians.gru_step(p, H, G), lambda p, H, G: jacobians.gru_gates(p, H, G),
        lambda p, H, G: jacobians.gru_jacobian(p, H, G), lambda p, H, G: jacobians.gru_jacobian(p, H, G, diagonal=True)]


@pytest.mark.parametrize("fn", range(len(_FNS)))
@given(data=st.data())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_gru_functions_bad_states_clear_error_or_correct(fn, data):
    from helpers import bad_array, clear_error_or
    which = data.draw(st.sampled_from(["Hprev", "GI"]))
    what, bad = data.draw(bad_array(_HP if which == "Hprev" else _GI))
    args = (_GP, bad, _GI) if which == "Hprev" else (_GP, _HP, bad)
    out = clear_error_or(which, lambda: _FNS[fn](*args))
    if out is not None:  # accepted: an exact re-typing or an empty time axis; then the float64 answer
        ref = _FNS[fn](_GP, *(np.asarray(a, float) for a in args[1:]))
        for o, r in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
            np.testing.assert_allclose(o, r)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_states_refused(bad):
    for name in ("Hprev", "GI"):
        H, G = _HP.copy(), _GI.copy()
        (H if name == "Hprev" else G)[3, 1, 2] = bad
        for fn in _FNS:
            raises_naming(ValueError, name, fn, _GP, H, G)
        XW = np.zeros_like(_HP)
        XW_bad = XW if name == "Hprev" else np.where(np.isfinite(G[..., :4]), XW, bad)
        raises_naming(ValueError, name if name == "Hprev" else "XW", jacobians.elman_jacobian, np.eye(4),
                      H if name == "Hprev" else _HP, XW_bad)


def test_elman_jacobian_checks_shapes_and_unchecked_twins_pass_nan_through():
    raises_naming(ValueError, "XW", jacobians.elman_jacobian, np.eye(4), _HP, _HP[..., :3])
    raises_naming(ValueError, "Hprev", jacobians.elman_jacobian, np.eye(4), _HP[..., :3], _HP[..., :3])
    H = _HP.copy()
    H[0, 0, 0] = np.nan
    assert np.isnan(jacobians.gru_step_unchecked(_GP, H, _GI)).any()  # a solver's inner loop sees NaN
    assert np.isnan(jacobians.elman_jacobian_unchecked(np.eye(4), H, H)).any()
