"""Exercise graders (teaching folder).

A check runs the student's function against the reference implementation on several small,
seeded cases. On success it prints one stable line that nbval compares::

    Exercise 1.2 passed: 5/5 cases

On failure it raises :class:`ExerciseFailed` whose message says *what* is wrong: the case,
which output (or which field, e.g. ``grads.Whh``), the first index where it differs -- read as
a time step for time-major arrays -- the relative error, and a hint::

    Exercise 2.1 failed on case 2/5 (X (6, 3, 4), Y (6, 3, 2)):
      output 'Whh' differs from the reference: first at index (1, 3); max relative error 4.1e-01
      got -0.0213, expected 0.0177 (rtol 1e-05, atol 1e-06); 9 of 16 entries differ
      Hint: ...

A ``NotImplementedError`` from an unsolved exercise is let through unchanged, so a fresh
worksheet still runs top to bottom with only those errors.

Typical use in a worksheet::

    checks.check_function("1.2", my_forward, rnn.forward_step,
                          cases=lambda rng, i: dict(x=rng.standard_normal((2, 3)), ...),
                          n_cases=5, output_names=["h"])
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ...core.params import Params
from ...core.timing import loglog_slope
from .failed import ExerciseFailed

__all__ = [
    "ExerciseFailed",
    "Passed",
    "Case",
    "compare_outputs",
    "check_function",
    "check_value",
    "check_true",
    "check_slope",
    "passed",
    "CountedArray",
    "counted",
    "count_products",
    "copy_inputs",
    "explain_error",
    "changed_inputs",
    "case_label",
]


def _placeholder_handler(shell, etype, value, tb, tb_offset=None):
    """IPython handler: an unsolved exercise's ``NotImplementedError("Exercise N.k: ...")`` shows
    as one line; any other NotImplementedError keeps its full traceback."""
    text = str(value)
    if text.startswith("Exercise "):
        stb = [f"\x1b[33mNotImplementedError\x1b[0m: {text} (this exercise is still to do)"]
    else:
        stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    shell._showtraceback(etype, value, stb)  # IPython does not display what a custom handler returns
    return stb


def install_ipython_display() -> bool:
    """Show unsolved-exercise placeholders as one line in a running IPython kernel (no-op elsewhere).

    Called when the graders are imported; returns whether a kernel was found."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with Jupyter
        return False
    shell = get_ipython()
    if shell is None:
        return False
    shell.set_custom_exc((NotImplementedError,), _placeholder_handler)
    return True


class Passed(str):
    """The success line, returned by checks. It is printed once by the check; as the last
    expression of a cell it displays nothing more (so nbval sees one stable line)."""

    def _ipython_display_(self):
        pass


@dataclasses.dataclass
class Case:
    """One test case: the arguments to call both functions with, and a short label."""

    kwargs: dict
    label: str = ""
    args: tuple = ()


def passed(exercise: str, n_ok: int | None = None, total: int | None = None) -> str:
    """Print and return the stable success line."""
    line = Passed(f"Exercise {exercise} passed" + (f": {n_ok}/{total} cases" if total is not None else ""))
    print(line)
    return line


# --------------------------------------------------------------------------- comparing
def _describe_arg(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{tuple(value.shape)}" if value.ndim else f"{value.item():.4g}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value).__name__
    if isinstance(value, (int, float, str, bool)) or value is None:
        return repr(value)
    return type(value).__name__


def _label(case: Case) -> str:
    if case.label:
        return case.label
    parts = [_describe_arg(a) for a in case.args]
    parts += [f"{k} {_describe_arg(v)}" for k, v in case.kwargs.items()]
    return ", ".join(parts)


def _flatten(value: Any, name: str) -> list[tuple[str, Any]]:
    """Turn nested outputs (tuples, dicts, parameters, dataclasses) into (name, leaf) pairs."""
    if isinstance(value, Params):  # the parameter protocol: its arrays, by name
        return [(f"{name}.{n}" if name else n, a) for n, a in zip(value.names(), value.arrays())]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = []
        for f in dataclasses.fields(value):
            out += _flatten(getattr(value, f.name), f"{name}.{f.name}" if name else f.name)
        return out
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            out += _flatten(v, f"{name}[{k!r}]" if name else str(k))
        return out
    if isinstance(value, (tuple, list)) and not _is_numeric_sequence(value):
        out = []
        for i, v in enumerate(value):
            out += _flatten(v, f"{name}[{i}]")
        return out
    return [(name, value)]


def _is_numeric_sequence(value) -> bool:
    return len(value) > 0 and all(isinstance(v, (int, float, np.number)) for v in value)


def compare_outputs(got: Any, expected: Any, *, name: str = "output", rtol: float = 1e-5,
                    atol: float = 1e-6, time_axis: int | None = 0, time_name: str = "time step") -> str | None:
    """Return ``None`` when ``got`` matches ``expected`` (recursively), else a message saying
    which part differs, where first (as a ``time_name`` along ``time_axis``), and by how much."""
    got_leaves = _flatten(got, name)
    exp_leaves = _flatten(expected, name)
    if len(got_leaves) != len(exp_leaves):
        return (f"'{name}' has the wrong structure: expected {len(exp_leaves)} part(s) "
                f"({', '.join(n for n, _ in exp_leaves)}), got {len(got_leaves)}")
    for (_gname, g), (ename, e) in zip(got_leaves, exp_leaves):
        msg = _compare_leaf(g, e, ename, rtol, atol, time_axis, time_name)
        if msg:
            return msg
    return None


def _compare_leaf(g, e, name, rtol, atol, time_axis, time_name) -> str | None:
    if e is None or isinstance(e, (str, bool)):
        if g != e:
            return f"'{name}': expected {e!r}, got {g!r}"
        return None
    if isinstance(e, (int, np.integer)) and not isinstance(e, bool) and not isinstance(g, (float, np.floating)):
        try:
            if int(g) != int(e):
                return f"'{name}': expected {e}, got {g}"
        except (TypeError, ValueError):
            return f"'{name}': expected the integer {e}, got {type(g).__name__} {g!r}"
        return None
    try:
        garr = np.asarray(g)
    except Exception:
        return f"'{name}': expected an array-like, got {type(g).__name__}"
    earr = np.asarray(e)
    if garr.dtype == object:
        return f"'{name}': expected a numeric array, got {type(g).__name__}"
    if garr.shape != earr.shape:
        return f"'{name}' has shape {tuple(garr.shape)}, expected {tuple(earr.shape)}"
    if earr.size == 0:
        return None
    gf = garr.astype(np.float64)
    ef = earr.astype(np.float64)
    if not np.all(np.isfinite(gf)):
        bad = np.unravel_index(int(np.argmin(np.isfinite(gf).ravel())), gf.shape) if gf.ndim else ()
        where = _where(bad, time_axis, time_name)
        return f"'{name}' contains NaN or inf, first at index {where}"
    close = np.isclose(gf, ef, rtol=rtol, atol=atol)
    if close.all():
        return None
    first = np.unravel_index(int(np.argmin(close.ravel())), gf.shape) if gf.ndim else ()
    scale = max(float(np.max(np.abs(ef))), atol, 1e-300)
    rel = float(np.max(np.abs(gf - ef))) / scale
    n_bad = int(close.size - close.sum())
    if gf.ndim == 0:
        return (f"'{name}' differs from the reference: got {float(gf):.6g}, expected {float(ef):.6g}; "
                f"relative error {rel:.2e} (rtol {rtol:g}, atol {atol:g})")
    return (f"'{name}' differs from the reference: first at index {_where(first, time_axis, time_name)}; "
            f"max relative error {rel:.2e}\n  got {gf[first]:.6g}, expected {ef[first]:.6g} "
            f"(rtol {rtol:g}, atol {atol:g}); {n_bad} of {close.size} entries differ")


def _where(index: tuple, time_axis: int | None, time_name: str) -> str:
    idx = tuple(int(i) for i in index)
    if time_axis is not None and len(idx) > max(time_axis, 0) and len(idx) >= 2:
        return f"{idx} ({time_name} {idx[time_axis]})"
    return str(idx)


# --------------------------------------------------------------------------- checking
def _as_cases(cases, n_cases: int, seed: int) -> list[Case]:
    if callable(cases):
        rng = np.random.default_rng(seed)
        made = [cases(rng, i) for i in range(n_cases)]
    else:
        made = list(cases)
    out = []
    for c in made:
        if isinstance(c, Case):
            out.append(c)
        elif isinstance(c, dict):
            out.append(Case(kwargs=c))
        else:
            raise TypeError(f"cases: expected Case objects or dicts of keyword arguments, got {type(c).__name__}")
    if not out:
        raise ValueError("cases: expected at least one case, got none")
    return out


def _copy_args(case: Case) -> Case:
    """Give each function its own copies, so an in-place student function cannot change
    what the reference sees."""
    def cp(v):
        if isinstance(v, (np.ndarray, Params)):
            return v.copy()
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return dataclasses.replace(v, **{f.name: cp(getattr(v, f.name)) for f in dataclasses.fields(v)})
        return v

    return Case({k: cp(v) for k, v in case.kwargs.items()}, case.label, tuple(cp(a) for a in case.args))


def check_function(
    exercise: str,
    student: Callable,
    reference: Callable,
    cases: Iterable | Callable,
    *,
    n_cases: int = 5,
    seed: int = 0,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    output_names: Sequence[str] | None = None,
    time_axis: int | None = 0,
    time_name: str = "time step",
    hint: str = "",
    quiet: bool = False,
    inputs_unchanged: bool = False,
    forbidden: dict | None = None,
) -> str:
    """Compare ``student(**case)`` with ``reference(**case)`` on every case.

    ``cases`` is a list of dicts / :class:`Case` objects, or ``make_case(rng, i)`` called
    ``n_cases`` times with a generator seeded by ``seed``. ``output_names`` names the parts
    of a tuple result. ``inputs_unchanged``: fail when the student's function modified one of its
    array arguments in place. ``forbidden`` (``{"name to show": function}``): once the numbers are right, fail
    when the student's function calls one of these -- the course's own answer to the exercise
    (:func:`.shortcuts.check_no_shortcut`, on a copy of the first case). Returns (and prints) the success
    line; raises :class:`ExerciseFailed`.

    The one dtype rule of the course: a float64 result where the reference returns float32 passes
    (the numbers are right) with a note on the success line -- it moves twice the bytes.
    """
    if not callable(student):
        raise ExerciseFailed(f"Exercise {exercise}: expected a function, got {type(student).__name__}")
    case_list = _as_cases(cases, n_cases, seed)
    total = len(case_list)
    notes = []
    for i, case in enumerate(case_list, start=1):
        expected = reference(*_copy_args(case).args, **_copy_args(case).kwargs)
        mine = _copy_args(case)
        pristine = _copy_args(case)
        try:
            got = student(*mine.args, **mine.kwargs)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise ExerciseFailed(
                f"Exercise {exercise} failed on case {i}/{total} ({_label(case)}):\n"
                f"  your function raised {type(exc).__name__}: {exc}{explain_error(exc)}"
                + (f"\n  Hint: {hint}" if hint else "")
            ) from exc
        if inputs_unchanged:
            changed = _changed_inputs(mine, pristine)
            if changed:
                raise ExerciseFailed(
                    f"Exercise {exercise} failed on case {i}/{total} ({_label(case)}):\n  your function changed its "
                    f"input {changed} in place; work on a copy (or into a new array) and leave the inputs as they were")
        note = _dtype_note(got, expected)
        if note and note not in notes:
            notes.append(note)
        if output_names is not None and isinstance(expected, tuple):
            if not isinstance(got, tuple) or len(got) != len(expected):
                n = len(got) if isinstance(got, tuple) else 1
                raise ExerciseFailed(
                    f"Exercise {exercise} failed on case {i}/{total} ({_label(case)}):\n"
                    f"  expected a tuple of {len(expected)} outputs ({', '.join(output_names)}), got {n}"
                )
            got = dict(zip(output_names, got))
            expected = dict(zip(output_names, expected))
            name = ""
        else:
            name = output_names[0] if output_names else "output"
        msg = compare_outputs(got, expected, name=name, rtol=rtol, atol=atol, time_axis=time_axis,
                              time_name=time_name)
        if msg:
            raise ExerciseFailed(
                f"Exercise {exercise} failed on case {i}/{total} ({_label(case)}):\n  {msg}"
                + (f"\n  Hint: {hint}" if hint else "")
            )
    if forbidden:
        from .shortcuts import check_no_shortcut  # shortcuts imports this module: imported here, when needed

        first = _copy_args(case_list[0])
        check_no_shortcut(exercise, student, forbidden, *first.args, **first.kwargs)
    line = Passed(f"Exercise {exercise} passed: {total}/{total} cases" + "".join(f" ({n})" for n in notes))
    if not quiet:
        print(line)
    return line


def _changed_inputs(after: Case, before: Case) -> str:
    """Name of the first array argument whose values differ after the call ("" if none)."""
    pairs = [(f"argument {k + 1}", a, b) for k, (a, b) in enumerate(zip(after.args, before.args))]
    pairs += [(name, after.kwargs[name], before.kwargs[name]) for name in before.kwargs]
    for name, a, b in pairs:
        for sub_a, sub_b, label in _arrays_in(a, b, name):
            if sub_a.shape != sub_b.shape or not np.array_equal(sub_a, sub_b, equal_nan=True):
                return label
    return ""


def _arrays_in(a, b, name):
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        yield a, b, name
    elif isinstance(a, Params) and isinstance(b, Params):
        for n, sub_a, sub_b in zip(a.names(), a.arrays(), b.arrays()):
            yield sub_a, sub_b, f"{name}.{n}"
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        for f in dataclasses.fields(a):
            yield from _arrays_in(getattr(a, f.name), getattr(b, f.name), f"{name}.{f.name}")


def explain_error(exc: BaseException) -> str:
    """A sentence (starting with a newline) that explains an error whose own message misleads; "" otherwise.

    numba compiles ``np.dot``, ``@`` and ``np.linalg`` inside an ``@njit`` function to calls into SciPy's
    BLAS/LAPACK, and says only "scipy 0.16+ is required for linear algebra" where SciPy is missing."""
    text = str(exc)
    if isinstance(exc, ImportError) and "scipy" in text and "required" in text:
        return ("\n  (numba compiles np.dot, @ and np.linalg inside an @njit function to calls into SciPy's BLAS, and "
                "SciPy is not installed here: write the products as loops -- the exercise asks for the loops anyway "
                "-- or install scipy)")
    return ""


def copy_inputs(case: Case) -> Case:
    """A copy of ``case`` whose arrays (and parameters, dataclasses of arrays) are the function's own."""
    return _copy_args(case)


def changed_inputs(after: Case, before: Case) -> str:
    """Name of the first array argument of ``after`` whose values differ from ``before`` ("" if none)."""
    return _changed_inputs(after, before)


def case_label(case: Case) -> str:
    """The short description of a case used in messages (its label, else its arguments' shapes)."""
    return _label(case)


def _dtype_note(got, expected) -> str:
    gs = [g for g in (got if isinstance(got, tuple) else (got,)) if isinstance(g, np.ndarray)]
    es = [e for e in (expected if isinstance(expected, tuple) else (expected,)) if isinstance(e, np.ndarray)]
    if any(g.dtype == np.float64 and e.dtype == np.float32 for g, e in zip(gs, es)):
        return "note: your result is float64 where the reference is float32 -- right numbers, twice the bytes"
    return ""


def check_value(exercise: str, got: Any, expected: Any, *, name: str = "answer", rtol: float = 1e-5,
                atol: float = 1e-6, time_axis: int | None = 0, hint: str = "") -> str:
    """Compare one value (array, number, tuple, dataclass) with the expected one."""
    if got is NotImplemented or got is Ellipsis:
        raise NotImplementedError(f"Exercise {exercise}: not answered yet")
    msg = compare_outputs(got, expected, name=name, rtol=rtol, atol=atol, time_axis=time_axis)
    if msg:
        raise ExerciseFailed(f"Exercise {exercise} failed:\n  {msg}" + (f"\n  Hint: {hint}" if hint else ""))
    return passed(exercise)


def check_true(exercise: str, condition: bool, message: str, *, hint: str = "") -> str:
    """Pass when ``condition`` holds; otherwise fail with ``message``."""
    if not condition:
        raise ExerciseFailed(f"Exercise {exercise} failed:\n  {message}" + (f"\n  Hint: {hint}" if hint else ""))
    return passed(exercise)


def check_slope(exercise: str, sizes: Sequence[float], times: Sequence[float], expected: float, *,
                tol: float = 0.35, what: str = "time", hint: str = "") -> str:
    """Fit the log-log slope of ``times`` against ``sizes`` and require it near ``expected``
    (e.g. 1 for O(N), 2 for O(N^2)). Prints the fitted slope rounded to the tolerance band."""
    sizes = np.asarray(sizes, dtype=float)
    times = np.asarray(times, dtype=float)
    if sizes.shape != times.shape or sizes.size < 3:
        raise ExerciseFailed(
            f"Exercise {exercise} failed:\n  expected at least 3 (size, {what}) pairs of equal length, "
            f"got {sizes.size} sizes and {times.size} {what}s")
    if np.any(times <= 0) or np.any(sizes <= 0):
        raise ExerciseFailed(f"Exercise {exercise} failed:\n  sizes and {what}s must be positive")
    slope = loglog_slope(sizes, times)
    if not math.isfinite(slope) or abs(slope - expected) > tol:
        raise ExerciseFailed(
            f"Exercise {exercise} failed:\n  the fitted log-log slope of {what} vs size is {slope:.2f}, "
            f"expected {expected:g} +- {tol:g}" + (f"\n  Hint: {hint}" if hint else ""))
    return passed(exercise)


# --------------------------------------------------------------------------- counting products
# Structural checks ("one GEMM per step", "products do not grow with B") count the matrix products
# that read a weight: wrap the weights with counted() and call the student's function through
# count_products().
_PRODUCT_FUNCS = {np.dot, np.inner, np.tensordot, np.einsum, np.vdot, np.outer, np.kron, np.linalg.multi_dot}
_VIEW_FUNCS = {np.concatenate, np.stack, np.hstack, np.vstack, np.copy, np.transpose, np.block, np.swapaxes,
               np.moveaxis, np.reshape, np.squeeze, np.expand_dims, np.atleast_2d, np.broadcast_to}


def _strip(v):
    if isinstance(v, CountedArray):
        return v.view(np.ndarray)
    if isinstance(v, (list, tuple)):
        return type(v)(_strip(u) for u in v)
    return v


class CountedArray(np.ndarray):
    """A weight matrix that counts the matrix products it takes part in (``@``, ``np.matmul``,
    ``np.dot``, ``np.einsum``, ``.dot`` ...) in ``CountedArray.log`` while :func:`count_products` runs.

    Views, transposes, copies and concatenations of it count too; the results of arithmetic are plain
    arrays, so only products that read a weight are counted (in an RNN every product reads one)."""

    log: list | None = None

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = _strip(tuple(kwargs["out"]))
        if ufunc is np.matmul and CountedArray.log is not None:
            CountedArray.log.append(("matmul",) + tuple(np.shape(v) for v in inputs))
        return getattr(ufunc, method)(*_strip(inputs), **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        out = func(*_strip(args), **{k: _strip(v) for k, v in kwargs.items()})
        if func in _PRODUCT_FUNCS:
            if CountedArray.log is not None:
                CountedArray.log.append((func.__name__,))
            return out
        if func in _VIEW_FUNCS and isinstance(out, np.ndarray):
            return out.view(CountedArray)
        return out

    def dot(self, other, out=None):
        if CountedArray.log is not None:
            CountedArray.log.append(("dot",))
        return np.dot(self.view(np.ndarray), _strip(other), out=_strip(out))


def counted(a) -> CountedArray:
    """A counting view of the array ``a``."""
    return np.asarray(a).view(CountedArray)


def count_products(fn, *args, **kwargs) -> tuple[int, object]:
    """``(number of counted products, result)`` of ``fn(*args, **kwargs)`` (pass weights made with
    :func:`counted`)."""
    CountedArray.log = []
    try:
        out = fn(*args, **kwargs)
        return len(CountedArray.log), out
    finally:
        CountedArray.log = None



