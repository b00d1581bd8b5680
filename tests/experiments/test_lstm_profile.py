"""course_lib.experiments.lstm_profile: the workspace pass by phase, every GEMM flop counted once."""
import numpy as np
import pytest

from course_lib.core.timing import gemm_flops
from course_lib.experiments import lstm_profile as P
from helpers import raises_naming


@pytest.mark.parametrize("backward", [False, True])
def test_profile_pass_covers_every_flop(backward):
    B, H, nx, T = 3, 8, 5, 4
    r = P.profile_pass(B, H, nx, T, backward=backward, repeat=3)
    passes = 3 if backward else 1
    assert np.isclose(sum(row["gflop"] for row in r["rows"]), passes * T * gemm_flops(B, 4 * H, nx + H) / 1e9)
    gemm = [row for row in r["rows"] if row["kind"] == "gemm"]
    assert len(gemm) == (5 if backward else 2)
    assert all(row["gflops"] > 0 and row["shape_peak"] > 0 and row["pct_shape_peak"] > 0 for row in gemm)
    assert all(row["gflops"] is None for row in r["rows"] if row["kind"] != "gemm")
    assert np.isclose(r["gemm_ms"] + r["non_gemm_ms"], r["total_ms"])
    assert np.isclose(r["other_ms"], r["total_ms"] - sum(row["ms"] for row in r["rows"]))
    assert r["largest"] in [row["phase"] for row in r["rows"]] + [P.OTHER]
    floor = sum(1e3 * row["gflop"] / row["shape_peak"] / T for row in gemm)   # every product at its shape's peak
    assert np.isclose(r["gemm_floor_ms"], floor) and 0 < r["gemm_floor_ms"] <= r["gemm_ms"] * (1 + 1e-9)


def test_profile_pass_bad_input():
    raises_naming(ValueError, "batch", P.profile_pass, 0, 8)
    raises_naming(ValueError, "T", P.profile_pass, 2, 8, T=0)
    raises_naming(TypeError, "backward", P.profile_pass, 2, 8, backward=1)
