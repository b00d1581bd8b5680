"""Inexact MGRIT training with a bias monitor (experiments folder).

A few MGRIT iterations per forward and backward solve give an *inexact* gradient. Recent
layer-parallel training work (2026) reports that this gradient becomes biased near a minimum, where
the true gradient is small and the MGRIT error is not; the remedy is to watch the gap between the
MGRIT gradient and the exact one and switch to exact gradients (or tighten MGRIT) when it grows.

``gradient_gap(params, X, y, **mgrit)`` -> ``{"cosine", "norm_gap"}``: cosine similarity and relative
norm gap ``|g_mgrit - g_exact| / |g_exact|`` of the two classifier gradients on one batch.
``train_monitored(data, *, mode, ...)`` -> a dict: per-epoch cosine / gap / which gradient was used,
test accuracy (exact serial forward) and seconds. ``mode``: ``"exact"`` (always exact), ``"inexact"``
(always MGRIT), ``"monitor"`` (MGRIT until the cosine on a probe batch falls below ``threshold``, then
exact for the rest of the run).
"""
from __future__ import annotations

import time

import numpy as np

from ..core.optim import Adam
from ..core.validate import check_array, check_choice, check_float, check_int, check_positive_int
from ..models import gru

__all__ = ["MODES", "gradient_gap", "train_monitored"]

MODES = ("exact", "inexact", "monitor")


def _flat(g) -> np.ndarray:
    return np.concatenate([np.ravel(a) for a in g.arrays()]).astype(np.float64)


def gradient_gap(params, X, y, **mgrit) -> dict:
    """Cosine and relative norm gap between the MGRIT gradient (``method="mgrit"`` with ``mgrit``
    options, implicit GRU) and the exact one (the serial implicit GRU) of the classifier loss."""
    X = check_array(X, "X", shape=("T", "B", None), min_size={"T": 1, "B": 1})
    if "levels" in mgrit:  # up front: m**(levels-1) <= T / 2, so levels <= log2(T)
        check_int(mgrit["levels"], "levels", low=1, high=max(1, X.shape[0].bit_length()))
    _, ge = gru.classifier_loss(params, X, y, implicit=True)
    _, gm = gru.classifier_loss(params, X, y, implicit=True, method="mgrit", **mgrit)
    e, m = _flat(ge), _flat(gm)
    ne = float(np.linalg.norm(e))
    cos = float(e @ m / max(ne * float(np.linalg.norm(m)), 1e-300))
    return {"cosine": cos, "norm_gap": float(np.linalg.norm(m - e)) / max(ne, 1e-300)}


def train_monitored(data, *, mode: str = "monitor", iters: int = 1, threshold: float = 0.9, nh: int = 16,
                    epochs: int = 8, batch: int = 32, lr: float = 2e-2, clip: float | None = 1.0, seed: int = 0,
                    probe: int = 64, m: int = 4, levels: int = 2) -> dict:
    """Train the implicit-GRU classifier on ``data = (Xtr, ytr, Xte, yte)``. Returns
    ``{"mode", "epochs": [{"epoch", "cosine", "norm_gap", "used"}], "switched_at" (epoch or None),
    "accuracy" (test, serial forward), "seconds" (training steps only, monitor probes excluded)}``."""
    check_choice(mode, "mode", MODES)
    iters = check_int(iters, "iters", low=1, high=10_000)
    threshold = check_float(threshold, "threshold", low=-1.0, high=1.0)
    epochs, batch = check_positive_int(epochs, "epochs", high=100_000), check_positive_int(batch, "batch")
    probe = check_positive_int(probe, "probe")
    nh = check_positive_int(nh, "nh", high=1 << 16)
    seed = check_int(seed, "seed", low=0)
    m = check_int(m, "m", low=2, high=1 << 16)
    if not isinstance(data, (tuple, list)) or len(data) != 4:
        raise TypeError("data: expected a tuple (Xtr, ytr, Xte, yte)")
    dims: dict = {}
    Xtr = check_array(data[0], "data[0] (Xtr)", shape=("T", "N", "nx"), dims=dims, min_size={"T": 1, "N": 1})
    ytr = check_array(data[1], "data[1] (ytr)", shape=(Xtr.shape[1],), dtype="int")
    Xte = check_array(data[2], "data[2] (Xte)", shape=(None, "M", "nx"), dims=dims, min_size={"M": 1})
    yte = check_array(data[3], "data[3] (yte)", shape=(Xte.shape[1],), dtype="int")
    if min(ytr.min(), yte.min()) < 0:
        raise ValueError("data: class labels ytr/yte must be >= 0")
    levels = check_int(levels, "levels", low=1, high=max(1, Xtr.shape[0].bit_length()))
    n_classes = int(max(ytr.max(), yte.max())) + 1
    mg = dict(method="mgrit", m=m, levels=levels, relax="FCF", max_iter=iters, tol=0.0)
    p = gru.init_classifier(Xtr.shape[2], nh, n_classes, seed=seed, dtype=Xtr.dtype)
    opt = Adam(p.arrays(), lr, clip=clip)
    rng = np.random.default_rng(seed)
    use_exact, switched, rows, seconds = mode == "exact", None, [], 0.0
    for e in range(epochs):
        gap = gradient_gap(p, Xtr[:, :probe], ytr[:probe], **{k: v for k, v in mg.items() if k != "method"})
        if mode == "monitor" and not use_exact and gap["cosine"] < threshold:
            use_exact, switched = True, e
        rows.append({"epoch": e, **gap, "used": "exact" if use_exact else "mgrit"})
        order = rng.permutation(Xtr.shape[1])
        t0 = time.perf_counter()
        for s in range(0, Xtr.shape[1], batch):
            idx = order[s:s + batch]
            kw = {} if use_exact else mg
            _, g = gru.classifier_loss(p, Xtr[:, idx], ytr[idx], implicit=True, **kw)
            opt.step(g.arrays())
        seconds += time.perf_counter() - t0
    pred = gru.classifier_predict(p, Xte, implicit=True)
    return {"mode": mode, "epochs": rows, "switched_at": switched, "accuracy": float(np.mean(pred == yte)),
            "seconds": seconds}
