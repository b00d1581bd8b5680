"""MGRIT over 2 MPI ranks runs the same iteration loop as the one-process solver and equals it bit for bit;
failing / hanging / diverging ranks are named through core.mpi's MPIFailed."""
import json

import numpy as np
import pytest

from course_lib.algorithms import mgrit
from course_lib.core import backend
from course_lib.core.mpi import MPIFailed
from course_lib.models import gru
from course_lib.parallel import mgrit_mpi as MP
from helpers import raises_naming

OK, WHY = backend.mpi_available()
needs_mpi = pytest.mark.skipif(not OK, reason=f"needs MPI: {WHY}")
DAHL = {"kind": "dahlquist", "lam": -1.0, "dt": 0.1, "u0": [1.0]}


def test_block_range_covers_everything():
    for n, size in [(10, 3), (4, 4), (7, 2)]:
        blocks = [MP.block_range(n, size, r) for r in range(size)]
        assert blocks[0][0] == 0 and blocks[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))


def test_rank_partition_is_a_partition_and_the_loop_is_shared():
    # no MPI needed: a fake one-rank communicator drives the same MGRIT.iterate as the threads
    class OneRank:
        def Get_rank(self):
            return 0

        def Get_size(self):
            return 1

        def gather(self, x, root=0):
            return [x]

        def scatter(self, x, root=0):
            return x[0]

    part = MP.RankPartition(OneRank(), 16, 4)
    assert isinstance(part, mgrit.Partition) and part.points == range(0, 65) and part.cpoints == range(1, 17)
    step = mgrit.dahlquist_step(-1.0, 0.1, 4)
    kw = dict(m=4, levels=3, relax="FCF", max_iter=3, tol=0.0)
    part.allreduce = lambda x, op="sum": float(x)
    U, h = mgrit.MGRIT(step, **kw).iterate(np.ones(1), 64, part)
    Us, hs = mgrit.MGRIT(step, **kw).solve(np.ones(1), 64)
    assert np.array_equal(U, Us) and h == hs
    assert "def _iterate" not in open(MP.__file__).read() and "for it in range" not in open(MP.__file__).read()


def test_rank_partition_threads_split_the_ranks_block_and_equal_one_thread():
    # the hybrid layout: inside a rank, threads share its C-intervals; the arithmetic (and U) is unchanged
    class OneRank:
        def Get_rank(self):
            return 0

        def Get_size(self):
            return 1

        def gather(self, x, root=0):
            return [x]

        def scatter(self, x, root=0):
            return x[0]

    seen = []
    part = MP.RankPartition(OneRank(), 16, 4, threads=3)
    part.map(lambda r: seen.append(r), range(0, 16))
    assert sorted(seen, key=lambda r: r.start) == [range(0, 5), range(5, 10), range(10, 16)]
    part.allreduce = lambda x, op="sum": float(x)
    step = mgrit.dahlquist_step(-1.0, 0.1, 4)
    kw = dict(m=4, levels=2, relax="FCF", max_iter=3, tol=0.0)
    U, _ = mgrit.MGRIT(step, **kw).iterate(np.ones(1), 64, part)
    part.close()
    Us, _ = mgrit.MGRIT(step, **kw).solve(np.ones(1), 64)
    assert np.array_equal(U, Us)
    raises_naming(ValueError, "threads", MP.RankPartition, OneRank(), 16, 4, threads=0)
    raises_naming((TypeError, ValueError), "threads", MP.solve, DAHL, 64, ranks=2, threads=1.5)


@needs_mpi
def test_two_ranks_two_threads_each_equal_serial_gru():
    p = gru.init_params(3, 6, seed=1, dtype=np.float64)
    X = np.random.default_rng(1).standard_normal((32, 2, 3))
    U, hist, info = MP.solve({"kind": "gru", "params": p, "X": X, "implicit": True}, 32, ranks=2, threads=2, m=4,
                             levels=2, relax="FCF", max_iter=3, tol=0.0, timeout=60)
    Hs, hs = gru.gru_forward(p, X, None, implicit=True, method="mgrit", m=4, levels=2, relax="FCF", max_iter=3,
                             tol=0.0, return_history=True)
    assert np.array_equal(U[1:], Hs) and info["threads"] == 2 and info["ranks"] == 2
    np.testing.assert_allclose(hist, hs, rtol=1e-12)


@needs_mpi
@pytest.mark.parametrize("relax,levels,cycle", [("F", 2, "V"), ("FCF", 3, "V"), ("FCF", 3, "F")])
def test_two_ranks_equal_serial_dahlquist(relax, levels, cycle):
    U, hist, info = MP.solve(DAHL, 64, ranks=2, m=4, levels=levels, relax=relax, cycle=cycle, max_iter=4, tol=0.0,
                             timeout=60)
    s = mgrit.MGRIT(mgrit.dahlquist_step(-1.0, 0.1, 4), m=4, levels=levels, relax=relax, cycle=cycle, max_iter=4,
                    tol=0.0)
    Us, hs = s.solve(np.ones(1), 64)
    assert np.array_equal(U, Us)
    np.testing.assert_allclose(hist, hs, rtol=1e-12)
    assert info["ranks"] == 2 and info["steps"] == s.steps_taken and info["solve_times"] == []


@needs_mpi
def test_two_ranks_equal_serial_gru_and_time_their_solve():
    p = gru.init_params(3, 6, seed=0, dtype=np.float64)
    X = np.random.default_rng(0).standard_normal((32, 2, 3))
    h0 = np.zeros((2, 6))
    U, hist, info = MP.solve({"kind": "gru", "params": p, "X": X, "h0": h0, "implicit": True, "dt": 1.0}, 32,
                             ranks=2, m=4, levels=2, relax="FCF", max_iter=3, tol=0.0, repeat=2, timeout=60)
    Hs, hs = gru.gru_forward(p, X, h0, implicit=True, method="mgrit", m=4, levels=2, relax="FCF", max_iter=3,
                             tol=0.0, return_history=True)
    assert np.array_equal(U[1:], Hs)
    assert len(info["solve_times"]) == 2 and all(t > 0 for t in info["solve_times"])


@needs_mpi
def test_diverging_explicit_gru_stops_every_rank_with_the_message():
    p = gru.init_params(3, 8, seed=0, dtype=np.float64)
    X = np.random.default_rng(1).standard_normal((1024, 4, 3))
    with pytest.raises(MPIFailed, match=r"(?s)MGRITDivergence: MGRIT diverged at iteration 1") as e:
        MP.solve({"kind": "gru", "params": p, "X": X, "h0": None, "implicit": False}, 1024, ranks=2, m=16, levels=2,
                 max_iter=5, timeout=60)
    # every rank sees the same residual and raises; the first to abort may stop the other before it
    # writes its status, so at least one rank is named -- and the job ended (no timeout)
    assert e.value.failed_ranks and set(e.value.failed_ranks) <= {0, 1}
    assert "timed out" not in str(e.value)


@needs_mpi
def test_failing_rank_is_named():
    with pytest.raises(MPIFailed, match=r"failed rank\(s\): \[1\]") as e:
        MP.solve(DAHL, 64, ranks=2, fail_rank=1, timeout=60)
    assert e.value.failed_ranks == [1] and "injected failure" in e.value.states[1]


@needs_mpi
def test_hanging_rank_times_out_and_is_named():
    with pytest.raises(MPIFailed, match=r"(?s)timed out after 3 s.*rank 1: hanging"):
        MP.solve(DAHL, 64, ranks=2, hang_rank=1, timeout=3)


def test_bad_input_messages():
    with pytest.raises(ValueError, match="ranks: 8 ranks for 4 C-intervals"):
        MP.solve(DAHL, 16, ranks=8, m=4)
    with pytest.raises(ValueError, match="m: the coarsening factor must be >= 2"):
        MP.solve(DAHL, 16, m=1)
    with pytest.raises(ValueError, match="problem\\['kind'\\]: expected one of"):
        MP.solve({"kind": "lstm"}, 16)
    with pytest.raises(ValueError, match="levels: the MPI solver needs levels >= 2"):
        MP.solve(DAHL, 16, levels=1)
    with pytest.raises(ValueError, match="cycle: expected one of"):
        MP.solve(DAHL, 16, cycle="W")
    with pytest.raises(TypeError, match="problem\\['params'\\]: expected GRUParams"):
        MP.solve({"kind": "gru", "params": {}, "X": np.zeros((16, 1, 2))}, 16)
    p = gru.init_params(2, 3)
    with pytest.raises(ValueError, match="problem\\['X'\\]: expected shape"):
        MP.solve({"kind": "gru", "params": p, "X": np.zeros((12, 1, 2))}, 16)
    if not OK:
        with pytest.raises(MPIFailed, match="MPI is not available"):
            MP.solve(DAHL, 64)


# --------------------------------------------------------------------------- bad input
# everything validated before a job starts; the worker called by hand returns 2
@pytest.fixture
def no_launch(monkeypatch):
    """Any launch is a test failure: validation must happen before the job starts."""
    def boom(*a, **k):
        raise AssertionError("launch called: the problem was not validated before the job started")
    monkeypatch.setattr(MP, "launch", boom)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kw,name", [({"fail_rank": 2}, "fail_rank"), ({"hang_rank": -1}, "hang_rank"),
                                     ({"fail_rank": "0"}, "fail_rank"), ({"tol": np.nan}, "tol"),
                                     ({"m": 1}, "m"), ({"m": 4.0}, "m"), ({"max_iter": 0}, "max_iter")])
def test_solve_rejects_bad_options_before_launching(kw, name, no_launch):
    raises_naming((TypeError, ValueError), name, MP.solve, DAHL, 64, **({"ranks": 2} | kw))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("problem,name", [
    (DAHL | {"lam": np.nan}, "problem['lam']"), (DAHL | {"dt": 0.0}, "problem['dt']"),
    (DAHL | {"u0": [np.inf]}, "problem['u0']"), ({"kind": "dahlquist", "lam": -1.0}, "problem")])
def test_solve_validates_the_problem_before_launching(problem, name, no_launch):
    raises_naming((TypeError, ValueError), name, MP.solve, problem, 64)


@pytest.mark.timeout(30)
def test_solve_validates_gru_params_before_launching(no_launch):
    p = gru.init_params(2, 3, dtype=np.float64)
    p.W_hh[0, 0] = np.nan
    X = np.zeros((64, 2, 2))
    raises_naming(ValueError, "params.W_hh", MP.solve, {"kind": "gru", "params": p, "X": X}, 64)
    p = gru.init_params(2, 3, dtype=np.float64)
    raises_naming(TypeError, "problem['implicit']", MP.solve, {"kind": "gru", "params": p, "X": X, "implicit": "yes"}, 64)


@pytest.mark.timeout(30)
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


@pytest.mark.timeout(30)
@pytest.mark.parametrize("spec", ["{not json", json.dumps([1]), GOOD | {"nt": -1}, GOOD | {"fail_rank": 5},
                                  GOOD | {"mgrit": GOOD["mgrit"] | {"m": 1}}, GOOD | {"problem": DAHL | {"dt": -1}},
                                  GOOD | {"problem": {"kind": "gru", "dt": 1.0}}])
def test_worker_called_by_hand_with_a_bad_spec_returns_2(spec, tmp_path, capsys):
    work = _write(tmp_path / "job", spec)
    assert MP.main([str(work)]) == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.timeout(30)
def test_worker_called_by_hand_with_no_folder_returns_2(tmp_path):
    assert MP.main([str(tmp_path / "missing")]) == 2
    assert MP.main([str(tmp_path)]) == 2  # a folder without spec.json


@pytest.mark.timeout(30)
def test_check_job_accepts_a_good_spec(tmp_path):
    MP.check_job(_write(tmp_path / "job", GOOD), [])
    p = gru.init_params(2, 3, dtype=np.float64)
    arrays = {"X": np.zeros((64, 2, 2)), "h0": np.zeros((2, 3)), "W_ih": p.W_ih, "W_hh": p.W_hh,
              "b_ih": p.b_ih, "b_hh": p.b_hh}
    spec = GOOD | {"problem": {"kind": "gru", "implicit": True, "dt": 1.0}}
    MP.check_job(_write(tmp_path / "job2", spec, arrays), [])
    arrays["X"] = np.zeros((63, 2, 2))
    raises_naming(ValueError, "arrays.npz X", MP.check_job, _write(tmp_path / "job3", spec, arrays), [])


@pytest.mark.timeout(30)
def test_block_range_and_partition_arguments():
    raises_naming(ValueError, "rank", MP.block_range, 10, 2, 2)
    raises_naming(ValueError, "size", MP.block_range, 10, 0, 0)
    raises_naming(TypeError, "n", MP.block_range, 1.5, 2, 0)
    raises_naming(TypeError, "comm", MP.RankPartition, object(), 4, 4)
    assert [MP.block_range(10, 3, r) for r in range(3)] == [(0, 3), (3, 6), (6, 10)]


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, assume, given, settings, strategies as st  # noqa: E402

from bad_input import BAD_NUMBER, HUGE, NOT_SIZE, clear_or_correct, fails_fast, finishes_fast  # noqa: E402


def _no_launch(*a, **k):
    raise AssertionError("mpiexec was launched with bad input (validate before launching)")


def test_absurd_levels_fail_fast_before_launching(monkeypatch):
    """levels = 1e10 made the solver compute m**(levels-1) for ~50 s before failing."""
    monkeypatch.setattr(MP, "launch", _no_launch)
    exc = fails_fast(MP.solve, {"kind": "dahlquist", "lam": -1.0, "dt": 0.1, "u0": [1.0]}, 64, levels=10**10)
    assert isinstance(exc, ValueError) and str(exc).startswith("levels"), exc


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(["nt", "ranks", "m", "levels", "max_iter", "repeat", "timeout", "tol"]), data=st.data())
def test_solve_bad_input_is_refused_before_launching(case, data, monkeypatch):
    monkeypatch.setattr(MP, "launch", _no_launch)
    bad = data.draw(BAD_NUMBER if case in ("timeout", "tol") else st.one_of(NOT_SIZE, HUGE))
    assume(not (case == "repeat" and type(bad) is int and bad == 0))  # repeat=0: solve once, untimed (legal)
    kw = {"problem": {"kind": "dahlquist", "lam": -1.0, "dt": 0.1, "u0": [1.0]}, "nt": 64, case: bad}
    finishes_fast(clear_or_correct, MP.solve, case, kw)  # a clear error, within 2 s
