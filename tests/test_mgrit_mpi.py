"""MGRIT over 2 MPI ranks equals the serial MGRIT; failing / hanging ranks are named."""
import numpy as np
import pytest

from course_lib.core import backend
from course_lib.models import gru
from course_lib.algorithms import mgrit
from course_lib.parallel import mgrit_mpi as MP

OK, WHY = backend.mpi_available()
needs_mpi = pytest.mark.skipif(not OK, reason=f"needs MPI: {WHY}")
DAHL = {"kind": "dahlquist", "lam": -1.0, "dt": 0.1, "u0": [1.0]}


def test_block_range_covers_everything():
    for n, size in [(10, 3), (4, 4), (7, 2)]:
        blocks = [MP.block_range(n, size, r) for r in range(size)]
        assert blocks[0][0] == 0 and blocks[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))


@needs_mpi
@pytest.mark.parametrize("relax,levels", [("F", 2), ("FCF", 3)])
def test_two_ranks_equal_serial_dahlquist(relax, levels):
    U, hist, info = MP.launch(DAHL, 64, ranks=2, m=4, levels=levels, relax=relax, max_iter=4, tol=0.0, timeout=60)
    Us, hs = mgrit.MGRIT(mgrit.dahlquist_step(-1.0, 0.1, 4), m=4, levels=levels, relax=relax, max_iter=4,
                         tol=0.0).solve(np.ones(1), 64)
    assert np.array_equal(U, Us)
    np.testing.assert_allclose(hist, hs, rtol=1e-12)
    assert info["ranks"] == 2


@needs_mpi
def test_two_ranks_equal_serial_gru():
    p = gru.init_params(3, 6, seed=0, dtype=np.float64)
    X = np.random.default_rng(0).standard_normal((32, 2, 3))
    h0 = np.zeros((2, 6))
    U, hist, _ = MP.launch({"kind": "gru", "params": p, "X": X, "h0": h0, "implicit": True, "dt": 1.0}, 32,
                           ranks=2, m=4, levels=2, relax="FCF", max_iter=3, tol=0.0, timeout=60)
    Hs, hs = gru.gru_forward(p, X, h0, implicit=True, solver="mgrit", m=4, levels=2, relax="FCF", max_iter=3,
                             tol=0.0, return_history=True)
    np.testing.assert_allclose(U[1:], Hs, rtol=0, atol=1e-14)


@needs_mpi
def test_failing_rank_is_named():
    with pytest.raises(MP.MPIRankError, match=r"rank\(s\) \[1\] failed"):
        MP.launch(DAHL, 64, ranks=2, fail_rank=1, timeout=60)


@needs_mpi
def test_hanging_rank_times_out_and_is_named():
    with pytest.raises(MP.MPIRankError, match=r"timed out after 3 s(.|\n)*rank 1: hanging"):
        MP.launch(DAHL, 64, ranks=2, hang_rank=1, timeout=3)


def test_bad_input_messages():
    if not OK:
        with pytest.raises(RuntimeError, match="MPI is not available"):
            MP.launch(DAHL, 64)
        return
    with pytest.raises(ValueError, match="ranks: 8 ranks for 4 C-intervals"):
        MP.launch(DAHL, 16, ranks=8, m=4)
    with pytest.raises(ValueError, match="m: the coarsening factor must be >= 2"):
        MP.launch(DAHL, 16, m=1)
    with pytest.raises(ValueError, match="problem\\['kind'\\]: expected one of"):
        MP.launch({"kind": "lstm"}, 16)
    with pytest.raises(ValueError, match="levels: the MPI solver needs levels >= 2"):
        MP.launch(DAHL, 16, levels=1)
