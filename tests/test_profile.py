"""course_lib.experiments.profile: phased steps compute the reference update; breakdowns are well formed."""
import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.models import fast_rnn, rnn
from course_lib.experiments import profile


def _problem(dtype=np.float64):
    p = rnn.init_params(5, 7, 3, seed=1, dtype=dtype)
    rng = np.random.default_rng(0)
    return p, rng.uniform(-1, 1, (6, 4, 5)).astype(dtype), rng.uniform(-1, 1, (6, 4, 3)).astype(dtype)


@pytest.mark.parametrize("phased", [profile.reference_step_phased, profile.fast_step_phased])
def test_phased_steps_match_bptt_linear_plus_sgd(phased):
    p, X, Y = _problem()
    ref = rnn.sgd_step(p, rnn.bptt_linear(p, X, Y), 0.1)
    new, loss, secs = phased(p, X, Y, 0.1)
    for name in ("Wxh", "Whh", "Why"):
        np.testing.assert_allclose(getattr(new, name), getattr(ref, name), rtol=1e-12, atol=1e-14)
    assert loss == pytest.approx(rnn.loss(rnn.forward(p, X).Yhat, Y), rel=1e-12)
    assert tuple(secs) == profile.PHASES
    assert all(s >= 0 for s in secs.values())


def test_reference_phased_with_h0():
    p, X, Y = _problem()
    h0 = np.random.default_rng(3).uniform(-1, 1, (4, 7))
    ref = rnn.sgd_step(p, rnn.bptt_linear(p, X, Y, h0), 0.1)
    new, _, _ = profile.reference_step_phased(p, X, Y, 0.1, h0=h0)
    np.testing.assert_allclose(new.Whh, ref.Whh, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ["reference", "fast"])
def test_profile_step_percentages(kind):
    r = profile.profile_step(kind, T=3, B=8, n=16, repeat=2)
    assert r["kind"] == kind
    assert set(r["percent"]) == set(profile.PHASES)
    assert sum(r["percent"].values()) == pytest.approx(100.0)
    assert r["total_s"] > 0
    if kind == "fast":
        assert r["seconds"]["loss"] < 1e-3 and r["seconds"]["saving intermediates"] < 1e-3


def test_seed_percentages_add_up_to_the_seeds_total():
    assert sum(profile.SEED_PERCENT.values()) == pytest.approx(100.02, abs=0.01)
    assert tuple(profile.SEED_PERCENT) == profile.PHASES


def test_thread_scaling_and_variant_time_shapes():
    r = profile.thread_scaling(["blas matmul", "fused element-wise", "fast step"], threads=[1], n=32, repeat=1)
    assert r["threads"] == [1]
    assert set(r["seconds"]) == {"blas matmul", "fused element-wise", "fast step"}
    assert all(s == [1.0] for s in r["speedup"].values())
    d = profile.variant_time("numpy step", 1, 16, repeat=1)
    assert d["gflops"] > 0 and d["threads"] == 1
    assert profile.variant_time("fused element-wise", 1, 16, repeat=1)["gflops"] is None


def test_variant_time_restores_threads():
    from course_lib.core import backend
    before = backend.get_threads()
    profile.variant_time("blas matmul", 1, 16, repeat=1)
    assert backend.get_threads() == before


def test_fusion_comparison_results_agree():
    r = profile.fusion_comparison(B=8, n=16, T=3, repeat=2)
    assert r["max_abs_diff"] < 1e-5 and r["loss_rel_diff"] < 1e-5
    assert r["separate_s"] > 0 and r["fused_1thread_s"] > 0 and r["fused_all_s"] > 0


def test_bad_inputs():
    with pytest.raises(ValueError, match="kind"):
        profile.profile_step("slow")
    with pytest.raises(ValueError, match="n"):
        profile.profile_step("fast", n=0)
    with pytest.raises(ValueError, match="variant"):
        profile.variant_time("gpu")
    with pytest.raises(ValueError, match="threads"):
        profile.thread_scaling(["blas matmul"], threads=[0], n=16)
    with pytest.raises(ValueError, match="variants"):
        profile.thread_scaling([], n=16)
    with pytest.raises(ValueError, match="B"):
        profile.fusion_comparison(B=0)
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
