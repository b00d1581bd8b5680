"""course_lib.experiments.halide: the chapter's measuring helpers return consistent data (tiny sizes)."""
import pytest

from course_lib.models import halide_rnn as H
from course_lib.experiments import halide as E
from helpers import raises_naming

ok, why = H.available()
pytestmark = pytest.mark.skipif(not ok, reason=f"halide unavailable: {why}")


def test_fig10_table_and_findings():
    table = E.fig10_table(3, n=40, T=3, repeat=1)
    assert [r["name"] for r in table["rows"]] == list(H.FIG10_NAMES)
    assert all(r["seconds"] > 0 and r["gflops"] > 0 for r in table["rows"])
    assert table["rows"][0]["speedup"] == pytest.approx(1.0)
    f = E.fig10_findings(table)
    secs = {r["name"]: r["seconds"] for r in table["rows"]}
    assert f["best"] == min(secs, key=secs.get)  # the fastest row, and its speedup over serial
    assert f["best_speedup"] == pytest.approx(secs["serial"] / secs[f["best"]])
    assert f["simd"]["alone"] == pytest.approx(secs["serial"] / secs["simd"])
    assert set(f["simd"]) == {"alone", "with tiling", "with parallel", "with tiling+parallel"}
    assert set(f["parallel"]) == {"alone", "with tiling", "with simd", "with tiling+simd"}
    with pytest.raises(ValueError, match="table"):
        E.fig10_findings({"rows": table["rows"][:3]})


def test_comparisons_agree_on_numbers():
    s = E.step_comparison(4, n=48, T=3, repeat=1)
    assert s["losses_agree"] and set(s["gflops"]) == {"halide", "numpy", "fast_rnn"}
    e = E.epoch_comparison(4, n=48, T=3, steps=2, repeat=1)
    assert e["final_params_close"] and e["slower"] > 0
    g = E.gemm_comparison(70, repeat=1)
    assert g["max_err"] < 1e-5 and set(g["gflops"]) == {"halide", "numba", "blas"}
    sp = E.specialized_vs_best(3, n=40, T=2, repeat=1)
    assert sp["specialized_speedup"] > 0 and sp["fused_speedup"] > 0
    j = E.jit_vs_once(2, n=24, T=2, steps=1, repeat=1)
    assert j["speedup"] > 1 and j["compile_s"] > 0


def test_schedule_time_widget_function():
    r = E.schedule_time(tile_rows=8, tile_cols=8, vector=4, parallel=False, batch=3, n=30, T=2, repeat=1)
    assert r["correct"] and r["ratio"] > 0 and "vectorized" in r["loop_nest"]
    r = E.schedule_time(tile_rows=0, tile_cols=16, vector=1, parallel=True, batch=3, n=30, T=2, repeat=1)
    assert "vectorized" not in r["loop_nest"] and "parallel" in r["loop_nest"]
    with pytest.raises(ValueError, match="tile_rows"):
        E.schedule_time(tile_rows=-1)
    with pytest.raises(ValueError, match="batch"):
        E.problem(0)


# --------------------------------------------------------------------------- bad input: checked before compiling
@pytest.mark.timeout(30)
def test_halide_compile_seconds_checks_before_compiling():
    raises_naming(ValueError, "schedule", E.compile_seconds, "no-such-schedule")
    raises_naming((ValueError, TypeError), "schedule", E.compile_seconds, 3)


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (E.problem, "batch", st.one_of(NOT_SIZE, HUGE), {}),
    (E.problem, "seed", BAD_SEED, {"batch": 2, "n": 4, "T": 2}),
    (E.fig10_table, "repeat", BAD_REPEAT, {"batch": 2, "n": 4, "T": 2}),
    (E.fig10_table, "names", st.sampled_from(["serial", [], ["bogus"], 3]), {"batch": 2, "n": 4, "T": 2}),
    (E.fig10_findings, "table", st.sampled_from([None, {}, {"rows": [{"name": "serial"}]}, "t"]), {}),
    (E.step_comparison, "schedule", st.sampled_from(["bogus", 3]), {"batch": 2, "n": 4, "T": 2}),
    (E.epoch_comparison, "lr", BAD_NUMBER, {"batch": 2, "n": 4, "T": 2}),
    (E.gemm_comparison, "n", st.one_of(NOT_SIZE, HUGE), {}),
    (E.schedule_time, "parallel", st.sampled_from(["yes", 2, None]), {"batch": 2, "n": 4, "T": 2}),
    (E.compile_seconds, "repeat", BAD_REPEAT, {"schedule": "serial"}),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)
