"""Computed verdict lines: the seed's number beside ours, and why they differ (teaching layer).

A chapter states a seed's finding in words and asks the reader to predict; then it measures, and
prints one line made here from the measured facts::

    print(verdict("000.summary.speedup", ours=speedup, here=f"{cores} cores",
                  reasons=[(cores < 8, f"{cores} cores here, not 61"),
                           (gemm_share > 0.8, "BLAS already runs the GEMMs in parallel")],
                  noise=cmp.noise, interval=cmp.speedup_interval("parallel")))

    Seed 000, §1 (61-core Xeon Phi, ...): 39×.  Here (2 cores): 1.8×.  Same direction, 22× smaller
    here -- 2 cores here, not 61.

The rule (:func:`judge`), on the scale the claim is stated in:

- *Direction* (only with a ``pivot``: 1.0 for speed-ups and ratios): ours and the seed's lie on the same
  side of the pivot, or it is "the opposite of the seed's finding". With ``pivot=None`` the line never
  speaks of direction; it says "N× the seed's value".
- *Size*: ours / seed's. It *agrees* only when that factor lies within ``[1/within, within]``
  (``within=1.5`` unless the chapter states another factor, which the line then prints); otherwise the
  line says "N× smaller" or "N× larger", with N stated.
- *Run to run*: a ratio of times (unit ``x``) gets no verdict when a value within :data:`RERUN_MARGIN` of it
  (or of its interval; :data:`RERUN_MARGIN_LOADED` for wall-clock times while other programs kept cores busy,
  :func:`rerun_margin`) gives another outcome: a ratio measured narrowly in one run moves that much in the next,
  so the line does not pick a side.
- *Direction only*: where that leaves every allowed value on the seed's side of the pivot, but in two size bands
  ("smaller" and "agrees"), the line concludes ``"direction"``: the seed's direction holds here, its size is not
  placed (a layout ratio measured at 1.2-1.4x against the seed's 2x: the seed's layout is faster, by how much
  this run cannot say).
- *No clear effect*: where that leaves a ratio of times on both sides of the pivot but, margin included, within
  :data:`NO_EFFECT` of it, and no value there agrees with the seed, the line concludes ``"none"``: no clear
  effect here, against the seed's (a layer at 0.97-1.02x where the seed found 11x need not pick a side of 1x).
- *Reasons* are ``(condition, explanation)`` pairs; every condition is a bool the caller computed from a
  measured or counted fact about this machine (``tests/test_reasons.py`` rejects constants and conditions
  that only restate the outcome). The first true one *that is relevant to the quantity judged* is printed
  *whatever the outcome*: after a disagreement as the explanation, after an agreement as "although ..." -- a
  caveat that holds here is worth reading even when the numbers happen to meet. No true reason after a
  disagreement: the line says that no fact measured here explains it. Relevance is a fact of the run: with
  ``cores_used`` (how many cores the measured quantity ran on) at 1, a reason that names a core count
  ("2 cores here, not 61") explains nothing and is passed over (:func:`relevant`).
- *What the quantity ran on* (``cores_used``, recorded with every line): 1 for a one-thread timing, the thread
  or rank count for threaded code, :data:`COUNTED` (0) for a counted or modelled quantity that no core ran;
  None where a caller did not state it (older recordings). Issue 43's busy goal is stated on it: under one
  busy process per 2 cores, the one-thread and counted lines conclude (>= 90%), the threaded lines abstain
  naming the held core (``python -m course_lib replay`` prints both shares, :mod:`~course_lib.teaching.busy_goal`).
- *Noise*: when ``noise`` (from :mod:`course_lib.core.timing`) says the run was unreliable, the line
  concludes only if every value the noise allows gives the same verdict: the ends of ``interval`` (where
  ours truly lies, e.g. ``cmp.speedup_interval(name)``), or -- without one, where the only trouble was the
  repeats' spread or the load -- ours widened by that spread (a share of 4.3% spread by 32% is at most 5.7%,
  far from an edge at 15%), the run-to-run margin still applied on top. Otherwise it abstains -- and says
  what can still be said: which verdicts the interval allows, or the comparison's own sentences ("b was at
  least 1.8x faster than a in every one of 40 pairs"). :func:`judged_noise` narrows a whole comparison's
  noise to the one ratio a verdict judges, so that an abstention cites that ratio and no other.
"""
from __future__ import annotations

import math
import re
from typing import Sequence

import numpy as np

from ..core.intervals import Ratio
from ..core.timing import OTHERS_LIMIT, Noise, noise_of_pairs
from . import record
from .claims import Claim, claim
from .verdict_line import COUNTED, Verdict, check_cores_used

__all__ = ["Verdict", "COUNTED", "verdict", "outcome_of", "judge", "factor", "relevant", "judged_noise", "judged_speedup", "allowed_interval", "which_faster",
           "rerun_margin", "RERUN_MARGIN", "RERUN_MARGIN_LOADED", "NO_EFFECT", "NO_DIFFERENCE"]

RERUN_MARGIN = 1.15          # a ratio of times moves this much between runs on one machine (see _near_edge)
RERUN_MARGIN_LOADED = 1.3    # ... and this much while other programs share the cores, caches and memory
NO_EFFECT = 1.25             # a ratio of times within this factor of the pivot, margin included, is no clear effect
NO_DIFFERENCE = 1.05         # two measured speeds closer than this are "no clear difference" in a printed sentence


def _fmt(value: float, unit: str, digits: int = 3) -> str:
    if not math.isfinite(value):
        return str(value)
    v = f"{value:.{digits}g}"
    if unit in ("x", "×"):
        return f"{v}×"
    if unit == "%":
        return f"{v}%"
    return f"{v} {unit}".strip()


def factor(seed_value: float, ours: float) -> float:
    """Ours as a multiple of the seed's value, on the claim's scale: ``ours / seed`` (negative where the
    signs differ; inf where the seed's is 0 and ours is not; 1.0 where both are 0)."""
    if seed_value == 0:
        return 1.0 if ours == 0 else math.inf
    return ours / seed_value


def judge(seed_value: float, ours: float, *, pivot: float | None = 1.0, within: float = 1.5) -> str:
    """``"agrees"``, ``"smaller"``, ``"larger"`` or ``"opposite"`` (ours vs the seed's, see module doc).

    Along ``ours`` the outcomes form contiguous stretches (opposite / smaller / agrees / larger), so two
    values with the same outcome have it for everything between them too."""
    if isinstance(within, bool) or not (isinstance(within, (int, float)) and within >= 1):
        raise ValueError(f"within: expected a factor >= 1, got {within!r}")
    if isinstance(ours, bool) or not isinstance(ours, (int, float)) or not math.isfinite(ours):
        raise ValueError(f"ours: expected a finite measured number, got {ours!r}")
    if pivot is not None:
        seed_side = (seed_value > pivot) - (seed_value < pivot)
        our_side = (ours > pivot) - (ours < pivot)
        if seed_side != our_side:
            return "opposite"
    elif (seed_value > 0 > ours) or (seed_value < 0 < ours):
        return "larger" if ours > seed_value else "smaller"     # no direction to speak of: by value
    r = factor(seed_value, ours)
    if 1 / within <= r <= within:
        return "agrees"
    return "smaller" if r < 1 else "larger"


def _words(outcome: str, seed_value: float, ours: float, pivot: float | None, within: float) -> str:
    """The verdict in words, with the factor stated."""
    r = factor(seed_value, ours)
    n = _times(max(abs(r), 1 / abs(r)) if r else math.inf)
    bound = f"within {within:g}×" if within > 1 else "equal"    # exact: 1.25x must not print as 1.2x
    if outcome == "opposite":
        return "The opposite of the seed's finding here"
    if pivot is None:
        return (f"Agrees: {_times(r)} the seed's value ({bound})" if outcome == "agrees"
                else f"{_times(r)} the seed's value, not {bound} of it")
    if outcome == "agrees":
        return f"Agrees: same direction, {_times(r)} the seed's value ({bound})"
    return f"Same direction, {n} {outcome} here"


def _times(v: float) -> str:
    if not math.isfinite(v):
        return "∞×"
    return f"{v:.2g}×" if v < 10 else f"{v:.0f}×"


CORE_COUNT = re.compile(r"(?<![\d.])(\d+) (?:CPU |usable |physical )?cores?\b|\bcores? here\b")


def relevant(text: str, cores_used: int | None) -> bool:
    """Can a reason's ``text`` explain a quantity measured on ``cores_used`` cores (None: not stated; 0,
    :data:`COUNTED`: counted or modelled, not timed)? A reason that names a core count ("2 CPU cores here, not
    thousands of GPU lanes") explains only a measurement that ran on more than one core: a DEER run on one
    core is not slow for want of cores, and a count does not depend on them."""
    return cores_used is None or cores_used > 1 or not CORE_COUNT.search(text)


def judged_noise(noise: Noise, ratio: Ratio) -> Noise:
    """The noise of the one ratio a verdict judges (``cmp.pairs(name, over)``), out of a whole comparison's
    ``noise``: that ratio's pairs judged alone, with the run's load and the caller's notes, not the other
    functions' wide intervals (chapter 04's ladder times six kernels; its Fig. 8 verdict judges one pair).
    Read ``ratio.median`` and ``ratio.interval`` only after this call: biased pairs with a floor are switched to
    judging by their fastest rounds here (``by_floor``; :func:`judged_speedup` reads all three together)."""
    if not isinstance(noise, Noise) or not isinstance(ratio, Ratio):
        raise TypeError(f"noise, ratio: expected a Noise and a Ratio (cmp.pairs(name, over)), got "
                        f"{type(noise).__name__} and {type(ratio).__name__}")
    own = noise_of_pairs([ratio], others=noise.others)
    own.cpu_clock = noise.cpu_clock
    for note in noise.notes:
        own.add(True, note)
    return own


def judged_speedup(cmp, name: str, over: str | None = None) -> tuple[float, tuple[float, float], Noise]:
    """``(speed-up, interval, noise)`` of ``name`` over ``over`` (default: the baseline) in the comparison ``cmp``,
    read together: :func:`judged_noise` may switch the pairs to their fastest rounds (biased pairs with a floor),
    so the speed-up and its interval are read *after* it, from the same :class:`Ratio` -- never a median of the
    pairs beside an interval of the floors."""
    ratio = cmp.pairs(name, over)
    noise = judged_noise(cmp.noise, ratio)
    return 1.0 / ratio.median, ratio.speedup_interval, noise


def allowed_interval(ours: float, noise: Noise | None) -> tuple[float, float] | None:
    """Where ours may lie when the only trouble was the repeats' spread or the load (no caller's notes, no
    pair interval, no biased pairs): ours divided and multiplied by 1 + the spread. None otherwise."""
    if noise is None or noise.ok or noise.notes or noise.uncertain or noise.biased or noise.ratios:
        return None
    widen = 1 + (noise.spread if noise.wide else 0.0)
    return (ours / widen, ours * widen) if ours >= 0 else (ours * widen, ours / widen)


def which_faster(speeds: dict[str, float], *, band: float = NO_DIFFERENCE) -> str:
    """The sentence for two measured speeds (``{label: speed-up}``, larger is faster): "<label> is faster (1.10x)",
    or "no clear difference (1.03x, under 5%)" when they are within ``band`` of each other -- never "faster" for a
    gap the course calls no clear difference. Recorded (``COURSE_RECORD``) for the replay's scan of printed lines."""
    if not (isinstance(speeds, dict) and len(speeds) == 2):
        raise TypeError(f"speeds: expected {{label: speed-up}} for two things, got {speeds!r}")
    (a, x), (b, y) = speeds.items()
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in (x, y)):
        raise ValueError(f"speeds: expected positive finite speed-ups, got {speeds!r}")
    gap = max(x, y) / min(x, y)
    text = (f"no clear difference ({gap:.2f}x, under {band - 1:.0%})" if gap < band else
            f"{a if x > y else b} is faster ({gap:.2f}x)")
    record.said({"speeds": {a: float(x), b: float(y)}, "band": band}, text)
    return text


def _check_reasons(reasons) -> list[tuple[bool, str]]:
    out = []
    for pair in reasons:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[1], str)):
            raise TypeError(f"reasons: expected (condition, explanation) pairs, got {pair!r}")
        if not isinstance(pair[0], (bool, np.bool_)):
            raise TypeError(f"reasons: a condition must be a bool computed from a measurement, got "
                            f"{type(pair[0]).__name__} {pair[0]!r} for {pair[1]!r}")
        out.append((bool(pair[0]), pair[1]))
    return out


def verdict(cid, ours: float, *, here: str = "this machine", pivot: float | None = 1.0, within: float = 1.5,
            reasons: Sequence[tuple[bool, str]] = (), noise: Noise | None = None,
            unit: str | None = None, interval: tuple[float, float] | None = None,
            cores_used: int | None = None) -> Verdict:
    """One line: the seed's number and conditions, ours, the verdict, and the first relevant reason that holds.

    ``cid``      a claim id (or :class:`Claim`) from :mod:`course_lib.teaching.claims`
    ``ours``     our measured number, in the claim's unit (or ``unit``)
    ``here``     our conditions in a few words ("2 cores, n = 1000")
    ``pivot``    the value that separates the two directions (1.0 for speed-ups; None: size only)
    ``within``   the factor that counts as agreeing (printed in the line)
    ``reasons``  ``(condition, explanation)`` pairs, conditions computed from measured facts, most specific first
    ``noise``    the measurement's :class:`~course_lib.core.timing.Noise`; unreliable -> see ``interval``
    ``interval`` ``(lo, hi)`` around ``ours`` on the same scale (e.g. ``cmp.speedup_interval(name)``): on an
                 unreliable run the line still concludes when both ends give the same verdict
    ``cores_used`` what the judged quantity ran on, from the run's facts (the threads the timed functions were
                 given): 1 for a one-thread timing, the thread or rank count of threaded code, :data:`COUNTED`
                 (0) for a counted or modelled quantity (no timing); None: not stated. At 1 or 0, a reason
                 naming a core count is not chosen (:func:`relevant`); the replay's busy-goal line counts
                 the one-thread and counted lines apart from the threaded ones
    """
    c: Claim = claim(cid)
    ours = _checked(ours, noise)
    reasons = _check_reasons(reasons)
    cores_used = check_cores_used(cores_used)
    chosen = [(cond and relevant(text, cores_used), text) for cond, text in reasons]
    line = _line(c, ours, here, pivot, within, chosen, noise, unit, interval)
    record.verdict_made("verdict", {"claim": c.id, "seed_value": c.value, "ours": ours, "here": here, "pivot": pivot,
                                    "within": within, "unit": unit, "interval": interval, "noise": noise,
                                    "reasons": reasons, "cores_used": cores_used}, line)
    return line


def outcome_of(cid, ours: float, *, pivot: float | None = 1.0, within: float = 1.5, noise: Noise | None = None,
               unit: str | None = None, interval: tuple[float, float] | None = None) -> str:
    """The outcome :func:`verdict` would give on these numbers (``"unreliable"`` where it would not conclude),
    nothing printed or recorded: a chapter compares it with the outcome at the ratio itself (``interval=(r, r)``)
    to decide whether more rounds are worth it -- only where the interval's width, not the run-to-run margin
    around ours, keeps the verdict from its sharpest outcome."""
    return _line(claim(cid), _checked(ours, noise), "", pivot, within, [], noise, unit, interval).outcome


def _checked(ours, noise) -> float:
    """``ours`` as a float, after the type checks :func:`verdict` and :func:`outcome_of` share."""
    if isinstance(ours, bool) or not isinstance(ours, (int, float)):
        raise TypeError(f"ours: expected a measured number, got {type(ours).__name__}")
    if noise is not None and not isinstance(noise, Noise):
        raise TypeError(f"noise: expected a course_lib.core.timing.Noise (a Timing's or Comparison's .noise), "
                        f"got {type(noise).__name__}")
    return float(ours)


def _line(c: Claim, ours: float, here: str, pivot, within: float, reasons: list[tuple[bool, str]],
          noise: Noise | None, unit: str | None, interval) -> Verdict:
    """The verdict line of :func:`verdict`, from its checked arguments."""
    outcome = judge(c.value, ours, pivot=pivot, within=within)
    if interval is not None:
        lo, hi = _check_interval(interval, ours)
    u = c.unit if unit is None else unit
    head = (f"Seed {c.seed if c.seed != 'beyond' else c.source}, {c.where} ({c.conditions}): {c.formatted()}.  "
            f"Here ({here}): {_fmt(ours, u)}.  ")
    tail = ""
    implied = allowed_interval(ours, noise) if interval is None else None
    if implied is not None and noise.busy and u not in ("x", "×"):
        implied = None       # the load's effect on a share or a rate has no margin to bound it: only a spread
    if implied is not None:
        lo, hi = interval = implied
    if noise is not None and not noise.ok:
        why_not = "; ".join(noise.reasons)
        ends = None if interval is None else [judge(c.value, v, pivot=pivot, within=within) for v in (lo, hi)]
        if ends is None or ends[0] != ends[1] or noise.notes or noise.biased:
            placed = None if ends is None or noise.notes or noise.biased else \
                _no_effect(c, (lo, hi), pivot, within, u, noise, reasons, head) or \
                _direction(c, (lo, hi), pivot, within, u, noise, head, f" (an unreliable run: {why_not})")
            return placed or Verdict(head + _abstain(noise, ends, interval, u, c.value, pivot, within), "unreliable",
                                     why_not)
        outcome = ends[0]
        allows = (f"every value its spread allows, {_fmt(lo, u)} to {_fmt(hi, u)}," if implied is not None else
                  f"every value between {_fmt(lo, u)} and {_fmt(hi, u)}")
        tail = f" (an unreliable run -- {why_not} -- but {allows} gives this verdict)"
    elif interval is not None and judge(c.value, lo, pivot=pivot, within=within) != \
            judge(c.value, hi, pivot=pivot, within=within):
        # a reliable run whose interval still spans two outcomes (a speed-up of 1.0x +- 3%, a factor at the edge
        # of `within`): say so instead of picking the side the median happens to fall on
        options = " and ".join(f"'{judge(c.value, v, pivot=pivot, within=within)}' (at {_fmt(v, u)})" for v in (lo, hi))
        return _no_effect(c, (lo, hi), pivot, within, u, noise, reasons, head) or \
            _direction(c, (lo, hi), pivot, within, u, noise, head) or Verdict(
            head + f"No verdict: ours lies between {_fmt(lo, u)} and {_fmt(hi, u)}, which allows {options} -- the "
            "difference is smaller than this run can resolve.", "unreliable", "the interval spans two outcomes")
    span = (lo, hi) if interval is not None else (ours, ours)
    edge = _near_edge(c, ours, span, pivot, within, u, noise)
    if edge:
        return _no_effect(c, span, pivot, within, u, noise, reasons, head) or \
            _direction(c, span, pivot, within, u, noise, head) or Verdict(
            head + edge, "unreliable", "within the run-to-run margin of an edge between two outcomes")
    why = next((text for cond, text in reasons if cond), "")
    if outcome == "agrees":
        line = _words(outcome, c.value, ours, pivot, within) + (f", although {why}" if why else "")
    else:
        line = _words(outcome, c.value, ours, pivot, within) + (
            f" -- {why}" if why else " -- no fact measured here explains the difference")
    return Verdict(head + line + tail + ".", outcome, why)


def _near_edge(c: Claim, ours: float, span, pivot, within: float, unit: str, noise: Noise | None) -> str:
    """For a ratio of times (unit ``x``): the abstaining sentence when some value within :data:`RERUN_MARGIN` of
    ``span`` (:data:`RERUN_MARGIN_LOADED` while other programs kept cores busy) gives another outcome -- a ratio
    measured narrowly in one run moves by that much in the next (measured on this course's 2-core VM: chapter
    09's loop-nest ratio 1.41x, 1.26x and 1.14x in three runs, each with an interval of +-3%); else ""."""
    if unit not in ("x", "×"):
        return ""
    margin, loaded = rerun_margin(noise)
    lo, hi = span[0] / margin, span[1] * margin
    ends = [judge(c.value, v, pivot=pivot, within=within) for v in (lo, hi)]
    if ends[0] == ends[1]:
        return ""
    while_ = " while other programs kept cores busy" if loaded else ""
    return (f"No verdict: ours ({_fmt(ours, unit)}) is within {margin - 1:.0%} of the edge between "
            f"'{ends[0]}' and '{ends[1]}' -- a ratio of times measured in one run can move that much in the "
            f"next{while_}, so this run cannot place it.")   # (both ends on the seed's side: _direction concludes)


def rerun_margin(noise: Noise | None) -> tuple[float, bool]:
    """The run-to-run margin of a ratio of times, and whether other programs' load widens it (the larger one).

    Load widens it only for wall-clock times: a ratio of one thread's CPU times (``noise.cpu_clock``) is what
    another program's load cannot inflate -- the lines so timed in the quiet and busy Zen 5 recordings moved
    0.93-1.16x between the two runs, as much as two quiet runs move (:data:`RERUN_MARGIN`)."""
    loaded = (noise is not None and noise.others is not None and noise.others > OTHERS_LIMIT
              and not noise.cpu_clock)
    return (RERUN_MARGIN_LOADED if loaded else RERUN_MARGIN), loaded


def _no_effect(c: Claim, span, pivot, within: float, unit: str, noise: Noise | None,
               reasons: list[tuple[bool, str]], head: str) -> Verdict | None:
    """The ``"none"`` line where a ratio of times ``span`` cannot pick a side of ``pivot`` but, widened by the
    run-to-run margin, stays within :data:`NO_EFFECT` of it and no value there agrees with the seed; else None."""
    if unit not in ("x", "×") or pivot is None or pivot <= 0:
        return None
    margin, _ = rerun_margin(noise)
    lo, hi = span[0] / margin, span[1] * margin
    agree_lo, agree_hi = sorted((c.value / within, c.value * within))   # where ours would agree with the seed
    if not pivot / NO_EFFECT <= lo < pivot < hi <= pivot * NO_EFFECT or (lo <= agree_hi and agree_lo <= hi):
        return None
    why = next((text for cond, text in reasons if cond), "")
    line = (f"No clear effect here: ours stays within {NO_EFFECT - 1:.0%} of {_fmt(pivot, unit)} ({_fmt(lo, unit)} to "
            f"{_fmt(hi, unit)}, allowing the {margin - 1:.0%} a ratio of times moves between runs), where the seed "
            f"found {c.formatted()}" + (f" -- {why}" if why else " -- no fact measured here explains the difference"))
    return Verdict(head + line + ".", "none", why)


def _direction(c: Claim, span, pivot, within: float, unit: str, noise: Noise | None, head: str,
               note: str = "") -> Verdict | None:
    """The ``"direction"`` line where every value the run allows -- ``span``, widened for a ratio of times by the
    run-to-run margin (:func:`rerun_margin`) -- lies on the seed's side of ``pivot`` but in more than one size
    band (between 'smaller' and 'agrees', say): the direction is concluded, the size is not. Else None."""
    if pivot is None:
        return None
    margin = rerun_margin(noise)[0] if unit in ("x", "×") and span[0] > 0 else 1.0
    lo, hi = span[0] / margin, span[1] * margin
    ends = [judge(c.value, v, pivot=pivot, within=within) for v in (lo, hi)]
    if "opposite" in ends or ends[0] == ends[1]:
        return None
    allowing = f", allowing the {margin - 1:.0%} a ratio of times moves between runs" if margin > 1 else ""
    # an end just off the pivot must not print as the pivot ("1× to 1.5× lies on the seed's side of 1×")
    lo_text = next(t for d in (3, 4, 5, 6, 17) if (t := _fmt(lo, unit, d)) != _fmt(pivot, unit) or d == 17)
    return Verdict(head + f"Same direction as the seed's finding, its size not placed: every value this run allows "
                   f"({lo_text} to {_fmt(hi, unit)}{allowing}) lies on the seed's side of {_fmt(pivot, unit)}, "
                   f"between '{ends[0]}' and '{ends[1]}'{note}.", "direction")


def _check_interval(interval, ours: float) -> tuple[float, float]:
    if not (isinstance(interval, (tuple, list)) and len(interval) == 2):
        raise TypeError(f"interval: expected (lo, hi), got {interval!r}")
    lo, hi = (float(v) for v in interval)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= ours * (1 + 1e-9) and hi >= ours * (1 - 1e-9)):
        raise ValueError(f"interval: expected finite (lo, hi) with lo <= ours = {ours:.4g} <= hi, got {interval!r}")
    return lo, hi


def _abstain(noise: Noise, ends, interval, unit: str, seed_value: float, pivot, within: float) -> str:
    """The line when the run cannot decide: what is wrong, and what can still be said."""
    head = "No verdict: " + "; ".join(noise.reasons)
    if ends is not None and not noise.notes and not noise.biased:
        lo, hi = interval
        options = " and ".join(f"'{o}' (at {_fmt(v, unit)})" for o, v in zip(ends, (lo, hi)))
        return head + (f".  Ours lies between {_fmt(lo, unit)} and {_fmt(hi, unit)}, which allows {options} "
                       "-- more rounds, on a quieter machine, would decide.")
    if noise.said:
        return head + ".  What can be said: " + "; ".join(noise.said) + "."
    return head + " -- re-run when the machine is quiet."
