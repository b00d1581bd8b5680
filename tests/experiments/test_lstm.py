"""course_lib.experiments.lstm: the chapter 09 measuring helpers return well-formed tables (no timed
assertions), the Fig. 3 traffic model counts what it says, and bad input names the argument."""
import numpy as np
import pytest

from course_lib.experiments import lstm as E
from course_lib.experiments import lstm_layout
from course_lib.models import lstm


def test_profile_step_counts_calls():
    naive = E.profile_step(4, 8, method="naive", repeat=1)
    pre = E.profile_step(4, 8, method="fused_pre", repeat=1)
    tr = E.profile_step(4, 8, method="transposed", repeat=1)
    fu = E.profile_step(4, 8, method="fused", repeat=1)
    ws = E.profile_step(4, 8, method="workspace", repeat=1)
    assert ws["calls_per_step"] == 2 and [label for _, label, _ in ws["ops"]] == ["h W_hh^T", "one-pass gate kernel"]
    assert naive["calls_per_step"] == 34 and pre["calls_per_step"] == 2 and tr["calls_per_step"] == 2
    assert fu["calls_per_step"] == 4 and naive["method"] == "naive"
    assert sum(k == "gemm" for k, _, _ in naive["ops"]) == 8
    for r in (naive, pre, tr, fu):
        assert 0 < r["gemm_share"] <= 1
        assert r["gemm_s"] > 0 and r["elementwise_s"] > 0
    with pytest.raises(ValueError, match="method: expected one of"):
        E.profile_step(4, 8, method="auto")


def test_method_times_step_time_overhead_widget():
    v = E.method_times(2, 8, 4, 3, repeat=1, backward=True)
    assert set(v["ms_per_step"]) == set(lstm.METHODS) and v["best"] in lstm.METHODS
    assert v["best"] == min(v["ms_per_step"], key=v["ms_per_step"].get)
    assert set(v["comparison"].timings) == set(lstm.METHODS)
    assert E.step_time(2, 8, 4, 2, method="fused", repeat=1) > 0
    o = E.overhead_vs_batch([1, 2], nh=8, T=2, repeat=1)
    assert o["B"] == [1, 2] and len(o["naive"]) == 2 and all(t > 0 for t in o["fused_pre"])
    assert hasattr(o["noise"], "ok") and hasattr(E.profile_step(2, 4, repeat=1)["noise"], "ok")
    lat = E.latency_vs_batch([1, 3], nh=8, methods=("fused_pre", "gemv"), T=2, repeat=1)
    assert lat["B"] == [1, 3] and lat["nh"] == 8 and len(lat["gemv"]) == 2 and all(t > 0 for t in lat["fused_pre"])
    with pytest.raises(ValueError, match="batches"):
        E.latency_vs_batch([], nh=8)
    g = E.profile_step(3, 4, method="gemv", repeat=1)
    assert g["calls_per_step"] == 4 and g["ops"][0][1] == "W_hh h_b, 3 gemv"
    w = E.widget_compute(batch=2, nh=8, method="transposed", T=2)
    assert set(w["ms_per_step"]) == {"naive", "transposed"} and set(w["gflops"]) == {"naive", "transposed"}


def test_layout_gemm_and_loop_order_times():
    r = E.layout_gemm_times(4, 8, repeat=2)
    assert r["XWt_s"] > 0 and r["WXt_s"] > 0 and r["ratio"] == pytest.approx(r["XWt_s"] / r["WXt_s"])
    q = E.loop_order_times(3, 5, 7, repeat=2)
    assert q["agree"] and q["ratio"] == pytest.approx(q["XWt_s"] / q["WXt_s"])


def test_rowdot_is_a_product_with_the_second_operand_transposed():
    rng = np.random.default_rng(0)
    A, Bm = rng.standard_normal((5, 9)).astype(np.float32), rng.standard_normal((7, 9)).astype(np.float32)
    out = np.empty((5, 7), np.float32)
    lstm_layout._rowdot(A, Bm, out)
    np.testing.assert_allclose(out, A @ Bm.T, rtol=1e-5, atol=1e-5)


def test_traffic_model_at_the_seed_shape():
    """X 64x512 (128 KiB) fits a 1 MiB cache, W 2048x512 (4 MiB) does not: W X^T re-reads X from cache,
    X W^T re-reads W from below -- 64 times the bytes; with a 32 MiB cache both fit."""
    m = E.layout_traffic_model(64, 512, 512, caches={"L1d": 48 * 1024, "L2": 1 << 20, "L3": 32 << 20})
    assert m["modelled"] and m["bytes_X"] == 64 * 512 * 4 and m["bytes_W"] == 2048 * 512 * 4
    L1, L2, L3 = (m["levels"][k] for k in ("L1d", "L2", "L3"))
    assert not L2["XWt"]["inner_fits"] and L2["WXt"]["inner_fits"]
    assert L2["XWt"]["hit_rate"] == pytest.approx(0.5, abs=0.01) and L2["WXt"]["hit_rate"] > 0.99
    # X W^T: X once + W once per row of X; W X^T: W once + X once
    assert L2["XWt"]["bytes_from_below"] == m["bytes_X"] + 64 * m["bytes_W"]
    assert L2["WXt"]["bytes_from_below"] == m["bytes_X"] + m["bytes_W"]
    assert L3["XWt"]["hit_rate"] == L3["WXt"]["hit_rate"] > 0.99
    assert L1["XWt"]["hit_rate"] < 0.51 and L1["WXt"]["hit_rate"] < 0.51
    with pytest.raises(ValueError, match="caches"):
        E.layout_traffic_model(64, 512, caches={"L2": 0})


def test_counters_measure_or_say_why_not():
    res, why = E.hardware_counters(2, 4, 4, reps=1, timeout=60)
    assert (res is None and why) or (set(res["hit_rate"]) == {"XWt", "WXt"} and why == "")


def test_parse_perf_skips_unsupported_counters():
    text = ("123456,,cache-references,1000,100.00,,\n"
            "<not supported>,,cache-misses,0,100.00,,\n"
            "77,,L1-dcache-loads,1000,100.00,,\n")
    assert lstm_layout._parse_perf(text) == {"cache-references": 123456.0, "L1-dcache-loads": 77.0}


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="batch: expected an integer >= 1"):
        E.layout_gemm_times(0, 8)
    with pytest.raises(ValueError, match="methods: expected one of"):
        E.method_times(2, 8, 4, methods=("naive", "cudnn"))
    with pytest.raises(ValueError, match="methods: expected at least one"):
        E.method_times(2, 8, 4, methods=())
    with pytest.raises(ValueError, match="method: expected one of"):
        E.step_time(2, 8, 4, method="x")
    with pytest.raises(ValueError, match="nx: expected an integer >= 1"):
        E.loop_order_times(2, 8, 0)
    with pytest.raises(ValueError, match="reps: expected an integer >= 1"):
        E.hardware_counters(2, 8, reps=0)


def test_lm_throughput_same_losses_for_every_method():
    ids = np.arange(300) % 5
    r = E.lm_throughput(ids, 5, methods=("naive", "fused_pre"), nh=6, T=4, batch=3, steps=3)
    assert set(r["tokens_per_s"]) == {"naive", "fused_pre"} and r["best"] in r["tokens_per_s"]
    np.testing.assert_allclose(r["loss"]["naive"], r["loss"]["fused_pre"], rtol=1e-4)


def test_profile_training_covers_every_flop_of_the_pass():
    """The profile's GEMM phases are exactly the training pass's GEMMs: forward (x and h parts) plus
    twice that backward, T steps -- 3 T * 2 B 4H (nx + H) flops; every phase is timed."""
    from course_lib.core.timing import gemm_flops

    B, H, nx, T = 3, 8, 5, 4
    r = E.profile_training(B, H, nx, T, repeat=3, peak=100.0)
    assert len(r["rows"]) == 11 and all(row["ms"] > 0 for row in r["rows"])
    gemm = [row for row in r["rows"] if row["kind"] == "gemm"]
    assert len(gemm) == 5 and all(row["gflops"] > 0 and row["pct_peak"] > 0 for row in gemm)
    assert np.isclose(sum(row["gflop"] for row in r["rows"]), 3 * T * gemm_flops(B, 4 * H, nx + H) / 1e9)
    assert r["total_ms"] > 0 and np.isclose(r["other_ms"], r["total_ms"] - r["sum_ms"])
    assert all(row["gflops"] is None for row in r["rows"] if row["kind"] != "gemm")


def test_profile_training_rejects_bad_sizes():
    with pytest.raises(ValueError, match="batch"):
        E.profile_training(0, 8)
    with pytest.raises(ValueError, match="T"):
        E.profile_training(2, 8, T=0)


# --------------------------------------------------------------------------- seed 003's fused baseline
class _StandInTorch:
    """Just the torch calls fused_baseline makes; its "LSTM" is our fused_pre layer (numpy)."""

    def __init__(self):
        self.threads, self.set_calls, self.calls = 4, [], 0
        outer = self

        class LSTM:
            def __init__(self, nx, nh):
                self.p = lstm.init_params(nx, nh, seed=0, dtype=np.float32)

            def __call__(self, X):
                outer.calls += 1
                return lstm.lstm_forward(self.p, X, method="fused_pre")

        class nn:
            pass
        nn.LSTM = LSTM
        self.nn = nn

    def from_numpy(self, a):
        return a

    def no_grad(self):
        import contextlib
        return contextlib.nullcontext()

    def get_num_threads(self):
        return self.threads

    def set_num_threads(self, n):
        self.set_calls.append(n)
        self.threads = n


def test_fused_baseline_times_torch_beside_our_methods_with_a_stand_in():
    fake = _StandInTorch()
    r = E.fused_baseline(2, 4, 3, T=3, repeat=2, torch_module=fake)
    assert r["available"] and set(r["ms_per_step"]) == {"naive", "fused_pre", "torch"}
    assert fake.calls >= 2 and all(v > 0 for v in r["ms_per_step"].values())
    assert fake.set_calls == [1, 4] and fake.threads == 4        # one thread while timing, then restored
    assert r["comparison"].faster("torch", over="naive") in ("yes", "no", "cannot tell")


def test_fused_baseline_says_why_without_torch(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "torch", None)            # import torch -> ImportError
    r = E.fused_baseline(2, 4, 3, T=2)
    assert r == {"available": False, "why": r["why"]} and "torch is not installed" in r["why"]


def test_fused_baseline_with_real_torch():
    pytest.importorskip("torch")
    r = E.fused_baseline(4, 8, 8, T=3, repeat=2)
    assert r["available"] and r["ms_per_step"]["torch"] > 0


def test_fused_baseline_bad_input():
    from helpers import raises_naming
    raises_naming(ValueError, "nh", E.fused_baseline, 2, 0, 3)


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (E.step_time, "batch", st.one_of(NOT_SIZE, HUGE), {"nh": 4, "nx": 4}),
    (E.step_time, "nh", HUGE, {"batch": 2, "nx": 4}),
    (E.step_time, "dtype", st.sampled_from(["bogus", "int32", 3]), {"batch": 2, "nh": 4, "nx": 4, "T": 2}),
    (E.step_time, "backward", st.sampled_from(["yes", 2, None]), {"batch": 2, "nh": 4, "nx": 4, "T": 2}),
    (E.method_times, "methods", st.sampled_from(["naive", (), ("bogus",), 3]), {"batch": 2, "nh": 4, "nx": 4}),
    (E.method_times, "repeat", BAD_REPEAT, {"batch": 2, "nh": 4, "nx": 4, "T": 2}),
    (E.fused_baseline, "repeat", BAD_REPEAT, {"batch": 2, "nh": 4, "nx": 4, "T": 2}),
    (E.latency_vs_batch, "batches", BAD_SIZES, {"nh": 4}),
    (E.overhead_vs_batch, "batches", BAD_SIZES, {"nh": 4}),
    (E.profile_step, "nx", st.one_of(NOT_SIZE_NN, HUGE), {"batch": 2, "nh": 4}),
    (E.profile_training, "peak", BAD_NUMBER.filter(lambda v: v is not None), {"batch": 2, "nh": 4, "T": 2}),
    (E.lm_throughput, "repeat", BAD_REPEAT, {"ids": np.zeros(50, np.int64), "V": 3}),
    (E.widget_compute, "T", st.one_of(NOT_SIZE, HUGE), {"batch": 2, "nh": 4}),
    (lstm_layout.layout_gemm_times, "batch", st.one_of(NOT_SIZE, HUGE), {"nh": 4}),
    (lstm_layout.loop_order_times, "dtype", st.sampled_from(["bogus", "int32", 3]), {"batch": 2, "nh": 4}),
    (lstm_layout.layout_traffic_model, "line", NOT_SIZE, {"batch": 2, "nh": 4}),
    (lstm_layout.hardware_counters, "timeout", BAD_NUMBER, {"batch": 2, "nh": 4}),
]


def test_the_traffic_model_is_a_model_huge_sizes_are_fine():
    """layout_traffic_model allocates nothing: a huge (but whole) size is a correct answer, not an error."""
    out = finishes_fast(lstm_layout.layout_traffic_model, 10**6, 10**5)
    assert out["B"] == 10**6 and out["nh"] == 10**5


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)


def test_gemm_share_interval_holds_the_share_and_stays_a_share():
    """Issue 43: the share's interval is where it lies if each part were off by the repeats' largest spread."""
    p = E.profile_step(4, 8, method="fused_pre", repeat=3)
    iv = p["gemm_share_interval"]
    if p["noise"].busy:                  # wall clock on a busy machine: no spread bounds the load
        assert iv is None
    else:
        lo, hi = iv
        assert 0 < lo <= p["gemm_share"] <= hi < 1
        s2 = (1 + p["noise"].spread) ** 2
        assert hi == pytest.approx(p["gemm_s"] * s2 / (p["gemm_s"] * s2 + p["elementwise_s"]))


def test_method_times_takes_a_time_budget_for_more_rounds():
    """Chapter 09 re-times two methods alone when a verdict's interval spans two outcomes: compare()'s budget."""
    r = E.method_times(1, 8, 8, 2, methods=("naive", "fused_pre"), repeat=3, time_budget=0.0)
    assert len(r["comparison"].timings["naive"].times) == 3     # no time for more rounds than asked
    with pytest.raises(ValueError, match="time_budget"):
        E.method_times(1, 8, 8, 2, methods=("naive", "fused_pre"), time_budget=-1.0)
