"""course_lib.experiments.profile: phased steps compute the reference update; breakdowns are well formed."""
import time

import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.models import rnn
from course_lib.experiments import profile


def _problem(dtype=np.float64):
    p = rnn.init_params(5, 7, 3, seed=1, dtype=dtype)
    rng = np.random.default_rng(0)
    return p, rng.uniform(-1, 1, (6, 4, 5)).astype(dtype), rng.uniform(-1, 1, (6, 4, 3)).astype(dtype)


@pytest.mark.parametrize("phased", [profile.reference_step_phased, profile.fast_step_phased])
def test_phased_steps_match_bptt_linear_plus_sgd(phased):
    p, X, Y = _problem()
    ref = rnn.sgd_step(p, rnn.bptt_linear(p, X, Y), 0.1)
    t0 = time.perf_counter()
    new, loss, secs = phased(p, X, Y, 0.1)
    wall = time.perf_counter() - t0
    for name in ("Wxh", "Whh", "Why"):
        np.testing.assert_allclose(getattr(new, name), getattr(ref, name), rtol=1e-12, atol=1e-14)
    assert loss == pytest.approx(rnn.loss(rnn.forward(p, X).Yhat, Y), rel=1e-12)
    assert tuple(secs) == profile.PHASES
    assert all(s > 0 for s in secs.values()), secs  # every phase is ticked (one never ticked stays exactly 0)
    assert sum(secs.values()) <= wall  # the phases are disjoint parts of the one call


def test_reference_phased_with_h0():
    p, X, Y = _problem()
    h0 = np.random.default_rng(3).uniform(-1, 1, (4, 7))
    ref = rnn.sgd_step(p, rnn.bptt_linear(p, X, Y, h0), 0.1)
    new, _, _ = profile.reference_step_phased(p, X, Y, 0.1, h0=h0)
    np.testing.assert_allclose(new.Whh, ref.Whh, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("method", ["reference", "fast"])
def test_profile_step_percentages(method):
    r = profile.profile_step(method, T=3, batch=8, n=16, repeat=2)
    assert r["method"] == method
    assert set(r["percent"]) == set(profile.PHASES)
    assert sum(r["percent"].values()) == pytest.approx(100.0)
    assert r["total_s"] > 0
    if method == "fast":
        assert r["seconds"]["loss"] < 1e-3 and r["seconds"]["saving intermediates"] < 1e-3


def test_phases_are_the_seeds_ten_rows():
    from course_lib.teaching.claims import CLAIMS
    from course_lib.teaching.claims.seed000_perf import S410_PHASES

    assert tuple(S410_PHASES) == profile.PHASES
    rows = [CLAIMS[S410_PHASES[p]] for p in profile.PHASES]
    assert [c.where for c in rows] == [f"§4.10, row {i}" for i in range(1, 11)]
    assert sum(c.value for c in rows) == pytest.approx(100.02, abs=0.01)  # the seed's rows add to 100.02


def test_thread_scaling_and_workload_time_shapes():
    r = profile.thread_scaling(["blas matmul", "fused element-wise", "fast step"], threads=[1], n=32, repeat=1)
    assert r["threads"] == [1]
    assert set(r["seconds"]) == {"blas matmul", "fused element-wise", "fast step"}
    assert all(s == [1.0] for s in r["speedup"].values())
    assert all(b > 0 for b in r["working_set"].values())
    d = profile.workload_time("numpy step", 1, 16, repeat=1)
    assert d["gflops"] > 0 and d["threads"] == 1
    assert profile.workload_time("fused element-wise", 1, 16, repeat=1)["gflops"] is None


def test_workload_time_and_thread_scaling_restore_threads():
    from course_lib.core import backend
    before = backend.get_threads()
    profile.workload_time("blas matmul", 1, 16, repeat=1)
    assert backend.get_threads() == before
    profile.thread_scaling(["blas matmul"], threads=[1], n=16, repeat=1)
    assert backend.get_threads() == before


def test_framework_vs_numpy_structure():
    r = profile.framework_vs_numpy((4, 8), T=3, repeat=1)
    assert r["sizes"] == [4, 8] and r["methods"][:2] == ["numpy", "numba"]
    assert set(r["methods"]) <= set(profile.FRAMEWORK_METHODS)
    for m in r["methods"]:
        assert len(r["seconds"][m]) == 2 and r["call_overhead_s"][m] > 0
    assert r["vs_numpy"]["numpy"] == [1.0, 1.0]
    with pytest.raises(ValueError, match="sizes"):
        profile.framework_vs_numpy(())


def test_torch_steps_compute_the_same_loss():
    pytest.importorskip("torch")
    p, X, Y = _problem(np.float32)
    steps = profile.torch_steps(p, X, Y, 0.0)
    ref = rnn.loss(rnn.forward(p, X).Yhat, Y)
    for f in steps.values():
        assert f() == pytest.approx(ref, rel=1e-4)


def test_fusion_comparison_results_agree():
    r = profile.fusion_comparison(batch=8, n=16, T=3, repeat=2)
    assert r["max_abs_diff"] < 1e-5 and r["loss_rel_diff"] < 1e-5
    assert r["separate_s"] > 0 and r["fused_1thread_s"] > 0 and r["fused_all_s"] > 0
    # the bound a memory-bound pass's thread gain is judged against: a streaming pass over the same arrays
    assert r["thread_gain"] == pytest.approx(r["fused_1thread_s"] / r["fused_all_s"])
    assert r["bandwidth_gain"] == pytest.approx(r["stream_all_gbps"] / r["stream_1thread_gbps"])
    assert r["array_bytes"] == 3 * 8 * 16 * 4 and r["dram_gbps"] > 0
    from course_lib.experiments.batching import speed_class
    assert r["stream_speed"] == speed_class(r["stream_1thread_gbps"], r["dram_gbps"])
    # the verdict's noise is that of the ratio it judges (fused against separate), not the streaming pass's
    assert r["threads"] == 1 and [x.name for x in r["noise"].ratios] == ["fused"]
    assert r["noise"].ratios[0].over == "separate" and set(r["comparison"].timings) >= {"separate", "fused", "stream"}


def test_stream_kernel_reads_two_arrays_and_writes_one():
    import numpy as np
    a, b, out = np.arange(5, dtype=np.float32), np.ones(5, np.float32), np.zeros(5, np.float32)
    profile._stream(out, a, b)
    assert out.tolist() == [1, 2, 3, 4, 5]


def test_bad_inputs():
    with pytest.raises(ValueError, match="method"):
        profile.profile_step("slow")
    with pytest.raises(ValueError, match="n"):
        profile.profile_step("fast", n=0)
    with pytest.raises(ValueError, match="workload"):
        profile.workload_time("gpu")
    with pytest.raises(ValueError, match="threads"):
        profile.thread_scaling(["blas matmul"], threads=[0], n=16)
    with pytest.raises(ValueError, match="workloads"):
        profile.thread_scaling([], n=16)
    with pytest.raises(ValueError, match="batch"):
        profile.fusion_comparison(batch=0)
    p, X, Y = _problem()
    with pytest.raises(ValueError, match="lr"):
        profile.reference_step_phased(p, X, Y, -0.1)
    with pytest.raises(ValueError, match="X"):
        profile.fast_step_phased(p, X[:, :, :2], Y, 0.1)


def test_error_model_comparison_same_values():
    r = profile.error_model_comparison(10_000, repeat=1)
    assert r["same_result"] and r["python_s"] > 0 and r["numpy_s"] > 0
    with pytest.raises(ValueError, match="n"):
        profile.error_model_comparison(0)


def test_saved_state_layouts_agree_and_compare_both_phases():
    """Seed §4.10's layouts: the same dWhh either way, and each phase is a Comparison of the two layouts."""
    r = profile.saved_state_layouts(T=4, batch=3, n=8, repeat=2)
    assert r["same_gradient"] is True
    for phase in ("step", "save", "update"):
        assert set(r[phase].timings) == {"one 3-D array", "array of 2-D"}
        assert r[phase].faster("array of 2-D") in ("yes", "no", "cannot tell")
    with pytest.raises(ValueError, match="n"):
        profile.saved_state_layouts(n=0)


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (profile.profile_step, "dtype", st.sampled_from(["bogus", "int32", 3]), {"T": 2, "batch": 2, "n": 4}),
    (profile.profile_step, "seed", BAD_SEED, {"T": 2, "batch": 2, "n": 4}),
    (profile.profile_step, "repeat", BAD_REPEAT, {"T": 2, "batch": 2, "n": 4}),
    (profile.thread_scaling, "threads", st.sampled_from([[0], "ab", [2.5], [10**6]]), {"n": 8}),
    (profile.workload_time, "threads", st.one_of(NOT_SIZE, HUGE), {"n": 8}),
    (profile.fusion_comparison, "repeat", BAD_REPEAT, {"batch": 2, "n": 4, "T": 2}),
    (profile.error_model_comparison, "seed", BAD_SEED, {"n": 8}),
    (profile.saved_state_layouts, "repeat", BAD_REPEAT, {"T": 2, "batch": 2, "n": 4}),
    (profile.reference_step_phased, "Y", st.sampled_from([None, np.zeros((2, 2, 3), np.float32)]),
     {"params": rnn.init_params(2, 3, 4, seed=0), "X": np.zeros((2, 2, 2), np.float32), "lr": 0.1}),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)


def test_profile_step_on_one_thread_uses_the_thread_clock_and_restores_the_threads():
    """Issue 43: a one-thread profile is timed by the thread's CPU clock and says so; the thread count is back after."""
    from course_lib.core import backend

    before = backend.get_threads()
    r = profile.profile_step("reference", T=3, batch=8, n=16, repeat=2, threads=1)
    assert (r["threads"], r["clock"]) == (1, "cpu") and backend.get_threads() == before
    assert sum(r["percent"].values()) == pytest.approx(100.0) and all(s >= 0 for s in r["seconds"].values())
    assert profile.profile_step("reference", T=3, batch=8, n=16, repeat=2)["threads"] is None
    with pytest.raises(ValueError, match="threads"):
        profile.profile_step("reference", T=3, batch=8, n=16, repeat=2, threads=0)
