"""The one exception every grader raises (teaching folder), in a module of its own so that any grader module
-- :mod:`.core`, :mod:`.shortcuts`, ... -- can import it without importing the others."""
from __future__ import annotations

__all__ = ["ExerciseFailed"]


class ExerciseFailed(AssertionError):
    """Raised by a check when a student's answer is wrong; the message explains how.

    In Jupyter only the message is shown -- not a traceback through the grader's code, whose
    frames say nothing useful to the student (and can give the answer away)."""

    def _render_traceback_(self):  # IPython calls this instead of formatting a traceback
        lines = str(self).splitlines() or [""]
        return [f"\x1b[31mExerciseFailed\x1b[0m: {lines[0]}"] + lines[1:]
