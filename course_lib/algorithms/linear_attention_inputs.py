"""The inputs of :mod:`course_lib.algorithms.linear_attention` (algorithms folder): their checks, and seeded random
problems. Shapes: ``q, k (T, B, heads, d_k)``, ``v (T, B, heads, d_v)``, ``decay (T, B, heads)`` (one decay per
head) or ``(T, B, heads, d_k)`` (one per key channel), ``S0 (B, heads, d_k, d_v)``; float32 or float64."""
from __future__ import annotations

import math

import numpy as np

from ..core.validate import (check_alloc, check_array, check_bool, check_dtype, check_finite, check_float, check_int,
                             check_nonempty, check_positive_int, largest)

__all__ = ["check_inputs", "check_finite_qkv", "random_problem"]


def check_inputs(q, k, v, decay, S0=None, *, finite: bool = True):
    """Validate the inputs (shapes, dtypes, decays in [0, 1]; errors name the argument); returns the arrays (one float
    dtype), ``per_channel`` and ``S0`` (or None). ``finite=False`` leaves out the NaN/inf checks of ``q, k, v`` (a pass
    over memory each) for a caller that makes them itself: :func:`check_finite_qkv`, or the chunked form's fused pass
    (:func:`~course_lib.algorithms.linear_attention_kernels.fold_outputs`), which reads them anyway."""
    dims: dict = {}
    q = check_nonempty(check_array(q, "q", shape=("T", "B", "heads", "d_k"), dims=dims, finite=finite), "q")
    k = check_array(k, "k", shape=("T", "B", "heads", "d_k"), dims=dims, finite=finite)
    v = check_nonempty(check_array(v, "v", shape=("T", "B", "heads", "d_v"), dims=dims, finite=finite), "v")
    decay = check_array(decay, "decay", ndim=(3, 4))
    per_channel = decay.ndim == 4
    check_array(decay, "decay", shape=("T", "B", "heads", "d_k") if per_channel else ("T", "B", "heads"), dims=dims,
                finite=False)   # checked just above
    if decay.size and (decay.min() < 0 or decay.max() > 1):
        raise ValueError(f"decay: expected values in [0, 1] (a decay per step), got range "
                         f"[{decay.min():.3g}, {decay.max():.3g}]")
    dt = q.dtype
    for name, arr in (("k", k), ("v", v), ("decay", decay)):
        if arr.dtype != dt:
            raise TypeError(f"{name}: expected the dtype of q ({dt}), got {arr.dtype}")
    if S0 is not None:
        S0 = check_array(S0, "S0", shape=(dims["B"], dims["heads"], dims["d_k"], dims["d_v"])).astype(dt, copy=False)
    return q, k, v, decay, per_channel, S0


def check_finite_qkv(q, k, v) -> None:
    """The NaN/inf checks :func:`check_inputs` leaves out with ``finite=False``; the error names the argument."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_finite(x, name)


def random_problem(T: int, batch: int = 1, heads: int = 2, d_k: int = 8, d_v: int | None = None, *,
                   per_channel: bool = False, low: float = 0.8, high: float = 1.0, seed: int = 0,
                   dtype="float32"):
    """Seeded ``(q, k, v, decay)``: normal q, k (scaled by ``1/sqrt(d_k)``), v; decay uniform in
    ``[low, high]``, shape ``(T, batch, heads)`` or, with ``per_channel``, ``(T, batch, heads, d_k)``."""
    T, batch, heads, d_k = (check_positive_int(x, n) for x, n in ((T, "T"), (batch, "batch"), (heads, "heads"), (d_k, "d_k")))
    d_v = d_k if d_v is None else check_positive_int(d_v, "d_v")
    low, high = check_float(low, "low", low=0.0, high=1.0), check_float(high, "high", low=low, high=1.0)
    dtype, seed, per_channel = check_dtype(dtype), check_int(seed, "seed", low=0), check_bool(per_channel, "per_channel")
    big = largest(T=T, batch=batch, heads=heads, d_k=d_k, d_v=d_v)
    check_alloc((3, T, batch, heads, max(d_k, d_v)), np.float64, big, what="q, k and v")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((T, batch, heads, d_k)) / math.sqrt(d_k)
    k = rng.standard_normal((T, batch, heads, d_k)) / math.sqrt(d_k)
    v = rng.standard_normal((T, batch, heads, d_v))
    decay = rng.uniform(low, high, (T, batch, heads, d_k) if per_channel else (T, batch, heads))
    return tuple(np.ascontiguousarray(x, dtype=dtype) for x in (q, k, v, decay))
