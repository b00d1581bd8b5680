"""Input validation shared by every public function in course_lib (core folder).

Every helper raises ``ValueError`` (or ``TypeError`` for the wrong kind of object) with a
message that names the argument, what was expected and what was given, e.g.::

    ValueError: X: expected shape (T, B, 8) with T >= 1, got (5, 3, 7)

Shapes are written as tuples whose entries are

* an ``int``     -- that exact size,
* ``None``       -- any size,
* a ``str``      -- a named size (``"T"``, ``"B"``): the same name must have the same size
  across all arrays checked with the same ``dims`` dictionary.

Only numpy is imported here.
"""
from __future__ import annotations

import math
import numbers
import os
from typing import Any, Iterable, Sequence

import numpy as np

__all__ = [
    "as_array",
    "check_array",
    "check_shape",
    "check_same_shape",
    "check_finite",
    "check_int",
    "check_positive_int",
    "check_float",
    "check_choice",
    "check_power_of_two",
    "check_dtype_float",
    "check_dtype",
    "check_bool",
    "check_callable",
    "check_str",
    "check_alloc",
    "max_bytes",
    "to_builtin",
    "check_numbers",
    "check_sizes",
    "check_alloc_of",
    "check_repeat",
    "check_nonempty",
    "MAX_REPEAT",
]

FLOAT_DTYPES = (np.float32, np.float64)


def _fmt_shape(shape: Sequence[Any]) -> str:
    parts = ["?" if s is None else str(s) for s in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def check_shape(x: np.ndarray, name: str, shape: Sequence[Any], dims: dict | None = None) -> None:
    """Check ``x.shape`` against a pattern (see module docstring); binds named sizes in ``dims``.

    >>> dims = {}
    >>> check_shape(np.zeros((5, 3, 8)), "X", ("T", "B", 8), dims); dims
    {'T': 5, 'B': 3}
    """
    if dims is None:
        dims = {}
    expected = tuple(shape)
    if x.ndim != len(expected):
        raise ValueError(
            f"{name}: expected a {len(expected)}-D array of shape {_fmt_shape(_describe(expected, dims))}, "
            f"got a {x.ndim}-D array of shape {tuple(x.shape)}"
        )
    for axis, (want, got) in enumerate(zip(expected, x.shape)):
        if want is None:
            continue
        if isinstance(want, str):
            if want in dims and dims[want] != got:
                raise ValueError(
                    f"{name}: expected shape {_fmt_shape(_describe(expected, dims))} "
                    f"(axis {axis} is {want} = {dims[want]}), got {tuple(x.shape)}"
                )
            dims.setdefault(want, got)
        elif int(want) != got:
            raise ValueError(
                f"{name}: expected shape {_fmt_shape(_describe(expected, dims))}, got {tuple(x.shape)}"
            )


def _describe(shape, dims):
    return tuple(f"{s}={dims[s]}" if isinstance(s, str) and s in dims else s for s in shape)


def check_dtype_float(x: np.ndarray, name: str) -> None:
    """Require float32 or float64 (integers and float16 are rejected, not silently cast)."""
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name}: expected a float32 or float64 array, got dtype {x.dtype}")


def check_finite(x: np.ndarray, name: str) -> None:
    """Reject NaN and +-inf, saying where the first one is."""
    with np.errstate(all="ignore"):   # a sum of huge finite values may overflow: then the element check decides
        if np.isfinite(x.sum()):      # NaN and inf survive any sum: a finite sum clears every element, no mask made
            return
    finite = np.isfinite(x)
    if not finite.all():
        idx = np.unravel_index(int(np.argmin(finite.ravel())), x.shape) if x.ndim else ()
        bad = x[idx] if x.ndim else x
        n_bad = int(x.size - finite.sum())
        raise ValueError(f"{name}: contains {n_bad} non-finite value(s); the first is {bad} at index {tuple(int(i) for i in idx)}")


def as_array(x: Any, name: str) -> np.ndarray:
    """``np.asarray`` that turns 'not array-like' into a TypeError naming the argument."""
    if isinstance(x, np.ndarray):
        return x
    if x is None:
        raise TypeError(f"{name}: expected an array, got None")
    try:
        arr = np.asarray(x)
    except Exception as exc:  # pragma: no cover - numpy raises many kinds
        raise TypeError(f"{name}: expected an array, got {type(x).__name__}") from exc
    if arr.dtype == object:
        raise TypeError(f"{name}: expected a numeric array, got {type(x).__name__} of objects")
    return arr


def check_array(
    x: Any,
    name: str,
    *,
    shape: Sequence[Any] | None = None,
    ndim: int | Iterable[int] | None = None,
    dims: dict | None = None,
    dtype: Any = "float",
    finite: bool = True,
    min_size: dict | None = None,
    contiguous: bool = False,
) -> np.ndarray:
    """Validate an array argument and return it as an ``np.ndarray`` (no copy unless needed).

    Parameters
    ----------
    shape : pattern, see :func:`check_shape`.
    ndim : allowed number(s) of dimensions, when no ``shape`` is given.
    dims : shared dictionary of named sizes (so ``"T"`` must agree across arrays).
    dtype : ``"float"`` (float32/float64), a numpy dtype (exact), ``"int"`` or ``None`` (any).
    finite : reject NaN/inf.
    min_size : e.g. ``{"T": 1}``: named sizes that must be at least this large.
    contiguous : require C-contiguity (raise rather than silently copy).
    """
    arr = as_array(x, name)
    kind = dtype if isinstance(dtype, str) else None  # np.dtype("float64") == "float" is True in numpy
    if kind == "float":
        check_dtype_float(arr, name)
    elif kind == "int":
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"{name}: expected an integer array, got dtype {arr.dtype}")
    elif dtype is not None and arr.dtype != np.dtype(dtype):
        raise TypeError(f"{name}: expected dtype {np.dtype(dtype)}, got {arr.dtype}")
    if ndim is not None and shape is None:
        allowed = (ndim,) if isinstance(ndim, numbers.Integral) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(f"{d}-D" for d in allowed)
            raise ValueError(f"{name}: expected a {want} array, got shape {tuple(arr.shape)}")
    if dims is None:
        dims = {}
    if shape is not None:
        check_shape(arr, name, shape, dims)
    if min_size:
        for dim_name, low in min_size.items():
            axis = list(shape).index(dim_name) if shape is not None and dim_name in shape else None
            if axis is not None and arr.shape[axis] < low:
                raise ValueError(
                    f"{name}: {dim_name} (axis {axis}) must be >= {low}, got shape {tuple(arr.shape)}"
                )
    if contiguous and not arr.flags.c_contiguous:
        raise ValueError(f"{name}: expected a C-contiguous array (use np.ascontiguousarray), got strides {arr.strides}")
    if finite and arr.dtype.kind in "fc":
        check_finite(arr, name)
    return arr


def check_same_shape(a: np.ndarray, a_name: str, b: np.ndarray, b_name: str) -> None:
    """Two arrays must have identical shapes."""
    if a.shape != b.shape:
        raise ValueError(f"{b_name}: expected the same shape as {a_name} {tuple(a.shape)}, got {tuple(b.shape)}")


def check_int(value: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """An integer (bools rejected) in ``[low, high]``; returns it as ``int``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name}: expected an integer <= {high}, got {value}")
    return value


def check_positive_int(value: Any, name: str, *, high: int | None = None) -> int:
    """An integer >= 1 (and <= ``high`` when given)."""
    return check_int(value, name, low=1, high=high)


def check_float(value: Any, name: str, *, low: float | None = None, high: float | None = None,
                low_inclusive: bool = True, high_inclusive: bool = True) -> float:
    """A finite real number in a range; returns it as ``float``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name}: expected a finite number, got {value}")
    if low is not None and (value < low or (not low_inclusive and value == low)):
        op = ">=" if low_inclusive else ">"
        raise ValueError(f"{name}: expected a number {op} {low}, got {value}")
    if high is not None and (value > high or (not high_inclusive and value == high)):
        op = "<=" if high_inclusive else "<"
        raise ValueError(f"{name}: expected a number {op} {high}, got {value}")
    return value


def check_choice(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """``value`` must be one of ``choices``."""
    choices = tuple(choices)
    try:
        found = value in choices
    except Exception:
        found = False
    if not found:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name}: expected one of {listed}, got {value!r}")
    return value


def check_power_of_two(value: Any, name: str) -> int:
    """A positive integer power of two (1, 2, 4, ...)."""
    value = check_positive_int(value, name)
    if value & (value - 1):
        raise ValueError(f"{name}: expected a power of two, got {value}")
    return value


def check_dtype(dtype: Any, name: str = "dtype") -> np.dtype:
    """A float32 or float64 dtype (anything ``np.dtype`` understands); returns the ``np.dtype``."""
    try:
        dt = np.dtype(dtype)
    except Exception as exc:
        raise TypeError(f"{name}: expected float32 or float64, got {dtype!r}") from exc
    if dt not in FLOAT_DTYPES:
        raise TypeError(f"{name}: expected float32 or float64, got {dt}")
    return dt


def check_bool(value: Any, name: str) -> bool:
    """``True`` or ``False`` (numpy bools too); numbers and strings are a TypeError."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def check_callable(value: Any, name: str, what: str = "a function") -> Any:
    """Something callable."""
    if not callable(value):
        raise TypeError(f"{name}: expected {what}, got {type(value).__name__}")
    return value


def check_str(value: Any, name: str, *, nonempty: bool = True) -> str:
    """A ``str`` (non-empty unless ``nonempty=False``)."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, got {type(value).__name__} {value!r}")
    if nonempty and not value:
        raise ValueError(f"{name}: expected a non-empty string, got ''")
    return value


def max_bytes() -> int:
    """The largest single allocation the course allows: ``COURSE_MAX_BYTES`` when set, else half of
    this machine's physical memory (8 GiB when that is unknown)."""
    env = os.environ.get("COURSE_MAX_BYTES")
    if env:
        try:
            return max(1, int(float(env)))
        except ValueError:
            pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 8 * 2**30


def _fmt_bytes(n: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def check_alloc(shape: Sequence[Any], dtype: Any, name: str, *, what: str = "an array",
                limit: int | None = None) -> int:
    """Refuse, *before* allocating, an array of ``shape`` and ``dtype`` larger than :func:`max_bytes`.

    The ValueError names the argument that made it large and the memory it would need::

        ValueError: T: 10000000000 steps would need an array of shape (10000000001, 8, 16, 16) float64 = 149 TiB; the limit here is 31.4 GiB

    Returns the number of bytes it would take (Python ints: no overflow)."""
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise ValueError(f"{name}: expected sizes >= 0, got shape {tuple(dims)}")
    itemsize = np.dtype(dtype).itemsize
    nbytes = math.prod(dims) * itemsize
    limit = max_bytes() if limit is None else int(limit)
    if nbytes > limit:
        raise ValueError(
            f"{name}: too large: {what} of shape {tuple(dims)} {np.dtype(dtype).name} would need "
            f"{_fmt_bytes(nbytes)}; the limit here is {_fmt_bytes(limit)} (set COURSE_MAX_BYTES to change it)")
    return nbytes


def to_builtin(value: Any) -> Any:
    """Turn numpy scalars/arrays (also inside dicts, lists and tuples) into plain Python objects
    that ``json`` can write: ``np.int64(3)`` -> ``3``, ``np.float32(0.5)`` -> ``0.5``, arrays -> lists."""
    if isinstance(value, dict):
        return {to_builtin(k) if isinstance(k, np.generic) else k: to_builtin(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_builtin(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _as_list(values: Any, name: str, what: str) -> list:
    if isinstance(values, (str, bytes, dict)) or values is None or not hasattr(values, "__iter__"):
        raise TypeError(f"{name}: expected a list of {what}, got {type(values).__name__} {values!r}")
    out = list(np.asarray(values).ravel()) if isinstance(values, np.ndarray) else list(values)
    if not out:
        raise ValueError(f"{name}: expected a non-empty list of {what}, got an empty {type(values).__name__}")
    return out


def check_numbers(values: Any, name: str, *, low: float | None = None) -> list[float]:
    """A non-empty list (tuple, array) of finite real numbers, each ``>= low`` when given -> list of floats.

    >>> check_numbers((1, 2.5), "times")
    [1.0, 2.5]"""
    return [check_float(v, f"{name}[{i}]", low=low) for i, v in enumerate(_as_list(values, name, "numbers"))]


def check_sizes(values: Any, name: str, *, low: int = 1, high: int | None = None) -> list[int]:
    """A non-empty list (tuple, array) of integers in ``[low, high]`` -> list of ints (a sweep's sizes).

    >>> check_sizes([8, 16], "Ts")
    [8, 16]"""
    return [check_int(v, f"{name}[{i}]", low=low, high=high) for i, v in enumerate(_as_list(values, name, "sizes"))]


def check_alloc_of(dtype: Any, what: str = "an array", *, factor: int = 1, **sizes: Any) -> int:
    """:func:`check_alloc` for an array whose axes are the (already checked) integer arguments ``sizes``
    (in order, then ``factor`` as a last axis when it is not 1: 4 gates, 2 arrays); a too-large one is
    blamed on the largest argument, by name.

    >>> check_alloc_of(np.float32, "X", T=10, batch=4, n=8)
    1280"""
    name = max(sizes, key=lambda k: int(sizes[k]))
    shape = tuple(sizes.values()) + ((int(factor),) if factor != 1 else ())
    axes = ", ".join(list(sizes) + ([str(factor)] if factor != 1 else []))
    return check_alloc(shape, dtype, name, what=f"{what} ({axes})")


#: timed repeats a measurement may ask for: more would only look like a hang
MAX_REPEAT = 1000


def check_repeat(value: Any, name: str = "repeat", *, high: int = MAX_REPEAT) -> int:
    """A count of timed repeats (rounds, steps): an integer in ``[1, high]``."""
    return check_positive_int(value, name, high=high)


def check_nonempty(x: np.ndarray, name: str) -> np.ndarray:
    """No axis of ``x`` may be empty (a batch of 0 sequences, 0 steps): a mean over it would be NaN."""
    if 0 in x.shape:
        axis = x.shape.index(0)
        raise ValueError(f"{name}: axis {axis} is empty (shape {tuple(x.shape)}); expected at least one element there")
    return x


# ---- added for issue 29 (bad input in algorithms/ and models/) --------------------------------------------
#: the most passes over the data (epochs, training steps, iterations, samples) a course function accepts:
#: a larger count is a typo (1e10), refused up front rather than run for hours
MAX_COUNT = 10**6


def check_count(value: Any, name: str, *, low: int = 1, high: int = MAX_COUNT) -> int:
    """A loop count (epochs, steps, samples, levels, ...): an integer in ``[low, high]`` (default ``[1, MAX_COUNT]``),
    so an absurd value fails at once, naming the argument, instead of looping for hours."""
    return check_int(value, name, low=low, high=high)


def check_fields(obj: Any, name: str, shapes: dict, *, dims: dict | None = None, finite: bool = True) -> dict:
    """Validate the array attributes of a parameter object: ``shapes`` maps each field to a shape pattern
    (see :func:`check_shape`; named sizes must agree across fields through ``dims``); every field must be a
    float array, finite (unless ``finite=False``) and of the first field's dtype. Errors name
    ``name.field``, e.g. ``params.W_h: expected shape (nx=3, nh=4) ...``. Returns ``dims``."""
    dims = {} if dims is None else dims
    dtype = None
    for field, shape in shapes.items():
        if not hasattr(obj, field):
            raise TypeError(f"{name}: expected a field {field!r}, {type(obj).__name__} has none")
        arr = check_array(getattr(obj, field), f"{name}.{field}", shape=shape, dims=dims, finite=finite)
        if dtype is None:
            dtype = arr.dtype
        elif arr.dtype != dtype:
            first = next(iter(shapes))
            raise TypeError(f"{name}.{field}: expected dtype {dtype} like {name}.{first}, got {arr.dtype}")
    return dims


def check_ids(ids: Any, name: str, vocab: int, *, ndim: int | Iterable[int] | None = None,
              shape: Sequence[Any] | None = None, dims: dict | None = None, what: str = "ids") -> np.ndarray:
    """An integer array of token ids (or class labels: ``what="labels"``) in ``[0, vocab)``; the error names
    the argument and the offending range, e.g. ``y: labels must be in [0, 2), got range [0, 5]``."""
    arr = check_array(ids, name, ndim=ndim, shape=shape, dims=dims, dtype="int", finite=False)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= vocab):
        raise ValueError(f"{name}: {what} must be in [0, {vocab}), got range [{int(arr.min())}, {int(arr.max())}]")
    return arr


__all__ += ["MAX_COUNT", "check_count", "check_fields", "check_ids"]


def largest(**sizes: int) -> str:
    """The name of the largest size, for :func:`check_alloc`'s ``name`` when several arguments make an array:
    ``largest(T=32, batch=8, V=10**10)`` -> ``"V"`` (the one to blame when it is too large)."""
    return max(sizes, key=lambda k: sizes[k])


__all__ += ["largest"]


def read_json(path, name: str, what: str):
    """The JSON document at ``path``, which should hold ``what`` (e.g. "a saved Machine"). A missing file raises
    FileNotFoundError, a file that is not JSON ValueError, both naming the argument ``name`` and the path."""
    import json

    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise TypeError(f"{name}: expected a file name (str or path), got {type(path).__name__} {path!r:.60}")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{name}: {path!r} does not exist (expected {what})")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{name}: {path!r} is not {what} (not JSON: {exc})") from None
