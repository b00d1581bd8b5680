"""The MGRIT bias monitor: the gap is zero when MGRIT is exact, the switch happens where the cosine falls."""
import numpy as np

from course_lib.data import activity
from course_lib.experiments import mgrit_bias
from course_lib.models import gru
from helpers import raises_naming


def _data(T=16):
    Xtr, ytr, Xte, yte = activity.train_test(64, 32, T, seed=0, noise=0.3)
    return Xtr.astype(np.float64), ytr, Xte.astype(np.float64), yte


def test_gap_vanishes_when_mgrit_runs_to_convergence_and_not_with_one_iteration():
    Xtr, ytr, _, _ = _data()
    p = gru.init_classifier(Xtr.shape[2], 8, 4, seed=0, dtype=np.float64)
    exact = mgrit_bias.gradient_gap(p, Xtr[:, :16], ytr[:16], m=4, levels=2, relax="FCF", max_iter=20, tol=1e-13)
    assert exact["cosine"] > 1 - 1e-9 and exact["norm_gap"] < 1e-6
    one = mgrit_bias.gradient_gap(p, Xtr[:, :16], ytr[:16], m=4, levels=2, relax="FCF", max_iter=1, tol=0.0)
    assert one["norm_gap"] > 1e-3


def test_modes_use_what_they_say_and_monitor_switches_below_threshold():
    data = _data()
    ex = mgrit_bias.train_monitored(data, mode="exact", epochs=2, probe=16)
    assert all(r["used"] == "exact" for r in ex["epochs"]) and ex["switched_at"] is None
    inx = mgrit_bias.train_monitored(data, mode="inexact", epochs=2, probe=16)
    assert all(r["used"] == "mgrit" for r in inx["epochs"])
    mon = mgrit_bias.train_monitored(data, mode="monitor", threshold=1.0, epochs=2, probe=16)
    assert mon["switched_at"] == 0 and mon["epochs"][0]["cosine"] < 1.0
    assert mon["accuracy"] == ex["accuracy"]  # switched before the first step: the exact run, step for step
    never = mgrit_bias.train_monitored(data, mode="monitor", threshold=-1.0, epochs=2, probe=16)
    assert never["switched_at"] is None and never["accuracy"] == inx["accuracy"]
    raises_naming(ValueError, "mode", mgrit_bias.train_monitored, data, mode="sometimes")
    raises_naming((ValueError, TypeError), "threshold", mgrit_bias.train_monitored, data, threshold=2.0)


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_DATA = (np.zeros((8, 4, 2)), np.zeros(4, np.int64), np.zeros((8, 3, 2)), np.zeros(3, np.int64))
_BAD_CASES = [
    (mgrit_bias.train_monitored, "levels", st.one_of(NOT_SIZE, HUGE), {"data": _DATA}),
    (mgrit_bias.train_monitored, "seed", BAD_SEED, {"data": _DATA}),
    (mgrit_bias.train_monitored, "nh", st.one_of(NOT_SIZE, HUGE), {"data": _DATA}),
    (mgrit_bias.train_monitored, "data", st.sampled_from([None, (), (_DATA[0][:, :0],) + _DATA[1:],
                                                           (_DATA[0], _DATA[1] - 1, _DATA[2], _DATA[3])]), {}),
    (mgrit_bias.gradient_gap, "levels", HUGE, {"params": gru.init_classifier(2, 3, 2, seed=0, dtype=np.float64),
                                                "X": _DATA[0], "y": _DATA[1]}),
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)
