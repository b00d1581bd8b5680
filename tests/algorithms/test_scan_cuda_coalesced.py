"""course_lib.algorithms.scan_cuda_coalesced: seed 001's serial kernel and the coalesced scan (simulator: tiny)."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (before numba)
from course_lib.algorithms import scan, scan_cuda_coalesced as sc


@pytest.mark.parametrize("T,N", [(1, 1), (9, 3), (40, 33)])
def test_serial_kernel_matches_loop(T, N):
    a, x, h0 = scan.random_problem(T, N, seed=T)
    h = sc.linear_recurrence_cuda_serial(a, x, h0, block=16)
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("T,N,workers,chunk", [(1, 1, None, None), (37, 2, 2, 3), (50, 33, 3, 4), (8, 5, 4, 40)])
def test_tiled_scan_matches_loop(T, N, workers, chunk):
    """Ragged tails in time (T not a multiple of workers * chunk) and in channels (N not a multiple of 32)."""
    a, x, h0 = scan.random_problem(T, N, seed=T, low=-1.2, high=1.2)
    h = sc.linear_recurrence_cuda_tiled(a, x, h0, workers=workers, chunk=chunk)
    assert h.shape == (T, N) and h.dtype == np.float32
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-4, atol=1e-4)


def test_tiled_phases_can_run_again():
    a, x, h0 = scan.random_problem(30, 2, seed=1)
    steps = sc.tiled_phase_steps(a, x, h0, workers=2, chunk=4)
    for _ in range(2):
        for p in ("reduce", "scan", "expand"):
            steps[p]()
    np.testing.assert_allclose(steps["result"](), scan.recurrence_float64(a, x, h0), rtol=1e-5, atol=1e-5)
    assert (steps["workers"], steps["chunk"], steps["grid"]) == (2, 4, 4)


def test_bad_inputs():
    a, x, h0 = scan.random_problem(8, 2, seed=0)
    with pytest.raises(ValueError, match="workers"):
        sc.linear_recurrence_cuda_tiled(a, x, h0, workers=0)
    with pytest.raises(ValueError, match="workers"):
        sc.linear_recurrence_cuda_tiled(a, x, h0, workers=64)
    with pytest.raises(ValueError, match="chunk"):
        sc.linear_recurrence_cuda_tiled(a, x, h0, chunk=0)
    with pytest.raises(ValueError, match="block"):
        sc.linear_recurrence_cuda_serial(a, x, h0, block=0)
    with pytest.raises(ValueError, match="x: expected shape"):
        sc.linear_recurrence_cuda_serial(a, x[:3], h0)
    with pytest.raises(TypeError, match="x: expected the dtype of a"):
        sc.linear_recurrence_cuda_tiled(a, x.astype(np.float64))


def test_tiled_plan():
    assert sc.tiled_plan(30, 2, 4, N=3) == (2, 4, 4)
    w, c, g = sc.tiled_plan(1000, N=5)  # defaults: every step covered, no block wholly past T
    assert g * w * c >= 1000 and (g - 1) * w * c < 1000
    with pytest.raises(ValueError, match="N"):
        sc.tiled_plan(10, N=0)
    with pytest.raises(ValueError, match="T"):
        sc.tiled_plan(0)
