"""Issue 18, parallel layer (inference, mpi_infer, deer): checks on cell_step and on the MPI worker
called directly -- a bad folder, input or option returns 2 and never MPI_Aborts the calling Python."""
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.core import backend
from course_lib.models import softmax_rnn as srnn
from course_lib.parallel import inference, mpi_infer
from helpers import raises_naming

pytestmark = pytest.mark.timeout(60)
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.integers(1, 4), st.sampled_from(["x", "h"]), st.sampled_from([np.nan, np.inf]))
def test_cell_step_checks_through_inference(B, which, bad):
    p = srnn.init_params(3, 4, 3, seed=0)
    args = {"x": np.zeros((B, 3), np.float32), "h": np.zeros((B, 4), np.float32)}
    assert inference.cell_step(p.layers[0], **args).shape == (B, 4)
    args[which][0, 0] = bad
    raises_naming(ValueError, which, inference.cell_step, p.layers[0], **args)


def test_wavefront_still_matches_batched():
    p = srnn.init_params(3, 4, 3, layers=2, seed=1)
    X = srnn.encode(np.random.default_rng(0).integers(0, 3, (5, 2)), 3)
    np.testing.assert_allclose(inference.predict(p, X, method="wavefront", threads=2),
                               srnn.forward(p, X), rtol=1e-5, atol=1e-6)


def test_mpi_worker_called_directly_returns_instead_of_aborting(tmp_path):
    assert mpi_infer.main([str(tmp_path / "missing")]) == 2
    assert mpi_infer.main([str(tmp_path)]) == 2                      # no input.npz
    (tmp_path / "input.npz").write_bytes(b"garbage")
    assert mpi_infer.main([str(tmp_path)]) == 2                      # corrupt input
    p = srnn.init_params(3, 4, 3, seed=0)
    np.savez(tmp_path / "input.npz", X=np.zeros((2, 3, 3), np.float32), counts=np.array([2, 2]), **dict(zip(p.names(), p.arrays())))
    assert mpi_infer.main([str(tmp_path)]) == 2                      # counts do not sum to B
    np.savez(tmp_path / "input.npz", X=np.zeros((2, 3, 3), np.float32), counts=np.array([3]), **dict(zip(p.names(), p.arrays())))
    for bad in (["--repeat", "x"], ["--repeat", "0"], ["--fail-rank", "5"], ["--bogus"]):
        assert mpi_infer.main([str(tmp_path), *bad]) == 2, bad


def test_check_job_names_what_is_wrong(tmp_path):
    p = srnn.init_params(3, 4, 3, seed=0)
    np.savez(tmp_path / "input.npz", X=np.zeros((2, 3, 5), np.float32), counts=np.array([3]), **dict(zip(p.names(), p.arrays())))
    raises_naming(ValueError, "input.npz X", mpi_infer.check_job, tmp_path, [])
    np.savez(tmp_path / "input.npz", X=np.zeros((2, 3, 3), np.float32), counts=np.array([3]), **dict(zip(p.names(), p.arrays())))
    raises_naming(ValueError, "--hang-rank", mpi_infer.check_job, tmp_path, ["--hang-rank", "1"])
    mpi_infer.check_job(tmp_path, ["--repeat", "2"])


@pytest.mark.skipif(not backend.mpi_available()[0], reason="no MPI here")
def test_a_failing_single_rank_body_does_not_kill_the_caller(tmp_path):
    p = srnn.init_params(3, 4, 3, seed=0)
    np.savez(tmp_path / "input.npz", X=np.zeros((2, 3, 3), np.float32), counts=np.array([3]), **dict(zip(p.names(), p.arrays())))
    code = ("import sys; from course_lib.parallel import mpi_infer; "
            f"rc = mpi_infer.main([{str(tmp_path)!r}, '--fail-rank', '0']); print('caller alive', rc)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=50)
    assert "caller alive 1" in out.stdout, out.stdout + out.stderr
    assert (tmp_path / "rank0.status").read_text().startswith("error: RuntimeError: injected failure")
