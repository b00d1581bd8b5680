"""Chapter 02's measurement: O(T²) vs O(T) backpropagation through time, timed now (experiments layer).

``bptt_times(T, nh)`` -> one row: both algorithms' times (interleaved, one process), their ratio and the
ratio of their GEMM FLOPs (:func:`course_lib.models.rnn.bptt_flops`), with the run's noise guard.
``scaling(Ts, nh)`` -> rows for a sweep of T, and ``fit_slopes(rows, t_min)`` the log-log slopes of
each curve over the range where the asymptote holds (T >= t_min).
"""
from __future__ import annotations

import numpy as np

from ..core.timing import compare, loglog_slope
from ..core.validate import check_float, check_int, check_positive_int, check_sizes
from ..models import rnn

__all__ = ["bptt_times", "scaling", "fit_slopes"]


def bptt_times(T: int, nh: int, *, batch: int = 8, nx: int | None = None, ny: int | None = None,
               repeat: int = 3, seed: int = 0) -> dict:
    """Time :func:`~course_lib.models.rnn.bptt_linear` and ``bptt_quadratic`` now, interleaved, at one (T, nh).

    ``nx`` and ``ny`` default to ``nh``. Returns a dict with ``T, nh, B, linear_s, quadratic_s``
    (best of ``repeat``), ``ratio`` (quadratic / linear time), ``flop_ratio`` (the same ratio of GEMM
    FLOPs), ``noise`` (the run's :class:`~course_lib.core.timing.Noise`: the pairs' ratio), ``times_noise``
    (``{"linear": Noise, "quadratic": Noise}``: each one's repeats, what a slope of its times over T rests on) and
    ``median_s`` (``{"linear": s, "quadratic": s}``: the typical time beside the best).
    Chapter 02's widget calls it.
    """
    T = check_positive_int(T, "T", high=4096)
    nh = check_positive_int(nh, "nh", high=4096)
    batch = check_positive_int(batch, "batch", high=4096)
    nx = nh if nx is None else check_positive_int(nx, "nx", high=4096)
    ny = nh if ny is None else check_positive_int(ny, "ny", high=4096)
    repeat = check_positive_int(repeat, "repeat", high=1000)
    seed = check_int(seed, "seed", low=0)
    params = rnn.init_params(nx, nh, ny, seed=seed)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (T, batch, nx)).astype(np.float32)
    Y = rng.uniform(-1, 1, (T, batch, ny)).astype(np.float32)
    cmp = compare(linear=lambda: rnn.bptt_linear(params, X, Y), quadratic=lambda: rnn.bptt_quadratic(params, X, Y),
                  repeat=repeat, warmup=1)
    lin, quad = cmp.timings["linear"].min, cmp.timings["quadratic"].min
    return {"T": T, "nh": nh, "B": batch, "linear_s": lin, "quadratic_s": quad, "ratio": quad / lin,
            "flop_ratio": (rnn.bptt_flops(T, batch, nx, nh, ny, "quadratic")
                           / rnn.bptt_flops(T, batch, nx, nh, ny, "linear")),
            "noise": cmp.noise, "times_noise": {k: cmp.timings[k].noise for k in ("linear", "quadratic")},
            "median_s": {k: cmp.timings[k].median for k in ("linear", "quadratic")}}


def scaling(Ts, nh: int, *, batch: int = 8, repeat: int = 3) -> list[dict]:
    """:func:`bptt_times` for every T in ``Ts`` (increasing), same ``nh`` and ``batch``."""
    Ts = check_sizes(Ts, "Ts", high=4096)
    check_positive_int(nh, "nh", high=4096)  # up front, before the first measurement
    check_positive_int(batch, "batch", high=4096)
    check_positive_int(repeat, "repeat", high=1000)
    if len(Ts) < 2 or sorted(Ts) != Ts or len(set(Ts)) != len(Ts):
        raise ValueError(f"Ts: expected at least two increasing sequence lengths, got {Ts}")
    return [bptt_times(T, nh, batch=batch, repeat=repeat) for T in Ts]


def fit_slopes(rows: list[dict], t_min: int = 1) -> dict:
    """Log-log slopes of time vs T for both algorithms over the rows with ``T >= t_min``.

    Below some T a call's fixed costs (Python, allocation, the forward pass) hide the growth, so
    the asymptotic slopes (1 for O(T), 2 for O(T²)) only show above it. Returns ``{"linear",
    "quadratic", "t_min", "points"}``; ValueError if fewer than two rows are in range."""
    t_min = check_positive_int(t_min, "t_min")
    if not isinstance(rows, (list, tuple)):
        raise TypeError(f"rows: expected a list of bptt_times() rows (dicts), got {type(rows).__name__}")
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not {"T", "linear_s", "quadratic_s"} <= set(r):
            raise TypeError(f"rows[{i}]: expected a bptt_times() row with T, linear_s, quadratic_s, got {r!r:.80}")
        check_positive_int(r["T"], f"rows[{i}]['T']")
        for k in ("linear_s", "quadratic_s"):
            check_float(r[k], f"rows[{i}][{k!r}]", low=0.0, low_inclusive=False)
    use = [r for r in rows if r["T"] >= t_min]
    if len(use) < 2:
        raise ValueError(f"t_min: only {len(use)} row(s) have T >= {t_min}; need two to fit a slope")
    Ts = [r["T"] for r in use]
    return {"linear": loglog_slope(Ts, [r["linear_s"] for r in use]),
            "quadratic": loglog_slope(Ts, [r["quadratic_s"] for r in use]), "t_min": t_min, "points": len(use)}
