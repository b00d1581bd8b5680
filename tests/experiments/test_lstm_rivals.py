"""course_lib.experiments.lstm_rivals: rivals in processes of their own, taking turns; paired rounds; errors
that name the argument; a worker's failure comes back as an error, never a hang."""
import pytest

from course_lib.core.timing import Comparison
from course_lib.experiments import lstm_rivals as R
from helpers import raises_naming


def test_rivals_take_turns_and_pair_their_rounds():
    with R.Rivals(full_width=True, torch=False) as rivals:
        assert rivals.names == [R.OURS, R.FULL_WIDTH]
        cmp = rivals.compare((2, 4, 3, 3), True, "workspace", extra=("naive",), rounds=3, block_s=0.005)
        raises_naming(ValueError, "shape", rivals.compare, (2, 4, 3), False)
        raises_naming(ValueError, "method", rivals.compare, (2, 4, 3, 3), False, "auto")
        raises_naming(ValueError, "extra", rivals.compare, (2, 4, 3, 3), False, extra=("fast",))
        raises_naming(ValueError, "rounds", rivals.compare, (2, 4, 3, 3), False, rounds=0)
        with pytest.raises(RuntimeError, match="ours: the worker failed"):
            rivals._ask(R.OURS, "run", (2, 4, 3, 3), False, "no such method", 1)
        workers = [proc for proc, _ in rivals._workers.values()]
    assert isinstance(cmp, Comparison) and cmp.baseline == R.OURS
    assert set(cmp.timings) == {R.OURS, "naive", R.FULL_WIDTH}
    assert all(len(t.times) == 3 and min(t.times) > 0 for t in cmp.timings.values())
    assert cmp.ratio("naive") > 0 and len(cmp.pairs(R.FULL_WIDTH).values) <= 3
    assert not any(proc.is_alive() for proc in workers)


def test_rivals_outside_with_and_bad_arguments():
    raises_naming(TypeError, "full_width", R.Rivals, full_width=1)
    raises_naming(ValueError, "threads", R.Rivals, threads=0)
    with pytest.raises(RuntimeError, match="'with' block"):
        R.Rivals(torch=False).compare((2, 4, 3, 3), False)
