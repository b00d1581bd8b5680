"""The advisor (experiments folder, chapter 12): :func:`advise` ranks the methods that apply to a problem by
the cost model's predicted time (:func:`.model.predict_all`), flagging those the model mispredicts here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.validate import check_bool, check_str
from .machine import Machine
from .model import Cost, predict_all
from .problem import Problem

__all__ = ["Advice", "advise", "first_choice"]

_UNCHECKED = object()  # a calibration that never measured the method


@dataclass
class Advice:
    method: str
    seconds: float
    reason: str
    trusted: bool = True
    cost: Cost | None = None

    def __post_init__(self):
        check_str(self.method, "method")
        if isinstance(self.seconds, (bool, np.bool_)) or not isinstance(self.seconds, (int, float, np.floating, np.integer)) \
                or not self.seconds >= 0:  # inf is allowed (never finishes), NaN and negatives are not
            raise ValueError(f"seconds: expected a number >= 0, got {self.seconds!r}")
        check_str(self.reason, "reason", nonempty=False)
        check_bool(self.trusted, "trusted")
        if self.cost is not None and not isinstance(self.cost, Cost):
            raise TypeError(f"cost: expected a Cost or None, got {type(self.cost).__name__}")

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
    ``calibration`` maps method -> the model's worst error factor measured here (``Calibration.errors()``;
    None: measured only in runs the noise guard calls unreliable): a method off by more than 2x, measured
    only unreliably, or -- when a calibration is given -- never measured, is listed after the trusted ones
    with ``trusted=False``: the advisor does not advise there. Nothing is trusted when the machine's own
    constants were measured while it was busy (``machine.noise``); a method on several workers is not trusted
    when the cost of its synchronisation (``region_s``, ``handoff_s``; for Python threads the GIL's price and the
    wavefront's barrier) was (``machine.busy``); and the first trusted choice is
    withdrawn when an untrusted method could be faster within its measured error (its reason says so). ``opts``: per-method options (``{"mgrit": {"iters": 3}}``).
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
    busy = not machine.noise.ok
    out = []
    for k, c in costs.items():
        err = (calibration or {}).get(k, _UNCHECKED)
        r = _reason(c, base)
        sync_busy = _busy_sync(c, machine)
        if busy:
            r += "; NOT ADVISED: the machine's constants were measured while it was busy (" + \
                 "; ".join(machine.noise.reasons) + ")"
            trusted = False
        elif sync_busy:
            r += f"; NOT ADVISED: its threads meet at {' and '.join(_WHAT[k] for k in sync_busy)}, whose cost was " \
                 "measured busy here (" + "; ".join(dict.fromkeys(machine.busy[k] for k in sync_busy)) + ")"
            trusted = False
        elif calibration is None or (err is not _UNCHECKED and err is not None and err <= 2.0):
            trusted = True
        elif err is _UNCHECKED:
            r += "; NOT ADVISED: never checked against a measurement on this machine"
            trusted = False
        elif err is None:
            r += "; NOT ADVISED: measured here only in runs the noise guard calls unreliable"
            trusted = False
        else:
            r += f"; NOT ADVISED: the model was off by {err:.1f}x on this machine"
            trusted = False
        out.append(Advice(k, c.seconds, r, trusted, c))
    out.sort(key=lambda a: (not a.trusted, a.seconds))
    return _guard_first(out, calibration)


def _guard_first(out: list, calibration: dict | None) -> list:
    """The first trusted choice stands only if no method the model mispredicted here could beat it: a
    method predicted at ``s`` with a measured error factor ``e`` may really take ``s / e`` (``e.faster`` for a
    :class:`~.configurations.Error`: a method only ever measured *slower* than predicted cannot). If one could,
    the first choice is withdrawn too (its reason names the rival). A method never measured (or measured
    only unreliably) does not withdraw it -- nothing is known of its error -- but the first choice's
    reason says that such a method is predicted faster."""
    trusted = [a for a in out if a.trusted]
    if not trusted:
        return out
    best = trusted[0]
    for a in out:
        if a.trusted:
            continue
        e = (calibration or {}).get(a.method, _UNCHECKED)
        if not isinstance(e, (int, float)) or isinstance(e, bool):
            if a.seconds < best.seconds:
                best.reason += f"; {a.method}, never reliably measured here, is predicted faster"
            continue
        fast = getattr(e, "faster", e)  # a calibration's Error knows the direction: only over-predictions count
        if a.seconds / fast < best.seconds:
            best.trusted = False
            best.reason += (f"; NOT ADVISED: {a.method} (not trusted here) is predicted at "
                            f"{a.seconds * 1e3:.3g} ms and the model was off for it by {e:.1f}x"
                            + (f" (measured up to {fast:.1f}x faster than predicted)" if fast != e else "")
                            + ": it may be faster")
            out.sort(key=lambda x: (not x.trusted, x.seconds))
            return _guard_first(out, calibration)
    return out


def first_choice(advice: list[Advice]) -> str | None:
    """The advisor's first *trusted* method of :func:`advise`'s ranking, or None: it advises nothing."""
    if not isinstance(advice, (list, tuple)) or not advice:
        raise ValueError(f"advice: expected the non-empty list advise() returns, got {advice!r:.80}")
    if not all(isinstance(a, Advice) for a in advice):
        raise TypeError(f"advice: expected a list of Advice, got a list of {type(advice[0]).__name__}")
    return next((a.method for a in advice if a.trusted), None)
