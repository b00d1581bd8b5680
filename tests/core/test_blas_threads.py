"""core.backend.blas_threads(n): the BLAS pool has n threads inside the block, its old count after."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (before numba)
from course_lib.core import backend

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_counts():
    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]


def test_blas_threads_sets_and_restores_the_pool():
    np.dot(np.ones((4, 4)), np.ones((4, 4)))  # the BLAS is loaded
    before = _blas_counts()
    assert before, "numpy's BLAS should be visible to threadpoolctl"
    with backend.blas_threads(1):
        assert _blas_counts() == [1] * len(before)
        with backend.blas_threads(2):
            assert _blas_counts() == [2] * len(before)
        assert _blas_counts() == [1] * len(before)
    assert _blas_counts() == before
    with backend.blas_threads(None):  # optional limit: the count stays
        assert _blas_counts() == before


def test_blas_threads_restores_after_an_error():
    before = _blas_counts()
    with pytest.raises(RuntimeError, match="boom"):
        with backend.blas_threads(1):
            raise RuntimeError("boom")
    assert _blas_counts() == before


@pytest.mark.parametrize("bad,exc", [(0, ValueError), (-2, ValueError), (1.5, TypeError), ("2", TypeError)])
def test_blas_threads_rejects_bad_counts(bad, exc):
    with pytest.raises(exc, match="n: expected an integer"):
        with backend.blas_threads(bad):
            pass
