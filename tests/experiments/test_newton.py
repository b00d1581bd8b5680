"""course_lib.experiments.newton: bad sizes, choices and huge T are named before anything is timed; good input gives
finite model speedups."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from course_lib.experiments import newton as ex_newton
from helpers import BAD_SIZE, raises_naming


# --------------------------------------------------------------------------- bad input
# a ValueError/TypeError naming the argument, or the right answer; never NaN, a hang or a crash
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(30)
@FAST
@given(BAD_SIZE)
def test_newton_sizes(bad):
    raises_naming((ValueError, TypeError), "Hs", ex_newton.model_speedups, 64, [bad], [1])
    raises_naming((ValueError, TypeError), "Ts", ex_newton.scan_drift, Ts=(bad,))
    raises_naming((ValueError, TypeError), "T", ex_newton.time_deer, T=bad)


@pytest.mark.timeout(30)
def test_newton_choices_and_huge():
    raises_naming(ValueError, "methods", ex_newton.model_speedups, 64, [4], [1], methods=("nope",))
    raises_naming(ValueError, "iters", ex_newton.model_speedups, 64, [4], [1], iters={"newton": 3})
    raises_naming(ValueError, "kind", ex_newton.scan_drift, kind="lstm")
    raises_naming(ValueError, "T", ex_newton.time_deer, T=10**13)
    raises_naming(ValueError, "Ts", ex_newton.iterations_vs_T, Ts=())
    raises_naming(ValueError, "tol", ex_newton.work_comparison, tol=float("nan"))
    p = ex_newton.scaled_gru(4, 1.0)
    X = np.zeros((4, 1, 3))
    raises_naming(ValueError, "method", ex_newton.newton_iterates, p, X, method="bisection")
    raises_naming(TypeError, "implicit", ex_newton.mgrit_forward, p, X, implicit="yes")
    raises_naming(TypeError, "method", ex_newton.mgrit_forward, p, X, method="sequential")
    out = ex_newton.model_speedups(64, [2], [1, 2], iters=3)
    assert set(out) == {"newton", "quasi"} and all(np.all(np.isfinite(v)) for v in out.values())


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (ex_newton.scaled_gru, "nh", st.one_of(NOT_SIZE, HUGE), {}),
    (ex_newton.scaled_gru, "seed", BAD_SEED, {}),
    (ex_newton.predictability, "mgrit", st.sampled_from(["yes", 2, None]), {"T": 8}),
    (ex_newton.predictability, "implicit", st.sampled_from(["yes", 2, None]), {"T": 8}),
    (ex_newton.time_deer, "repeat", BAD_REPEAT, {"T": 8}),
    (ex_newton.time_deer, "scan", st.sampled_from(["bogus", 3, None]), {"T": 8}),
    (ex_newton.scan_drift, "seed", BAD_SEED, {"Ts": (8,)}),
    (ex_newton.mingru_vs_gru, "seed", BAD_SEED, {}),
    (ex_newton.model_speedups, "Hs", BAD_SIZES.filter(lambda v: v != [10**15]), {"T": 64, "Ps": [2]}),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)
