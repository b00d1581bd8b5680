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


def test_blas_threads_limits_a_blas_loaded_after_its_first_use():
    """The controller is cached; a BLAS loaded later (oneMKL through algorithms.gemm) must be limited too. In a
    fresh process, so that the library is not loaded yet when the first block runs."""
    import subprocess
    import sys

    from course_lib.algorithms import gemm

    if gemm._mkl()[0] is None:
        pytest.skip(gemm._mkl()[1])
    code = (
        "import numpy as np, course_lib, threadpoolctl\n"
        "from course_lib.core import backend\n"
        "from course_lib.algorithms import gemm\n"
        "counts = lambda: sorted((p['internal_api'], p['num_threads']) for p in threadpoolctl.threadpool_info()"
        " if p.get('user_api') == 'blas')\n"
        "with backend.blas_threads(1):\n"
        "    pass\n"
        "gemm._mkl()\n"
        "assert any(api == 'mkl' for api, _ in counts()), counts()\n"
        "with backend.blas_threads(1):\n"
        "    inside = counts()\n"
        "assert all(n == 1 for _, n in inside), inside\n"
        "print('ok', inside)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "MKL_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"})
    assert run.returncode == 0 and "ok" in run.stdout, run.stdout + run.stderr
