"""The cost model's measurement side (experiments folder, chapter 12): :func:`run` executes the course's
real implementation of a method on any :class:`~.problem.Problem` the advisor accepts, and :func:`measure`
times several methods on one problem in one interleaved :func:`core.timing.compare`, so that every
prediction of :func:`~.model.predict` can be checked by a measurement.

Which code runs (the chapters' own functions, nothing re-implemented here):

* ``kind="rnn"``: chapter 07's stacked softmax RNN, :func:`course_lib.parallel.inference.predict` with
  ``method`` = sequential / batched / threads / wavefront / mpi / cuda_batched (``ny = 0`` runs it with
  a one-unit output layer: the model counts no output layer there, the run has one tiny product per step);
* ``kind="gru"``: :func:`course_lib.models.gru.gru_forward` (``batched``: the whole batch per step,
  ``sequential``: one sequence at a time, ``mgrit``: the implicit GRU as in chapter 10, whose coarse
  step is stable -- the same cells at the same cost), :func:`course_lib.parallel.deer.gru_forward`
  (``newton``, ``quasi``; float64 as in chapter 11); training adds :func:`~course_lib.models.gru.gru_backward`;
* ``kind="lstm"``: :func:`course_lib.models.lstm.lstm_forward` (``batched``; ``sequential`` one sequence
  at a time); training adds :func:`~course_lib.models.lstm.lstm_backward`;
* ``kind="linear"``: :func:`course_lib.algorithms.scan.linear_recurrence` (sequential / batched = the
  same loop / chunked / channels); training adds the reverse scan
  :func:`~course_lib.algorithms.scan.linear_recurrence_backward` with the same method.

Training passes back-propagate :func:`upstream`, the gradient of a loss summed over every step: dense, as a
real loss's. (A one-hot last-step gradient -- 0 everywhere but ``dH[-1] = 1`` -- turns the backward into a pure
product chain of factors below 1 that sticks at the smallest subnormal: every multiply then takes the CPU's
subnormal assist, 10x the time on an Intel Xeon, and the model would be fitted to that.)

Combinations the course has no code for (e.g. rnn training with threads) raise ValueError naming
``method`` or ``mode``.
"""
from __future__ import annotations

import numpy as np

from ...core import backend, timing
from ...core.validate import (check_alloc, check_choice, check_dtype, check_int, check_positive_int,
                                check_repeat)
from .model import METHODS, MGRIT_TOL
from .problem import Problem

__all__ = ["RUNNABLE", "ONE_THREAD", "runnable", "inputs", "upstream", "run", "measure"]

RUNNABLE = {
    ("rnn", "inference"): ("sequential", "batched", "threads", "wavefront", "mpi", "cuda_batched"),
    ("gru", "inference"): ("sequential", "batched", "mgrit", "newton", "quasi"),
    ("gru", "training"): ("sequential", "batched"),
    ("lstm", "inference"): ("sequential", "batched"),
    ("lstm", "training"): ("sequential", "batched"),
    ("linear", "inference"): ("sequential", "batched", "chunked", "channels"),
    ("linear", "training"): ("sequential", "batched", "chunked", "channels"),
}


def runnable(problem: Problem) -> tuple:
    """The methods :func:`run` can execute for ``problem`` (its kind and mode)."""
    _check_problem(problem)
    return RUNNABLE.get((problem.kind, problem.mode), ())


def _check_problem(problem) -> None:
    if not isinstance(problem, Problem):
        raise TypeError(f"problem: expected a Problem, got {type(problem).__name__}")


def inputs(problem: Problem, *, seed: int = 0, dtype=np.float32) -> tuple:
    """``(params, X)`` for ``problem`` from the chapters' own initialisers (``X`` is ``(T, batch, nx)``;
    for ``kind="linear"`` ``params`` is ``a (T, batch, nh)`` in (0.5, 1) and ``X`` the inputs ``x``)."""
    _check_problem(problem)
    seed = check_int(seed, "seed", low=0)
    dtype = check_dtype(dtype, "dtype")
    p = problem
    width = max(p.nh, p.n_in) * (4 if p.kind != "linear" else 1)  # the widest (T, batch, .) array it makes
    check_alloc((p.T, p.batch, width), dtype, "problem", what=f"its (T, batch, width) {p.kind} {p.mode} arrays")
    rng = np.random.default_rng(seed)
    if p.kind == "linear":
        a = rng.uniform(0.5, 1.0, (p.T, p.batch, p.nh)).astype(dtype)
        return a, rng.standard_normal((p.T, p.batch, p.nh)).astype(dtype)
    X = rng.standard_normal((p.T, p.batch, p.n_in)).astype(dtype)
    if p.kind == "rnn":
        from ...models.softmax_rnn import init_params
        return init_params(p.n_in, p.nh, max(1, p.ny), layers=p.layers, seed=seed, dtype=dtype), X
    if p.layers != 1:
        raise ValueError(f"layers: run() executes one {p.kind} layer (the course's {p.kind} code is one layer), "
                         f"got {p.layers}")
    if p.kind == "gru":
        from ...models import gru
        return gru.init_params(p.n_in, p.nh, seed=seed, dtype=dtype), X
    from ...models import lstm
    return lstm.init_params(p.n_in, p.nh, seed=seed, dtype=dtype), X


def upstream(H):
    """The upstream gradient a training pass back-propagates for hidden states ``H (T, batch, nh)``: ones, the
    gradient of ``sum(H)`` -- dense and normal, so the backward never runs on subnormals (module docstring)."""
    return np.ones_like(H)


def _per_sequence(fn, X):
    """``fn`` on one sequence at a time (batch of 1), stacked back along the batch axis."""
    return np.concatenate([fn(X[:, b:b + 1]) for b in range(X.shape[1])], axis=1)


def _rnn(method, params, X, threads):
    from ...parallel import inference
    opts = {"threads": threads} if method in ("threads", "wavefront") else {"ranks": threads} if method == "mpi" else {}
    return inference.predict(params, X, method=method, **opts)


def _gru(method, params, X, threads, training):
    from ...models import gru
    if method in ("newton", "quasi"):
        from ...parallel import deer
        return deer.gru_forward(params, X, method=method, tol=1e-8)
    if method == "mgrit":
        return gru.gru_forward(params, X, implicit=True, method="mgrit", m=4, levels=2, relax="FCF", max_iter=30,
                               tol=MGRIT_TOL, threads=threads or backend.cpu_count())  # all cores, as the model prices it

    def one(Xs):
        H = gru.gru_forward(params, Xs)
        if not training:
            return H
        gru.gru_backward(params, Xs, H, upstream(H))
        return H
    return one(X) if method == "batched" else _per_sequence(one, X)


def _lstm(method, params, X, training):
    from ...models import lstm

    def one(Xs):
        if not training:
            return lstm.lstm_forward(params, Xs)[0]
        H, _, cache = lstm.lstm_forward(params, Xs, return_cache=True)
        lstm.lstm_backward(params, cache, upstream(H))
        return H
    return one(X) if method == "batched" else _per_sequence(one, X)


def _linear(method, a, x, threads, training):
    from ...algorithms import scan
    meth = "sequential" if method == "batched" else method
    opts = {"groups": threads} if method == "channels" and threads else {}
    h = scan.linear_recurrence(a, x, method=meth, **opts)
    if training:
        scan.linear_recurrence_backward(a, h, None, upstream(h), method=meth, **opts)
    return h


def run(problem: Problem, method: str, *, seed: int = 0, threads: int | None = None, data=None):
    """Execute the course's implementation of ``method`` on ``problem`` (see the module docstring) and
    return its hidden states ``(T, batch, nh)`` (``kind="rnn"``: the probabilities ``(T, batch, vocab)``).
    ``threads``: workers for threads / wavefront / mpi (ranks) / mgrit / channels (default: the
    method's own default, all cores). ``data``: ``(params, X)`` from :func:`inputs` (default: made
    from ``seed``). Raises ValueError naming ``method`` or ``mode`` where the course has no such code."""
    _check_problem(problem)
    check_choice(method, "method", METHODS)
    ok = runnable(problem)
    if method not in ok:
        what = "mode" if not ok or method in RUNNABLE.get((problem.kind, "inference"), ()) else "method"
        raise ValueError(f"{what}: the course has no {method} code for a {problem.kind} {problem.mode} pass "
                         f"(runnable here: {', '.join(ok) or 'none'})")
    if method == "cuda_batched" and not backend.gpu_available():
        raise ValueError("method: cuda_batched needs a GPU, and this machine has none")
    if threads is not None:
        threads = check_positive_int(threads, "threads", high=1024)
    if data is not None and (not isinstance(data, (tuple, list)) or len(data) != 2):
        raise TypeError(f"data: expected (params, X) as inputs() returns, got {type(data).__name__}")
    if data is None:
        dtype = np.float64 if method in ("newton", "quasi") else np.float32
        data = inputs(problem, seed=seed, dtype=dtype)
    params, X = data
    if problem.kind == "rnn":
        return _rnn(method, params, X, threads)
    if problem.kind == "gru":
        return _gru(method, params, X, threads, problem.training)
    if problem.kind == "lstm":
        return _lstm(method, params, X, problem.training)
    return _linear(method, params, X, threads, problem.training)


ONE_THREAD = ("sequential", "batched", "newton", "quasi")  # run() executes these on one thread (BLAS aside)


def measure(problem: Problem, methods=None, *, seed: int = 0, repeat: int = 3, threads: int | None = None,
            clock: str | None = None):
    """Time ``methods`` (default: every one :func:`run` can execute here) on ``problem`` in one
    interleaved :func:`core.timing.compare` (inputs made once, outside the timing). When every method
    runs on one thread (:data:`ONE_THREAD`; BLAS is then held to one thread) they are timed by the
    calling thread's CPU clock, which other processes' load cannot inflate (``Comparison.clock``); ``clock="cpu"``
    asks for it (the caller knows the methods run on one thread here), ``"wall"`` for the wall clock. Returns the
    :class:`~course_lib.core.timing.Comparison`."""
    _check_problem(problem)
    repeat = check_repeat(repeat)
    if methods is not None and (isinstance(methods, str) or not hasattr(methods, "__iter__")):
        raise TypeError(f"methods: expected a list of names from {METHODS}, got {methods!r}")
    if threads is not None:
        threads = check_positive_int(threads, "threads", high=1024)
    methods = [m for m in runnable(problem) if m != "cuda_batched" or backend.gpu_available()] \
        if methods is None else [check_choice(m, "methods", METHODS) for m in methods]
    if not methods:
        raise ValueError(f"methods: nothing to run for a {problem.kind} {problem.mode} pass")
    data32 = inputs(problem, seed=seed)
    data64 = inputs(problem, seed=seed, dtype=np.float64) if {"newton", "quasi"} & set(methods) else None
    fns = {m: (lambda m=m: run(problem, m, threads=threads,
                               data=data64 if m in ("newton", "quasi") else data32)) for m in methods}
    if clock is not None:
        check_choice(clock, "clock", ("cpu", "wall"))
    if clock == "cpu" or (clock is None and all(m in ONE_THREAD for m in methods)):
        with backend.blas_threads(1):
            return timing.compare(repeat=repeat, clock="cpu", **fns)
    return timing.compare(repeat=repeat, clock="wall", **fns)   # threaded methods: wall time, as the model prices
