"""K*(T) measurements: the definitions hold on cells whose answer is known."""
import numpy as np
import pytest

from course_lib.experiments import newton_kstar
from helpers import raises_naming


def test_mingru_is_exact_after_one_iteration_at_every_T():
    r = newton_kstar.k_star("mingru", (1, 16, 300), tol=1e-12)
    assert r["k_star"] == [1, 1, 1]


@pytest.mark.parametrize("cell", ["gru", "diag_gru"])
def test_k_star_is_where_the_error_first_drops_below_tol(cell):
    s = newton_kstar.cell_system(cell, 64)
    r = newton_kstar.k_star(cell, (64,), tol=1e-8)
    k = r["k_star"][0]
    assert k is not None and 1 < k < 64 and r["error"][0] <= 1e-8
    from course_lib.algorithms import newton
    H, _ = newton.solve(s["f"], s["jac"], s["h0"], s["inputs"], method=s["method"], jac_diag=s["jac_diag"],
                        tol=0.0, max_iter=k - 1)
    assert np.abs(H - s["reference"]).max() > 1e-8  # one fewer is not enough


def test_fixed_iterations_versus_tolerance_and_bad_input():
    r = newton_kstar.fixed_vs_tolerance("diag_gru", 128, K=3)
    assert r["fixed"]["iters"] == 3 and r["tolerance"]["error"] < 1e-10
    assert r["fixed"]["error"] >= r["tolerance"]["error"]
    raises_naming(ValueError, "cell", newton_kstar.k_star, "lstm")
    raises_naming((ValueError, TypeError), "tol", newton_kstar.k_star, "gru", tol=0.0)


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (newton_kstar.cell_system, "T", st.one_of(NOT_SIZE, HUGE), {"cell": "gru"}),
    (newton_kstar.cell_system, "dtype", st.sampled_from(["bogus", "int32", 3]), {"cell": "gru", "T": 4}),
    (newton_kstar.cell_system, "seed", BAD_SEED, {"cell": "gru", "T": 4}),
    (newton_kstar.k_star, "Ts", BAD_SIZES, {"cell": "gru"}),
    (newton_kstar.fixed_vs_tolerance, "tol", BAD_NUMBER.filter(lambda v: v is not None), {"T": 8}),
    (newton_kstar.iteration_seconds, "nhs", BAD_SIZES, {"T": 8}),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)
