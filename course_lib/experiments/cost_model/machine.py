"""The cost model's machine (experiments folder, chapter 12): what this computer can do, *measured* by
:meth:`Machine.measure` with :mod:`course_lib.core.timing` (cached per process; ``quick=True`` for tests) --
cores, SIMD lanes, GEMM peak per core and on all cores, GEMV rate with the weights in cache, streaming
bandwidth on one and on all cores, the cost of one library call, of a thread-pool hand-off and of a numba
parallel region, the latency of one dependent step; MPI latency and bandwidth from a ping-pong between two
ranks (:mod:`course_lib.parallel.mpi_pingpong`: "measured on one node (shared memory)"; assumed 2 µs, 5 GB/s
where MPI is missing). GPU numbers are *assumed* and say so (``machine.source[field]``);
:meth:`Machine.preset` gives the seeds' machines (assumed). :class:`GPU` holds a GPU's numbers. See
:mod:`course_lib.experiments.cost_model` for the model that uses them.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from ...core import backend, timing
from ...core.validate import check_bool, check_choice, check_float, check_positive_int, check_str

__all__ = ["GPU", "Machine", "check_rates", "register_probe", "low_quantile", "single_runs", "cpu_seconds"]


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
        return _measure(check_bool(quick, "quick"))

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

    def bandwidth(self, threads: int = 1) -> float:
        """Bytes/s streaming on ``threads`` cores."""
        threads = check_positive_int(threads, "threads")
        if threads <= 1:
            return 1e9 * self.bandwidth_core_gbs
        return 1e9 * min(self.bandwidth_all_gbs, self.bandwidth_core_gbs * threads)

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
        rows += [(f"DEER's counted bytes, {k}", f"{v:.1f} GB/s", "") for k, v in self.deer_gbs.items()]
        rows += [(f"one counted call, {k} {md}", f"{v * 1e6:.2f} µs", "") for (k, md), v in self.call_costs.items()]
        rows += [(f"cell kernel, {k} {md}", f"{v:.1f} GFLOP/s", "") for (k, md), v in self.kernel_gflops.items()]
        keys = ["cores", "simd_lanes", "gemm_gflops_core", "gemm_gflops_all", "gemv_gflops", "bandwidth_core_gbs",
                "bandwidth_all_gbs", "call_s", "handoff_s", "region_s", "step_latency_s", "lane_step_s", "scan_back_s", "mpi_latency_s",
                "mpi_bandwidth_gbs", "gpu"] + (["gemm_table"] if self.gemm_table else []) + \
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


def _gemm_table(repeat: int) -> dict:
    """``{(rows, size): GFLOP/s}`` of ``(rows, size) @ (size, size)`` on one BLAS thread, by CPU clock, less
    the time of the same call on a 1 x 4 x 4 product (the call itself, which the model prices as a call)."""
    out = {}
    with backend.blas_threads(1):
        a0, w0, o0 = np.ones((1, 4), np.float32), np.ones((4, 4), np.float32), np.empty((1, 4), np.float32)
        base = cpu_seconds(lambda: np.matmul(a0, w0, out=o0), repeat=repeat)
        for r in GEMM_ROWS:
            for z in GEMM_SIZES:
                a, w, o = np.ones((r, z), np.float32), np.ones((z, z), np.float32), np.empty((r, z), np.float32)
                t = cpu_seconds(lambda: np.matmul(a, w, out=o), repeat=repeat)
                out[(r, z)] = 2.0 * r * z * z / max(t - base, 0.2 * t) / 1e9
    return out


def _simd_lanes() -> int:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return 16 if "avx512f" in flags else 8 if "avx" in flags else 4
    except OSError:
        pass
    return 4


def cpu_seconds(fn, *, repeat: int, min_time: float = 2e-3) -> float:
    """Least CPU seconds per call of ``fn()`` run in *this* thread (``time.thread_time``) over ``repeat``
    repeats of at least ``min_time`` CPU seconds: for single-threaded constants, the time a call costs
    while it holds a core -- the waits for a core that other processes cause are not counted."""
    repeat = check_positive_int(repeat, "repeat")
    fn()
    t0 = time.thread_time()
    fn()
    one = max(time.thread_time() - t0, 1e-7)
    number = max(1, min(100_000, int(min_time / one)))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.thread_time()
        for _ in range(number):
            fn()
        best = min(best, (time.thread_time() - t0) / number)
    return max(best, 1e-10)


def _gemm_peak(n: int, threads: int, repeat: int) -> float:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    out = np.empty((n, n), np.float32)
    with backend.blas_threads(threads):
        if threads == 1:  # one thread: by CPU clock (a busy machine does not lower it)
            return timing.gemm_flops(n, n, n) / cpu_seconds(lambda: np.matmul(a, b, out=out), repeat=repeat) / 1e9
        t = timing.measure(np.matmul, a, b, out=out, repeat=repeat, warmup=1, number=1)
    return timing.gemm_flops(n, n, n) / t.min / 1e9


def _copy_bandwidth_cpu(mbytes: int, repeat: int) -> float:
    """GB/s of ``np.copyto`` of ``mbytes`` MB (one read, one write per byte) on this thread, by CPU clock."""
    src = np.ones(mbytes * 1_000_000 // 8)
    dst = np.empty_like(src)
    return 2 * src.nbytes / cpu_seconds(lambda: np.copyto(dst, src), repeat=repeat, min_time=0.0) / 1e9


def _parallel_copy_bandwidth(mbytes: int, threads: int, repeat: int) -> float:
    n = mbytes * 1_000_000 // 8
    src = np.ones(n)
    dst = np.empty_like(src)
    parts = np.linspace(0, n, threads + 1).astype(int)
    with ThreadPoolExecutor(threads) as pool:
        def run():
            list(pool.map(lambda i: np.copyto(dst[parts[i]:parts[i + 1]], src[parts[i]:parts[i + 1]]),
                          range(threads)))
        t = timing.measure(run, repeat=repeat, warmup=1, number=1)
    return 2 * src.nbytes / t.min / 1e9


@lru_cache(maxsize=None)
def _numba_kernels():
    from numba import njit, prange

    @njit(cache=True)
    def chain(a, x):
        h = np.float32(0.0)
        for t in range(a.shape[0]):
            h = a[t] * h + x[t]
        return h

    @njit(cache=True, parallel=True)
    def region(out):
        for i in prange(out.shape[0]):
            out[i] += 1.0

    return chain, region


def single_runs(fn, *, n: int, budget_s: float = 0.25, warmup: int = 2) -> list[float]:
    """Seconds of up to ``n`` single timed calls of ``fn()`` (at least 3; stops after ``budget_s``)."""
    n = check_positive_int(n, "n", high=1 << 20)
    budget_s = check_float(budget_s, "budget_s", low=0.0, low_inclusive=False)
    for _ in range(warmup):
        fn()
    ts: list[float] = []
    end = time.perf_counter() + budget_s
    while len(ts) < n and (len(ts) < 3 or time.perf_counter() < end):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


def low_quantile(times, q: float = 0.05) -> tuple[float, float]:
    """``(q-quantile, median)`` of single-run ``times``: other processes only ever add time (a thread
    that waits for a core), so a low quantile of many short runs -- taken in bursts spread over the
    whole measurement -- is what the call costs when it gets its cores; the median shows what busy
    moments added."""
    ts = sorted(times)
    if not ts:
        raise ValueError("times: expected at least one timed run")
    return ts[int(q * (len(ts) - 1))], ts[len(ts) // 2]


def _busy_note(low: float, median: float, n: int) -> str | None:
    """Why a constant was measured busy (the median of its runs > 3x their low quantile), or None."""
    if median > 3 * low:
        return (f"median of {n} single runs {median * 1e6:.1f} µs vs {low * 1e6:.1f} µs at their 5% quantile "
                f"(other processes held the cores): the 5% quantile is used")
    return None


_PROBES: list = []


def register_probe(probe) -> None:
    """Add ``probe(quick) -> {Machine field: value}`` to :meth:`Machine.measure` (the package registers
    :mod:`.overheads`, which times the course's own code -- this module does not import it: no cycle)."""
    if not callable(probe):
        raise TypeError(f"probe: expected a callable, got {type(probe).__name__}")
    _PROBES.append(probe)
    _measure.cache_clear()


@lru_cache(maxsize=None)
def _measure(quick: bool) -> Machine:
    cores = backend.cpu_count()
    n, rep, mb = (256, 3, 32) if quick else (768, 5, 128)
    src = {}
    chain, region = _numba_kernels()
    buf = np.zeros(max(2, cores), np.float64)
    pool = ThreadPoolExecutor(cores)
    regions: list = []
    handoffs: list = []
    burst = 20 if quick else 50

    def sample():  # bursts of single runs between the other probes: a busy moment spoils only some
        regions.extend(single_runs(lambda: region(buf), n=burst, budget_s=0.05 if quick else 0.15))
        handoffs.extend(single_runs(lambda: list(pool.map(int, range(cores))), n=burst,
                                    budget_s=0.05 if quick else 0.15))

    sample()
    g1 = _gemm_peak(n, 1, rep)
    sample()
    gall = _gemm_peak(n, cores, rep) if cores > 1 else g1
    sample()
    with backend.blas_threads(1):  # single-threaded constants by CPU clock
        wa, wx = np.ones((256, 256), np.float32), np.ones(256, np.float32)
        wy = np.empty(256, np.float32)
        gemv = timing.gemm_flops(256, 1, 256) / cpu_seconds(lambda: np.matmul(wa, wx, out=wy), repeat=max(rep, 7)) / 1e9
    sample()
    bw1 = _copy_bandwidth_cpu(mb, rep)
    sample()
    bwall = _parallel_copy_bandwidth(mb, cores, rep) if cores > 1 else bw1
    sample()
    x, y = np.ones(8, np.float32), np.ones(8, np.float32)
    call = cpu_seconds(lambda: np.add(x, y), repeat=max(rep, 7))
    Tn = 20_000 if quick else 200_000
    a = np.full(Tn, 0.5, np.float32)
    xs = np.ones(Tn, np.float32)
    step = cpu_seconds(lambda: chain(a, xs), repeat=max(rep, 7)) / Tn
    sample()
    pool.shutdown()
    busy = {}
    handoff, med = low_quantile(handoffs)  # robust: a low quantile of many single runs
    busy["handoff_s"] = _busy_note(handoff, med, len(handoffs))
    region_s, med = low_quantile(regions)
    busy["region_s"] = _busy_note(region_s, med, len(regions))
    busy = {k: v for k, v in busy.items() if v}
    nrun = f"{len(regions)} / {len(handoffs)}"
    if region_s > 1e-3:  # even the best runs waited: the advisor will not advise methods that pay it
        busy["region_s"] = (f"even the fastest 5% of {len(regions)} single runs took {region_s * 1e3:.1f} ms "
                            f"(a quiet core: a few µs): its threads waited for cores other processes held")
    if handoff > 1e-3:
        busy["handoff_s"] = (f"even the fastest 5% of {len(handoffs)} single runs took {handoff * 1e3:.1f} ms: "
                             f"the pool's threads waited for cores other processes held")
    noise = timing.Noise()  # the single-core constants are minima: a busy moment only spoils the ones in ``busy``
    for k in ("cores", "simd_lanes", "gemm_gflops_core", "gemm_gflops_all", "gemv_gflops", "bandwidth_core_gbs",
              "bandwidth_all_gbs", "call_s", "handoff_s", "region_s", "step_latency_s"):
        src[k] = "measured" + (" (quick)" if quick else "")
    src["cores"] = "measured (CPU affinity)"
    for k in ("gemm_gflops_core", "gemv_gflops", "bandwidth_core_gbs", "call_s", "step_latency_s"):
        src[k] = "measured by CPU clock (one thread)" + (" (quick)" if quick else "")
    src["handoff_s"] = src["region_s"] = (f"measured: 5% quantile of single runs in 7 bursts (regions / hand-offs: "
                                          f"{nrun})" + (" (quick)" if quick else ""))
    src["simd_lanes"] = "from /proc/cpuinfo flags"
    mpi_alpha, mpi_beta, src["mpi_latency_s"] = _mpi_numbers(quick)
    src["mpi_bandwidth_gbs"] = src["mpi_latency_s"]
    extra = {}
    for probe in _PROBES:  # e.g. .overheads: the course's own code, timed (registered, not imported here)
        extra.update(probe(quick))
    if extra:
        src["call_costs"] = "measured: a tiny and a mid-sized run of the course's own code per kind" + \
            (" (quick)" if quick else "")
    gpu = None
    if backend.gpu_available():
        gpu = GPU.assumed(backend.detect_gpu()[1])
    src["gpu"] = gpu.source if gpu else f"none ({backend.cuda_mode()})"
    src["gemm_table"] = "measured by CPU clock (one thread), less the call itself" + (" (quick)" if quick else "")
    fields = dict(gemm_table=_gemm_table(2 if quick else 3), step_latency_s=step, mpi_latency_s=mpi_alpha, mpi_bandwidth_gbs=mpi_beta, gpu=gpu, source=src,
                  noise=noise, numba_threads=backend.max_threads(), busy=busy)
    if "deer_gbs" in extra:
        src["deer_gbs"] = ("measured by CPU clock: the course's DEER (T = 256, batch 2, nh = 12; 1 and 3 iterations), "
                           "its counted bytes per second less its counted calls" + (" (quick)" if quick else ""))
    if "scan_back_s" in extra:
        src["scan_back_s"] = ("measured by CPU clock: the course's sequential scan, training less inference, at "
                              "nh = 64, T = 2048, per element" + (" (quick)" if quick else ""))
    if "lane_step_s" in extra:
        src["lane_step_s"] = (f"measured by CPU clock: the course's chunked scan at nh = 1 on one thread, per step "
                              f"(and {extra.get('lane_call_s', 0.0) * 1e6:.0f} µs per call)" + (" (quick)" if quick else ""))
    if "step_latency_s" in extra:
        src["step_latency_s"] = "measured by CPU clock: the course's sequential scan at nh = 1, per step" + \
            (" (quick)" if quick else "")
    fields.update(extra)
    return Machine(f"this machine ({backend.cpu_model()})", cores, _simd_lanes(), g1, max(g1, gall), gemv, bw1,
                   max(bw1, bwall), call, handoff, region_s, **fields)


def _mpi_numbers(quick: bool) -> tuple[float, float, str]:
    """``(latency s, bandwidth GB/s, label)`` from a ping-pong between two ranks, or the assumed 2 µs and
    5 GB/s (labelled why) where MPI is missing or the job fails."""
    from ...core.mpi import MPIFailed
    from ...parallel.mpi_pingpong import pingpong

    try:
        res = pingpong((8, 1 << 16, 1 << 20, 1 << 22), repeat=5 if quick else 20, timeout=60)
    except (MPIFailed, OSError) as exc:
        return 2e-6, 5.0, f"assumed: 2 µs, 5 GB/s (no ping-pong: {str(exc).splitlines()[0]})"
    return res["alpha_s"], res["beta_gbs"], res["source"] + (" (quick)" if quick else "")
