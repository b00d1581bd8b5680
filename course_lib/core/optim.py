"""Adam, the optimiser every chapter's training loop shares (core/).

    opt = Adam(params.arrays(), lr=1e-2, clip=5.0)   # a Params' arrays, updated in place
    for ...:
        loss, grads = ...                            # grads: the same Params class
        norm = opt.step(grads.arrays())              # returns the gradient norm before clipping

Every training loop in the course uses it this way (:mod:`course_lib.core.params`); a plain list of
arrays works too.

Kingma & Ba's update with bias correction; ``clip`` rescales the gradients so that their global
norm is at most ``clip``. A non-finite gradient stops training with a FloatingPointError
instead of silently turning the weights into NaN.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .params import Params
from .validate import as_array, check_array, check_float

__all__ = ["Adam"]


class Adam:
    """Adam over a list of arrays, updated in place by :meth:`step`."""

    def __init__(self, params: Sequence[np.ndarray], lr: float, *, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-8, clip: float | None = None):
        if isinstance(params, Params):
            raise TypeError(f"params: expected a list of arrays -- pass {type(params).__name__}.arrays()")
        self.params = list(params)
        if not self.params or not all(isinstance(p, np.ndarray) for p in self.params):
            raise TypeError("params: expected a non-empty list of numpy arrays (updated in place)")
        for i, p in enumerate(self.params):
            check_array(p, f"params[{i}]")          # float32/float64 (updated in place) and finite
        self.lr = check_float(lr, "lr", low=0.0, low_inclusive=False)
        # b = 1 makes the bias correction 1 - b**t zero: the first step would divide by zero (NaN weights)
        self.b1 = check_float(b1, "b1", low=0.0, high=1.0, high_inclusive=False)
        self.b2 = check_float(b2, "b2", low=0.0, high=1.0, high_inclusive=False)
        self.eps = check_float(eps, "eps", low=0.0, low_inclusive=False)
        self.clip = None if clip is None else check_float(clip, "clip", low=0.0, low_inclusive=False)
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0

    def step(self, grads: Sequence[np.ndarray]) -> float:
        """One update from ``grads`` (same order and shapes as the params); returns the gradient
        norm before clipping."""
        if isinstance(grads, Params):
            raise TypeError(f"grads: expected a list of arrays -- pass {type(grads).__name__}.arrays()")
        if isinstance(grads, np.ndarray) or not hasattr(grads, "__iter__"):
            raise TypeError(f"grads: expected a list of arrays (one per parameter), got {type(grads).__name__}")
        grads = list(grads)
        if len(grads) != len(self.params):
            raise ValueError(f"grads: expected {len(self.params)} arrays (one per parameter), got {len(grads)}")
        for i, (p, g) in enumerate(zip(self.params, grads)):
            g = grads[i] = as_array(g, f"grads[{i}]")
            if np.shape(g) != p.shape:
                raise ValueError(f"grads[{i}]: expected shape {p.shape}, got {np.shape(g)}")
            if g.dtype.kind not in "fiu":
                raise TypeError(f"grads[{i}]: expected a real numeric array, got dtype {g.dtype}")
        norm = math.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in grads))
        if not math.isfinite(norm):
            raise FloatingPointError(f"gradients are not finite (norm {norm}) at step {self.t + 1}: "
                                     "training diverged -- try a smaller learning rate")
        scale = 1.0 if self.clip is None else min(1.0, self.clip / (norm + 1e-12))
        self.t += 1
        c1, c2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            if scale != 1.0:
                g = g * scale
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * (g * g)
            p -= self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)
        return norm
