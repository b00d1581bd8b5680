"""The noise guard: whether a measurement can be trusted, and what it still shows (layer 1: foundation).

:class:`Noise` carries why a :class:`~course_lib.core.timing.Timing` or
:class:`~course_lib.core.timing.Comparison` should not be trusted (no reasons: nothing suspicious was
seen) and, for a comparison, what its pairs still support. :func:`noise_from` judges the repeats of one
function (their spread, and the load of other processes meanwhile); :func:`noise_of_pairs` judges a
comparison by its pair ratios' intervals (:mod:`course_lib.core.intervals`). The method is explained in
:mod:`course_lib.core.timing`, which re-exports everything here.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

from .intervals import Ratio
from .sysload import busy_cpu_seconds as _busy_cpu_seconds
from .validate import check_float

__all__ = ["Noise", "noise_from", "noise_of_pairs", "LoadWatch", "background_load", "SPREAD_LIMIT", "OTHERS_LIMIT",
           "UNEQUAL_WAIT"]

SPREAD_LIMIT = 0.3        # spread of the repeats (see _spread) above this: too wide to trust
OTHERS_LIMIT = 0.25       # other processes used more than this many cores on average: busy


@dataclass
class Noise:
    """Why a measurement should not be trusted (no reasons: nothing suspicious was seen).

    ``spread``  interquartile range / median of the repeats (with fewer than 4: (max - min) / median),
    so one stray repeat does not condemn a run; ``others`` the average number of cores other
    processes kept busy while it ran (None where the OS does not tell). ``wide`` and ``busy`` say
    whether those crossed their limits; ``notes`` are facts a caller added with :meth:`add`.
    ``uncertain``: ratios of a :class:`Comparison` whose interval stayed wide (one sentence each);
    ``said``: what the measurement still supports, one sentence per ratio (see :class:`Ratio`);
    ``ratios``: the :class:`~course_lib.core.intervals.Ratio` objects behind them, for :meth:`faster`.
    ``cpu_clock``: every time behind it is the calling thread's CPU time (``compare``'s auto clock found one
    thread's work), which other programs' load cannot inflate -- the verdicts' run-to-run margin is then the quiet
    one, however busy the machine (``teaching.verdict.rerun_margin``)."""

    spread: float = 0.0
    others: float | None = None
    wide: bool = False
    busy: bool = False
    notes: list[str] = field(default_factory=list)
    uncertain: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    ratios: list[Ratio] = field(default_factory=list)
    cpu_clock: bool = False

    @property
    def reasons(self) -> list[str]:
        out = []
        if self.wide:
            out.append(f"repeats spread by up to {self.spread:.0%} of the median")
        out += self.uncertain
        if self.busy and self.others is not None:
            out.append(f"other processes kept up to {self.others:.1f} core(s) busy meanwhile")
        return out + self.notes

    @property
    def ok(self) -> bool:
        return not self.reasons

    @property
    def biased(self) -> bool:
        """Some ratio's pairs are skewed one way by unequal waits for a core: its interval, however narrow,
        does not hold the true ratio, so no conclusion may be drawn from it (``verdict`` abstains)."""
        return any(r.biased for r in self.ratios)

    def add(self, condition: bool, reason: str) -> "Noise":
        """Record ``reason`` when ``condition`` holds (a fact only the caller can judge). Returns self."""
        if not isinstance(reason, str) or not reason.strip():
            raise TypeError(f"reason: expected a non-empty sentence (str), got {reason!r}")
        if condition and reason not in self.notes:
            self.notes.append(reason)
        return self

    def faster(self, name: str, by: float = 1.0, over: str | None = None) -> str:
        """Is ``name`` at least ``by`` times faster than ``over`` (default: the comparison's baseline)?
        ``"yes"``, ``"no"`` or ``"cannot tell"``, from the pair ratios this noise carries."""
        found = [r for r in self.ratios if r.name == name and (over is None or r.over == over)]
        if not found:
            pairs = ", ".join(f"{r.name} over {r.over}" for r in self.ratios) or "none"
            raise ValueError(f"name: no measured ratio for {name!r}" + (f" over {over!r}" if over else "") +
                             f"; this noise carries: {pairs}")
        return found[0].faster(by)

    def __or__(self, other: "Noise") -> "Noise":
        """The worst of both: the larger spread and load, every note (and interval sentence) once."""
        if not isinstance(other, Noise):
            return NotImplemented
        others = [o for o in (self.others, other.others) if o is not None]
        merged = Noise(max(self.spread, other.spread), max(others) if others else None,
                       self.wide or other.wide, self.busy or other.busy, list(self.notes),
                       list(self.uncertain), list(self.said), list(self.ratios) + list(other.ratios),
                       self.cpu_clock and other.cpu_clock)
        for r in other.notes:
            merged.add(True, r)
        merged.uncertain += [r for r in other.uncertain if r not in merged.uncertain]
        merged.said += [r for r in other.said if r not in merged.said]
        return merged

    def warning(self) -> str:
        """One line for the reader (two when something can still be said): empty when the run looks reliable."""
        if self.ok:
            return ""
        line = ("WARNING: this measurement is unreliable (" + "; ".join(self.reasons) +
                "): no firm conclusion is drawn from it.")
        if self.said:
            return line + "\nWhat it does show: " + "; ".join(self.said) + "."
        return line + " Re-run the cell when the machine is quiet."

    def __str__(self) -> str:
        return self.warning() or "measurement looks reliable"


def _spread(times: list[float]) -> float:
    med = statistics.median(times)
    if med <= 0:
        return 0.0
    if len(times) >= 4:
        q1, _, q3 = statistics.quantiles(times, n=4)
        return (q3 - q1) / med
    return (max(times) - min(times)) / med


def noise_from(times: list[float], others: float | None = None) -> Noise:
    """The :class:`Noise` of a list of repeat times (and the load ``others`` measured meanwhile)."""
    times = [check_float(s, "times", low=0.0) for s in times]
    if not times:
        raise ValueError("times: expected at least one measured time, got none")
    if others is not None:
        others = check_float(others, "others", low=0.0)
    spread = _spread(times)
    return Noise(spread=spread, others=others, wide=len(times) >= 3 and spread > SPREAD_LIMIT,
                 busy=others is not None and others > OTHERS_LIMIT)


UNEQUAL_WAIT = 0.5    # threads of one function waited this many more core-seconds per second than the other's


def _per_function(ratios: list[Ratio], attr: str, fmt: str) -> str:
    """``"a 12%, b 3%"``: a pair attribute (``waited`` or ``used``: one value for each side) per function."""
    values = {}
    for r in ratios:
        values.update(zip((r.name, r.over), getattr(r, attr)))
    return ", ".join(f"{k} {fmt.format(v)}" for k, v in values.items())


def noise_of_pairs(ratios: list[Ratio], others: float | None = None) -> Noise:
    """The :class:`Noise` of a comparison: unreliable only where a ratio's interval is not narrow, or where
    other processes made one function wait for cores more than the other (``Ratio.waited``).

    Load from other processes (``others``) is otherwise named only as the likely cause when some interval
    stayed wide: interleaved pairs cancel what slows both calls of a pair alike. Unequal waiting does not
    cancel -- threaded code on oversubscribed cores waits in every round, the single-threaded baseline
    much less -- so a narrow interval would be narrow and wrong. Such a ratio is judged instead by the two
    functions' fastest rounds where both have a floor (:func:`~course_lib.core.intervals.floor_ratio`: other
    programs only ever add time), and is ``biased`` -- no conclusion at all -- where they do not."""
    noise = Noise(others=others, ratios=list(ratios))
    loaded = others is not None and others > OTHERS_LIMIT
    unequal = [r for r in ratios if loaded and r.waited is not None and abs(r.waited[0] - r.waited[1]) > UNEQUAL_WAIT]
    # a function on several threads, while another program holds a core, loses in a way that depends on how its
    # threads wait for one another (a BLAS pool spins, a thread pool sleeps, numba's barrier both): it may be
    # slowed 2x or 20x, and its run-queue wait need not show it -- pairs cannot cancel that either
    unused = [r for r in ratios if loaded and r.used is not None and max(r.used) >= 2
              and not any(r is u for u in unequal)]
    if unequal:
        noise.uncertain.append("the functions' threads waited for a core unequally (" + _per_function(unequal, "waited",
                               "{:.0%}") + " of their time): other processes slowed some more than others in every "
                               "round, which pairs cannot cancel")
    if unused:
        noise.uncertain.append("threaded code ran while other processes held a core (threads: " +
                               _per_function(unused, "used", "{}") + "): how much it loses then depends on how its "
                               "threads wait for each other, in every round, which pairs cannot cancel")
    unequal = unequal + unused
    if unequal:
        noise.busy = True
        for r in unequal:                 # judged by the fastest rounds where both have a floor, else not at all
            r.by_floor, r.biased = r.floor is not None, r.floor is None
        floored = [r for r in unequal if r.by_floor]
        if floored:
            noise.uncertain.append("so each is judged by its fastest rounds, which other programs only ever slow: " +
                                   "; ".join(r.said() for r in floored))
    for r in ratios:
        if any(r is u for u in unequal):
            continue
        if not r.narrow:
            lo, hi = r.speedup_interval
            noise.uncertain.append(f"after {r.n + r.set_aside} rounds the speed-up of {r.name} over {r.over} is "
                                   f"only known to lie between {lo:.3g}x and {hi:.3g}x")
            noise.said.append(r.said())
            noise.busy = noise.busy or (others is not None and others > OTHERS_LIMIT)
    return noise


# --------------------------------------------------------------------------- the machine's load meanwhile
class LoadWatch:
    """Wall time (by ``clock``, a function returning seconds), this process's CPU time and the whole machine's
    busy CPU time over a ``with`` block: ``others``, the cores other processes kept busy (None for a block under
    0.2 s, or where the OS does not tell)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self.clock = clock

    def __enter__(self):
        self.wall0, self.own0, self.busy0 = self.clock(), time.process_time(), _busy_cpu_seconds()
        return self

    def __exit__(self, *exc):
        self.wall = self.clock() - self.wall0
        own = time.process_time() - self.own0
        busy1 = _busy_cpu_seconds()
        self.others = None
        # /proc/stat ticks are 10 ms: only judge runs long enough for the count to mean something
        if self.busy0 is not None and busy1 is not None and self.wall >= 0.2:
            self.others = max(0.0, (busy1 - self.busy0 - own) / self.wall)
        return False


def background_load(seconds: float = 0.3) -> Noise:
    """The cores other processes keep busy while this one sleeps ``seconds``: the noise of a measurement made
    somewhere this process cannot watch (an MPI job's ranks, a subprocess), judged by the machine's load just
    before it. ``Noise(others=..., busy=others > OTHERS_LIMIT)``; ``others`` None where the OS does not tell."""
    seconds = check_float(seconds, "seconds", low=0.2, high=10.0)
    b0, t0 = _busy_cpu_seconds(), time.perf_counter()
    time.sleep(seconds)
    b1, t1 = _busy_cpu_seconds(), time.perf_counter()
    if b0 is None or b1 is None:
        return Noise()
    others = max(0.0, (b1 - b0) / (t1 - t0))
    return Noise(others=others, busy=others > OTHERS_LIMIT)
