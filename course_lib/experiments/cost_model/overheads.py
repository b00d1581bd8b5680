"""The cost model's per-call price for each model kind (experiments folder, chapter 12), *measured by a
micro-benchmark* of the course's own code -- never fitted to the chapter configurations it predicts.

Why: the price of "one library call" measured on ``np.add`` of 8 floats (``Machine.call_s``) is not what a
cell of the course's GRU or LSTM pays per counted call: slicing, ``out=`` arguments, Python between the
calls, small temporaries. So for each kind and mode, :func:`measure_call_costs` runs :func:`.execute.run`
with ``method="batched"`` on a *tiny* problem (batch 1, nh = 4, T = 64: the arithmetic is negligible)
and again on a *mid-sized* one (batch 8, nh = 48, T = 32: the arithmetic shows); a straight line through the
two per-step times, ``calls * price + flops / rate`` (calls: the counted calls per step,
:func:`.model.pass_calls`), gives the seconds per counted call for that kind (:meth:`.machine.Machine.call_cost`)
and the rate of the course's cell kernel (:meth:`.machine.Machine.kernel_rate`: the GRU and LSTM cells are
numba loops, slower than a BLAS GEMM at these sizes). The chapter configurations stay a hold-out: they never see this fit.

``{(kind, mode): seconds per counted call}``; a kind the course has no code for keeps ``Machine.call_s``.

The same way, :func:`gil_shares` prices the GIL for the course's Python-thread methods (threads, wavefront): the
rnn ``threads`` method against one thread's share, at sizes that are not chapter 07's.
"""
from __future__ import annotations

import numpy as np

from ...core import backend, timing
from ...core.validate import check_bool
from .cluster import wavefront_counts
from .execute import inputs, run
from .machine import log_interp
from .probes import cpu_seconds, register_probe
from .model import pass_calls
from .problem import Problem

__all__ = ["TINY", "MID", "CHANNEL_SIZES", "GIL_SIZES", "WAVE_SIZE", "measure_call_costs", "gil_shares",
           "wavefront_barrier", "scan_step", "lane_step", "deer_rates", "scan_back", "channel_rates", "mgrit_convergence"]

TINY = dict(batch=1, T=64, nh=4, layers=1)   # the arithmetic is negligible: the per-step price
MID = dict(batch=8, T=32, nh=48, layers=1)   # the arithmetic shows: the rate of the course's cell kernel
CHANNEL_SIZES = ((8192, 24), (8192, 384))    # (T, nh) of channel_rates: narrow rows, and wide ones streaming from memory
# (batch, T, nh, layers) of the rnn passes gil_shares and wavefront_barrier time: none is chapter 07's
GIL_SIZES = ((16, 8, 32, 2), (16, 24, 32, 2), (16, 64, 32, 2), (64, 4, 512, 1), (64, 16, 512, 1))
WAVE_SIZE = (16, 32, 32, 3)


def _per_step(prob: Problem, quick: bool) -> float:
    """CPU seconds per step of the batched pass on one thread (BLAS on one thread): a busy machine makes
    this process wait for a core, which the CPU clock does not count."""
    data = inputs(prob)
    with backend.blas_threads(1):
        t = cpu_seconds(lambda: run(prob, "batched", data=data), repeat=3 if quick else 7,
                        min_time=2e-3 if quick else 1e-2)
    return t / prob.T


def measure_call_costs(quick: bool = False) -> tuple[dict, dict]:
    """``({(kind, mode): seconds per counted library call}, {(kind, mode): GFLOP/s of the cell kernel})``
    from two runs of the course's code per kind and mode (:data:`TINY`, :data:`MID`; see the module
    docstring): ``t_step = calls * price + flops / rate`` through both points; CPU seconds, the least
    over repeats (a busy machine only adds time). A rate the two points cannot resolve is left out (the GEMM rate rules)."""
    quick = check_bool(quick, "quick")
    price, rate = {}, {}
    for kind in ("rnn", "gru", "lstm"):
        for mode in ("inference", "training"):
            if kind == "rnn" and mode == "training":
                continue  # run() has no rnn training code
            ny = 1 if kind == "rnn" else 0
            p1, p2 = Problem(kind, mode, ny=ny, **TINY), Problem(kind, mode, ny=ny, **MID)
            t1, t2 = _per_step(p1, quick), _per_step(p2, quick)
            f1, f2 = (p.flops() / p.T for p in (p1, p2))
            # a rate only where the mid-sized run's arithmetic clearly shows over the per-step price
            r = (f2 - f1) / (t2 - t1) if t2 > 1.5 * t1 else float("inf")
            calls = pass_calls(p1) / p1.T  # counted calls per step, the pass's fixed calls spread over T
            price[(kind, mode)] = max(t1 - f1 / r, 0.1 * t1) / calls
            if r != float("inf") and kind != "rnn":  # rnn: BLAS products, the measured GEMM rate rules
                rate[(kind, mode)] = r / 1e9
    if ("gru", "training") in price:
        g = price[("gru", "training")] / price[("gru", "inference")]
        price[("rnn", "training")] = price[("rnn", "inference")] * g
    return price, rate


def scan_step(quick: bool = False) -> float:
    """CPU seconds per time step of the course's sequential linear recurrence (:func:`.execute.run`,
    ``kind="linear"``) at nh = 1: the dependent step as the course's own loop takes it (loads, the
    multiply-add, the store), which the model's linear methods charge per step."""
    quick = check_bool(quick, "quick")
    prob = Problem("linear", "inference", batch=1, T=1 << (14 if quick else 16), nh=1)
    data = inputs(prob)
    return cpu_seconds(lambda: run(prob, "sequential", data=data), repeat=3 if quick else 7) / prob.T


def lane_step(quick: bool = False) -> tuple[float, float]:
    """``(seconds per step, seconds per call)`` of the course's chunked scan (:func:`.execute.run`,
    ``method="chunked"``) at nh = 1 on one numba thread, by CPU clock at T = 2^12 and 2^17 (not chapter
    sizes): chapter 08's SIMD lanes over time as fast as the course's code gets them, and what one call
    costs before its first step (set-up, allocation) -- the model charges both."""
    quick = check_bool(quick, "quick")
    t = {}
    for T in (1 << 12, 1 << 17):
        prob = Problem("linear", "inference", batch=1, T=T, nh=1)
        data = inputs(prob)
        fn = backend.on_threads(1, lambda prob=prob, data=data: run(prob, "chunked", data=data))
        t[T] = cpu_seconds(fn, repeat=3 if quick else 7)
    step = max((t[1 << 17] - t[1 << 12]) / ((1 << 17) - (1 << 12)), 1e-11)
    return step, max(t[1 << 12] - step * (1 << 12), 0.0)


def deer_rates(price: float, quick: bool = False) -> dict:
    """``{"newton": GB/s, "quasi": GB/s}``: the rate at which the course's DEER (float64 numpy passes over all
    t at once, on one core) moves the bytes the model counts for it (:func:`.counts.deer_bytes`), from CPU
    seconds of a run with 3 iterations less one with 1 (T = 256, batch 2, nh = 12: not a chapter size), less
    the counted calls at ``price`` each. Its arithmetic is inside that rate (element-wise passes, stacks of
    small matrix products, the compiled scan)."""
    import numpy as np

    from ...models import gru
    from ...parallel import deer
    from .counts import deer_bytes, deer_calls

    quick = check_bool(quick, "quick")
    T, B, nh = 256, 2, 12
    params = gru.init_params(3, nh, seed=0, dtype=np.float64)
    X = np.random.default_rng(0).standard_normal((T, B, 3))
    out = {}
    with backend.blas_threads(1):
        for method in ("newton", "quasi"):
            t = {k: cpu_seconds(lambda k=k: deer.gru_forward(params, X, method=method, tol=0.0, max_iter=k),
                                repeat=3 if quick else 5) for k in (1, 3)}
            b0, b1, b2 = deer_bytes(method)
            per_iter_bytes = T * B * (b0 + b1 * nh + b2 * nh * nh)
            secs = (t[3] - t[1]) / 2 - deer_calls(method)["iter"] * price
            out[method] = per_iter_bytes / max(secs, 0.2 * (t[3] - t[1]) / 2) / 1e9
    return out


def scan_back(quick: bool = False) -> float:
    """CPU seconds per element (step x channel) that the course's linear-recurrence backward
    (:func:`.execute.run`, ``mode="training"``, sequential) adds to its forward, at nh = 64, T = 2048 (not a
    chapter size): its reversed copies and fresh arrays, which a 3x rule of thumb does not see. The backward
    runs on a dense upstream gradient (:func:`.execute.upstream`): a one-hot one made it a product chain on
    subnormals (10.02 ns per element on an Intel Xeon against 1.04 ns on Zen 5)."""
    quick = check_bool(quick, "quick")
    t = {}
    for mode in ("inference", "training"):
        prob = Problem("linear", mode, batch=1, T=2048, nh=64)
        data = inputs(prob)
        t[mode] = cpu_seconds(lambda prob=prob, data=data: run(prob, "sequential", data=data), repeat=3 if quick else 5)
    return max(t["training"] - t["inference"], 1e-9) / (2048 * 64)


def channel_rates(quick: bool = False) -> tuple[float, float, float]:
    """``(seconds per step, seconds per element, seconds per call)`` of the course's channel-parallel scan
    (:func:`.execute.run`, ``method="channels"``) on every numba thread: the call from a tiny run, then a
    straight line through a narrow and a wide run (:data:`CHANNEL_SIZES`, not chapter sizes; the wide one
    streams from memory). Splitting every row between
    threads costs what neither the bandwidth nor the step latency shows -- cache lines shared at the group
    boundaries each step, prefetchers that see half-rows -- so the model prices the method by this line.
    Threads: wall clock, the 5% quantile of single runs (a busy moment only adds)."""
    from .probes import low_quantile, single_runs

    quick = check_bool(quick, "quick")
    t = []
    for T, nh in CHANNEL_SIZES + ((64, 24),):  # the last: a tiny run, the price of the call itself
        prob = Problem("linear", "inference", batch=1, T=T, nh=nh)
        data = inputs(prob)
        runs = single_runs(lambda prob=prob, data=data: run(prob, "channels", data=data), n=30 if quick else 100,
                           budget_s=0.1 if quick else 0.3)
        t.append(low_quantile(runs)[0])
    (T0, n0), (T1, n1) = CHANNEL_SIZES
    call = t[2]
    elem = max(((t[1] - call) / T1 - (t[0] - call) / T0) / (n1 - n0), 1e-12)
    return max((t[0] - call) / T0 - n0 * elem, 1e-12), elem, call


def mgrit_convergence(quick: bool = False) -> tuple[float, float]:
    """``(rho, c)``: the course's MGRIT (chapter 10's implicit GRU, m = 4, two levels, FCF) on one sequence of
    T = 256 steps, nh = 16 (not a chapter size), six iterations: ``rho`` the geometric mean of the residual's
    factor per iteration, ``c`` the first residual per ``sqrt(batch T nh)`` -- together they say how many
    iterations a tolerance takes (:meth:`.machine.Machine.mgrit_iterations`)."""
    import math

    from ...models import gru

    check_bool(quick, "quick")
    prob = Problem("gru", "inference", batch=1, T=256, nh=16)
    params, X = inputs(prob)
    _, hist = gru.gru_forward(params, X, implicit=True, method="mgrit", m=4, levels=2, relax="FCF", max_iter=6,
                              tol=1e-14, return_history=True)
    r = np.asarray(hist, float)
    r = r[r > 0]
    rho = float(np.exp(np.mean(np.log(r[1:] / r[:-1])))) if len(r) > 1 else 0.1
    return min(max(rho, 1e-3), 0.9), float(r[0] / math.sqrt(prob.batch * prob.T * prob.nh))


def _rnn(batch: int, T: int, nh: int, layers: int, P: int = 1) -> Problem:
    """An rnn inference problem of ``batch`` sequences, or one thread's share of it on ``P`` threads."""
    return Problem("rnn", "inference", batch=-(-batch // P), T=T, nh=nh, layers=layers, ny=16)


def _busy(cmp, what: str) -> str | None:
    """Why the probe ``what`` was measured busy (its comparison's noise guard), or None."""
    reasons = [] if cmp.noise.ok and not cmp.noise.biased else cmp.noise.reasons or ["its pairs are biased"]
    return f"{what}: {reasons[-1]}" if reasons else None


def _threads_extra(batch: int, T: int, nh: int, layers: int, P: int, quick: bool) -> tuple[float, float, str | None]:
    """``(one, extra, busy)``: seconds of one thread's batched pass over its share of the batch, what the course's
    rnn ``threads`` method on ``P`` threads takes beyond it (interleaved, BLAS on one thread, median pair ratio),
    and why that was measured busy (None: it was not)."""
    prob, part = _rnn(batch, T, nh, layers), _rnn(batch, T, nh, layers, P)
    data, pdata = inputs(prob), inputs(part)
    with backend.blas_threads(1):
        cmp = timing.compare(threads=lambda: run(prob, "threads", threads=P, data=data),
                             one=lambda: run(part, "batched", data=pdata), baseline="one", clock="wall",
                             time_budget=0.2 if quick else 0.6)
    one = cmp.timings["one"].median
    return one, one * (cmp.ratio("threads") - 1), _busy(cmp, f"threads at {(batch, T, nh, layers)}")


def gil_shares(quick: bool = False) -> tuple[float | None, tuple, str | None]:
    """``(start, ((seconds per call, share), ...), busy)``: what Python threads cost the course's rnn ``threads``
    method on every core beyond one thread's pass over its share, ``extra = start + share * (P - 1) * one``
    (:func:`_threads_extra` at :data:`GIL_SIZES`, none of them chapter 07's). ``start``: the pool started and the
    threads' first contention for the GIL, once per call; ``share``: 0 when the threads' calls overlap, 1 when they
    run one after another, above 1 when handing the GIL back and forth costs more. Three passes of small calls
    that differ only in length give ``start`` and the small calls' share (a least-squares line); two of large
    calls give theirs (the slope). ``busy``: why a pass was measured busy (None: none was). ``(None, (), None)`` on
    one core."""
    check_bool(quick, "quick")
    P = backend.cpu_count()
    if P < 2:
        return None, (), None
    runs = [_threads_extra(*size, P, quick) for size in GIL_SIZES]
    busy = next((b for *_, b in runs if b), None)
    runs = [(o, e) for o, e, _ in runs]
    one, extra = np.array(runs[:3]).T
    small, start = np.polyfit((P - 1) * one, extra, 1)   # short and long passes of small calls: a line
    (o1, e1), (o2, e2) = runs[3:]                          # two of large calls: their slope
    large = (e2 - e1) / ((P - 1) * (o2 - o1)) if o2 > o1 else 0.0
    per_call = [t / pass_calls(_rnn(*size, P)) for t, size in ((one[0], GIL_SIZES[0]), (o1, GIL_SIZES[3]))]
    clip = lambda f: min(max(float(f), 0.0), 10.0)  # noqa: E731
    return max(0.0, float(start)), ((per_call[0], clip(small)), (per_call[1], clip(large))), busy


def wavefront_barrier(start: float, shares: tuple, quick: bool = False) -> tuple[float | None, str | None]:
    """Seconds one diagonal's barrier costs the course's rnn ``wavefront`` method, GIL hand-overs included: the method
    on every core (one thread per layer at most) at :data:`WAVE_SIZE` against the batched pass on one thread
    (interleaved, BLAS on one thread), less what the model prices apart from the barriers -- the cells on the
    critical path, the GIL's ``shares`` of the rest at this pass's calls, ``start`` (from :func:`gil_shares`) --
    per diagonal; and why that was measured busy (None: it was not). ``(None, None)`` on one core or without shares."""
    check_bool(quick, "quick")
    batch, T, nh, layers = WAVE_SIZE
    P = min(backend.cpu_count(), layers)
    if P < 2 or not shares:
        return None, None
    prob = _rnn(batch, T, nh, layers)
    data = inputs(prob)
    with backend.blas_threads(1):
        cmp = timing.compare(wavefront=lambda: run(prob, "wavefront", threads=P, data=data),
                             one=lambda: run(prob, "batched", data=data), baseline="one", clock="wall",
                             time_budget=0.2 if quick else 0.6)
    one = cmp.timings["one"].median
    wc = wavefront_counts(T, layers, P)
    ideal = one * wc["steps"] / wc["work"]
    rest = log_interp(shares, one / pass_calls(prob)) * (one - ideal)
    return (max(0.0, (one * cmp.ratio("wavefront") - ideal - rest - (start or 0.0)) / wc["span"]),
            _busy(cmp, f"the wavefront at {WAVE_SIZE}"))


def _load_busy(others: float | None, threads: int, what: str) -> str | None:
    """Why a probe timed by its fastest runs on ``threads`` threads was measured busy (None: it was not): other
    processes held a core meanwhile, which a region that waits for its slowest thread feels even in its fastest
    runs (chapter 12's busy run: the channel scan's price per call read 3,986 µs, against 19 µs quiet)."""
    if threads < 2 or others is None or others <= timing.OTHERS_LIMIT:
        return None
    return f"{what} on {threads} threads: other processes kept {others:.1f} core(s) busy meanwhile"


def _probe(quick: bool) -> dict:
    gil_start, gil, gil_busy = gil_shares(quick)
    barrier, barrier_busy = wavefront_barrier(gil_start, gil, quick)
    busy = {k: why for k, why in (("gil_start_s", gil_busy), ("gil_serial", gil_busy), ("barrier_s", barrier_busy))
            if why}
    with timing.LoadWatch() as load:
        channels = channel_rates(quick)
    if channels_busy := _load_busy(load.others, backend.max_threads(), "the channel scan"):
        busy["channel_rates"] = channels_busy
    costs, rates = measure_call_costs(quick)
    lane, lane_call = lane_step(quick)
    return dict(call_costs=costs, kernel_gflops=rates, step_latency_s=scan_step(quick), lane_step_s=lane,
                lane_call_s=lane_call,
                deer_gbs=deer_rates(costs.get(("gru", "inference"), 5e-7), quick), scan_back_s=scan_back(quick),
                channel_rates=channels, channel_threads=backend.max_threads(),
                mgrit_convergence=mgrit_convergence(quick), gil_start_s=gil_start, gil_serial=gil,
                barrier_s=barrier, busy=busy)


register_probe(_probe)
