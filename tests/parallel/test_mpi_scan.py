"""The scan across MPI ranks equals the one-process scan (element-wise, gated matrix state, DEER's matrix
recurrence) for 1, 2 and 3 ranks; the operator is not commutative; failing and hanging ranks are named."""
import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.algorithms import linear_attention as la, matrix_scan, scan
from course_lib.core import backend
from course_lib.core.mpi import MPIFailed
from course_lib.parallel import mpi_scan
from helpers import raises_naming

MPI_OK, MPI_WHY = backend.mpi_available()
needs_mpi = pytest.mark.skipif(not MPI_OK, reason=f"MPI is not available: {MPI_WHY}")
pytestmark = pytest.mark.mpi


@needs_mpi
@pytest.mark.timeout(120)
@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_elementwise_equals_one_process(ranks):
    a, x, h0 = scan.random_problem(101, 3, 2, seed=ranks, low=0.3, high=1.0)
    h, info = mpi_scan.linear_recurrence_mpi(a, x, h0, ranks=ranks, return_info=True)
    assert h.shape == x.shape and h.dtype == x.dtype
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-5, atol=1e-5)
    assert set(info["times"]) == {"reduce", "exscan", "expand"} and all(v.shape == (ranks,) for v in info["times"].values())
    assert info["message_bytes"] == 2 * 6 * 8            # one pair (a, b) of one state, float64


@needs_mpi
@pytest.mark.timeout(120)
def test_order_matters_the_operator_is_not_commutative():
    """Three ranks with very different blocks: a commutative (wrong) combine would give rank 2 the wrong carry."""
    a = np.concatenate([np.full((10, 1), 0.1), np.full((10, 1), 0.9), np.full((10, 1), 0.5)]).astype(np.float64)
    x = np.concatenate([np.full((10, 1), 5.0), np.full((10, 1), -1.0), np.ones((10, 1))])
    h = mpi_scan.linear_recurrence_mpi(a, x, ranks=3)
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x), rtol=1e-12)
    p = [np.array([0.1]), np.array([5.0])], [np.array([0.9]), np.array([-1.0])]
    assert not np.allclose(scan.combine(*p)[1], scan.combine(p[1], p[0])[1])


@needs_mpi
@pytest.mark.timeout(120)
@pytest.mark.parametrize("per_channel", [False, True])
def test_gated_matrix_state_equals_one_process(per_channel):
    q, k, v, d = la.random_problem(150, 2, 2, 6, 4, per_channel=per_channel, seed=5)
    S0 = np.random.default_rng(0).standard_normal((2, 2, 6, 4)).astype(np.float32)
    ref = la.recurrence_float64(q, k, v, d, S0)
    for ranks in (2, 3):
        o = mpi_scan.gated_linear_recurrence_mpi(q, k, v, d, S0=S0, ranks=ranks, chunk=16)
        np.testing.assert_allclose(o, ref, atol=1e-4 * (1 + np.abs(ref).max()), rtol=0)


@needs_mpi
@pytest.mark.timeout(120)
def test_deer_matrix_recurrence_equals_one_process():
    A, b, h0 = matrix_scan.random_problem(90, 5, (2,), seed=7)
    h = mpi_scan.matrix_recurrence_mpi(A, b, h0, ranks=3)
    np.testing.assert_allclose(h, matrix_scan.recurrence_float64(A, b, h0), rtol=1e-10, atol=1e-12)


@needs_mpi
@pytest.mark.timeout(120)
def test_a_failing_rank_is_named():
    a, x, _ = scan.random_problem(20, 2, seed=1)
    with pytest.raises(MPIFailed, match=r"failed rank\(s\): \[1\]") as info:
        mpi_scan.linear_recurrence_mpi(a, x, ranks=2, fail_rank=1, timeout=60)
    assert "injected failure on rank 1" in str(info.value)


@needs_mpi
@pytest.mark.timeout(120)
def test_a_hanging_rank_hits_the_timeout_and_is_located():
    a, x, _ = scan.random_problem(20, 2, seed=1)
    with pytest.raises(MPIFailed, match="timed out") as info:
        mpi_scan.linear_recurrence_mpi(a, x, ranks=2, hang_rank=0, timeout=8)
    assert info.value.states[0] == "reduce"


# --- bad input
def test_bad_arguments_are_rejected_before_launching(tmp_path):
    a, x, _ = scan.random_problem(4, 2, seed=1)
    raises_naming(ValueError, "ranks", mpi_scan.linear_recurrence_mpi, a, x, ranks=5)
    raises_naming(ValueError, "timeout", mpi_scan.linear_recurrence_mpi, a, x, timeout=0)
    raises_naming(ValueError, "fail_rank", mpi_scan.linear_recurrence_mpi, a, x, ranks=2, fail_rank=2)
    raises_naming(ValueError, "x", mpi_scan.linear_recurrence_mpi, a, x[:3])
    raises_naming(ValueError, "A", mpi_scan.matrix_recurrence_mpi, np.zeros((3, 2, 3)), np.zeros((3, 2)))
    raises_naming(ValueError, "kind", mpi_scan.run, "blelloch", {"a": a})
    assert mpi_scan.main([str(tmp_path / "missing"), "elementwise"]) == 2
    assert mpi_scan.main([str(tmp_path), "elementwise"]) == 2          # no a.npy
    assert mpi_scan.main([str(tmp_path), "bogus"]) == 2


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import NOT_SIZE, bad_arrays, clear_or_correct  # noqa: E402


def _no_launch(*a, **k):
    raise AssertionError("mpiexec was launched with bad input (validate before launching)")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(["a", "x", "ranks", "return_info", "repeat"]), data=st.data())
def test_linear_recurrence_mpi_bad_input_is_refused_before_launching(case, data, monkeypatch):
    monkeypatch.setattr(mpi_scan, "launch", _no_launch)
    good = {"a": np.full((8, 3), 0.5), "x": np.ones((8, 3)), "ranks": 2}
    bad = {"a": bad_arrays((8, 3)), "x": bad_arrays((8, 3)), "ranks": st.one_of(NOT_SIZE, st.just(10**9)),
           "return_info": st.sampled_from(["yes", 2, None]), "repeat": st.one_of(NOT_SIZE, st.just(10**9))}[case]
    value = data.draw(bad)
    if case == "a" and isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.shape == (8, 3):
        return  # a NaN/inf decay is a legal (if useless) input: the recurrence reports non-finite output
    clear_or_correct(mpi_scan.linear_recurrence_mpi, case, {**good, case: value})


# --------------------------------------------------------------------------- subnormals (issue 43): no MPI needed
def _subnormals(x) -> int:
    x = np.asarray(x)
    return int(np.count_nonzero((x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_product_is_flushed_and_equals_the_log_space_product(dtype):
    """Each rank's product of its block's a's: 2^16 factors of U(0.5, 1) would stick at float64's smallest
    subnormal under np.prod (every later multiply on a subnormal: 13x slower on an Intel Xeon); flushed, it is 0,
    as the true product (e^-20000) rounds; a product that stays normal equals the log-space product."""
    T, nh = 1 << 16, 4
    a, _, _ = scan.random_problem(T, nh, 2, seed=11, dtype=dtype)                 # (T, 2, 4), a ~ U(0.5, 1)
    with np.errstate(under="ignore"):
        assert _subnormals(np.prod(a, axis=0, dtype=np.float64)) > 0               # the hazard the flush removes
    p = mpi_scan._product("elementwise", {"a": a}, (2, nh))
    assert p.shape == (2, nh) and p.dtype == np.float64 and _subnormals(p) == 0 and not p.any()
    near, _, _ = scan.random_problem(T, nh, 2, seed=12, dtype=dtype, low=0.99999, high=1.0)
    ref = np.exp(np.log(near.astype(np.float64)).sum(axis=0))
    np.testing.assert_allclose(mpi_scan._product("elementwise", {"a": near}, (2, nh)), ref, rtol=1e-9)


def test_gated_and_matrix_block_products_are_flushed():
    T = 1 << 16
    rng = np.random.default_rng(13)
    for shape, state in (((T, 2, 3), (2, 3, 4, 5)), ((T, 2, 3, 4), (2, 3, 4, 5))):  # scalar and per-channel decay
        decay = rng.uniform(0.5, 1.0, shape).astype(np.float32)
        d = mpi_scan._product("gated", {"decay": decay}, state)
        assert d.shape == state and _subnormals(d) == 0 and not d.any()
        near = rng.uniform(0.99999, 1.0, shape).astype(np.float32)
        ref = np.exp(np.log(near.astype(np.float64)).sum(axis=0))
        ref = ref[..., None, None] if ref.ndim == 2 else ref[..., None]
        np.testing.assert_allclose(mpi_scan._product("gated", {"decay": near}, state), np.broadcast_to(ref, state),
                                   rtol=1e-9)
    q, _ = np.linalg.qr(rng.standard_normal((4096, 3, 3)))
    A = (0.6 * q)[:, None]                                     # (T, 1, 3, 3): norm 0.6^t, subnormal after ~1,400
    P = mpi_scan._product("matrix", {"A": A}, (1, 3))          # its kernel's body: tests/algorithms/test_scan.py
    assert P.shape == (1, 3, 3) and _subnormals(P) == 0 and not P.any()
    near = (0.9999 * q[:1000])[:, None]
    chain = np.eye(3)
    for At in near[:, 0]:
        chain = At @ chain
    np.testing.assert_allclose(mpi_scan._product("matrix", {"A": near}, (1, 3))[0], chain, rtol=1e-10, atol=1e-13)


# --------------------------------------------------------------------------- dtypes before mpiexec (issue 39)
@pytest.mark.parametrize("call, name", [
    (lambda: mpi_scan.matrix_recurrence_mpi(np.full((4, 2, 2), 0.1), np.ones((4, 2), np.float32)), "b"),
    (lambda: mpi_scan.matrix_recurrence_mpi(np.full((4, 2, 2), 0.1), np.ones((4, 2)), np.ones(2, complex)), "h0"),
    (lambda: mpi_scan.linear_recurrence_mpi(np.full((4, 2), 0.5, np.float32), np.ones((4, 2))), "x"),
    (lambda: mpi_scan.run("elementwise", {"a": np.full((4, 2), 0.5, np.float32), "x": np.ones((4, 2))}), "arrays['x']"),
    (lambda: mpi_scan.run("elementwise", {"a": np.ones((4, 2), np.int64), "x": np.ones((4, 2), np.int64)}), "arrays['a']"),
    (lambda: mpi_scan.run("elementwise", {"a": np.full((4, 2), np.nan), "x": np.ones((4, 2))}), "arrays['a']"),
    (lambda: mpi_scan.run("elementwise", {"q": np.ones((4, 2)), "x": np.ones((4, 2))}), "arrays"),
    (lambda: mpi_scan.run("gated", {"q": np.ones((4, 0))}), "arrays"),
])
def test_dtypes_and_names_are_checked_before_mpiexec_starts(call, name, monkeypatch):
    """issue 39: a float32 b beside a float64 A reached the ranks, which failed after mpiexec had started."""
    monkeypatch.setattr(mpi_scan, "launch", _no_launch)
    with pytest.raises((ValueError, TypeError, KeyError)) as exc:
        call()
    assert str(exc.value).strip("'\"").startswith(f"{name}:") or f"{name}:" in str(exc.value), exc.value
