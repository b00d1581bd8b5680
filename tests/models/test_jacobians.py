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
