"""Checks for worksheet 07 (parallel inference): wavefront schedule, stable softmax, batched
softmax inference, scatter/gather of a batch over P ranks. References: :mod:`course_lib.models.softmax_rnn`
and :mod:`course_lib.parallel.inference`.

Exercise 7.3 is also a speed exercise. After the numbers, a *race test* runs your function on longer inputs
(T = 40 and 320) with one layer at a time made slow (:class:`SlowWeights`: its products sleep first) and
compares every run: threads that read a layer's state before it was written (one thread per layer, no
waiting) are named. Then the check *counts* the matrix products your
function makes with the weights (``@``, ``np.matmul``, ``np.dot``, ``np.einsum`` ... on ``U``, ``W``,
``V``; see :class:`course_lib.teaching.checks.core.CountedArray`) -- per time step they must not depend on the batch size ``B`` nor on
``T`` -- and then measures it against the course's serial loop (``softmax_rnn.forward(method="sequential")``,
one sequence at a time) in the same run, through :func:`.speed.judge_speed`: a fresh ``X`` for every timed
call, every timed result compared, at least :data:`MIN_SPEEDUP` times faster. Every grader here rejects a
solution that calls the course's own answer (:mod:`.shortcuts`).
"""
from __future__ import annotations

import time

import numpy as np

from ...core import backend
from ...models import softmax_rnn
from ...parallel import inference
from .speed import judge_speed
from .shortcuts import check_no_shortcut
from .core import (ExerciseFailed, Passed, check_function, compare_outputs, count_products, counted,
                   passed)

__all__ = [
    "check_wavefront_schedule",
    "check_softmax",
    "check_batched_predict",
    "check_split_batch",
    "check_gather_chunks",
    "run_split_under_mpi",
    "count_products",
    "MIN_SPEEDUP",
]

MIN_SPEEDUP = 3.0          # 7.3: batched inference vs the course's one-sequence-at-a-time loop
SPEED_SIZES = dict(T=16, batch=32, nx=16, nh=64, vocab=32, layers=2)


def _fail(exercise: str, case: str, message: str, hint: str = "") -> ExerciseFailed:
    return ExerciseFailed(f"Exercise {exercise} failed on {case}:\n  {message}" + (f"\n  Hint: {hint}" if hint else ""))


# --------------------------------------------------------------------------- 7.1
def check_wavefront_schedule(student) -> str:
    """Exercise 7.1: ``wavefront_schedule(T, L)`` -> list of diagonals, each a list of ``(l, t)``.

    The order of cells inside one diagonal is free; the diagonals' order is not.

    Property: cell (l, t) on diagonal l + t, every cell once. Six (T, L) including T < L, L < T and 1 x 1: a
    missing, extra or repeated cell and a wrong number of diagonals are named; the course's schedule is a
    shortcut."""
    ex = "7.1"
    if not callable(student):
        raise ExerciseFailed(f"Exercise {ex}: expected a function, got {type(student).__name__}")
    cases = [(1, 1), (3, 1), (1, 4), (4, 3), (5, 5), (2, 6)]
    hint = "cell (l, t) lies on diagonal d = l + t; there are T + L - 1 diagonals, d = 0 .. T+L-2."
    for i, (T, L) in enumerate(cases, start=1):
        label = f"case {i}/{len(cases)} (T={T}, L={L})"
        try:
            got = student(T, L)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise _fail(ex, label, f"your function raised {type(exc).__name__}: {exc}",
                        hint + " Loop over d, then over l, and keep only 0 <= t = d - l < T.") from exc
        want = inference.wavefront_schedule(T, L)
        try:
            diagonals = [[tuple(int(v) for v in cell) for cell in d] for d in got]
        except (TypeError, ValueError):
            raise _fail(ex, label, f"expected a list of diagonals, each a list of (l, t) pairs, got {got!r:.200}",
                        hint) from None
        odd = next((cell for d in diagonals for cell in d if len(cell) != 2), None)
        if odd is not None:
            raise _fail(ex, label, f"every cell must be a pair (l, t); got {odd} with {len(odd)} entries", hint)
        if len(diagonals) != len(want):
            raise _fail(ex, label, f"expected {len(want)} diagonals (T + L - 1), got {len(diagonals)}", hint)
        for d, (g, w) in enumerate(zip(diagonals, want)):
            if sorted(g) != sorted(w):
                missing = sorted(set(w) - set(g))
                extra = sorted(set(g) - set(w))
                dup = len(g) != len(set(g))
                msg = f"diagonal {d} should hold the cells {sorted(w)}, got {g}"
                if missing:
                    msg += f"; missing {missing}"
                if extra:
                    msg += f"; {extra} do not belong here (l + t = {[l + t for l, t in extra]}, or out of range)"
                if dup:
                    msg += "; some cell is listed twice"
                raise _fail(ex, label, msg, hint)
    check_no_shortcut(ex, student, {"inference.wavefront_schedule": inference.wavefront_schedule}, 4, 3)
    return passed(ex, len(cases), len(cases))


# --------------------------------------------------------------------------- 7.2
def _softmax_cases(rng, i):
    shapes = [(5,), (3, 4), (2, 3, 7), (4, 6), (1, 9)]
    o = rng.standard_normal(shapes[i])
    if i == 3:
        o = o * 300 + 1000.0   # exp(1000) overflows float64: only a stable softmax survives
    if i == 4:
        o = o - 800.0          # every exp underflows to 0 without the shift
    return {"o": o.astype(np.float32 if i % 2 else np.float64)}


def check_softmax(student) -> str:
    """Exercise 7.2: a numerically stable ``softmax(o)`` along the last axis.

    Property: stability. Cases whose logits overflow exp (around 1000) and underflow it (around -800), 1-D to
    3-D (the wrong axis is off), float32 and float64, inputs unchanged; the course's softmax is a shortcut."""
    line = check_function(
        "7.2", student, lambda o: softmax_rnn.softmax(o, axis=-1), _softmax_cases, n_cases=5, quiet=True,
        rtol=1e-5, atol=1e-7, output_names=["probs"], time_axis=None, inputs_unchanged=True,
        hint="subtract the maximum of each row (keepdims=True) before np.exp: the result is the same, "
             "but exp never overflows and the largest term is exactly 1.",
    )
    check_no_shortcut("7.2", student, {"softmax_rnn.softmax": softmax_rnn.softmax,
                                       "softmax_rnn.softmax_unchecked": softmax_rnn.softmax_unchecked},
                      np.arange(6.0).reshape(2, 3))
    print(line)
    return line


# --------------------------------------------------------------------------- 7.3
def _predict_cases(rng, i):
    sizes = [(1, 1, 3, 4, 5, 1), (4, 3, 5, 6, 7, 1), (6, 2, 4, 8, 5, 2), (3, 5, 2, 3, 4, 3), (8, 4, 6, 5, 9, 2)]
    T, B, nx, nh, vocab, L = sizes[i]
    params = softmax_rnn.init_params(nx, nh, vocab, layers=L, seed=int(rng.integers(1000)), dtype=np.float64)
    for layer in params.layers:  # non-zero biases, so forgetting b shows
        layer.b[:] = rng.standard_normal(nh) * 0.5
    params.c[:] = rng.standard_normal(vocab)
    X = rng.standard_normal((T, B, nx))
    return {"params": params, "X": X}


_PREDICT_HINT = ("with a batch of row vectors, a = x U^T + h W^T + b; the layer above reads this layer's h; "
                 "the state starts at zero for every layer; y = softmax(h V^T + c) of the top layer.")


#: the course's own answers to 7.3: a solution that calls one of them is a shortcut
_PREDICT_ANSWERS = {"softmax_rnn.forward": softmax_rnn.forward, "softmax_rnn.batched_core": softmax_rnn.batched_core,
                    "softmax_rnn.hidden_states": softmax_rnn.hidden_states, "inference.predict": inference.predict,
                    # the batched cell, tanh(x U^T + h W^T + b), is the product the exercise asks you to write
                    "softmax_rnn.cell_step": softmax_rnn.cell_step,
                    "softmax_rnn.cell_step_unchecked": softmax_rnn.cell_step_unchecked,
                    "inference.predict_threads": inference.predict_threads,
                    "inference.predict_wavefront": inference.predict_wavefront}


def _params_arrays(params) -> dict:
    out = {}
    for l, layer in enumerate(getattr(params, "layers", [])):
        for f in ("U", "W", "b"):
            out[f"params.layers[{l}].{f}"] = getattr(layer, f)
    out["params.V"], out["params.c"] = params.V, params.c
    return out


def _snapshot(kwargs) -> dict:
    arrays = {"X": kwargs["X"]} | _params_arrays(kwargs["params"])
    return {k: np.array(v, copy=True) for k, v in arrays.items()}


def check_batched_predict(student, *, min_speedup: float = MIN_SPEEDUP, retries: int = 2) -> str:
    """Exercise 7.3: ``batched_predict(params, X)`` -> probabilities ``(T, B, vocab)``, computed for the
    whole batch at once: the numbers, then the products per step (independent of ``B`` and ``T``),
    then the speed against the course's serial loop measured alongside.

    Property: one product per layer and step serves the batch, without races. Races: layers made slow one at a
    time, every run compared; products counted as functions of B and T (a per-sequence loop, or a prefix
    recomputed, is named); the course's forward/predict functions are shortcuts; the speed-up must lie wholly
    above :data:`MIN_SPEEDUP`, and the pass prints it."""
    ex = "7.3"
    if not callable(student):
        raise ExerciseFailed(f"Exercise {ex}: expected a function, got {type(student).__name__}")
    # 1. the numbers (and the inputs left as they were: params and X belong to the caller)
    rng = np.random.default_rng(6)
    cases = [_predict_cases(rng, i) for i in range(5)]
    check_function(ex, student, softmax_rnn.forward, cases, rtol=1e-6, atol=1e-9,
                   output_names=["probs"], hint=_PREDICT_HINT, quiet=True)
    _check_inputs_unchanged(ex, student, _predict_cases(np.random.default_rng(9), 2))
    # 2. races: longer inputs, one layer at a time made slow, every run compared
    _check_no_race(ex, student)
    # 3. the structure: matrix products per time step, counted
    _check_products_per_step(ex, student)
    check_no_shortcut(ex, student, _PREDICT_ANSWERS, **_predict_cases(np.random.default_rng(9), 1))
    # 4. the speed: a ratio to the course's one-sequence-at-a-time loop, measured now; every timed call gets a
    #    fresh X and its result is compared with the reference
    sz = SPEED_SIZES
    params = softmax_rnn.init_params(sz["nx"], sz["nh"], sz["vocab"], layers=sz["layers"], seed=7)

    def make_input(rng):
        return {"params": params, "X": rng.standard_normal((sz["T"], sz["batch"], sz["nx"])).astype(np.float32)}

    judged = judge_speed(ex, student, softmax_rnn.forward, lambda params, X: softmax_rnn.forward(params, X, method="sequential"),
                make_input, min_speedup=min_speedup, baseline_name="course_serial",
                baseline_desc="the course's serial loop (one sequence at a time)", rtol=1e-4, atol=1e-6,
                retries=retries, blas_threads=1, seed=8,
                label=f"T={sz['T']}, B={sz['batch']}, H={sz['nh']}, L={sz['layers']}, float32",
                context="your numbers are right and your products per step do not grow with B",
                hint="avoid per-sequence Python work inside the time loop: one (B, n_in) @ (n_in, H) product per "
                     "layer and step; the input projection X U^T + b of all steps can even be one product before "
                     "the loop.")
    line = passed(ex, len(cases), len(cases))
    print(f"  speed: {judged.earned}")
    return line


def _check_inputs_unchanged(ex: str, student, case: dict) -> None:
    """Fail, naming the array, when ``student`` changes ``X`` or a parameter array in place."""
    before = _snapshot(case)
    student(**case)
    after = {"X": case["X"]} | _params_arrays(case["params"])
    for name, old in before.items():
        new = np.asarray(after[name])
        if new.shape != old.shape or not np.array_equal(new, old, equal_nan=True):
            raise ExerciseFailed(
                f"Exercise {ex} failed:\n  your function changed its input {name} in place; work on new arrays "
                f"(h = np.tanh(...) rather than h[:] = ..., layer.b + ... rather than layer.b += ...) and leave "
                f"params and X as they were")


class SlowWeights(np.ndarray):
    """A weight matrix whose matrix products first sleep ``delay`` seconds (the GIL released, as during a
    big product), so that one layer of a network runs slower than the others: a thread that reads
    another layer's output before that layer wrote it then reads it too early, every time."""

    delay: float = 0.0

    def __array_finalize__(self, obj):
        self.delay = getattr(obj, "delay", 0.0)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul and self.delay:
            time.sleep(self.delay)
        inputs = tuple(v.view(np.ndarray) if isinstance(v, SlowWeights) else v for v in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(v.view(np.ndarray) if isinstance(v, SlowWeights) else v for v in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func in _SLOW_FUNCS and self.delay:
            time.sleep(self.delay)
        strip = lambda v: v.view(np.ndarray) if isinstance(v, SlowWeights) else v  # noqa: E731
        out = func(*(strip(a) for a in args), **{k: strip(v) for k, v in kwargs.items()})
        return out.view(SlowWeights) if func in _SLOW_VIEWS and isinstance(out, np.ndarray) else out

    def dot(self, other, out=None):
        if self.delay:
            time.sleep(self.delay)
        return np.dot(self.view(np.ndarray), other, out=out)


_SLOW_FUNCS = {np.dot, np.inner, np.tensordot, np.einsum, np.vdot}
_SLOW_VIEWS = {np.transpose, np.swapaxes, np.reshape, np.concatenate, np.stack, np.hstack, np.vstack, np.copy}


def slow_weights(a, delay: float) -> SlowWeights:
    """A view of ``a`` whose products sleep ``delay`` seconds first (:class:`SlowWeights`)."""
    out = np.asarray(a).view(SlowWeights)
    out.delay = float(delay)
    return out


RACE_SIZES = dict(T=40, batch=3, nx=4, nh=6, vocab=5, layers=3)   # longer than the numbers' cases
RACE_DELAY = 3e-4                                                  # seconds per product of the slowed layer


def _race_runs():
    """``(label, params, X)`` of the race test: each layer made slow in turn, then two plain long runs."""
    sz = RACE_SIZES
    rng = np.random.default_rng(73)
    params = softmax_rnn.init_params(sz["nx"], sz["nh"], sz["vocab"], layers=sz["layers"], seed=73, dtype=np.float64)
    for layer in params.layers:
        layer.b[:] = rng.standard_normal(sz["nh"]) * 0.5
    runs = []
    for slow in range(sz["layers"]):
        layers = [softmax_rnn.Layer(slow_weights(L.U, RACE_DELAY if l == slow else 0.0),
                                    slow_weights(L.W, RACE_DELAY if l == slow else 0.0), L.b.copy())
                  for l, L in enumerate(params.layers)]
        X = rng.standard_normal((sz["T"], sz["batch"], sz["nx"]))
        runs.append((f"layer {slow}'s products slowed by {RACE_DELAY * 1e3:g} ms",
                     softmax_rnn.SoftmaxRNNParams(layers, params.V.copy(), params.c.copy()), X))
    for _ in range(2):
        runs.append(("no layer slowed", params, rng.standard_normal((8 * sz["T"], sz["batch"], sz["nx"]))))
    return runs


def _check_no_race(ex: str, student) -> None:
    """Run ``student`` on longer inputs than the numbers' cases, with one layer at a time made slow
    (:class:`SlowWeights`), and compare every run with the reference: threads that do not wait for the
    layer below (or the step before) read its state too early here."""
    runs = _race_runs()
    sz = RACE_SIZES
    for k, (why, params, X) in enumerate(runs, start=1):
        label = (f"run {k}/{len(runs)} of the race test (T={X.shape[0]}, B={sz['batch']}, H={sz['nh']}, "
                 f"L={sz['layers']}; {why})")
        try:
            got = student(params, X)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise _fail(ex, label, f"your function raised {type(exc).__name__}: {exc}") from exc
        plain = softmax_rnn.SoftmaxRNNParams(
            [softmax_rnn.Layer(np.asarray(L.U).view(np.ndarray), np.asarray(L.W).view(np.ndarray), L.b)
             for L in params.layers], params.V, params.c)
        msg = compare_outputs(got, softmax_rnn.forward(plain, X), name="probs", rtol=1e-6, atol=1e-9)
        if msg:
            raise _fail(ex, label, f"{msg}\n  your numbers were right on the short cases but are wrong on this "
                                   "longer run: a race -- some thread read a state (h of the layer below, or of "
                                   "the step before) before the thread computing it had written it",
                        "a layer may start step t only after the layer below finished step t (and itself step "
                        "t - 1): wait for it (a threading.Event or queue per layer, a Barrier per diagonal) -- "
                        "or simply run the layers one after another, each over the whole batch.")


def _counted_params(params):
    layers = [softmax_rnn.Layer(counted(L.U), counted(L.W), L.b.copy()) for L in params.layers]
    return softmax_rnn.SoftmaxRNNParams(layers, counted(params.V), params.c.copy())


def _check_products_per_step(ex: str, student) -> None:
    L = 2
    params = softmax_rnn.init_params(3, 5, 4, layers=L, seed=11, dtype=np.float64)
    rng = np.random.default_rng(12)
    n = {}
    for T, B in ((4, 1), (4, 6), (8, 6), (12, 6)):
        X = rng.standard_normal((T, B, 3))
        try:
            n[T, B], _ = count_products(student, _counted_params(params), X)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise ExerciseFailed(f"Exercise {ex} failed while counting products (T={T}, B={B}, L={L}):\n  your "
                                 f"function raised {type(exc).__name__}: {exc}") from exc
    per_step = (n[12, 6] - n[8, 6]) / 4
    where = f"(L={L} layers; counted: {n[4, 1]} products for T=4, B=1; {n[4, 6]} for T=4, B=6; {n[8, 6]} for T=8; " \
            f"{n[12, 6]} for T=12)"
    if n[4, 6] != n[4, 1]:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your function makes {n[4, 6]} matrix products for a batch of B=6 sequences "
            f"but {n[4, 1]} for B=1 {where}: it loops over the sequences, one matrix-vector product each.\n  Hint: "
            f"X[t] is (B, n_in): one product X[t] @ U.T serves the whole batch -- no loop over b.")
    if per_step <= 0:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  the check counts the matrix products your function makes with the weights "
            f"(U, W, V) and saw none inside the time loop {where}.\n  Hint: use params.layers[l].U, .W and "
            f"params.V as given (no np.asarray / np.ascontiguousarray copies, no course function) so the products "
            f"can be counted.")
    if n[8, 6] - n[4, 6] != n[12, 6] - n[8, 6]:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  the number of matrix products grows faster than T {where}: some step "
            f"recomputes earlier steps.\n  Hint: carry h from step to step; each step makes a fixed number of products.")
    if per_step > 2 * L + 1:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your function makes {per_step:g} matrix products per time step for L={L} "
            f"layers {where}; at most 2 L + 1 = {2 * L + 1} are needed (x U^T and h W^T per layer, h V^T on top).")


# --------------------------------------------------------------------------- 7.4 / 7.5
def check_split_batch(student) -> str:
    """Exercise 7.4: ``split_batch(batch, P)`` -> ``(counts, offsets)``, balanced; ValueError when P > B.

    Property: a balanced split (counts differ by at most one, the extra ones first) whose offsets are the running
    sum. Six (B, P) including B = P, P = 1 and B % P != 0, then P > B must raise ValueError."""
    ex = "7.4"
    cases = [(8, 2), (7, 3), (5, 5), (1, 1), (10, 4), (100, 7)]
    total = len(cases) + 1
    hint = "every rank gets B // P sequences and the first B % P ranks one more; offsets are the running sum."
    for i, (B, P) in enumerate(cases, start=1):
        label = f"case {i}/{total} (B={B}, P={P})"
        try:
            got = student(B, P)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise _fail(ex, label, f"your function raised {type(exc).__name__}: {exc}", hint) from exc
        if not (isinstance(got, tuple) and len(got) == 2):
            raise _fail(ex, label, f"expected a tuple (counts, offsets), got {type(got).__name__}", hint)
        try:
            counts, offsets = (list(int(v) for v in part) for part in got)
        except (TypeError, ValueError):
            raise _fail(ex, label, f"expected (counts, offsets) as two lists of integers, got {got!r:.200}",
                        hint) from None
        want_c, want_o = inference.split_batch(B, P)
        if len(counts) != P:
            raise _fail(ex, label, f"expected {P} counts (one per rank), got {len(counts)}: {counts}", hint)
        if sum(counts) != B:
            raise _fail(ex, label, f"the counts {counts} add up to {sum(counts)}, not B = {B}: "
                                   f"{'some sequences are lost' if sum(counts) < B else 'some are counted twice'}", hint)
        if counts != want_c:
            spread = max(counts) - min(counts)
            why = (f"the largest and smallest counts differ by {spread} (balanced means at most 1)" if spread > 1
                   else "the extra sequences should go to the first ranks")
            raise _fail(ex, label, f"counts {counts}, expected {want_c}: {why}", hint)
        if offsets != want_o:
            r = next(k for k, (a, b) in enumerate(zip(offsets, want_o)) if a != b) if len(offsets) == P else None
            where = f" (first wrong at rank {r})" if r is not None else f" (expected {P} offsets)"
            raise _fail(ex, label, f"offsets {offsets}, expected {want_o}{where}", hint)
    check_no_shortcut(ex, student, {"inference.split_batch": inference.split_batch}, 10, 4)
    label = f"case {total}/{total} (B=3, P=4)"
    try:
        student(3, 4)
    except NotImplementedError:
        raise
    except ValueError:
        pass
    except Exception as exc:
        raise _fail(ex, label, f"expected a ValueError (more ranks than sequences), got {type(exc).__name__}: {exc}") from exc
    else:
        raise _fail(ex, label, "expected a ValueError: 4 ranks cannot share 3 sequences (one would idle); "
                               "your function returned normally", "raise ValueError(...) when P > B")
    return passed(ex, total, total)


def _gather_cases(rng, i):
    T, V = int(rng.integers(1, 5)), int(rng.integers(2, 6))
    counts = [[3], [2, 2], [3, 2, 2], [1, 1, 1, 1], [4, 3, 3, 3]][i]
    return {"chunks": [rng.random((T, c, V)) for c in counts]}


def check_gather_chunks(student) -> str:
    """Exercise 7.5: ``gather_chunks(chunks)``: rank-ordered ``(T, b_r, V)`` chunks -> ``(T, B, V)``.

    Property: concatenation along the batch axis in rank order. One to four chunks of unequal sizes (the wrong
    axis fails on shape or numbers), inputs unchanged; the course's gather is a shortcut."""
    line = check_function(
        "7.5", student, inference.gather_chunks, _gather_cases, n_cases=5, seed=5, output_names=["probs"],
        inputs_unchanged=True, quiet=True,
        hint="the batch is axis 1 of each (T, b_r, V) chunk: concatenate along axis=1, in rank order.",
        time_name="time step",
    )
    check_no_shortcut("7.5", student, {"inference.gather_chunks": inference.gather_chunks},
                      [np.ones((2, 1, 3)), np.zeros((2, 2, 3))])
    print(line)
    return line


# --------------------------------------------------------------------------- optional, real MPI
def run_split_under_mpi(split_batch, *, batch: int = 7, P: int = 2, timeout: float = 60.0) -> str:
    """Run real data-parallel inference under ``mpiexec -n P`` with the counts your
    ``split_batch(batch, P)`` returns, and compare with serial inference. Returns a one-line report."""
    ok, why = backend.mpi_available()
    counts, _ = split_batch(batch, P)
    if not ok:
        line = f"MPI is not available here ({why}); your counts {list(counts)} were checked without it."
        print(line)
        return Passed(line)
    params = softmax_rnn.init_params(6, 8, 5, layers=2, seed=3)
    X = np.random.default_rng(4).standard_normal((5, batch, 6)).astype(np.float32)
    res = inference.run_mpi(params, X, ranks=P, counts=list(counts), timeout=timeout)
    ref = softmax_rnn.forward(params, X, method="sequential")
    msg = compare_outputs(res.probs, ref, name="probs", rtol=1e-4, atol=1e-6)
    if msg:
        raise ExerciseFailed(f"Under mpiexec -n {P} with counts {list(counts)}:\n  {msg}")
    line = (f"mpiexec -n {P}: ranks got {list(counts)} of {batch} sequences; gathered probabilities match serial "
            f"(max error {float(np.max(np.abs(res.probs - ref))):.1e})")
    print(line)
    return Passed(line)
