"""The :class:`Verdict` type: a printable verdict line that carries its outcome (teaching layer).

Its own module so that both :mod:`course_lib.teaching.verdict` (which compares a claim's number with
ours) and the claims registry (seed 004's goals, which have no number) can return one while the
imports point one way: verdict -> claims -> claims.seed004 -> verdict_line.
"""
from __future__ import annotations

__all__ = ["Verdict"]


class Verdict(str):
    """A printable verdict line that also carries its outcome for code and tests.

    ``outcome`` is one of ``"agrees"``, ``"smaller"``, ``"larger"``, ``"opposite"``, ``"none"`` (no clear effect
    either side of the pivot, see :data:`course_lib.teaching.verdict.NO_EFFECT`), ``"unreliable"``;
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
