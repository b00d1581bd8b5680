"""How MGRIT's fine level is shared out (algorithms folder): the :class:`Partition` interface that
:meth:`course_lib.algorithms.mgrit.MGRIT.iterate` is written against, and :class:`ThreadPartition`, which runs
the C-intervals in CPU threads of one process (``course_lib.parallel.mgrit_mpi.RankPartition`` gives each MPI
rank a block of them instead). Both are re-exported by :mod:`course_lib.algorithms.mgrit`.
"""
from __future__ import annotations

from typing import Callable

from ..core.forkjoin import Team
from ..core.validate import check_positive_int

__all__ = ["Partition", "ThreadPartition"]


class Partition:
    """How the fine level's ``nc`` C-intervals are shared out -- the interface :meth:`MGRIT.iterate`
    is written against. Interval ``j`` holds the points ``j*m .. j*m + m - 1``; C-point ``j*m``.

    ``intervals``  the C-intervals this process F-relaxes (a ``range``)
    ``cpoints``    the C-points ``j >= 1`` this process C-relaxes and computes residuals for
    ``points``     the time points this process owns (``range``; for the non-finite check)
    ``map(fn, items)``          run ``fn(sub_range)`` over ``items`` (here: in threads)
    ``exchange(U, m)``          make ``U[cpoints.start*m - 1]`` current (a neighbour's F-point)
    ``allreduce(x, op)``        combine a float over all processes (``op`` "sum" or "min")
    ``coarse_correct(U, R, m, correct)``  ``U[::m] = correct(U[::m], R)`` for the C-points owned here
    ``gather(U)``               the whole ``U`` where the result is wanted (None elsewhere)

    This class is the one-process version: everything is local and ``map`` runs serially."""

    def __init__(self, nc: int):
        self.nc = check_positive_int(nc, "nc")
        self.intervals = range(nc)
        self.cpoints = range(1, nc + 1)
        self.points = None  # every point

    def map(self, fn: Callable, items: range) -> None:
        fn(items)

    def exchange(self, U, m: int) -> None:
        return None

    def allreduce(self, x: float, op: str = "sum") -> float:
        return float(x)

    def coarse_correct(self, U, R, m: int, correct: Callable) -> None:
        U[::m] = correct(U[::m].copy(), R)

    def gather(self, U):
        return U

    def close(self) -> None:
        return None


class ThreadPartition(Partition):
    """All intervals in this process, each ``map`` split into ``threads`` contiguous chunks run by a
    thread pool (same arithmetic as one thread, so the same result)."""

    def __init__(self, nc: int, threads: int = 1):
        super().__init__(nc)
        self.threads = check_positive_int(threads, "threads")
        self._pool = None

    def chunks(self, items: range) -> list[range]:
        n = len(items)
        w = min(self.threads, max(n, 1))
        bounds = [items.start + (n * k) // w for k in range(w + 1)]
        return [range(bounds[k], bounds[k + 1]) for k in range(w)]

    def map(self, fn: Callable, items: range) -> None:
        if self.threads == 1 or len(items) < 2:
            fn(items)
            return
        if self._pool is None:
            self._pool = Team(self.threads)  # the calling thread takes the first chunk itself
        self._pool.run(fn, self.chunks(items))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
