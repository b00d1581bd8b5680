"""The one training result every ``train*`` function in the course returns (core layer)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

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

    def __iter__(self):
        return iter((self.params, self.history))

    def last(self, key: str = "loss") -> float:
        """The last recorded value of a curve (``KeyError`` naming the curves there are)."""
        if key not in self.history or not len(self.history[key]):
            raise KeyError(f"key: no curve {key!r} recorded; curves: {sorted(self.history)}")
        return float(self.history[key][-1])

    def final(self, key: str = "loss", frac: float = 0.1) -> float:
        """Mean of the last ``frac`` of a curve: where training ended, smoothed."""
        vals = self.history.get(key)
        if not vals:
            raise KeyError(f"key: no curve {key!r} recorded; curves: {sorted(self.history)}")
        k = max(1, int(len(vals) * frac))
        return float(np.mean(vals[-k:]))
