"""experiments.mgrit: the sweeps and measurements of chapter 10 return what they promise (tiny sizes)."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.algorithms import mgrit
from course_lib.core import backend, timing
from course_lib.data import activity
from course_lib.experiments import mgrit as XM
from helpers import BAD_SIZE, raises_naming


def test_counted_work_matches_the_model_and_grows_with_iterations():
    one = XM.counted_work(256, m=4, levels=3, relax="FCF", iters=1)
    two = XM.counted_work(256, m=4, levels=3, relax="FCF", iters=2)
    assert 1 < one < two
    assert two == mgrit.span_model(256, m=4, levels=3, relax="FCF", iters=2)["work"] / 256


def test_preprocessing_model_and_the_cost_it_needs():
    T, P = 128, 32
    gru_only = mgrit.span_model(T, m=4, levels=3, iters=2, P=P)["speedup"]
    assert XM.preprocessing_model(T, P, 0.0, m=4, levels=3, iters=2) == pytest.approx(gru_only)
    sp = [XM.preprocessing_model(T, P, c, m=4, levels=3, iters=2) for c in (1, 10, 1e6)]
    assert gru_only < sp[0] < sp[1] < sp[2] < P  # more parallel per-frame work -> closer to P
    c = XM.preprocessing_needed(5.0, T, P, m=4, levels=3, iters=2)
    assert XM.preprocessing_model(T, P, c, m=4, levels=3, iters=2) == pytest.approx(5.0)
    assert XM.preprocessing_needed(P + 1, T, P, m=4, levels=3, iters=2) == math.inf
    assert XM.preprocessing_needed(0.5, T, P, m=4, levels=3, iters=2) == 0.0
    with pytest.raises(ValueError, match="c: expected a number >= 0"):
        XM.preprocessing_model(T, P, -1.0)


def test_time_axis_returns_times_and_slopes():
    d = XM.time_axis([32, 64], batch=8, P=4, nh=8, repeat=2)
    assert d["Ts"] == [32, 64] and len(d["full"]) == len(d["share"]) == 2
    assert all(t > 0 for t in d["full"] + d["share"]) and isinstance(d["noise"], timing.Noise)
    assert math.isfinite(d["slope_full"]) and math.isfinite(d["slope_share"])
    with pytest.raises(ValueError, match="batch: expected an integer >= 4"):
        XM.time_axis([32], batch=2, P=4)


def test_forward_speed_compares_three_ways():
    from course_lib.models import gru

    p = gru.init_params(3, 8, seed=0)
    X = np.random.default_rng(0).standard_normal((64, 2, 3)).astype(np.float32)
    c = XM.forward_speed(p, X, threads=2, repeat=2, m=4, levels=2, max_iter=1)
    assert set(c.timings) == {"sequential", "mgrit_1thread", "mgrit_threads"} and c.baseline == "sequential"


def test_speedup_vs_length_small():
    d = XM.speedup_vs_length([64], ranks=2, batch=2, nh=4, nx=2, m=4, levels=2, iters=1, repeat=2, timeout=60)
    assert d["method"] == ("mpi" if backend.mpi_available()[0] else "threads")
    assert len(d["speedup"]) == 1 and d["speedup"][0] == pytest.approx(d["sequential"][0] / d["parallel"][0])
    assert d["model"][0] == pytest.approx(mgrit.span_model(64, m=4, levels=2, iters=1, P=2)["speedup"])
    assert d["work"] == XM.counted_work(64, m=4, levels=2, iters=1)


def test_train_compare_tiny():
    Xtr, ytr, Xte, yte = activity.train_test(8, 8, 32, seed=0)
    runs = {"sequential": dict(implicit=True), "mgrit": dict(implicit=True, method="mgrit", m=4, levels=2, max_iter=1)}
    out = XM.train_compare(runs, (Xtr.astype(np.float64), ytr, Xte.astype(np.float64), yte), seeds=(0, 1), nh=4,
                           epochs=1, batch=8)
    assert set(out) == {"sequential", "mgrit"}
    for r in out.values():
        assert len(r["acc"]) == len(r["loss"]) == len(r["seconds"]) == 2 and all(0 <= a <= 1 for a in r["acc"])


def test_convergence_sweeps_and_model_curve():
    d = XM.convergence_histories(ms=(2, 4), nt=32, max_iter=3)
    assert set(d["histories"]) == {2, 4} and all(0 <= f < 1 for f in d["factors"].values())
    sp = XM.speedup_model(256, [1, 2, 8], m=4, levels=2, iters=2)
    assert sp.shape == (3,) and np.all(np.diff(sp) > 0)


# --------------------------------------------------------------------------- bad input
# named before anything is timed or allocated
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HUGE = st.integers(10**12, 10**15)


@pytest.mark.timeout(30)
@FAST
@given(BAD_SIZE)
def test_mgrit_sweeps_reject_bad_sizes(bad):
    raises_naming((ValueError, TypeError), "P", XM.speedup_model, 64, [1, bad])
    raises_naming((ValueError, TypeError), "nt", XM.convergence_table, nt=bad)
    raises_naming((ValueError, TypeError), "nt", XM.counted_work, bad)


@pytest.mark.timeout(30)
@FAST
@given(HUGE)
def test_mgrit_huge_nt_refused_before_allocating(nt):
    raises_naming(ValueError, "nt", XM.counted_work, nt)
    raises_naming(ValueError, "nt", XM.convergence_histories, nt=nt)


@pytest.mark.timeout(30)
def test_mgrit_sequences_and_choices():
    raises_naming(ValueError, "ms", XM.convergence_table, ms=())
    raises_naming(ValueError, "m", XM.convergence_table, ms=(1,))  # each item named as before
    raises_naming(TypeError, "Ps", XM.speedup_model, 64, 4)
    raises_naming(ValueError, "lam_dts", XM.convergence_table, lam_dts=(float("nan"),))
    raises_naming(ValueError, "relax", XM.convergence_table, relax="X")
    raises_naming(TypeError, "Ts", XM.time_axis, 5)
    raises_naming(TypeError, "runs", XM.train_compare, [], None)
    X = np.zeros((4, 3, 2), np.float32)
    y = np.zeros(3, np.int64)
    raises_naming(TypeError, "data", XM.train_compare, {"a": {}}, (X, y))
    raises_naming(ValueError, "data[2] (Xte)", XM.train_compare, {"a": {}}, (X, y, X[:, :, :1], y))
    raises_naming(TypeError, "progress", XM.train_compare, {"a": {}}, (X, y, X, y), progress=3)
    # correct result on good input
    out = XM.speedup_model(64, [1, 2], m=4, levels=2, iters=2)
    assert out.shape == (2,) and np.all(np.isfinite(out))
    t = XM.convergence_table(ms=(2,), lam_dts=(-1.0,), nt=16, max_iter=2)
    assert t["rho"].shape == (1, 1)


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (XM.convergence_histories, "levels", st.one_of(NOT_SIZE, HUGE), {"nt": 16}),
    (XM.convergence_table, "levels", st.one_of(NOT_SIZE, HUGE), {"nt": 16, "ms": (2, 4)}),
    (XM.speedup_model, "levels", st.one_of(NOT_SIZE, HUGE), {"nt": 64, "Ps": [2]}),
    (XM.counted_work, "levels", st.one_of(NOT_SIZE, HUGE), {"nt": 64}),
    (XM.preprocessing_model, "levels", st.one_of(NOT_SIZE, HUGE), {"nt": 64, "P": 2, "c": 1.0}),
    (XM.preprocessing_model, "P", NOT_SIZE, {"nt": 64, "c": 1.0}),
    (XM.preprocessing_needed, "nt", NOT_SIZE, {"target": 1.5, "P": 4}),
    (XM.time_axis, "repeat", BAD_REPEAT, {"Ts": [8]}),
    (XM.time_axis, "Ts", st.sampled_from([[10**12], [], "ab"]), {}),
    (XM.forward_speed, "repeat", BAD_REPEAT, {"params": None, "X": None}),
    (XM.speedup_vs_length, "levels", st.one_of(NOT_SIZE, HUGE), {"Ts": [64]}),
    (XM.speedup_vs_length, "timeout", BAD_NUMBER, {"Ts": [64]}),
]


def test_absurd_levels_fail_fast():
    """levels = 1e10 ran ~50 s (m**(levels-1) is a 10-billion-digit number) before failing."""
    for fn, kw in ((XM.speedup_model, {"nt": 64, "Ps": [2]}), (XM.counted_work, {"nt": 64}),
                   (XM.preprocessing_model, {"nt": 64, "P": 2, "c": 1.0})):
        exc = fails_fast(fn, levels=10**10, **kw)
        assert isinstance(exc, ValueError) and str(exc).startswith("levels"), exc


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)


def test_layouts_run_what_fits_and_equal_the_one_process_solve():
    # one core: only 1 rank x 1 thread fits; everything else is listed as not run, nothing is oversubscribed
    res = XM.layouts(32, cores=1, batch=2, nh=4, nx=3, repeat=1, timeout=60)
    assert [(r["ranks"], r["threads"]) for r in res["rows"]] == [(1, 1)]
    assert (2, 1) in res["not_run"] and (1, 2) in res["not_run"] and res["max_error"] == 0.0
    assert XM.fastest_layout(res)[0] == "cannot tell"
    raises_naming((TypeError, ValueError), "cores", XM.layouts, 32, cores=0)


def test_fastest_layout_needs_reliable_runs_and_separated_repeats():
    quiet, busy = timing.Noise(), timing.Noise()
    busy.add(True, "other processes kept 1.0 core(s) busy")

    def row(r, t, times, n=quiet):
        return {"ranks": r, "threads": t, "times": times, "median": float(np.median(times)), "noise": n}

    clear = {"cores": 2, "rows": [row(1, 1, [2.0, 2.1]), row(1, 2, [1.0, 1.1]), row(2, 1, [1.5, 1.6])]}
    assert XM.fastest_layout(clear) == ("clear", XM.fastest_layout(clear)[1]) and "1 rank(s) x 2" in \
        XM.fastest_layout(clear)[1]
    overlap = {"cores": 2, "rows": [row(1, 2, [1.0, 1.6]), row(2, 1, [1.5, 1.7])]}
    assert XM.fastest_layout(overlap)[0] == "cannot tell"
    noisy = {"cores": 2, "rows": [row(1, 2, [1.0, 1.1], busy), row(2, 1, [1.5, 1.6])]}
    decision, why = XM.fastest_layout(noisy)
    assert decision == "cannot tell" and "unreliable" in why


def test_batch_accuracy_counts_updates_and_refuses_a_batch_larger_than_the_data():
    Xtr, ytr, Xte, yte = activity.train_test(16, 8, 16, seed=0)
    data = (Xtr.astype(np.float64), ytr, Xte.astype(np.float64), yte)
    res = XM.batch_accuracy(data, (4, 16), seeds=(0,), nh=3, epochs=2)
    assert res[4]["updates"] == 2 * 4 and res[16]["updates"] == 2 * 1
    assert all(0.0 <= a <= 1.0 for r in res.values() for a in r["acc"])
    raises_naming(ValueError, "batches", XM.batch_accuracy, data, (32,), seeds=(0,), nh=3, epochs=1)
