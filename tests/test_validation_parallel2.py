"""Issue 18, parallel layer, second pass (mgrit_mpi): everything is validated before a job starts; the worker
called by hand with a bad folder or spec returns 2 instead of aborting the calling Python."""
import json

import numpy as np
import pytest

from course_lib.models import gru
from course_lib.parallel import mgrit_mpi as MP
from helpers import raises_naming

pytestmark = pytest.mark.timeout(30)
DAHL = {"kind": "dahlquist", "lam": -1.0, "dt": 0.1, "u0": [1.0]}


@pytest.fixture
def no_launch(monkeypatch):
    """Any launch is a test failure: validation must happen before the job starts."""
    def boom(*a, **k):
        raise AssertionError("launch called: the problem was not validated before the job started")
    monkeypatch.setattr(MP, "launch", boom)


@pytest.mark.parametrize("kw,name", [({"fail_rank": 2}, "fail_rank"), ({"hang_rank": -1}, "hang_rank"),
                                     ({"fail_rank": "0"}, "fail_rank"), ({"tol": np.nan}, "tol"),
                                     ({"m": 1}, "m"), ({"m": 4.0}, "m"), ({"max_iter": 0}, "max_iter")])
def test_solve_rejects_bad_options_before_launching(kw, name, no_launch):
    raises_naming((TypeError, ValueError), name, MP.solve, DAHL, 64, **({"ranks": 2} | kw))


@pytest.mark.parametrize("problem,name", [
    (DAHL | {"lam": np.nan}, "problem['lam']"), (DAHL | {"dt": 0.0}, "problem['dt']"),
    (DAHL | {"u0": [np.inf]}, "problem['u0']"), ({"kind": "dahlquist", "lam": -1.0}, "problem")])
def test_solve_validates_the_problem_before_launching(problem, name, no_launch):
    raises_naming((TypeError, ValueError), name, MP.solve, problem, 64)


def test_solve_validates_gru_params_before_launching(no_launch):
    p = gru.init_params(2, 3, dtype=np.float64)
    p.W_hh[0, 0] = np.nan
    X = np.zeros((64, 2, 2))
    raises_naming(ValueError, "params.W_hh", MP.solve, {"kind": "gru", "params": p, "X": X}, 64)
    p = gru.init_params(2, 3, dtype=np.float64)
    raises_naming(TypeError, "problem['implicit']", MP.solve, {"kind": "gru", "params": p, "X": X, "implicit": "yes"}, 64)


def test_numpy_integer_m_writes_valid_json(monkeypatch, tmp_path):
    seen = {}

    def fake_launch(module, *, ranks, prepare, collect, timeout, args=()):
        prepare(tmp_path)
        seen["spec"] = json.loads((tmp_path / "spec.json").read_text())
        raise MP.MPIFailed("stop here")
    monkeypatch.setattr(MP, "launch", fake_launch)
    with pytest.raises(MP.MPIFailed):
        MP.solve(DAHL, np.int64(64), ranks=np.int64(2), m=np.int64(4), levels=np.int64(2), max_iter=np.int32(3))
    assert seen["spec"]["mgrit"]["m"] == 4 and seen["spec"]["ranks"] == 2


def _write(work, spec, arrays=None):
    work.mkdir(exist_ok=True)
    (work / "spec.json").write_text(spec if isinstance(spec, str) else json.dumps(spec))
    if arrays is not None:
        np.savez(work / "arrays.npz", **arrays)
    return work


GOOD = {"nt": 64, "ranks": 2, "repeat": 0, "fail_rank": None, "hang_rank": None, "problem": DAHL,
        "mgrit": {"m": 4, "levels": 2, "relax": "F", "cycle": "V", "max_iter": 3, "tol": 0.0}}


@pytest.mark.parametrize("spec", ["{not json", json.dumps([1]), GOOD | {"nt": -1}, GOOD | {"fail_rank": 5},
                                  GOOD | {"mgrit": GOOD["mgrit"] | {"m": 1}}, GOOD | {"problem": DAHL | {"dt": -1}},
                                  GOOD | {"problem": {"kind": "gru", "dt": 1.0}}])
def test_worker_called_by_hand_with_a_bad_spec_returns_2(spec, tmp_path, capsys):
    work = _write(tmp_path / "job", spec)
    assert MP.main([str(work)]) == 2
    assert "error" in capsys.readouterr().err


def test_worker_called_by_hand_with_no_folder_returns_2(tmp_path):
    assert MP.main([str(tmp_path / "missing")]) == 2
    assert MP.main([str(tmp_path)]) == 2  # a folder without spec.json


def test_check_job_accepts_a_good_spec(tmp_path):
    MP.check_job(_write(tmp_path / "job", GOOD), [])
    p = gru.init_params(2, 3, dtype=np.float64)
    arrays = {"X": np.zeros((64, 2, 2)), "h0": np.zeros((2, 3)), "W_ih": p.W_ih, "W_hh": p.W_hh,
              "b_ih": p.b_ih, "b_hh": p.b_hh}
    spec = GOOD | {"problem": {"kind": "gru", "implicit": True, "dt": 1.0}}
    MP.check_job(_write(tmp_path / "job2", spec, arrays), [])
    arrays["X"] = np.zeros((63, 2, 2))
    raises_naming(ValueError, "arrays.npz X", MP.check_job, _write(tmp_path / "job3", spec, arrays), [])


def test_block_range_and_partition_arguments():
    raises_naming(ValueError, "rank", MP.block_range, 10, 2, 2)
    raises_naming(ValueError, "size", MP.block_range, 10, 0, 0)
    raises_naming(TypeError, "n", MP.block_range, 1.5, 2, 0)
    raises_naming(TypeError, "comm", MP.RankPartition, object(), 4, 4)
    assert [MP.block_range(10, 3, r) for r in range(3)] == [(0, 3), (3, 6), (6, 10)]
