"""MGRIT: multigrid reduction in time, generic over a user time step (algorithms layer).

After Falgout et al. (XBraid, 2014) and PyMGRIT (Hahne & Friedhoff); used for GRUs by Moon &
Cyr (seed 002, torchbraid). We solve the *all-at-once* system

    A(u) = g:     u_0 = g_0,     u_i - Phi(u_{i-1}, i-1) = g_i      (i = 1 .. N)

with ``g_0 = u0`` and ``g_i = 0`` on the fine grid (level 0, ``nt`` steps). Level ``l`` has a point
every ``m**l`` fine steps; its C-points are every ``m``-th point of that level and are the points of
level ``l + 1``. One iteration (a V-cycle over ``levels`` levels, FAS = full approximation storage):

1. relax on level l: F-relaxation (march inside each C-interval from its C-point, all intervals
   independent -> parallel), C-relaxation (update each C-point from the F-point before it), or
   FCF = F, C, F;
2. residual at the C-points ``r_j = g_jm - (u_jm - Phi(u_jm-1))``;
3. restrict by injection ``uc = u[::m]`` and form the FAS right-hand side
   ``gc_j = uc_j - Phi_c(uc_{j-1}) + r_j``;
4. solve level l+1 (recursively; the coarsest level is a plain sequential march);
5. correct the C-points ``u[::m] = uc`` and F-relax (this is the interpolation).

With two levels and F-relaxation this *is* Parareal, and it is exact after at most ``nt / m``
iterations. ``history`` holds the 2-norm of the fine-grid residual at the C-points after each
iteration; the solve stops when it is below ``tol``.

One iteration loop, two ways to share the work
----------------------------------------------
The fine-level iteration (:meth:`MGRIT.iterate`) is written once, against a small
:class:`Partition` interface: which C-intervals and C-points this process works on, ``map`` (run a
piece of work over them), ``exchange`` (fetch the F-point before my first C-point), ``allreduce``,
``coarse_correct`` (C-values and residuals in, corrected C-values out) and ``gather``.
:class:`ThreadPartition` (:mod:`.mgrit_partition`) runs the intervals in CPU threads of one process;
``course_lib.parallel.mgrit_mpi.RankPartition`` gives each MPI rank a block of them. Both run the
same arithmetic, so they return the same ``U`` (bit for bit).

Public API
----------
``MGRIT(step, *, m=4, levels=2, relax="FCF", max_iter=10, tol=1e-8, cycle="V", coarse_step=None,
threads=1, diverge_factor=1e4)`` with ``.solve(u0, nt) -> (U (nt+1, *u0.shape), history)`` and
``.iterate(u0, nt, partition, status=None)`` (the one loop; ``.steps_taken`` counts the steps)
``Partition`` / ``ThreadPartition`` -- how the fine C-intervals are shared out (:mod:`.mgrit_partition`)
``MGRITDivergence`` -- raised (never NaN returned) when the iterations blow up
``hierarchy(nt, m, levels)`` -- steps per level, with clear errors
``serial_solve(step, u0, nt)`` -- the reference sequential march
``dahlquist_step(lam, dt, m)`` / ``dahlquist_exact_serial(lam, dt, u0, nt)`` -- the test problem
``convergence_factor(history)`` -- geometric-mean residual reduction per iteration
``span_model(nt, *, m, levels, iters, P, relax)`` -- work/span (critical path) model in time steps
``f_relaxation``, ``c_relaxation``, ``two_level_iteration`` -- the pieces of the worksheet

Sweeps over these (convergence tables, histories for widgets, speedup curves) live in
``course_lib.experiments.mgrit``.
"""
from __future__ import annotations

import math
import threading
from typing import Callable

import numpy as np

from ..core.validate import check_alloc, check_array, check_callable, check_choice, check_float, check_int, check_positive_int
from .mgrit_partition import Partition, ThreadPartition

__all__ = [
    "MGRIT",
    "MGRITDivergence",
    "Partition",
    "ThreadPartition",
    "hierarchy",
    "serial_solve",
    "dahlquist_step",
    "dahlquist_exact_serial",
    "convergence_factor",
    "span_model",
    "f_relaxation",
    "c_relaxation",
    "two_level_iteration",
    "RELAXATIONS",
    "CYCLES",
    "MAX_LEVEL",
]

RELAXATIONS = ("F", "FCF", "FCFCF")
MAX_LEVEL = 62   # the deepest level any hierarchy reaches (m >= 2, nt < 2**63): a larger one is a typo
CYCLES = ("V", "F")


class MGRITDivergence(RuntimeError):
    """MGRIT's iterations blew up (residual growing or non-finite states)."""


# --------------------------------------------------------------------------- hierarchy
def hierarchy(nt: int, m: int, levels: int) -> list[int]:
    """Number of steps on each level, ``[nt, nt/m, nt/m**2, ...]``; raises a clear ValueError when
    ``m < 2``, when ``nt`` is not a multiple of ``m**(levels-1)`` or when the coarsest level would
    have fewer than 2 steps (2 coarse points after u0)."""
    nt = check_positive_int(nt, "nt")
    m = check_int(m, "m")
    if m < 2:
        raise ValueError(f"m: the coarsening factor must be >= 2 (a C-point every m steps), got {m}")
    levels = check_int(levels, "levels", low=1)
    if levels == 1:
        return [nt]
    if levels - 1 > nt.bit_length():  # m**(levels-1) > nt: refused before computing a huge power
        raise ValueError(
            f"levels: {levels} levels with m={m} leave 0 coarse steps on the coarsest level for nt={nt}; "
            f"need at least 2 (use fewer levels or a smaller m)")
    factor = m ** (levels - 1)
    if nt % factor:
        up = -(-nt // factor) * factor
        raise ValueError(
            f"nt: {nt} steps do not fit a hierarchy with m={m} and levels={levels} (nt must be a "
            f"multiple of m**(levels-1) = {factor}); pad the sequence to {up} steps or use fewer levels")
    sizes = [nt // m**lv for lv in range(levels)]
    if sizes[-1] < 2:
        raise ValueError(
            f"levels: {levels} levels with m={m} leave {sizes[-1]} coarse step(s) on the coarsest level "
            f"for nt={nt}; need at least 2 (use fewer levels or a smaller m)")
    return sizes


def serial_solve(step: Callable, u0, nt: int) -> np.ndarray:
    """The sequential reference: ``U[0] = u0``, ``U[i+1] = step(U[i], i, 0)``; shape (nt+1, *u0.shape)."""
    check_callable(step, "step", "a function step(u, i, level) -> u")
    nt = check_positive_int(nt, "nt")
    u0 = check_array(u0, "u0", dtype=None)
    if u0.dtype.kind not in "iufc":
        raise TypeError(f"u0: expected a numeric array, got dtype {u0.dtype}")
    dtype = np.result_type(u0.dtype, np.float32)
    check_alloc((nt + 1,) + u0.shape, dtype, "nt", what="the trajectory U")
    U = np.empty((nt + 1,) + u0.shape, dtype=dtype)
    U[0] = u0
    for i in range(nt):
        U[i + 1] = step(U[i], i, 0)
    return U


# --------------------------------------------------------------------------- the solver
class MGRIT:
    """Multigrid reduction in time for ``u_{i+1} = step(u_i, i, level)`` (see module docstring).

    ``step(u, i, level) -> u``: advance a state (any shape) from point ``i`` to ``i + 1`` of level
    ``level``'s grid (level 0: the fine grid; level l: a point every ``m**l`` fine steps). It must
    return a new array. ``coarse_step`` (default ``step``) is used on levels >= 1.
    ``threads > 1`` runs the relaxations of the C-intervals in that many CPU threads (same
    arithmetic, same result). An iteration whose residual exceeds ``diverge_factor`` times the
    residual of the relaxed initial guess, or turns non-finite, raises :class:`MGRITDivergence`. After a solve,
    ``iterations`` is the number of iterations and ``steps_taken`` the number of calls of
    ``step``/``coarse_step`` made by this process (the work).
    """

    def __init__(self, step: Callable, *, m: int = 4, levels: int = 2, relax: str = "FCF",
                 max_iter: int = 10, tol: float = 1e-8, cycle: str = "V",
                 coarse_step: Callable | None = None, threads: int = 1, diverge_factor: float = 1e4):
        if not callable(step):
            raise TypeError(f"step: expected a callable step(u, i, level) -> u, got {type(step).__name__}")
        if coarse_step is not None and not callable(coarse_step):
            raise TypeError(f"coarse_step: expected a callable or None, got {type(coarse_step).__name__}")
        self.m = check_int(m, "m")
        if self.m < 2:
            raise ValueError(f"m: the coarsening factor must be >= 2 (a C-point every m steps), got {m}")
        self.levels = check_int(levels, "levels", low=1)
        self.relax = check_choice(relax, "relax", RELAXATIONS)
        self.max_iter = check_int(max_iter, "max_iter", low=1)
        self.tol = check_float(tol, "tol", low=0.0)
        self.cycle = check_choice(cycle, "cycle", CYCLES)
        self.threads = check_positive_int(threads, "threads")
        self.diverge_factor = check_float(diverge_factor, "diverge_factor", low=1.0)
        self.step = step
        self.coarse_step = coarse_step if coarse_step is not None else step
        self._run = Partition(1).map  # how coarse levels share their intervals (set per solve)
        self._lock = threading.Lock()
        self.iterations = 0
        self.steps_taken = 0
        self._baseline = math.nan

    # ------------------------------------------------------------------ helpers
    def phi(self, level: int, u, i: int):
        """One step on ``level`` from its point ``i``."""
        return (self.step if level == 0 else self.coarse_step)(u, i, level)

    def _count(self, n: int) -> None:
        with self._lock:
            self.steps_taken += n

    # ------------------------------------------------------------------ relaxation pieces
    def f_relax_intervals(self, level: int, U, G, intervals: range) -> None:
        """F-relaxation of the C-intervals ``intervals`` of ``level``: from each C-point ``j*m``
        march to the F-points ``j*m+1 .. j*m+m-1`` (in place)."""
        m = self.m
        for j in intervals:
            for p in range(j * m + 1, j * m + m):
                U[p] = self.phi(level, U[p - 1], p - 1) if G is None else self.phi(level, U[p - 1], p - 1) + G[p]
        self._count(len(intervals) * (m - 1))

    def c_relax_points(self, level: int, U, G, points: range) -> None:
        """C-relaxation of the C-points ``j*m`` for ``j`` in ``points`` (j >= 1), in place."""
        m = self.m
        for j in points:
            p = j * m
            U[p] = self.phi(level, U[p - 1], p - 1) if G is None else self.phi(level, U[p - 1], p - 1) + G[p]
        self._count(len(points))

    def c_residual_points(self, level: int, U, G, points: range, R) -> None:
        """``R[j] = g_jm - (u_jm - Phi(u_jm-1))`` for ``j`` in ``points`` (j >= 1)."""
        m = self.m
        for j in points:
            p = j * m
            r = self.phi(level, U[p - 1], p - 1) - U[p]
            R[j] = r if G is None else r + G[p]
        self._count(len(points))

    # ------------------------------------------------------------------ coarse levels (one process)
    def f_relax(self, level, U, G):
        nc = (len(U) - 1) // self.m
        self._run(lambda r: self.f_relax_intervals(level, U, G, r), range(nc))

    def c_relax(self, level, U, G):
        nc = (len(U) - 1) // self.m
        self._run(lambda r: self.c_relax_points(level, U, G, r), range(1, nc + 1))

    def c_residual(self, level, U, G):
        nc = (len(U) - 1) // self.m
        R = np.zeros((nc + 1,) + U.shape[1:], dtype=U.dtype)
        if G is not None:
            R[0] = G[0] - U[0]
        self._run(lambda r: self.c_residual_points(level, U, G, r, R), range(1, nc + 1))
        return R

    def relax_level(self, level, U, G):
        """Apply the relaxation string (e.g. "FCF") on ``level >= 1``."""
        for kind in self.relax:
            if kind == "F":
                self.f_relax(level, U, G)
            else:
                self.c_relax(level, U, G)

    def march(self, level, U, G) -> None:
        """Sequential solve on the coarsest level: ``u_i = Phi(u_{i-1}) + g_i``."""
        U[0] = G[0]
        for p in range(1, len(U)):
            U[p] = self.phi(level, U[p - 1], p - 1) + G[p]
        self._count(len(U) - 1)

    def coarse_correction(self, level, U, R) -> None:
        """Given C-point residuals ``R`` on ``level``, restrict by injection, solve level+1 and
        correct the C-points of ``U`` (in place, no F-relax)."""
        U[:: self.m] = self.correct_c_values(level, U[:: self.m].copy(), R)

    def correct_c_values(self, level, Uc, R):
        """FAS on the C-point values ``Uc`` (injected, modified in place and returned):
        ``gc_j = uc_j - Phi_c(uc_{j-1}) + r_j``, then one cycle of level+1 on ``A_c(uc) = gc``."""
        Gc = np.empty_like(Uc)
        Gc[0] = Uc[0] + R[0]
        for j in range(1, len(Uc)):
            Gc[j] = Uc[j] - self.phi(level + 1, Uc[j - 1], j - 1) + R[j]
        self._count(len(Uc) - 1)
        self.solve_level(level + 1, Uc, Gc)
        return Uc

    def solve_level(self, level, U, G) -> None:
        """One cycle on ``level >= 1`` for ``A(U) = G`` (in place)."""
        if level == self.levels - 1:
            self.march(level, U, G)
            return
        self.relax_level(level, U, G)
        R = self.c_residual(level, U, G)
        if self.cycle == "F" and level + 1 < self.levels - 1:
            self.coarse_correction(level, U, R)  # F-cycle: an extra visit of the coarser levels
            self.f_relax(level, U, G)
            R = self.c_residual(level, U, G)
        self.coarse_correction(level, U, R)
        self.f_relax(level, U, G)

    # ------------------------------------------------------------------ the fine level, shared out
    def _fine_f(self, U, part: Partition) -> None:
        part.map(lambda r: self.f_relax_intervals(0, U, None, r), part.intervals)

    def _fine_c(self, U, part: Partition) -> None:
        part.exchange(U, self.m)
        part.map(lambda r: self.c_relax_points(0, U, None, r), part.cpoints)

    def _fine_residual(self, U, part: Partition):
        part.exchange(U, self.m)
        R = np.zeros((part.nc + 1,) + U.shape[1:], dtype=U.dtype)
        part.map(lambda r: self.c_residual_points(0, U, None, r, R), part.cpoints)
        return R

    def _fine_correct(self, U, R, part: Partition) -> None:
        part.coarse_correct(U, R, self.m, lambda Uc, Rc: self.correct_c_values(0, Uc, Rc))
        self._fine_f(U, part)

    def iterate(self, u0, nt: int, part: Partition, status: Callable | None = None):
        """THE iteration loop (levels >= 2), for any :class:`Partition` of the fine level.

        Returns ``(part.gather(U), history)``; ``U`` has shape ``(nt + 1, *u0.shape)``."""
        sizes = hierarchy(nt, self.m, self.levels)
        if self.levels < 2:
            raise ValueError("levels: the iteration needs levels >= 2 (levels=1 is the serial march)")
        if part.nc != sizes[1]:
            raise ValueError(f"partition: made for {part.nc} C-intervals, the fine grid has {sizes[1]}")
        u0 = np.asarray(u0)
        self.steps_taken = 0
        U = np.empty((nt + 1,) + u0.shape, dtype=u0.dtype)
        U[:] = u0  # initial guess: u0 everywhere
        history: list[float] = []
        R = None
        with np.errstate(over="ignore", invalid="ignore"):
            for it in range(self.max_iter):
                if status is not None:
                    status(f"iteration {it + 1}")
                for k, kind in enumerate(self.relax):
                    if kind == "F":
                        if not (k == 0 and it > 0):  # the previous iteration ended with an F-sweep
                            self._fine_f(U, part)
                    else:
                        self._fine_c(U, part)
                if R is None or self.relax != "F":  # with "F" alone, U has not changed since the last residual
                    R = self._fine_residual(U, part)
                if it == 0:  # the yardstick for divergence: the residual of the relaxed initial guess
                    self._baseline = math.sqrt(part.allreduce(self._sumsq(R, part), "sum"))
                if self.cycle == "F" and self.levels > 2:
                    self._fine_correct(U, R, part)  # F-cycle: an extra visit of the coarser levels
                    R = self._fine_residual(U, part)
                self._fine_correct(U, R, part)
                R = self._fine_residual(U, part)
                history.append(math.sqrt(part.allreduce(self._sumsq(R, part), "sum")))
                self._check_divergence(history, U, part)
                if history[-1] <= self.tol:
                    break
        self.iterations = len(history)
        return part.gather(U), history

    @staticmethod
    def _sumsq(R, part: Partition) -> float:
        return float(np.sum(np.abs(R[part.cpoints.start:part.cpoints.stop].astype(np.float64)) ** 2))

    def _check_divergence(self, history, U, part: Partition) -> None:
        """Raise :class:`MGRITDivergence` with the iteration (and time point) where it blew up; every
        process takes the same decision (the inputs are all-reduced)."""
        k = len(history)
        norm = history[-1]
        mine = U if part.points is None else U[part.points.start:part.points.stop]
        offset = 0 if part.points is None else part.points.start
        flat = mine.reshape(len(mine), -1)
        bad = np.nonzero(~np.isfinite(flat).all(axis=1))[0]
        first = part.allreduce(float(offset + bad[0]) if bad.size else math.inf, "min")
        if not math.isfinite(norm) or math.isfinite(first):
            where = f"; the first non-finite state is at time point {int(first)}" if math.isfinite(first) else ""
            raise MGRITDivergence(
                f"MGRIT diverged at iteration {k}: the residual is {norm:.3g}{where}. The coarse step is "
                f"probably unstable for the coarse time step (e.g. an explicit GRU with gamma = m**level): "
                f"use an implicit coarse step, a smaller m or fewer levels.")
        base = self._baseline if math.isfinite(self._baseline) else 0.0
        if norm > self.diverge_factor * max(base, self.tol, 1e-8):
            raise MGRITDivergence(
                f"MGRIT diverged at iteration {k}: the residual grew from {base:.3g} (the relaxed initial "
                f"guess) to {norm:.3g}, more than diverge_factor={self.diverge_factor:g} times. The coarse "
                f"step is probably unstable: use an implicit coarse step, a smaller m or fewer levels.")

    # ------------------------------------------------------------------ driver
    def solve(self, u0, nt: int):
        """Solve ``nt`` fine steps from ``u0`` in this process (``threads`` CPU threads). Returns
        ``(U, history)``: ``U`` of shape ``(nt + 1, *u0.shape)`` (``U[0] = u0``) and the C-point
        residual norm after each iteration. Raises :class:`MGRITDivergence` instead of returning NaN."""
        u0 = check_array(u0, "u0", dtype=None, finite=False)
        if u0.dtype.kind not in "iufc":
            raise TypeError(f"u0: expected a numeric array, got dtype {u0.dtype}")
        if u0.dtype.kind not in "fc":
            u0 = u0.astype(np.float64)
        if not np.all(np.isfinite(u0)):
            raise ValueError("u0: contains non-finite values")
        sizes = hierarchy(nt, self.m, self.levels)
        check_alloc((nt + 1,) + u0.shape, u0.dtype, "nt", what="MGRIT's solution")
        if self.levels == 1:
            self.steps_taken = 0
            U = np.empty((nt + 1,) + u0.shape, dtype=u0.dtype)
            U[0] = u0
            for p in range(1, nt + 1):
                U[p] = self.phi(0, U[p - 1], p - 1)
            self.steps_taken = nt
            self.iterations = 1
            return U, [0.0]
        part = ThreadPartition(sizes[1], self.threads)
        self._run = part.map  # the coarse levels share the same threads
        try:
            return self.iterate(u0, nt, part)
        finally:
            part.close()
            self._run = Partition(1).map


# --------------------------------------------------------------------------- Dahlquist test problem
def dahlquist_step(lam: float, dt: float, m: int = 4) -> Callable:
    """Backward Euler for ``u' = lam u`` on every level: level l uses ``dt * m**l``.
    ``step(u, i, level) = u / (1 - lam * dt * m**level)``."""
    lam = check_float(lam, "lam")
    dt = check_float(dt, "dt", low=0.0, low_inclusive=False)
    m = check_int(m, "m", low=2)

    def step(u, i, level):
        return u / (1.0 - lam * dt * m**level)

    return step


def dahlquist_exact_serial(lam: float, dt: float, u0: float, nt: int) -> np.ndarray:
    """Closed form of the fine backward-Euler march: ``u_i = u0 / (1 - lam dt)**i``, shape (nt+1,)."""
    lam, dt, u0 = check_float(lam, "lam"), check_float(dt, "dt", low=0.0, low_inclusive=False), check_float(u0, "u0")
    nt = check_positive_int(nt, "nt")
    check_alloc((nt + 1,), np.float64, "nt", what="the trajectory")
    if 1.0 - lam * dt == 0.0:
        raise ValueError(f"lam, dt: backward Euler is singular at lam * dt = 1, got lam={lam}, dt={dt}")
    with np.errstate(over="ignore", divide="ignore"):
        out = u0 / (1.0 - lam * dt) ** np.arange(nt + 1, dtype=np.float64)
    if not np.isfinite(out).all():
        raise ValueError(f"lam, dt: the closed form overflows float64 within nt={nt} steps "
                         f"(|1 - lam dt| = {abs(1.0 - lam * dt):.3g}); use fewer steps")
    return out


def convergence_factor(history) -> float:
    """Geometric mean of ``history[k+1] / history[k]`` over the iterations (stops at exact zero)."""
    history = check_array(np.asarray(history, dtype=float) if isinstance(history, (list, tuple)) else history,
                          "history", ndim=1, dtype=None)
    if history.dtype.kind not in "iuf" or (history.size and history.min() < 0):
        raise ValueError("history: expected residual norms (finite numbers >= 0)")
    h = [float(x) for x in history if x > 0]
    if len(h) < 2:
        return 0.0
    return float((h[-1] / h[0]) ** (1.0 / (len(h) - 1)))


# --------------------------------------------------------------------------- work / span model
def span_model(nt: int, *, m: int = 4, levels: int = 2, iters: int = 2, P: int = 1, relax: str = "FCF",
               latency: float = 1.0) -> dict:
    """Count sequential time steps on MGRIT's critical path with ``P`` processors.

    Level l has ``N_l = nt / m**l`` steps and ``C_l = N_l / m`` C-intervals split into blocks over
    ``min(P, C_l)`` processors. Per iteration and level (< coarsest), counted as :class:`MGRIT`
    runs them: each F-sweep costs ``ceil(C_l/P) * (m-1)`` steps, each C-sweep or residual
    ``ceil(C_l/P)`` steps plus ``latency`` (in step units) for the boundary exchange; restriction
    forms ``gc`` with ``ceil(C_l/P)`` coarse steps; the interpolation is one more F-sweep. The
    coarsest level is a sequential march of ``N_{L-1}`` steps. Returns ``{"span", "work", "serial",
    "speedup"}`` (``speedup = serial / span``, serial = ``nt`` steps; ``work`` = all steps, exactly
    the count :attr:`MGRIT.steps_taken` makes for a V-cycle of ``iters`` iterations). A model, not a
    measurement: every step costs the same, communication costs ``latency`` steps, nothing else.
    """
    sizes = hierarchy(nt, m, levels)
    P = check_positive_int(P, "P")
    iters = check_positive_int(iters, "iters")
    check_choice(relax, "relax", RELAXATIONS)
    latency = check_float(latency, "latency", low=0.0)
    n_f = relax.count("F")
    n_c = relax.count("C")
    span = work = 0.0
    first_span = first_work = 0.0  # the first iteration also runs the leading F-sweep (and, for "F", a residual)
    for lv, n in enumerate(sizes[:-1]):
        c = n // m
        blk = math.ceil(c / P)
        f_span, f_work = blk * (m - 1), c * (m - 1)
        # after the first iteration, level 0 skips the leading F (the last iteration ended with one)
        # and reuses the residual for "F"; coarser levels run the full relaxation, a residual and the interpolating F-sweep.
        nf = n_f if lv == 0 else n_f + 1
        ncs = (n_c + 1 + (1 if n_c else 0)) if lv == 0 else n_c + 1
        one_span = nf * f_span + ncs * (blk + latency) + blk  # F-sweeps + C-sweeps/residuals + gc
        one_work = nf * f_work + ncs * c + c
        if lv == 0:
            first_span = f_span + ((blk + latency) if n_c == 0 else 0.0)
            first_work = f_work + (c if n_c == 0 else 0)
        span += one_span
        work += one_work
    span += sizes[-1]
    work += sizes[-1]
    if levels == 1:
        span, work, first_span, first_work = float(nt), float(nt), 0.0, 0.0
        iters = 1
    span = span * iters + first_span
    work = work * iters + first_work
    return {"span": span, "work": work, "serial": float(nt), "speedup": float(nt) / span}


# --------------------------------------------------------------------------- pieces for the worksheet
def _check_piece(step, U, m, level=0, coarse_step=None):
    """The worksheet pieces' arguments: a callable step, a float ``U`` (N+1, ...) with N a multiple of m."""
    check_callable(step, "step", "a function step(u, i, level) -> u")
    if coarse_step is not None:
        check_callable(coarse_step, "coarse_step", "a function step(u, i, level) -> u")
    U = check_array(U, "U", ndim=range(1, 8), dtype=None)
    if U.dtype.kind not in "fc":  # integers would silently truncate every new state
        raise TypeError(f"U: expected a float (or complex) array, got dtype {U.dtype}; convert with "
                        f"U.astype(np.float64)")
    if len(U) < 2:
        raise ValueError(f"U: expected at least 2 time points (N+1 with N >= 1), got shape {U.shape}")
    check_int(level, "level", low=0, high=MAX_LEVEL)   # a step on level l takes m**l fine steps: 2**63 at most
    hierarchy(len(U) - 1, m, 2)
    return np.array(U, copy=True)


def f_relaxation(step: Callable, U, m: int, level: int = 0) -> np.ndarray:
    """A copy of ``U`` (N+1, ...) with every F-point recomputed from its interval's C-point:
    ``U[j*m + k] = step(U[j*m + k - 1], j*m + k - 1, level)`` for k = 1 .. m-1."""
    U = _check_piece(step, U, m, level)
    MGRIT(step, m=m).f_relax(level, U, None)
    return U


def c_relaxation(step: Callable, U, m: int, level: int = 0) -> np.ndarray:
    """A copy of ``U`` with every C-point ``j*m`` (j >= 1) recomputed from the F-point before it."""
    U = _check_piece(step, U, m, level)
    MGRIT(step, m=m).c_relax(level, U, None)
    return U


def two_level_iteration(step: Callable, coarse_step: Callable, U, m: int) -> np.ndarray:
    """One two-level MGRIT iteration with F-relaxation (= one Parareal iteration) on a copy of ``U``:
    F-relax, C-point residuals, FAS coarse solve (sequential, with ``coarse_step`` at level 1),
    correct the C-points, F-relax."""
    U = _check_piece(step, U, m, coarse_step=coarse_step)
    s = MGRIT(step, m=m, levels=2, relax="F", coarse_step=coarse_step)
    s.f_relax(0, U, None)
    R = s.c_residual(0, U, None)
    s.coarse_correction(0, U, R)
    s.f_relax(0, U, None)
    return U
