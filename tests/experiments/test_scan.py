"""course_lib.experiments.scan: every measuring helper returns well-formed data (tiny sizes; no timed
assertions -- the machine is shared), and rejects bad input naming the argument."""
import pytest

import course_lib  # noqa: F401  (before numba)
from course_lib.algorithms import scan, scan_kernels
from course_lib.core import backend, timing
from course_lib.experiments import scan as xs
from helpers import raises_naming


def test_methods_vs_T_and_thread_scaling():
    d = xs.methods_vs_T([256, 1024], 8, repeat=1)
    assert [r["T"] for r in d["rows"]] == [256, 1024] and isinstance(d["noise"], timing.Noise)
    assert set(d["rows"][0]["seconds"]) == {"sequential", "chunked", "channels"}
    assert d["rows"][0]["speedup"]["sequential"] == 1.0
    t = xs.thread_scaling(2048, 4, repeat=1)
    assert [r["threads"] for r in t["rows"]][0] == 1 and t["sequential_seconds"] > 0


def test_crossover_and_lanes():
    c = xs.crossover([64, 256], [1, 4], repeat=1, max_elements=512)
    assert set(c["cells"]) == {(64, 1), (256, 1), (64, 4)}
    assert all(cell["winner"] in ("sequential", "channels", "chunked") for cell in c["cells"].values())
    assert all(isinstance(cell["decided"], bool) for cell in c["cells"].values())
    lv = xs.lanes_vs_scalar(4096, 1, repeat=1)
    lanes = backend.simd_bytes() // 4          # one float32 channel: every lane of this CPU's vectors
    assert lv["lanes"] == lanes and f"{lanes} lanes" in lv["seconds"]
    ins = xs.lane_instructions()
    assert set(ins) == {"lane kernel", "serial loop"} and ins["lane kernel"]["vector"] > 0
    # the loop counted is the one a one-channel chunked scan runs here (issue 43: facts of the code that ran)
    flat = scan_kernels.flat_lanes(1, scan.choose_lanes(1, 4))
    assert ins["lane kernel"]["function"] == ("scan_lanes.rows_scan" if flat else "scan_kernels.level")


def test_phases():
    a, x, h0 = scan.random_problem(2000, 4, seed=0)
    ph = xs.chunked_phases(a, x, h0, chunks=4, repeat=1)
    assert ph["chunks"] == 4 and abs(sum(ph[f"{p}_frac"] for p in xs.PHASES) - 1) < 1e-9
    a, x, h0 = scan.random_problem(40, 1, seed=0)
    ph = xs.cuda_phases(a, x, h0, block=4, chunk=4)
    assert ph["grid"] == 3 and abs(sum(ph[f"{p}_frac"] for p in xs.PHASES) - 1) < 1e-9


def test_scan_sweep():
    d = xs.scan_sweep(T=2048, nh=8, method="chunked", chunks=3, repeat=1)
    assert d["chunks"] == 3 and d["max_rel_error"] < 1e-5 and d["seconds"] > 0
    d = xs.scan_sweep(T=1024, nh=4, method="channels", threads=1, repeat=1)
    assert d["chunks"] is None
    with pytest.raises(ValueError, match="method: expected one of"):
        xs.scan_sweep(method="cuda_chunked")


def test_layer_speedup_and_remember_first():
    r = xs.layer_speedup("sru", 512, 1, 4, 4, repeat=1)
    assert r["layer_speedup"]["sequential"] == 1.0 and 0 < r["scan_share"] <= 1 and r["cap"] >= 1
    assert set(r["amdahl"]) == {"sequential", "channels", "chunked"}
    t = xs.remember_first(8, nh=8, max_epochs=2)
    assert [row["layer"] for row in t["rows"]] == ["lstm", "gilr_lstm"]
    assert all(row["epochs"] <= 2 for row in t["rows"])
    with pytest.raises(ValueError, match="layer: expected one of"):
        xs.layer_speedup("lstm")
    with pytest.raises(ValueError, match="layers\\[i\\]: expected one of"):
        xs.remember_first(8, layers=("gru",))


def test_backward_speedup_agrees_with_the_serial_backward():
    """The backward helper times the right things: its parallel backward equals the serial one, the
    speed-ups are the ratios of its own timings, and bad arguments are named."""
    r = xs.backward_speedup(2000, 3, repeat=2)
    assert r["max_rel_diff"] < 1e-5 and set(r["ms"]) == {"scan_seq", "scan_par", "whole_seq", "whole_par"}
    assert r["scan_speedup"] == pytest.approx(r["ms"]["scan_seq"] / r["ms"]["scan_par"])
    assert r["whole_speedup"] == pytest.approx(r["ms"]["whole_seq"] / r["ms"]["whole_par"])
    assert 0 < r["scan_share"] and hasattr(r["noise"], "ok")
    with pytest.raises(ValueError, match="method"):
        xs.backward_speedup(100, 1, method="cuda_chunked")
    with pytest.raises(ValueError, match="T"):
        xs.backward_speedup(0, 1)


# --------------------------------------------------------------------------- bad input: lane_instructions
@pytest.mark.timeout(30)
@pytest.mark.parametrize("dtype", ["int32", "float16", "nope", 3.5])
def test_scan_lane_instructions_dtype(dtype):
    raises_naming(TypeError, "dtype", xs.lane_instructions, dtype)


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (xs.methods_vs_T, "sizes", BAD_SIZES, {"nh": 4}),
    (xs.methods_vs_T, "methods", st.sampled_from(["chunked", (), ("bogus",), 3]), {"sizes": [8], "nh": 4}),
    (xs.thread_scaling, "T", st.one_of(NOT_SIZE, HUGE), {"nh": 4}),
    (xs.thread_scaling, "seed", BAD_SEED, {"T": 8, "nh": 4}),
    (xs.crossover, "Hs", BAD_SIZES, {"Ts": [8]}),
    (xs.crossover, "max_elements", HUGE, {"Ts": [8], "Hs": [4]}),
    (xs.lanes_vs_scalar, "repeat", BAD_REPEAT, {"T": 8}),
    (xs.backward_speedup, "nh", st.one_of(NOT_SIZE, HUGE), {"T": 8}),
    (xs.layer_speedup, "dtype", st.sampled_from(["bogus", "int32", 3]), {"T": 8}),
    (xs.layer_speedup, "nx", st.one_of(NOT_SIZE, HUGE), {"T": 8}),
    (xs.remember_first, "layers", st.sampled_from(["lstm", (), ("bogus",), 3]), {"T": 8}),
    (xs.remember_first, "method", st.sampled_from(["bogus", 3]), {"T": 8}),
]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)


def test_crossover_sentence_is_computed_from_the_row_it_reads():
    # the Intel Xeon quiet run: the loop won at H = 1..16, the scan only at the largest H
    intel = [(1, "sequential"), (2, "sequential"), (4, "sequential"), (8, "sequential"), (16, "sequential"),
             (64, "chunked")]
    line = xs.crossover_sentence(intel)
    assert "for H in [64]" in line and "at smaller H ([1, 2, 4, 8, 16]) the serial loop won" in line
    assert "larger H" not in line and "took over" not in line
    # the Zen 5 run: the scan at small H, the loop and the channel split above
    zen = [(64, "channels"), (1, "chunked"), (2, "chunked"), (4, "chunked"), (8, "sequential")]
    line = xs.crossover_sentence(zen)
    assert "for H in [1, 2, 4]" in line and "smaller H" not in line
    assert "at larger H ([8, 64]) parallel over channels or the serial loop took over" in line
    assert "between them ([2]) the serial loop won" in xs.crossover_sentence([(1, "chunked"), (2, "sequential"),
                                                                               (4, "chunked")])
    assert xs.crossover_sentence([(4, "chunked")]).endswith("no other H was decided.")
    assert "none of the H" in xs.crossover_sentence([(1, "sequential")]) and xs.crossover_sentence([]) == ""
    with pytest.raises(ValueError, match="winner"):
        xs.crossover_sentence([(1, "fastest")])
