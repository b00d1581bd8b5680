"""Fork-join on Python threads with the caller taking a share (core layer).

A thread pool hands work to sleeping threads: each hand-off wakes a thread (tens of µs on a small machine) and
the caller then sleeps until the results are back. When the caller does one share itself, a ``P``-way split
wakes ``P - 1`` threads instead of ``P`` and the caller never idles -- on two cores that is one wake-up per
barrier instead of two (measured: chapter 07's layer wavefront 1.5x faster; `benchmarks/which.py` prices it).

``Team(threads)``        a context manager: ``threads - 1`` pool threads (none for ``threads = 1``)
``team.run(fn, items)``  ``[fn(item) for item in items]``, ``items[0]`` on the caller, the rest on the pool;
                         the first exception raised is re-raised after every item has finished
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

from .validate import check_positive_int

__all__ = ["Team", "MAX_THREADS"]

MAX_THREADS = 1024   # more workers than any machine has cores is a typo: refused before a pool is made


class Team:
    """``threads`` workers: the caller and ``threads - 1`` pool threads (see the module docstring)."""

    def __init__(self, threads: int):
        self.threads = check_positive_int(threads, "threads", high=MAX_THREADS)
        self._pool = ThreadPoolExecutor(self.threads - 1) if self.threads > 1 else None

    def run(self, fn: Callable, items: Sequence) -> list:
        """``[fn(item) for item in items]`` in order; ``items[0]`` runs on the calling thread."""
        items = list(items)
        if not items:
            return []
        if self._pool is None:
            return [fn(item) for item in items]
        futures = [self._pool.submit(fn, item) for item in items[1:]]
        first, error = None, None
        try:
            first = fn(items[0])
        except BaseException as exc:  # wait for the others before raising: no task outlives the call
            error = exc
        rest = []
        for f in futures:
            try:
                rest.append(f.result())
            except BaseException as exc:
                error = error or exc
        if error is not None:
            raise error
        return [first] + rest

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> "Team":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
