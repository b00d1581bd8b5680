"""The cost model's counts *from the implementations* (experiments folder, chapter 12): how many library
calls (numpy operations and compiled-kernel calls) and how many bytes the course's own code issues, counted
by running it once on tiny problems -- never written by hand.

How: :func:`counting` runs a function with its input arrays viewed as a counting array type
(``_Counted``, an ``np.ndarray`` subclass whose ``__array_ufunc__`` / ``__array_function__`` count every
numpy operation that touches them, and whose results are counted arrays again) and with numba's dispatcher
counting every call from Python into a compiled kernel. The result is a :class:`Tally`: ``calls``,
``bytes`` (input and output arrays of each counted operation) and ``by_name``.

The per-step counts then follow from the known dependence on T, layers and iterations -- a count is linear
in T (one cell per step) and in the layers, and DEER's is linear in the iterations -- so two or three tiny
runs fix it (:func:`step_calls`, :func:`deer_calls`), and the model predicts the count of *any* size, which
the tests check against a fresh count of the implementation at other sizes.

``step_calls(kind, mode)`` -> ``{"cell": per layer and step, "output": per step, "fixed": per pass,
"fixed_layer": per pass and layer}``; ``deer_calls(method, mode)`` -> ``{"iter": per iteration, "fixed":
per solve (training: + the gradient)}``; ``deer_bytes(method)`` -> the bytes per iteration and per
(time step x sequence) as a polynomial in nh; ``count_run(problem, method)`` -> the :class:`Tally` of
:func:`.execute.run`. All cached per process; nothing here is timed.
"""
from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ...core.validate import check_choice, check_positive_int
from . import model
from .problem import KINDS, MODES, Problem

__all__ = ["Tally", "counting", "counted", "count_run", "count_deer", "step_calls", "deer_calls", "deer_bytes",
           "method_calls"]


@dataclass
class Tally:
    """What a counted run issued: ``calls`` (numpy operations + compiled-kernel calls from Python),
    ``bytes`` (their input and output arrays) and ``by_name`` (calls per operation name)."""

    calls: int = 0
    bytes: int = 0
    by_name: dict = field(default_factory=dict)

    def add(self, name: str, arrays) -> None:
        self.calls += 1
        self.bytes += sum(int(a.nbytes) for a in arrays if isinstance(a, np.ndarray))
        self.by_name[name] = self.by_name.get(name, 0) + 1


_ACTIVE: list = []   # the tally being filled (one counted run at a time)


def _plain(x):
    if isinstance(x, _Counted):
        return x.view(np.ndarray)
    if isinstance(x, (tuple, list)):
        return type(x)(_plain(v) for v in x)
    return x


def _wrap(x):
    if isinstance(x, np.ndarray) and not isinstance(x, _Counted):
        return x.view(_Counted)
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    return x


def _flat(x) -> list:
    if isinstance(x, (tuple, list)):
        return [a for v in x for a in _flat(v)]
    return [x]


class _Counted(np.ndarray):
    """An array that counts every numpy operation it takes part in (while :func:`counting` is active)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            kwargs["out"] = _plain(kwargs["out"])
        res = getattr(ufunc, method)(*_plain(inputs), **kwargs)
        if _ACTIVE:
            _ACTIVE[-1].add(ufunc.__name__, _flat(_plain(inputs)) + _flat(_plain(res)))
        return _wrap(res)

    def __array_function__(self, func, types, args, kwargs):
        res = func._implementation(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()}) \
            if hasattr(func, "_implementation") else super().__array_function__(func, (np.ndarray,), args, kwargs)
        if _ACTIVE:
            _ACTIVE[-1].add(func.__name__, [a for a in _flat(_plain(args)) if isinstance(a, np.ndarray)]
                            + _flat(_plain(res)))
        return _wrap(res)


def counted(obj):
    """``obj`` with its arrays viewed as counting arrays: an array, a params dataclass (nested ones and
    lists of them too) or a tuple of those."""
    if isinstance(obj, np.ndarray):
        return obj.view(_Counted)
    if isinstance(obj, tuple):
        return tuple(counted(v) for v in obj)
    if isinstance(obj, list):
        return [counted(v) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **{f.name: counted(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                                           if f.init and isinstance(getattr(obj, f.name), (np.ndarray, list, tuple))
                                           or dataclasses.is_dataclass(getattr(obj, f.name))})
    return obj


@contextmanager
def counting():
    """Count the numpy operations on counting arrays (:func:`counted`) and every call from Python into a
    numba kernel while the block runs; yields the :class:`Tally`."""
    from numba.core import dispatcher

    tally = Tally()
    base = next(k for k in dispatcher.Dispatcher.__mro__ if "__call__" in vars(k))
    orig = base.__call__

    def call(self, *args, **kwargs):
        tally.add(getattr(self, "__name__", "kernel"), [a for a in args if isinstance(a, np.ndarray)])
        return orig(self, *_plain(args), **kwargs)

    _ACTIVE.append(tally)
    dispatcher.Dispatcher.__call__ = call
    try:
        yield tally
    finally:
        del dispatcher.Dispatcher.__call__
        _ACTIVE.pop()


def _check_problem(problem) -> None:
    if not isinstance(problem, Problem):
        raise TypeError(f"problem: expected a Problem, got {type(problem).__name__}")


def count_run(problem: Problem, method: str = "batched", *, threads: int | None = None) -> Tally:
    """The :class:`Tally` of :func:`.execute.run` for ``method`` on ``problem`` (inputs made outside the count)."""
    from .execute import inputs, run

    _check_problem(problem)
    data = counted(inputs(problem, dtype=np.float64 if method in ("newton", "quasi") else np.float32))
    with counting() as tally:
        run(problem, method, data=data, threads=threads)
    return tally


def count_deer(method: str, *, T: int, batch: int, nh: int, iters: int, training: bool = False, nx: int = 3) -> Tally:
    """The :class:`Tally` of :func:`course_lib.parallel.deer.gru_forward` run for exactly ``iters`` iterations
    (``tol=0``) on a float64 GRU problem -- and, ``training``, its :func:`~course_lib.parallel.deer.gru_gradient`."""
    from ...models import gru
    from ...parallel import deer

    method = check_choice(method, "method", ("newton", "quasi"))
    T, batch, nh, iters, nx = (check_positive_int(v, k) for v, k in ((T, "T"), (batch, "batch"), (nh, "nh"),
                                                                     (iters, "iters"), (nx, "nx")))
    params = counted(gru.init_params(nx, nh, seed=0, dtype=np.float64))
    X = counted(np.random.default_rng(0).standard_normal((T, batch, nx)))
    with counting() as tally:
        H = deer.gru_forward(params, X, method=method, tol=0.0, max_iter=iters)
        if training:
            dH = np.zeros(H.shape)
            dH[-1] = 1.0
            deer.gru_gradient(params, X, counted(dH), H=H, method=method)
    return tally


@lru_cache(maxsize=None)
def step_calls(kind: str, mode: str = "inference") -> dict:
    """Calls of the course's batched pass for ``kind`` in ``mode``, from tiny counted runs (see the
    module docstring): ``calls(T, L) = fixed + L fixed_layer + T (L cell + output)``."""
    kind, mode = check_choice(kind, "kind", KINDS), check_choice(mode, "mode", MODES)
    if kind == "rnn" and mode == "training":
        mode = "inference"  # run() has no rnn training code: the inference count, forward only
    multi = kind == "rnn"

    def c(T, L):
        p = Problem(kind, mode, batch=2, T=T, nh=4, layers=L, ny=1 if kind == "rnn" else 0)
        return count_run(p, "batched").calls

    s1 = c(3, 1) - c(2, 1)
    fixed1 = c(2, 1) - 2 * s1
    if not multi:
        return {"cell": s1, "output": 0, "fixed": fixed1, "fixed_layer": 0}
    s2 = c(3, 2) - c(2, 2)
    fixed2 = c(2, 2) - 2 * s2
    cell = s2 - s1
    return {"cell": cell, "output": s1 - cell, "fixed": fixed1 - (fixed2 - fixed1), "fixed_layer": fixed2 - fixed1}


@lru_cache(maxsize=None)
def deer_calls(method: str, mode: str = "inference") -> dict:
    """DEER's calls per iteration and per solve (training: + the gradient) from counted runs of
    :func:`count_deer` with one and two iterations (neither depends on T, batch or nh: every step is
    one batched operation over all t). ``mode``: one of :data:`.problem.MODES` (ValueError naming it otherwise)."""
    mode = check_choice(mode, "mode", MODES)
    one = count_deer(method, T=8, batch=2, nh=4, iters=1, training=mode == "training").calls
    two = count_deer(method, T=8, batch=2, nh=4, iters=2, training=mode == "training").calls
    return {"iter": two - one, "fixed": one - (two - one)}


@lru_cache(maxsize=None)
def deer_bytes(method: str) -> tuple:
    """Bytes one DEER iteration moves per (time step x sequence), as polynomial coefficients in nh
    ``(c0, c1, c2)`` (``c0 + c1 nh + c2 nh^2``: the full Jacobians of Newton are nh^2 per step), fitted
    through counted runs at nh = 2, 4, 8 (T = 32, batch = 2, one and two iterations). A few per-sequence
    arrays (the shifted h0) do not scale with T: at T >= 16 they are under 5% (tested)."""
    ys = []
    nhs = (2, 4, 8)
    for nh in nhs:
        one = count_deer(method, T=32, batch=2, nh=nh, iters=1).bytes
        two = count_deer(method, T=32, batch=2, nh=nh, iters=2).bytes
        ys.append((two - one) / 64.0)
    c2, c1, c0 = np.polyfit(np.array(nhs, float), np.array(ys, float), 2)
    return float(c0), float(c1), float(c2)


def _rnn_count(mode: str, method: str, T: int, L: int, P: int, batch: int | None = None) -> int:
    p = Problem("rnn", mode, batch=max(2, P) if batch is None else batch, T=T, nh=4, layers=L, ny=1)
    return count_run(p, method, threads=P if method in ("threads", "wavefront") else None).calls


@lru_cache(maxsize=None)
def _affine_fit(mode: str, method: str, L: int) -> tuple:
    """``(a, b, c, d)`` with calls = a + b T + v (c + d T), v = threads (``threads``) or sequences
    (``sequential``), from counted runs at T = 2, 3 and v = 1, 2."""
    if method == "threads":
        c = {(T, v): _rnn_count(mode, method, T, L, v) for T in (2, 3) for v in (1, 2)}
    else:
        c = {(T, v): _rnn_count(mode, method, T, L, 1, batch=v) for T in (2, 3) for v in (1, 2)}
    d = (c[(3, 2)] - c[(2, 2)]) - (c[(3, 1)] - c[(2, 1)])
    cc = (c[(2, 2)] - c[(2, 1)]) - 2 * d
    b = (c[(3, 1)] - c[(2, 1)]) - d
    a = c[(2, 1)] - 2 * b - cc - 2 * d
    return a, b, cc, d


@lru_cache(maxsize=None)
def method_calls(kind: str, mode: str, method: str, T: int, layers: int, P: int, batch: int = 1) -> float | None:
    """Calls of :func:`.execute.run` for the rnn's own method codes (``sequential``: one sequence at a time,
    affine in T and in ``batch``; ``threads``: the batch split over ``P`` threads, each running the batched
    pass on its share -- affine in T and in P; ``wavefront``: one cell per (layer, step), independent of
    P > 1 -- affine in T once T > layers), from counted runs at T = 2, 3 on 1 and 2 threads or sequences
    (wavefront: T <= layers + 2); None where the course runs the batched pass for the method (the model
    then counts batched passes)."""
    if kind != "rnn" or method not in ("sequential", "threads", "wavefront"):
        return None
    T, layers, P = check_positive_int(T, "T"), check_positive_int(layers, "layers"), check_positive_int(P, "P")
    batch = check_positive_int(batch, "batch")
    if method != "wavefront":
        a, b, c, d = _affine_fit(mode, method, layers)
        v = P if method == "threads" else batch
        return float(a + b * T + v * (c + d * T))
    P = min(P, 2)
    if T <= layers + 2:
        return float(_rnn_count(mode, "wavefront", T, layers, P))
    a = _rnn_count(mode, "wavefront", layers + 1, layers, P)
    b = _rnn_count(mode, "wavefront", layers + 2, layers, P)
    return float(a + (b - a) * (T - layers - 1))


model.register_counts(step_calls, deer_calls, deer_bytes, method_calls)
