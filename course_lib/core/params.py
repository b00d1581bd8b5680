"""The one parameter protocol every model's parameters (and gradients) follow (core/).

A model's parameters are a ``@dataclass`` that also derives from :class:`Params`::

    @dataclass
    class GRUParams(Params):
        W_ih: np.ndarray          # (3H, nx)
        ...
        @property
        def nx(self): ...         # input size
        @property
        def nh(self): ...         # hidden size

and then has, with no more code:

* ``names()``      the array fields' names, in order (nested params flatten: ``"gru.W_ih"``,
                   ``"layers.0.U"``; non-array fields such as a window length are not arrays);
* ``arrays()``     those arrays, in the same order (what :class:`course_lib.core.optim.Adam` updates);
* ``copy()``       a deep copy (new arrays);
* ``astype(dt)``   a copy in float32 or float64 (anything else is a TypeError naming ``dtype``);
* ``zeros_like()`` the same structure filled with zeros (e.g. to accumulate gradients);
* ``dtype``        the dtype of the first array.

Gradients come back as the same class, so ``grads.names() == params.names()`` and the shapes match:
``opt = Adam(params.arrays(), lr)`` then ``opt.step(grads.arrays())``.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

import numpy as np

from .validate import check_dtype

__all__ = ["Params"]


class Params:
    """Mixin for ``@dataclass`` parameter containers: ``names``, ``arrays``, ``copy``, ``astype``,
    ``zeros_like``, ``nx``, ``nh``, ``dtype`` (see the module docstring)."""

    # --------------------------------------------------------------- structure
    def _parts(self) -> Iterator[tuple[str, object]]:
        """``(field name, value)`` for every dataclass field that holds arrays: an array, nested
        :class:`Params`, or a list/tuple of :class:`Params`."""
        if not dataclasses.is_dataclass(self):
            raise TypeError(f"{type(self).__name__}: a Params class must be a @dataclass")
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (np.ndarray, Params)) or (isinstance(v, (list, tuple)) and v
                                                      and all(isinstance(x, Params) for x in v)):
                yield f.name, v

    def names(self) -> list[str]:
        """Names of the arrays, in order; nested parameters as ``"outer.inner"`` (lists: ``"layers.0.U"``)."""
        out: list[str] = []
        for name, v in self._parts():
            if isinstance(v, np.ndarray):
                out.append(name)
            elif isinstance(v, Params):
                out += [f"{name}.{n}" for n in v.names()]
            else:
                for i, p in enumerate(v):
                    out += [f"{name}.{i}.{n}" for n in p.names()]
        return out

    def arrays(self) -> list[np.ndarray]:
        """The arrays themselves (not copies), in the order of :meth:`names`."""
        out: list[np.ndarray] = []
        for _, v in self._parts():
            if isinstance(v, np.ndarray):
                out.append(v)
            elif isinstance(v, Params):
                out += v.arrays()
            else:
                for p in v:
                    out += p.arrays()
        return out

    # --------------------------------------------------------------- new instances
    def _map(self, fn: Callable[[np.ndarray], np.ndarray]):
        """The same class with ``fn`` applied to every array (nested ones too); other fields kept."""
        changes = {}
        for name, v in self._parts():
            if isinstance(v, np.ndarray):
                changes[name] = fn(v)
            elif isinstance(v, Params):
                changes[name] = v._map(fn)
            else:
                changes[name] = type(v)(p._map(fn) for p in v)
        return dataclasses.replace(self, **changes)

    def copy(self):
        """A deep copy: every array is new."""
        return self._map(lambda a: a.copy())

    def astype(self, dtype):
        """A copy with every array in ``dtype`` (float32 or float64)."""
        dt = check_dtype(dtype, "dtype")
        return self._map(lambda a: a.astype(dt))

    def zeros_like(self):
        """The same names, shapes and dtypes, all zeros."""
        return self._map(np.zeros_like)

    # --------------------------------------------------------------- sizes
    @property
    def dtype(self) -> np.dtype:
        """The dtype of the first array."""
        arrays = self.arrays()
        if not arrays:
            raise ValueError(f"{type(self).__name__}: holds no arrays")
        return arrays[0].dtype

    @property
    def nx(self) -> int:  # pragma: no cover - every params class defines it
        """Input size."""
        raise NotImplementedError(f"{type(self).__name__} does not define nx")

    @property
    def nh(self) -> int:  # pragma: no cover - every params class defines it
        """Hidden size."""
        raise NotImplementedError(f"{type(self).__name__} does not define nh")
