"""The :class:`Verdict` type: a printable verdict line that carries its outcome (teaching layer).

Its own module so that both :mod:`course_lib.teaching.verdict` (which compares a claim's number with
ours) and the claims registry (seed 004's goals, which have no number) can return one while the
imports point one way: verdict -> claims -> claims.seed004 -> verdict_line.
"""
from __future__ import annotations

__all__ = ["Verdict", "COUNTED", "check_cores_used"]

COUNTED = 0
"""``cores_used=COUNTED`` (0): the judged quantity is counted or modelled, not timed (a cache model's hit rate, a
work/span model's speed-up, a count of FLOPs) -- no core ran it, so no load can slow it. Otherwise ``cores_used``
is how many cores the timed code ran on (1: one thread; the thread or rank count of threaded code); None: not
stated (recordings made before issue 43 stated nothing)."""


def check_cores_used(cores_used) -> int | None:
    """``cores_used`` checked: None, :data:`COUNTED` (0) or a number of cores >= 1 (ValueError naming it otherwise)."""
    if cores_used is None:
        return None
    if isinstance(cores_used, bool) or not hasattr(cores_used, "__index__") or int(cores_used) < 0:
        raise ValueError(f"cores_used: expected a number of cores >= 1, 0 (COUNTED: counted or modelled, not "
                         f"timed) or None (not stated), got {cores_used!r}")
    return int(cores_used)


class Verdict(str):
    """A printable verdict line that also carries its outcome for code and tests.

    ``outcome`` is one of ``"agrees"``, ``"smaller"``, ``"larger"``, ``"opposite"``, ``"none"`` (no clear effect
    either side of the pivot, see :data:`course_lib.teaching.verdict.NO_EFFECT`), ``"direction"`` (the seed's
    direction, its size not placed: every allowed value lies in one of two neighbouring bands on the seed's
    side), ``"unreliable"``;
    ``reason`` is the explanation chosen (or "")."""

    outcome: str
    reason: str

    def __new__(cls, text: str, outcome: str, reason: str = ""):
        obj = super().__new__(cls, text)
        obj.outcome = outcome
        obj.reason = reason
        return obj

    @property
    def agrees(self) -> bool:
        return self.outcome == "agrees"
