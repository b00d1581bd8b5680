"""Our LSTM and ``torch.nn.LSTM``, each in a process of its own, timed in turns (experiments layer; chapter 09).

Why not one process: OpenBLAS's threads and torch's OpenMP threads both spin for a while after each call,
waiting for the next. In one process each pool's spinning threads hold the cores the other pool is about to
use; on a 2-core machine that doubled our pass's time. So each rival runs in a worker process, and the
workers take turns:

* a **round** gives every worker one *block*: one untimed call (the cores were idle while the others ran:
  measured here, a forward pass timed right after the wait ran 1.3x slow), then as many calls as last about
  ``block_s`` seconds; the block's median per-call time is that worker's time for the round (the order
  rotates from round to round);
* before each block every worker is **idle**: its threads' run time (schedstat) stands still for 20 ms,
  and so are this process's other threads (``core.sysload.settle``), so no pool of one rival spins into
  another's block;
* rounds pair up like :func:`course_lib.core.timing.compare`'s, so the ratios and their intervals come from
  :class:`~course_lib.core.intervals.Ratio`.

Workers (``Rivals(...)``, a context manager; names are keys of :meth:`Rivals.compare`'s timings):

``"ours"``         this course's LSTM (:func:`course_lib.models.lstm.lstm_forward`, the ``method`` asked for)
``"ours, full width"``  our BLAS path (``FULL_WIDTH_METHOD``, "workspace") in a process without
                   ``OPENBLAS_CORETYPE`` (``full_width=True``): where that variable pins OpenBLAS to kernels
                   narrower than the CPU's vectors, this worker shows what the same code does with the kernels
                   OpenBLAS picks for the CPU itself
``"torch"``        ``torch.nn.LSTM`` with the same weights (``torch=True`` and torch installed)

and, in :meth:`Rivals.compare`, any other method of ours (``extra``), run by the ``"ours"`` worker under its
own name (``"naive"``: the per-gate textbook loop).

Each worker builds the problem ``X (T, B, nx)``, ``dH (T, B, H)`` from fixed seeds (the same numbers in every
worker) and runs forward (torch: no autograd) or forward + backward.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import statistics
import time

from ..core.intervals import Ratio
from ..core.noise import noise_of_pairs
from ..core.sysload import others_running, settle
from ..core.timing import Comparison, Timing, noise_from
from ..core.validate import check_bool, check_float, check_positive_int

__all__ = ["Rivals", "OURS", "FULL_WIDTH", "FULL_WIDTH_METHOD", "TORCH", "torch_installed"]

OURS, FULL_WIDTH, TORCH = "ours", "ours, full width", "torch"
FULL_WIDTH_METHOD = "workspace"     # the method whose GEMMs are all the BLAS's (persistent runs none)
IDLE_S, IDLE_MAX_S = 0.02, 2.0      # idle: no thread ran for 20 ms; give up waiting after 2 s (and say so)


def torch_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


# --------------------------------------------------------------------------- the worker process
def _problem(shape):
    import numpy as np

    from ..models import lstm

    B, H, nx, T = shape
    p = lstm.init_params(nx, H, seed=0)
    X = np.random.default_rng(1).standard_normal((T, B, nx)).astype(np.float32)
    dH = np.random.default_rng(2).standard_normal((T, B, H)).astype(np.float32)
    return p, X, dH


def _pass(kind, shape, backward, method):
    """A zero-argument callable: one pass of ``kind`` ("ours" or "torch") on ``shape = (B, H, nx, T)``."""
    from ..models import lstm

    p, X, dH = _problem(shape)
    if kind == TORCH:
        import torch

        from .lstm_profile import torch_pass
        return torch_pass(torch, p.to_torch(), X, dH, backward)

    method, provider = method.partition("@")[::2]    # "workspace@mkl": a method on a GEMM provider

    def run():
        out = lstm.lstm_forward(p, X, method=method, return_cache=backward, provider=provider or "numpy")
        if backward:
            lstm.lstm_backward(p, out[2], dH)
    return run


def _serve(conn, kind, threads):
    """The worker's loop: ``("calibrate", shape, backward, method)`` -> seconds of one call after a warm-up;
    ``("run", shape, backward, method, number)`` -> one untimed call, then ``number`` per-call times;
    ``("stop",)`` ends it."""
    from threadpoolctl import threadpool_limits

    from ..core.memory import steady_memory

    steady_memory()      # as core.timing.compare does: no page faults for arrays a call frees and the next makes
    limit = threadpool_limits(threads) if threads else None
    if kind == TORCH and threads:
        import torch
        torch.set_num_threads(threads)
    fns = {}
    try:
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                break
            key = tuple(msg[1:4])
            try:
                if key not in fns:
                    fns[key] = _pass(kind, *key)
                    fns[key]()                                   # compile, allocate, warm the caches
                fn, n = fns[key], 1 if msg[0] == "calibrate" else msg[4]
                if msg[0] == "run":
                    fn()             # untimed: cores that were idle while the others ran warm up on this call
                times = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    fn()
                    times.append(time.perf_counter() - t0)
                conn.send(("ok", times))
            except Exception as exc:                             # said to the caller, never a hang
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        if limit is not None:
            limit.restore_original_limits()


# --------------------------------------------------------------------------- the rivals
class Rivals:
    """Worker processes for ``"ours"`` and optionally ``"ours, full width"`` and ``"torch"``; use ``with``.

    ``threads``: BLAS / torch threads in every worker (default: the libraries' own)."""

    def __init__(self, *, full_width: bool = False, torch: bool = True, threads: int | None = None):
        full_width, torch = check_bool(full_width, "full_width"), check_bool(torch, "torch")
        self.threads = None if threads is None else check_positive_int(threads, "threads")
        self.names = [OURS] + ([FULL_WIDTH] if full_width else []) + ([TORCH] if torch and torch_installed() else [])
        self.idle_timeouts = 0          # blocks started although a worker never went idle within IDLE_MAX_S
        self._workers = {}

    def __enter__(self) -> "Rivals":
        ctx = mp.get_context("spawn")     # a fresh interpreter: numpy's BLAS reads its environment at import
        for name in self.names:
            here, there = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(there, TORCH if name == TORCH else OURS, self.threads),
                               daemon=True, name=f"lstm-rival-{name}")
            saved = os.environ.pop("OPENBLAS_CORETYPE", None) if name == FULL_WIDTH else None
            try:
                proc.start()              # the child copies os.environ now
            finally:
                if saved is not None:
                    os.environ["OPENBLAS_CORETYPE"] = saved
            self._workers[name] = (proc, here)
        return self

    def __exit__(self, *exc) -> None:
        for proc, conn in self._workers.values():
            try:
                conn.send(("stop",))
            except OSError:
                pass
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
        self._workers = {}

    def _ask(self, name, *msg):
        proc, conn = self._workers[name]
        conn.send(msg)
        if not conn.poll(600):
            raise TimeoutError(f"{name}: the worker gave no answer in 600 s")
        status, value = conn.recv()
        if status != "ok":
            raise RuntimeError(f"{name}: the worker failed: {value}")
        return value

    def _wait_idle(self) -> None:
        """Until no worker's threads, and none of this process's but the caller, ran for ``IDLE_S`` (every pool
        asleep), at most ``IDLE_MAX_S`` (then counted in ``idle_timeouts``)."""
        quiet = settle(IDLE_S, IDLE_MAX_S, pids=[proc.pid for proc, _ in self._workers.values()])
        if quiet is None:                 # no /proc: wait out a spinning pool's usual timeout instead
            time.sleep(0.2)
        elif not quiet:
            self.idle_timeouts += 1

    def compare(self, shape, backward: bool, method: str = "workspace", *, extra=(), rounds: int = 7,
                block_s: float = 0.2) -> Comparison:
        """Time every worker's pass on ``shape = (B, H, nx, T)`` in ``rounds`` rounds of one block each (and
        each method in ``extra`` on the ``"ours"`` worker); returns a
        :class:`~course_lib.core.timing.Comparison` (baseline ``"ours"``; per-call seconds)."""
        from .lstm import split_choice

        if len(shape) != 4:
            raise ValueError(f"shape: expected (B, H, nx, T), got {shape!r}")
        shape = tuple(check_positive_int(v, "shape") for v in shape)
        backward = check_bool(backward, "backward")
        split_choice(method, "method")                   # a method, or "method@provider"
        extra = tuple(m for m in extra if split_choice(m, "extra"))
        rounds, block_s = check_positive_int(rounds, "rounds"), check_float(block_s, "block_s", low=0.0)
        if not self._workers:
            raise RuntimeError("Rivals: use it in a 'with' block (the workers start there)")
        runs = {OURS: (OURS, method), **{m: (OURS, m) for m in extra},   # name -> (worker, method)
                **{n: (n, method if n == TORCH else FULL_WIDTH_METHOD) for n in self.names if n != OURS}}
        number = {}
        for name, (worker, m) in runs.items():
            self._wait_idle()
            one = self._ask(worker, "calibrate", shape, backward, m)[0]
            number[name] = max(1, round(block_s / max(one, 1e-6)))
        names = list(runs)
        times = {name: [] for name in names}
        others = []
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                self._wait_idle()
                sample = others_running()
                if sample is not None:
                    others.append(sample)
                worker, m = runs[name]
                times[name].append(statistics.median(self._ask(worker, "run", shape, backward, m, number[name])))
        load = statistics.median(others) if others else None
        timings = {name: Timing(ts, number[name], noise_from(ts, load)) for name, ts in times.items()}
        cmp = Comparison(timings, OURS)
        cmp.noise = noise_of_pairs([Ratio.from_times(n, OURS, times[n], times[OURS]) for n in names if n != OURS],
                                   load) if len(names) > 1 else timings[OURS].noise
        return cmp
