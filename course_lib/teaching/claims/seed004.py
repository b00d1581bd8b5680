"""Seed 004 (Pokharel & Mishra, "Parallelization of Inference on Recurrent Neural Networks"), chapter 07.

The seed is a project *proposal*: it states goals and one expectation, and it reports no measurement.
So it contributes no number to :data:`course_lib.teaching.claims.CLAIMS` (``ENTRIES`` is empty, on
purpose: a number here would be invented). What chapter 07 checks instead are the seed's goals and its
expectation, quoted verbatim in :data:`GOALS` (a test checks the quotes against the seed text), each
answered by :func:`goal_verdict` from what the reader's machine measured.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...core.timing import Noise
from .. import record
from ..verdict_line import Verdict, check_cores_used

ENTRIES: dict = {}

GOALS = {
    "004.goal.openmp": dict(
        where="§7.1 (a), planned",
        quote="Achieve speedup through a parallel implementation of RNN forward pass computations using OpenMP"),
    "004.goal.cuda": dict(
        where="§7.1 (b), planned",
        quote="Achieve speedup through a parallel implementation of RNN forward pass computations using CUDA"),
    "004.goal.compare": dict(
        where="§7.1 (c), planned",
        quote="Compare and analyze speedups in both the OpenMP and CUDA implementations"),
    "004.goal.mpi": dict(
        where="§7.2 (a), hoped for",
        quote="Achieve speedup through a parallel implementation of RNN forward pass computations using MPI, "
              "and compare and analyze speedup to the CUDA and OpenMP implementations"),
    "004.expect.adjacent_steps": dict(
        where="§4 Background, expected",
        quote="If different threads were responsible for the forward-pass computations of adjacent time steps, "
              "there would need to communication of hidden-layer values that would inhibit speedup"),
    "004.question.shared_or_messages": dict(
        where="§5 The challenge, asked",
        quote="A salient topic to explore while implementing parallelization is whether this necessity is most "
              "efficiently met by using shared memory"),
}


def goal(gid: str) -> str:
    """One line: where in the seed, and its words (verbatim)."""
    if gid not in GOALS:
        raise KeyError(f"gid: no seed-004 goal {gid!r}; goals: {sorted(GOALS)}")
    g = GOALS[gid]
    return f"Seed 004, {g['where']}: \u201c{g['quote']}\u201d"


def goal_verdict(gid: str, *, holds: bool, ours: str, here: str = "this machine",
                 reasons: Sequence[tuple[bool, str]] = (), noise: Noise | None = None,
                 cores_used: int | None = None):
    """The verdict line for a goal or expectation without a number: whether it ``holds`` here (computed
    by the caller from measurements), what was measured (``ours``, printed by code), and when it does
    not hold, the first ``(condition, explanation)`` whose condition is true. An unreliable ``noise``
    (from :mod:`course_lib.core.timing`) means no conclusion. Returns a
    :class:`course_lib.teaching.verdict_line.Verdict` (outcome ``"agrees"``, ``"opposite"`` or ``"unreliable"``).
    ``cores_used``: what the measurement ran on, as in :func:`course_lib.teaching.verdict.verdict` (threads or
    ranks; 1; ``COUNTED``; None: not stated) -- recorded for the replay's busy-goal line."""
    if not isinstance(holds, (bool, np.bool_)):
        raise TypeError(f"holds: expected a bool computed from the measurement, got {type(holds).__name__}")
    holds = bool(holds)
    if noise is not None and not isinstance(noise, Noise):
        raise TypeError(f"noise: expected a course_lib.core.timing.Noise, got {type(noise).__name__}")
    reasons = list(reasons)
    cores_used = check_cores_used(cores_used)
    line = _goal_line(gid, holds, ours, here, reasons, noise)
    record.verdict_made("goal", {"goal": gid, "holds": holds, "ours": ours, "here": here, "reasons": reasons,
                                 "noise": noise, "cores_used": cores_used}, line)
    return line


def _goal_line(gid: str, holds: bool, ours: str, here: str, reasons, noise: Noise | None):
    """The line of :func:`goal_verdict`, from its checked arguments."""
    head = f"{goal(gid)}.  Here ({here}): {ours}.  "
    if noise is not None and not noise.ok:
        why = "; ".join(noise.reasons)
        can = f".  What can be said: {'; '.join(noise.said)}." if noise.said else " -- re-run when the machine is quiet."
        return Verdict(head + f"No verdict: {why}{can}", "unreliable", why)
    if holds:
        return Verdict(head + "Holds here.", "agrees")
    why = next((text for cond, text in reasons if cond), "")
    return Verdict(head + "Does not hold here" + (f" -- {why}." if why else
                                                    " -- no fact measured here explains it."), "opposite", why)
