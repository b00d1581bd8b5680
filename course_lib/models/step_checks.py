"""After-the-fact finiteness checks of one RNN training step (models layer; used by fast_rnn and numpy_step).

A fast step does not search its big inputs ``X (T, B, nx)`` and ``Y (T, B, ny)`` for NaN or inf before it
starts (that pass would cost a few percent of the step). It looks at what came out instead -- the loss, a
float, and the three gradient matrices, O(weights) -- and only when something there is not finite does it
search the inputs, to name the first bad entry.

``check_loss(loss, X, Y, h0) -> loss``   a non-finite loss: blame an input, else "the weights have diverged"
``check_grads(grads, X, Y, h0)``         the same for the gradient matrices
``blame(X, Y, h0)``                      raise ValueError naming the first non-finite entry of X, Y or h0
"""
from __future__ import annotations

import math

import numpy as np

from ..core.validate import check_array

__all__ = ["check_loss", "check_grads", "blame"]


def check_loss(loss: float, X, Y, h0) -> float:
    """A non-finite loss means non-finite inputs (named here) or diverged weights."""
    if not math.isfinite(loss):
        blame(X, Y, h0)
        raise FloatingPointError(f"the loss is {loss}: the weights have diverged; use a smaller lr")
    return loss


def blame(X, Y, h0) -> None:
    """Raise ValueError naming the first non-finite input (only called once something is non-finite)."""
    for a, name in ((X, "X"), (Y, "Y"), (h0, "h0")):
        if a is not None:
            check_array(a, name, dtype=None)  # raises ValueError naming the first bad entry


def check_grads(grads, X, Y, h0) -> None:
    """The loss can stay finite while the gradients are not: ``tanh`` saturates an ``inf`` in X to
    a finite hidden state, but ``Xᵀ Δz`` then holds ``inf * 0 = NaN``. Checking the three gradient
    matrices costs O(weights), nothing next to the step; only then are X, Y, h0 searched."""
    if not all(np.isfinite(g).all() for g in grads):
        blame(X, Y, h0)
        raise FloatingPointError("the gradients are non-finite: the weights have diverged; use a smaller lr")
