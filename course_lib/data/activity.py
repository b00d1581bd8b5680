"""Synthetic long-sequence "activity" classification data, generated in code (data layer; chapter 10).

A stand-in for the seed's HMDB51 video features (Moon & Cyr 2022): each sequence is a noisy
multi-channel signal (think of a 3-axis accelerometer) whose class -- an activity -- is carried by
a pattern repeated over the *whole* sequence, not by one event:

* ``rest``  -- slow drift, small amplitude;
* ``walk``  -- a cadence of period ~16 steps, mostly on channel 0;
* ``run``   -- a faster cadence (period ~8), larger, on channels 0 and 1;
* ``jump``  -- short bursts every ~32 steps on channel 2.

Random phase, amplitude and cadence jitter per sequence, Gaussian noise on top, so no single time
step gives the class away. Lengths from 128 to 4096 steps (any length >= 16 works).

``make_activity(n, length, *, n_classes=4, channels=3, noise=0.6, seed=0)`` ->
``(X (length, n, channels) float32, y (n,) int64)`` time-major like the rest of the course.
``ACTIVITIES`` names the classes.
"""
from __future__ import annotations

import numpy as np

from ..core.validate import check_float, check_int, check_positive_int

__all__ = ["ACTIVITIES", "make_activity", "train_test"]

ACTIVITIES = ("rest", "walk", "run", "jump")


def _pattern(cls: int, t: np.ndarray, rng: np.random.Generator, channels: int) -> np.ndarray:
    """One clean signal of class ``cls``: (length, channels)."""
    out = np.zeros((t.size, channels))
    phase = rng.uniform(0, 2 * np.pi)
    jitter = rng.uniform(0.9, 1.1)
    amp = rng.uniform(0.8, 1.2)
    if cls == 0:  # rest: slow drift
        for c in range(channels):
            out[:, c] = 0.3 * amp * np.sin(2 * np.pi * t / (200.0 * jitter) + phase + c)
    elif cls == 1:  # walk
        out[:, 0] = amp * np.sin(2 * np.pi * t / (16.0 * jitter) + phase)
        if channels > 1:
            out[:, 1] = 0.3 * amp * np.sin(2 * np.pi * t / (32.0 * jitter) + phase)
    elif cls == 2:  # run
        out[:, 0] = 1.5 * amp * np.sin(2 * np.pi * t / (8.0 * jitter) + phase)
        if channels > 1:
            out[:, 1] = 1.0 * amp * np.cos(2 * np.pi * t / (8.0 * jitter) + phase)
    else:  # jump (and any further class): bursts with a class-dependent period
        period = 32.0 * jitter * (1 + 0.5 * (cls - 3))
        pos = np.mod(t + phase * period / (2 * np.pi), period)
        out[:, min(2, channels - 1)] = 2.0 * amp * np.exp(-0.5 * ((pos - 3.0) / 1.5) ** 2)
    return out


def make_activity(n: int, length: int, *, n_classes: int = 4, channels: int = 3, noise: float = 0.6,
                  seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` sequences of ``length`` steps: ``X`` (length, n, channels) float32, ``y`` (n,) int64,
    classes balanced (round-robin, then shuffled). Deterministic for a given ``seed``."""
    n = check_positive_int(n, "n")
    length = check_int(length, "length", low=16)
    n_classes = check_int(n_classes, "n_classes", low=2, high=6)
    channels = check_int(channels, "channels", low=3)
    noise = check_float(noise, "noise", low=0.0)
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % n_classes).astype(np.int64)
    t = np.arange(length, dtype=np.float64)
    X = np.empty((length, n, channels), dtype=np.float32)
    for b in range(n):
        X[:, b, :] = _pattern(int(y[b]), t, rng, channels) + noise * rng.standard_normal((length, channels))
    return X, y


def train_test(n_train: int, n_test: int, length: int, *, seed: int = 0, **kwargs):
    """Two independent sets: ``(Xtr, ytr, Xte, yte)`` (test drawn with ``seed + 1``)."""
    Xtr, ytr = make_activity(n_train, length, seed=seed, **kwargs)
    Xte, yte = make_activity(n_test, length, seed=seed + 1, **kwargs)
    return Xtr, ytr, Xte, yte
