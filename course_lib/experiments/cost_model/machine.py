"""The cost model's machine (experiments folder, chapter 12): what this computer can do, *measured* by
:meth:`Machine.measure` with :mod:`course_lib.core.timing` (cached per process; ``quick=True`` for tests) --
cores, SIMD lanes, GEMM peak per core and on all cores, GEMV rate with the weights in cache, streaming
bandwidth on one and on all cores, the cost of one library call, of a thread-pool hand-off and of a numba
parallel region, the latency of one dependent step; MPI latency and bandwidth from a ping-pong between two
ranks (:mod:`course_lib.parallel.mpi_pingpong`: "measured on one node (shared memory)"; assumed 2 µs, 5 GB/s
where MPI is missing) -- the micro-benchmarks live in :mod:`.probes`. GPU numbers are *assumed* and say so
(``machine.source[field]``);
:meth:`Machine.preset` gives the seeds' machines (assumed). :class:`GPU` holds a GPU's numbers. See
:mod:`course_lib.experiments.cost_model` for the model that uses them.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, fields, replace

import numpy as np

from ...core import timing
from ...core.validate import check_bool, check_choice, check_float, check_positive_int, check_str, read_json

__all__ = ["GPU", "Machine", "check_rates", "log_interp", "GEMM_ROWS", "GEMM_SIZES", "use_measurer", "FORMAT"]

FORMAT = "course_lib cost_model Machine, v1"   # the "format" entry of a saved machine (Machine.save)

_MEASURER = None  # probes.measure_machine, registered by that module (it builds a Machine: no import cycle)


def use_measurer(fn) -> None:
    """Make ``fn(quick) -> Machine`` what :meth:`Machine.measure` runs (:mod:`.probes` registers itself)."""
    global _MEASURER
    if not callable(fn):
        raise TypeError(f"fn: expected a callable, got {type(fn).__name__}")
    _MEASURER = fn


# =========================================================================== the machine
def check_rates(obj, rates=(), times=()) -> None:
    """Positive finite rates (they divide) and non-negative finite times, each named by its field."""
    for arg, names in (("rates", rates), ("times", times)):
        if isinstance(names, (str, bytes)) or not hasattr(names, "__iter__") or \
                not all(isinstance(k, str) and hasattr(obj, k) for k in names):
            raise TypeError(f"{arg}: expected a list of field names of {type(obj).__name__}, got {names!r:.60}")
    for k in rates:
        check_float(getattr(obj, k), k, low=0.0, low_inclusive=False)
    for k in times:
        check_float(getattr(obj, k), k, low=0.0)


@dataclass(frozen=True)
class GPU:
    """A GPU's numbers -- measured on a device run, or assumed (``source`` says which)."""

    name: str
    bandwidth_gbs: float      # reachable streaming bandwidth
    gflops: float             # reachable float32 GEMM rate
    launch_s: float           # one kernel launch
    step_latency_s: float     # one dependent step of a kernel that loops over time (a global-memory round trip)
    transfer_gbs: float = 12.0
    source: str = "assumed"

    def __post_init__(self):
        check_str(self.name, "name")
        check_str(self.source, "source", nonempty=False)
        check_rates(self, ("bandwidth_gbs", "gflops", "transfer_gbs"), ("launch_s", "step_latency_s"))

    @classmethod
    def k80(cls) -> "GPU":
        """Seed 001's GK210 (one chip of a Tesla K80): 240 GB/s peak of which its scan reached 104 GB/s
        (claims 001.bandwidth.*); the rest are assumptions."""
        return cls("Tesla K80 (one GK210)", 104.0, 2500.0, 10e-6, 1.0e-6, 6.0,
                   "assumed: bandwidth from seed 001 (104 GB/s reached); launch 10 µs, 1 µs per dependent step")

    @classmethod
    def assumed(cls, name: str = "a current data-centre GPU") -> "GPU":
        check_str(name, "name")
        return cls(name, 1500.0, 15000.0, 5e-6, 0.7e-6, 20.0,
                   "assumed: 1.5 TB/s, 15 TFLOP/s float32, 5 µs launch, 0.7 µs per dependent step")


def log_interp(points, x: float) -> float:
    """``y`` at ``x`` on the line through ``points`` ``((x, y), ...)`` with ``x`` on a log scale (any order); the
    nearest point's ``y`` beyond them."""
    pts = sorted(points)
    if not pts:
        raise ValueError("points: expected at least one (x, y) pair")
    lx = math.log(max(x, 1e-300))
    if lx <= math.log(pts[0][0]):
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if lx <= math.log(x1):
            w = (lx - math.log(x0)) / (math.log(x1) - math.log(x0))
            return (1 - w) * y0 + w * y1
    return pts[-1][1]


@dataclass(frozen=True)
class Machine:
    """What a computer can do (see the module docstring); ``source`` labels each number."""

    name: str
    cores: int
    simd_lanes: int
    gemm_gflops_core: float
    gemm_gflops_all: float
    gemv_gflops: float
    bandwidth_core_gbs: float
    bandwidth_all_gbs: float
    call_s: float
    handoff_s: float
    region_s: float
    step_latency_s: float
    mpi_latency_s: float = 2e-6
    mpi_bandwidth_gbs: float = 5.0
    gpu: GPU | None = None
    source: dict = field(default_factory=dict, compare=False, hash=False)
    noise: timing.Noise = field(default_factory=timing.Noise, compare=False, hash=False)
    call_costs: dict = field(default_factory=dict, compare=False, hash=False)  # (kind, mode) -> s per call
    kernel_gflops: dict = field(default_factory=dict, compare=False, hash=False)  # (kind, mode) -> GFLOP/s
    numba_threads: int | None = None   # threads numba's parallel loops may use (None: every core)
    lane_step_s: float | None = None   # the course's chunked scan at nh = 1 on one thread, per step (lanes)
    lane_call_s: float = 0.0           # ... and per call (set-up before its first step)
    gemm_table: dict = field(default_factory=dict, compare=False, hash=False)  # (rows, size) -> GFLOP/s, 1 core
    deer_gbs: dict = field(default_factory=dict, compare=False, hash=False)  # newton/quasi -> counted GB/s, 1 core
    scan_back_s: float | None = None   # the course's linear-recurrence backward beyond its forward, per element
    channel_rates: tuple = ()          # (s per step, per element, per call): the course's channel scan on channel_threads
    cache_bw: tuple = ()               # (last-level cache bytes, GB/s streaming in it on 1 core, on all cores)
    mgrit_convergence: tuple | None = None  # (residual factor per iteration, first residual per sqrt(element))
    pool_start_s: float | None = None  # a thread pool started (BLAS pinned to one thread) and joined, per call
    gil_serial: tuple = ()             # ((s per call, share the GIL adds), ...): the course's threads method
    gil_start_s: float | None = None   # ... and what it pays once per call: the pool started, the GIL's first contention
    barrier_s: float | None = None     # the course's wavefront: one diagonal's barrier, GIL hand-overs included
    channel_threads: int | None = None
    busy: dict = field(default_factory=dict, compare=False, hash=False)  # field -> why it was measured busy

    def __post_init__(self):
        check_str(self.name, "name")
        check_positive_int(self.cores, "cores", high=1 << 24)
        check_positive_int(self.simd_lanes, "simd_lanes", high=1 << 12)
        check_rates(self, ("gemm_gflops_core", "gemm_gflops_all", "gemv_gflops", "bandwidth_core_gbs",
                            "bandwidth_all_gbs", "mpi_bandwidth_gbs"),
                     ("call_s", "handoff_s", "region_s", "step_latency_s", "mpi_latency_s"))
        if self.gpu is not None and not isinstance(self.gpu, GPU):
            raise TypeError(f"gpu: expected a GPU or None, got {type(self.gpu).__name__}")
        if not isinstance(self.source, dict):
            raise TypeError(f"source: expected a dict quantity -> label, got {type(self.source).__name__}")
        if not isinstance(self.busy, dict):
            raise TypeError(f"busy: expected a dict quantity -> reason, got {type(self.busy).__name__}")
        if self.numba_threads is not None:
            check_positive_int(self.numba_threads, "numba_threads", high=1 << 24)
        if self.lane_step_s is not None:
            check_float(self.lane_step_s, "lane_step_s", low=0.0, low_inclusive=False)
        check_float(self.lane_call_s, "lane_call_s", low=0.0)
        if self.scan_back_s is not None:
            check_float(self.scan_back_s, "scan_back_s", low=0.0, low_inclusive=False)

    @property
    def compiled_threads(self) -> int:
        """Cores numba's parallel loops (chunked and channel scans) can use: the cores, capped by
        ``NUMBA_NUM_THREADS`` where it was measured (one core, or one numba thread: no speed-up)."""
        return self.cores if self.numba_threads is None else min(self.cores, self.numba_threads)

    # ---------------------------------------------------------------- constructors
    @classmethod
    def measure(cls, quick: bool = False) -> "Machine":
        """This machine, measured now with :mod:`course_lib.core.timing` (once per process and ``quick``)."""
        if _MEASURER is None:
            raise RuntimeError("Machine.measure: import course_lib.experiments.cost_model first (its probes module "
                               "holds the micro-benchmarks)")
        return _MEASURER(check_bool(quick, "quick"))

    @classmethod
    def preset(cls, name: str) -> "Machine":
        """The seeds' machines, from their documents and stated assumptions (every number labelled):
        ``"xeon_phi"`` (seed 000: 61 cores, 512-bit SIMD), ``"k80_host"`` (seed 001: a host with a K80),
        ``"attaway"`` (seed 002: 36-core Xeon nodes, 4 MPI ranks x 9 threads per node, many nodes)."""
        check_choice(name, "name", ("xeon_phi", "k80_host", "attaway"))
        a = "assumed"
        if name == "xeon_phi":
            m = cls("61-core Xeon Phi (seed 000)", 61, 16, 30.0, 30.0 * 61 * 0.8, 4.0, 5.0, 170.0, 2e-6, 20e-6,
                    10e-6, 4e-9, source={"cores": "seed 000", "simd_lanes": "seed 000 (512-bit SIMD)",
                                          "*": f"{a}: 1.2 GHz cores, 30 GFLOP/s per core, 170 GB/s stream, "
                                               "10 µs parallel region"})
        elif name == "k80_host":
            m = cls("host with a Tesla K80 (seed 001)", 8, 8, 40.0, 300.0, 10.0, 10.0, 40.0, 1e-6, 20e-6, 5e-6,
                    1.5e-9, gpu=GPU.k80(), source={"*": f"{a}: an 8-core host of 2016", "gpu": GPU.k80().source})
        else:
            m = cls("Attaway, 36-core Xeon nodes (seed 002)", 36 * 32, 16, 70.0, 70.0 * 36 * 32 * 0.8, 10.0,
                    10.0, 100.0 * 32, 1e-6, 20e-6, 10e-6, 1.5e-9, mpi_latency_s=3e-6, mpi_bandwidth_gbs=10.0,
                    source={"cores": "seed 002 (36 cores per node; 32 nodes assumed)",
                            "*": f"{a}: 2.3 GHz Xeon, 70 GFLOP/s per core, 100 GB/s per node, "
                                 "3 µs / 10 GB/s interconnect"})
        return m

    def with_cores(self, P: int) -> "Machine":
        """A virtual machine like this one with ``P`` cores (all-core rates scaled; labelled)."""
        P = check_positive_int(P, "P", high=1 << 16)
        eff = min(1.0, self.gemm_gflops_all / (self.gemm_gflops_core * self.cores))
        src = dict(self.source)
        src["cores"] = f"virtual: {P} cores; all-core GEMM and bandwidth scaled from {self.cores} measured"
        return replace(self, name=f"{self.name}, {P} virtual cores", cores=P, numba_threads=None,
                       gemm_gflops_all=self.gemm_gflops_core * P * eff,
                       bandwidth_all_gbs=self.bandwidth_all_gbs * P / self.cores, source=src)

    def with_gpu(self, gpu: GPU | None) -> "Machine":
        if gpu is not None and not isinstance(gpu, GPU):
            raise TypeError(f"gpu: expected a GPU or None, got {type(gpu).__name__}")
        src = dict(self.source)
        src["gpu"] = gpu.source if gpu else "none"
        return replace(self, gpu=gpu, source=src)

    # ---------------------------------------------------------------- rates
    def gemm_rate(self, rows: float, threads: int = 1, size: int | None = None) -> float:
        """FLOP/s of products whose weights are used by ``rows`` rows, on ``threads`` cores:
        ``min(peak, rows * gemv rate)`` (weights read once, used ``rows`` times) -- and, given the
        weights' ``size`` (nh) and a measured :attr:`gemm_table`, no more than BLAS reached at that
        shape here (small GEMMs are far from the peak)."""
        rows = check_float(rows, "rows", low=0.0)
        threads = check_positive_int(threads, "threads")
        per_core = min(self.gemm_gflops_core, max(1.0, rows) * self.gemv_gflops)
        if size is not None and self.gemm_table:
            per_core = min(per_core, _interpolate(self.gemm_table, max(1.0, rows), check_positive_int(size, "size")))
        if threads > 1:
            return 1e9 * min(per_core * threads, self.gemm_gflops_all * per_core / self.gemm_gflops_core)
        return 1e9 * per_core

    def call_cost(self, kind: str, mode: str = "inference") -> float:
        """Seconds per counted library call of the course's ``kind`` code in ``mode``, measured by a tiny
        run (:mod:`.overheads`); ``call_s`` (one ``np.add`` of 8 floats) where none was measured."""
        return self.call_costs.get((kind, mode), self.call_s)

    def kernel_rate(self, kind: str, mode: str = "inference") -> float:
        """FLOP/s of the course's ``kind`` cell code in ``mode`` on one core, measured (:mod:`.overheads`);
        infinite where none was measured (then the GEMM rate alone rules)."""
        return 1e9 * self.kernel_gflops.get((kind, mode), float("inf"))

    def gil_share(self, per_call: float) -> float:
        """How much of the one-after-another time Python threads add to their overlapped time for calls of
        ``per_call`` seconds (0: they overlap; 1: as slow as one thread doing all of it; above 1: handing the GIL
        back and forth costs more still): :func:`log_interp` over the measured call sizes (:attr:`gil_serial`);
        0 where unmeasured."""
        return log_interp(self.gil_serial, per_call) if self.gil_serial else 0.0

    def channel_seconds(self, T: int, n: int, threads: int) -> float | None:
        """Seconds of the course's channel-parallel scan over ``T`` steps of ``n`` channels on ``threads``
        threads (:attr:`channel_rates`: per step and per element, measured); None where not measured there."""
        if not self.channel_rates or threads != self.channel_threads:
            return None
        step, elem, call = self.channel_rates
        return call + T * step + T * n * elem

    def mgrit_iterations(self, batch: int, T: int, nh: int, tol: float) -> int | None:
        """MGRIT iterations to bring the residual under ``tol``: ``r0 rho^k < tol`` with the measured factor
        ``rho`` and first residual ``r0 = c sqrt(batch T nh)`` (:attr:`mgrit_convergence`); None if unmeasured."""
        if self.mgrit_convergence is None:
            return None
        rho, c = self.mgrit_convergence
        r0 = c * math.sqrt(batch * T * nh)
        return 1 if r0 <= tol else min(30, max(1, math.ceil(math.log(tol / r0) / math.log(rho) - 1e-9)))

    def bandwidth(self, threads: int = 1, working: float | None = None) -> float:
        """Bytes/s streaming on ``threads`` cores; with the ``working`` set's bytes and a measured :attr:`cache_bw`,
        the cache's rate when it fits the last-level cache, memory's from twice that size, log-log between."""
        threads = check_positive_int(threads, "threads")
        mem = self.bandwidth_core_gbs if threads <= 1 else min(self.bandwidth_all_gbs, self.bandwidth_core_gbs * threads)
        if working is None or not self.cache_bw:
            return 1e9 * mem
        size, core, allc = self.cache_bw
        cache = core if threads <= 1 else max(allc, mem)
        f = min(1.0, max(0.0, math.log2(max(working, 1.0) / size)))
        return 1e9 * math.exp((1 - f) * math.log(cache) + f * math.log(mem))

    # ---------------------------------------------------------------- records
    def save(self, path) -> str:
        """Write every field to ``path`` as JSON (:meth:`load` gives back an equal machine, field by field:
        floats are written exactly; tuples, tuple keys, the GPU and the noise are spelled out). Returns the path."""
        path = _check_path(path)
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"format": FORMAT, **_encode_machine(self)}, f, indent=1, ensure_ascii=False)
            f.write("\n")
        return path

    @classmethod
    def load(cls, path) -> "Machine":
        """The machine :meth:`save` wrote to ``path``. A file that is not one (not JSON, another format, an
        unknown or missing field, a value a Machine refuses) raises ValueError naming ``path`` and the field."""
        path = _check_path(path)
        data = read_json(path, "path", "a saved Machine")
        try:
            return _decode_machine(data)
        except (TypeError, ValueError, KeyError) as exc:
            raise ValueError(f"path: {path!r} is not a saved Machine ({exc})") from None

    def table(self) -> list[tuple[str, str, str]]:
        """(quantity, value, source) rows for printing."""
        rows = [("cores", f"{self.cores}", ""), ("SIMD lanes (float32)", f"{self.simd_lanes}", ""),
                ("GEMM peak, 1 core", f"{self.gemm_gflops_core:.1f} GFLOP/s", ""),
                ("GEMM peak, all cores", f"{self.gemm_gflops_all:.1f} GFLOP/s", ""),
                ("GEMV, weights in cache", f"{self.gemv_gflops:.1f} GFLOP/s", ""),
                ("stream bandwidth, 1 core", f"{self.bandwidth_core_gbs:.1f} GB/s", ""),
                ("stream bandwidth, all cores", f"{self.bandwidth_all_gbs:.1f} GB/s", ""),
                ("one library call", f"{self.call_s * 1e6:.2f} µs", ""),
                ("thread-pool hand-off", f"{self.handoff_s * 1e6:.1f} µs", ""),
                ("numba parallel region", f"{self.region_s * 1e6:.1f} µs", ""),
                ("thread pool started, per call", "not measured" if self.pool_start_s is None else
                 f"{self.pool_start_s * 1e6:.1f} µs", ""),
                ("threads: pool start and first GIL contention", "not measured" if self.gil_start_s is None else
                 f"{self.gil_start_s * 1e6:.0f} µs per call", ""),
                ("wavefront: one diagonal's barrier", "not measured" if self.barrier_s is None else
                 f"{self.barrier_s * 1e6:.1f} µs", ""),
                ("GIL: share of one-after-another time", ", ".join(f"{100 * f:.0f}% at {t * 1e6:.1f} µs per call"
                                                          for t, f in self.gil_serial) or "not measured", ""),
                ("one dependent step", f"{self.step_latency_s * 1e9:.2f} ns", ""),
                ("one step of the lane scan", "not measured" if self.lane_step_s is None else
                 f"{self.lane_step_s * 1e9:.2f} ns", ""),
                ("scan backward, per element", "not measured" if self.scan_back_s is None else
                 f"{self.scan_back_s * 1e9:.2f} ns", ""),
                ("MPI latency", f"{self.mpi_latency_s * 1e6:.1f} µs", ""),
                ("MPI bandwidth", f"{self.mpi_bandwidth_gbs:.1f} GB/s", ""),
                ("GPU", self.gpu.name if self.gpu else "none", "")]
        if self.gemm_table:
            pts = [(r, z) for r, z in ((1, 64), (16, 64), (64, 256), (256, 1024)) if (r, z) in self.gemm_table]
            rows.append(("GEMM at small shapes, 1 core", ", ".join(f"{r}x{z}: {self.gemm_table[(r, z)]:.0f}"
                                                                   for r, z in pts) + " GFLOP/s", ""))
        if self.cache_bw:
            from ..batching import speed_class   # the course's one rule: cache speed is >= 1.5x the DRAM line

            where = speed_class(self.cache_bw[1], self.bandwidth_core_gbs)
            rows.append((f"stream bandwidth in the {self.cache_bw[0] >> 20} MiB the OS reports as cache "
                         f"({'reads at DRAM speed here' if where == 'DRAM speed' else 'measured at cache speed'})",
                         f"{self.cache_bw[1]:.1f} GB/s (1 core), {self.cache_bw[2]:.1f} GB/s (all cores)", ""))
        if self.mgrit_convergence:
            rows.append(("MGRIT residual per iteration", f"x{self.mgrit_convergence[0]:.3f} (first: "
                         f"{self.mgrit_convergence[1]:.2e} x sqrt(B T nh))", ""))
        if self.channel_rates:
            rows.append((f"channel scan, {self.channel_threads} threads", f"{self.channel_rates[2] * 1e6:.1f} µs per call "
                         f"+ {self.channel_rates[0] * 1e9:.2f} ns per step + {self.channel_rates[1] * 1e9:.3f} ns per "
                         "element", ""))
        rows += [(f"DEER's counted bytes, {k}", f"{v:.1f} GB/s", "") for k, v in self.deer_gbs.items()]
        rows += [(f"one counted call, {k} {md}", f"{v * 1e6:.2f} µs", "") for (k, md), v in self.call_costs.items()]
        rows += [(f"cell kernel, {k} {md}", f"{v:.1f} GFLOP/s", "") for (k, md), v in self.kernel_gflops.items()]
        keys = ["cores", "simd_lanes", "gemm_gflops_core", "gemm_gflops_all", "gemv_gflops", "bandwidth_core_gbs",
                "bandwidth_all_gbs", "call_s", "handoff_s", "region_s", "pool_start_s", "gil_start_s", "barrier_s",
                "gil_serial",
                "step_latency_s", "lane_step_s", "scan_back_s", "mpi_latency_s", "mpi_bandwidth_gbs", "gpu"] + \
            (["gemm_table"] if self.gemm_table else []) + \
            (["cache_bw"] if self.cache_bw else []) + \
            (["mgrit_convergence"] if self.mgrit_convergence else []) + \
            (["channel_rates"] if self.channel_rates else []) + \
            ["deer_gbs"] * len(self.deer_gbs) + \
            ["call_costs"] * (len(self.call_costs) + len(self.kernel_gflops))
        out = []
        for (q, v, _), k in zip(rows, keys):
            src = self.source.get(k, self.source.get("*", ""))
            if k in self.busy:
                src += f"; BUSY: {self.busy[k]}"
            out.append((q, v, src))
        if self.numba_threads is not None and self.numba_threads < self.cores:
            out.insert(1, ("numba threads", f"{self.numba_threads}", "NUMBA_NUM_THREADS: the compiled scans use these"))
        return out

    def __str__(self) -> str:
        w = max(len(r[0]) for r in self.table())
        return "\n".join(f"{q:<{w}}  {v:>16}  {s}" for q, v, s in self.table())


GEMM_ROWS = (1, 4, 16, 64, 256)
GEMM_SIZES = (16, 64, 256, 1024)


def _interpolate(table: dict, rows: float, size: int) -> float:
    """GFLOP/s at (rows, size) from the measured grid, bilinear in log-log, clamped at its edges."""
    def bracket(v, grid):
        v = min(max(v, grid[0]), grid[-1])
        i = max(0, min(len(grid) - 2, int(np.searchsorted(grid, v)) - 1))
        lo, hi = grid[i], grid[i + 1]
        return lo, hi, (np.log(v) - np.log(lo)) / (np.log(hi) - np.log(lo))
    r0, r1, fr = bracket(rows, GEMM_ROWS)
    s0, s1, fs = bracket(size, GEMM_SIZES)
    lg = {k: np.log(table[k]) for k in ((r0, s0), (r0, s1), (r1, s0), (r1, s1))}
    v = (1 - fr) * ((1 - fs) * lg[(r0, s0)] + fs * lg[(r0, s1)]) + fr * ((1 - fs) * lg[(r1, s0)] + fs * lg[(r1, s1)])
    return float(np.exp(v))


# =========================================================================== save / load
_PLAIN = ("source", "busy")          # str -> str dicts, kept as they are
_KEY_SEP = "|"                       # a tuple key ("gru", "training") is written "gru|training"


def _check_path(path) -> str:
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise TypeError(f"path: expected a file name (str or path), got {type(path).__name__} {path!r:.60}")
    return os.fspath(path)


def _key(k) -> str:
    return _KEY_SEP.join(str(p) for p in k) if isinstance(k, tuple) else str(k)


def _unkey(k: str):
    if _KEY_SEP not in k:
        return k
    return tuple(int(p) if p.lstrip("-").isdigit() else p for p in k.split(_KEY_SEP))


def _tuples(v):
    """JSON lists back to the tuples they were (nested), dicts' tuple keys back to tuples."""
    if isinstance(v, list):
        return tuple(_tuples(x) for x in v)
    if isinstance(v, dict):
        return {_unkey(k): _tuples(x) for k, x in v.items()}
    return v


def _encode_noise(n: timing.Noise) -> dict:
    from dataclasses import asdict
    return {"spread": n.spread, "others": n.others, "wide": n.wide, "busy": n.busy, "notes": list(n.notes),
            "uncertain": list(n.uncertain), "said": list(n.said), "ratios": [asdict(r) for r in n.ratios]}


def _decode_noise(d: dict) -> timing.Noise:
    from ...core.intervals import Ratio
    if not isinstance(d, dict):
        raise TypeError(f"noise: expected an object, got {type(d).__name__}")
    ratios = [Ratio(**{k: (tuple(v) if isinstance(v, list) and k != "values" else v) for k, v in r.items()})
              for r in d.get("ratios", [])]
    return timing.Noise(d.get("spread", 0.0), d.get("others"), d.get("wide", False), d.get("busy", False),
                        list(d.get("notes", [])), list(d.get("uncertain", [])), list(d.get("said", [])), ratios)


def _encode_machine(m: "Machine") -> dict:
    out = {}
    for f in fields(m):
        v = getattr(m, f.name)
        if f.name == "noise":
            v = _encode_noise(v)
        elif f.name == "gpu":
            v = None if v is None else {g.name: getattr(v, g.name) for g in fields(v)}
        elif isinstance(v, dict):
            v = {_key(k): x for k, x in v.items()}
        out[f.name] = v
    return out


def _decode_machine(data) -> "Machine":
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"format: expected {FORMAT!r}, got {got!r}")
    names = {f.name for f in fields(Machine)}
    unknown = sorted(set(data) - names - {"format"})
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a field of Machine")
    kw = {}
    for k, v in data.items():
        if k == "format":
            continue
        if k == "noise":
            v = _decode_noise(v)
        elif k == "gpu":
            v = None if v is None else GPU(**v)
        elif k not in _PLAIN:
            v = _tuples(v)
        kw[k] = v
    return Machine(**kw)
