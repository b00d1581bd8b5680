"""course_lib.experiments.matmul: the timing helpers of chapter 04 return well-formed data (structure and
correctness only: no timed assertions) and reject bad input naming the argument."""
import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.algorithms import matmul as mm
from course_lib.core import timing
from course_lib.experiments import matmul as X


def test_ladder_rows_and_accuracy():
    res = X.ladder(32, repeat=1)
    rows = res["rows"]
    assert res["n"] == 32 and isinstance(res["noise"], timing.Noise)
    assert [r["name"] for r in rows] == list(mm.MATMUL_KERNELS) + ["numpy"]
    for r in rows:
        assert r["seconds"] > 0 and r["gflops"] > 0 and r["max_abs_err"] < 1e-3
    assert rows[-1]["pct_of_blas"] == pytest.approx(100.0)


def test_ladder_accepts_a_callable():
    rows = X.ladder(16, [mm.matmul_ikj], repeat=1)["rows"]
    assert [r["name"] for r in rows] == ["matmul_ikj", "numpy"]


def test_gflops_of_and_bad_method():
    assert X.gflops_of("ikj", 16, repeat=1) > 0
    assert X.gflops_of("tiled_simd", 32, repeat=1, tile_i=8, tile_j=16, tile_k=8) > 0
    with pytest.raises(ValueError, match="method: expected one of naive"):
        X.gflops_of("fastest", 16)


def test_tile_sweep_grid_and_nan_for_oversized_tiles():
    res = X.tile_sweep(32, tiles_i=(8, 64), tiles_j=(16, 32), tile_k=8, repeat=1)
    grid = res["grid"]
    assert grid.shape == (2, 2)
    assert np.all(grid[0] > 0) and np.all(np.isnan(grid[1]))
    with pytest.raises(ValueError, match="method: expected one of tiled"):
        X.tile_sweep(32, method="ikj")


def test_time_combinations_rows():
    res = X.time_combinations(24, repeat=1, tile_i=8, tile_j=8, tile_k=8)
    rows = res["rows"]
    assert len(rows) == 8 and rows[0]["speedup"] == pytest.approx(1.0)
    assert {r["name"] for r in rows} == {mm.combination_name(*c) for c in mm.COMBINATIONS}


def test_vector_instructions_scalar_vs_simd():
    naive = X.vector_instructions("naive")
    simd = X.vector_instructions("tiled_simd")
    assert naive["vector"] == 0 and naive["scalar"] > 0
    assert simd["vector"] > 0 and simd["widest"] in ("xmm", "ymm", "zmm")
    with pytest.raises(ValueError, match="kernel: expected one of"):
        X.vector_instructions("numpy")
    with pytest.raises(TypeError, match="dispatcher"):
        X.simd_ops(np.matmul, ())


def test_compare_sizes_and_bad_input():
    res = X.compare_sizes((24, 32), ("ikj", "numpy"), repeat=1)
    assert res["sizes"] == (24, 32)
    assert set(res["rates"]) == {"ikj", "numpy"} and all(len(v) == 2 and min(v) > 0 for v in res["rates"].values())
    with pytest.raises(ValueError, match="sizes: expected at least two sizes"):
        X.compare_sizes((24,))
    with pytest.raises(ValueError, match=r"sizes\[0\]: expected an integer >= 1"):
        X.compare_sizes((0, 24))


def test_helpers_reject_bad_sizes():
    with pytest.raises(ValueError, match="n: expected an integer <= 4096"):
        X.ladder(5000)
    with pytest.raises(ValueError, match="n: expected an integer >= 1"):
        X.time_combinations(0)
    with pytest.raises(ValueError, match="repeat: expected an integer >= 1"):
        X.gflops_of("ikj", 8, repeat=0)


def test_tile_rate_for_the_widget():
    data = X.tile_rate(32, 64, 16, 8, repeat=1)
    assert data["tiles"] == (32, 16, 8) and data["ours"] > 0 and data["numpy"] > 0
    assert data["pct_of_blas"] == pytest.approx(100 * data["ours"] / data["numpy"])
    with pytest.raises(ValueError, match="tile_j: expected an integer >= 1"):
        X.tile_rate(32, 8, 0, 8)
    with pytest.raises(ValueError, match="method: expected one of tiled"):
        X.tile_rate(32, method="naive")


def test_plots_draw_the_data_they_are_given():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from course_lib.teaching.plots import matmul as kplots

    rows = X.ladder(16, ["ikj"], repeat=1)["rows"]
    ax = kplots.ladder_plot(rows, peak=100.0)
    np.testing.assert_allclose(ax.collections[-1].get_offsets()[:, 0], [r["gflops"] for r in rows])
    assert [t.get_text() for t in ax.get_yticklabels()] == [r["name"] for r in rows]
    assert ax.lines[0].get_xdata()[0] == 100.0  # the peak line
    ax = kplots.tile_heatmap(np.array([[1.0, np.nan], [2.0, 3.0]]), (4, 8), (4, 8), mark=(8, 4))
    labels = [t.get_text() for t in ax.texts]
    assert "3.0 ★" in labels and "seed" in labels and len(ax.patches) == 1  # best starred, the mark outlined
    assert ax.patches[0].get_xy() == (-0.5, 0.5)  # mark (8 rows, 4 cols): row index 1, column index 0
    combos = X.time_combinations(16, repeat=1, tile_i=4, tile_j=4, tile_k=4)["rows"]
    ax = kplots.combination_plot(combos)
    np.testing.assert_allclose(ax.collections[-1].get_offsets()[:, 0], [r["speedup"] for r in combos])
    ax = kplots.size_pair_plot({"ikj": (1.0, 2.0), "numpy": (2.0, 1.5)}, (10, 16))
    np.testing.assert_allclose([b.get_y() + b.get_height() for b in ax.patches], [2.0, 0.75])  # ratio tops
    import matplotlib.pyplot as plt
    plt.close("all")


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (X.gflops_of, "n", st.one_of(NOT_SIZE, HUGE), {}),
    (X.gflops_of, "dtype", st.sampled_from(["bogus", "int32", 3]), {"n": 8}),
    (X.gflops_of, "seed", BAD_SEED, {"n": 8}),
    (X.ladder, "repeat", BAD_REPEAT, {"n": 8}),
    (X.tile_sweep, "tiles_i", BAD_SIZES, {"n": 8}),
    (X.tile_rate, "repeat", BAD_REPEAT, {"n": 8}),
    (X.compare_sizes, "sizes", BAD_SIZES, {}),
    (X.compare_sizes, "methods", st.sampled_from(["numpy", 3, ("bogus",)]), {"sizes": (8, 16)}),
    (X.time_combinations, "tile_i", st.one_of(NOT_SIZE, HUGE), {"n": 8}),
    (X.vector_instructions, "kernel", st.sampled_from(["bogus", 3, None, ["ikj"]]), {}),
    (X.vector_instructions, "dtype", st.sampled_from(["bogus", "int32", 3]), {"kernel": "tiled_simd"}),
]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)
