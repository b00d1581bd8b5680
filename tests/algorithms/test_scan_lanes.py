"""course_lib.algorithms.scan_lanes: one channel on 16 SIMD lanes in L1 blocks agrees with the float64 loop at
every awkward size (under two rows, partial rows, partial blocks), composes a range into the right pair, never
lets a running product go subnormal, and is what scan_kernels runs for H = 1 with 16 lanes (one thread and the
pipelined chunked scan on any number of chunk owners)."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (before numba)
from course_lib.algorithms import scan, scan_kernels, scan_lanes

L, BLOCK = scan_lanes.LANES, scan_lanes.BLOCK
# under two rows (the plain loop throughout), exactly two rows, partial rows, one block, a block and a bit
SIZES = [0, 1, 2, 15, 16, 31, 32, 33, 47, 48, 100, BLOCK + L - 1, BLOCK + L, BLOCK + L + 1, 3 * BLOCK + 45, 20011]
TOL = {np.float32: 2e-5, np.float64: 1e-12}


def loop64(a, x, before):
    """The float64 loop over flat ``a, x (N,)`` from ``before``: h (N,) (empty for N = 0)."""
    h, prev = np.empty(len(a)), float(before)
    for t, (at, xt) in enumerate(zip(a.astype(np.float64), x.astype(np.float64))):
        prev = at * prev + xt
        h[t] = prev
    return h


def flat_problem(N, dtype, seed, low=-1.0, high=1.0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(low, high, N).astype(dtype)
    x = rng.standard_normal(N).astype(dtype)
    return a, x, dtype(rng.standard_normal())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("N", SIZES)
def test_scan_equals_the_float64_loop_and_leaves_the_last_h_as_carry(N, dtype):
    a, x, h0 = flat_problem(N, dtype, seed=N)
    h, carry = np.full(N, np.nan, dtype), np.array([h0], dtype)
    scan_lanes.scan(a, x, carry, h)
    ref = loop64(a, x, h0)
    np.testing.assert_allclose(h, ref, rtol=TOL[dtype], atol=TOL[dtype])
    assert carry[0] == (h[-1] if N else h0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("N", SIZES)
def test_compose_gives_the_pair_of_the_whole_range(N, dtype):
    """(A, B) with h_end = A h_before + B: A the product of a, B the last h from zero; checked by applying it."""
    a, x, h0 = flat_problem(N, dtype, seed=N + 1, low=0.999, high=1.0)  # a product that stays far above TINY
    out = np.empty(2, dtype)
    scan_lanes.compose(a, x, out)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(out[0], np.prod(a64), rtol=1e-4 if dtype == np.float32 else 1e-12)
    for before in (0.0, float(h0)):
        ref = loop64(a, x, before)[-1] if N else before
        np.testing.assert_allclose(out[0] * before + out[1], ref, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_running_products_are_flushed_not_subnormal(dtype):
    """a ~ U(0.5, 1): an unflushed product sticks at the smallest subnormal within a few hundred (float32) or
    thousand (float64) steps. The folds of four (down to one pair from 4^6 steps) and the pair-by-pair
    composition, their Python bodies with every underflow raising, never produce one; the compiled compose's
    product is 0 (the true one is far below TINY), and h is still right."""
    N = 4 ** 6
    a, x, _ = scan.random_problem(N, 1, seed=9, dtype=dtype)
    a, x = a[:, 0].copy(), x[:, 0].copy()
    tiny, zero = dtype(scan_lanes.TINY), dtype(0)
    with np.errstate(under="raise"):
        A, B, n = a, x, N
        while n > 1:
            A2, B2 = np.empty(n // 4, dtype), np.empty(n // 4, dtype)
            scan_lanes._fold4.py_func(A, B, n // 4, A2, B2)
            A, B, n = A2, B2, n // 4
        pa, pb = dtype(1), zero
        for t in range(N):
            pa, pb = scan_lanes._then.py_func(pa, pb, a[t], x[t], tiny, zero)
    ref = scan.recurrence_float64(a[:, None], x[:, None])[-1, 0]
    assert A[0] == pa == 0
    np.testing.assert_allclose([B[0], pb], [ref, ref], rtol=1e-4)
    out = np.empty(2, dtype)
    scan_lanes.compose(a, x, out)
    assert out[0] == 0
    np.testing.assert_allclose(out[1], ref, rtol=1e-4)
    h = np.empty_like(a)
    scan_lanes.scan(a, x, np.zeros(1, dtype), h)
    np.testing.assert_allclose(h, scan.recurrence_float64(a[:, None], x[:, None])[:, 0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("T", [1, 33, 5000])
def test_scan_kernels_run_it_for_one_channel_on_16_lanes(T, dtype):
    """scan_kernels.lanes and the pipelined chunked scan (p chunk owners, chunks shorter than a row, than a
    block, longer than one) with K = 16: one channel takes scan_lanes, three channels the windows of
    scan_kernels -- both equal the float64 loop."""
    for H in (1, 3):
        a, x, h0 = scan.random_problem(T, H, seed=T + H, dtype=dtype, low=-1.0, high=1.0)
        ref = scan.recurrence_float64(a, x, h0)
        h = np.full_like(a, np.nan)
        scan_kernels.lanes(a, x, h0, h, 16)
        np.testing.assert_allclose(h, ref, rtol=TOL[dtype], atol=TOL[dtype], err_msg=f"lanes, H={H}")
        for p in (1, 2, 3):
            for Lc in (1, 7, 40, 2100):
                h = np.full_like(a, np.nan)
                scan_kernels.chunked_blocked(a, x, h0, h, p, Lc, 16, scan_kernels.x_chunk(Lc))
                np.testing.assert_allclose(h, ref, rtol=TOL[dtype], atol=TOL[dtype], err_msg=f"H={H} p={p} L={Lc}")


def test_linear_recurrence_takes_it_where_one_channel_gets_16_lanes():
    a, x, h0 = scan.random_problem(70001, 1, seed=2)
    ref = scan.recurrence_float64(a, x, h0)
    for opts, kernel in (({"lanes": 16}, "lanes"), ({"lanes": 16, "chunk": 3000}, "chunked_blocked")):
        assert scan.kernel_for(a, x, method="chunked", threads=2, **opts) == kernel
        h = scan.linear_recurrence(a, x, h0, method="chunked", **opts)
        np.testing.assert_allclose(h, ref, rtol=2e-5, atol=2e-5, err_msg=str(opts))
