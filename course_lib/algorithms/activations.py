"""The course's one set of activation functions (algorithms layer).

For numba kernels (inline, vectorisable)::

    fast_tanh(x)      float32: Eigen's clamped odd 13/6 rational polynomial (max abs error ~3e-7),
                      pure arithmetic, so a loop of them becomes AVX/AVX-512 code; float64: math.tanh
    fast_sigmoid(x)   (1 + fast_tanh(x/2)) / 2, in x's dtype

For numpy arrays::

    sigmoid(z)        0.5 * (1 + tanh(z / 2)): exact to round-off, never overflows for large |z|

Every model that needs a tanh or a sigmoid imports it from here.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from ..core.validate import as_array

__all__ = ["fast_tanh", "fast_sigmoid", "sigmoid"]

_f32 = np.float32
_CLAMP = _f32(7.90531110763549805)


def _check_real_scalar(x, name: str = "x") -> float:
    """A real number (bools and strings refused); NaN refused (it would come out as NaN). +-inf is fine."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected a real number, got {type(x).__name__} {x!r}")
    if math.isnan(x):
        raise ValueError(f"{name}: expected a number, got NaN")
    return x


def sigmoid(z):
    """Logistic function on arrays, ``0.5 * (1 + tanh(z / 2))`` (no overflow warning for large |z|).
    ``z``: a real array or number (+-inf give 0 and 1). Only the kind is checked (O(1)): it is applied to
    intermediate values inside models and solvers, whose entry points check finiteness (and whose
    divergence detectors expect NaN/inf to pass through)."""
    arr = as_array(z, "z")
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"z: expected a real (float or integer) array, got dtype {arr.dtype}")
    return 0.5 * (np.tanh(0.5 * z) + 1.0)


def fast_tanh(x):
    """``tanh`` for use inside numba kernels (a float32 rational approximation; ``math.tanh`` for float64).

    Called from plain Python it is ``math.tanh`` of a checked real number; inside ``@njit`` code the
    overload below is used (no checks there: it is the inner loop)."""
    return math.tanh(_check_real_scalar(x))


def fast_sigmoid(x):
    """Logistic function for use inside numba kernels, ``(1 + fast_tanh(x / 2)) / 2``."""
    return 0.5 * math.tanh(0.5 * _check_real_scalar(x)) + 0.5


@njit(fastmath=True, error_model="numpy", cache=True, inline="always")
def _tanh32(x):
    x = min(max(x, -_CLAMP), _CLAMP)
    x2 = x * x
    p = _f32(-2.76076847742355e-16)
    p = p * x2 + _f32(2.00018790482477e-13)
    p = p * x2 + _f32(-8.60467152213735e-11)
    p = p * x2 + _f32(5.12229709037114e-08)
    p = p * x2 + _f32(1.48572235717979e-05)
    p = p * x2 + _f32(6.37261928875436e-04)
    p = p * x2 + _f32(4.89352455891786e-03)
    q = _f32(1.19825839466702e-06)
    q = q * x2 + _f32(1.18534705686654e-04)
    q = q * x2 + _f32(2.26843463243900e-03)
    q = q * x2 + _f32(4.89352518554385e-03)
    return x * p / q


@overload(fast_tanh, inline="always")
def _fast_tanh_overload(x):
    if x == types.float32:
        return lambda x: _tanh32(x)
    return lambda x: math.tanh(x)


@overload(fast_sigmoid, inline="always")
def _fast_sigmoid_overload(x):
    if x == types.float32:
        return lambda x: _f32(0.5) * _tanh32(_f32(0.5) * x) + _f32(0.5)
    return lambda x: 0.5 * math.tanh(0.5 * x) + 0.5
