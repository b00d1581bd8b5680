"""course_lib.experiments.jit: compile times measured in fresh subprocesses (structure only: no timed asserts)."""
import pytest

import course_lib  # noqa: F401
from course_lib.experiments import jit


def test_compile_times_toy_structure():
    r = jit.compile_times("toy", timeout=240)
    assert r["target"] == "toy"
    for mode in ("jit", "cached"):
        assert set(r[mode]) == {"import_s", "first_call_s", "second_call_s"}
        assert all(v > 0 for v in r[mode].values())
    assert r["first_call_ratio"] == pytest.approx(r["jit"]["first_call_s"] / r["cached"]["first_call_s"])
    assert r["compile_s"] == pytest.approx(r["jit"]["first_call_s"] - r["cached"]["first_call_s"])


def test_driver_source_is_valid_python():
    for target in jit.TARGETS:
        compile(jit.driver_source(target, "/tmp/x"), "<driver>", "exec")


def test_epoch_time_arithmetic():
    r = {"jit": {"first_call_s": 2.0, "second_call_s": 0.5}, "cached": {"first_call_s": 1.0, "second_call_s": 0.5}}
    e = jit.epoch_time(r, 3)
    assert e == {"steps": 3, "jit_s": 3.0, "cached_s": 2.0, "ratio": 1.5}
    assert jit.epoch_time(r, 1, step_s=0.0)["ratio"] == 2.0


def test_bad_inputs():
    with pytest.raises(ValueError, match="target"):
        jit.compile_times("halide")
    with pytest.raises(ValueError, match="timeout"):
        jit.compile_times("toy", timeout=0)
    with pytest.raises(ValueError, match="steps"):
        jit.epoch_time({"jit": {}, "cached": {}}, 0)
    with pytest.raises(ValueError, match="result"):
        jit.epoch_time({}, 2)
