"""The buffers of :mod:`course_lib.models.fast_rnn`'s training step, and how its batch is split (models layer).

A fast step allocates nothing: every intermediate has a home made once by :func:`make_workspace` and reused
step after step (:class:`Workspace`). When the batch is large enough for every thread to get a good share of
it, the batch can also be split into row groups, one per thread, each with its own buffers (:class:`SplitWorkspace`):
each thread then runs the whole step on its rows with one-thread BLAS, and the threads meet once, to add
their gradients (``fast_rnn``'s idea 6; opt-in with ``groups``, :func:`auto_groups` chooses for ``groups=None``).

``make_workspace(T, batch, nx, nh, ny, dtype=np.float32, *, method="loop", groups=1)`` -> Workspace or SplitWorkspace
``auto_groups(batch, method="loop", threads=None) -> int``   one group per thread, or 1 (``MIN_GROUP_ROWS``)
``ELEMENTWISE_METHODS``   how the fused element-wise passes run: ``"loop"`` or ``"prange"``
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import backend
from ..core.validate import (check_alloc, check_array, check_choice, check_dtype, check_int, check_positive_int,
                             largest)

__all__ = ["Workspace", "SplitWorkspace", "make_workspace", "auto_groups", "MIN_GROUP_ROWS", "ELEMENTWISE_METHODS"]

ELEMENTWISE_METHODS = ("loop", "prange")
"""How the fused element-wise passes run: on the calling thread, or rows split over numba's threads."""


@dataclass
class Workspace:
    """Buffers for one training step, allocated once and reused.

    H   (T, B, nh)  hidden states (first the input projection X Wxh, then tanh'd in place)
    D   (T, B, ny)  output pre-activations, then the output delta 2(ŷ−y)(1−ŷ²) in place
    DZ  (T, B, nh)  hidden delta through tanh (first Δŷ Whyᵀ, then the recurrence in place)
    tmp (B, nh)     the recurrent product of one time step
    gWxh, gWhh, gWhy  gradients (nx, nh), (nh, nh), (nh, ny)
    method  how the fused element-wise kernels run: ``"loop"`` (the calling thread) or
            ``"prange"`` (rows split over numba's threads); BLAS threads are used either way
    """

    T: int
    batch: int
    nx: int
    nh: int
    ny: int
    dtype: np.dtype
    H: np.ndarray
    D: np.ndarray
    DZ: np.ndarray
    tmp: np.ndarray
    gWxh: np.ndarray
    gWhh: np.ndarray
    gWhy: np.ndarray
    method: str = "loop"

    def __post_init__(self):
        # shapes only (O(1)): the buffers must be the ones make_workspace would allocate
        T, B, nx, nh, ny = (check_positive_int(v, n) for v, n in
                            ((self.T, "T"), (self.batch, "batch"), (self.nx, "nx"), (self.nh, "nh"), (self.ny, "ny")))
        self.dtype = check_dtype(self.dtype, "dtype")
        self.method = check_choice(self.method, "method", ELEMENTWISE_METHODS)
        for name, shape in (("H", (T, B, nh)), ("D", (T, B, ny)), ("DZ", (T, B, nh)), ("tmp", (B, nh)),
                            ("gWxh", (nx, nh)), ("gWhh", (nh, nh)), ("gWhy", (nh, ny))):
            check_array(getattr(self, name), name, shape=shape, dtype=self.dtype, finite=False, contiguous=True)

    groups = 1  # one group: every GEMM over the whole batch (a SplitWorkspace has several)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.H, self.D, self.DZ, self.tmp, self.gWxh, self.gWhh, self.gWhy))

    def fits(self, T, batch, nx, nh, ny, dtype) -> bool:
        """Whether this workspace was made for these sizes and dtype."""
        for v, n in ((T, "T"), (batch, "batch"), (nx, "nx"), (nh, "nh"), (ny, "ny")):
            check_positive_int(v, n)
        dtype = check_dtype(dtype, "dtype")
        return (self.T, self.batch, self.nx, self.nh, self.ny, self.dtype) == (T, batch, nx, nh, ny, np.dtype(dtype))


@dataclass
class SplitWorkspace:
    """Buffers for one step on a batch split into row groups, one thread each (``fast_rnn``'s idea 6).

    parts  one :class:`Workspace` per group (``method="loop"``), made for ``(T, rows of the group)``
    rows   the batch rows of each group (slices; the sizes differ by at most one)
    X, Y   per group ``(T, rows_g, nx)`` and ``(T, rows_g, ny)``: its inputs copied contiguous, so that
           its input projection and ``Xᵀ Δz`` stay one GEMM over ``T * rows_g`` rows
    The gradients are summed into ``parts[0]``'s: ``gWxh``, ``gWhh``, ``gWhy`` are those.
    """

    parts: tuple
    rows: tuple
    X: tuple
    Y: tuple
    method = "loop"  # every group runs its element-wise passes on its own thread

    def __post_init__(self):
        if not (isinstance(self.parts, tuple) and len(self.parts) >= 2
                and all(isinstance(w, Workspace) and w.method == "loop" for w in self.parts)):
            raise TypeError("parts: expected a tuple of two or more Workspaces with method='loop' (make_workspace)")
        if not len(self.rows) == len(self.X) == len(self.Y) == len(self.parts):
            raise ValueError(f"rows, X, Y: expected one per group ({len(self.parts)}), "
                             f"got {len(self.rows)}, {len(self.X)}, {len(self.Y)}")
        first, start = self.parts[0], 0
        for g, (w, r, x, y) in enumerate(zip(self.parts, self.rows, self.X, self.Y)):
            if (w.T, w.nx, w.nh, w.ny, w.dtype) != (first.T, first.nx, first.nh, first.ny, first.dtype):
                raise ValueError(f"parts: group {g} was made for other sizes than group 0")
            if not isinstance(r, slice) or (r.start, r.stop, r.step or 1) != (start, start + w.batch, 1):
                raise ValueError(f"rows: group {g} expected slice({start}, {start + w.batch}): the groups' rows "
                                 f"in order, each group's as many as its workspace's batch; got {r!r}")
            start = r.stop
            check_array(x, f"X[{g}]", shape=(w.T, w.batch, w.nx), dtype=w.dtype, finite=False, contiguous=True)
            check_array(y, f"Y[{g}]", shape=(w.T, w.batch, w.ny), dtype=w.dtype, finite=False, contiguous=True)

    T = property(lambda self: self.parts[0].T)
    nx = property(lambda self: self.parts[0].nx)
    nh = property(lambda self: self.parts[0].nh)
    ny = property(lambda self: self.parts[0].ny)
    dtype = property(lambda self: self.parts[0].dtype)
    batch = property(lambda self: sum(w.batch for w in self.parts))
    groups = property(lambda self: len(self.parts))
    gWxh = property(lambda self: self.parts[0].gWxh)
    gWhh = property(lambda self: self.parts[0].gWhh)
    gWhy = property(lambda self: self.parts[0].gWhy)

    @property
    def nbytes(self) -> int:
        return sum(w.nbytes for w in self.parts) + sum(a.nbytes for a in self.X + self.Y)

    def fits(self, T, batch, nx, nh, ny, dtype) -> bool:
        """Whether this workspace was made for these sizes and dtype."""
        return self.parts[0].fits(T, self.parts[0].batch, nx, nh, ny, dtype) and batch == self.batch


MIN_GROUP_ROWS = 256
""":func:`auto_groups` splits a batch only when every group keeps at least this many rows."""


def auto_groups(batch: int, method: str = "loop", threads: int | None = None) -> int:
    """The row groups ``make_workspace(groups=None)`` makes: one per thread (``threads``; None: numba's
    count now, which :func:`course_lib.core.backend.set_threads` sets together with BLAS's) when every
    group keeps at least :data:`MIN_GROUP_ROWS` rows and the element-wise passes run on each group's
    thread (``method="loop"``); else 1 (every GEMM over the whole batch, on every BLAS thread)."""
    batch = check_positive_int(batch, "batch")
    method = check_choice(method, "method", ELEMENTWISE_METHODS)
    threads = backend.get_threads() if threads is None else check_positive_int(threads, "threads")
    if method != "loop" or threads < 2 or batch // threads < MIN_GROUP_ROWS:
        return 1
    return threads


def make_workspace(T: int, batch: int, nx: int, nh: int, ny: int, dtype=np.float32, *,
                   method: str = "loop", groups: int | None = 1) -> Workspace | SplitWorkspace:
    """Allocate the buffers of one training step for sequences ``(T, B, nx)`` -> ``(T, B, ny)``.

    ``method="loop"`` (default) keeps the fused element-wise passes on the calling thread: they
    are memory-bound (a second thread gains little) and, between two multi-threaded BLAS calls, a
    numba parallel region must wait for cores that BLAS's idle threads may still be spinning on.
    ``"prange"`` splits them across numba's threads (chapter 05 measures both).

    ``groups``: split the batch into this many row groups, each run by its own thread with one-thread
    BLAS (a :class:`SplitWorkspace`; ``method`` must then be ``"loop"``); 1 gives a :class:`Workspace`
    (one group, the default: what the phase functions take); None lets :func:`auto_groups` choose from
    the batch and the thread count *now*. At run time the groups never use more threads than
    ``backend.set_threads`` allows then (with fewer, groups wait their turn).
    """
    T, batch, nx, nh, ny = (check_positive_int(v, n) for v, n in
                            ((T, "T"), (batch, "batch"), (nx, "nx"), (nh, "nh"), (ny, "ny")))
    dt = check_dtype(dtype, "dtype")
    method = check_choice(method, "method", ELEMENTWISE_METHODS)
    groups = auto_groups(batch, method) if groups is None else check_int(groups, "groups", low=1, high=batch)
    if groups > 1 and method != "loop":
        raise ValueError(f"groups: a batch split into {groups} row groups runs each group's element-wise passes "
                         f"on that group's thread, so method must be 'loop' (got {method!r}); or pass groups=1")
    check_alloc((T, batch, 2 * nh + ny), dt, largest(T=T, batch=batch, nh=nh, ny=ny), what="the workspace")  # H, DZ, D
    check_alloc((nx + nh + ny, nh), dt, largest(nx=nx, nh=nh, ny=ny), what="the weight gradients")
    if groups > 1:
        check_alloc((T, batch, nx + ny), dt, largest(T=T, batch=batch, nx=nx, ny=ny), what="the groups' inputs")
        bounds = np.linspace(0, batch, groups + 1).round().astype(int)
        rows = tuple(slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]))
        parts = tuple(make_workspace(T, r.stop - r.start, nx, nh, ny, dt, groups=1) for r in rows)
        return SplitWorkspace(parts, rows, X=tuple(np.empty((T, w.batch, nx), dt) for w in parts),
                              Y=tuple(np.empty((T, w.batch, ny), dt) for w in parts))
    e = lambda *s: np.empty(s, dt)  # noqa: E731
    return Workspace(T, batch, nx, nh, ny, dt, H=e(T, batch, nh), D=e(T, batch, ny), DZ=e(T, batch, nh),
                     tmp=e(batch, nh), gWxh=e(nx, nh), gWhh=e(nh, nh), gWhy=e(nh, ny), method=method)
