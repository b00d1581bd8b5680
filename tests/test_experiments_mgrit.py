"""experiments.mgrit: the sweeps and measurements of chapter 10 return what they promise (tiny sizes)."""
import math

import numpy as np
import pytest

from course_lib.algorithms import mgrit
from course_lib.core import backend, timing
from course_lib.data import activity
from course_lib.experiments import mgrit as XM


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
