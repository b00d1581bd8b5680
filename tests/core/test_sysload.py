"""course_lib.core.sysload: a process's run time from schedstat; settle() waits out another thread's spinning."""
import os
import threading
import time

import pytest

from course_lib.core import sysload

linux = pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux /proc")


@linux
def test_process_run_seconds_grows_with_work_and_is_none_for_no_process():
    before = sysload.process_run_seconds(os.getpid())
    t0 = time.thread_time()
    while time.thread_time() - t0 < 0.05:     # 50 ms on a core, however long other programs make it take
        pass
    assert sysload.process_run_seconds(os.getpid()) - before >= 0.045
    assert sysload.process_run_seconds(2 ** 30) is None


@linux
def test_settle_waits_until_another_thread_stops_spinning():
    stop = time.perf_counter() + 0.2

    def spin():
        while time.perf_counter() < stop:
            pass
    worker = threading.Thread(target=spin)
    t0 = time.perf_counter()
    worker.start()
    assert sysload.settle(limit=3.0)
    assert time.perf_counter() - t0 >= 0.15          # not before the spinning thread stopped
    worker.join()
    t0 = time.perf_counter()
    assert sysload.settle(limit=3.0) and time.perf_counter() - t0 < 1.0


@linux
def test_settle_gives_up_after_its_limit():
    stop = time.perf_counter() + 1.0

    def spin():
        while time.perf_counter() < stop:
            pass
    worker = threading.Thread(target=spin)
    worker.start()
    t0 = time.perf_counter()
    assert not sysload.settle(limit=0.2)
    assert 0.15 <= time.perf_counter() - t0 < 0.9
    worker.join()


@pytest.mark.parametrize("kw, name", [(dict(window=float("nan")), "window"), (dict(window=-1), "window"),
                                      (dict(window=float("inf")), "window"), (dict(window=None), "window"),
                                      (dict(limit="x"), "limit"), (dict(limit=-1.0), "limit"), (dict(limit=1e9), "limit"),
                                      (dict(pids=None), "pids"), (dict(pids="12"), "pids"), (dict(pids=[0]), "pids[0]"),
                                      (dict(pids=[1, 2.5]), "pids[1]")])
def test_settle_checks_its_arguments_before_sleeping(kw, name):
    """issue 39: ``limit=nan`` or ``limit="x"`` slept and returned; ``window=inf`` overflowed inside time.sleep."""
    from helpers import raises_fast
    raises_fast((ValueError, TypeError), name, sysload.settle, seconds=1.0, **kw)


def test_the_readers_check_their_arguments():
    from helpers import raises_naming
    raises_naming((ValueError, TypeError), "pid", sysload.process_run_seconds, None)
    raises_naming((ValueError, TypeError), "pid", sysload.process_run_seconds, 2.5)
    raises_naming((ValueError, TypeError), "pid", sysload.process_run_seconds, True)
    raises_naming(TypeError, "before", sysload.threads_that_ran, None, {}, 1.0)
    raises_naming(TypeError, "after", sysload.threads_that_ran, {}, "x", 1.0)
    raises_naming((ValueError, TypeError), "wall", sysload.threads_that_ran, {}, {}, float("nan"))
    raises_naming(TypeError, "before", sysload.waited, "x", {})
    assert sysload.waited(None, {"1": 2.0}) is None and sysload.waited({"1": 1.0}, {"1": 3.0}) == 2.0
