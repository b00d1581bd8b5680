"""The seed's own tool: one RNN training step as a Halide *algorithm* plus named *schedules* (models folder).

Seed 000 (Han & Uboweja) wrote the RNN training step once in Halide and then changed only its
*schedule*: tiles of 64 rows x 16 columns, vectorise by 16, ``parallel()``, a specialised
schedule for the element-wise stages, a single-expression ("fused") definition instead of a
pure + update definition, and JIT vs AOT compilation. This module does the same with Halide's
Python bindings (``pip install halide``; ``import halide as hl``).

The maths is exactly ``course_lib.models.rnn`` (row vectors, time-major, no biases)::

    h_t = tanh(x_t Wxh + h_{t-1} Whh),   ŷ_t = tanh(h_t Why),   E = Σ (ŷ_t - y_t)²

and one step is ``rnn.sgd_step(params, rnn.bptt_linear(params, X, Y), lr)`` (O(T) BPTT, SGD).
The step is five Halide pipelines, each a matrix product with an element-wise epilogue:

===============  ==========================================================================
``gemm``         ``C = A @ B``: the input projection ``X Wxh`` of all steps, and ``dO Whyᵀ``
``hidden``       ``h_t = tanh(P_t + h_{t-1} Whh)``          (one call per time step)
``output``       ``ŷ = tanh(H Why)``; outputs ``dO = 2(ŷ-y)(1-ŷ²)`` and per-row losses (float64)
``backward``     ``dpre_t = (dH_t + dpre_{t+1} Whhᵀ)(1 - h_t²)``   (one call per time step)
``grad_update``  ``W - lr Aᵀ G``: a weight gradient and the SGD update in one pipeline
===============  ==========================================================================

Halide indexes a numpy array ``M (rows, cols)`` as ``M[col, row]`` (the contiguous axis first), so
every ``Func`` here is ``f[j, i]`` with ``j`` the column (innermost, vectorised) and ``i`` the row.

``SCHEDULES`` maps a name to a :class:`Schedule` (:mod:`.halide_schedules`, re-exported here):

* the eight combinations of tiling x SIMD x parallel of seed Fig. 10 (``"serial"`` ...
  ``"tiled+simd+parallel"``), all with the two-stage definition (pure ``prod = 0`` then update
  ``prod += a * b``) and each element-wise epilogue computed inside the product's loops;
* ``"specialized"`` (Fig. 13): the best schedule, with every element-wise stage computed on its
  own, parallel over rows and vectorised;
* ``"fused"`` (§4.9): the best schedule on single-expression definitions
  (``h = tanh(P + hl.sum(a * b))``) instead of pure + update;
* ``"jit_per_call"`` (Fig. 14): the best schedule, but the pipelines are rebuilt and JIT-compiled
  on every call, as the seed's JIT code re-compiled its stages during training. All other
  schedules compile each pipeline once (``Pipeline.compile_to_callable``) and reuse the machine
  code -- the analogue, in one Python process, of the seed's ahead-of-time (AOT) build. (A true AOT
  build would compile to a library and load it as a Python extension with a C++ compiler; the
  saving it brings over compile-once is the one-time compile, which :func:`course_lib.experiments.halide.compile_seconds`
  measures.)

Pipelines are shape-generic (any T, B, nx, nh, ny, tails of tiles handled with
``TailStrategy.GuardWithIf``), so they are compiled once per schedule and cached; the cache
key also carries the element type, so a new shape reuses the machine code.

``halide`` is imported lazily: :func:`available` says whether it can be used and why not.
"""
from __future__ import annotations

import dataclasses
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..core.validate import check_array, check_callable, check_float, check_int, check_positive_int
from .halide_schedules import FIG10_NAMES, SCHEDULES, Schedule, get_schedule, make_schedule, schedule_stage

__all__ = [
    "Schedule",
    "SCHEDULES",
    "FIG10_NAMES",
    "HalideUnavailable",
    "available",
    "make_schedule",
    "get_schedule",
    "train_step",
    "compiled_step",
    "CheckedPipeline",
    "clear_cache",
    "loop_nest",
    "build",
    "step_flops",
    "HiddenStage",
    "hidden_stage",
    "apply_schedule",
    "compile_hidden",
    "backward_two_stage",
    "compile_func",
    "count_stages",
    "capture_stderr",
]


# --------------------------------------------------------------------------- halide, lazily
class HalideUnavailable(RuntimeError):
    """Raised when the ``halide`` package cannot be imported on this platform."""


_HL = None
_HL_ERROR: str | None = None


def _hl():
    """The ``halide`` module, imported on first use (``HalideUnavailable`` with the reason)."""
    global _HL, _HL_ERROR
    if _HL is None and _HL_ERROR is None:
        try:
            import halide

            if not hasattr(halide, "Func"):
                raise ImportError(f"'halide' resolved to {getattr(halide, '__file__', '?')}, which is not "
                                  f"Halide's Python package (a file named halide.py shadows it)")
            _HL = halide
        except Exception as exc:  # ImportError, or a broken binary wheel
            _HL_ERROR = f"{type(exc).__name__}: {exc}"
    if _HL is None:
        raise HalideUnavailable(
            f"the 'halide' package cannot be imported here ({_HL_ERROR}); install it with "
            f"`pip install halide` (wheels exist for Linux, macOS and Windows on x86-64 and arm64)")
    return _HL


def available() -> tuple[bool, str]:
    """``(True, "halide <version>")`` when Halide can be used, else ``(False, reason)``."""
    try:
        hl = _hl()
    except HalideUnavailable as exc:
        return False, str(exc)
    version = getattr(hl, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as _v

            version = _v("halide")
        except Exception:
            version = "?"
    return True, f"halide {version}, target {hl.get_jit_target_from_environment()}"


# --------------------------------------------------------------------------- algorithm + schedule
@dataclass
class _Stage:
    """One product stage: ``out[j, i] = epilogue(prod[j, i])`` with ``prod = Σ_k a·b``."""

    out: object          # the Func whose loops carry the schedule
    prod: object | None  # the two-stage accumulator (None when fused)
    j: object
    i: object
    k: object            # the RDom
    epi: object | None = None  # separate element-wise Func ("rows" schedules), else None


def _product(hl, name: str, a_at: Callable, b_at: Callable, K, epilogue: Callable, sched: Schedule) -> _Stage:
    """Build ``epilogue(Σ_k a_at(k, i) * b_at(j, k), j, i)`` in the form ``sched`` asks for."""
    j, i = hl.Var(f"{name}_j"), hl.Var(f"{name}_i")
    k = hl.RDom([(0, K)], f"{name}_k")
    if sched.fused:
        out = hl.Func(name)
        out[j, i] = epilogue(hl.sum(a_at(k.x, i) * b_at(j, k.x)), j, i)
        return _Stage(out, None, j, i, k)
    prod = hl.Func(f"{name}_prod")
    prod[j, i] = hl.f32(0)
    prod[j, i] += a_at(k.x, i) * b_at(j, k.x)
    out = hl.Func(name)
    out[j, i] = epilogue(prod[j, i], j, i)
    return _Stage(out, prod, j, i, k)



def _float(hl):
    return hl.Float(32)


def _build(sched: Schedule) -> dict:
    """The five pipelines of one schedule, compiled (``name -> callable``)."""
    hl = _hl()
    f32 = _float(hl)
    target = hl.get_jit_target_from_environment()
    out = {}

    def compile_(outputs, args):
        return hl.Pipeline(outputs).compile_to_callable(args, target)

    # gemm: C[j, i] = Σ_k A[k, i] B[j, k]
    A, B = hl.ImageParam(f32, 2, "A"), hl.ImageParam(f32, 2, "B")
    st = _product(hl, "gemm", lambda k, i: A[k, i], lambda j, k: B[j, k], A.dim(0).extent(),
                  lambda s, j, i: s, sched)
    schedule_stage(hl, st, sched)
    out["gemm"] = compile_(st.out, [A, B])

    # hidden: h[j, i] = tanh(P[j, i] + Σ_k hp[k, i] W[j, k])
    P, Hp, W = hl.ImageParam(f32, 2, "P"), hl.ImageParam(f32, 2, "h_prev"), hl.ImageParam(f32, 2, "Whh")
    st = _product(hl, "hidden", lambda k, i: Hp[k, i], lambda j, k: W[j, k], Hp.dim(0).extent(),
                  lambda s, j, i: hl.tanh(P[j, i] + s), sched)
    schedule_stage(hl, st, sched)
    out["hidden"] = compile_(st.out, [P, Hp, W])

    # output: yhat = tanh(H Why); dO = 2 (yhat - y)(1 - yhat²); rowloss[i] = Σ_j (yhat - y)² (float64)
    H, Wy, Yp = hl.ImageParam(f32, 2, "H"), hl.ImageParam(f32, 2, "Why"), hl.ImageParam(f32, 2, "Y")
    st = _product(hl, "yhat", lambda k, i: H[k, i], lambda j, k: Wy[j, k], H.dim(0).extent(),
                  lambda s, j, i: hl.tanh(s), sched)
    schedule_stage(hl, st, sched)
    yh = st.out
    j, i = st.j, st.i
    dO, rowloss = hl.Func("dO"), hl.Func("rowloss")
    e = yh[j, i] - Yp[j, i]
    dO[j, i] = hl.f32(2) * e * (hl.f32(1) - yh[j, i] * yh[j, i])
    r = hl.RDom([(0, Wy.dim(0).extent())], "r")
    d = hl.f64(yh[r.x, i]) - hl.f64(Yp[r.x, i])
    rowloss[i] = hl.sum(d * d)
    yh.compute_root()
    if sched.vector:
        dO.vectorize(j, sched.vector, hl.TailStrategy.GuardWithIf)
    if sched.parallel:
        dO.parallel(i)
        rowloss.parallel(i)
    out["output"] = compile_([dO, rowloss], [H, Wy, Yp])

    # backward: dpre[j, i] = (dH[j, i] + Σ_k dn[k, i] WT[j, k]) (1 - h[j, i]²)
    dH, Dn, WT, Hc = (hl.ImageParam(f32, 2, n) for n in ("dH", "dpre_next", "WhhT", "h"))
    st = _product(hl, "backward", lambda k, i: Dn[k, i], lambda j, k: WT[j, k], Dn.dim(0).extent(),
                  lambda s, j, i: (dH[j, i] + s) * (hl.f32(1) - Hc[j, i] * Hc[j, i]), sched)
    schedule_stage(hl, st, sched)
    out["backward"] = compile_(st.out, [dH, Dn, WT, Hc])

    # grad_update: Wn[j, i] = W[j, i] - lr Σ_r A[i, r] G[j, r]   (A (R, ni), G (R, nj) in numpy terms)
    Aa, G, W0 = hl.ImageParam(f32, 2, "A"), hl.ImageParam(f32, 2, "G"), hl.ImageParam(f32, 2, "W")
    lr = hl.Param(f32, "lr")
    st = _product(hl, "grad_update", lambda r, i: Aa[i, r], lambda j, r: G[j, r], Aa.dim(1).extent(),
                  lambda s, j, i: W0[j, i] - lr * s, sched)
    schedule_stage(hl, st, sched)
    out["grad_update"] = compile_(st.out, [Aa, G, W0, lr])
    return {name: CheckedPipeline(fn, name) for name, fn in out.items()}


# numpy shapes of each compiled pipeline's arguments, inputs then outputs (``None``: the scalar lr)
_SIGNATURES = {
    "gemm": (("A", ("n", "k")), ("B", ("k", "m")), ("out", ("n", "m"))),
    "hidden": (("P", ("B", "n")), ("h_prev", ("B", "k")), ("Whh", ("k", "n")), ("out", ("B", "n"))),
    "output": (("H", ("R", "k")), ("Why", ("k", "n")), ("Y", ("R", "n")), ("dO", ("R", "n")), ("rowloss", ("R",))),
    "backward": (("dH", ("B", "n")), ("dpre_next", ("B", "k")), ("WhhT", ("k", "n")), ("h", ("B", "n")),
                 ("out", ("B", "n"))),
    "grad_update": (("A", ("R", "i")), ("G", ("R", "j")), ("W", ("i", "j")), ("lr", None), ("out", ("i", "j"))),
}
_N_OUT = {"output": 2}


class CheckedPipeline:
    """A compiled pipeline that checks its arguments before running (float32, matching sizes, finite and
    non-empty inputs; writeable output arrays); ``.raw`` is the unchecked callable."""

    def __init__(self, raw: Callable, name: str):
        self.raw, self.name = raw, name

    def __call__(self, *args):
        sig = _SIGNATURES[self.name]
        if len(args) != len(sig):
            raise TypeError(f"{self.name}: expected {len(sig)} arguments ({', '.join(n for n, _ in sig)}), "
                            f"got {len(args)}")
        dims: dict = {}
        n_in = len(sig) - _N_OUT.get(self.name, 1)
        for k, ((name, shape), a) in enumerate(zip(sig, args)):
            if shape is None:
                check_float(a, name)
                continue
            if k >= n_in and not (isinstance(a, np.ndarray) and a.flags.writeable):
                raise TypeError(f"{name}: expected a writeable numpy array to hold the output, got {type(a).__name__}")
            arr = check_array(a, name, shape=shape, dims=dims, finite=k < n_in,
                              dtype=np.float64 if name == "rowloss" else np.float32)
            if min(arr.shape) < 1:
                raise ValueError(f"{name}: expected a non-empty array, got shape {arr.shape}")
        return self.raw(*args)


_CACHE: dict[tuple, dict] = {}


def compiled_step(schedule) -> dict:
    """The compiled pipelines of ``schedule`` (cached; ``jit_per_call`` builds afresh every time)."""
    sched = get_schedule(schedule)
    if sched.compile == "per_call":
        return _build(sched)
    key = sched.key()
    if key not in _CACHE:
        _CACHE[key] = _build(sched)
    return _CACHE[key]


def clear_cache() -> None:
    """Forget every compiled pipeline (the next step of each schedule compiles again)."""
    _CACHE.clear()


def build(schedule) -> dict:
    """Build and JIT-compile the five pipelines of ``schedule`` afresh (no cache): what a compile costs.

    :func:`course_lib.experiments.halide.compile_seconds` times it."""
    return _build(get_schedule(schedule))


# --------------------------------------------------------------------------- the training step
def _check_step_inputs(params, X, Y):
    for name in ("Wxh", "Whh", "Why"):
        if not hasattr(params, name):
            raise TypeError(f"params: expected an object with Wxh, Whh and Why arrays, got "
                            f"{type(params).__name__} without '{name}'")
    dims: dict = {}
    Wxh = check_array(params.Wxh, "params.Wxh", shape=("nx", "nh"), dims=dims, dtype=np.float32)
    Whh = check_array(params.Whh, "params.Whh", shape=("nh", "nh"), dims=dims, dtype=np.float32)
    Why = check_array(params.Why, "params.Why", shape=("nh", "ny"), dims=dims, dtype=np.float32)
    X = check_array(X, "X", shape=("T", "B", "nx"), dims=dims, dtype=np.float32, min_size={"T": 1, "B": 1})
    Y = check_array(Y, "Y", shape=("T", "B", "ny"), dims=dims, dtype=np.float32)
    return (np.ascontiguousarray(Wxh), np.ascontiguousarray(Whh), np.ascontiguousarray(Why),
            np.ascontiguousarray(X), np.ascontiguousarray(Y))


def train_step(params, X: np.ndarray, Y: np.ndarray, lr: float, *, schedule="tiled+simd+parallel"):
    """One SGD step of the seed's RNN, computed by Halide pipelines scheduled by ``schedule``.

    ``params``: any dataclass-like object with float32 ``Wxh (nx, nh)``, ``Whh (nh, nh)``,
    ``Why (nh, ny)``; ``X (T, B, nx)``, ``Y (T, B, ny)`` float32; ``h0`` is zero. Returns
    ``(new params, loss)`` -- new params of the same type (``dataclasses.replace``), loss ``E``
    before the step -- equal to ``rnn.sgd_step(params, rnn.bptt_linear(params, X, Y), lr)`` to
    float32 round-off for every schedule.
    """
    sched = get_schedule(schedule)
    lr = check_float(lr, "lr", low=0.0)
    Wxh, Whh, Why, X, Y = _check_step_inputs(params, X, Y)
    fns = {name: fn.raw for name, fn in compiled_step(sched).items()}  # the inputs are checked above
    new, loss = _run_step(fns, Wxh, Whh, Why, X, Y, lr)
    if not all(np.isfinite(w).all() for w in new.values()):
        raise FloatingPointError(f"lr: the step overflowed float32 (lr = {lr:g}): use a smaller learning rate")
    if dataclasses.is_dataclass(params) and not isinstance(params, type):
        return dataclasses.replace(params, **new), loss
    return type(params)(**new), loss


def _run_step(fns: dict, Wxh, Whh, Why, X, Y, lr: float):
    T, B, nx = X.shape
    nh, ny = Whh.shape[0], Why.shape[1]
    f32 = np.float32
    X2, Y2 = X.reshape(T * B, nx), Y.reshape(T * B, ny)
    # forward: the input projection of every step is one product, then the sequential loop
    P = np.empty((T, B, nh), f32)
    fns["gemm"](X2, Wxh, P.reshape(T * B, nh))
    Hf = np.zeros((T + 1, B, nh), f32)  # Hf[0] = h0 = 0, Hf[t + 1] = h_t
    for t in range(T):
        fns["hidden"](P[t], Hf[t], Whh, Hf[t + 1])
    H2, Hp2 = Hf[1:].reshape(T * B, nh), Hf[:-1].reshape(T * B, nh)
    dO = np.empty((T * B, ny), f32)
    rowloss = np.empty(T * B, np.float64)
    fns["output"](H2, Why, Y2, dO, rowloss)
    # backward: the error reaching every h_t from its output, then the sequential reverse sweep
    dH = np.empty((T, B, nh), f32)
    fns["gemm"](dO, np.ascontiguousarray(Why.T), dH.reshape(T * B, nh))
    WhhT = np.ascontiguousarray(Whh.T)
    dpre = np.empty((T, B, nh), f32)
    nxt = np.zeros((B, nh), f32)
    for t in range(T - 1, -1, -1):
        fns["backward"](dH[t], nxt, WhhT, Hf[t + 1], dpre[t])
        nxt = dpre[t]
    D2 = dpre.reshape(T * B, nh)
    new = {"Wxh": np.empty_like(Wxh), "Whh": np.empty_like(Whh), "Why": np.empty_like(Why)}
    fns["grad_update"](X2, D2, Wxh, lr, new["Wxh"])
    fns["grad_update"](Hp2, D2, Whh, lr, new["Whh"])
    fns["grad_update"](H2, dO, Why, lr, new["Why"])
    return new, float(rowloss.sum())


def step_flops(T: int, batch: int, nx: int, nh: int, ny: int) -> int:
    """Multiply-add FLOPs of one step as computed here (2 per term of every product)."""
    T, batch, nx, nh, ny = (check_positive_int(v, n) for v, n in
                            ((T, "T"), (batch, "batch"), (nx, "nx"), (nh, "nh"), (ny, "ny")))
    fwd = 2 * T * batch * (nx * nh + nh * nh + nh * ny)
    bwd = 2 * T * batch * (ny * nh + nh * nh)
    grads = 2 * T * batch * (nx * nh + nh * nh + nh * ny)
    return fwd + bwd + grads


# --------------------------------------------------------------------------- seeing the loops
def capture_stderr(fn: Callable[[], object]) -> str:
    """Run ``fn()`` and return what it wrote to file descriptor 2 (Halide's ``print_loop_nest``
    writes there from C++, past Python's ``sys.stderr``)."""
    check_callable(fn, "fn", "a function of no arguments")
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            fn()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode("utf-8", "replace")


def _tidy(text: str) -> str:
    """Halide names the inner Var of a vectorize split ``v<counter>``; the counter depends on how many
    Vars this process made before, so drop it (the same schedule then prints the same text)."""
    return re.sub(r"\br\d+\b", "r", re.sub(r"\.v\d+\b", ".v", text))


def _print_loop_nest(pipe) -> str:
    return _tidy(capture_stderr(lambda: pipe.print_loop_nest()))


def loop_nest(schedule, stage: str = "hidden") -> str:
    """The loop nest Halide lowers one pipeline of ``schedule`` to (``Pipeline.print_loop_nest``), as text.

    ``stage``: ``"hidden"`` (the hidden-state product, default), ``"gemm"``, ``"backward"`` or
    ``"grad_update"``. Shows which loops are tiled (``i.io``, ``j.ji``), ``vectorized`` and ``parallel``.
    """
    sched = get_schedule(schedule)
    if stage not in ("hidden", "gemm", "backward", "grad_update"):
        raise ValueError(f"stage: expected one of 'hidden', 'gemm', 'backward', 'grad_update', got {stage!r}")
    hl = _hl()
    f32 = _float(hl)
    A, B, C = hl.ImageParam(f32, 2, "A"), hl.ImageParam(f32, 2, "B"), hl.ImageParam(f32, 2, "C")
    epi = {"hidden": lambda s, j, i: hl.tanh(C[j, i] + s), "gemm": lambda s, j, i: s,
           "backward": lambda s, j, i: (C[j, i] + s) * (hl.f32(1) - C[j, i] * C[j, i]),
           "grad_update": lambda s, j, i: C[j, i] - hl.f32(0.1) * s}[stage]
    a_at = (lambda r, i: A[i, r]) if stage == "grad_update" else (lambda k, i: A[k, i])
    st = _product(hl, stage, a_at, lambda j, k: B[j, k], A.dim(0).extent(), epi, sched)
    schedule_stage(hl, st, sched)
    return _print_loop_nest(hl.Pipeline(st.out))


# --------------------------------------------------------------------------- for the worksheet
@dataclass
class HiddenStage:
    """The hidden-state product ``h[j, i] = tanh(P[j, i] + Σ_k h_prev[k, i] W[j, k])`` as an
    unscheduled two-stage algorithm, for a student to schedule (Exercise 6.1).

    ``h`` is the output Func, ``prod`` the accumulator (pure ``prod = 0`` then update
    ``prod += h_prev * W``), ``j`` (column) and ``i`` (row) its Vars, ``k`` the RDom (``k.x``).
    ``hl`` is the halide module. By default (no schedule) ``prod`` is computed where ``h`` needs
    it, one value at a time.
    """

    h: object
    prod: object
    j: object
    i: object
    k: object
    P: object
    h_prev: object
    W: object
    hl: object


def hidden_stage() -> HiddenStage:
    """A fresh, unscheduled :class:`HiddenStage`."""
    hl = _hl()
    f32 = _float(hl)
    P, Hp, W = hl.ImageParam(f32, 2, "P"), hl.ImageParam(f32, 2, "h_prev"), hl.ImageParam(f32, 2, "W")
    st = _product(hl, "h", lambda k, i: Hp[k, i], lambda j, k: W[j, k], Hp.dim(0).extent(),
                  lambda s, j, i: hl.tanh(P[j, i] + s), Schedule("algorithm"))
    return HiddenStage(st.out, st.prod, st.j, st.i, st.k, P, Hp, W, hl)


def apply_schedule(stage: HiddenStage, schedule) -> HiddenStage:
    """Schedule a :class:`HiddenStage` the way ``schedule`` (a name or Schedule) schedules the step."""
    sched = get_schedule(schedule)
    schedule_stage(stage.hl, _Stage(stage.h, stage.prod, stage.j, stage.i, stage.k), sched)
    return stage


def compile_hidden(stage: HiddenStage) -> Callable:
    """``fn(P, h_prev, W) -> h`` (numpy float32 in and out) from a scheduled :class:`HiddenStage`;
    ``P (B, nh)``, ``h_prev (B, k)``, ``W (k, nh)``, checked on every call (``h = tanh(P + h_prev W)``)."""
    if not isinstance(stage, HiddenStage):
        raise TypeError(f"stage: expected a HiddenStage (from hidden_stage()), got {type(stage).__name__}")
    hl = stage.hl
    cb = hl.Pipeline(stage.h).compile_to_callable([stage.P, stage.h_prev, stage.W],
                                                   hl.get_jit_target_from_environment())

    def run(P, h_prev, W):
        dims: dict = {}
        P = check_array(P, "P", shape=("B", "nh"), dims=dims)
        h_prev = check_array(h_prev, "h_prev", shape=("B", "k"), dims=dims)
        W = check_array(W, "W", shape=("k", "nh"), dims=dims)
        if min(P.shape) < 1:
            raise ValueError(f"P: expected a non-empty (B, nh) array, got shape {P.shape}")
        P = np.ascontiguousarray(P, np.float32)
        out = np.empty_like(P)
        cb(P, np.ascontiguousarray(h_prev, np.float32), np.ascontiguousarray(W, np.float32), out)
        return out

    run.loop_nest = _print_loop_nest(hl.Pipeline(stage.h))
    return run


def backward_two_stage(dH, dnext, WT, H):
    """The backward step in two stages (Exercise 6.2's starting point)::

        dh[j, i]   = dH[j, i] + Σ_k dnext[k, i] WT[j, k]     (pure + update definition)
        dpre[j, i] = dh[j, i] * (1 - H[j, i]²)               (a second stage, computed at root)

    Arguments are ``hl.ImageParam``s (2-D float32); returns the output Func ``dpre``.
    """
    hl = _hl()
    for v, n in ((dH, "dH"), (dnext, "dnext"), (WT, "WT"), (H, "H")):
        if not isinstance(v, hl.ImageParam) or v.dimensions() != 2:
            raise TypeError(f"{n}: expected a 2-D hl.ImageParam, got {type(v).__name__}")
    j, i = hl.Var("j"), hl.Var("i")
    k = hl.RDom([(0, dnext.dim(0).extent())], "k")
    dh = hl.Func("dh")
    dh[j, i] = dH[j, i]
    dh[j, i] += dnext[k.x, i] * WT[j, k.x]
    dpre = hl.Func("dpre")
    dpre[j, i] = dh[j, i] * (hl.f32(1) - H[j, i] * H[j, i])
    dh.compute_root()
    return dpre


def compile_func(build: Callable, n_inputs: int) -> Callable:
    """Compile ``build(*image_params) -> Func`` (2-D float32 inputs and output) to
    ``fn(*arrays) -> array`` shaped like the first input; ``fn.loop_nest`` holds its loop nest."""
    hl = _hl()
    n_inputs = check_int(n_inputs, "n_inputs", low=1, high=16)
    params = [hl.ImageParam(_float(hl), 2, f"in{n}") for n in range(n_inputs)]
    func = build(*params)
    if not isinstance(func, hl.Func):
        raise TypeError(f"build: expected a function returning an hl.Func, got {type(func).__name__}")
    pipe = hl.Pipeline(func)
    cb = pipe.compile_to_callable(params, hl.get_jit_target_from_environment())

    def run(*arrays):
        if len(arrays) != n_inputs:
            raise TypeError(f"arrays: expected {n_inputs} input arrays, got {len(arrays)}")
        arrays = [check_array(a, f"arrays[{n}]", ndim=2) for n, a in enumerate(arrays)]
        for n, a in enumerate(arrays):
            if min(a.shape) < 1:
                raise ValueError(f"arrays[{n}]: expected a non-empty 2-D array, got shape {a.shape}")
        arrays = [np.ascontiguousarray(a, np.float32) for a in arrays]
        out = np.empty_like(arrays[0])
        cb(*arrays, out)
        return out

    run.loop_nest = _print_loop_nest(pipe)
    run.stages = count_stages(run.loop_nest)
    return run


def count_stages(loop_nest_text: str) -> int:
    """How many stages of a loop nest are computed as passes of their own: ``produce`` blocks that
    sit in no loop of another stage. A stage computed inside its consumer's loops (an inline
    ``hl.sum``, a ``compute_at``) is fused into that consumer's pass and is not counted."""
    if not isinstance(loop_nest_text, str):
        raise TypeError(f"loop_nest_text: expected the text of a loop nest (str), got {type(loop_nest_text).__name__}")
    loops = ("for ", "parallel ", "vectorized ", "unrolled ", "serial ")
    stack: list[tuple[int, bool]] = []
    count = 0
    for line in loop_nest_text.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        text = line.strip()
        if text.startswith("produce ") and not any(is_loop for _, is_loop in stack):
            count += 1
        stack.append((indent, text.startswith(loops)))
    return count
