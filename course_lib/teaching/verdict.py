"""Computed verdict lines: the seed's number beside ours, and why they differ (teaching layer).

A chapter states a seed's finding in words and asks the reader to predict; then it measures, and
prints one line made here from the measured facts::

    print(verdict("000.summary.speedup", ours=speedup, here=f"{cores} cores",
                  reasons=[(cores < 8, f"{cores} cores here, not 61"),
                           (gemm_share > 0.8, "BLAS already runs the GEMMs in parallel")],
                  noise=cmp.noise))

    Seed 000, §1 (61-core Xeon Phi, ...): 39×.  Here (2 cores): 1.8×.  Same direction, smaller
    (0.046 of the seed's) -- 2 cores here, not 61.

Agreement has two parts. *Direction*: ours and the seed's lie on the same side of ``pivot`` (1.0 for
speed-ups and ratios: faster or slower; ``None`` when only the size matters). *Size*: ours is within a
factor ``within`` of the seed's. When they disagree, the first reason whose condition is true (the
caller computes each condition from measurements) is the explanation; when none is true, the line says
that no measured fact here explains it. When ``noise`` (from :mod:`course_lib.core.timing`) says the
run was unreliable, the line draws no conclusion at all.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..core.timing import Noise
from .claims import Claim, claim
from .verdict_line import Verdict

__all__ = ["Verdict", "verdict", "judge"]


def _fmt(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return str(value)
    v = f"{value:.3g}"
    if unit in ("x", "×"):
        return f"{v}×"
    if unit == "%":
        return f"{v}%"
    return f"{v} {unit}".strip()


def judge(seed_value: float, ours: float, *, pivot: float | None = 1.0, within: float = 2.0) -> str:
    """``"agrees"``, ``"smaller"``, ``"larger"`` or ``"opposite"`` (ours vs the seed's, see module doc)."""
    if not (isinstance(within, (int, float)) and within >= 1):
        raise ValueError(f"within: expected a factor >= 1, got {within!r}")
    if not math.isfinite(ours):
        raise ValueError(f"ours: expected a finite measured number, got {ours!r}")
    if pivot is not None:
        seed_side = (seed_value > pivot) - (seed_value < pivot)
        our_side = (ours > pivot) - (ours < pivot)
        if seed_side != our_side:
            return "opposite"
        # sizes are compared as distances from the pivot on a log scale for ratios around 1
        if pivot == 1.0 and seed_value > 0 and ours > 0:
            s, o = abs(math.log(seed_value)), abs(math.log(ours))
            if s == 0 or o == 0:
                return "agrees" if s == o else ("smaller" if o < s else "larger")
            r = o / s
        else:
            s, o = abs(seed_value - pivot), abs(ours - pivot)
            r = o / s if s else (1.0 if o == 0 else math.inf)
    else:
        r = ours / seed_value if seed_value else (1.0 if ours == 0 else math.inf)
    if 1 / within <= r <= within:
        return "agrees"
    return "smaller" if r < 1 else "larger"


_WORDS = {
    "agrees": "Agrees: same direction and roughly the same size.",
    "smaller": "Same direction, smaller here",
    "larger": "Same direction, larger here",
    "opposite": "The opposite of the seed's finding here",
}


def verdict(cid, ours: float, *, here: str = "this machine", pivot: float | None = 1.0, within: float = 2.0,
            reasons: Sequence[tuple[bool, str]] = (), noise: Noise | None = None,
            unit: str | None = None) -> Verdict:
    """One line: the seed's number and conditions, ours, agreement, and the reason when they differ.

    ``cid``      a claim id (or :class:`Claim`) from :mod:`course_lib.teaching.claims`
    ``ours``     our measured number, in the claim's unit (or ``unit``)
    ``here``     our conditions in a few words ("2 cores, n = 1000")
    ``pivot``    the value that separates the two directions (1.0 for speed-ups; None: size only)
    ``within``   how close counts as "roughly the same size" (a factor)
    ``reasons``  ``(condition, explanation)`` pairs computed from measured facts, most specific first
    ``noise``    the measurement's :class:`~course_lib.core.timing.Noise`; unreliable -> no conclusion
    """
    c: Claim = claim(cid)
    if isinstance(ours, bool) or not isinstance(ours, (int, float)):
        raise TypeError(f"ours: expected a measured number, got {type(ours).__name__}")
    ours = float(ours)
    if noise is not None and not isinstance(noise, Noise):
        raise TypeError(f"noise: expected a course_lib.core.timing.Noise (a Timing's or Comparison's .noise), "
                        f"got {type(noise).__name__}")
    for pair in reasons:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[1], str)):
            raise TypeError(f"reasons: expected (condition, explanation) pairs, got {pair!r}")
    u = c.unit if unit is None else unit
    head = (f"Seed {c.seed if c.seed != 'beyond' else c.source}, {c.where} ({c.conditions}): {c.formatted()}.  "
            f"Here ({here}): {_fmt(ours, u)}.  ")
    if noise is not None and not noise.ok:
        return Verdict(head + "No verdict: " + "; ".join(noise.reasons) +
                       " -- re-run when the machine is quiet.", "unreliable", "; ".join(noise.reasons))
    outcome = judge(c.value, ours, pivot=pivot, within=within)
    if outcome == "agrees":
        return Verdict(head + _WORDS["agrees"], outcome)
    why = next((text for cond, text in reasons if cond), "")
    tail = f" -- {why}." if why else " -- no fact measured here explains the difference."
    return Verdict(head + _WORDS[outcome] + tail, outcome, why)
