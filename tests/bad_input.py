"""Bad-input properties shared by the module tests of issue 29 (``from bad_input import ...``): a public
function given one bad argument either raises a clear error that names that argument, or returns the
correct result -- never a raw numpy error, a silent wrong answer or a hang.

``clear_or_correct(fn, name, kwargs, correct=None)`` calls ``fn(**kwargs)``; a ValueError, TypeError or
KeyError must name ``name`` (as ``raises_naming`` accepts: ``name:``, ``name,``, ``name[i]:`` or the message
starts with it); a return is only allowed when ``correct`` is given, and ``correct(result)`` must hold.
``fails_fast(fn, *args, limit=2.0, **kw)`` runs the call in a daemon thread and returns the exception it
raised within ``limit`` seconds (a hang, or a loop bounded only after minutes, fails the test);
``finishes_fast`` the same for a call that must return (a closed form) within ``limit``.
The strategies draw what students pass by mistake: non-sizes, non-numbers, absurd sizes, bad arrays.
"""
from __future__ import annotations

import math
import threading

import numpy as np
from hypothesis import strategies as st

#: anything that is not a usable size (>= 1): zero and negatives, floats (nan, inf, 2.5), strings, None, bools
NOT_SIZE = st.one_of(st.integers(-10**12, 0), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3),
                     st.none(), st.booleans(), st.just(np.bool_(True)), st.just(3.0))
#: sizes far beyond what any machine holds or finishes (must be refused up front, naming the argument)
HUGE = st.one_of(st.integers(10**10, 10**18), st.just(2**62))
#: not a finite, non-negative number
BAD_NUMBER = st.one_of(st.just(math.nan), st.just(math.inf), st.just(-math.inf), st.floats(max_value=-1e-6),
                       st.text(max_size=3), st.none(), st.just([1.0]))
#: not a count of timed repeats
BAD_REPEAT = st.one_of(NOT_SIZE, st.integers(10**4, 10**12))
#: not a seed
BAD_SEED = st.one_of(st.integers(max_value=-1), st.floats(allow_nan=True), st.text(max_size=3), st.none())
#: not a list of sizes
BAD_SIZES = st.one_of(st.just([]), st.just(()), st.lists(st.integers(-5, 0), min_size=1, max_size=3),
                      st.just("abc"), st.none(), st.just(3), st.just([2.5]), st.just([10**15]))


def names(msg: str, name: str) -> bool:
    """Whether an error message names the argument ``name``."""
    return (msg.startswith(name) or f"{name}:" in msg or f"{name}," in msg or f"{name}[" in msg
            or f"{name} " in msg.split(":")[0])


def clear_or_correct(fn, name: str, kwargs: dict, correct=None):
    """See the module docstring. Returns the result (None when it raised)."""
    try:
        out = fn(**kwargs)
    except (ValueError, TypeError, KeyError) as exc:
        msg = str(exc)
        assert names(msg, name), f"{fn.__name__}({name}={kwargs.get(name)!r:.60}): unclear {type(exc).__name__}: {msg}"
        return None
    assert correct is not None, f"{fn.__name__} accepted the bad {name}={kwargs.get(name)!r:.60} and returned {out!r:.80}"
    assert correct(out), f"{fn.__name__}({name}={kwargs.get(name)!r:.60}) returned a wrong result {out!r:.80}"
    return out


def bad_arrays(shape, dtype=np.float64):
    """Arrays wrong for a ``shape`` argument: NaN / inf inside, an empty axis, an integer dtype, one axis
    fewer, a string, None."""
    shape = tuple(shape)
    nan = np.ones(shape, dtype)
    nan.flat[0] = np.nan
    inf = np.ones(shape, dtype)
    inf.flat[-1] = np.inf
    empty = [np.zeros(shape[:i] + (0,) + shape[i + 1:], dtype) for i in range(len(shape))]
    return st.sampled_from([nan, inf, *empty, np.ones(shape, np.int64), np.ones(shape[:-1] or (1,), dtype), "abc", None])


def fails_fast(fn, *args, limit: float = 2.0, **kw) -> BaseException:
    """Run ``fn(*args, **kw)`` in a daemon thread; it must raise within ``limit`` seconds. Returns the exception."""
    box = _run_in_thread(fn, args, kw, limit)
    assert "exc" in box, f"{getattr(fn, '__name__', fn)} returned {box.get('out')!r:.80} instead of raising"
    return box["exc"]


def finishes_fast(fn, *args, limit: float = 2.0, **kw):
    """Run ``fn(*args, **kw)`` in a daemon thread; it must return within ``limit`` seconds. Returns the result."""
    box = _run_in_thread(fn, args, kw, limit)
    if "exc" in box:
        raise box["exc"]
    return box["out"]


def _run_in_thread(fn, args, kw, limit) -> dict:
    box: dict = {}

    def run():
        try:
            box["out"] = fn(*args, **kw)
        except BaseException as exc:  # handed to the test
            box["exc"] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(limit)
    assert not th.is_alive(), f"{getattr(fn, '__name__', fn)} still ran after {limit} s (a hang or an unbounded loop)"
    return box


#: :data:`NOT_SIZE` without None (for arguments whose default None means "choose for me")
NOT_SIZE_NN = NOT_SIZE.filter(lambda v: v is not None)


def case_test(cases: list, data) -> None:
    """One drawn case ``(fn, name, strategy, kwargs)``: ``fn(**kwargs, name=<drawn bad value>)`` must raise a clear
    error naming ``name`` (these tables list only values no function may accept)."""
    fn, name, strategy, kwargs = cases
    clear_or_correct(fn, name, {**kwargs, name: data.draw(strategy, label=name)})
