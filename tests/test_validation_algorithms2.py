"""Issue 18, algorithms layer, second pass (scan, mgrit): NaN never passes through a reference, integer
arrays never truncate silently, bad arguments are named."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.algorithms import mgrit, scan
from helpers import raises_naming

pytestmark = pytest.mark.timeout(30)
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NONFINITE = st.sampled_from([np.inf, -np.inf, np.nan])


REFS = [scan.recurrence_float64, lambda a, x: scan.hillis_steele(a, x)[0], lambda a, x: scan.blelloch(a, x)[0],
        scan.closed_form]


@FAST
@given(NONFINITE, st.sampled_from(["a", "x"]), st.integers(0, 6), st.integers(0, 2), st.sampled_from(range(4)))
def test_scan_references_reject_non_finite(bad, which, t, c, k):
    a, x, _ = scan.random_problem(7, 3, seed=1, dtype="float64")
    (a if which == "a" else x)[t, c] = bad
    raises_naming(ValueError, which, REFS[k], a, x)


@FAST
@given(st.integers(1, 40), st.integers(1, 4), st.sampled_from(["float32", "float64"]))
def test_scan_references_agree_on_good_input(T, H, dtype):
    a, x, h0 = scan.random_problem(T, H, seed=T, dtype=dtype)
    ref = scan.recurrence_float64(a, x, h0)
    tol = 1e-4 if dtype == "float32" else 1e-10
    for h in (scan.hillis_steele(a, x, h0)[0], scan.blelloch(a, x, h0)[0]):
        np.testing.assert_allclose(h, ref, rtol=tol, atol=tol)


@FAST
@given(NONFINITE, st.sampled_from(["a0", "h"]))
def test_linear_recurrence_backward_rejects_non_finite(bad, which):
    a, x, h0 = scan.random_problem(6, 3, seed=2, dtype="float64")
    h = scan.linear_recurrence(a, x, h0)
    g = np.ones_like(h)
    if which == "a0":
        a[0, 1] = bad  # the reverse scan never reads a[0]: it used to come back as a NaN grad_h0
        raises_naming(ValueError, "a", scan.linear_recurrence_backward, a, h, h0, g)
    else:
        h[3, 1] = bad  # h is not scanned: it used to come back as NaN in grad_a
        raises_naming(ValueError, "h", scan.linear_recurrence_backward, a, h, h0, g)


def test_scan_small_helpers():
    raises_naming(TypeError, "dtype", scan.random_problem, 3, 2, dtype="int32")
    raises_naming(ValueError, "T", scan.random_problem, 10**12, 10)
    raises_naming(ValueError, "low", scan.random_problem, 3, 2, low=np.nan)
    raises_naming(ValueError, "cache_bytes", scan.chunk_steps, 4, 4, 0)
    raises_naming(ValueError, "T", scan.ScanCounts, "blelloch", 0, 0, 0)


# --------------------------------------------------------------------------- MGRIT relaxation helpers
STEP = mgrit.dahlquist_step(-1.0, 0.1, 4)


@pytest.mark.parametrize("fn", [lambda U: mgrit.f_relaxation(STEP, U, 4), lambda U: mgrit.c_relaxation(STEP, U, 4),
                                lambda U: mgrit.two_level_iteration(STEP, STEP, U, 4)])
def test_relaxation_helpers_refuse_integer_arrays(fn):
    U = np.ones((9, 1), dtype=np.int64)  # used to truncate every new state to an integer
    raises_naming(TypeError, "U", fn, U)
    Un = np.ones((9, 1))
    Un[2] = np.nan
    raises_naming(ValueError, "U", fn, Un)
    raises_naming(ValueError, "nt", fn, np.ones((8, 1)))
    out = fn(np.ones((9, 1)))
    assert out.dtype == np.float64 and np.isfinite(out).all()


def test_relaxation_helpers_check_step_and_level():
    raises_naming(TypeError, "step", mgrit.f_relaxation, None, np.ones(9), 4)
    raises_naming(ValueError, "level", mgrit.c_relaxation, STEP, np.ones(9), 4, level=-1)
    raises_naming(TypeError, "coarse_step", mgrit.two_level_iteration, STEP, 3, np.ones(9), 4)
    raises_naming(TypeError, "step", mgrit.serial_solve, "f", np.ones(1), 4)
    raises_naming(ValueError, "nt", mgrit.serial_solve, STEP, np.ones(1000), 10**9)
    raises_naming(ValueError, "history", mgrit.convergence_factor, [1.0, np.nan])
    raises_naming(ValueError, "history", mgrit.convergence_factor, [1.0, -0.5])
    assert mgrit.convergence_factor([1.0, 0.5, 0.25]) == pytest.approx(0.5)


@FAST
@given(st.integers(2, 6), st.sampled_from([np.float32, np.float64]))
def test_f_relaxation_matches_the_serial_march(nc, dtype):
    U0 = np.zeros((4 * nc + 1, 2), dtype)
    U0[::4] = mgrit.serial_solve(STEP, np.ones(2, dtype), 4 * nc)[::4]
    np.testing.assert_allclose(mgrit.f_relaxation(STEP, U0, 4), mgrit.serial_solve(STEP, np.ones(2, dtype), 4 * nc),
                               rtol=1e-6)
