"""Checks for worksheet 03 (batching): a batched forward pass and the intensity of a step."""
from __future__ import annotations

import numpy as np

from ...experiments import batching
from ...models import rnn
from .core import Case, ExerciseFailed, check_function

__all__ = ["check_batched_forward", "check_step_intensity"]


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


def check_batched_forward(student) -> str:
    """Exercise 3.1: ``batched_forward(params, X, h0=None) -> (H, Yhat)`` for X (T, B, nx)."""
    _shape_probe(student)
    return check_function(
        "3.1", student, _forward_reference, _forward_cases, n_cases=5, seed=3,
        output_names=["H", "Yhat"], rtol=1e-9, atol=1e-12,
        hint="all B sequences move together: h = tanh(X[t] @ Wxh + h @ Whh) with h of shape (B, nh); "
             "start from zeros((B, nh)) when h0 is None; Yhat[t] = tanh(H[t] @ Why).",
    )


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
    fixed = [dict(B=1, nx=1000, nh=1000), dict(B=1000, nx=1000, nh=1000), dict(B=64, nx=128, nh=256, itemsize=8)]
    if i < len(fixed):
        return fixed[i]
    B, nx, nh = (int(v) for v in rng.integers(1, 2000, size=3))
    return dict(B=B, nx=nx, nh=nh, itemsize=int(rng.choice([4, 8])))


def check_step_intensity(student) -> str:
    """Exercise 3.2: ``rnn_step_intensity(B, nx, nh, itemsize=4)`` in FLOP per byte."""
    return check_function(
        "3.2", student, batching.rnn_step_intensity, _intensity_cases, n_cases=6,
        hint="FLOPs: 2*B*(nx + nh)*nh. Bytes: itemsize * (Wxh + Whh + x_t + h_{t-1} + h_t) = "
             "itemsize * (nx*nh + nh*nh + B*nx + 2*B*nh).",
    )
