"""Checks for worksheet 03 (batching): a batched forward pass and the intensity of a step.

Exercise 3.1 is a speed exercise: after the numbers (and the inputs left unchanged), the check
*counts* the matrix products that read a weight (``@``, ``np.dot`` ... on ``Wxh``, ``Whh``, ``Why``;
see :func:`course_lib.teaching.checks.core.count_products`): they must not grow with the batch size
``B`` -- one GEMM serves all sequences -- and grow by a fixed number per time step. Then it measures
the function against the course's one-sequence-at-a-time loop
(:func:`course_lib.experiments.batching.forward_one_at_a_time`) in the same run with
:func:`course_lib.teaching.checks.speed.judge_speed`: a fresh X for every timed call, every timed result
compared with ``rnn.forward`` on it, the inputs checked for changes, BLAS on one thread; at least
:data:`MIN_SPEEDUP` times faster, judged from the speed-up's interval.
"""
from __future__ import annotations

import numpy as np

from ...experiments import batching
from ...models import rnn
from .core import Case, ExerciseFailed, check_function, count_products, counted
from .shortcuts import check_no_shortcut
from .speed import judge_speed

__all__ = ["check_batched_forward", "check_step_intensity", "MIN_SPEEDUP", "SPEED_SHAPE"]

MIN_SPEEDUP = 3.0
SPEED_SHAPE = dict(T=16, batch=64, nx=32, nh=64, ny=8)


def _forward_reference(params, X, h0=None):
    cache = rnn.forward(params, X, h0)
    return cache.H, cache.Yhat


def _forward_cases(rng: np.random.Generator, i: int) -> Case:
    shapes = [(1, 1, 3, 4, 2), (5, 1, 3, 4, 2), (4, 6, 5, 7, 3), (7, 3, 2, 8, 4), (3, 16, 6, 5, 6)]
    T, B, nx, nh, ny = shapes[i % len(shapes)]
    params = rnn.init_params(nx, nh, ny, seed=i, dtype=np.float64)
    X = rng.uniform(-1, 1, (T, B, nx))
    kwargs = dict(params=params, X=X)
    if i >= 3:  # the last cases start from a non-zero state
        kwargs["h0"] = rng.uniform(-1, 1, (B, nh))
    return Case(kwargs=kwargs, label=f"T={T}, B={B}, nx={nx}, nh={nh}, ny={ny}" + (", h0 given" if i >= 3 else ""))


def check_batched_forward(student, *, min_speedup: float = MIN_SPEEDUP, retries: int = 3) -> str:
    """Exercise 3.1: ``batched_forward(params, X, h0=None) -> (H, Yhat)`` for X (T, B, nx): the numbers,
    the inputs unchanged, products per step independent of B, and the speed against the course's
    one-sequence-at-a-time loop measured alongside.

    Property: one GEMM per product serves the whole batch. The products reading the weights are counted at
    (T, B) = (4, 1), (4, 6), (8, 6): a loop over sequences (more products for B = 6) or more than three per step
    is named; ``rnn.forward`` is a shortcut; then the speed-up over the course's loop must lie wholly above
    :data:`MIN_SPEEDUP`, and the pass prints it."""
    ex = "3.1"
    _shape_probe(student)
    line = check_function(
        ex, student, _forward_reference, _forward_cases, n_cases=5, seed=3,
        output_names=["H", "Yhat"], rtol=1e-9, atol=1e-12, quiet=True, inputs_unchanged=True,
        hint="all B sequences move together: h = tanh(X[t] @ Wxh + h @ Whh) with h of shape (B, nh); "
             "start from zeros((B, nh)) when h0 is None; Yhat[t] = tanh(H[t] @ Why).",
    )
    _check_products(ex, student)
    check_no_shortcut(ex, student, {"rnn.forward": rnn.forward}, **_forward_cases(np.random.default_rng(3), 2).kwargs)
    sz = SPEED_SHAPE
    params = rnn.init_params(sz["nx"], sz["nh"], sz["ny"], seed=1)

    def timed_input(rng):
        X = rng.uniform(-1, 1, (sz["T"], sz["batch"], sz["nx"])).astype(params.Wxh.dtype)
        return Case(kwargs=dict(params=params, X=X),
                    label=f"T={sz['T']}, B={sz['batch']}, nx={sz['nx']}, nh={sz['nh']}, fresh X each call")
    judged = judge_speed(ex, student, _forward_reference, batching.forward_one_at_a_time, timed_input,
                min_speedup=min_speedup, baseline_name="one_at_a_time",
                baseline_desc="the course's one-sequence-at-a-time loop (batching.forward_one_at_a_time)",
                rtol=1e-4, atol=1e-5, retries=retries, blas_threads=1,
                context="your numbers are right and your products do not grow with B",
                hint="no Python loop over the batch or the units: per step one (B, nh) @ (nh, nh) product, and "
                     "X @ Wxh for all steps as one product before the loop.")
    print(line)
    print(f"  speed: {judged.earned}")
    return line


def _check_products(ex: str, student) -> None:
    """Count the products that read a weight for several (T, B); fail when they grow with B."""
    base = rnn.init_params(3, 5, 2, seed=4, dtype=np.float64)
    rng = np.random.default_rng(5)
    n = {}
    for T, B in ((4, 1), (4, 6), (8, 6)):
        params = rnn.RNNParams(counted(base.Wxh), counted(base.Whh), counted(base.Why))
        X = rng.uniform(-1, 1, (T, B, 3))
        try:
            n[T, B], _ = count_products(student, params, X)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise ExerciseFailed(f"Exercise {ex} failed while counting products (T={T}, B={B}):\n  your function "
                                 f"raised {type(exc).__name__}: {exc}") from exc
    where = f"(counted: {n[4, 1]} for T=4, B=1; {n[4, 6]} for T=4, B=6; {n[8, 6]} for T=8, B=6)"
    if n[4, 6] > n[4, 1]:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your function makes {n[4, 6]} matrix products with the weights for B=6 "
            f"sequences but {n[4, 1]} for B=1 {where}: it loops over the sequences, one matrix-vector product each "
            f"-- that is the unbatched RNN this exercise replaces.\n  Hint: X[t] is (B, nx) and h is (B, nh): "
            f"X[t] @ Wxh and h @ Whh serve the whole batch at once.")
    if n[8, 6] == 0:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  the check counts the matrix products your function makes with params.Wxh, "
            f"params.Whh and params.Why and saw none {where}.\n  Hint: use the weights as given (no course "
            f"function, no np.asarray copies) so the products can be counted.")
    per_step = (n[8, 6] - n[4, 6]) / 4
    if per_step > 3:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your function makes {per_step:g} matrix products per time step {where}; "
            f"three at most are needed (x_t Wxh, h Whh, h Why), two with the input projection hoisted.")


def _shape_probe(student) -> None:
    """A friendlier message for the most common slip: returning per-sequence shapes."""
    params = rnn.init_params(3, 4, 2, seed=0, dtype=np.float64)
    X = np.zeros((2, 5, 3))
    try:
        out = student(params, X)
    except NotImplementedError:
        raise
    except Exception:
        return  # check_function reports exceptions with the case
    if not (isinstance(out, tuple) and len(out) == 2):
        raise ExerciseFailed("Exercise 3.1 failed:\n  expected a tuple (H, Yhat), got "
                             f"{type(out).__name__}" + (f" of length {len(out)}" if isinstance(out, tuple) else ""))
    H, Yhat = (np.asarray(a) for a in out)
    if H.shape != (2, 5, 4) or Yhat.shape != (2, 5, 2):
        raise ExerciseFailed(
            "Exercise 3.1 failed:\n  for X of shape (T=2, B=5, nx=3) with nh=4, ny=2, expected H (2, 5, 4) and "
            f"Yhat (2, 5, 2), got H {H.shape} and Yhat {Yhat.shape}\n"
            "  Hint: keep the batch axis: time-major (T, B, features) in and out.")


def _intensity_cases(rng: np.random.Generator, i: int) -> dict:
    fixed = [dict(batch=1, nx=1000, nh=1000), dict(batch=1000, nx=1000, nh=1000),
             dict(batch=64, nx=128, nh=256, itemsize=8)]
    if i < len(fixed):
        return fixed[i]
    batch, nx, nh = (int(v) for v in rng.integers(1, 2000, size=3))
    return dict(batch=batch, nx=nx, nh=nh, itemsize=int(rng.choice([4, 8])))


def check_step_intensity(student) -> str:
    """Exercise 3.2: ``rnn_step_intensity(batch, nx, nh, itemsize=4)`` in FLOP per byte.

    Property: the step's FLOPs over the bytes of both weights and three activations, every argument honoured:
    batch 1 and 1000 (where the weights stop dominating), ``itemsize=8``, random shapes;
    ``batching.rnn_step_intensity`` is a shortcut."""
    return check_function(
        "3.2", student, batching.rnn_step_intensity, _intensity_cases, n_cases=6,
        forbidden={"batching.rnn_step_intensity": batching.rnn_step_intensity},
        hint="FLOPs: 2*batch*(nx + nh)*nh. Bytes: itemsize * (Wxh + Whh + x_t + h_{t-1} + h_t) = "
             "itemsize * (nx*nh + nh*nh + batch*nx + 2*batch*nh).",
    )
