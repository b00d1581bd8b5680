"""Checks for worksheet 07 (parallel inference): wavefront schedule, stable softmax, batched
softmax inference, scatter/gather of a batch over P ranks. References: :mod:`course_lib.models.softmax_rnn`
and :mod:`course_lib.parallel.inference`."""
from __future__ import annotations

import numpy as np

from ...core import backend
from ...models import softmax_rnn
from ...parallel import inference
from .core import ExerciseFailed, Passed, check_function, compare_outputs, passed

__all__ = [
    "check_wavefront_schedule",
    "check_softmax",
    "check_batched_predict",
    "check_split_batch",
    "check_gather_chunks",
    "run_split_under_mpi",
]


def _fail(exercise: str, case: str, message: str, hint: str = "") -> ExerciseFailed:
    return ExerciseFailed(f"Exercise {exercise} failed on {case}:\n  {message}" + (f"\n  Hint: {hint}" if hint else ""))


# --------------------------------------------------------------------------- 7.1
def check_wavefront_schedule(student) -> str:
    """Exercise 7.1: ``wavefront_schedule(T, L)`` -> list of diagonals, each a list of ``(l, t)``.

    The order of cells inside one diagonal is free; the diagonals' order is not."""
    ex = "7.1"
    if not callable(student):
        raise ExerciseFailed(f"Exercise {ex}: expected a function, got {type(student).__name__}")
    cases = [(1, 1), (3, 1), (1, 4), (4, 3), (5, 5), (2, 6)]
    hint = "cell (l, t) lies on diagonal d = l + t; there are T + L - 1 diagonals, d = 0 .. T+L-2."
    for i, (T, L) in enumerate(cases, start=1):
        label = f"case {i}/{len(cases)} (T={T}, L={L})"
        got = student(T, L)
        want = inference.wavefront_schedule(T, L)
        try:
            diagonals = [[tuple(int(v) for v in cell) for cell in d] for d in got]
        except (TypeError, ValueError):
            raise _fail(ex, label, f"expected a list of diagonals, each a list of (l, t) pairs, got {got!r:.200}",
                        hint) from None
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
    """Exercise 7.2: a numerically stable ``softmax(o)`` along the last axis."""
    return check_function(
        "7.2", student, lambda o: softmax_rnn.softmax(o, axis=-1), _softmax_cases, n_cases=5,
        rtol=1e-5, atol=1e-7, output_names=["probs"], time_axis=None,
        hint="subtract the maximum of each row (keepdims=True) before np.exp: the result is the same, "
             "but exp never overflows and the largest term is exactly 1.",
    )


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


def check_batched_predict(student) -> str:
    """Exercise 7.3: ``batched_predict(params, X)`` -> probabilities ``(T, B, vocab)``."""
    return check_function(
        "7.3", student, softmax_rnn.forward, _predict_cases, n_cases=5, seed=6,
        rtol=1e-6, atol=1e-9, output_names=["probs"],
        hint="with a batch of row vectors, a = x U^T + h W^T + b; the layer above reads this layer's h; "
             "the state starts at zero for every layer; y = softmax(h V^T + c) of the top layer.",
    )


# --------------------------------------------------------------------------- 7.4 / 7.5
def check_split_batch(student) -> str:
    """Exercise 7.4: ``split_batch(B, P)`` -> ``(counts, offsets)``, balanced; ValueError when P > B."""
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
        counts, offsets = (list(int(v) for v in part) for part in got)
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
    label = f"case {total}/{total} (B=3, P=4)"
    try:
        student(3, 4)
    except NotImplementedError:
        raise
    except ValueError:
        pass
    except Exception as exc:
        raise _fail(ex, label, f"expected a ValueError (more ranks than sequences), got {type(exc).__name__}: {exc}")
    else:
        raise _fail(ex, label, "expected a ValueError: 4 ranks cannot share 3 sequences (one would idle); "
                               "your function returned normally", "raise ValueError(...) when P > B")
    return passed(ex, total, total)


def _gather_cases(rng, i):
    T, V = int(rng.integers(1, 5)), int(rng.integers(2, 6))
    counts = [[3], [2, 2], [3, 2, 2], [1, 1, 1, 1], [4, 3, 3, 3]][i]
    return {"chunks": [rng.random((T, c, V)) for c in counts]}


def check_gather_chunks(student) -> str:
    """Exercise 7.5: ``gather_chunks(chunks)``: rank-ordered ``(T, b_r, V)`` chunks -> ``(T, B, V)``."""
    return check_function(
        "7.5", student, inference.gather_chunks, _gather_cases, n_cases=5, seed=5, output_names=["probs"],
        hint="the batch is axis 1 of each (T, b_r, V) chunk: concatenate along axis=1, in rank order.",
        time_name="time step",
    )


# --------------------------------------------------------------------------- optional, real MPI
def run_split_under_mpi(split_batch, *, B: int = 7, P: int = 2, timeout: float = 60.0) -> str:
    """Run real data-parallel inference under ``mpiexec -n P`` with the counts your
    ``split_batch(B, P)`` returns, and compare with serial inference. Returns a one-line report."""
    ok, why = backend.mpi_available()
    counts, _ = split_batch(B, P)
    if not ok:
        line = f"MPI is not available here ({why}); your counts {list(counts)} were checked without it."
        print(line)
        return Passed(line)
    params = softmax_rnn.init_params(6, 8, 5, layers=2, seed=3)
    X = np.random.default_rng(4).standard_normal((5, B, 6)).astype(np.float32)
    res = inference.run_mpi(params, X, ranks=P, counts=list(counts), timeout=timeout)
    ref = softmax_rnn.forward(params, X, method="serial")
    msg = compare_outputs(res.probs, ref, name="probs", rtol=1e-4, atol=1e-6)
    if msg:
        raise ExerciseFailed(f"Under mpiexec -n {P} with counts {list(counts)}:\n  {msg}")
    line = (f"mpiexec -n {P}: ranks got {list(counts)} of {B} sequences; gathered probabilities match serial "
            f"(max error {float(np.max(np.abs(res.probs - ref))):.1e})")
    print(line)
    return Passed(line)
