"""The advisor (experiments folder, chapter 12): :func:`advise` ranks the methods that apply to a problem by
the cost model's predicted time (:func:`.model.predict_all`), flagging those the model mispredicts here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.validate import check_bool, check_str
from .machine import Machine
from .model import Cost, Problem, predict_all

__all__ = ["Advice", "advise", "first_choice"]


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
    ``calibration`` maps method -> the model's worst error factor measured here (``which.calibrate``):
    a method off by more than 2x -- or, when a calibration is given, a method it never measured -- is
    listed after the trusted ones, with ``trusted=False``: the advisor does not advise there. ``opts``: per-method options (``{"mgrit": {"iters": 3}}``).
    Raises ValueError for impossible problems (through :class:`Problem`) and for methods that cannot apply."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem: expected a Problem, got {type(problem).__name__}")
    machine = Machine.measure() if machine is None else machine
    costs = predict_all(problem, machine, methods, **(opts or {}))
    if not costs:
        raise ValueError(f"problem: no method applies to {problem.describe()}")
    base = costs.get("sequential")
    out = []
    for k, c in costs.items():
        err = (calibration or {}).get(k)
        unchecked = calibration is not None and err is None
        trusted = not unchecked and (err is None or err <= 2.0)
        r = _reason(c, base)
        if unchecked:
            r += "; NOT ADVISED: never checked against a measurement on this machine"
        elif not trusted:
            r += f"; NOT ADVISED: the model was off by {err:.1f}x on this machine"
        out.append(Advice(k, c.seconds, r, trusted, c))
    out.sort(key=lambda a: (not a.trusted, a.seconds))
    return out


def first_choice(advice: list[Advice]) -> str:
    """The first method of :func:`advise`'s ranking."""
    if not isinstance(advice, (list, tuple)) or not advice:
        raise ValueError(f"advice: expected the non-empty list advise() returns, got {advice!r:.80}")
    if not isinstance(advice[0], Advice):
        raise TypeError(f"advice: expected a list of Advice, got a list of {type(advice[0]).__name__}")
    return advice[0].method
