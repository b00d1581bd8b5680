"""The advisor (experiments folder, chapter 12): :func:`advise` ranks the methods that apply to a problem by
the cost model's predicted time (:func:`.model.predict_all`), each with the error bars measured for it here.

Trust is per method and has a direction. A calibration (:meth:`.configurations.Calibration.errors`) says, per
method, how much *slower* and how much *faster* than predicted it was ever measured on this machine; a method
predicted at ``s`` may then really take between ``s / faster`` and ``s * slower`` (:attr:`Advice.low`,
:attr:`Advice.high`). A method measured only slower than predicted is never "faster than predicted", and a miss
in one direction is never evidence for the other. A miss does not silence the advisor: it advises the
predicted fastest method it has measurements for and says how far off the model was -- for it, and for every
rival that could still be faster within those errors. It advises nothing only where it has no measurement to
stand on: the machine's constants measured busy, a synchronisation cost measured busy, a method never checked
or checked only in runs the noise guard rejected.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.validate import check_bool, check_str
from .machine import Machine
from .model import Cost, predict_all
from .problem import Problem

__all__ = ["Advice", "advise", "first_choice", "directions"]

_UNCHECKED = object()  # a calibration that never measured the method


@dataclass
class Advice:
    method: str
    seconds: float
    reason: str
    trusted: bool = True
    cost: Cost | None = None
    low: float | None = None    # the least time its measured errors allow here (None: no calibration)
    high: float | None = None   # ... and the most

    def __post_init__(self):
        check_str(self.method, "method")
        if isinstance(self.seconds, (bool, np.bool_)) or not isinstance(self.seconds, (int, float, np.floating, np.integer)) \
                or not self.seconds >= 0:  # inf is allowed (never finishes), NaN and negatives are not
            raise ValueError(f"seconds: expected a number >= 0, got {self.seconds!r}")
        check_str(self.reason, "reason", nonempty=False)
        check_bool(self.trusted, "trusted")
        if self.cost is not None and not isinstance(self.cost, Cost):
            raise TypeError(f"cost: expected a Cost or None, got {type(self.cost).__name__}")
        for k in ("low", "high"):
            v = getattr(self, k)
            if v is not None and (isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.floating))
                                  or not v >= 0):
                raise ValueError(f"{k}: expected a number >= 0 or None, got {v!r}")

    def __iter__(self):  # (method, seconds, reason)
        return iter((self.method, self.seconds, self.reason))


_SYNC = {"region_s": "numba parallel regions", "handoff_s": "thread-pool hand-offs"}
# methods priced by their own measured constants (median pair ratios of the course's Python threads; the channel
# scan's fastest runs on every thread): measured busy, a busy run is what they priced
_OWN = {"threads": ("gil_start_s", "gil_serial"), "wavefront": ("gil_start_s", "gil_serial", "barrier_s"),
        "channels": ("channel_rates",)}
_WHAT = {**_SYNC, "gil_start_s": "the pool's start", "gil_serial": "the GIL", "barrier_s": "the wavefront's barriers",
         "channel_rates": "every step's row split"}


def _busy_sync(c: Cost, machine: Machine) -> list[str]:
    """The constants a method on P > 1 workers (or paying a parallel region) synchronises with that were measured
    busy ([] if none): a hand-off or region whose even low quantile is implausible (> 1 ms: a quiet core takes
    µs; a busy note alone only says the median was spoilt), or the GIL's price of the Python-thread methods."""
    if (c.P <= 1 and c.regions == 0) or c.method in ("mpi", "cuda_chunked", "cuda_batched"):
        return []
    return [k for k in _SYNC if k in machine.busy and getattr(machine, k) > 1e-3] + \
        [k for k in _OWN.get(c.method, ()) if k in machine.busy]


def _reason(c: Cost, base: Cost | None) -> str:
    parts = {k: v for k, v in c.parts.items() if v > 0}
    tot = sum(parts.values()) or 1.0
    lead = max(parts, key=parts.get) if parts else "compute"
    what = {"compute": "arithmetic", "memory": "memory traffic", "calls": "library-call overhead",
            "sync": "barriers / fork-joins", "communication": "communication"}[lead]
    s = f"{what} dominates ({parts.get(lead, 0) / tot:.0%})"
    if c.P > 1:
        s += f"; {c.P} workers"
    if base is not None and base.method != c.method and c.seconds > 0:
        s += f"; {base.seconds / c.seconds:.2g}x vs serial"
    return s


def advise(problem: Problem, machine: Machine | None = None, *, methods=None, calibration: dict | None = None,
           opts: dict | None = None) -> list[Advice]:
    """Rank the methods that apply to ``problem`` on ``machine`` by predicted time.

    ``methods`` restricts the choice (each must apply, else ValueError naming the argument);
    ``calibration`` maps method -> the model's worst error factor measured here (``Calibration.errors()``: an
    :class:`~.configurations.Error` also knows how much slower and how much faster; a plain number is taken
    as both; None: measured only in runs the noise guard calls unreliable). A method with a measured error
    gets its error bars (``low``, ``high``) and stays advisable however large they are -- the first choice's
    reason says how far off the model was and which rivals could be faster within those bars. Not advised
    (``trusted=False``, listed after the others): every method when the machine's own constants were measured
    while it was busy (``machine.noise``); a method on several workers whose synchronisation cost
    (``region_s``, ``handoff_s``; for Python threads the GIL's price and the wavefront's barrier) was
    (``machine.busy``); and -- when a calibration is given -- a method it never checked or checked only
    unreliably. ``opts``: per-method options (``{"mgrit": {"iters": 3}}``).
    Raises ValueError for impossible problems (through :class:`Problem`) and for methods that cannot apply."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem: expected a Problem, got {type(problem).__name__}")
    if methods is not None and (isinstance(methods, str) or not hasattr(methods, "__iter__")):
        raise TypeError(f"methods: expected a list of method names, got {methods!r}")
    for arg, value in (("calibration", calibration), ("opts", opts)):
        if value is not None and not isinstance(value, dict):
            raise TypeError(f"{arg}: expected a dict keyed by method, got {type(value).__name__} {value!r:.40}")
    if machine is not None and not isinstance(machine, Machine):
        raise TypeError(f"machine: expected a Machine, got {type(machine).__name__}")
    machine = Machine.measure() if machine is None else machine
    costs = predict_all(problem, machine, methods, **(opts or {}))
    if not costs:
        raise ValueError(f"problem: no method applies to {problem.describe()}")
    base = costs.get("sequential")
    out = [_one(k, c, base, machine, calibration) for k, c in costs.items()]
    out.sort(key=lambda a: (not a.trusted, a.seconds))
    return _say_bars(out)


def _one(k: str, c: Cost, base: Cost | None, machine: Machine, calibration: dict | None) -> Advice:
    """One method's advice: its reason, whether it may be advised, its error bars."""
    err = (calibration or {}).get(k, _UNCHECKED)
    r = _reason(c, base)
    sync_busy = _busy_sync(c, machine)
    low = high = None
    if not machine.noise.ok:
        r += "; NOT ADVISED: the machine's constants were measured while it was busy (" + \
             "; ".join(machine.noise.reasons) + ")"
    elif sync_busy:
        r += f"; NOT ADVISED: its threads meet at {' and '.join(_WHAT[k] for k in sync_busy)}, whose cost was " \
             "measured busy here (" + "; ".join(dict.fromkeys(machine.busy[k] for k in sync_busy)) + ")"
    elif calibration is None:
        return Advice(k, c.seconds, r, True, c)
    elif err is _UNCHECKED:
        r += "; NOT ADVISED: never checked against a measurement on this machine"
    elif err is None:
        r += "; NOT ADVISED: measured here only in runs the noise guard calls unreliable"
    else:
        slower, faster = directions(err)
        low, high = c.seconds / faster, c.seconds * slower
        return Advice(k, c.seconds, r, True, c, low, high)
    return Advice(k, c.seconds, r, False, c)


def directions(err) -> tuple[float, float]:
    """``(slower, faster)``: how many times slower and how many times faster than predicted a method was
    measured here, each >= 1. An :class:`~.configurations.Error` knows both; a plain factor (direction not
    recorded) is taken as both."""
    if isinstance(err, bool) or not isinstance(err, (int, float)) or not err >= 1.0:
        raise ValueError(f"calibration: expected error factors >= 1 (or None), got {err!r}")
    if hasattr(err, "faster") and hasattr(err, "slower"):
        return float(err.slower), float(err.faster)
    return float(err), float(err)


def _off(a: Advice) -> str:
    """How far off the model was for ``a`` here, by direction ("" within 2x both ways)."""
    if not 0 < a.seconds < float("inf"):
        return ""
    ways = [(a.high / a.seconds, "slower"), (a.seconds / a.low, "faster")]
    said = [f"{f:.1f}x for {a.method} (measured {way} than predicted)" for f, way in ways if f > 2.0]
    return " and ".join(said)


def _say_bars(out: list) -> list:
    """The first trusted choice stands; its reason says what its error bars and its rivals' allow. A rival
    "could be faster" only where its least time (its prediction over how much *faster* it was ever measured:
    a method only measured slower is never below its prediction) is below the first choice's most time. A
    method not advised (never measured, measured only unreliably or busy) and predicted faster is named too --
    nothing reliable is known of its error."""
    trusted = [a for a in out if a.trusted]
    if not trusted:
        return out
    best = trusted[0]
    unsure = [a.method for a in out if not a.trusted and a.seconds < best.seconds]
    if unsure:
        best.reason += (f"; {' and '.join(unsure)}, not advised here (see {'its' if len(unsure) == 1 else 'their'} "
                        f"reason), {'is' if len(unsure) == 1 else 'are'} predicted faster")
    if best.high is None:
        return out
    rivals = [a for a in trusted[1:] if a.low < best.high]
    offs = [_off(a) for a in [best] + rivals if _off(a)]
    said = "; advised" + (", with the model off by up to " + ", ".join(offs) + " here" if offs else "")
    if rivals:
        said += (" -- within the errors measured here " + ", ".join(
            f"{a.method} (down to {a.low * 1e3:.3g} ms)" for a in rivals) +
            f" could be faster than {best.method} (up to {best.high * 1e3:.3g} ms)")
    else:
        said += " -- no other method measured here could be faster within its errors"
    best.reason += said
    return out


def first_choice(advice: list[Advice]) -> str | None:
    """The advisor's first *trusted* method of :func:`advise`'s ranking, or None: it advises nothing."""
    if not isinstance(advice, (list, tuple)) or not advice:
        raise ValueError(f"advice: expected the non-empty list advise() returns, got {advice!r:.80}")
    if not all(isinstance(a, Advice) for a in advice):
        raise TypeError(f"advice: expected a list of Advice, got a list of {type(advice[0]).__name__}")
    return next((a.method for a in advice if a.trusted), None)
