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

