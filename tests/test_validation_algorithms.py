"""Issue 18, algorithms layer (newton, matrix_scan, halide_rnn): public helpers check their inputs."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.algorithms import matrix_scan, newton
from helpers import raises_naming

pytestmark = pytest.mark.timeout(60)
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def f(Hprev, X):
    return np.tanh(0.5 * Hprev + X)


@FAST
@given(st.integers(1, 6), st.integers(1, 3))
def test_shift_and_residual_are_right(T, n):
    rng = np.random.default_rng(T * 10 + n)
    H, X, h0 = rng.standard_normal((T, n)), rng.standard_normal((T, n)), rng.standard_normal(n)
    Hp = newton.shift(h0, H)
    np.testing.assert_array_equal(Hp[0], h0)
    np.testing.assert_array_equal(Hp[1:], H[:-1])
    np.testing.assert_allclose(newton.residual(f, h0, X, H), H - f(Hp, X))


def test_shift_and_residual_reject_garbage():
    H = np.zeros((4, 3))
    raises_naming(ValueError, "h0", newton.shift, np.zeros(2), H)
    raises_naming(ValueError, "H", newton.shift, np.zeros(3), np.full((4, 3), np.nan))
    raises_naming(TypeError, "h0", newton.shift, np.array(["a", "b", "c"]), H)
    raises_naming(ValueError, "H", newton.shift, np.zeros(3), np.zeros((0, 3)))
    raises_naming(TypeError, "f", newton.residual, None, np.zeros(3), H, H)
    raises_naming(ValueError, "X", newton.residual, f, np.zeros(3), np.zeros((5, 3)), H)
    raises_naming(ValueError, "f", newton.residual, lambda a, b: a[:, :1], np.zeros(3), H, H)


def test_matrix_scan_rejects_non_finite():
    names = [n for n in matrix_scan.__all__ if callable(getattr(matrix_scan, n))]
    assert names
    for n in names:
        with pytest.raises((TypeError, ValueError)):
            getattr(matrix_scan, n)(None, None)


halide_rnn = pytest.importorskip("course_lib.models.halide_rnn")


def test_halide_helpers():
    raises_naming(ValueError, "T", halide_rnn.step_flops, -1, 1, 1, 1, 1)
    raises_naming(TypeError, "nh", halide_rnn.step_flops, 1, 1, 1, "2", 1)
    assert halide_rnn.step_flops(np.int64(1), 1, 1, 1, 1) == 16
    raises_naming(TypeError, "fn", halide_rnn.capture_stderr, None)
    raises_naming(TypeError, "loop_nest_text", halide_rnn.count_stages, None)
    raises_naming(ValueError, "elementwise", halide_rnn.Schedule, "x", elementwise="outside")
    raises_naming(ValueError, "tile", halide_rnn.Schedule, "x", tile=(0, 4))
    raises_naming(TypeError, "parallel", halide_rnn.Schedule, "x", parallel="yes")
    raises_naming(TypeError, "stage", halide_rnn.compile_hidden, None)
