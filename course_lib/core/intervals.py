"""How sure is a measured ratio? Order-statistic intervals over paired runs (layer 1: foundation).

:func:`course_lib.core.timing.compare` runs the functions in *rounds* (a, b, a, b, ...). Within one
round the two calls see nearly the same machine, so ``t_b / t_a`` -- one *pair ratio* -- cancels slow
drift (another program starting, the clock speed changing). This module turns a list of pair ratios
into what can honestly be said about the true ratio:

``undisturbed(times)`` -> which rounds another program left alone: a round more than 3 robust standard
    deviations (1.4826 x the median absolute deviation) above the median is set aside, as hyperfine flags
    outliers -- other programs only ever *add* time, and a quiet run has no such rounds.
``median_interval(values, confidence)`` -> ``(lo, hi)``: a distribution-free interval for the median
    from order statistics -- the k-th smallest and k-th largest value, with k from the binomial
    distribution (each value falls below the median with probability 1/2). No bell curve is assumed,
    so a few runs that a busy machine slowed by 5x widen it a little instead of wrecking it.
:class:`Ratio` -- the pair ratios of one function against another: ``.interval``, ``.narrow``,
    ``.faster(by)`` ("yes" / "no" / "cannot tell") and ``.said()`` (a sentence of what can be said).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .validate import check_float

__all__ = ["median_interval", "undisturbed", "floor_ratio", "Ratio", "CONFIDENCE", "NARROW", "DECISION_HOOKS",
           "FLOOR_ROUNDS", "FLOOR_FLAT", "FLOOR_SLACK"]

CONFIDENCE = 0.95   # the intervals' coverage where there are enough pairs (>= 6 for 95%)
NARROW = 1.15       # an interval is narrow when it lies within this factor of the median on both sides
FLOOR_ROUNDS = 10   # floor_ratio(): rounds each function needs at least
FLOOR_FLAT = 1.10   # ... and its 3rd-fastest round within this factor of its fastest (a floor it came back to)
FLOOR_SLACK = 1.15  # ... and the ratio of floors is known to within this factor beyond the floors' own spread

#: Functions called as ``hook(ratio, by, answer)`` after every :meth:`Ratio.faster` decision (which
#: ``Comparison.faster`` and ``Noise.faster`` make). Empty unless a layer above registers one:
#: ``teaching.record`` does, only when ``COURSE_RECORD`` is set.
DECISION_HOOKS: list = []


def median_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """``(lo, hi)``: the k-th smallest and k-th largest of ``values``, the largest k whose interval
    still covers the median with probability >= ``confidence`` (``P(Binomial(n, 1/2) < k) <= (1 - c) / 2``).

    Too few values for that confidence (n < 6 at 95%) give ``(min, max)``: a rough interval."""
    xs = sorted(check_float(v, "values") for v in values)
    if not xs:
        raise ValueError("values: expected at least one number, got none")
    confidence = check_float(confidence, "confidence", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    n, tail, cdf, k = len(xs), (1 - confidence) / 2, 0.0, 0
    while k < n // 2:
        cdf += math.comb(n, k) / 2 ** n       # P(Binomial(n, 1/2) == k), summed: P(B <= k)
        if cdf > tail:
            break
        k += 1
    k = max(k, 1)
    return xs[k - 1], xs[n - k]


def undisturbed(times) -> list[bool]:
    """For each time, True unless it lies more than 3 robust standard deviations above the median
    (the deviation is at least 1% of the median, so a very steady run does not flag its own jitter)."""
    ts = [check_float(t, "times", low=0.0) for t in times]
    if not ts:
        raise ValueError("times: expected at least one time, got none")
    med = statistics.median(ts)
    mad = max(statistics.median(abs(t - med) for t in ts), 0.01 * med)
    return [t <= med + 3 * 1.4826 * mad for t in ts]


def floor_ratio(times, base_times) -> tuple[float, float, float] | None:
    """``(ratio, lo, hi)``: ``times`` against ``base_times`` judged by each one's *fastest rounds* -- the floor
    that other programs, which only ever add time, left alone (``timeit``'s minimum) -- or None where there is no
    floor to judge by: fewer than :data:`FLOOR_ROUNDS` rounds, or a 3rd-fastest round more than
    :data:`FLOOR_FLAT` times the fastest (the fastest was a fluke, not a state the function came back to).

    ``ratio`` = fastest / fastest; ``(lo, hi)`` spans the three fastest of each against each other, widened by
    :data:`FLOOR_SLACK` on both sides. Used where pairs cannot cancel the load (threaded code while other
    programs hold a core, :func:`course_lib.core.noise.noise_of_pairs`): on one extra busy process, the ratio of
    floors stayed within 10% of the quiet machine's ratio where the median pair ratio was off by up to 4x."""
    a, b = sorted(check_float(t, "times", low=0.0) for t in times), sorted(check_float(t, "base_times", low=0.0)
                                                                          for t in base_times)
    if min(len(a), len(b)) < FLOOR_ROUNDS or a[0] <= 0 or b[0] <= 0 or a[2] > FLOOR_FLAT * a[0] or \
            b[2] > FLOOR_FLAT * b[0]:
        return None
    return a[0] / b[0], a[0] / b[2] / FLOOR_SLACK, a[2] / b[0] * FLOOR_SLACK


@dataclass
class Ratio:
    """Pair ratios ``t(name) / t(over)``, one per round of a comparison (> 1: ``name`` is slower).

    ``values`` (n,) the pair ratios in round order; ``set_aside`` how many more rounds were measured but
    left out as disturbed (see :func:`undisturbed`); ``waited`` for each of the two, the share of its wall
    time its threads spent ready to run but waiting for a core (None: not measured). ``confidence`` the
    interval's coverage target. ``biased``: set by :func:`course_lib.core.noise.noise_of_pairs` when the two
    waited for cores unequally, or one ran on several threads while other programs held a core (``used``: the
    threads each ran on) -- every pair is then skewed the same way, and :meth:`faster` cannot tell -- unless the
    two have a ``floor`` (:func:`floor_ratio`, from the rounds' times): ``noise_of_pairs`` then sets ``by_floor``,
    and :attr:`median`, :attr:`interval` and :meth:`faster` judge by the fastest rounds instead of the pairs."""

    name: str
    over: str
    values: list[float]
    confidence: float = CONFIDENCE
    set_aside: int = 0
    waited: tuple[float, float] | None = None
    biased: bool = False
    used: tuple[int, int] | None = None   # the most threads each ran on in a round (None: not measured)
    floor: tuple[float, float, float] | None = None   # floor_ratio() of the two (None: no floor to judge by)
    by_floor: bool = False

    @classmethod
    def from_times(cls, name: str, over: str, times, base_times, waited=None, used=None) -> "Ratio":
        """Pair ratios ``times[i] / base_times[i]`` of the rounds neither call of which was disturbed
        (all rounds when that would leave fewer than 5, or fewer than a third of them)."""
        if len(times) != len(base_times):
            raise ValueError(f"times, base_times: expected one time per round for both, got {len(times)} "
                             f"and {len(base_times)}")
        keep = [x and y for x, y in zip(undisturbed(times), undisturbed(base_times))]
        if sum(keep) < max(5, len(keep) / 3):
            keep = [True] * len(keep)
        tiny = 1e-12    # a per-call time of 0 (a clock too coarse) is read as this, so ratios stay finite
        values = [max(a, tiny) / max(b, tiny) for a, b, k in zip(times, base_times, keep) if k]
        return cls(name, over, values, set_aside=len(keep) - len(values), waited=waited, used=used,
                   floor=floor_ratio(times, base_times))

    def __post_init__(self):
        self.values = [check_float(v, "values", low=0.0, low_inclusive=False) for v in self.values]
        if not self.values:
            raise ValueError("values: expected at least one pair ratio, got none")

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        """The typical pair ratio: how many times slower ``name`` is than ``over`` (``by_floor``: the ratio of
        their fastest rounds)."""
        return self.floor[0] if self.by_floor else statistics.median(self.values)

    @property
    def interval(self) -> tuple[float, float]:
        """``(lo, hi)`` for the median pair ratio (see :func:`median_interval`; ``by_floor``: the floors')."""
        return self.floor[1:] if self.by_floor else median_interval(self.values, self.confidence)

    @property
    def speedup_interval(self) -> tuple[float, float]:
        """``(lo, hi)`` for how many times *faster* ``name`` is than ``over``."""
        lo, hi = self.interval
        return 1 / hi, 1 / lo

    @property
    def narrow(self) -> bool:
        """The interval lies within a factor :data:`NARROW` of the median on both sides (about +-15%)."""
        lo, hi = self.interval
        m = self.median
        return hi <= m * NARROW and lo >= m / NARROW

    def faster(self, by: float = 1.0) -> str:
        """Is ``name`` at least ``by`` times faster than ``over``? ``"yes"``, ``"no"`` or ``"cannot tell"``
        (the speed-up's interval lies above ``by``, below it, or straddles it)."""
        by = check_float(by, "by", low=0.0, low_inclusive=False)
        lo, hi = self.speedup_interval
        answer = "cannot tell" if self.biased else "yes" if lo >= by else "no" if hi < by else "cannot tell"
        for hook in DECISION_HOOKS:
            hook(self, by, answer)
        return answer

    def said(self) -> str:
        """One sentence of what the pairs support, e.g. "b was at least 1.8x faster than a in every one of
        12 pairs (the speed-up lies between 1.9x and 2.3x)"."""
        s_lo, s_hi = self.speedup_interval
        every_lo, every_hi = 1 / max(self.values), 1 / min(self.values)
        where = f"the speed-up lies between {_x(s_lo)} and {_x(s_hi)}"
        if self.n >= 6:
            where += f" with {self.confidence:.0%} confidence"
        if self.by_floor:
            return (f"judged by each one's fastest rounds, {self.name} was {_x(s_lo)} to {_x(s_hi)} as fast as "
                    f"{self.over}")
        pairs = f"{self.n} pairs" + (f" (and {self.set_aside} disturbed rounds set aside)" if self.set_aside else "")
        if every_lo > 1:
            head = f"{self.name} was at least {_x(every_lo)} faster than {self.over} in every one of {pairs}"
        elif every_hi < 1:
            head = f"{self.name} was at least {_x(1 / every_hi)} slower than {self.over} in every one of {pairs}"
        else:
            head = f"{self.name} and {self.over} each won some of {pairs}"
        return f"{head} ({where})"


def _x(v: float) -> str:
    return f"{v:.2f}x" if v < 10 else f"{v:.3g}x"
