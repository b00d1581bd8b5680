"""The schedules of the seed's Halide RNN step (models folder, chapter 06): *how* the loops of every pipeline
of :mod:`course_lib.models.halide_rnn` are arranged -- the algorithm never changes.

:class:`Schedule` (tiling, SIMD width, parallel rows, where the element-wise epilogue is computed, fused or
two-stage definitions, JIT per call); ``SCHEDULES`` -- the seed's named schedules (the eight of Fig. 10,
``"specialized"``, ``"fused"``, ``"jit_per_call"``); :func:`make_schedule`, :func:`get_schedule`; and
:func:`schedule_stage`, which applies a schedule to one product stage's Halide ``Func`` s.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..core.validate import check_bool, check_choice, check_int, check_positive_int

__all__ = ["Schedule", "SCHEDULES", "FIG10_NAMES", "SEED_TILE", "SEED_VECTOR", "make_schedule", "get_schedule",
           "schedule_stage"]


# --------------------------------------------------------------------------- schedules
@dataclass(frozen=True)
class Schedule:
    """How the loops of every pipeline are arranged; the algorithm never changes.

    ``tile``: ``(rows, cols)`` of the output tiles of every product, or None (row by row).
    ``vector``: SIMD lanes over columns (16 floats = one 512-bit register), or None (scalar).
    ``parallel``: spread rows (or row tiles) over Halide's thread pool.
    ``fused``: single-expression definitions (``hl.sum`` inline) instead of pure + update.
    ``elementwise``: ``"inside"`` (epilogue computed in the product's loops) or ``"rows"``
    (its own stage, parallel over rows and vectorised: the seed's specialised schedule).
    ``compile``: ``"once"`` (cached callable) or ``"per_call"`` (rebuilt and JIT-compiled each call).
    """

    name: str
    tile: tuple[int, int] | None = None
    vector: int | None = None
    parallel: bool = False
    fused: bool = False
    elementwise: str = "inside"
    compile: str = "once"
    figure: str = ""
    description: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name: expected a non-empty string, got {self.name!r}")
        if self.tile is not None:
            if not isinstance(self.tile, (tuple, list)) or len(self.tile) != 2:
                raise ValueError(f"tile: expected (rows, cols) or None, got {self.tile!r}")
            object.__setattr__(self, "tile", tuple(check_positive_int(v, "tile", high=4096) for v in self.tile))
        if self.vector is not None:
            object.__setattr__(self, "vector", check_positive_int(self.vector, "vector", high=256))
        for flag in ("parallel", "fused"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag}: expected True or False, got {getattr(self, flag)!r}")
        check_choice(self.elementwise, "elementwise", ("inside", "rows"))
        check_choice(self.compile, "compile", ("once", "per_call"))

    def key(self) -> tuple:
        """What the compiled code depends on (the name and the words do not)."""
        return (self.tile, self.vector, self.parallel, self.fused, self.elementwise)


SEED_TILE = (64, 16)  # "tiling of 64 rows and 16 columns" (seed §4.4)
SEED_VECTOR = 16      # "process 16 elements in parallel" (512-bit SIMD on the Xeon Phi)


def _fig10(tiled: bool, simd: bool, parallel: bool) -> Schedule:
    parts = [p for p, on in (("tiled", tiled), ("simd", simd), ("parallel", parallel)) if on]
    name = "+".join(parts) or "serial"
    words = {"serial": "row by row, scalar, one thread"}.get(name, " + ".join(parts))
    return Schedule(name, tile=SEED_TILE if tiled else None, vector=SEED_VECTOR if simd else None,
                    parallel=parallel, figure="Fig. 10", description=words)


FIG10_NAMES = ("serial", "tiled", "simd", "parallel", "tiled+simd", "tiled+parallel", "simd+parallel",
               "tiled+simd+parallel")

SCHEDULES: dict[str, Schedule] = {}
for _n in FIG10_NAMES:
    _s = _fig10("tiled" in _n, "simd" in _n, "parallel" in _n)
    SCHEDULES[_s.name] = _s
_best = SCHEDULES["tiled+simd+parallel"]
SCHEDULES["specialized"] = dataclasses.replace(
    _best, name="specialized", elementwise="rows", figure="Fig. 13",
    description="tiled+simd+parallel products; element-wise stages on their own, parallel over rows")
SCHEDULES["fused"] = dataclasses.replace(
    _best, name="fused", fused=True, figure="§4.9",
    description="tiled+simd+parallel on single-expression definitions (hl.sum inline)")
SCHEDULES["jit_per_call"] = dataclasses.replace(
    _best, name="jit_per_call", compile="per_call", figure="Fig. 14",
    description="tiled+simd+parallel, rebuilt and JIT-compiled on every call")
del _n, _s, _best


def make_schedule(*, tile: tuple[int, int] | None = SEED_TILE, vector: int | None = SEED_VECTOR,
                  parallel: bool = True, fused: bool = False, elementwise: str = "inside",
                  name: str | None = None) -> Schedule:
    """A custom :class:`Schedule` (the widget's): validated tile sizes, vector width, flags."""
    if tile is not None:
        if not isinstance(tile, (tuple, list)) or len(tile) != 2:
            raise ValueError(f"tile: expected (rows, cols) or None, got {tile!r}")
        tile = (check_int(tile[0], "tile[0] (rows)", low=1, high=4096),
                check_int(tile[1], "tile[1] (cols)", low=1, high=4096))
    if vector is not None:
        vector = check_int(vector, "vector", low=1, high=64)
        if vector & (vector - 1):
            raise ValueError(f"vector: expected a power of two (lanes), got {vector}")
        if vector == 1:
            vector = None
    parallel, fused = check_bool(parallel, "parallel"), check_bool(fused, "fused")
    if elementwise not in ("inside", "rows"):
        raise ValueError(f"elementwise: expected 'inside' or 'rows', got {elementwise!r}")
    if name is None:
        name = (f"tile {tile[0]}x{tile[1]}" if tile else "rows") + (f", simd {vector}" if vector else "") + \
               (", parallel" if parallel else "") + (", fused" if fused else "")
    return Schedule(str(name), tile=tile, vector=vector, parallel=bool(parallel), fused=bool(fused),
                    elementwise=elementwise, figure="custom", description=str(name))


def get_schedule(schedule) -> Schedule:
    """A :class:`Schedule` from a name in ``SCHEDULES`` or a Schedule (ValueError naming ``schedule``)."""
    if isinstance(schedule, Schedule):
        return schedule
    if isinstance(schedule, str) and schedule in SCHEDULES:
        return SCHEDULES[schedule]
    raise ValueError(f"schedule: expected one of {', '.join(repr(s) for s in SCHEDULES)} or a Schedule, "
                     f"got {schedule!r}")


def schedule_stage(hl, st, sched: Schedule) -> None:
    """Apply ``sched`` to one product stage ``st`` (a stage of :mod:`course_lib.models.halide_rnn`: its ``out``
    and ``prod`` Funcs, Vars ``j, i`` and RDom ``k``), given the ``halide`` module ``hl`` (see :class:`Schedule`)."""
    guard = hl.TailStrategy.GuardWithIf
    V = sched.vector
    j, i, k = st.j, st.i, st.k
    if st.prod is None:  # fused: one definition, the reduction is inlined per output element
        if sched.tile:
            jo, io, ji, ii = hl.Var("jo"), hl.Var("io"), hl.Var("ji"), hl.Var("ii")
            st.out.tile(j, i, jo, io, ji, ii, sched.tile[1], sched.tile[0], guard)
            if V:
                st.out.vectorize(ji, V, guard)
            if sched.parallel:
                st.out.parallel(io)
        else:
            if V:
                st.out.vectorize(j, V, guard)
            if sched.parallel:
                st.out.parallel(i)
        return
    target = st.out
    if sched.elementwise == "rows":
        # the product is its own stage, computed over the whole matrix with the product schedule;
        # the element-wise epilogue is a second stage: parallel over rows, vectorised
        st.prod.compute_root()
        target = st.prod
        if V:
            st.out.vectorize(j, V, guard)
        if sched.parallel:
            st.out.parallel(i)
        upd = st.prod.update()
        if sched.tile:
            jo, io, ji, ii = hl.Var("jo"), hl.Var("io"), hl.Var("ji"), hl.Var("ii")
            st.prod.tile(j, i, jo, io, ji, ii, sched.tile[1], sched.tile[0], guard)
            upd.tile(j, i, jo, io, ji, ii, sched.tile[1], sched.tile[0], guard).reorder(ji, ii, k.x, jo, io)
            if V:
                st.prod.vectorize(ji, V, guard)
                upd.vectorize(ji, V, guard)
            if sched.parallel:
                st.prod.parallel(io)
                upd.parallel(io)
        else:
            upd.reorder(j, k.x, i)
            if V:
                st.prod.vectorize(j, V, guard)
                upd.vectorize(j, V, guard)
            if sched.parallel:
                st.prod.parallel(i)
                upd.parallel(i)
        return
    # element-wise epilogue inside the product's loops: the accumulator lives per tile (or per row)
    upd = st.prod.update()
    if sched.tile:
        jo, io, ji, ii = hl.Var("jo"), hl.Var("io"), hl.Var("ji"), hl.Var("ii")
        target.tile(j, i, jo, io, ji, ii, sched.tile[1], sched.tile[0], guard)
        if V:
            target.vectorize(ji, V, guard)
        if sched.parallel:
            target.parallel(io)
        st.prod.compute_at(target, jo)
        upd.reorder(j, i, k.x)  # for k: for rows of the tile: for columns of the tile
    else:
        if V:
            target.vectorize(j, V, guard)
        if sched.parallel:
            target.parallel(i)
        st.prod.compute_at(target, i)
        upd.reorder(j, k.x)     # one row of accumulators: for k: for columns (the ikj order)
    if V:
        st.prod.vectorize(j, V, guard)
        upd.vectorize(j, V, guard)
