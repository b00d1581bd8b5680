"""Matrix linear recurrences h_t = A_t h_{t-1} + b_t: every method and structure agrees with a float64 loop."""
import numpy as np
import pytest

from course_lib.algorithms import matrix_scan as ms
from course_lib.algorithms import scan


@pytest.mark.parametrize("structure,k", [("full", None), ("block", 2), ("diagonal", None)])
@pytest.mark.parametrize("method", ms.METHODS)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_methods_agree_with_float64_loop(structure, k, method, batch):
    A, b, h0 = ms.random_problem(37, 6, batch, structure=structure, k=k, seed=1)
    ref = ms.recurrence_float64(A, b, h0, structure=structure)
    out = ms.linear_recurrence(A, b, h0, structure=structure, method=method)
    assert out.shape == b.shape
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("chunks", [1, 2, 5, 37, 100])
def test_chunked_any_number_of_chunks(chunks):
    A, b, h0 = ms.random_problem(37, 4, (2,), seed=2)
    np.testing.assert_allclose(ms.linear_recurrence(A, b, h0, method="chunked", chunks=chunks),
                               ms.recurrence_float64(A, b, h0), atol=1e-12)


def test_combine_is_associative_and_matches_two_steps():
    A, b, h0 = ms.random_problem(3, 4, seed=3)
    p, q, r = (A[0], b[0]), (A[1], b[1]), (A[2], b[2])
    left = ms.combine(ms.combine(p, q), r)
    right = ms.combine(p, ms.combine(q, r))
    for x, y in zip(left, right):
        np.testing.assert_allclose(x, y, atol=1e-12)
    A2, b2 = ms.combine(p, q)
    h = ms.linear_recurrence(A[:2], b[:2], h0)
    np.testing.assert_allclose(A2 @ h0 + b2, h[1], atol=1e-12)
    I, z = ms.identity(4)
    for x, y in zip(ms.combine((I, z), p), p):
        np.testing.assert_allclose(x, y)


def test_diagonal_equals_chapter08_scan_and_full_with_diag_matrices():
    A, b, h0 = ms.random_problem(20, 5, (2,), structure="diagonal", seed=4)
    np.testing.assert_allclose(ms.linear_recurrence(A, b, h0, structure="diagonal"),
                               scan.linear_recurrence(A, b, h0), atol=1e-13)
    full = np.zeros(A.shape + (5,))
    idx = np.arange(5)
    full[..., idx, idx] = A
    np.testing.assert_allclose(ms.linear_recurrence(full, b, h0), ms.linear_recurrence(A, b, h0, structure="diagonal"),
                               atol=1e-13)


def test_float32_stays_float32():
    A, b, h0 = ms.random_problem(16, 3, seed=5, dtype=np.float32)
    assert ms.linear_recurrence(A, b, h0, method="chunked").dtype == np.float32


def test_overflow_raises_instead_of_returning_inf():
    A, b, h0 = ms.random_problem(400, 3, scale=30.0, seed=6)
    with pytest.raises(FloatingPointError, match="not finite"):
        ms.linear_recurrence(A, b, h0)


@pytest.mark.parametrize("call,exc,name", [
    (lambda A, b: ms.linear_recurrence(A[..., :2], b), ValueError, "A"),
    (lambda A, b: ms.linear_recurrence(A, b, np.zeros(5)), ValueError, "h0"),
    (lambda A, b: ms.linear_recurrence(A, b, method="magic"), ValueError, "method"),
    (lambda A, b: ms.linear_recurrence(A, b, structure="sparse"), ValueError, "structure"),
    (lambda A, b: ms.linear_recurrence(A.astype(np.float32), b), TypeError, "A"),
    (lambda A, b: ms.linear_recurrence(A, b, chunks=2), TypeError, "chunks"),
    (lambda A, b: ms.linear_recurrence(A, b, method="chunked", chunks=0), ValueError, "chunks"),
    (lambda A, b: ms.linear_recurrence(A[:, None, :2, :2].copy(), b, structure="block"), ValueError, "A"),
])
def test_bad_inputs_name_the_argument(call, exc, name):
    A, b, _ = ms.random_problem(8, 4, seed=7)
    with pytest.raises(exc, match=rf"^{name}"):
        call(A, b)


def test_work_span_model():
    seq = ms.work_span(1024, 64, method="sequential")
    assert seq["work"] == seq["span"] == 2 * 64 * 64 * 1024
    full = ms.work_span(1024, 64, P=64)
    diag = ms.work_span(1024, 64, structure="diagonal", P=64)
    assert full["work"] > 60 * seq["work"]          # matrix-matrix combines: ~H times the work
    assert diag["speedup"] > 10 > full["speedup"]   # the diagonal scan scales, the full one barely
    assert ms.work_span(1024, 1, P=64)["speedup"] > 1
    assert ms.work_span(64, 8, structure="block", k=2, P=4)["work"] > 0


# --------------------------------------------------------------------------- bad input: every public function
@pytest.mark.timeout(60)
def test_matrix_scan_rejects_non_finite():
    names = [n for n in ms.__all__ if callable(getattr(ms, n))]
    assert names
    for n in names:
        with pytest.raises((TypeError, ValueError)):
            getattr(ms, n)(None, None)


# ---- issue 29: the float64 reference refuses NaN/inf instead of passing them through ---------------------------
@pytest.mark.parametrize("structure,k", [("full", None), ("block", 2), ("diagonal", None)])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_recurrence_float64_refuses_nonfinite(structure, k, bad):
    from helpers import raises_naming
    A, b, h0 = ms.random_problem(5, 4, structure=structure, k=k)
    A2 = A.copy()
    A2.flat[3] = bad
    raises_naming(ValueError, "A", ms.recurrence_float64, A2, b, structure=structure)
    b2 = b.copy()
    b2[2, 1] = bad
    raises_naming(ValueError, "b", ms.recurrence_float64, A, b2, structure=structure)


def test_absurd_sizes_fail_fast():
    from helpers import raises_fast
    raises_fast(ValueError, "T", ms.random_problem, 10**10, 3)
    raises_fast(ValueError, "nh", ms.random_problem, 4, 10**10)
    raises_fast(ValueError, "nh", ms.identity, 10**10)


@pytest.mark.parametrize("kw, name", [(dict(scale=float("nan")), "scale"), (dict(scale=float("inf")), "scale"),
                                      (dict(scale=-1.0), "scale"), (dict(scale=1j), "scale"), (dict(scale=None), "scale"),
                                      (dict(seed=-1), "seed"), (dict(seed=None), "seed"), (dict(seed=2.5), "seed")])
def test_random_problem_checks_scale_and_seed(kw, name):
    """issue 39: ``scale=nan`` returned NaN matrices, ``scale=1j`` dropped the imaginary part."""
    from helpers import raises_naming
    raises_naming((ValueError, TypeError), name, ms.random_problem, 8, 3, **kw)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_product_refuses_a_nonfinite_matrix(bad):
    """issue 39: ``product`` passed a NaN straight through to the composed matrix."""
    from helpers import raises_naming
    A, _, _ = ms.random_problem(6, 3)
    A[2, 1, 1] = bad
    raises_naming(ValueError, "A", ms.product, A)
