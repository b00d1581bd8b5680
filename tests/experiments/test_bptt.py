"""experiments.bptt: the O(T^2) vs O(T) timing helpers return data and validate their arguments."""
import pytest

from course_lib.core.timing import Noise
from course_lib.experiments import bptt


def test_bptt_times_returns_data():
    d = bptt.bptt_times(4, 8, batch=2, repeat=1)
    assert set(d) >= {"T", "nh", "linear_s", "quadratic_s", "ratio", "flop_ratio", "noise"}
    assert d["linear_s"] > 0 and d["quadratic_s"] > 0 and isinstance(d["noise"], Noise)
    # each algorithm's own repeats, for a slope of its times over T (chapter 02's verdict judges the double loop's)
    assert set(d["times_noise"]) == {"linear", "quadratic"}
    assert all(isinstance(v, Noise) for v in d["times_noise"].values())
    assert d["median_s"]["linear"] >= d["linear_s"] and d["median_s"]["quadratic"] >= d["quadratic_s"]
    assert d["flop_ratio"] > 1
    with pytest.raises(ValueError, match="T"):
        bptt.bptt_times(0, 8)
    with pytest.raises(ValueError, match="nh"):
        bptt.bptt_times(4, 10**6)


def test_scaling_and_slopes_from_synthetic_rows():
    rows = [{"T": T, "linear_s": 1e-3 + 1e-4 * T, "quadratic_s": 1e-3 + 1e-5 * T * T} for T in (10, 100, 1000)]
    s = bptt.fit_slopes(rows, t_min=100)
    assert s["points"] == 2 and 0.9 < s["linear"] < 1.0 and 1.8 < s["quadratic"] < 2.0
    with pytest.raises(ValueError, match="t_min"):
        bptt.fit_slopes(rows, t_min=5000)
    with pytest.raises(ValueError, match="Ts"):
        bptt.scaling([8, 4], 8)
    rows = bptt.scaling([2, 4], 4, batch=2, repeat=1)
    assert [r["T"] for r in rows] == [2, 4]


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (bptt.bptt_times, "T", st.one_of(NOT_SIZE, HUGE), {"nh": 4}),
    (bptt.bptt_times, "nh", st.one_of(NOT_SIZE, HUGE), {"T": 4}),
    (bptt.bptt_times, "seed", BAD_SEED, {"T": 4, "nh": 4}),
    (bptt.scaling, "Ts", BAD_SIZES, {"nh": 4}),
    (bptt.scaling, "nh", st.one_of(NOT_SIZE, HUGE), {"Ts": [2, 4]}),
    (bptt.scaling, "repeat", BAD_REPEAT, {"Ts": [2, 4], "nh": 4}),
    (bptt.fit_slopes, "rows", st.sampled_from([None, 3, "rows", [{"T": 2}], [{"T": 0, "linear_s": 1.0,
                                                 "quadratic_s": 1.0}], [{"T": 2, "linear_s": -1.0, "quadratic_s": 1.0}]]),
     {}),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)
