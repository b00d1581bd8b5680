"""Shortcuts a grader rejects by name (teaching folder): a student function that reaches the right numbers
by calling the course's own answer to the exercise (``softmax_rnn.forward`` for 7.3, ``newton.newton_step``
for 11.5, ...) skips the structure the exercise teaches.

``check_no_shortcut(exercise, student, forbidden, *args, **kwargs)`` calls ``student(*args, **kwargs)`` once
while a profile hook (``sys.setprofile``, and ``threading.setprofile`` for the threads it starts) watches for
calls of the functions in ``forbidden`` (``{"name to show": function}``) -- by their code objects, so
``from course_lib... import f`` and aliases are seen too -- and raises :class:`~.core.ExerciseFailed`
naming the first one::

    Exercise 7.3 failed: your function calls softmax_rnn.forward, the course's own answer to this exercise;
      the numbers come out right, but the structure the exercise teaches is skipped

A grader calls it *after* its numbers and structure checks, so that a wrong answer built on a course
function still gets the message about what is wrong. Only plain Python functions can be watched (a
compiled numba function makes no Python call); the course's answers to these exercises are Python
functions. The hook costs time, so it never watches a timed call.
"""
from __future__ import annotations

import inspect
import sys
import threading
from typing import Callable

from .failed import ExerciseFailed

__all__ = ["check_no_shortcut", "calls_made"]


class _Taken(BaseException):
    """Raised inside the student's call at the first forbidden call; a BaseException, so that a student's
    ``except Exception`` does not swallow it."""


def _codes(forbidden: dict[str, Callable]) -> dict:
    out = {}
    for name, fn in forbidden.items():
        fn = inspect.unwrap(getattr(fn, "py_func", fn))
        code = getattr(fn, "__code__", None)
        if code is None:
            raise TypeError(f"forbidden: {name!r} is not a Python function (got {type(fn).__name__})")
        out[code] = name
    return out


def calls_made(fn: Callable, forbidden: dict[str, Callable], *args, **kwargs) -> list[str]:
    """The names (keys of ``forbidden``) of the watched functions ``fn(*args, **kwargs)`` called, in order of
    the first call; the run stops at the first one (what ``fn`` raises otherwise is let through)."""
    codes = _codes(forbidden)
    taken: list[str] = []

    def hook(frame, event, arg):
        if event == "call":
            name = codes.get(frame.f_code)
            if name is not None:
                taken.append(name)      # also seen when a worker thread's exception gets lost
                raise _Taken(name)

    old, old_threads = sys.getprofile(), threading.getprofile()
    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        fn(*args, **kwargs)
    except _Taken:
        pass
    except Exception:
        if not taken:
            raise
    finally:
        sys.setprofile(old)
        threading.setprofile(old_threads)
    return taken


def check_no_shortcut(exercise: str, student: Callable, forbidden: dict[str, Callable], *args,
                      hint: str = "", **kwargs) -> None:
    """Call ``student(*args, **kwargs)`` once under watch; raise :class:`ExerciseFailed` naming the first
    function of ``forbidden`` it called (see the module doc)."""
    try:
        taken = calls_made(student, forbidden, *args, **kwargs)
    except NotImplementedError:
        raise
    except Exception:       # the numbers were judged before; an error here is not a shortcut
        return
    if taken:
        raise ExerciseFailed(
            f"Exercise {exercise} failed:\n  your numbers are right, but your function calls {taken[0]}, the "
            "course's own answer to this exercise: the structure the exercise teaches is skipped"
            + (f"\n  Hint: {hint}" if hint else "\n  Hint: write the computation yourself with numpy (the course "
               "functions the worksheet gives you for this exercise are fine)."))
