"""course_lib.experiments.jit: compile times measured in fresh subprocesses (structure only: no timed asserts)."""
import pytest

import course_lib  # noqa: F401
from course_lib.experiments import jit


def test_compile_times_toy_structure():
    r = jit.compile_times("toy", timeout=240)
    assert r["target"] == "toy"
    for mode in ("jit", "cached"):
        assert set(r[mode]) == {"import_s", "first_call_s", "second_call_s", "run_s"}
        assert all(r[mode][k] > 0 for k in ("import_s", "first_call_s", "second_call_s"))
        runs = [r[mode]["run_s"][str(k)] for k in jit.RUN_LENGTHS]
        assert runs[0] == r[mode]["first_call_s"] and runs == sorted(runs)  # measured, cumulative
    assert set(r["run_ratio"]) == {str(k) for k in jit.RUN_LENGTHS}
    assert r["first_call_ratio"] == pytest.approx(r["jit"]["first_call_s"] / r["cached"]["first_call_s"])
    assert r["compile_s"] == pytest.approx(r["jit"]["first_call_s"] - r["cached"]["first_call_s"])
    # the warm-cache process ran three times: its noise is the spread of those runs, and notes a cache that did not help
    from course_lib.core.noise import Noise
    assert isinstance(r["noise"], Noise) and r["noise"].spread >= 0
    assert (r["compile_s"] <= 0) == any("cached first call" in n for n in r["noise"].notes)


def test_driver_source_is_valid_python():
    """Each driver compiles, defines the ``call`` it times, and prints one JSON line with the four timings."""
    import ast

    for target in jit.TARGETS:
        src = jit.driver_source(target, "/tmp/x")
        tree = ast.parse(src)  # raises SyntaxError if not valid Python
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)} | {
            t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        assert "call" in defined, target
        prints = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "print"]
        assert len(prints) == 1 and all(k in ast.unparse(prints[0]) for k in
                                        ("import_s", "first_call_s", "second_call_s", "run_s")), target


def test_bad_inputs():
    with pytest.raises(ValueError, match="target"):
        jit.compile_times("halide")
    with pytest.raises(ValueError, match="timeout"):
        jit.compile_times("toy", timeout=0)



# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (jit.compile_times, "target", st.sampled_from(["bogus", 3, None]), {}),
    (jit.compile_times, "timeout", BAD_NUMBER, {}),
    (jit.driver_source, "target", st.sampled_from(["bogus", 3, None]), {"tmp": "/tmp"}),
]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)
