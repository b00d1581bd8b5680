"""Checks for worksheet 00 (setup): the end-to-end flow of an exercise."""
from __future__ import annotations

import numpy as np

from ...core import timing
from .core import check_function

__all__ = ["check_intensity"]


def _cases(rng: np.random.Generator, i: int) -> dict:
    fixed = [dict(m=1000, n=1000, k=1000), dict(m=1, n=1000, k=1000), dict(m=1000, n=1000, k=1, itemsize=8)]
    if i < len(fixed):
        return fixed[i]
    m, n, k = (int(v) for v in rng.integers(1, 300, size=3))
    return dict(m=m, n=n, k=k, itemsize=int(rng.choice([4, 8])))


def check_intensity(student) -> str:
    """Exercise 0.1: ``gemm_intensity(m, n, k, itemsize=4)`` in FLOP per byte.

    Property: the formula 2mnk / (itemsize (mk + kn + mn)), every argument honoured. Six cases: square, a
    matrix-vector shape (m = 1), an outer product (k = 1) with ``itemsize=8`` (an ignored itemsize or a
    swapped dimension is off), and random shapes of both item sizes; ``timing.gemm_intensity`` is a shortcut."""
    return check_function(
        "0.1", student, timing.gemm_intensity, _cases, n_cases=6,
        forbidden={"timing.gemm_intensity": timing.gemm_intensity},
        hint="FLOPs are 2*m*n*k; bytes are itemsize * (elements of A + B + C).",
    )
