"""The machine's micro-benchmarks (experiments folder, chapter 12): what :meth:`.machine.Machine.measure` runs.

GEMM at the peak and on a grid of small shapes, GEMV, streaming from memory and from the last-level cache, a
numpy call, a numba parallel region and a thread-pool hand-off (low quantiles of many single runs), a pool
started per call, how much the GIL serialises Python threads' calls, a dependent step, an MPI ping-pong -- and
the probes of :mod:`.overheads` (the course's own code), registered with :func:`register_probe`. One-thread
constants by CPU clock; nothing here is fitted to the chapter configurations the model predicts.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from ...core import backend, timing
from ...core.forkjoin import Team
from ...core.memory import steady_memory
from ...core.sysload import settle
from ...core.validate import check_float, check_positive_int
from .machine import GEMM_ROWS, GEMM_SIZES, GPU, Machine, use_measurer

__all__ = ["measure_machine", "register_probe", "cpu_seconds", "single_runs", "low_quantile"]


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
    """float32 lanes per vector of the code numba compiles here (``backend.simd_lanes``: read from the machine
    code, e.g. 8 on an AVX-512 CPU whose LLVM emits 256-bit code), never the CPU's flags."""
    return backend.simd_lanes(4)


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
    measure_machine.cache_clear()


@lru_cache(maxsize=None)
def measure_machine(quick: bool) -> Machine:
    """This machine, measured now (once per process and ``quick``): see the module docstring."""
    steady_memory()  # a warmed-up allocator, as every course measurement sees it (core.memory)
    cores = backend.cpu_count()
    n, rep, mb = (256, 3, 32) if quick else (768, 5, 128)
    src = {}
    chain, region = _numba_kernels()
    buf = np.zeros(max(2, cores), np.float64)
    pool = Team(cores)  # the caller takes a share, as the course's thread methods do
    regions: list = []
    handoffs: list = []
    burst = 20 if quick else 50

    def sample():  # bursts of single runs between the other probes: a busy moment spoils only some
        settle()   # the GEMM probes' BLAS pool spins for a while after them, on the cores these threads need
        regions.extend(single_runs(lambda: region(buf), n=burst, budget_s=0.05 if quick else 0.15))
        with backend.blas_threads(1):  # a hand-off whose tasks make library calls, as the course's cells do
            handoffs.extend(single_runs(lambda: pool.run(_gil_calls, [2] * cores), n=burst,
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
    llc = max(backend.cache_sizes().values(), default=0)
    if llc >= 1 << 20:  # streaming from the last-level cache: arrays of a quarter of it (src + dst: half)
        per = max(1, llc // 4 // 1_000_000)
        cache_bw = (llc, _copy_bandwidth_cpu(per, rep), _parallel_copy_bandwidth(per, cores, rep) if cores > 1 else 0.0)
        src["cache_bw"] = f"measured: copies of {per} MB arrays (the last-level cache holds {llc >> 20} MiB)"
    else:
        cache_bw = ()
    x, y = np.ones(8, np.float32), np.ones(8, np.float32)
    call = cpu_seconds(lambda: np.add(x, y), repeat=max(rep, 7))
    Tn = 20_000 if quick else 200_000
    a = np.full(Tn, 0.5, np.float32)
    xs = np.ones(Tn, np.float32)
    step = cpu_seconds(lambda: chain(a, xs), repeat=max(rep, 7)) / Tn
    sample()
    pool.close()
    starts = single_runs(lambda: _pool_start(cores), n=burst, budget_s=0.05 if quick else 0.15)
    busy = {}
    with backend.blas_threads(1):  # the tasks' own calls, made on one thread: not part of the hand-off
        own = low_quantile(single_runs(lambda: _gil_calls(2 * cores), n=burst, budget_s=0.1))[0]
    handoffs = [max(t - own, 1e-7) for t in handoffs]
    handoff, med = low_quantile(handoffs)  # robust: a low quantile of many single runs
    busy["handoff_s"] = _busy_note(handoff, med, len(handoffs))
    # a wake-up is not one number: on a VM a sleeping core wakes fast or slow (measured on a 2-vCPU EPYC: runs at
    # 11.5 and at 18.5 us, half each), and a run of the course's methods pays the typical one -- the median, where
    # the runs do not look busy (a busy median would price other programs' load, see _busy_note)
    typical = busy["handoff_s"] is None and med > handoff
    handoff = med if typical else handoff
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
    for k, how in (("region_s", "5% quantile"), ("handoff_s", "median" if typical else "5% quantile")):
        src[k] = (f"measured: {how} of single runs in 7 bursts (regions / hand-offs: {nrun}; a hand-off's tasks "
                  "make library calls, their own time taken out)" + (" (quick)" if quick else ""))
    src["simd_lanes"] = "from the compiled code (" + backend.code_vector()["register"] + ")"
    mpi_alpha, mpi_beta, src["mpi_latency_s"] = _mpi_numbers(quick)
    src["mpi_bandwidth_gbs"] = src["mpi_latency_s"]
    extra = {}
    for probe in _PROBES:  # e.g. .overheads: the course's own code, timed (registered, not imported here)
        extra.update(probe(quick))
    busy.update(extra.pop("busy", {}))      # a probe's constants measured busy, and why
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
    if "mgrit_convergence" in extra:
        src["mgrit_convergence"] = ("measured: the course's MGRIT on one GRU sequence (T = 256, nh = 16), its residual "
                                    "norms" + (" (quick)" if quick else ""))
    if "channel_rates" in extra:
        src["channel_rates"] = ("measured: the course's channel scan on every numba thread, 5% quantile of single "
                                "runs at T x nh = 64 x 24 (the call), 8192 x 24 and 8192 x 384 (a line)" + (" (quick)" if quick else ""))
    if "step_latency_s" in extra:
        src["step_latency_s"] = "measured by CPU clock: the course's sequential scan at nh = 1, per step" + \
            (" (quick)" if quick else "")
    src["pool_start_s"] = f"measured: 5% quantile of {len(starts)} single runs" + (" (quick)" if quick else "")
    if extra.get("gil_serial"):
        src["barrier_s"] = ("measured: the course's rnn wavefront method against its batched pass on one thread, less "
                            "the model's other parts, per diagonal, at a size other than chapter 07's" +
                            (" (quick)" if quick else ""))
        src["gil_serial"] = src["gil_start_s"] = (
            "measured: the course's rnn threads method against one thread's share (median pair ratio) at five sizes "
            "other than chapter 07's: three passes of small calls of different lengths, two of large calls" +
            (" (quick)" if quick else ""))
    fields.update(extra, pool_start_s=low_quantile(starts)[0], cache_bw=cache_bw)
    return Machine(f"this machine ({backend.cpu_model()})", cores, _simd_lanes(), g1, max(g1, gall), gemv, bw1,
                   max(bw1, bwall), call, handoff, region_s, **fields)


def _pool_start(threads: int) -> None:
    """What the course's threads and wavefront methods pay once per call: BLAS pinned to one thread, a pool
    started, one hand-off, the pool joined."""
    with backend.blas_threads(1), Team(threads) as team:
        team.run(int, range(threads))


_GIL_A, _GIL_W = np.ones((16, 64), np.float32), np.ones((64, 64), np.float32)


def _gil_calls(k: int, a=_GIL_A, w=_GIL_W) -> None:
    """``k`` pairs of library calls ``a @ w`` and a tanh (default: the size a small cell makes, 16 x 64)."""
    o = np.empty((a.shape[0], w.shape[1]), np.float32)
    for _ in range(k):
        np.matmul(a, w, out=o)
        np.tanh(o, out=o)


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


use_measurer(measure_machine)
