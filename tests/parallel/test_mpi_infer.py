"""MPI data-parallel inference: real mpiexec with 2 (and 3) ranks vs serial; failures and hangs
are reported with the failing rank (course_lib.core.mpi); skipped with the reason when MPI is not available."""
import subprocess
import sys

import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.core import backend
from course_lib.core.mpi import MPIFailed
from course_lib.models import softmax_rnn
from course_lib.parallel import inference as inf, mpi_infer
from helpers import raises_naming

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


# --------------------------------------------------------------------------- the worker called directly
# a bad folder, input or option returns 2, never MPI_Aborts the calling Python
@pytest.mark.timeout(60)
def test_mpi_worker_called_directly_returns_instead_of_aborting(tmp_path):
    assert mpi_infer.main([str(tmp_path / "missing")]) == 2
    assert mpi_infer.main([str(tmp_path)]) == 2                      # no input.npz
    (tmp_path / "input.npz").write_bytes(b"garbage")
    assert mpi_infer.main([str(tmp_path)]) == 2                      # corrupt input
    p = softmax_rnn.init_params(3, 4, 3, seed=0)
    np.savez(tmp_path / "input.npz", X=np.zeros((2, 3, 3), np.float32), counts=np.array([2, 2]), **dict(zip(p.names(), p.arrays())))
    assert mpi_infer.main([str(tmp_path)]) == 2                      # counts do not sum to B
    np.savez(tmp_path / "input.npz", X=np.zeros((2, 3, 3), np.float32), counts=np.array([3]), **dict(zip(p.names(), p.arrays())))
    for bad in (["--repeat", "x"], ["--repeat", "0"], ["--fail-rank", "5"], ["--bogus"]):
        assert mpi_infer.main([str(tmp_path), *bad]) == 2, bad


@pytest.mark.timeout(60)
def test_check_job_names_what_is_wrong(tmp_path):
    p = softmax_rnn.init_params(3, 4, 3, seed=0)
    np.savez(tmp_path / "input.npz", X=np.zeros((2, 3, 5), np.float32), counts=np.array([3]), **dict(zip(p.names(), p.arrays())))
    raises_naming(ValueError, "input.npz X", mpi_infer.check_job, tmp_path, [])
    np.savez(tmp_path / "input.npz", X=np.zeros((2, 3, 3), np.float32), counts=np.array([3]), **dict(zip(p.names(), p.arrays())))
    raises_naming(ValueError, "--hang-rank", mpi_infer.check_job, tmp_path, ["--hang-rank", "1"])
    mpi_infer.check_job(tmp_path, ["--repeat", "2"])


@pytest.mark.timeout(60)
@pytest.mark.skipif(not backend.mpi_available()[0], reason="no MPI here")
def test_a_failing_single_rank_body_does_not_kill_the_caller(tmp_path):
    p = softmax_rnn.init_params(3, 4, 3, seed=0)
    np.savez(tmp_path / "input.npz", X=np.zeros((2, 3, 3), np.float32), counts=np.array([3]), **dict(zip(p.names(), p.arrays())))
    code = ("import sys; from course_lib.parallel import mpi_infer; "
            f"rc = mpi_infer.main([{str(tmp_path)!r}, '--fail-rank', '0']); print('caller alive', rc)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=50)
    assert "caller alive 1" in out.stdout, out.stdout + out.stderr
    assert (tmp_path / "rank0.status").read_text().startswith("error: RuntimeError: injected failure")
