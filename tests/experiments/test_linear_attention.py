"""experiments.linear_attention: the sweeps return their documented fields, the numbers agree, the MPI split
equals one process; bad sizes are named. (No timed assertions: timings are data here.)"""
import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.core import backend
from course_lib.experiments import linear_attention as xla
from helpers import raises_naming


def test_methods_vs_T_fields_and_the_scan_cap():
    res = xla.methods_vs_T([64, 256], 8, chunk=16, repeat=1, peak=100.0, max_scan_elements=64 * 64)
    assert [r["T"] for r in res["rows"]] == [64, 256]
    assert set(res["rows"][0]["per_token"]) == {"sequential", "scan", "chunked"}
    assert "scan" not in res["rows"][1]["per_token"]            # 256 * 8^2 > the cap
    r = res["rows"][0]
    assert r["pct_peak"] == pytest.approx(r["gflops"])          # peak = 100 GFLOP/s
    assert r["chunk"] == 16 and r["x_scan"] > 0


def test_chunk_sweep_and_widget_point():
    sw = xla.chunk_sweep(128, 8, (8, 32), repeat=1, peak=50.0)
    assert [r["chunk"] for r in sw["rows"]] == [8, 32] and sw["best"] in sw["rows"]
    pt = xla.matmul_sweep(T=64, chunk=512, d=8, repeat=1)      # a chunk longer than T is clipped
    assert pt["chunk"] == 64 and pt["max_rel_error"] < 1e-5 and set(pt["per_token"]) == set(xla.METHODS)
    assert xla.gemm_peak(1, n=128, repeat=1) > 0


def test_provider_race_has_a_row_per_provider():
    from course_lib.algorithms import gemm, linear_attention as la
    res = xla.provider_race(128, 8, chunk=32, repeat=1, peak=50.0)
    assert [r["provider"] for r in res["rows"]] == list(gemm.providers()) and res["best"] in res["rows"]
    for r in res["rows"]:
        assert r["per_token"] > 0 and r["products_per_token"] > 0
        assert r["pct_peak"] == pytest.approx(100 * la.chunked_flops(128, 8, 8, 32) / (r["per_token"] * 128) / 1e9 / 50)
    assert set(res["absent"]) == set(gemm.PROVIDERS) - set(gemm.providers())
    assert [r["provider"] for r in xla.provider_race(64, 4, chunk=16, providers=["numpy"], repeat=1,
                                                     peak=10.0)["rows"]] == ["numpy"]


def test_stage_times_fields_and_the_stages_compute_the_call():
    st_ = xla.stage_times(256, 8, chunk=32, repeat=1, peak=50.0)
    names = [r["stage"] for r in st_["rows"]]
    assert names[0] == "inputs" and {"Kw^T V", "Qd Kd^T", "[Qd|A] [S_in;V]", "carry_states"} <= set(names)
    prods = {r["stage"]: r for r in st_["rows"] if r["kind"] == "product"}
    assert prods["Kw^T V"]["shape"] == (8, 32, 8, 8) and prods["[Qd|A] [S_in;V]"]["shape"] == (32, 40, 8, 8)
    assert all(r["pct_peak"] == pytest.approx(2 * r["gflops"]) for r in prods.values())     # peak = 50
    assert st_["products_share"] == pytest.approx(sum(r["share"] for r in prods.values()))
    assert all(r["seconds"] > 0 for r in st_["rows"]) and st_["whole"] > 0
    # what is timed is the call: with one group of chunks the stages, run in order, give the loop's outputs
    q, k, v, dec = xla._problem(256, 8, 0)
    stages, _, O = xla._stages(q, k, v, dec, 32)
    for run in stages.values():
        run()
    ref = xla.la.recurrence_float64(q, k, v, dec)
    assert np.abs(O.reshape(256, 8) - ref[:, 0, 0]).max() < 1e-5


@pytest.mark.mpi
@pytest.mark.timeout(300)
@pytest.mark.skipif(not backend.mpi_available()[0], reason="no MPI here")
def test_mpi_split_equals_one_process():
    res = xla.mpi_split(512, nh=4, d=8, ranks=(1, 2), repeat=1)
    assert [(r["kind"], r["ranks"]) for r in res["rows"]] == [("elementwise", 1), ("gated", 1), ("elementwise", 2),
                                                                ("gated", 2)]
    assert all(r["max_rel_error"] < 1e-5 for r in res["rows"])
    assert res["alpha_s"] > 0 and res["beta_gbs"] > 0


# --- bad input
def test_bad_sizes_are_named():
    raises_naming(ValueError, "sizes[0]", xla.methods_vs_T, [0], 8)  # the index of the bad one
    raises_naming(ValueError, "d", xla.methods_vs_T, [8], 0)
    raises_naming(ValueError, "chunks[0]", xla.chunk_sweep, 64, 8, (128,))
    raises_naming(ValueError, "T", xla.matmul_sweep, T=0)
    raises_naming(ValueError, "threads", xla.gemm_peak, 0)


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (xla.gemm_peak, "n", st.one_of(NOT_SIZE, HUGE), {}),
    (xla.gemm_peak, "repeat", BAD_REPEAT, {"n": 8}),
    (xla.methods_vs_T, "sizes", BAD_SIZES, {"d": 4}),
    (xla.methods_vs_T, "methods", st.sampled_from(["chunked", (), ("bogus",)]), {"sizes": [8], "d": 4}),
    (xla.methods_vs_T, "peak", BAD_NUMBER.filter(lambda v: v is not None), {"sizes": [8], "d": 4}),
    (xla.methods_vs_T, "seed", BAD_SEED, {"sizes": [8], "d": 4}),
    (xla.chunk_sweep, "chunks", BAD_SIZES, {"T": 16, "d": 4}),
    (xla.matmul_sweep, "repeat", BAD_REPEAT, {"T": 16, "d": 4}),
    (xla.stage_times, "repeat", BAD_REPEAT, {"T": 16, "d": 4}),
    (xla.provider_race, "providers", st.sampled_from(["numpy", (), ("cublas",), 3, [None]]), {"T": 16, "d": 4}),
    (xla.provider_race, "chunk", NOT_SIZE.filter(lambda v: v is not None), {"T": 16, "d": 4}),
    (xla.stage_times, "T", st.one_of(NOT_SIZE, HUGE), {"d": 4}),
    (xla.stage_times, "chunk", NOT_SIZE.filter(lambda v: v is not None), {"T": 16, "d": 4}),
    (xla.mpi_split, "ranks", BAD_SIZES, {"T": 16, "nh": 4, "d": 4}),
    (xla.mpi_split, "timeout", BAD_NUMBER, {"T": 16, "nh": 4, "d": 4}),
    (xla.mpi_split, "nh", st.one_of(NOT_SIZE, HUGE), {"T": 16, "d": 4}),
]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)
