"""course_lib.core.forkjoin.Team: results in order, the first item on the caller, errors after every item."""
import threading
import time

import pytest

from course_lib.core.forkjoin import Team


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_results_in_order_and_first_item_on_the_caller(threads):
    seen = {}

    def f(i):
        seen[i] = threading.get_ident()
        return i * i

    with Team(threads) as team:
        assert team.run(f, range(7)) == [i * i for i in range(7)]
        assert team.run(f, []) == []
    assert seen[0] == threading.get_ident()
    assert len(set(seen.values())) <= threads


def test_an_error_is_raised_after_every_item_finished():
    done = []

    def f(i):
        if i == 0:
            raise KeyError("first")
        time.sleep(0.05)
        done.append(i)

    with Team(2) as team, pytest.raises(KeyError, match="first"):
        team.run(f, [0, 1, 2])
    assert sorted(done) == [1, 2]


def test_bad_threads_is_named():
    with pytest.raises(ValueError, match="threads"):
        Team(0)
    with pytest.raises(TypeError, match="threads"):
        Team(1.5)


@pytest.mark.parametrize("threads", [10**12, 2000, True, None, "2"])
def test_absurd_or_non_integer_threads_are_refused(threads):
    """issue 39: ``Team(10**12)`` made a pool that would start a thread per item."""
    with pytest.raises((ValueError, TypeError), match="threads"):
        Team(threads)
