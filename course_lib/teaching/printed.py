"""Printed patterns that their own numbers contradict: a scan of every recorded line (teaching layer).

A recording (:mod:`course_lib.teaching.record`) keeps each verdict, goal and computed comparison sentence with
the numbers it was made from. :func:`scan` reads the printed text for the patterns a sentence can get wrong
on another machine, and checks each against those numbers:

- "X is faster (1.03x)": a gap the course calls no clear difference (under
  :data:`~course_lib.teaching.verdict.NO_DIFFERENCE`) is not "faster"; a computed comparison
  (``which_faster``) must name the faster of its two recorded speeds;
- "Holds here" for a goal that asks for a speed-up, where the speed-up its own line states is within that band;
- "Same direction, N× smaller/larger here": N must be the factor between ours and the seed's value;
- "every value between A and B gives this verdict": the verdict at A and at B must be the one printed;
- "which allows 'p' (at A) and 'q' (at B)": the verdicts at A and B must be p and q.

:mod:`course_lib.teaching.replay` runs it on each line as printed and as the current code prints it.
"""
from __future__ import annotations

import math
import re

from .verdict import NO_DIFFERENCE, factor, judge

__all__ = ["scan", "stated_speedup", "SPEEDUP_GOALS"]

_X = r"(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
_FASTER = re.compile(r"\bis faster \(" + _X + r"x\)")
_FACTOR = re.compile(r"Same direction, " + _X + r"× (smaller|larger) here")
_EVERY = re.compile(r"every value (?:its spread allows, |between )" + _X + r"× (?:to|and) " + _X + r"×,? gives this verdict")
_ALLOWS = re.compile(r"which allows '(\w+)' \(at " + _X + r"×\) and '(\w+)' \(at " + _X + r"×\)")
_SIDE = re.compile(r"every value this run allows \(" + _X + r"× to " + _X + r"×[^)]*\) lies on the seed's side of "
                   r"[^,]+, between '(\w+)' and '(\w+)'")
_STATED = re.compile(r"(?:^|: )" + _X + r"x the ")
SPEEDUP_GOALS = ("speedup", "speed up")     # a goal whose quoted words ask for a speed-up


def stated_speedup(ours: str) -> float | None:
    """The speed-up a goal's ``ours`` states first ("MPI with 2 ranks: 1.03x the batched pass ..."), or None."""
    m = _STATED.search(ours or "")
    return float(m.group(1)) if m else None


def asks_for_speedup(line: str) -> bool:
    quoted = line.partition("“")[2].partition("”")[0].lower()
    return any(w in quoted for w in SPEEDUP_GOALS)


def _close(stated: float, true: float) -> bool:
    """``stated`` is ``true`` as the line rounds it (2 significant figures below 10, whole numbers above)."""
    return abs(stated - true) <= max(0.051 * abs(true), 0.51 if true >= 10 else 0.0) + 1e-12


def _gives(seed, v: float, word: str, pivot, within) -> bool:
    """Some value that prints as ``v`` (3 significant figures) gives ``word``."""
    return any(judge(seed, v * k, pivot=pivot, within=within) == word for k in (1 - 0.005, 1, 1 + 0.005))


def scan(r: dict, line: str | None = None, outcome: str | None = None) -> list[str]:
    """Every printed pattern in ``line`` (default: the record's own) that the record ``r``'s numbers contradict."""
    line = r.get("line", "") if line is None else line
    outcome = r.get("outcome") if outcome is None else outcome
    out = []
    for m in _FASTER.finditer(line):
        gap = float(m.group(1))
        if gap < NO_DIFFERENCE:
            out.append(f"says 'is faster ({m.group(1)}x)', a gap under the {NO_DIFFERENCE - 1:.0%} the course calls "
                       "no clear difference")
    if r.get("kind") == "said" and r.get("speeds"):
        (a, x), (b, y) = r["speeds"].items()
        gap, band = max(x, y) / min(x, y), r.get("band", NO_DIFFERENCE)
        if "is faster" in line and (gap < band or not line.startswith(a if x > y else b)):
            out.append(f"names a faster one, but the recorded speeds are {a} {x:.3g} and {b} {y:.3g}")
        if "no clear difference" in line and gap >= band:
            out.append(f"says 'no clear difference', but the recorded speeds differ by {gap:.3g}x")
    if r.get("kind") == "goal" and outcome == "agrees" and asks_for_speedup(line):
        s = stated_speedup(r.get("ours", ""))
        if s is not None and s < NO_DIFFERENCE:
            out.append(f"says the speed-up goal holds at {s:g}x, under the {NO_DIFFERENCE - 1:.0%} the course calls "
                       "no clear difference")
    if r.get("kind") != "verdict":
        return out
    seed, ours = r.get("seed_value"), r.get("ours")
    pivot, within = r.get("pivot"), r.get("within", 1.5)
    for m in _FACTOR.finditer(line):
        f = factor(seed, ours)
        true = max(abs(f), 1 / abs(f)) if f else math.inf
        if not _close(float(m.group(1)), true) or (m.group(2) == "smaller") != (abs(f) < 1):
            out.append(f"says '{m.group(0)}', but ours is {f:.3g}x the seed's value")
    for m in _EVERY.finditer(line):
        if not all(_gives(seed, float(v), outcome, pivot, within) for v in m.groups()):
            ends = {judge(seed, float(v), pivot=pivot, within=within) for v in m.groups()}
            out.append(f"says every value from {m.group(1)}× to {m.group(2)}× gives '{outcome}', but they give "
                       f"{' and '.join(sorted(ends))}")
    for m in _SIDE.finditer(line):
        for v, word in ((m.group(1), m.group(3)), (m.group(2), m.group(4))):
            if not _gives(seed, float(v), word, pivot, within):
                out.append(f"says {v}× lies in '{word}', but it gives "
                           f"'{judge(seed, float(v), pivot=pivot, within=within)}'")
    for m in _ALLOWS.finditer(line):
        for word, v in ((m.group(1), m.group(2)), (m.group(3), m.group(4))):
            if not _gives(seed, float(v), word, pivot, within):
                out.append(f"says {v}× gives '{word}', but it gives "
                           f"'{judge(seed, float(v), pivot=pivot, within=within)}'")
    return out
