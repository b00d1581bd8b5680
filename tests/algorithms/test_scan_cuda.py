"""course_lib.algorithms.scan_cuda: the CUDA kernels (numba's simulator without a GPU: tiny sizes)."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (before numba)
from course_lib.core import backend
from course_lib.algorithms import scan, scan_cuda


@pytest.mark.parametrize("T,C", [(1, 1), (2, 3), (8, 2), (32, 1)])
def test_teaching_kernel_matches_loop(T, C):
    a, x, h0 = scan.random_problem(T, C, seed=T, dtype="float64", low=-1, high=1)
    h = scan_cuda.run_block_kernel(scan_cuda.blelloch_block_kernel, a, x, h0)
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("T,N,block,chunk", [(1, 1, None, None), (37, 2, 4, 2), (100, 1, 8, 3), (64, 2, 2, 40)])
def test_three_kernel_scan_matches_loop(T, N, block, chunk):
    a, x, h0 = scan.random_problem(T, N, seed=T)
    h = scan.linear_recurrence(a, x, h0, method="cuda_chunked", block=block, chunk=chunk)
    assert h.dtype == np.float32 and h.shape == (T, N)
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-5, atol=1e-5)


def test_three_kernel_scan_batched_shape_through_linear_recurrence():
    a, x, h0 = scan.random_problem(20, 2, batch=2, seed=0)
    h = scan.linear_recurrence(a, x, h0, method="cuda_chunked", block=4, chunk=2)
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-5, atol=1e-5)


def test_backward_with_cuda_method():
    a, x, h0 = scan.random_problem(12, 2, seed=1, dtype="float64")
    h = scan.linear_recurrence(a, x, h0)
    g = np.random.default_rng(0).standard_normal(h.shape)
    ref = scan.linear_recurrence_backward(a, h, h0, g)
    got = scan.linear_recurrence_backward(a, h, h0, g, method="cuda_chunked", block=2, chunk=2)
    for u, v in zip(got, ref):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)


def test_phase_steps_and_plan():
    a, x, h0 = scan.random_problem(40, 1, seed=0)
    steps = scan_cuda.phase_steps(a, x, h0, block=4, chunk=4)
    assert (steps["block"], steps["chunk"], steps["grid"]) == (4, 4, 3)
    for p in ("reduce", "scan", "expand", "expand"):
        steps[p]()
    np.testing.assert_allclose(steps["result"](), scan.recurrence_float64(a, x, h0), rtol=1e-5, atol=1e-5)
    assert scan_cuda.plan(100, 8, 5) == (8, 5, 3)


@pytest.mark.parametrize("T,N,block,chunk", [(256, 2, 16, 4), (250, 3, 8, 4), (7, 1, 4, 3)])
def test_phase_counts_are_counted_by_the_kernels(T, N, block, chunk):
    # the thread phases touch every step once; the block phases one shared-memory slot per CUDA thread
    a, x, h0 = scan.random_problem(T, N, seed=1, dtype="float64")
    c = scan_cuda.phase_counts(a, x, h0, block=block, chunk=chunk)
    assert c["reduce_thread"] == c["expand_thread"] == T * N
    assert c["reduce_block"] == c["expand_block"] == c["grid"] * block * N
    assert (c["block"], c["chunk"]) == (block, chunk)


def test_bad_inputs():
    a, x, h0 = scan.random_problem(6, 2, seed=0)
    with pytest.raises(ValueError, match="block size \\(T\\): expected a power of two, got 6"):
        scan_cuda.run_block_kernel(scan_cuda.blelloch_block_kernel, a, x, h0)
    with pytest.raises(ValueError, match="block: expected a power of two, got 3"):
        scan_cuda.linear_recurrence_cuda(a, x, h0, block=3)
    with pytest.raises(ValueError, match="block: expected an integer <= 1024"):
        scan_cuda.plan(100, block=2048)
    with pytest.raises(ValueError, match="chunk: expected an integer >= 1"):
        scan_cuda.linear_recurrence_cuda(a, x, h0, chunk=0)
    with pytest.raises(ValueError, match="x: expected shape"):
        scan_cuda.linear_recurrence_cuda(a, x[:3], h0)
    with pytest.raises(ValueError, match="h0: expected shape"):
        scan_cuda.linear_recurrence_cuda(a, x, h0[:1])
    with pytest.raises(ValueError, match="x: expected shape"):
        scan_cuda.phase_steps(a, x[:3])
    with pytest.raises(TypeError, match="x: expected the dtype of a"):
        scan_cuda.linear_recurrence_cuda(a, x.astype(np.float64))
    with pytest.raises(ValueError, match="T: expected an integer >= 1"):
        scan_cuda.plan(0)


def test_real_gpu_speed_path():
    if not backend.gpu_available():
        pytest.skip("needs a CUDA GPU: the kernels ran in numba's simulator above")
    a, x, h0 = scan.random_problem(1 << 16, 128, seed=0)
    h = scan_cuda.linear_recurrence_cuda(a, x, h0)
    np.testing.assert_allclose(h, scan.linear_recurrence(a, x, h0), rtol=1e-4, atol=1e-4)
