"""course_lib.experiments.batching: unbatched == batched, counting formulas, measurement structure."""
import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.experiments import batching
from course_lib.models import fast_rnn, rnn
from course_lib.core import timing


@pytest.mark.parametrize("with_h0", [False, True])
def test_one_at_a_time_equals_batched_forward(with_h0):
    p = rnn.init_params(5, 6, 2, seed=0, dtype=np.float64)
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (4, 3, 5))
    h0 = rng.uniform(-1, 1, (3, 6)) if with_h0 else None
    H, Yhat = batching.forward_one_at_a_time(p, X, h0)
    c = rnn.forward(p, X, h0)
    np.testing.assert_allclose(H, c.H, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(Yhat, c.Yhat, rtol=1e-12, atol=1e-14)


def test_counting():
    assert batching.rnn_step_flops(1, 1000, 1000) == 4_000_000
    assert batching.rnn_step_bytes(1, 1000, 1000) == 4 * (2_000_000 + 1000 + 2000)
    assert batching.rnn_step_intensity(1, 1000, 1000) == pytest.approx(0.499, abs=1e-3)
    assert batching.rnn_step_intensity(1000, 1000, 1000) == pytest.approx(200.0)
    # intensity grows with the batch
    ai = [batching.rnn_step_intensity(b, 256, 256) for b in (1, 2, 4, 8, 16, 64)]
    assert all(a < b for a, b in zip(ai, ai[1:]))
    # a single step at B=1 matches GEMV intensity with two weight matrices
    assert batching.rnn_step_intensity(1, 64, 64, itemsize=8) == pytest.approx(
        2 * 128 * 64 / (8 * (2 * 64 * 64 + 64 + 128)))


def test_gemv_vs_gemm_same_result_and_fields():
    r = batching.gemv_vs_gemm(n=64, batch=8, repeat=1)
    assert r["max_abs_diff"] < 1e-3
    assert r["flops"] == timing.gemm_flops(8, 64, 64)
    assert r["gemm_intensity"] > r["gemv_intensity"]
    assert r["gemv_bound_gflops"] <= r["gemm_bound_gflops"] + 1e-9
    assert r["w_bytes"] == 64 * 64 * 4 and r["w_level"] in ("L1d", "L2", "L3", "DRAM")


def test_cache_level_and_sizes():
    caches = {"L1d": 32 * 1024, "L2": 1024**2, "L3": 32 * 1024**2}
    assert batching.cache_level(1000, caches) == "L1d"
    assert batching.cache_level(4 * 1000 * 1000, caches) == "L3"
    assert batching.cache_level(64 * 1024**2, caches) == "DRAM"
    assert batching.cache_level(10, {}) == "DRAM"
    assert all(isinstance(v, int) and v > 0 for v in batching.cache_sizes().values())
    with pytest.raises(ValueError, match="nbytes"):
        batching.cache_level(-1, caches)


def test_gemv_residency_structure_and_threads_restored():
    from course_lib.core import backend
    before = backend.get_threads()
    r = batching.gemv_residency((16, 64), repeat=1)
    assert backend.get_threads() == before
    assert r["n"] == [16, 64] and r["working_set"][1] == 4 * (64 * 64 + 2 * 64)
    assert all(g > 0 for g in r["gflops"]) and all(b > 0 for b in r["gbps"]) and r["dram_gbps"] > 0
    with pytest.raises(ValueError, match="sizes"):
        batching.gemv_residency(())


@pytest.mark.parametrize("method", ["reference", "fast"])
def test_time_per_sample_structure(method):
    r = batching.time_per_sample((1, 4), width=16, T=3, method=method, repeat=1)
    assert list(r["batch"]) == [1, 4]
    assert np.all(r["per_sample_s"] > 0) and np.all(r["gflops"] > 0)
    assert r["intensity"][1] > r["intensity"][0]
    d = batching.batch_point(2, 8, T=2, repeat=1)
    assert d["per_sample_s"] == pytest.approx(d["step_s"] / 2)
    assert d["flops"] == fast_rnn.step_flops(2, 2, 8, 8, 8)


def test_training_step_methods_agree():
    p = rnn.init_params(4, 5, 3, seed=2, dtype=np.float64)
    rng = np.random.default_rng(0)
    X, Y = rng.uniform(-1, 1, (3, 2, 4)), rng.uniform(-1, 1, (3, 2, 3))
    a = batching.training_step(p, X, Y, 0.1, "reference")
    b = batching.training_step(p, X, Y, 0.1, "fast")
    np.testing.assert_allclose(a.Whh, b.Whh, rtol=1e-12, atol=1e-14)


def test_bad_inputs():
    with pytest.raises(ValueError, match="batch"):
        batching.rnn_step_flops(0, 4, 4)
    with pytest.raises(ValueError, match="itemsize"):
        batching.rnn_step_bytes(1, 4, 4, itemsize=0)
    with pytest.raises(ValueError, match="n"):
        batching.gemv_vs_gemm(n=0)
    with pytest.raises(ValueError, match="batch_sizes"):
        batching.time_per_sample(())
    with pytest.raises(ValueError, match="batch_sizes"):
        batching.time_per_sample((4, -1))
    with pytest.raises(ValueError, match="batch"):
        batching.batch_point(0)
    with pytest.raises(ValueError, match="method"):
        batching.batch_point(2, 8, method="gpu")
    p = rnn.init_params(5, 6, 2, seed=0)
    with pytest.raises(ValueError, match="X"):
        batching.forward_one_at_a_time(p, np.zeros((2, 3, 4), np.float32))


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (batching.rnn_step_flops, "batch", NOT_SIZE, {"nx": 4, "nh": 4}),
    (batching.rnn_step_bytes, "itemsize", NOT_SIZE, {"batch": 2, "nx": 4, "nh": 4}),
    (batching.cache_level, "nbytes", st.one_of(st.integers(max_value=-1), st.text(max_size=2), st.none()), {}),
    (batching.cache_level, "caches", st.sampled_from(["L1", [], 3, {"L1d": -1}, {"L1d": "x"}]), {"nbytes": 8}),
    (batching.gemv_residency, "sizes", BAD_SIZES, {}),
    (batching.gemv_residency, "threads", st.one_of(NOT_SIZE, HUGE), {"sizes": (8,)}),
    (batching.gemv_residency, "repeat", BAD_REPEAT, {"sizes": (8,)}),
    (batching.gemv_residency, "seed", BAD_SEED, {"sizes": (8,)}),
    (batching.gemv_vs_gemm, "n", st.one_of(NOT_SIZE, HUGE), {}),
    (batching.gemv_vs_gemm, "dtype", st.sampled_from(["bogus", 3, "int8", "float16"]), {"n": 4, "batch": 2}),
    (batching.gemv_vs_gemm, "seed", BAD_SEED, {"n": 4, "batch": 2}),
    (batching.batch_point, "batch", st.one_of(NOT_SIZE, HUGE), {}),
    (batching.batch_point, "method", st.sampled_from(["bogus", 3, None]), {"batch": 2, "width": 4, "T": 2}),
    (batching.time_per_sample, "batch_sizes", BAD_SIZES, {}),
    (batching.time_per_sample, "width", st.one_of(NOT_SIZE, HUGE), {"batch_sizes": (2,)}),
    (batching.time_per_sample, "repeat", BAD_REPEAT, {"batch_sizes": (2,), "width": 4, "T": 2}),
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)


def _sweep(gbps, levels, dram, caches):
    ws = [0.25, 1.0, 4.01, 16.02, 64.03, 256.06][:len(gbps)]
    return {"working_set": [int(w * 2**20) for w in ws], "level": levels, "gbps": gbps, "dram_gbps": dram,
            "caches": caches}


def test_measured_residency_names_a_reported_level_that_reads_at_dram_speed():
    mib = 2**20
    # the Intel Xeon quiet run (03 c12): a hypervisor-reported 480 MiB L3 that reads at DRAM speed
    intel = _sweep([77.0, 77.1, 25.5, 27.5, 24.4, 14.6], ["L2", "L2", "L3", "L3", "L3", "L3"], 23.3,
                   {"L1d": 48 << 10, "L2": 2 * mib, "L3": 480 * mib})
    m = batching.measured_residency(intel)
    assert m["levels"] == {"L2": "cache speed", "L3": "DRAM speed"} and m["dram_levels"] == ["L3"]
    assert m["reach"] == intel["working_set"][1] and m["slow_from"] == intel["working_set"][2]
    assert "the 480 MiB the OS reports as L3 reads at DRAM speed here" in m["text"][1]
    assert batching.cache_level(134 * 10**6, intel["caches"]) == "L3"          # what the OS says ...
    assert batching.reads_at(134 * 10**6, intel) == "DRAM speed"               # ... and what was measured
    assert batching.reads_at(mib // 2, intel) == "cache speed"
    # the Zen 5 run: L2 and L3 at cache speed, the cliff past the 32 MiB L3
    zen = _sweep([82.1, 92.8, 76.1, 77.4, 35.7, 30.6], ["L2", "L3", "L3", "L3", "DRAM", "DRAM"], 36.7,
                 {"L1d": 48 << 10, "L2": mib, "L3": 32 * mib})
    m = batching.measured_residency(zen)
    assert m["levels"] == {"L2": "cache speed", "L3": "cache speed"} and m["dram_levels"] == []
    assert batching.reads_at(16 * mib, zen) == "cache speed" and batching.reads_at(134 * 10**6, zen) == "DRAM speed"
    assert batching.reads_at(30 * mib, zen) == "not measured"                 # between 16 and 64 MiB: no point
    assert batching.speed_class(1.5 * 20, 20) == "cache speed" and batching.speed_class(29.9, 20) == "DRAM speed"
    with pytest.raises(ValueError, match="res"):
        batching.measured_residency({"gbps": []})


def test_measured_residency_reads_a_real_sweep():
    r = batching.gemv_residency((16, 64), repeat=1)
    m = batching.measured_residency(r)
    assert m["speed"] == [batching.speed_class(g, r["dram_gbps"]) for g in r["gbps"]]
    assert set(m["levels"]) <= set(r["caches"]) and all("the OS reports as" in t for t in m["text"])
    assert batching.reads_at(r["working_set"][0], r) in ("cache speed", "DRAM speed", "not measured")
