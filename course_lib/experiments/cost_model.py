"""Which parallelism when: one cost model across the course, and an advisor (experiments layer, chapter 12).

Three pieces, each plain data:

``Machine``   what this computer can do, *measured* by :meth:`Machine.measure` with
              :mod:`course_lib.core.timing` (cached per process; ``quick=True`` for tests): cores, SIMD
              lanes, GEMM peak per core and on all cores, GEMV rate with the weights in cache, streaming
              bandwidth on one and on all cores, the cost of one library call, of a thread-pool hand-off
              and of a numba parallel region, the latency of one dependent step. MPI and GPU numbers
              cannot be measured on a machine without them: they are *assumed* and say so
              (``machine.source[field]``). :meth:`Machine.preset` gives the seeds' machines (assumed).
``Problem``   model ``kind`` (``"rnn"``, ``"lstm"``, ``"gru"``, ``"linear"``), ``mode`` (``"inference"`` or
              ``"training"``), ``B``, ``T``, ``H``, ``layers`` (and ``nx``, ``ny``), validated.
``Cost``      one method on one problem on one machine: ``work`` and ``span`` (flops), ``bytes`` moved,
              ``calls`` (library calls or kernel launches), ``regions`` (fork-joins / barriers),
              ``messages`` and ``comm_bytes``, the model's own ``counts`` (cells, steps, combines ...) and
              the predicted ``seconds`` with its parts.

Methods (:data:`METHODS`): ``serial`` (one sequence, one step at a time), ``batched`` (GEMM over the
batch), ``threads`` (the batch split over CPU threads), ``wavefront`` (layers x time diagonals), ``mpi``
(the batch split over ranks; an allreduce of gradients when training), ``scan`` (linear recurrences:
parallel over time, chunked), ``channels`` (linear recurrences: parallel over channels), ``mgrit``,
``deer`` and ``quasi_deer`` (nonlinear recurrences, parallel over time), ``gpu_scan`` and
``gpu_batched`` (a GPU, when the machine has one).

The time of a method is a roofline with overheads::

    seconds = max(work / (P * rate), span / rate, bytes / bandwidth)
              + calls * call + regions * region + messages * latency + comm_bytes / mpi_bandwidth

with ``rate`` the GEMM rate at the rows a call multiplies (``min(peak, rows * gemv_rate)``: weights read
once, used ``rows`` times). Python's GIL serialises the library calls of threads in one process
(``calls`` are not divided by P there) -- separate processes (MPI) do divide them.

``predict(method, problem, machine)`` -> Cost;  ``advise(problem, machine=None)`` -> ranked
:class:`Advice` (method, seconds, reason). ``advise`` raises ValueError naming the argument for
impossible problems; methods the model mispredicts here by more than 2x (a ``calibration`` from
:func:`course_lib.experiments.which.calibrate`) are listed but not advised.

Counts come from the course where it has them: the wavefront's diagonals and barrier steps
(:func:`course_lib.parallel.inference.work_span` -- recomputed here in closed form, tested equal), the
scan's combines (:func:`course_lib.algorithms.scan.scan_counts` -- closed form here, tested equal), MGRIT's
and DEER's critical paths (the task graphs of :mod:`course_lib.parallel.cluster`, tested equal to
:func:`course_lib.algorithms.mgrit.span_model` and :func:`course_lib.algorithms.newton.span_model`).
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from ..core import backend, timing
from ..core.validate import check_bool, check_choice, check_float, check_int, check_positive_int, check_str
from ..parallel import cluster

__all__ = [
    "KINDS",
    "MODES",
    "METHODS",
    "GPU",
    "Machine",
    "Problem",
    "Cost",
    "Advice",
    "predict",
    "predict_all",
    "advise",
    "first_choice",
    "applicable",
    "wavefront_counts",
    "scan_counts",
    "mgrit_counts",
    "deer_counts",
    "MGRIT_ITERS",
    "DEER_ITERS",
    "CONFIG_NAMES",
    "Row",
    "Calibration",
    "calibrate",
    "seed_schedules",
    "measured_speedups",
    "SEED_SCHEDULES",
    "ranking_and_maps",
]

KINDS = ("rnn", "lstm", "gru", "linear")
MODES = ("inference", "training")
METHODS = ("serial", "batched", "threads", "wavefront", "mpi", "scan", "channels", "mgrit", "deer", "quasi_deer",
           "gpu_scan", "gpu_batched")
GATES = {"rnn": 1, "gru": 3, "lstm": 4, "linear": 0}
# library calls per cell (one layer, one step) in the course's numpy code: GEMVs/GEMMs, adds, activations, stores
CALLS_PER_CELL = {"rnn": 5, "gru": 20, "lstm": 18, "linear": 0}
CALLS_OUTPUT = 7          # softmax output per step: product, bias, max, subtract, exp, sum, divide
TRAIN_FACTOR = 3.0        # backward ~ 2x forward flops and calls
MGRIT_ITERS = 2           # the seed's and chapter 10's setting (iterations are a property of the dynamics)
DEER_ITERS = {"deer": 6, "quasi_deer": 20}
ITEMSIZE = 4              # float32


# =========================================================================== the machine
def _check_rates(obj, rates=(), times=()) -> None:
    """Positive finite rates (they divide) and non-negative finite times, each named by its field."""
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
        _check_rates(self, ("bandwidth_gbs", "gflops", "transfer_gbs"), ("launch_s", "step_latency_s"))

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

    def __post_init__(self):
        check_str(self.name, "name")
        check_positive_int(self.cores, "cores", high=1 << 24)
        check_positive_int(self.simd_lanes, "simd_lanes", high=1 << 12)
        _check_rates(self, ("gemm_gflops_core", "gemm_gflops_all", "gemv_gflops", "bandwidth_core_gbs",
                            "bandwidth_all_gbs", "mpi_bandwidth_gbs"),
                     ("call_s", "handoff_s", "region_s", "step_latency_s", "mpi_latency_s"))
        if self.gpu is not None and not isinstance(self.gpu, GPU):
            raise TypeError(f"gpu: expected a GPU or None, got {type(self.gpu).__name__}")
        if not isinstance(self.source, dict):
            raise TypeError(f"source: expected a dict quantity -> label, got {type(self.source).__name__}")

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
        return replace(self, name=f"{self.name}, {P} virtual cores", cores=P,
                       gemm_gflops_all=self.gemm_gflops_core * P * eff,
                       bandwidth_all_gbs=self.bandwidth_all_gbs * P / self.cores, source=src)

    def with_gpu(self, gpu: GPU | None) -> "Machine":
        if gpu is not None and not isinstance(gpu, GPU):
            raise TypeError(f"gpu: expected a GPU or None, got {type(gpu).__name__}")
        src = dict(self.source)
        src["gpu"] = gpu.source if gpu else "none"
        return replace(self, gpu=gpu, source=src)

    # ---------------------------------------------------------------- rates
    def gemm_rate(self, rows: float, threads: int = 1) -> float:
        """FLOP/s of products whose weights are used by ``rows`` rows, on ``threads`` cores:
        ``min(peak, rows * gemv rate)`` (weights read once, used ``rows`` times)."""
        rows = check_float(rows, "rows", low=0.0)
        threads = check_positive_int(threads, "threads")
        per_core = min(self.gemm_gflops_core, max(1.0, rows) * self.gemv_gflops)
        if threads > 1:
            return 1e9 * min(per_core * threads, self.gemm_gflops_all * per_core / self.gemm_gflops_core)
        return 1e9 * per_core

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
                ("MPI latency", f"{self.mpi_latency_s * 1e6:.1f} µs", ""),
                ("MPI bandwidth", f"{self.mpi_bandwidth_gbs:.1f} GB/s", ""),
                ("GPU", self.gpu.name if self.gpu else "none", "")]
        keys = ["cores", "simd_lanes", "gemm_gflops_core", "gemm_gflops_all", "gemv_gflops", "bandwidth_core_gbs",
                "bandwidth_all_gbs", "call_s", "handoff_s", "region_s", "step_latency_s", "mpi_latency_s",
                "mpi_bandwidth_gbs", "gpu"]
        return [(q, v, self.source.get(k, self.source.get("*", ""))) for (q, v, _), k in zip(rows, keys)]

    def __str__(self) -> str:
        w = max(len(r[0]) for r in self.table())
        return "\n".join(f"{q:<{w}}  {v:>16}  {s}" for q, v, s in self.table())


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


def _blas(n):
    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    return threadpool_limits(limits=n, user_api="blas")


def _gemm_peak(n: int, threads: int, repeat: int) -> float:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    out = np.empty((n, n), np.float32)
    with _blas(threads):
        t = timing.measure(np.matmul, a, b, out=out, repeat=repeat, warmup=1, number=1)
    return timing.gemm_flops(n, n, n) / t.min / 1e9


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
    from numba import njit, prange  # noqa: PLC0415

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


@lru_cache(maxsize=None)
def _measure(quick: bool) -> Machine:
    cores = backend.cpu_count()
    n, rep, mb = (256, 3, 32) if quick else (768, 5, 128)
    src = {}
    g1 = _gemm_peak(n, 1, rep)
    gall = _gemm_peak(n, cores, rep) if cores > 1 else g1
    with _blas(1):
        gemv = timing.gemv_rate(256, 256, repeat=rep)["gflops"]
    bw1 = timing.copy_bandwidth(mbytes=mb, repeat=rep)
    bwall = _parallel_copy_bandwidth(mb, cores, rep) if cores > 1 else bw1
    x, y = np.ones(8, np.float32), np.ones(8, np.float32)
    call = timing.measure(np.add, x, y, repeat=rep, min_time=2e-3).min
    probe = timing.measure(np.add, x, y, repeat=max(rep, 5), min_time=2e-2)
    with ThreadPoolExecutor(cores) as pool:
        handoff = timing.measure(lambda: list(pool.map(int, range(cores))), repeat=rep, min_time=2e-3).min
    chain, region = _numba_kernels()
    Tn = 20_000 if quick else 200_000
    a = np.full(Tn, 0.5, np.float32)
    xs = np.ones(Tn, np.float32)
    step = timing.measure(chain, a, xs, repeat=rep, warmup=1).min / Tn
    buf = np.zeros(max(2, cores), np.float64)
    t_region = timing.measure(region, buf, repeat=rep, warmup=1, min_time=2e-3)
    region_s = t_region.min
    noise = (probe.noise | t_region.noise).add(region_s > 1e-3, "a numba parallel region took over 1 ms: "
                                                 "its threads waited for cores other processes held")
    for k in ("cores", "simd_lanes", "gemm_gflops_core", "gemm_gflops_all", "gemv_gflops", "bandwidth_core_gbs",
              "bandwidth_all_gbs", "call_s", "handoff_s", "region_s", "step_latency_s"):
        src[k] = "measured" + (" (quick)" if quick else "")
    src["cores"] = "measured (CPU affinity)"
    src["simd_lanes"] = "from /proc/cpuinfo flags"
    src["mpi_latency_s"] = src["mpi_bandwidth_gbs"] = "assumed: shared-memory MPI on one node (not measured here)"
    gpu = None
    if backend.gpu_available():
        gpu = GPU.assumed(backend._detect_gpu()[1])
    src["gpu"] = gpu.source if gpu else f"none ({backend.cuda_mode()})"
    return Machine(f"this machine ({backend.cpu_model()})", cores, _simd_lanes(), g1, max(g1, gall), gemv, bw1,
                   max(bw1, bwall), call, handoff, region_s, step, gpu=gpu, source=src, noise=noise)


# =========================================================================== the problem
@dataclass(frozen=True)
class Problem:
    """What is to be computed: a ``kind`` of recurrent model in a ``mode``, ``B`` sequences of ``T``
    steps, ``H`` hidden units, ``layers`` stacked layers, ``nx`` inputs (default H), ``ny`` outputs per
    step (0: none). ``linear`` is the element-wise recurrence ``h_t = a_t * h_{t-1} + x_t`` of chapter 08
    (``B * H`` independent channels)."""

    kind: str = "rnn"
    mode: str = "inference"
    B: int = 1
    T: int = 100
    H: int = 128
    layers: int = 1
    nx: int | None = None
    ny: int = 0

    def __post_init__(self):
        check_choice(self.kind, "kind", KINDS)
        check_choice(self.mode, "mode", MODES)
        for name in ("B", "T", "H", "layers"):
            check_positive_int(getattr(self, name), name, high=1 << 30)
        if self.nx is not None:
            check_positive_int(self.nx, "nx", high=1 << 30)
        check_int(self.ny, "ny", low=0, high=1 << 30)
        if self.kind == "linear" and self.layers != 1:
            raise ValueError(f"layers: a linear recurrence (kind='linear') is one element-wise layer, got {self.layers}")

    @property
    def n_in(self) -> int:
        return self.H if self.nx is None else self.nx

    @property
    def training(self) -> bool:
        return self.mode == "training"

    def cell_flops(self, rows: int = 1) -> float:
        """Flops of one cell (one layer, one step) for ``rows`` sequences, forward."""
        rows = check_float(rows, "rows", low=0.0)
        if self.kind == "linear":
            return 2.0 * rows * self.H
        g = GATES[self.kind]
        return rows * (2.0 * g * self.H * (self.n_in + self.H) + 10.0 * g * self.H)

    def output_flops(self, rows: int = 1) -> float:
        rows = check_float(rows, "rows", low=0.0)
        return rows * (2.0 * self.H * self.ny + 5.0 * self.ny) if self.ny else 0.0

    def param_bytes(self) -> float:
        if self.kind == "linear":
            return 0.0
        g = GATES[self.kind]
        return ITEMSIZE * self.layers * g * self.H * (self.n_in + self.H + 1) + ITEMSIZE * self.ny * (self.H + 1)

    def flops(self) -> float:
        f = self.T * (self.layers * self.cell_flops(self.B) + self.output_flops(self.B))
        return f * (TRAIN_FACTOR if self.training else 1.0)

    def describe(self) -> str:
        return (f"{self.kind} {self.mode}, B={self.B}, T={self.T}, H={self.H}, layers={self.layers}"
                + (f", ny={self.ny}" if self.ny else ""))


# =========================================================================== costs
@dataclass
class Cost:
    """The model's account of one method (see the module docstring). ``parts`` splits ``seconds``."""

    method: str
    problem: Problem
    P: int
    work: float = 0.0
    span: float = 0.0
    bytes: float = 0.0
    calls: float = 0.0
    regions: float = 0.0
    messages: float = 0.0
    comm_bytes: float = 0.0
    counts: dict = field(default_factory=dict)
    parts: dict = field(default_factory=dict)
    seconds: float = 0.0
    note: str = ""

    def __post_init__(self):
        check_str(self.method, "method")
        if not isinstance(self.problem, Problem):
            raise TypeError(f"problem: expected a Problem, got {type(self.problem).__name__}")
        check_positive_int(self.P, "P")

    @property
    def bottleneck(self) -> str:
        return max(self.parts, key=self.parts.get) if self.parts else ""


def _finish(c: Cost, m: Machine, *, rate: float, bw: float, call_s: float | None = None, region_s: float | None = None,
            gil: bool = True, latency: float | None = None, comm_bw: float | None = None) -> Cost:
    compute = max(c.work / (c.P * rate), c.span / rate) if rate > 0 else 0.0
    memory = c.bytes / bw if bw > 0 else 0.0
    calls = c.calls * (m.call_s if call_s is None else call_s) / (1 if gil else c.P)
    regions = c.regions * (m.region_s if region_s is None else region_s)
    comm = c.messages * (m.mpi_latency_s if latency is None else latency) + \
        c.comm_bytes / (1e9 * (m.mpi_bandwidth_gbs if comm_bw is None else comm_bw))
    c.parts = {"compute": compute, "memory": memory, "calls": calls, "sync": regions, "communication": comm}
    c.seconds = max(compute, memory) + calls + regions + comm
    return c


def _train(p: Problem) -> float:
    return TRAIN_FACTOR if p.training else 1.0


def _calls_per_step(p: Problem) -> float:
    return p.layers * CALLS_PER_CELL[p.kind] + (CALLS_OUTPUT if p.ny else 0)


def _need_nonlinear(p: Problem, method: str):
    if p.kind == "linear":
        raise ValueError(f"kind: {method} solves nonlinear recurrences; a linear recurrence (kind='linear') is "
                         f"solved exactly by a scan -- use method 'scan'")


def _step_cost(p: Problem, m: Machine, rows: int, threads: int = 1) -> tuple[float, float, float]:
    """(flops, bytes, calls) of one time step of all layers for ``rows`` sequences."""
    f = p.layers * p.cell_flops(rows) + p.output_flops(rows)
    elem = 3 * ITEMSIZE * rows * max(1, GATES[p.kind]) * p.H * p.layers * 4  # element-wise passes
    return f * _train(p), elem * _train(p), _calls_per_step(p) * _train(p)


def cost_serial(p: Problem, m: Machine) -> Cost:
    """One sequence, one step, one layer at a time: matrix-*vector* products (GEMV), B T layers cells;
    a linear recurrence is the compiled loop over time (one dependent step per time step)."""
    c = Cost("serial", p, 1)
    if p.kind == "linear":
        n = p.B * p.H
        c.work = c.span = 2.0 * p.T * n * _train(p)
        c.bytes = 3 * ITEMSIZE * p.T * n * _train(p)
        c.calls = 1
        c.counts = {"steps": p.T}
        lat = p.T * m.step_latency_s * max(1.0, n / m.simd_lanes / 4) * _train(p)  # 4: pipelined lanes
        _finish(c, m, rate=0.0, bw=m.bandwidth(1))
        c.parts["compute"] = lat
        c.seconds = max(lat, c.parts["memory"]) + c.parts["calls"]
        return c
    f, b, k = _step_cost(p, m, 1)
    c.work = c.span = p.B * p.T * f
    c.bytes = p.B * p.T * b
    c.calls = p.B * p.T * k
    c.counts = {"cells": p.B * p.T * p.layers}
    return _finish(c, m, rate=m.gemm_rate(1), bw=m.bandwidth(1))


def cost_batched(p: Problem, m: Machine) -> Cost:
    """All B sequences together: per step and layer one GEMM of B rows (chapter 03)."""
    if p.kind == "linear":
        c = cost_serial(p, m)
        c.method = "batched"
        return c
    c = Cost("batched", p, 1)
    f, b, k = _step_cost(p, m, p.B)
    c.work = c.span = p.T * f
    c.bytes = p.T * b
    c.calls = p.T * k
    c.counts = {"steps": p.T * p.layers}
    return _finish(c, m, rate=m.gemm_rate(p.B), bw=m.bandwidth(1))


def cost_threads(p: Problem, m: Machine, P: int | None = None) -> Cost:
    """The batch split over ``P`` threads of one process, each running the batched pass on its share;
    the library calls hold the GIL, so they add up over threads; one hand-off to the pool."""
    P = min(m.cores if P is None else check_positive_int(P, "P"), p.B)
    if p.B < 2:
        raise ValueError("B: splitting the batch over threads needs B >= 2 sequences")
    c = Cost("threads", p, P)
    share = math.ceil(p.B / P)
    f, b, k = _step_cost(p, m, share)
    c.work = p.T * f * P
    c.span = p.T * f
    c.bytes = p.T * b * P
    c.calls = p.T * k * P
    c.regions = 1
    c.counts = {"share": share}
    return _finish(c, m, rate=m.gemm_rate(share), bw=m.bandwidth(P), region_s=m.handoff_s)


def wavefront_counts(T: int, L: int, P: int) -> dict:
    """Cells, diagonals (span) and barrier steps ``sum_d ceil(|D_d| / P)`` of the layer wavefront, in closed form."""
    T, L, P = check_positive_int(T, "T"), check_positive_int(L, "L"), check_positive_int(P, "P")
    steps = sum(math.ceil(min(d + 1, L, T, T + L - 1 - d) / P) for d in range(T + L - 1))
    return {"work": T * L, "span": T + L - 1, "steps": steps}


def cost_wavefront(p: Problem, m: Machine, P: int | None = None) -> Cost:
    """Cells (l, t) on one anti-diagonal run on ``P`` threads, a barrier (pool hand-off) per diagonal."""
    if p.layers < 2:
        raise ValueError(f"layers: the layer wavefront needs >= 2 layers (a diagonal holds at most `layers` "
                         f"cells), got {p.layers}")
    if p.kind == "linear":
        raise ValueError("kind: a linear recurrence has one layer; the wavefront is for stacked layers")
    P = min(m.cores if P is None else check_positive_int(P, "P"), p.layers)
    wc = wavefront_counts(p.T, p.layers, P)
    c = Cost("wavefront", p, P)
    cell = p.cell_flops(p.B) * _train(p)
    c.work = wc["work"] * cell + p.T * p.output_flops(p.B)
    c.span = wc["steps"] * cell + p.T * p.output_flops(p.B)
    c.bytes = wc["work"] * 3 * ITEMSIZE * p.B * max(1, GATES[p.kind]) * p.H * 4 * _train(p)
    c.calls = (wc["work"] * CALLS_PER_CELL[p.kind] + (CALLS_OUTPUT if p.ny else 0)) * _train(p)
    c.regions = wc["span"] * _train(p)
    c.counts = wc
    return _finish(c, m, rate=m.gemm_rate(p.B), bw=m.bandwidth(P), region_s=m.handoff_s)


def cost_mpi(p: Problem, m: Machine, P: int | None = None) -> Cost:
    """The batch split over ``P`` ranks (separate processes: their calls run in parallel). Inference:
    scatter inputs, gather outputs. Training: per step an allreduce of the gradients."""
    P = min(m.cores if P is None else check_positive_int(P, "P"), p.B)
    if p.B < 2:
        raise ValueError("B: splitting the batch over MPI ranks needs B >= 2 sequences")
    c = Cost("mpi", p, P)
    share = math.ceil(p.B / P)
    f, b, k = _step_cost(p, m, share)
    c.work, c.span = p.T * f * P, p.T * f
    c.bytes, c.calls = p.T * b * P, p.T * k * P
    rounds = 2 * math.ceil(math.log2(P)) if P > 1 else 0
    if p.training:
        c.messages = rounds
        c.comm_bytes = 2 * p.param_bytes() * (P - 1) / P
    else:
        c.messages = 2 * (P - 1)
        c.comm_bytes = ITEMSIZE * p.T * p.B * (p.n_in + max(p.ny, p.H)) * (P - 1) / P
    c.counts = {"share": share, "rounds": rounds}
    return _finish(c, m, rate=m.gemm_rate(share), bw=m.bandwidth(P), gil=False)


def scan_counts(method: str, T: int) -> dict:
    """Combines (work) and parallel steps (span) of one scan, closed form: sequential T-1 / T-1;
    Hillis-Steele ``sum_{d < ceil log2 T} (T - 2^d)`` / ``ceil log2 T``; Blelloch ``2(n - 1)`` / ``2 log2 n``
    (n = T padded to a power of two); chunked on P = 2 chunks per thread: see :func:`cost_scan`."""
    check_choice(method, "method", ("sequential", "hillis_steele", "blelloch"))
    T = check_positive_int(T, "T")
    lv = (T - 1).bit_length()
    if method == "sequential":
        return {"work": T - 1, "span": T - 1}
    if method == "hillis_steele":
        return {"work": lv * T - (2 ** lv - 1), "span": lv}
    return {"work": 2 * (2 ** lv - 1), "span": 2 * lv}


def _need_linear(p: Problem, method: str):
    if p.kind != "linear":
        raise ValueError(f"kind: {method} computes linear recurrences (kind='linear'); a {p.kind} is nonlinear -- "
                         f"use 'deer', 'quasi_deer' or 'mgrit' for its time axis")


def cost_scan(p: Problem, m: Machine, P: int | None = None) -> Cost:
    """Chapter 08's chunked scan over time on ``P`` threads: reduce (read a, x) + expand (read a, x,
    write h): 20 bytes per element instead of 12; few channels use SIMD lanes over time."""
    _need_linear(p, "scan")
    P = m.cores if P is None else check_positive_int(P, "P")
    n = p.B * p.H
    c = Cost("scan", p, P)
    tr = _train(p)
    c.work = 4.0 * p.T * n * tr
    c.span = 4.0 * math.ceil(p.T / P) * n * tr
    c.bytes = 5 * ITEMSIZE * p.T * n * tr
    c.calls = 1
    lanes = max(1, m.simd_lanes // max(1, n)) if n * ITEMSIZE <= 16 else 1
    chunk = max(8, (3 << 19) // (2 * n * ITEMSIZE))
    if p.T * n < (1 << 20):  # chapter 08's rule: small problems stay on one thread (lanes only)
        P = c.P = 1
        c.span = c.work
    c.regions = 2 * math.ceil(p.T / (chunk * P)) * tr if P > 1 else 0
    c.counts = {"chunks": P, "lanes": lanes, **scan_counts("sequential", p.T)}
    _finish(c, m, rate=0.0, bw=m.bandwidth(P))
    lat = 2 * math.ceil(p.T / P) * m.step_latency_s * max(1.0, n / m.simd_lanes / 4) / lanes * tr
    c.parts["compute"] = lat
    c.seconds = max(lat, c.parts["memory"]) + c.parts["calls"] + c.parts["sync"]
    return c


def cost_channels(p: Problem, m: Machine, P: int | None = None) -> Cost:
    """Parallel over channel groups: each thread runs the whole time loop on ``B H / P`` channels."""
    _need_linear(p, "channels")
    n = p.B * p.H
    P = min(m.cores if P is None else check_positive_int(P, "P"), n)
    c = Cost("channels", p, P)
    tr = _train(p)
    c.work = 2.0 * p.T * n * tr
    c.span = c.work / P
    c.bytes = 3 * ITEMSIZE * p.T * n * tr
    c.calls, c.regions = 1, tr
    c.counts = {"groups": P}
    _finish(c, m, rate=0.0, bw=m.bandwidth(P))
    lat = p.T * m.step_latency_s * max(1.0, n / P / m.simd_lanes / 4) * tr
    c.parts["compute"] = lat
    c.seconds = max(lat, c.parts["memory"]) + c.parts["calls"] + c.parts["sync"]
    return c


def mgrit_counts(T: int, P: int, *, iters: int = MGRIT_ITERS, m: int = 4, levels: int = 2,
                 relax: str = "FCF") -> dict:
    """Time steps on MGRIT's critical path and in all, from its task graph (:func:`cluster.mgrit_graph`);
    T is padded to a multiple of ``m**(levels-1)`` as :func:`course_lib.models.gru.gru_forward` does."""
    T, P = check_positive_int(T, "T"), check_positive_int(P, "P")
    iters = check_positive_int(iters, "iters")
    m = check_int(m, "m", low=2, high=1 << 16)
    levels = check_int(levels, "levels", low=1, high=64)
    q = m ** (levels - 1)
    Tp = math.ceil(T / q) * q
    g = cluster.mgrit_graph(Tp, m=m, levels=levels, iters=iters, P=P, relax=relax)
    span, _ = g.critical_path()
    return {"span": span, "work": g.work(), "T_padded": Tp, "iters": iters}


def cost_mgrit(p: Problem, m: Machine, P: int | None = None, *, iters: int | None = None,
               levels: int = 2, cf: int = 4) -> Cost:
    """MGRIT over time on ``P`` threads (chapter 10): its steps are batched cells of B rows; the span in
    steps from its task graph; every step's library calls hold the GIL (they add up over threads)."""
    _need_nonlinear(p, "mgrit")
    P = m.cores if P is None else check_positive_int(P, "P")
    iters = MGRIT_ITERS if iters is None else check_positive_int(iters, "iters")
    if p.T < cf:
        raise ValueError(f"T: MGRIT needs at least m = {cf} time steps to coarsen, got {p.T}")
    mc = mgrit_counts(p.T, P, iters=iters, m=cf, levels=levels)
    f, b, k = _step_cost(p, m, p.B)
    c = Cost("mgrit", p, P)
    c.work, c.span = mc["work"] * f, mc["span"] * f
    c.bytes = mc["work"] * b
    c.calls = mc["work"] * (k + 4)  # + the solver's own bookkeeping per step
    c.regions = 6 * iters * (levels - 1) if P > 1 else 0
    c.counts = mc
    return _finish(c, m, rate=m.gemm_rate(p.B), bw=m.bandwidth(P), region_s=m.handoff_s)


def deer_counts(T: int, H: int, P: int, *, iters: int, method: str = "newton") -> dict:
    """Flops of DEER on P processors from its task graph (:func:`cluster.deer_graph`): span and work."""
    T, H, P = check_positive_int(T, "T"), check_positive_int(H, "H"), check_positive_int(P, "P")
    iters = check_positive_int(iters, "iters")
    g = cluster.deer_graph(T, H, iters=iters, P=P, method=method)
    span, _ = g.critical_path()
    return {"span": span, "work": g.work(), "iters": iters}


def cost_deer(p: Problem, m: Machine, P: int | None = None, *, iters: int | None = None,
              method: str = "deer") -> Cost:
    """DEER / quasi-DEER (chapter 11): ``iters`` Newton iterations, each evaluating the cell and its
    Jacobian at every t at once (batched numpy: ~30 calls) and a matrix scan over time (full H x H
    Jacobians for DEER, diagonal for quasi-DEER): flops from the task graph, memory for the Jacobians."""
    _need_nonlinear(p, method)
    P = m.cores if P is None else check_positive_int(P, "P")
    key = "quasi" if method == "quasi_deer" else "newton"
    iters = DEER_ITERS[method] if iters is None else check_positive_int(iters, "iters")
    dc = deer_counts(p.T, p.H, P, iters=iters, method=key)
    c = Cost(method, p, P)
    rows = p.B * p.layers * _train(p)
    c.work, c.span = dc["work"] * rows, dc["span"] * rows
    jac = p.H * p.H if key == "newton" else p.H
    c.bytes = iters * rows * p.T * (jac * 8 * 6 + p.H * 8 * 20)  # Jacobians written, scanned, read; float64
    c.calls = iters * (40 + (4 * math.ceil(math.log2(max(2, p.T))) if key == "newton" else 6)) * p.layers * _train(p)
    c.regions = iters * 3 if P > 1 else 0
    c.counts = dc
    rate = m.gemm_rate(min(p.H, 16) if key == "newton" else 1)
    return _finish(c, m, rate=rate / 2, bw=m.bandwidth(P))  # / 2: float64


def cost_gpu_scan(p: Problem, m: Machine) -> Cost:
    """Chapter 08's reduce / scan / expand kernels on the machine's GPU (3 launches; 20 bytes/element,
    inputs and outputs copied over the bus)."""
    _need_linear(p, "gpu_scan")
    if m.gpu is None:
        raise ValueError("machine: gpu_scan needs a machine with a GPU (Machine.with_gpu)")
    g = m.gpu
    n = p.B * p.H
    c = Cost("gpu_scan", p, 1)
    tr = _train(p)
    c.bytes = 5 * ITEMSIZE * p.T * n * tr
    c.calls = 3 * tr
    c.comm_bytes = 3 * ITEMSIZE * p.T * n
    c.counts = {"launches": 3 * tr}
    c.parts = {"compute": 0.0, "memory": c.bytes / (1e9 * g.bandwidth_gbs), "calls": c.calls * g.launch_s,
               "sync": 0.0, "communication": c.comm_bytes / (1e9 * g.transfer_gbs)}
    c.seconds = sum(c.parts.values())
    return c


def cost_gpu_batched(p: Problem, m: Machine) -> Cost:
    """One kernel per step and layer on the GPU (B x H threads, serial over time): T layers launches;
    a linear recurrence is one kernel looping over time (seed 001's serial kernel)."""
    if m.gpu is None:
        raise ValueError("machine: gpu_batched needs a machine with a GPU (Machine.with_gpu)")
    g = m.gpu
    c = Cost("gpu_batched", p, 1)
    tr = _train(p)
    if p.kind == "linear":
        n = p.B * p.H
        c.bytes = 3 * ITEMSIZE * p.T * n * tr
        c.calls = tr
        c.comm_bytes = 3 * ITEMSIZE * p.T * n
        lat = p.T * g.step_latency_s * tr
        c.parts = {"compute": lat, "memory": c.bytes / (1e9 * g.bandwidth_gbs), "calls": c.calls * g.launch_s,
                   "sync": 0.0, "communication": c.comm_bytes / (1e9 * g.transfer_gbs)}
        c.seconds = max(lat, c.parts["memory"]) + c.parts["calls"] + c.parts["communication"]
        return c
    f, b, _ = _step_cost(p, m, p.B)
    c.work = c.span = p.T * f
    c.bytes = p.T * (b + p.param_bytes())
    c.calls = p.T * (p.layers + (1 if p.ny else 0)) * tr
    c.comm_bytes = ITEMSIZE * p.T * p.B * (p.n_in + max(p.ny, p.H))
    rate = 1e9 * min(g.gflops, p.B * 2.0 * g.bandwidth_gbs / ITEMSIZE)
    c.parts = {"compute": c.work / rate, "memory": c.bytes / (1e9 * g.bandwidth_gbs),
               "calls": c.calls * g.launch_s, "sync": 0.0, "communication": c.comm_bytes / (1e9 * g.transfer_gbs)}
    c.seconds = max(c.parts["compute"], c.parts["memory"]) + c.parts["calls"] + c.parts["communication"]
    return c


_COSTS = {"serial": cost_serial, "batched": cost_batched, "threads": cost_threads, "wavefront": cost_wavefront,
          "mpi": cost_mpi, "scan": cost_scan, "channels": cost_channels, "mgrit": cost_mgrit,
          "deer": lambda p, m, **o: cost_deer(p, m, method="deer", **o),
          "quasi_deer": lambda p, m, **o: cost_deer(p, m, method="quasi_deer", **o),
          "gpu_scan": cost_gpu_scan, "gpu_batched": cost_gpu_batched}


def predict(method: str, problem: Problem, machine: Machine | None = None, **opts) -> Cost:
    """The :class:`Cost` of ``method`` on ``problem`` on ``machine`` (default: this one, measured).
    Options: ``P=`` (workers) for parallel methods, ``iters=`` for mgrit/deer/quasi_deer. Raises
    ValueError naming the argument when the method cannot apply to the problem."""
    check_choice(method, "method", METHODS)
    if not isinstance(problem, Problem):
        raise TypeError(f"problem: expected a Problem, got {type(problem).__name__}")
    machine = Machine.measure() if machine is None else machine
    if not isinstance(machine, Machine):
        raise TypeError(f"machine: expected a Machine, got {type(machine).__name__}")
    return _COSTS[method](problem, machine, **opts)


def applicable(problem: Problem, machine: Machine) -> dict:
    """``{method: None or the reason it does not apply}`` for every method."""
    _check_problem_machine(problem, machine)
    out = {}
    for meth in METHODS:
        try:
            _COSTS[meth](problem, machine)
            out[meth] = None
        except ValueError as exc:
            out[meth] = str(exc)
    return out


def _check_problem_machine(problem, machine) -> None:
    if not isinstance(problem, Problem):
        raise TypeError(f"problem: expected a Problem, got {type(problem).__name__}")
    if not isinstance(machine, Machine):
        raise TypeError(f"machine: expected a Machine, got {type(machine).__name__}")


def predict_all(problem: Problem, machine: Machine | None = None, methods=None, **opts) -> dict:
    """``{method: Cost}`` for every method that applies (or those in ``methods``, which must all apply)."""
    machine = Machine.measure() if machine is None else machine
    if methods is None:
        ok = [k for k, v in applicable(problem, machine).items() if v is None]
    else:
        ok = [check_choice(k, "methods", METHODS) for k in methods]
    return {k: predict(k, problem, machine, **opts.get(k, {})) for k in ok}


# =========================================================================== the advisor
@dataclass
class Advice:
    method: str
    seconds: float
    reason: str
    trusted: bool = True
    cost: Cost | None = None

    def __post_init__(self):
        check_str(self.method, "method")
        if isinstance(self.seconds, (bool, np.bool_)) or not isinstance(self.seconds, (int, float, np.floating, np.integer)) \
                or not self.seconds >= 0:  # inf is allowed (never finishes), NaN and negatives are not
            raise ValueError(f"seconds: expected a number >= 0, got {self.seconds!r}")
        check_str(self.reason, "reason", nonempty=False)
        check_bool(self.trusted, "trusted")
        if self.cost is not None and not isinstance(self.cost, Cost):
            raise TypeError(f"cost: expected a Cost or None, got {type(self.cost).__name__}")

    def __iter__(self):  # (method, seconds, reason)
        return iter((self.method, self.seconds, self.reason))


def _reason(c: Cost, base: Cost | None) -> str:
    parts = {k: v for k, v in c.parts.items() if v > 0}
    tot = sum(parts.values()) or 1.0
    lead = max(parts, key=parts.get) if parts else "compute"
    what = {"compute": "arithmetic", "memory": "memory traffic", "calls": "library-call overhead",
            "sync": "barriers / fork-joins", "communication": "communication"}[lead]
    s = f"{what} dominates ({parts.get(lead, 0) / tot:.0%})"
    if c.P > 1:
        s += f"; {c.P} workers"
    if base is not None and base.method != c.method and c.seconds > 0:
        s += f"; {base.seconds / c.seconds:.2g}x vs serial"
    return s


def advise(problem: Problem, machine: Machine | None = None, *, methods=None, calibration: dict | None = None,
           opts: dict | None = None) -> list[Advice]:
    """Rank the methods that apply to ``problem`` on ``machine`` by predicted time.

    ``methods`` restricts the choice (each must apply, else ValueError naming the argument);
    ``calibration`` maps method -> the model's worst error factor measured here (``which.calibrate``):
    a method off by more than 2x -- or, when a calibration is given, a method it never measured -- is
    listed after the trusted ones, with ``trusted=False``: the advisor does not advise there. ``opts``: per-method options (``{"mgrit": {"iters": 3}}``).
    Raises ValueError for impossible problems (through :class:`Problem`) and for methods that cannot apply."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem: expected a Problem, got {type(problem).__name__}")
    machine = Machine.measure() if machine is None else machine
    costs = predict_all(problem, machine, methods, **(opts or {}))
    if not costs:
        raise ValueError(f"problem: no method applies to {problem.describe()}")
    base = costs.get("serial")
    out = []
    for k, c in costs.items():
        err = (calibration or {}).get(k)
        unchecked = calibration is not None and err is None
        trusted = not unchecked and (err is None or err <= 2.0)
        r = _reason(c, base)
        if unchecked:
            r += "; NOT ADVISED: never checked against a measurement on this machine"
        elif not trusted:
            r += f"; NOT ADVISED: the model was off by {err:.1f}x on this machine"
        out.append(Advice(k, c.seconds, r, trusted, c))
    out.sort(key=lambda a: (not a.trusted, a.seconds))
    return out


def first_choice(advice: list[Advice]) -> str:
    """The first method of :func:`advise`'s ranking."""
    if not isinstance(advice, (list, tuple)) or not advice:
        raise ValueError(f"advice: expected the non-empty list advise() returns, got {advice!r:.80}")
    if not isinstance(advice[0], Advice):
        raise TypeError(f"advice: expected a list of Advice, got a list of {type(advice[0]).__name__}")
    return advice[0].method


# =========================================================================== predicted vs measured
# One function per chapter: it builds that chapter's benchmark configuration at a small size, with the
# course's own code, and returns zero-argument callables to time plus the model's name for each. These
# are the only places this module calls other chapters' code -- fix them here if an API moves.
CONFIG_NAMES = ("03 batching", "05 threads", "07 inference", "08 scan (H=1)", "08 scan (H=128)", "10 MGRIT",
                "11 DEER")


def _config_03(small: bool):
    from ..experiments.batching import forward_one_at_a_time  # noqa: PLC0415
    from ..models import rnn  # noqa: PLC0415

    B, T, H = (16, 10, 128) if small else (32, 10, 256)
    p = rnn.init_params(H, H, H, seed=0)
    X = np.random.default_rng(0).standard_normal((T, B, H)).astype(np.float32)
    prob = Problem("rnn", "inference", B=B, T=T, H=H, layers=1, ny=H)
    return prob, {"serial": ("serial", {}, lambda: forward_one_at_a_time(p, X)),
                  "batched": ("batched", {}, lambda: rnn.forward(p, X))}, 1, {}


def _config_05(small: bool):
    from ..models import rnn  # noqa: PLC0415

    B, T, H = (128, 4, 512) if small else (256, 10, 1000)
    p = rnn.init_params(H, H, H, seed=0)
    X = np.random.default_rng(0).standard_normal((T, B, H)).astype(np.float32)
    P = backend.cpu_count()

    def on(n):
        def run():
            with _blas(n):
                rnn.forward(p, X)
        return run
    prob = Problem("rnn", "inference", B=B, T=T, H=H, layers=1, ny=H)
    return prob, {"batched": ("batched", {}, on(1)), f"threads ({P})": ("threads", {"P": P}, on(P))}, None, {}


def _config_07(small: bool):
    from ..parallel import inference  # noqa: PLC0415
    from ..models.softmax_rnn import init_params  # noqa: PLC0415

    B, T, H, L = (32, 16, 64, 4) if small else (64, 32, 64, 4)
    P = backend.cpu_count()
    params = init_params(32, H, 32, layers=L, seed=0)
    X = np.random.default_rng(1).standard_normal((T, B, 32)).astype(np.float32)
    prob = Problem("rnn", "inference", B=B, T=T, H=H, layers=L, nx=32, ny=32)
    run = {m: (lambda m=m: inference.predict(params, X, method=m, **({"threads": P} if m in ("threads", "wavefront")
                                                                        else {})))
           for m in ("serial", "batched", "threads", "wavefront")}
    return prob, {m: (m, {"P": P} if m in ("threads", "wavefront") else {}, f) for m, f in run.items()}, 1, {}


def _config_08(small: bool, H: int):
    from ..algorithms import scan  # noqa: PLC0415

    T = (1 << 18 if small else 1 << 20) // max(1, H // 8)
    a, x, h0 = scan.random_problem(T, H, seed=0)
    out = np.empty_like(a)
    P = backend.max_threads()  # numba threads the chunked and channels scans can use here
    prob = Problem("linear", "inference", B=1, T=T, H=H)
    return prob, {"sequential": ("serial", {}, lambda: scan.linear_recurrence(a, x, h0, out=out)),
                  "chunked": ("scan", {"P": P}, lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=out)),
                  "channels": ("channels", {"P": P},
                               lambda: scan.linear_recurrence(a, x, h0, method="channels", out=out))}, None, {}


def _config_10(small: bool):
    from ..models import gru  # noqa: PLC0415

    B, T, H = (16, 256, 32) if small else (16, 1024, 32)
    P = backend.cpu_count()
    p = gru.init_params(8, H, seed=0)
    X = np.random.default_rng(0).standard_normal((T, B, 8)).astype(np.float32)
    opts = dict(m=4, levels=2, relax="FCF", max_iter=30, tol=1e-5)
    _, hist = gru.gru_forward(p, X, implicit=True, method="mgrit", return_history=True, **opts)
    iters = max(1, len(hist))
    prob = Problem("gru", "inference", B=B, T=T, H=H, nx=8)
    return prob, {"serial GRU": ("batched", {}, lambda: gru.gru_forward(p, X, implicit=True)),
                  "mgrit (1 thread)": ("mgrit", {"P": 1, "iters": iters},
                                       lambda: gru.gru_forward(p, X, implicit=True, method="mgrit", **opts)),
                  f"mgrit ({P} threads)": ("mgrit", {"P": P, "iters": iters},
                                           lambda: gru.gru_forward(p, X, implicit=True, method="mgrit", threads=P,
                                                                   **opts))}, 1, {"iterations": iters}


def _config_11(small: bool):
    from ..models import gru  # noqa: PLC0415
    from ..parallel import deer  # noqa: PLC0415

    B, T, H = (4, 512, 8) if small else (4, 1024, 8)
    p = gru.init_params(3, H, seed=0, dtype=np.float64)
    X = np.random.default_rng(1).standard_normal((T, B, 3))
    its = {}
    for m in ("newton", "quasi"):
        _, hist = deer.gru_forward(p, X, method=m, tol=1e-8, return_history=True)
        its[m] = max(1, len(hist) - 1)
    prob = Problem("gru", "inference", B=B, T=T, H=H, nx=3)
    return prob, {"serial GRU": ("batched", {}, lambda: gru.gru_forward(p, X)),
                  "deer": ("deer", {"iters": its["newton"], "P": 1},
                           lambda: deer.gru_forward(p, X, method="newton", tol=1e-8)),
                  "quasi_deer": ("quasi_deer", {"iters": its["quasi"], "P": 1},
                                 lambda: deer.gru_forward(p, X, method="quasi", tol=1e-8))}, 1, \
        {"iterations": its}


_CONFIGS = {"03 batching": _config_03, "05 threads": _config_05, "07 inference": _config_07,
            "08 scan (H=1)": lambda s: _config_08(s, 1), "08 scan (H=128)": lambda s: _config_08(s, 128),
            "10 MGRIT": _config_10, "11 DEER": _config_11}


@dataclass
class Row:
    """One line of the predicted-vs-measured table."""

    config: str
    label: str
    method: str
    predicted: float
    measured: float
    problem: Problem

    def __post_init__(self):
        for k in ("config", "label", "method"):
            check_str(getattr(self, k), k)
        _check_rates(self, ("predicted", "measured"))  # their ratio is the error
        if not isinstance(self.problem, Problem):
            raise TypeError(f"problem: expected a Problem, got {type(self.problem).__name__}")

    @property
    def error(self) -> float:
        """max(pred/meas, meas/pred): 1 is perfect; > 2 means the model is off by more than 2x."""
        return max(self.predicted / self.measured, self.measured / self.predicted)

    @property
    def off(self) -> bool:
        return self.error > 2.0


@dataclass
class Calibration:
    """The predicted-vs-measured table on this machine, per configuration, with the noise of each run."""

    machine: Machine
    rows: list
    noise: dict
    info: dict

    def __post_init__(self):
        if not isinstance(self.machine, Machine):
            raise TypeError(f"machine: expected a Machine, got {type(self.machine).__name__}")
        if not isinstance(self.rows, list) or not all(isinstance(r, Row) for r in self.rows):
            raise TypeError("rows: expected a list of Row")
        for k in ("noise", "info"):
            if not isinstance(getattr(self, k), dict):
                raise TypeError(f"{k}: expected a dict, got {type(getattr(self, k)).__name__}")

    def _rows(self, config) -> list:
        check_choice(config, "config", self.configs())
        return [r for r in self.rows if r.config == config]

    def configs(self) -> list[str]:
        return list(dict.fromkeys(r.config for r in self.rows))

    def errors(self) -> dict:
        """``{model method: worst error factor}`` -- what :func:`advise` takes as ``calibration``."""
        out: dict = {}
        for r in self.rows:
            out[r.method] = max(out.get(r.method, 0.0), r.error)
        return out

    def measured_fastest(self, config: str) -> str:
        rows = self._rows(config)
        return min(rows, key=lambda r: r.measured).label

    def predicted_fastest(self, config: str) -> str:
        rows = self._rows(config)
        return min(rows, key=lambda r: r.predicted).label

    def advised(self, config: str) -> str:
        """The advisor's first choice among this configuration's methods (off-by->2x methods not advised)."""
        rows = self._rows(config)
        err = {r.label: r.error for r in rows}
        trusted = [r for r in rows if err[r.label] <= 2.0] or rows
        return min(trusted, key=lambda r: r.predicted).label

    def explain(self, config: str) -> str:
        """Whether the advisor's first choice is the measured fastest here, and if not why (computed)."""
        rows = {r.label: r for r in self.rows if r.config == config}
        adv, fast = self.advised(config), self.measured_fastest(config)
        noise = self.noise[config]
        if not noise.ok:
            return f"{config}: no conclusion -- {'; '.join(noise.reasons)}"
        if adv == fast:
            return f"{config}: the advisor's first choice, {adv}, is the measured fastest."
        a, f = rows[adv], rows[fast]
        close = a.measured / f.measured
        if close < 1.1:
            why = f"they were within {close:.2f}x of each other, closer than the model can tell apart"
        elif f.off:
            why = (f"the model is off by {f.error:.1f}x for {fast} ({f.method}), so it is not advised there; its "
                   f"largest part was {predict(f.method, f.problem, self.machine, **self.info['opts'][config][fast]).bottleneck}")
        elif a.off:
            why = f"the model is off by {a.error:.1f}x for {adv}, whose predicted time was too small"
        else:
            why = (f"both within 2x, but the predicted ratio {a.predicted / f.predicted:.2f} and the measured "
                   f"{close:.2f} fall on opposite sides of 1")
        return f"{config}: the advisor picks {adv}, the measured fastest is {fast} -- {why}."

    def table(self) -> str:
        w = max(len(r.config) for r in self.rows)
        lw = max(len(r.label) for r in self.rows)
        lines = [f"{'configuration':<{w}}  {'method':<{lw}}  {'predicted':>10}  {'measured':>10}  {'error':>6}"]
        for r in self.rows:
            mark = "  OFF >2x: not advised" if r.off else ""
            lines.append(f"{r.config:<{w}}  {r.label:<{lw}}  {timing._fmt_seconds(r.predicted):>10}  "
                         f"{timing._fmt_seconds(r.measured):>10}  {r.error:>5.2f}x{mark}")
        bad = [c for c, n in self.noise.items() if not n.ok]
        if bad:
            lines.append("unreliable runs (busy machine or wide spread): " + ", ".join(bad))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def calibrate(configs=None, *, machine: Machine | None = None, small: bool = True, repeat: int = 3) -> Calibration:
    """Run each chapter's benchmark configuration (``configs``: names from :data:`CONFIG_NAMES`) with
    :func:`core.timing.compare` and predict it with the model on ``machine`` (default: measured now).
    Returns a :class:`Calibration` (the predicted-vs-measured table)."""
    configs = CONFIG_NAMES if configs is None else tuple(check_choice(c, "configs", CONFIG_NAMES) for c in configs)
    repeat = check_positive_int(repeat, "repeat")
    machine = Machine.measure() if machine is None else machine
    rows, noise, info = [], {}, {"opts": {}, "extra": {}}
    for name in configs:
        prob, entries, blas, extra = _CONFIGS[name](small)
        fns = {label: f for label, (_, _, f) in entries.items()}
        if blas is None:
            cmp = timing.compare(repeat=repeat, **fns)
        else:
            with _blas(blas):
                cmp = timing.compare(repeat=repeat, **fns)
        noise[name] = cmp.noise
        info["opts"][name] = {label: o for label, (_, o, _) in entries.items()}
        info["extra"][name] = extra
        for label, (meth, o, _) in entries.items():
            pred = predict(meth, prob, machine, **o).seconds
            rows.append(Row(name, label, meth, pred, cmp.timings[label].median, prob))
    return Calibration(machine, rows, noise, info)


# =========================================================================== the seeds' machines, simulated
SEED_SCHEDULES = {
    "000.halide.summary.speedup": ("05 threads", "batched", "threads"),
    "001.summary.kernel_speedup": ("08 scan (H=128)", "sequential", "chunked"),
    "002.speedup.max": ("10 MGRIT", "serial GRU", "mgrit"),
}


def seed_schedules() -> dict:
    """Each seed's headline schedule on its own machine (:meth:`Machine.preset`, assumptions labelled),
    as a task graph on the virtual clock: ``{claim id: {"graph", "P", "serial_s", "simulated", "setting"}}``.
    ``simulated`` = one-processor time / the simulated makespan."""
    out = {}
    phi = Machine.preset("xeon_phi")
    prob = Problem("rnn", "training", B=1000, T=10, H=1000, ny=1000)
    f, b, _ = _step_cost(prob, phi, prob.B)
    par = f / (1e9 * phi.gemm_gflops_core)             # the GEMMs of one step on one core
    elem = b / phi.bandwidth(phi.cores)               # element-wise passes: the memory bus, shared by all cores
    g = cluster.threads_step_graph(prob.T, phi.cores, parallel_part=par, serial_part=elem, barrier=phi.region_s)
    serial = prob.T * (par + b / phi.bandwidth(1))
    out["000.halide.summary.speedup"] = dict(graph=g, P=phi.cores, serial_s=serial,
                                             simulated=serial / g.simulate(phi.cores).makespan,
                                             setting=f"{phi.name}; seed 000's step B=1000, n=1000, T=10")
    host = Machine.preset("k80_host")
    gpu = host.gpu
    T, H, sms = 1 << 20, 128, 13
    bw = 1e9 * gpu.bandwidth_gbs / sms
    g = cluster.chunked_scan_graph(T, sms, reduce=8 * H / bw, carry=gpu.step_latency_s, expand=12 * H / bw,
                                   launch=gpu.launch_s)
    serial = T * gpu.step_latency_s + gpu.launch_s
    out["001.summary.kernel_speedup"] = dict(graph=g, P=sms, serial_s=serial,
                                             simulated=serial / g.simulate(sms).makespan,
                                             setting=f"{gpu.name}, 13 SMs; T=2^20, H=128 (assumed: "
                                                     f"{gpu.step_latency_s * 1e6:g} µs per dependent step)")
    nt, P = 128, 32
    g = cluster.mgrit_graph(nt, m=4, levels=3, iters=2, P=P, latency=0.5)
    out["002.speedup.max"] = dict(graph=g, P=P, serial_s=float(nt), simulated=nt / g.simulate(P).makespan,
                                  setting="Attaway: 128 frames, P = 128/4 = 32 processors, m=4, 3 levels, "
                                          "2 iterations (assumed), exchange = half a step (assumed); GRU only, "
                                          "no ResNet preprocessing")
    return out


def measured_speedups(cal: Calibration) -> dict:
    """``{claim id: (speed-up measured here, what, noise)}`` for the seeds' schedules whose configuration
    ``cal`` ran (baseline time / the parallel method's time, medians of one interleaved run)."""
    if not isinstance(cal, Calibration):
        raise TypeError(f"cal: expected a Calibration (see calibrate), got {type(cal).__name__}")
    out = {}
    for cid, (config, base, par) in SEED_SCHEDULES.items():
        rows = [r for r in cal.rows if r.config == config]
        b = [r for r in rows if r.label == base]
        p = [r for r in rows if r.label.startswith(par) and r.label != base]
        if b and p:
            q = p[-1]
            out[cid] = (b[0].measured / q.measured, f"{config}: {base} / {q.label}", cal.noise[config])
    return out


# =========================================================================== the widget's data
def ranking_and_maps(B: int = 32, T: int = 256, H: int = 128, layers: int = 2, cores: int = 2, gpu: bool = False,
                     kind: str = "rnn", mode: str = "inference", *, machine: Machine | None = None,
                     calibration: dict | None = None, n: int = 6) -> dict:
    """The slider panel's data: the advisor's ranking for one problem on ``machine`` with ``cores``
    (virtual) cores and an assumed GPU or none, and the winning (trusted) method over a (T, H) grid and
    a (B, P) grid around it (``n`` x ``n`` points)."""
    base = Machine.measure() if machine is None else machine
    mach = base.with_cores(check_positive_int(cores, "cores", high=4096))
    mach = mach.with_gpu(GPU.assumed() if gpu else None)
    prob = Problem(kind, mode, B=B, T=T, H=H, layers=1 if kind == "linear" else layers)
    adv = advise(prob, mach, calibration=calibration)

    def win(p, m):
        return advise(p, m, calibration=calibration)[0].method

    Ts = sorted({max(8, int(T * 4.0 ** k)) for k in np.linspace(-2, 2, n)})
    Hs = sorted({max(4, int(H * 4.0 ** k)) for k in np.linspace(-1.5, 1.5, n)})
    Bs = sorted({max(1, int(B * 4.0 ** k)) for k in np.linspace(-2, 2, n)})
    Ps = sorted({max(1, int(cores * 4.0 ** k)) for k in np.linspace(-1, 2, n)})
    th = [[win(replace(prob, T=t, H=h), mach) for t in Ts] for h in Hs]
    bp = [[win(replace(prob, B=b), base.with_cores(P).with_gpu(mach.gpu)) for b in Bs] for P in Ps]
    return {"problem": prob, "machine": mach, "advice": adv,
            "TH": {"x": Ts, "y": Hs, "winner": th, "xlabel": "T", "ylabel": "H"},
            "BP": {"x": Bs, "y": Ps, "winner": bp, "xlabel": "B", "ylabel": "cores P"}}
