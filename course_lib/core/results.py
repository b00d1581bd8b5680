"""The one training result every ``train*`` function in the course returns (core layer)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .validate import check_float

__all__ = ["TrainResult"]


@dataclass
class TrainResult:
    """What training produced.

    ``params``   the final parameters (the model's own dataclass);
    ``history``  named curves, each a list with one value per recorded point, e.g.
                 ``{"loss": [...], "accuracy": [...], "step": [...]}`` -- each ``train*`` documents its keys;
    ``seconds``  wall-clock time of the training loop;
    ``info``     anything else worth keeping (``converged``, ``steps``, the method used, ...).

    Unpacks as ``params, history = train(...)`` for the common case.
    """

    params: Any
    history: dict = field(default_factory=dict)
    seconds: float = 0.0
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.history, dict):
            raise TypeError(f"history: expected a dict of named curves (lists), got {type(self.history).__name__}")
        if not isinstance(self.info, dict):
            raise TypeError(f"info: expected a dict, got {type(self.info).__name__}")
        self.seconds = check_float(self.seconds, "seconds", low=0.0)

    def _curve(self, key) -> list:
        if not isinstance(key, str):
            raise TypeError(f"key: expected the name of a curve (a str), got {type(key).__name__} {key!r}")
        vals = self.history.get(key)
        if vals is None or not len(vals):
            raise KeyError(f"key: no curve {key!r} recorded; curves: {sorted(self.history)}")
        return vals

    def __iter__(self):
        return iter((self.params, self.history))

    def last(self, key: str = "loss") -> float:
        """The last recorded value of a curve (``KeyError`` naming the curves there are)."""
        return float(self._curve(key)[-1])

    def final(self, key: str = "loss", frac: float = 0.1) -> float:
        """Mean of the last ``frac`` of a curve: where training ended, smoothed."""
        vals = self._curve(key)
        frac = check_float(frac, "frac", low=0.0, high=1.0, low_inclusive=False)
        k = max(1, int(len(vals) * frac))
        return float(np.mean(vals[-k:]))
