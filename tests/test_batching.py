"""course_lib.experiments.batching: unbatched == batched, counting formulas, measurement structure."""
import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.experiments import batching
from course_lib.models import rnn
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
    r = batching.gemv_vs_gemm(n=64, B=8, repeat=1)
    assert r["max_abs_diff"] < 1e-3
    assert r["flops"] == timing.gemm_flops(8, 64, 64)
    assert r["gemm_intensity"] > r["gemv_intensity"]
    assert r["gemv_bound_gflops"] <= r["gemm_bound_gflops"] + 1e-9


@pytest.mark.parametrize("method", ["reference", "fast"])
def test_time_per_sample_structure(method):
    r = batching.time_per_sample((1, 4), width=16, T=3, method=method, repeat=1)
    assert list(r["batch"]) == [1, 4]
    assert np.all(r["per_sample_s"] > 0) and np.all(r["gflops"] > 0)
    assert r["intensity"][1] > r["intensity"][0]
    d = batching.batch_point(2, 8, T=2, repeat=1)
    assert d["per_sample_s"] == pytest.approx(d["step_s"] / 2)


def test_training_step_methods_agree():
    p = rnn.init_params(4, 5, 3, seed=2, dtype=np.float64)
    rng = np.random.default_rng(0)
    X, Y = rng.uniform(-1, 1, (3, 2, 4)), rng.uniform(-1, 1, (3, 2, 3))
    a = batching.training_step(p, X, Y, 0.1, "reference")
    b = batching.training_step(p, X, Y, 0.1, "fast")
    np.testing.assert_allclose(a.Whh, b.Whh, rtol=1e-12, atol=1e-14)


def test_bad_inputs():
    with pytest.raises(ValueError, match="B"):
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
