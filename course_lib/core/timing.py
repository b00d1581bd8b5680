"""Timing, FLOP/byte counting and a measured roofline (core folder).

Every speed claim in the course is measured with these helpers on the reader's machine.

``measure(fn, *args, repeat=5, warmup=1)`` -> :class:`Timing` (median/min/max in seconds)
``compare(a=fn_a, b=fn_b, ...)``          -> :class:`Comparison`, measured *interleaved* in one run
``gemm_flops(m, n, k)``, ``gemv_flops``, ``array_bytes(*arrays)``
``peak_gflops(dtype)`` / ``copy_bandwidth()`` / ``roofline(intensity)`` -- measured once per process
``budget()`` / ``scaled(full, small)`` -- the one knob that shrinks timing sweeps (``COURSE_BUDGET``)

How :func:`compare` survives a busy machine (ideas from pyperf, hyperfine and ``timeit``):

1. *Calibrate* (pyperf): from the warm-up call, run each function ``number`` times per round so that a
   round lasts at least ``min_time`` -- the clock's resolution then does not matter.
2. *Interleave and pair*: round after round, every function runs once in turn (a, b, a, b, ...). The
   ratio ``t_b / t_a`` within one round -- a *pair ratio* -- cancels slow drift, because both calls saw
   the same machine. Ratios are the median pair ratio, not a ratio of medians.
3. *Set disturbed rounds aside* (hyperfine's outlier test): a round in which a call took more than 3
   robust standard deviations longer than that function's median round was slowed by something else --
   other programs only ever *add* time -- and its pair is left out.
4. *Know how sure you are* (:mod:`course_lib.core.intervals`): a distribution-free 95% interval for the
   median of the remaining pair ratios, from order statistics; no bell curve is assumed.
5. *Adapt*: after the ``repeat`` rounds asked for, add rounds until every ratio's interval is narrow
   (within about +-15%) or the time budget (``time_budget``, 2 s; 0.5 s with ``COURSE_BUDGET=small``)
   is spent. A quiet machine stops at once; a busy one buys certainty with time.
6. ``timeit``'s minimum is still there (``Timing.min``) for absolute rates such as GFLOP/s.
7. *CPU time where a function is single-threaded* (the default ``clock="auto"``): when every function ran on
   the calling thread alone and never slept (the OS's per-thread counters say so), its times are that thread's
   CPU time, which another program's load cannot inflate; otherwise wall time. ``Comparison.clock`` says which.

The noise guard: every :class:`Timing` and :class:`Comparison` carries a :class:`Noise`. For
:func:`measure` it is the spread of the repeats and the CPU time *other processes* took meanwhile (from
``/proc/stat``, on Linux). For :func:`compare` it is the pair ratios' intervals: the load of other
processes no longer condemns a comparison whose pairs agree -- it is reported only as the likely cause
when they do not -- unless one function's threads waited for a core far more than the other's (from
``/proc/self/task/*/schedstat``): threaded code on oversubscribed cores is slowed in *every* round, which
pairs cannot cancel. (The guard lives in :mod:`course_lib.core.noise`.) An unreliable run says so
(``noise.ok`` is False, ``noise.warning()`` explains) *and* what can still be said (``noise.said``:
"b was at least 1.8x faster than a in every one of 40 pairs").
Callers add the facts only they can judge (``noise.add(gflops > peak, "above the measured peak")``),
and ask the question they need answered: ``cmp.faster("b", by=2.0)`` is ``"yes"``, ``"no"`` or
``"cannot tell"``.
"""
from __future__ import annotations

import math
import os
import statistics
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np

from .counting import array_bytes, gemm_flops, gemm_intensity, gemv_flops, gflops, loglog_slope
from .intervals import Ratio
from .memory import steady_memory
from .sysload import others_running as _others_running
from .sysload import run_queue_wait as _run_queue_wait
from .sysload import settle as _settle
from .sysload import thread_cpu as _thread_cpu
from .sysload import threads_that_ran as _threads_that_ran
from .sysload import waited as _waited
from .noise import OTHERS_LIMIT, SPREAD_LIMIT, UNEQUAL_WAIT, Noise, noise_from, noise_of_pairs  # noqa: F401
from .noise import LoadWatch, background_load  # noqa: F401
from .validate import check_dtype, check_float, check_int, check_numbers, check_positive_int

__all__ = [
    "Noise",
    "fmt_seconds",
    "noise_from",
    "noise_of_pairs",
    "CLOCKS",
    "Timing",
    "Comparison",
    "measure",
    "compare",
    "gemm_flops",
    "gemv_flops",
    "array_bytes",
    "gflops",
    "peak_gflops",
    "copy_bandwidth",
    "roofline",
    "budget",
    "scaled",
    "loglog_slope",
    "gemm_intensity",
    "gemm_rate",
    "gemv_rate",
]


# --------------------------------------------------------------------------- budget knob
def budget() -> str:
    """``"full"`` (default, for readers) or ``"small"`` (CI): set with ``COURSE_BUDGET``.

    Only *timing sweeps* may depend on this; deterministic outputs never do.
    """
    value = os.environ.get("COURSE_BUDGET", "full").strip().lower()
    if value not in ("full", "small"):
        raise ValueError(f"COURSE_BUDGET: expected 'full' or 'small', got {value!r}")
    return value


def scaled(full, small):
    """``full`` normally, ``small`` when ``COURSE_BUDGET=small``."""
    return small if budget() == "small" else full


# --------------------------------------------------------------------------- measuring (the noise guard: core/noise.py)
#: The wall clock that measure(), compare() and the noise guard read (seconds, monotonic). Tests swap in
#: a fake clock (tests/conftest.py ``fake_clock``) so that a speed check's verdict does not depend on
#: how busy the machine is; students always get time.perf_counter.
clock = time.perf_counter


def _wall() -> float:
    """The wall clock now: reads the :data:`clock` hook at each call (so a test's fake clock applies)."""
    return clock()


def _wall_is_real() -> bool:
    """Whether :data:`clock` is the real one (a test's fake clock has no idle cores to wait for)."""
    return clock is time.perf_counter

@dataclass
class Timing:
    """Times of repeated calls, in seconds; ``noise`` says whether to trust them. ``clock``: ``"wall"``, or
    ``"cpu"`` where every call ran on the calling thread alone and never slept (then its CPU time, which other
    programs' load cannot inflate; see :func:`compare`'s ``clock="auto"``)."""

    times: list[float]
    number: int = 1  # calls per timed repeat
    noise: Noise = field(default_factory=Noise)
    clock: str = "wall"

    def __post_init__(self):
        self.times = check_numbers(self.times, "times", low=0.0)
        self.number = check_positive_int(self.number, "number")
        if not isinstance(self.noise, Noise):
            raise TypeError(f"noise: expected a Noise (core.noise), got {type(self.noise).__name__}")

    @property
    def spread(self) -> float:
        """Interquartile range / median of the repeats (see :class:`Noise`)."""
        return self.noise.spread

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def max(self) -> float:
        return max(self.times)

    def __str__(self) -> str:
        return f"{fmt_seconds(self.median)} (min {fmt_seconds(self.min)}, max {fmt_seconds(self.max)}, n={len(self.times)})"


def fmt_seconds(s: float) -> str:
    """``s`` seconds as a short label in s, ms or µs (three significant digits)."""
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def measure(fn: Callable, *args, repeat: int = 5, warmup: int = 1, min_time: float = 1e-3,
            number: int | None = None, **kwargs) -> Timing:
    """Time ``fn(*args, **kwargs)``: ``warmup`` untimed calls, then ``repeat`` timed repeats.

    Each repeat runs the call ``number`` times (chosen so a repeat lasts >= ``min_time`` when
    not given) and records the time *per call*: the calling thread's CPU time where every call stayed on it
    and never slept, else wall time (``Timing.clock``, as :func:`compare`'s ``clock="auto"``). Returns a
    :class:`Timing`.
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a callable, got {type(fn).__name__}")
    repeat = check_positive_int(repeat, "repeat", high=10_000)   # more repeats than that would only look like a hang
    warmup = check_int(warmup, "warmup", low=0, high=10_000)
    min_time = check_float(min_time, "min_time", low=0.0, high=60.0)
    steady_memory()  # a warmed-up allocator, whatever the process did before (core.memory)

    def call():
        return fn(*args, **kwargs)

    for _ in range(warmup):
        call()
    if number is None:
        number = _calibrate(call, 1, clock, min_time)
    number = check_positive_int(number, "number", high=10**8)
    fake = not _wall_is_real()            # a test's clock: no real load, no threads to read
    tally = _Tally.of(["fn"])
    with LoadWatch(_wall) as w:
        for _ in range(repeat):
            _round({"fn": call}, {"fn": number}, _wall, tally, real=not fake)
    one = not fake and tally.one_thread("fn")
    times = tally.own["fn"] if one else tally.times["fn"]
    noise = noise_from(times, w.others)
    noise.busy = noise.busy and not one   # CPU time: other programs' load cannot inflate it
    return Timing(times, number, noise, clock="cpu" if one else "wall")


# --------------------------------------------------------------------------- comparing, in pairs
# "cpu": the *calling thread's* CPU time (the process's would count pools idling in a spin loop, an OpenBLAS
# pool after a threaded product doubled a 8 ms call to 16 ms in benchmarks/which.py).
CLOCKS: dict[str, Callable[[], float]] = {"wall": _wall, "cpu": time.thread_time}
TIME_BUDGET = {"full": 2.0, "small": 0.5}   # seconds compare() may spend adding rounds (COURSE_BUDGET)
SETTLE_WARMUP = 0.02     # compare(settle=True): seconds of untimed calls after the wait, before a function is timed
ONE_THREAD_SLACK = 0.05  # compare()'s "auto" clock: a function is one thread's work within this share of its time


@dataclass
class Comparison:
    """Timings of several functions measured interleaved in one run.

    ``timings[name].times[i]`` is the per-call time of ``name`` in round ``i`` (the same rounds for
    every name), so ``times[i]`` of two names form a *pair*; ratios and their intervals come from pairs."""

    timings: dict[str, Timing]
    baseline: str
    work: dict[str, float] = field(default_factory=dict)  # optional FLOPs or bytes per call
    noise: Noise = field(default_factory=Noise)           # the whole run's (see :class:`Noise`)
    cores_used: dict[str, float] = field(default_factory=dict)  # this process's CPU time / wall time, per name
    waited: dict[str, float] = field(default_factory=dict)      # share of wall time its threads waited for a core
    threads: dict[str, int] = field(default_factory=dict)       # the most threads it ran on in a round (schedstat)
    clock: str = "wall"      # the times are wall time, or "cpu": the calling thread's CPU time (every function on it)

    def __post_init__(self):
        if not isinstance(self.timings, dict) or not self.timings:
            raise TypeError(f"timings: expected a non-empty dict name -> Timing, got {type(self.timings).__name__}")
        for name, t in self.timings.items():
            if not isinstance(t, Timing):
                raise TypeError(f"timings: {name!r} maps to {type(t).__name__}, expected a Timing")
        self._check(baseline=self.baseline)
        if not isinstance(self.noise, Noise):
            raise TypeError(f"noise: expected a Noise (core.noise), got {type(self.noise).__name__}")

    def _check(self, **names: str) -> None:
        for arg, value in names.items():
            if value not in self.timings:
                raise ValueError(f"{arg}: expected one of {', '.join(self.timings)}, got {value!r}")

    def pairs(self, name: str, to: str | None = None) -> Ratio:
        """The pair ratios ``t(name) / t(to)`` round by round (default ``to``: the baseline), as a
        :class:`~course_lib.core.intervals.Ratio` with ``.interval``, ``.faster(by)`` and ``.said()``."""
        to = to or self.baseline
        self._check(name=name, to=to)
        a, b = self.timings[name].times, self.timings[to].times
        if len(a) != len(b):
            raise ValueError(f"name, to: {name!r} and {to!r} were not measured in the same rounds "
                             f"({len(a)} and {len(b)} times)")
        waited = (self.waited[name], self.waited[to]) if name in self.waited and to in self.waited else None
        used = (self.threads[name], self.threads[to]) if {name, to} <= set(self.threads) else None
        r = Ratio.from_times(name, to, a, b, waited, used)
        same = [x for x in getattr(getattr(self, "noise", None), "ratios", []) if {x.name, x.over} == {name, to}]
        r.biased = any(x.biased for x in same)
        r.by_floor = r.floor is not None and any(x.by_floor for x in same)
        return r

    def ratio(self, name: str, to: str | None = None) -> float:
        """How many times slower ``name`` is than ``to`` (default: the baseline): the median pair ratio."""
        to = to or self.baseline
        self._check(name=name, to=to)
        if len(self.timings[name].times) != len(self.timings[to].times):   # not paired: ratio of medians
            return self.timings[name].median / self.timings[to].median
        return self.pairs(name, to).median

    def speedup(self, name: str, over: str | None = None) -> float:
        """How many times faster ``name`` is than ``over`` (default: the baseline)."""
        return 1.0 / self.ratio(name, over)

    def ratio_interval(self, name: str, to: str | None = None) -> tuple[float, float]:
        """``(lo, hi)``: where the true :meth:`ratio` lies (95% where there are >= 6 pairs)."""
        return self.pairs(name, to).interval

    def speedup_interval(self, name: str, over: str | None = None) -> tuple[float, float]:
        """``(lo, hi)``: where the true :meth:`speedup` lies (95% where there are >= 6 pairs)."""
        return self.pairs(name, over).speedup_interval

    def faster(self, name: str, by: float = 1.0, over: str | None = None) -> str:
        """Is ``name`` at least ``by`` times faster than ``over``? ``"yes"``, ``"no"`` or ``"cannot tell"``."""
        return self.pairs(name, over).faster(by)

    def said(self, name: str, over: str | None = None) -> str:
        """What the pairs support, in one sentence ("b was at least 1.8x faster than a in every one of ...")."""
        return self.pairs(name, over).said()

    @property
    def fastest(self) -> str:
        return min(self.timings, key=lambda k: self.timings[k].median)

    def rows(self) -> list[dict]:
        """One dict per function: name, median_s, min_s, max_s, ratio (vs baseline), ratio_lo, ratio_hi."""
        out = []
        for name, t in self.timings.items():
            paired = len(t.times) == len(self.timings[self.baseline].times)
            lo, hi = (1.0, 1.0) if name == self.baseline else self.ratio_interval(name) if paired else (math.nan,) * 2
            out.append({"name": name, "median_s": t.median, "min_s": t.min, "max_s": t.max,
                        "ratio": self.ratio(name), "ratio_lo": lo, "ratio_hi": hi})
        return out

    def table(self) -> str:
        """Median, min, speed-up over the baseline (> 1 = faster, the course's one convention for ratios) and
        its interval per function; a warning under it when the run was unreliable."""
        return self._table() + ("\n" + self.noise.warning() if not self.noise.ok else "")

    def _table(self) -> str:
        width, n, head = max(len(n) for n in self.timings), len(self.timings[self.baseline].times), f"x {self.baseline}"
        lines = [f"{'':<{width}}  {'median':>10}  {'min':>10}  {head:>12}  interval ({n} rounds; speed-up, > 1 = faster)"]
        for row in self.rows():  # speed-up = 1 / time ratio (a zero time is infinitely fast); the interval's ends swap
            up, lo, hi = (1 / r if r else math.inf for r in (row["ratio"], row["ratio_hi"], row["ratio_lo"]))
            interval = "" if row["name"] == self.baseline else f"{lo:.2f}..{hi:.2f}"
            lines.append(f"{row['name']:<{width}}  {fmt_seconds(row['median_s']):>10}  {fmt_seconds(row['min_s']):>10}  "
                         f"{up:>{max(12, len(head)) - 1}.2f}x  {interval}".rstrip())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()



def _clock(clock) -> Callable[[], float]:
    if clock is None:
        return CLOCKS["wall"]
    if isinstance(clock, str):
        if clock not in CLOCKS:
            raise ValueError(f"clock: expected 'auto', {', '.join(map(repr, CLOCKS))} or a function, got {clock!r}")
        return CLOCKS[clock]
    if not callable(clock):
        raise TypeError(f"clock: expected 'auto', 'wall', 'cpu' or a function returning seconds, "
                        f"got {type(clock).__name__}")
    return clock


def _calibrate(fn: Callable[[], object], warmup: int, clock, min_time: float) -> int:
    """Calls per round so that a round of ``fn`` lasts >= ``min_time``, from the timed *last* warm-up
    call (pyperf's calibration). No warm-up, no extra calls: 1."""
    if warmup == 0:
        return 1
    for _ in range(warmup - 1):
        fn()
    t0 = clock()
    fn()
    one = clock() - t0
    return 1 if one >= min_time or one <= 0 else min(10_000, max(1, int(math.ceil(min_time / one))))


@dataclass
class _Tally:
    """Per function, what the rounds measured: ``times`` and ``own`` per call (by the clock asked for; by the calling
    thread's CPU clock), the process's CPU seconds, run-queue wait, most threads that ran, and ``solo`` (seconds:
    the calling thread's CPU, the other threads' CPU, the calling thread running or ready, wall)."""

    times: dict
    own: dict
    cpu: dict
    wait: dict
    threads: dict
    solo: dict

    @classmethod
    def of(cls, names) -> "_Tally":
        return cls({k: [] for k in names}, {k: [] for k in names}, dict.fromkeys(names, 0.0),
                   dict.fromkeys(names, 0.0), dict.fromkeys(names, 0), {k: [0.0] * 4 for k in names})

    def all_one_thread(self) -> bool:
        return all(map(self.one_thread, self.times))

    def one_thread(self, name: str) -> bool:
        """Did ``name`` run on the calling thread alone, never sleeping? Other threads ran for under 5% of its CPU
        time, and it ran or waited for a core for >= 95% of the wall time (blocking or sleeping fails)."""
        own, others, busy, wall = self.solo[name]
        return own > 0 and others <= ONE_THREAD_SLACK * own and busy >= (1 - ONE_THREAD_SLACK) * wall


def _round(fns: dict[str, Callable], number: dict[str, int], clock, tally: _Tally, real: bool = True,
           settle: bool = False) -> None:
    """One round: every function in turn, ``number[name]`` calls each, its per-call time appended to
    ``tally.times`` and what the OS says about its threads added to the rest of ``tally`` (see :class:`_Tally`).
    ``settle``: first wait until the previous function's thread pool is asleep (``core.sysload.settle``), then
    call it untimed for ``SETTLE_WARMUP``."""
    me = str(threading.get_native_id())
    for name, fn in fns.items():
        if settle and real:
            _settle()
            warm = _wall() + SETTLE_WARMUP
            fn()        # untimed, for SETTLE_WARMUP at least: the cores that idled while we waited are slow at first
            while _wall() < warm:
                fn()
        w0, r0 = _run_queue_wait(), (_thread_cpu() if real else {})
        c0, o0, t0, s0 = time.process_time(), time.thread_time(), clock(), _wall()
        for _ in range(number[name]):
            fn()
        t1, o1, c1, s1 = clock(), time.thread_time(), time.process_time(), _wall()
        w1, r1 = _run_queue_wait(), (_thread_cpu() if real else {})
        tally.times[name].append((t1 - t0) / number[name])
        tally.own[name].append(max(o1 - o0, 0.0) / number[name])
        tally.cpu[name] += c1 - c0     # every thread of the process: how many cores the function kept busy
        tally.threads[name] = max(tally.threads[name], _threads_that_ran(r0, r1, s1 - s0))
        dw = _waited(w0, w1)
        tally.wait[name] = None if dw is None or tally.wait[name] is None else tally.wait[name] + dw
        solo = tally.solo[name]
        solo[0] += o1 - o0
        solo[1] += max(0.0, (c1 - c0) - (o1 - o0))
        solo[2] += r1.get(me, 0.0) - r0.get(me, 0.0) if me in r0 else 0.0
        solo[3] += s1 - s0


def compare(*, repeat: int = 5, warmup: int = 1, baseline: str | None = None, clock=None,
            time_budget: float | None = None, max_rounds: int = 1000, min_time: float = 1e-3, settle: bool = False,
            **fns: Callable) -> Comparison:
    """Time several zero-argument functions *interleaved*, in rounds (a, b, c, a, b, c, ...), so that
    drift in the machine's speed hits all of them alike; ratios are judged pair by pair.

    ``repeat``       rounds at least; more are added while some ratio's interval is wider than about
                     +-15% and ``time_budget`` seconds (default 2, or 0.5 with ``COURSE_BUDGET=small``)
                     are not yet spent, up to ``max_rounds``
    ``warmup``       untimed calls of each function first; the last one also calibrates how many calls
                     make a round last >= ``min_time`` (with ``warmup=0``: one call per round)
    ``baseline``     what ratios are relative to (default: the first)
    ``clock``        ``"auto"`` (default: the calling thread's CPU time when every function turned out to be
                     one thread's work that never slept -- :meth:`_Tally.one_thread` -- else wall time;
                     ``Comparison.clock`` says which), ``"wall"``, ``"cpu"`` (the calling thread's CPU time:
                     for single-threaded functions, which another program's load then cannot inflate) or a
                     function returning seconds (tests pass a fake one)
    ``settle``       for functions on *different* thread pools (BLAS, numba): before each one's calls in a
                     round, wait until this process's other threads are idle (a pool spins after its calls;
                     at most 0.5 s), then call it untimed for ``SETTLE_WARMUP`` s (idle cores start slow)

    >>> c = compare(loop=lambda: sum(range(1000)), builtin=lambda: 499500)
    >>> c.ratio("loop") == 1.0
    True
    """
    if not fns:
        raise ValueError("compare: expected at least one function as a keyword argument, got none")
    for name, fn in fns.items():
        if not callable(fn):
            raise TypeError(f"{name}: expected a callable, got {type(fn).__name__}")
    repeat = check_positive_int(repeat, "repeat", high=10_000)   # more repeats than that would only look like a hang
    warmup = check_int(warmup, "warmup", low=0, high=10_000)
    max_rounds = max(check_positive_int(max_rounds, "max_rounds"), repeat)
    min_time = check_float(min_time, "min_time", low=0.0, high=60.0)
    time_budget = TIME_BUDGET[budget()] if time_budget is None else check_float(time_budget, "time_budget", low=0.0)
    steady_memory()  # a warmed-up allocator, whatever the process did before (core.memory)
    baseline = baseline or next(iter(fns))
    if baseline not in fns:
        raise ValueError(f"baseline: expected one of {', '.join(fns)}, got {baseline!r}")
    fake = callable(clock) or not _wall_is_real()      # a test's clock: no real load, no threads to read
    auto = clock is None or clock == "auto"
    tick = _clock(None if auto else clock)
    wall = tick if fake else CLOCKS["wall"]   # the budget is spent in wall time (fake in tests)
    number = {name: _calibrate(fn, warmup, tick, min_time) for name, fn in fns.items()}
    tally = _Tally.of(fns)
    running: list[float] = []
    others = [k for k in fns if k != baseline]
    with LoadWatch(wall) as w:
        start = wall()
        while True:
            _round(fns, number, tick, tally, real=not fake, settle=settle and _wall_is_real())
            sample = _others_running() if not fake else None
            if sample is not None:
                running.append(sample)
            done = len(tally.times[baseline])
            if done < repeat:
                continue
            times = tally.own if auto and not fake and tally.all_one_thread() else tally.times
            narrow = all(Ratio.from_times(k, baseline, times[k], times[baseline]).narrow for k in others)
            if narrow or done >= max_rounds or wall() - start >= time_budget:
                break
    if w.others is None and running:
        # too short for /proc/stat's 10 ms ticks: the other programs' runnable threads, sampled after every round;
        # the median, so that a program that holds a core counts and one that wakes now and then (the notebook
        # runner polling its kernel, a daemon) does not
        w.others = statistics.median(running)
    by_cpu = clock == "cpu" or times is tally.own      # the clock the last round's judgement used
    timings = {name: Timing(ts, number[name], noise_from(ts, w.others), clock="cpu" if by_cpu else "wall")
               for name, ts in times.items()}
    for t in timings.values():
        t.noise.busy, t.noise.cpu_clock = t.noise.busy and not by_cpu, by_cpu and not fake   # CPU time: no load inflates it
    spent = {name: sum(ts) * number[name] for name, ts in times.items()}
    used = {} if by_cpu else {name: tally.cpu[name] / spent[name] for name in fns if spent[name] > 0}
    waited = {name: tally.wait[name] / spent[name] for name in used if tally.wait[name] is not None}
    cmp = Comparison(timings, baseline, cores_used=used, waited=waited,
                     threads={} if by_cpu or fake else tally.threads, clock="cpu" if by_cpu else "wall")
    if others:
        cmp.noise = noise_of_pairs([cmp.pairs(k) for k in others], w.others)
    else:                                    # one function: nothing to pair, judge its repeats
        cmp.noise = timings[baseline].noise
    cmp.noise.cpu_clock = by_cpu and not fake      # (the one-function case: the same object as above)
    return cmp


# --------------------------------------------------------------------------- roofline
def peak_gflops(dtype: str = "float32", n: int = 1024, repeat: int = 5) -> float:
    """Measured GEMM peak in GFLOP/s: best of ``repeat`` ``(n, n) @ (n, n)`` products with the
    BLAS numpy uses, at the current thread setting. Cached per process and *normalised* arguments, so
    ``peak_gflops()``, ``peak_gflops("float32")`` and ``peak_gflops(np.float32)`` measure once and agree."""
    return _peak_gflops(check_dtype(dtype).name, check_positive_int(n, "n", high=8192), check_positive_int(repeat, "repeat"))


@lru_cache(maxsize=None)
def _peak_gflops(dtype: str, n: int, repeat: int) -> float:
    """:func:`peak_gflops` on canonical arguments (the cache entry)."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype)
    best = math.inf
    t0 = time.perf_counter()
    while True:  # best of >= repeat runs and >= 0.3 s, so one busy moment does not set the peak
        best = min(best, measure(np.matmul, a, b, out=out, repeat=repeat, warmup=1, number=1).min)
        if time.perf_counter() - t0 > 0.3:
            break
    return gemm_flops(n, n, n) / best / 1e9


@lru_cache(maxsize=None)
def copy_bandwidth(mbytes: int = 256, repeat: int = 5) -> float:
    """Measured streaming bandwidth in GB/s: ``np.copyto`` of a ``mbytes`` MB array counts
    one read and one write per byte. Cached per process and arguments."""
    n = check_positive_int(mbytes, "mbytes") * 1_000_000 // 8
    src = np.ones(n)
    dst = np.empty_like(src)
    best = math.inf
    t0 = time.perf_counter()
    while True:
        best = min(best, measure(np.copyto, dst, src, repeat=repeat, warmup=1, number=1).min)
        if time.perf_counter() - t0 > 0.3:
            break
    return 2 * src.nbytes / best / 1e9


def gemm_rate(n: int, dtype: str = "float32", repeat: int = 5) -> dict:
    """Measure ``(n, n) @ (n, n)`` now: returns n, seconds (best), GFLOP/s, arithmetic intensity,
    the roofline's bound at that intensity, the share of the measured peak reached, and ``noise``
    (the :class:`Noise` of the repeats: judge "above the roof" only when it is ok)."""
    n = check_positive_int(n, "n", high=8192)
    dt = check_dtype(dtype)
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n)).astype(dt)
    b = rng.standard_normal((n, n)).astype(dt)
    out = np.empty((n, n), dt)
    t = measure(np.matmul, a, b, out=out, repeat=repeat, warmup=1, min_time=2e-3)
    rate = gemm_flops(n, n, n) / t.min / 1e9
    ai = gemm_intensity(n, n, n, dt.itemsize)
    peak = peak_gflops(dt.name)
    return {"n": n, "seconds": t.min, "gflops": rate, "intensity": ai,
            "bound_gflops": roofline(ai), "peak_gflops": peak, "fraction_of_peak": rate / peak, "noise": t.noise}


def gemv_rate(m: int, k: int, dtype: str = "float32", repeat: int = 7) -> dict:
    """Measure ``(m, k) @ (k,)`` now, called over and over on the same arrays.

    Returns m, k, seconds (best), GFLOP/s, ``working_set`` (bytes of the matrix and both vectors) and
    ``gbs`` -- those bytes divided by the time: the bandwidth the product *appears* to use. When the
    working set fits in a cache it stays there between calls, and ``gbs`` can exceed the streaming
    bandwidth of main memory; when it does not, every call streams the matrix from memory again."""
    m = check_positive_int(m, "m", high=1 << 15)
    k = check_positive_int(k, "k", high=1 << 15)
    dt = check_dtype(dtype)
    rng = np.random.default_rng(m + k)
    a = rng.standard_normal((m, k)).astype(dt)
    x = rng.standard_normal(k).astype(dt)
    y = np.empty(m, dt)
    t = measure(np.matmul, a, x, out=y, repeat=repeat, warmup=2, min_time=5e-3)
    ws = a.nbytes + x.nbytes + y.nbytes
    return {"m": m, "k": k, "seconds": t.min, "gflops": gemv_flops(m, k) / t.min / 1e9, "working_set": ws,
            "gbs": ws / t.min / 1e9, "intensity": gemm_intensity(m, 1, k, dt.itemsize), "noise": t.noise}


def roofline(intensity, peak: float | None = None, bandwidth: float | None = None):
    """Attainable GFLOP/s at arithmetic ``intensity`` (FLOP/byte): ``min(peak, intensity * bw)``.

    ``peak`` and ``bandwidth`` default to the values measured on this machine.
    """
    peak = peak_gflops() if peak is None else check_float(peak, "peak", low=0.0, low_inclusive=False)
    bandwidth = copy_bandwidth() if bandwidth is None else check_float(bandwidth, "bandwidth", low=0.0,
                                                                        low_inclusive=False)
    if isinstance(intensity, (str, bytes)) or intensity is None:
        raise TypeError(f"intensity: expected a number or an array of numbers, got {type(intensity).__name__}")
    try:
        ai = np.asarray(intensity, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"intensity: expected a number or an array of numbers, got {intensity!r}") from exc
    if ai.size == 0:
        raise ValueError("intensity: expected at least one value, got an empty array")
    if np.any(ai < 0) or not np.all(np.isfinite(ai)):
        raise ValueError(f"intensity: expected finite values >= 0, got {intensity}")
    out = np.minimum(peak, ai * bandwidth)
    return float(out) if out.ndim == 0 else out
