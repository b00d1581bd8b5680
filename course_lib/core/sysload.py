"""What the operating system says about load and threads (core layer), for :mod:`course_lib.core.timing`'s
noise guard. Linux only (``/proc``); elsewhere (macOS, Windows, a container without /proc) every reader returns
None or an empty dict, and the guard judges by the timings alone (tests/core/test_platforms.py).

``busy_cpu_seconds()``          CPU seconds all processes spent busy since boot (/proc/stat)
``run_queue_wait()``            seconds each thread of this process waited, runnable, for a core (schedstat)
``waited(before, after)``       that wait between two readings, summed over threads
``thread_cpu()``                seconds each thread of this process ran or waited for a core (schedstat)
``threads_that_ran(b, a, wall)`` how many threads were busy for at least 2% of ``wall`` between two readings
``others_running()``            threads of other processes runnable right now (procs_running less ours)
``process_run_seconds(pid)``    seconds all threads of process ``pid`` have run on a core (schedstat)
``settle(pids=())``            wait until this process's other threads (and processes ``pids``) are idle
"""
from __future__ import annotations

import os
import threading
import time

from .validate import check_float, check_int

__all__ = ["busy_cpu_seconds", "run_queue_wait", "waited", "thread_cpu", "threads_that_ran", "others_running",
           "process_run_seconds", "settle", "SETTLE_WINDOW", "SETTLE_LIMIT"]

SETTLE_WINDOW, SETTLE_LIMIT = 0.02, 0.5   # settle(): idle for 20 ms; give up after 0.5 s
MAX_SETTLE = 3600.0                        # settle(): a window or limit beyond an hour is a typo, refused


def _check_reading(value, name: str, *, none: bool = False) -> dict | None:
    """A reading of :func:`thread_cpu` / :func:`run_queue_wait`: a dict thread id -> seconds (None when allowed)."""
    if value is None and none:
        return None
    if not isinstance(value, dict):
        raise TypeError(f"{name}: expected a dict thread id -> seconds (a thread_cpu() or run_queue_wait() reading), "
                        f"got {type(value).__name__}")
    return value


def busy_cpu_seconds() -> float | None:
    """CPU seconds all processes have spent busy since boot (Linux ``/proc/stat``), else None."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]
        busy = sum(ticks) - ticks[3] - ticks[4]  # minus idle and iowait
        return busy / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):   # no /proc, an odd line, no os.sysconf (Windows)
        return None


def run_queue_wait() -> dict[str, float] | None:
    """Seconds each of this process's threads has spent ready to run but waiting for a core, by thread id
    (Linux ``/proc/self/task/*/schedstat``); None where the OS does not tell."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    out = {}
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[tid] = int(f.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            continue                      # a thread that ended meanwhile
    return out or None


def waited(before: dict | None, after: dict | None) -> float | None:
    """Run-queue wait between two readings, summed over threads (a thread born meanwhile counts whole;
    one that ended meanwhile is lost, never negative)."""
    before, after = _check_reading(before, "before", none=True), _check_reading(after, "after", none=True)
    if before is None or after is None:
        return None
    return sum(w - before.get(tid, 0.0) for tid, w in after.items() if w >= before.get(tid, 0.0))


def thread_cpu() -> dict[str, float]:
    """Seconds each of this process's threads has run on a core or waited, runnable, for one, by thread id
    (Linux schedstat; {} elsewhere): a worker that other programs starve of a core waits instead of running."""
    out = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                run, wait = f.read().split()[:2]
                out[tid] = (int(run) + int(wait)) / 1e9
        except (OSError, IndexError, ValueError):
            continue
    return out


def _running_tids() -> set:
    """This process's threads in state R (running or ready to run) right now."""
    out = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                if f.read().rpartition(")")[2].split()[0] == "R":
                    out.add(tid)
        except (OSError, IndexError):
            continue
    return out


def others_running() -> float | None:
    """Threads of *other* processes ready to run or running right now: the machine's runnable count
    (``procs_running`` in /proc/stat) less this process's threads in state R -- read just before *and* just after
    the count, so that a worker of ours that goes to sleep meanwhile (a thread pool winding down after its
    parallel region) is not taken for another program's; None where the OS does not tell."""
    try:
        ours = _running_tids()
        with open("/proc/stat") as f:
            total = next(int(line.split()[1]) for line in f if line.startswith("procs_running"))
        ours |= _running_tids()
    except (OSError, StopIteration, ValueError):
        return None
    return float(max(0, total - len(ours)))


def threads_that_ran(before: dict, after: dict, wall: float) -> int:
    """How many threads ran or waited for a core for at least 2% of ``wall`` seconds between two
    :func:`thread_cpu` readings."""
    before, after = _check_reading(before, "before"), _check_reading(after, "after")
    wall = check_float(wall, "wall", low=0.0)
    return sum(1 for tid, t in after.items() if wall > 0 and t - before.get(tid, 0.0) >= 0.02 * wall)


def process_run_seconds(pid: int) -> float | None:
    """Seconds all live threads of process ``pid`` have run on a core (Linux schedstat), None where the OS does
    not tell: a process whose number stands still is idle -- no thread pool of its spins."""
    pid = check_int(pid, "pid", low=1)
    try:
        tasks = os.listdir(f"/proc/{int(pid)}/task")
    except OSError:
        return None
    total = 0
    for tid in tasks:
        try:
            with open(f"/proc/{int(pid)}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def settle(window: float = SETTLE_WINDOW, limit: float = SETTLE_LIMIT, pids=()) -> bool | None:
    """Sleep until no thread of this process but the caller, and no thread of the processes ``pids``, has run
    for ``window`` seconds, at most ``limit`` seconds: True when that happened, False at the limit, None where
    the OS does not tell (no schedstat: it sleeps ``window``). A BLAS or OpenMP pool spins for a while after its
    call, waiting for the next: whatever runs then on another pool (numba's, another library's, another
    process's) shares its cores with the spinning threads."""
    window = check_float(window, "window", low=0.0, high=MAX_SETTLE, low_inclusive=False)
    limit = check_float(limit, "limit", low=0.0, high=MAX_SETTLE)
    if isinstance(pids, (str, bytes)) or not hasattr(pids, "__iter__"):
        raise TypeError(f"pids: expected a list of process ids, got {type(pids).__name__} {pids!r}")
    pids = [check_int(pid, f"pids[{i}]", low=1) for i, pid in enumerate(pids)]
    me = str(threading.get_native_id())

    def ran():
        own = thread_cpu()
        theirs = [process_run_seconds(pid) for pid in pids]
        if not own or None in theirs:
            return None
        return sum(v for tid, v in own.items() if tid != me) + sum(theirs)
    start, before = time.perf_counter(), ran()
    while True:
        time.sleep(window)
        after = ran()
        if before is None or after is None:
            return None
        if after - before < 0.1 * window:
            return True
        if time.perf_counter() - start >= limit:
            return False
        before = after
