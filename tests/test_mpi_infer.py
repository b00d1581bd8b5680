"""MPI data-parallel inference: real mpiexec with 2 (and 3) ranks vs serial; failures and hangs
are reported with the failing rank (course_lib.core.mpi); skipped with the reason when MPI is not available."""
import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.core import backend
from course_lib.core.mpi import MPIFailed
from course_lib.models import softmax_rnn
from course_lib.parallel import inference as inf, mpi_infer

MPI_OK, MPI_WHY = backend.mpi_available()
needs_mpi = pytest.mark.skipif(not MPI_OK, reason=f"MPI is not available: {MPI_WHY}")
pytestmark = pytest.mark.mpi


def _problem(T=5, B=7, layers=2):
    p = softmax_rnn.init_params(6, 8, 5, layers=layers, seed=2)
    X = np.random.default_rng(3).standard_normal((T, B, 6)).astype(np.float32)
    return p, X


@needs_mpi
def test_mpi_two_ranks_match_serial():
    p, X = _problem()
    res = inf.run_mpi(p, X, ranks=2, timeout=60)
    np.testing.assert_allclose(res.probs, softmax_rnn.forward(p, X, method="sequential"), rtol=1e-5, atol=1e-6)
    assert res.counts == [4, 3] and res.ranks == 2
    assert set(res.times) == {"bcast", "scatter", "compute", "gather"}
    # every rank's phase time lies inside the launch, and each rank did its share of the work
    assert all(v.shape == (2,) and np.all(v >= 0) and np.all(v < res.wall) for v in res.times.values())
    assert np.all(res.times["compute"] > 0)  # each rank did its share of the work
    assert res.in_job == pytest.approx(res.phase("scatter") + res.phase("compute") + res.phase("gather"))
    assert res.wall > res.in_job
    np.testing.assert_allclose(inf.predict(p, X, method="mpi", ranks=2), res.probs)


@needs_mpi
def test_mpi_three_ranks_with_uneven_custom_counts():
    p, X = _problem(B=7, layers=1)
    res = inf.run_mpi(p, X, ranks=3, counts=[1, 5, 1], timeout=60, repeat=2)
    np.testing.assert_allclose(res.probs, softmax_rnn.forward(p, X, method="sequential"), rtol=1e-5, atol=1e-6)


@needs_mpi
def test_a_failing_rank_is_named():
    p, X = _problem()
    with pytest.raises(MPIFailed, match=r"failed rank\(s\): \[1\]") as info:
        inf.run_mpi(p, X, ranks=2, fail_rank=1, timeout=60)
    assert info.value.failed_ranks == [1]
    assert "injected failure on rank 1" in str(info.value)


@needs_mpi
def test_a_hanging_rank_hits_the_timeout_and_is_located():
    p, X = _problem()
    with pytest.raises(MPIFailed, match="timed out") as info:
        inf.run_mpi(p, X, ranks=2, hang_rank=1, timeout=8)
    assert "rank 1: compute" in str(info.value)
    assert info.value.states[1] == "compute"


def test_bad_arguments_are_rejected_before_launching():
    p, X = _problem(B=3)
    with pytest.raises(ValueError, match="P: expected at most B = 3"):
        inf.run_mpi(p, X, ranks=4)
    with pytest.raises(ValueError, match="counts: expected 2 positive counts summing to B = 3"):
        inf.run_mpi(p, X, ranks=2, counts=[1, 1])
    with pytest.raises(ValueError, match="fail_rank"):
        inf.run_mpi(p, X, ranks=2, fail_rank=2)
    with pytest.raises(ValueError, match="timeout"):
        inf.run_mpi(p, X, ranks=2, timeout=0)
    with pytest.raises(ValueError, match="name"):
        inf.MPIResult(np.zeros((1, 1, 1)), 1, [1], 0.0, {}).phase("compute ")


def test_missing_mpi_is_a_clear_error(monkeypatch):
    from course_lib.core import mpi as core_mpi
    monkeypatch.setattr(core_mpi, "mpi_available", lambda: (False, "mpi4py is not installed"))
    p, X = _problem()
    with pytest.raises(MPIFailed, match="MPI is not available: mpi4py is not installed"):
        inf.run_mpi(p, X, ranks=2)


def test_worker_called_by_hand_without_a_folder_says_so(capsys):
    assert mpi_infer.main(["/nonexistent/folder"]) == 2
    assert "is not a folder" in capsys.readouterr().err
