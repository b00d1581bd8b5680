"""course_lib.algorithms.matmul: every rung of the matmul ladder and the eight Fig. 10 combinations agree
with numpy; bad inputs raise clear errors. No timed assertions (the timing helpers are tested in
tests/experiments/test_matmul.py; speed lives in benchmarks/)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import course_lib  # noqa: F401  (sets up numba's CUDA simulator flag first)
from course_lib.algorithms import matmul as K
from helpers import raises_naming

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


def test_parallel_rows_per_block_validated():
    A, B = _ab(10, 4, 6, np.float32)
    np.testing.assert_allclose(K.matmul_parallel(A, B, rows_per_block=3), _ref(A, B), **TOL[np.float32])
    with pytest.raises(ValueError, match=r"rows_per_block: expected a tile size between 1 and m \(rows of A\) = 10"):
        K.matmul_parallel(A, B, rows_per_block=11)


def test_kernel_cores_name_every_rung():
    assert set(K.KERNEL_CORES) == set(K.MATMUL_KERNELS)
    assert set(K.TILED_KERNELS) <= set(K.MATMUL_KERNELS)


# --------------------------------------------------------------------------- combination_name
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(30)
@FAST
@given(st.sampled_from([0, 1, "yes", None, 1.0]), st.integers(0, 2))
def test_combination_name_wants_bools(bad, pos):
    args = [True, False, True]
    args[pos] = bad
    raises_naming(TypeError, ("tiled", "simd", "parallel")[pos], K.combination_name, *args)


@pytest.mark.timeout(30)
def test_combination_name_correct():
    assert K.combination_name(True, True, True) == "tiled + simd + parallel"
    assert K.combination_name(np.bool_(False), False, False) == "serial"
