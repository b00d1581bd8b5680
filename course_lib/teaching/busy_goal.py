"""Issue 43's busy goal, counted on a replayed recording (teaching layer).

With one competing busy process per 2 cores (``yes > /dev/null``), the course aims at two things:

- the lines that time *one thread* or *count* something (``cores_used`` 1, or
  :data:`~course_lib.teaching.verdict_line.COUNTED`) conclude -- at least :data:`GOAL` of them -- since a
  one-thread timing on the thread's CPU clock, or a count, is what another program's load cannot inflate;
- the lines that time *threads or MPI ranks* (``cores_used`` > 1) abstain with a reason that names the held
  core ("other processes kept 1.0 core(s) busy", "threaded code ran while other processes held a core"):
  how much threaded code loses to a held core is what such a run cannot cancel.

A record that does not state ``cores_used`` (older recordings) is counted as "not stated", never guessed.
:func:`summary` is the line ``python -m course_lib replay`` prints per recording; it reads the records'
outcomes as recorded (what the run printed). Input: the checked records of one recording
(``{notebook: [replay.Checked]}``), of which only verdicts and goal verdicts count.
"""
from __future__ import annotations

import re

__all__ = ["GOAL", "ABSTAINED", "kind", "names_held_core", "tally", "summary"]

GOAL = 0.9                                   # the share of one-thread and counted lines that should conclude
ABSTAINED = ("unreliable", "cannot tell")    # the outcomes of a line that gave no verdict (as replay's)
HELD_CORE = re.compile(r"core\(s\) busy|held a core|waited for a core|kept cores busy|kept \d+(?:\.\d+)? cores? busy")


def kind(cores_used) -> str:
    """``"one-thread"``, ``"counted"``, ``"threaded"`` or ``"not stated"`` for a record's ``cores_used``."""
    if cores_used is None:
        return "not stated"
    if isinstance(cores_used, bool) or not isinstance(cores_used, int) or cores_used < 0:
        raise ValueError(f"cores_used: expected None or a number of cores >= 0, got {cores_used!r}")
    return {0: "counted", 1: "one-thread"}.get(cores_used, "threaded")


def names_held_core(text: str) -> bool:
    """Does an abstaining line (or its reason) name the core other programs held?"""
    return bool(HELD_CORE.search(text or ""))


def tally(checked_by_notebook: dict) -> dict:
    """Counts for :func:`summary`: ``single`` (one-thread and counted lines), ``single_concluded``,
    ``single_open`` (those that abstained: ``(notebook, cell, label, reason)``), ``threaded``,
    ``threaded_held`` (abstained naming the held core), ``threaded_other`` (the others: concluded, or abstained
    for another reason: ``(notebook, cell, label, outcome)``) and ``not_stated``."""
    out = {"single": 0, "single_concluded": 0, "single_open": [], "threaded": 0, "threaded_held": 0,
           "threaded_other": [], "not_stated": 0}
    for notebook, checked in checked_by_notebook.items():
        for c in checked:
            if c.kind not in ("verdict", "goal"):
                continue
            k = kind(c.cores_used)
            open_ = c.recorded in ABSTAINED
            if k == "not stated":
                out["not_stated"] += 1
            elif k == "threaded":
                out["threaded"] += 1
                if open_ and names_held_core(f"{c.line} {c.reason}"):
                    out["threaded_held"] += 1
                else:
                    out["threaded_other"].append((notebook, c.cell, c.label, c.recorded))
            else:
                out["single"] += 1
                if open_:
                    out["single_open"].append((notebook, c.cell, c.label, c.reason))
                else:
                    out["single_concluded"] += 1
    return out


def summary(checked_by_notebook: dict) -> str:
    """The busy-goal line of one recording, then one indented line per one-thread or counted line that
    abstained (with its reason) and per threaded line that did not abstain naming the held core."""
    t = tally(checked_by_notebook)
    share = f" ({t['single_concluded'] / t['single']:.0%})" if t["single"] else ""
    head = (f"one-thread and counted lines: {t['single_concluded']} of {t['single']} concluded{share} (goal >= "
            f"{GOAL:.0%} under one busy process per 2 cores); threaded/rank lines: {t['threaded_held']} of "
            f"{t['threaded']} abstained naming the held core; not stated: {t['not_stated']}")
    rows = [f"    open: {nb.replace('notebooks/', '')} cell {cell} {label}: {reason or 'no reason recorded'}"
            for nb, cell, label, reason in t["single_open"]]
    rows += [f"    threaded, {'concluded' if outcome not in ABSTAINED else 'abstained without naming it'}: "
             f"{nb.replace('notebooks/', '')} cell {cell} {label} ('{outcome}')"
             for nb, cell, label, outcome in t["threaded_other"]]
    return "\n".join([head, *rows])
