"""course_lib.algorithms.matmul: every rung of the matmul ladder and the fused element-wise kernels agree
with numpy; bad inputs raise clear errors. No timed assertions (speed lives in benchmarks/)."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (sets up numba's CUDA simulator flag first)
from course_lib.algorithms import matmul as K

SHAPES = [(1, 1, 1), (7, 5, 3), (33, 17, 65), (64, 64, 64), (70, 130, 41), (5, 1, 9)]
TOL = {np.float32: dict(rtol=2e-4, atol=2e-4), np.float64: dict(rtol=1e-10, atol=1e-10)}


def _ab(m, k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)


def _ref(A, B):
    return A.astype(np.float64) @ B.astype(np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(K.MATMUL_KERNELS))
@pytest.mark.parametrize("shape", SHAPES)
def test_ladder_matches_numpy(name, shape, dtype):
    A, B = _ab(*shape, dtype)
    C = K.MATMUL_KERNELS[name](A, B)
    assert C.shape == (shape[0], shape[2]) and C.dtype == dtype
    np.testing.assert_allclose(C, _ref(A, B), **TOL[dtype])


@pytest.mark.parametrize("name", ["tiled", "tiled_simd", "parallel_tiled"])
@pytest.mark.parametrize("tiles", [(1, 1, 1), (3, 5, 7), (16, 32, 8), (70, 41, 130)])
def test_tiled_any_tile_sizes(name, tiles):
    A, B = _ab(70, 130, 41, np.float32, seed=1)
    C = K.MATMUL_KERNELS[name](A, B, *tiles)
    np.testing.assert_allclose(C, _ref(A, B), **TOL[np.float32])


@pytest.mark.parametrize("combo", K.COMBINATIONS)
def test_eight_combinations_agree(combo):
    A, B = _ab(45, 37, 29, np.float32, seed=2)
    f = K.combination_kernel(*combo, tile_i=8, tile_j=16, tile_k=8)
    np.testing.assert_allclose(f(A, B), _ref(A, B), **TOL[np.float32])
    assert K.combination_name(*combo) in f.__doc__


def test_combination_names_are_distinct():
    names = [K.combination_name(*c) for c in K.COMBINATIONS]
    assert len(set(names)) == 8 and names[0] == "serial" and names[-1] == "tiled + simd + parallel"


def test_out_argument_is_filled_and_returned():
    A, B = _ab(20, 30, 40, np.float32)
    for f in K.MATMUL_KERNELS.values():
        out = np.full((20, 40), np.nan, np.float32)
        C = f(A, B, out=out)
        assert C is out
        np.testing.assert_allclose(out, _ref(A, B), **TOL[np.float32])


def test_noncontiguous_inputs_are_copied_not_misread():
    A, B = _ab(40, 60, 50, np.float64)
    At = np.asfortranarray(A)
    Bs = np.ascontiguousarray(np.repeat(B, 2, axis=1))[:, ::2]
    assert not Bs.flags.c_contiguous
    for f in K.MATMUL_KERNELS.values():
        np.testing.assert_allclose(f(At, Bs), _ref(A, B), **TOL[np.float64])


def test_empty_inner_dimension_gives_zeros():
    A, B = np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32)
    for f in K.MATMUL_KERNELS.values():
        assert np.array_equal(f(A, B), np.zeros((3, 4), np.float32))


def test_serial_and_parallel_are_identical_per_row():
    # parallel kernels split rows between threads but keep each row's summation order, so they
    # agree with their serial twins to round-off (fastmath may contract differently)
    A, B = _ab(64, 48, 80, np.float32, seed=3)
    np.testing.assert_allclose(K.combination_kernel(True, True, False, 8, 16, 8)(A, B),
                               K.combination_kernel(True, True, True, 8, 16, 8)(A, B), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(K.combination_kernel(True, False, False, 8, 16, 8)(A, B),
                               K.combination_kernel(True, False, True, 8, 16, 8)(A, B), rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- bad input
def test_mismatched_inner_dimensions():
    A, B = _ab(4, 5, 6, np.float32)
    with pytest.raises(ValueError, match="B: expected shape"):
        K.matmul_ikj(A, B.T)


def test_mixed_dtypes_rejected():
    A, B = _ab(4, 5, 6, np.float32)
    with pytest.raises(ValueError, match="same dtype as A"):
        K.matmul_tiled(A, B.astype(np.float64))


@pytest.mark.parametrize("bad", [np.ones((3, 3), np.int64), np.ones((3, 3), np.float16)])
def test_non_float_rejected(bad):
    with pytest.raises(TypeError, match="A: expected a float32 or float64"):
        K.matmul_naive(bad, np.ones((3, 3), np.float32))


def test_wrong_ndim_rejected():
    with pytest.raises(ValueError, match="A: expected a 2-D array"):
        K.matmul_parallel(np.ones(3, np.float32), np.ones((3, 3), np.float32))


@pytest.mark.parametrize("name", ["tiled", "tiled_simd", "parallel_tiled"])
def test_bad_tile_sizes(name):
    A, B = _ab(10, 20, 30, np.float32)
    f = K.MATMUL_KERNELS[name]
    with pytest.raises(ValueError, match="tile_i: expected an integer >= 1, got 0"):
        f(A, B, 0, 4, 4)
    with pytest.raises(ValueError, match=r"tile_j: expected a tile size between 1 and n \(columns of B\) = 30, got 31"):
        f(A, B, 4, 31, 4)
    with pytest.raises(ValueError, match=r"tile_k: .* = 20, got 64"):
        f(A, B, 4, 4, 64)
    with pytest.raises(TypeError, match="tile_i: expected an integer"):
        f(A, B, 2.5, 4, 4)


def test_default_tiles_clip_to_small_matrices():
    A, B = _ab(3, 2, 5, np.float32)
    for name in ("tiled", "tiled_simd", "parallel_tiled"):
        np.testing.assert_allclose(K.MATMUL_KERNELS[name](A, B), _ref(A, B), **TOL[np.float32])


def test_bad_out():
    A, B = _ab(4, 5, 6, np.float32)
    with pytest.raises(ValueError, match="out: expected shape"):
        K.matmul_tiled_simd(A, B, out=np.empty((6, 4), np.float32))
    with pytest.raises(TypeError, match="out: expected dtype float32"):
        K.matmul_tiled_simd(A, B, out=np.empty((4, 6), np.float64))
    with pytest.raises(ValueError, match="out: expected a C-contiguous"):
        K.matmul_tiled_simd(A, B, out=np.empty((6, 4), np.float32).T)
    sq = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match="out: must not share memory"):
        K.matmul_ikj(sq, sq, out=sq)


def test_nan_input_rejected():
    A, B = _ab(4, 5, 6, np.float32)
    A[1, 2] = np.nan
    with pytest.raises(ValueError, match="A: contains 1 non-finite"):
        K.matmul_parallel_tiled(A, B)


def test_combination_kernel_bad_flags():
    with pytest.raises(TypeError, match="simd: expected a bool"):
        K.combination_kernel(True, 1, False)
    with pytest.raises(ValueError, match="tile_j: expected an integer >= 1"):
        K.combination_kernel(True, True, False, tile_j=0)


# --------------------------------------------------------------------------- element-wise
ELEMENTWISE = [
    (K.tanh_backward, lambda a, b: a * (1 - b * b)),
    (K.tanh_backward_parallel, lambda a, b: a * (1 - b * b)),
    (K.output_delta, lambda a, b: 2 * (a - b) * (1 - a * a)),
    (K.output_delta_parallel, lambda a, b: 2 * (a - b) * (1 - a * a)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1,), (7, 3), (5, 4, 9), (0, 3)])
@pytest.mark.parametrize("fn,ref", ELEMENTWISE)
def test_elementwise_matches_numpy(fn, ref, shape, dtype):
    rng = np.random.default_rng(5)
    a = np.tanh(rng.standard_normal(shape)).astype(dtype)
    b = np.tanh(rng.standard_normal(shape)).astype(dtype)
    got = fn(a, b)
    assert got.shape == shape and got.dtype == dtype
    np.testing.assert_allclose(got, ref(a.astype(np.float64), b.astype(np.float64)), **TOL[dtype])


@pytest.mark.parametrize("fn,ref", ELEMENTWISE)
def test_elementwise_out_in_place_and_noncontiguous(fn, ref):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((6, 8)).astype(np.float32)
    b = rng.standard_normal((8, 6)).astype(np.float32).T  # non-contiguous: copied
    expected = ref(a.astype(np.float64), b.astype(np.float64))
    res = fn(a, b, out=a)  # in place into the first argument
    assert res is a
    np.testing.assert_allclose(a, expected, **TOL[np.float32])


def test_serial_equals_parallel_elementwise():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((2, 300, 200)).astype(np.float32)
    np.testing.assert_allclose(K.tanh_backward(a, b), K.tanh_backward_parallel(a, b), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(K.output_delta(a, b), K.output_delta_parallel(a, b), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn,_", ELEMENTWISE)
def test_elementwise_bad_input(fn, _):
    a = np.ones((3, 4), np.float32)
    first, second = ("dh", "h") if "tanh" in fn.__name__ else ("yhat", "y")
    with pytest.raises(ValueError, match=f"{second}: expected the same shape as {first}"):
        fn(a, np.ones((4, 3), np.float32))
    with pytest.raises(ValueError, match=f"{second}: expected the same dtype as {first}"):
        fn(a, np.ones((3, 4), np.float64))
    with pytest.raises(TypeError, match=f"{first}: expected a float32 or float64"):
        fn(np.ones((3, 4), np.int32), a)
    with pytest.raises(ValueError, match="out: expected shape"):
        fn(a, a, out=np.empty((4, 3), np.float32))


# --------------------------------------------------------------------------- helpers
def test_ladder_rows_and_accuracy():
    rows = K.ladder(32, repeat=1)
    assert [r["name"] for r in rows] == list(K.MATMUL_KERNELS) + ["numpy"]
    for r in rows:
        assert r["seconds"] > 0 and r["gflops"] > 0 and r["max_abs_err"] < 1e-3
    assert rows[-1]["pct_of_blas"] == pytest.approx(100.0)


def test_gflops_of_and_bad_kernel():
    assert K.gflops_of("ikj", 16, repeat=1) > 0
    assert K.gflops_of("tiled_simd", 32, repeat=1, tile_i=8, tile_j=16, tile_k=8) > 0
    with pytest.raises(ValueError, match="kernel: expected one of naive"):
        K.gflops_of("fastest", 16)


def test_tile_sweep_grid_and_nan_for_oversized_tiles():
    grid = K.tile_sweep(32, tiles_i=(8, 64), tiles_j=(16, 32), tile_k=8, repeat=1)
    assert grid.shape == (2, 2)
    assert np.all(grid[0] > 0) and np.all(np.isnan(grid[1]))
    with pytest.raises(ValueError, match="kernel: expected one of tiled"):
        K.tile_sweep(32, kernel="ikj")


def test_time_combinations_rows():
    rows = K.time_combinations(24, repeat=1, tile_i=8, tile_j=8, tile_k=8)
    assert len(rows) == 8 and rows[0]["speedup"] == pytest.approx(1.0)
    assert {r["name"] for r in rows} == {K.combination_name(*c) for c in K.COMBINATIONS}


def test_vector_instructions_scalar_vs_simd():
    naive = K.vector_instructions("naive")
    simd = K.vector_instructions("tiled_simd")
    assert naive["vector"] == 0 and naive["scalar"] > 0
    assert simd["vector"] > 0 and simd["widest"] in ("xmm", "ymm", "zmm")
    with pytest.raises(ValueError, match="kernel: expected one of"):
        K.vector_instructions("numpy")


def test_compare_sizes_and_bad_input():
    res = K.compare_sizes((24, 32), ("ikj", "numpy"), repeat=1)
    assert set(res) == {"ikj", "numpy"} and all(len(v) == 2 and min(v) > 0 for v in res.values())
    with pytest.raises(ValueError, match="sizes: expected at least two sizes"):
        K.compare_sizes((24,))
    with pytest.raises(ValueError, match="sizes: expected an integer >= 1"):
        K.compare_sizes((0, 24))


def test_helpers_reject_bad_sizes():
    with pytest.raises(ValueError, match="n: expected an integer <= 4096"):
        K.ladder(5000)
    with pytest.raises(ValueError, match="n: expected an integer >= 1"):
        K.time_combinations(0)
    with pytest.raises(ValueError, match="repeat: expected an integer >= 1"):
        K.gflops_of("ikj", 8, repeat=0)


def test_parallel_rows_per_block_validated():
    A, B = _ab(10, 4, 6, np.float32)
    np.testing.assert_allclose(K.matmul_parallel(A, B, rows_per_block=3), _ref(A, B), **TOL[np.float32])
    with pytest.raises(ValueError, match=r"rows_per_block: expected a tile size between 1 and m \(rows of A\) = 10"):
        K.matmul_parallel(A, B, rows_per_block=11)


def test_plots_draw_without_error():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from course_lib.teaching.plots import matmul as kplots

    rows = K.ladder(16, ["ikj"], repeat=1)
    kplots.ladder_bars(rows, peak=100.0)
    kplots.tile_heatmap(np.array([[1.0, np.nan], [2.0, 3.0]]), (4, 8), (4, 8))
    kplots.combination_bars(K.time_combinations(16, repeat=1, tile_i=4, tile_j=4, tile_k=4))
    kplots.size_pair_bars({"ikj": (1.0, 2.0)}, (10, 16))
    import matplotlib.pyplot as plt
    plt.close("all")


def test_tile_rate_for_the_widget():
    data = K.tile_rate(32, 64, 16, 8, repeat=1)
    assert data["tiles"] == (32, 16, 8) and data["ours"] > 0 and data["numpy"] > 0
    assert data["pct_of_blas"] == pytest.approx(100 * data["ours"] / data["numpy"])
    with pytest.raises(ValueError, match="tile_j: expected an integer >= 1"):
        K.tile_rate(32, 8, 0, 8)
    with pytest.raises(ValueError, match="kernel: expected one of tiled"):
        K.tile_rate(32, kernel="naive")
