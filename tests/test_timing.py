import os

import numpy as np
import pytest

from course_lib.core import timing


def test_measure_counts_calls_and_reports_per_call():
    calls = []
    t = timing.measure(lambda: calls.append(1), repeat=4, warmup=2, number=3)
    assert len(t.times) == 4 and t.number == 3
    assert len(calls) == 2 + 4 * 3
    assert t.min <= t.median <= t.max
    assert "n=4" in str(t)


def test_measure_bad_input():
    with pytest.raises(TypeError, match="fn: expected a callable, got int"):
        timing.measure(3)
    with pytest.raises(ValueError, match="repeat: expected an integer >= 1, got 0"):
        timing.measure(lambda: None, repeat=0)
    with pytest.raises(ValueError, match="warmup: expected an integer >= 0, got -1"):
        timing.measure(lambda: None, warmup=-1)


def test_compare_is_interleaved_and_ratios_are_consistent():
    order = []
    c = timing.compare(a=lambda: order.append("a"), b=lambda: order.append("b"), repeat=3, warmup=0)
    assert order == ["a", "b"] * 3
    assert c.ratio("a") == pytest.approx(1.0)
    assert c.speedup("b") == pytest.approx(1 / c.ratio("b"))
    assert c.fastest in ("a", "b")
    assert [r["name"] for r in c.rows()] == ["a", "b"]
    assert "x a" in c.table()


def test_compare_bad_input():
    with pytest.raises(ValueError, match="expected at least one function"):
        timing.compare()
    with pytest.raises(TypeError, match="b: expected a callable"):
        timing.compare(a=lambda: 1, b=2)
    with pytest.raises(ValueError, match="baseline: expected one of a, got 'z'"):
        timing.compare(a=lambda: 1, baseline="z")


def test_flop_and_byte_counters():
    assert timing.gemm_flops(2, 3, 4) == 48
    assert timing.gemv_flops(10, 20) == 400
    assert timing.array_bytes(np.zeros(10, np.float32), np.zeros(2)) == 56
    assert timing.gemm_intensity(1000, 1000, 1000) == pytest.approx(2e9 / (4 * 3e6))
    assert timing.gemm_intensity(1, 1000, 1000) == pytest.approx(2e6 / (4 * (1000 + 1e6 + 1000)))
    assert timing.gflops(2e9, 2.0) == 1.0
    with pytest.raises(ValueError, match="m: expected an integer >= 0, got -1"):
        timing.gemm_flops(-1, 2, 3)
    with pytest.raises(ValueError, match="itemsize: expected an integer >= 1"):
        timing.gemm_intensity(2, 2, 2, itemsize=0)
    with pytest.raises(ValueError, match="seconds: expected a positive time"):
        timing.gflops(1.0, 0.0)


def test_loglog_slope_recovers_exponents():
    n = np.array([10, 20, 40, 80])
    assert timing.loglog_slope(n, 3 * n**2) == pytest.approx(2.0)
    assert timing.loglog_slope(n, 0.1 * n) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="sizes, times"):
        timing.loglog_slope([1], [1])
    with pytest.raises(ValueError, match="positive, finite"):
        timing.loglog_slope([1, 2], [0, 1])


def test_roofline_shape_and_measured_values():
    assert timing.roofline(1.0, peak=100.0, bandwidth=10.0) == 10.0
    assert timing.roofline(50.0, peak=100.0, bandwidth=10.0) == 100.0
    np.testing.assert_allclose(timing.roofline(np.array([1.0, 100.0]), peak=100.0, bandwidth=10.0), [10.0, 100.0])
    with pytest.raises(ValueError, match="intensity: expected finite values >= 0"):
        timing.roofline(-1.0, peak=1.0, bandwidth=1.0)
    peak = timing.peak_gflops("float32", n=256, repeat=2)
    bw = timing.copy_bandwidth(mbytes=16, repeat=2)
    assert peak > 0.1 and bw > 0.1
    assert timing.peak_gflops("float32", n=256, repeat=2) == peak  # cached per process


def test_gemm_rate_returns_consistent_fields():
    r = timing.gemm_rate(64, repeat=2)
    assert r["n"] == 64 and r["gflops"] > 0
    assert r["intensity"] == pytest.approx(timing.gemm_intensity(64, 64, 64))
    assert r["fraction_of_peak"] == pytest.approx(r["gflops"] / r["peak_gflops"])
    with pytest.raises(ValueError, match="n: expected an integer <= 8192"):
        timing.gemm_rate(10_000)


def test_budget_knob(monkeypatch):
    monkeypatch.setenv("COURSE_BUDGET", "small")
    assert timing.budget() == "small" and timing.scaled(100, 10) == 10
    monkeypatch.setenv("COURSE_BUDGET", "full")
    assert timing.scaled(100, 10) == 100
    monkeypatch.setenv("COURSE_BUDGET", "huge")
    with pytest.raises(ValueError, match="COURSE_BUDGET: expected 'full' or 'small', got 'huge'"):
        timing.budget()
