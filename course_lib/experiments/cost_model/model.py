"""The cost model (experiments folder, chapter 12): for a :class:`~.problem.Problem` (model kind, mode, sizes),
the :class:`Cost` of each method on it on a :class:`~.machine.Machine` -- a roofline with overheads (see
:mod:`course_lib.experiments.cost_model`) -- and :func:`predict`, :func:`predict_all`, :func:`applicable`.
Counts come from the course's task graphs (:mod:`.cluster`), closed forms tested equal to the course's, or
counted runs of the course's own code (:mod:`.counts`: library calls per cell, per step and per pass, DEER's
calls and bytes per iteration -- registered here by :func:`register_counts`, tested equal to fresh counts).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ...core.validate import check_bool, check_choice, check_float, check_int, check_positive_int, check_str
from . import cluster
from .cluster import deer_counts, wavefront_counts
from .machine import Machine
from .problem import GATES, ITEMSIZE, TRAIN_FACTOR, Problem

__all__ = ["METHODS", "MGRIT_ITERS", "MGRIT_TOL", "DEER_ITERS", "Cost", "predict", "predict_all", "applicable",
           "calls_per_step", "pass_calls", "register_counts", "wavefront_counts", "scan_counts", "mgrit_counts",
           "deer_counts", "step_cost"]

METHODS = ("sequential", "batched", "threads", "wavefront", "mpi", "chunked", "channels", "mgrit", "newton", "quasi",
           "cuda_chunked", "cuda_batched")
_COUNTS: dict = {}        # step_calls, deer_calls, deer_bytes of .counts (counted runs of the course's code)


def register_counts(step_calls, deer_calls, deer_bytes, method_calls) -> None:
    """Use the counts of :mod:`.counts` (it registers itself; this module does not import it: no cycle)."""
    for f, k in ((step_calls, "step_calls"), (deer_calls, "deer_calls"), (deer_bytes, "deer_bytes"),
                 (method_calls, "method_calls")):
        if not callable(f):
            raise TypeError(f"{k}: expected a callable, got {type(f).__name__}")
        _COUNTS[k] = f


def _counted(name: str, *args):
    if name not in _COUNTS:
        raise RuntimeError("the cost model's counts are not registered: import course_lib.experiments.cost_model")
    return _COUNTS[name](*args)
MGRIT_ITERS, MGRIT_TOL = 2, 1e-5  # unmeasured default; the tolerance the course's runs stop at (chapters 10, 12)
DEER_ITERS = {"newton": 6, "quasi": 20}


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
        for name in ("work", "span", "bytes", "calls", "regions", "messages", "comm_bytes", "seconds"):
            check_float(getattr(self, name), name, low=0.0)
        for name in ("counts", "parts"):
            if not isinstance(getattr(self, name), dict):
                raise TypeError(f"{name}: expected a dict, got {type(getattr(self, name)).__name__}")
        check_str(self.note, "note", nonempty=False)

    @property
    def bottleneck(self) -> str:
        return max(self.parts, key=self.parts.get) if self.parts else ""


def _finish(c: Cost, m: Machine, *, rate: float, bw: float, call_s: float | None = None, region_s: float | None = None,
            gil: bool = True, latency: float | None = None, comm_bw: float | None = None,
            kernel: bool = True) -> Cost:
    if kernel and rate > 0:  # the course's cell code: no faster than its measured kernel rate
        rate = min(rate, m.kernel_rate(c.problem.kind, c.problem.mode))
    compute = max(c.work / (c.P * rate), c.span / rate) if rate > 0 else 0.0
    memory = c.bytes / bw if bw > 0 else 0.0
    per_call = m.call_cost(c.problem.kind, c.problem.mode) if call_s is None else call_s
    calls = c.calls * per_call / (1 if gil else c.P)
    regions = c.regions * (m.region_s if region_s is None else region_s)
    comm = c.messages * (m.mpi_latency_s if latency is None else latency) + \
        c.comm_bytes / (1e9 * (m.mpi_bandwidth_gbs if comm_bw is None else comm_bw))
    c.parts = {"compute": compute, "memory": memory, "calls": calls, "sync": regions, "communication": comm}
    # the course's numpy code issues its products and its element-wise passes one call after another: they
    # add up (a fused compiled kernel would overlap them -- the linear scans take max() below)
    c.seconds = compute + memory + calls + regions + comm
    return c


def _train(p: Problem) -> float:
    return TRAIN_FACTOR if p.training else 1.0


def _step_counts(p: Problem) -> dict:
    sc = dict(_counted("step_calls", p.kind, p.mode))
    if p.kind == "rnn" and p.training:  # the course has no rnn training code: forward count x TRAIN_FACTOR
        sc = {k: v * TRAIN_FACTOR for k, v in sc.items()}
    return sc


def _calls_per_step(p: Problem, layers: int | None = None) -> float:
    sc = _step_counts(p)
    return (p.layers if layers is None else layers) * sc["cell"] + sc["output"]


def calls_per_step(p: Problem) -> float:
    """Library calls per time step of all layers (training: forward + backward) of the course's batched
    pass, counted from its code (:func:`.counts.step_calls`)."""
    if not isinstance(p, Problem):
        raise TypeError(f"p: expected a Problem, got {type(p).__name__}")
    return float(_calls_per_step(p))


def pass_calls(p: Problem) -> float:
    """Library calls of one batched pass of the course's code over ``p`` (batch in one product per step):
    ``fixed + layers fixed_layer + T calls_per_step`` -- counted, tested equal to a fresh count."""
    if not isinstance(p, Problem):
        raise TypeError(f"p: expected a Problem, got {type(p).__name__}")
    sc = _step_counts(p)
    return float(sc["fixed"] + p.layers * sc["fixed_layer"] + p.T * _calls_per_step(p))


def _need_nonlinear(p: Problem, method: str):
    if p.kind == "linear":
        raise ValueError(f"kind: {method} solves nonlinear recurrences; a linear recurrence (kind='linear') is "
                         f"solved exactly by a scan -- use method 'chunked'")


def step_cost(p: Problem, m: Machine, rows: int, threads: int = 1) -> tuple[float, float, float]:
    """(flops, bytes, calls) of one time step of all layers for ``rows`` sequences."""
    if not isinstance(p, Problem) or not isinstance(m, Machine):
        raise TypeError(f"p, m: expected a Problem and a Machine, got {type(p).__name__} and {type(m).__name__}")
    check_positive_int(rows, "rows"), check_positive_int(threads, "threads")
    f = p.layers * p.cell_flops(rows) + p.output_flops(rows)
    elem = 3 * ITEMSIZE * rows * max(1, GATES[p.kind]) * p.nh * p.layers * 4  # element-wise passes
    return f * _train(p), elem * _train(p), calls_per_step(p)


def cost_sequential(p: Problem, m: Machine) -> Cost:
    """One sequence, one step, one layer at a time: matrix-*vector* products (GEMV), B T layers cells;
    a linear recurrence is the compiled loop over time (one dependent step per time step)."""
    c = Cost("sequential", p, 1)
    if p.kind == "linear":
        n = p.batch * p.nh
        c.work = c.span = 2.0 * p.T * n * _train(p)
        c.bytes = 3 * ITEMSIZE * p.T * n * _train(p)
        c.calls = pass_calls(p)  # the compiled loop (training: and its reverse scan), counted
        c.counts = {"steps": p.T}
        lat = p.T * m.step_latency_s * max(1.0, n / m.simd_lanes / 4) * _train(p)  # 4: pipelined lanes
        _finish(c, m, rate=0.0, bw=m.bandwidth(1))
        if p.training and m.scan_back_s is not None:  # measured: the course's backward, per element
            fwd = lat / _train(p)
            c.parts["memory"] = max(fwd, c.parts["memory"] / _train(p))
            lat = max(2 * p.T * m.step_latency_s, p.T * n * m.scan_back_s)
        c.parts["compute"] = lat
        c.seconds = max(lat, c.parts["memory"]) + c.parts["calls"] if not p.training or m.scan_back_s is None \
            else c.parts["memory"] + lat + c.parts["calls"]
        return c
    f, b, k = step_cost(p, m, 1)
    c.work = c.span = p.batch * p.T * f
    c.bytes = p.batch * p.T * b
    counted = _counted("method_calls", p.kind, p.mode, "sequential", p.T, p.layers, 1, p.batch)
    c.calls = p.batch * pass_calls(p) if counted is None else counted  # one pass per sequence
    c.counts = {"cells": p.batch * p.T * p.layers, "calls": c.calls}
    return _finish(c, m, rate=m.gemm_rate(1, size=p.nh), bw=m.bandwidth(1))


def cost_batched(p: Problem, m: Machine) -> Cost:
    """All B sequences together: per step and layer one GEMM of B rows (chapter 03)."""
    if p.kind == "linear":
        c = cost_sequential(p, m)
        c.method = "batched"
        return c
    c = Cost("batched", p, 1)
    f, b, k = step_cost(p, m, p.batch)
    c.work = c.span = p.T * f
    c.bytes = p.T * b
    c.calls = pass_calls(p)
    c.counts = {"steps": p.T * p.layers, "calls": c.calls}
    return _finish(c, m, rate=m.gemm_rate(p.batch, size=p.nh), bw=m.bandwidth(1))


def cost_threads(p: Problem, m: Machine, P: int | None = None, *, python: bool = True) -> Cost:
    """The batch split over ``P`` Python threads of one process, each running the batched pass on its share,
    contending for the GIL (:func:`_pooled`); one pool per call.
    ``python=False``: one Python thread whose products the BLAS splits over ``P`` threads (chapter 05) -- its
    calls one after another, its arithmetic on ``P`` cores, no GIL to share and no pool of ours."""
    P = min(m.cores if P is None else check_positive_int(P, "P"), p.batch)
    python = check_bool(python, "python")
    if p.batch < 2:
        raise ValueError("batch: splitting the batch over threads needs batch >= 2 sequences")
    c = Cost("threads", p, P)
    share = math.ceil(p.batch / P)
    f, b, k = step_cost(p, m, share)
    c.work = p.T * f * P
    c.span = p.T * f
    c.bytes = p.T * b * P
    counted = _counted("method_calls", p.kind, p.mode, "threads", p.T, p.layers, P)
    c.calls = pass_calls(p) * P if counted is None else counted  # each thread: the batched pass on its share
    c.regions = 1
    c.counts = {"share": share, "calls": c.calls}
    if not python:
        c.calls, c.regions = pass_calls(p), 0
        return _finish(c, m, rate=m.gemm_rate(share, size=p.nh), bw=m.bandwidth(P))
    _finish(c, m, rate=m.gemm_rate(share, size=p.nh), bw=m.bandwidth(P), region_s=0.0)
    one = cost_batched(replace(p, batch=share), m).seconds   # one thread's pass over its share
    return _pooled(c, m, ideal=one, serial=P * one)


def _pooled(c: Cost, m: Machine, *, ideal: float, serial: float, sync: float = 0.0) -> Cost:
    """The course's threads / wavefront methods: Python threads that take ``ideal`` seconds if their calls overlap,
    ``serial`` if they run in turn. With the GIL measured (:attr:`Machine.gil_serial`): ``ideal + share * (serial -
    ideal)`` + barriers ``sync``, the share at their call size (above 1: handing the GIL over costs more than turns);
    unmeasured, ``c`` as counted (calls in turn, arithmetic overlapped). Plus, once per call, the pool's start and
    first GIL contention (:attr:`Machine.gil_start_s`; else the pool's start alone; else one hand-off)."""
    start = m.gil_start_s if m.gil_start_s is not None else m.handoff_s if m.pool_start_s is None else m.pool_start_s
    if c.P > 1 and m.gil_serial:
        share = m.gil_share(serial / max(1.0, c.calls))
        c.parts = {"compute": ideal, "calls": share * (serial - ideal), "sync": sync,
                   "memory": 0.0, "communication": 0.0}
        c.seconds = sum(c.parts.values())
    c.parts["sync"] += start
    c.seconds += start
    return c


def cost_wavefront(p: Problem, m: Machine, P: int | None = None) -> Cost:
    """Cells (l, t) on one anti-diagonal run on ``P`` threads, a barrier per diagonal (:attr:`Machine.barrier_s`)."""
    if p.layers < 2:
        raise ValueError(f"layers: the layer wavefront needs >= 2 layers (a diagonal holds at most `layers` "
                         f"cells), got {p.layers}")
    if p.kind == "linear":
        raise ValueError("kind: a linear recurrence has one layer; the wavefront is for stacked layers")
    P = min(m.cores if P is None else check_positive_int(P, "P"), p.layers)
    wc = wavefront_counts(p.T, p.layers, P)
    c = Cost("wavefront", p, P)
    cell = p.cell_flops(p.batch) * _train(p)
    c.work = wc["work"] * cell + p.T * p.output_flops(p.batch)
    c.span = wc["steps"] * cell + p.T * p.output_flops(p.batch)
    c.bytes = wc["work"] * 3 * ITEMSIZE * p.batch * max(1, GATES[p.kind]) * p.nh * 4 * _train(p)
    counted = _counted("method_calls", p.kind, p.mode, "wavefront", p.T, p.layers, P)
    if counted is None:
        sc = _step_counts(p)
        counted = wc["work"] * sc["cell"] + p.T * sc["output"] + sc["fixed"] + p.layers * sc["fixed_layer"]
    c.calls = counted
    c.regions = wc["span"] * _train(p)
    c.counts = wc
    barrier = m.handoff_s if m.barrier_s is None else m.barrier_s   # measured on the course's wavefront, else a hand-off
    _finish(c, m, rate=m.gemm_rate(p.batch, size=p.nh), bw=m.bandwidth(P), region_s=barrier)
    serial = cost_batched(p, m).seconds    # every cell one after another: the batched pass
    return _pooled(c, m, ideal=serial * wc["steps"] / wc["work"], serial=serial, sync=c.parts["sync"])


def cost_mpi(p: Problem, m: Machine, P: int | None = None) -> Cost:
    """The batch split over ``P`` ranks (separate processes: their calls run in parallel). Inference:
    scatter inputs, gather outputs. Training: per step an allreduce of the gradients."""
    P = min(m.cores if P is None else check_positive_int(P, "P"), p.batch)
    if p.batch < 2:
        raise ValueError("batch: splitting the batch over MPI ranks needs batch >= 2 sequences")
    c = Cost("mpi", p, P)
    share = math.ceil(p.batch / P)
    f, b, k = step_cost(p, m, share)
    c.work, c.span = p.T * f * P, p.T * f
    c.bytes, c.calls = p.T * b * P, pass_calls(p) * P
    rounds = 2 * math.ceil(math.log2(P)) if P > 1 else 0
    if p.training:
        c.messages = rounds
        c.comm_bytes = 2 * p.param_bytes() * (P - 1) / P
    else:
        c.messages = 2 * (P - 1)
        c.comm_bytes = ITEMSIZE * p.T * p.batch * (p.n_in + max(p.ny, p.nh)) * (P - 1) / P
    c.counts = {"share": share, "rounds": rounds}
    return _finish(c, m, rate=m.gemm_rate(share, size=p.nh), bw=m.bandwidth(P), gil=False)


def scan_counts(method: str, T: int) -> dict:
    """Combines (work) and parallel steps (span) of one scan, closed form: sequential T-1 / T-1;
    Hillis-Steele ``sum_{d < ceil log2 T} (T - 2^d)`` / ``ceil log2 T``; Blelloch ``2(n - 1)`` / ``2 log2 n``
    (n = T padded to a power of two); chunked on P = 2 chunks per thread: see :func:`cost_chunked`."""
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
                         f"use 'newton', 'quasi' or 'mgrit' for its time axis")


def _linear_latency(p: Problem, m: Machine, fwd: float, n: int, P: int) -> float:
    """A linear recurrence's time for one forward pass ``fwd``; training adds the backward -- per element as
    measured on the course's own code (``Machine.scan_back_s``, split over ``P``), else TRAIN_FACTOR x."""
    if not p.training:
        return fwd
    if m.scan_back_s is None:
        return fwd * TRAIN_FACTOR
    return fwd + max(fwd, p.T * n * m.scan_back_s / P)


def cost_chunked(p: Problem, m: Machine, P: int | None = None) -> Cost:
    """Chapter 08's chunked scan over time on ``P`` threads: reduce (read a, x) + expand (read a, x,
    write h): 20 bytes per element instead of 12; few channels use SIMD lanes over time."""
    _need_linear(p, "chunked")
    P = m.compiled_threads if P is None else check_positive_int(P, "P")
    n = p.batch * p.nh
    c = Cost("chunked", p, P)
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
    _finish(c, m, rate=0.0, bw=m.bandwidth(P, 3 * ITEMSIZE * p.T * n))
    if lanes > 1 and m.lane_step_s is not None:  # measured: the course's lane scan at nh = 1, per step and call
        lat = math.ceil(p.T / P) * m.lane_step_s * n + m.lane_call_s
    else:
        lat = 2 * math.ceil(p.T / P) * m.step_latency_s * max(1.0, n / m.simd_lanes / 4) / lanes + m.lane_call_s
    lat = _linear_latency(p, m, lat, n, P)  # lane_call_s: the measured set-up of every chunked call
    c.parts["compute"] = lat
    c.seconds = max(lat, c.parts["memory"]) + c.parts["calls"] + c.parts["sync"]
    return c


def cost_channels(p: Problem, m: Machine, P: int | None = None) -> Cost:
    """Parallel over channel groups: each thread runs the whole time loop on ``B H / P`` channels."""
    _need_linear(p, "channels")
    n = p.batch * p.nh
    P = min(m.compiled_threads if P is None else check_positive_int(P, "P"), n)
    if P == 1:  # one group: the sequential loop itself, in one parallel region
        return replace(cost_sequential(p, m), method="channels", regions=1.0)
    c = Cost("channels", p, P)
    tr = _train(p)
    c.work = 2.0 * p.T * n * tr
    c.span = c.work / P
    c.bytes = 3 * ITEMSIZE * p.T * n * tr
    c.calls, c.regions = 1, tr
    c.counts = {"groups": P}
    _finish(c, m, rate=0.0, bw=m.bandwidth(P, 3 * ITEMSIZE * p.T * n))
    lat = _linear_latency(p, m, p.T * m.step_latency_s * max(1.0, n / P / m.simd_lanes / 4), n, P)
    measured = m.channel_seconds(p.T, n, P) if P > 1 else None
    if measured is not None:  # measured on the course's own channel scan: rows split between threads
        c.parts["memory"] = max(c.parts["memory"], tr * measured)
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
    iters = (m.mgrit_iterations(p.batch, p.T, p.nh, MGRIT_TOL) or MGRIT_ITERS) if iters is None else \
        check_positive_int(iters, "iters")
    if p.T < cf:
        raise ValueError(f"T: MGRIT needs at least m = {cf} time steps to coarsen, got {p.T}")
    mc = mgrit_counts(p.T, P, iters=iters, m=cf, levels=levels)
    f, b, k = step_cost(p, m, p.batch)
    c = Cost("mgrit", p, P)
    c.work, c.span = mc["work"] * f, mc["span"] * f
    c.bytes = mc["work"] * b
    c.calls = mc["work"] * (k + 4)  # + the solver's own bookkeeping per step
    c.regions = 6 * iters * (levels - 1) if P > 1 else 0
    c.counts = mc
    return _finish(c, m, rate=m.gemm_rate(p.batch, size=p.nh), bw=m.bandwidth(P), region_s=m.handoff_s)


def cost_deer(p: Problem, m: Machine, P: int | None = None, *, iters: int | None = None,
              method: str = "newton") -> Cost:
    """DEER / quasi-DEER (chapter 11): ``iters`` Newton iterations, each evaluating the cell and its
    Jacobian at every t at once (batched numpy; calls counted, :mod:`.counts`) and a matrix scan over time
    -- on one core by default, as the course's code runs (``P=`` prices a parallel scan) (full H x H
    Jacobians for DEER, diagonal for quasi-DEER): flops from the task graph, memory for the Jacobians."""
    method = check_choice(method, "method", ("newton", "quasi"))
    _need_nonlinear(p, method)
    P = 1 if P is None else check_positive_int(P, "P")  # the course's DEER: numpy on one core, sequential scan
    iters = DEER_ITERS[method] if iters is None else check_positive_int(iters, "iters")
    dc = deer_counts(p.T, p.nh, P, iters=iters, method=method)
    c = Cost(method, p, P)
    # training: the gradient is one transposed scan and a per-step vjp (deer.gru_gradient): about one
    # more iteration's work -- not TRAIN_FACTOR times the whole solve
    rows = p.batch * p.layers * ((iters + 1) / iters if p.training else 1.0)
    c.work, c.span = dc["work"] * rows, dc["span"] * rows
    # bytes and calls per iteration counted from the course's code (.counts); training adds the gradient
    b0, b1, b2 = _counted("deer_bytes", method)
    c.bytes = (iters + (1 if p.training else 0)) * p.batch * p.layers * p.T * (b0 + b1 * p.nh + b2 * p.nh * p.nh)
    dc_calls = _counted("deer_calls", method, p.mode)
    c.calls = (iters * dc_calls["iter"] + dc_calls["fixed"]) * p.layers
    c.regions = iters * 3 if P > 1 else 0
    c.counts = {**dc, "calls": c.calls}
    gbs = m.deer_gbs.get(method)
    if gbs is not None and P == 1:  # measured: the course's DEER moves its counted bytes at this rate here
        return _finish(c, m, rate=0.0, bw=1e9 * gbs, kernel=False)  # (its arithmetic is inside that rate)
    rate = m.gemm_rate(min(p.nh, 16) if method == "newton" else 1)
    return _finish(c, m, rate=rate / 2, bw=m.bandwidth(P), kernel=False)  # / 2: float64


def cost_cuda_chunked(p: Problem, m: Machine) -> Cost:
    """Chapter 08's reduce / scan / expand kernels on the machine's GPU (3 launches; 20 bytes/element,
    inputs and outputs copied over the bus)."""
    _need_linear(p, "cuda_chunked")
    if m.gpu is None:
        raise ValueError("machine: cuda_chunked needs a machine with a GPU (Machine.with_gpu)")
    g = m.gpu
    n = p.batch * p.nh
    c = Cost("cuda_chunked", p, 1)
    tr = _train(p)
    c.bytes = 5 * ITEMSIZE * p.T * n * tr
    c.calls = 3 * tr
    c.comm_bytes = 3 * ITEMSIZE * p.T * n
    c.counts = {"launches": 3 * tr}
    c.parts = {"compute": 0.0, "memory": c.bytes / (1e9 * g.bandwidth_gbs), "calls": c.calls * g.launch_s,
               "sync": 0.0, "communication": c.comm_bytes / (1e9 * g.transfer_gbs)}
    c.seconds = sum(c.parts.values())
    return c


def cost_cuda_batched(p: Problem, m: Machine) -> Cost:
    """One kernel per step and layer on the GPU (B x H threads, serial over time): T layers launches;
    a linear recurrence is one kernel looping over time (seed 001's serial kernel)."""
    if m.gpu is None:
        raise ValueError("machine: cuda_batched needs a machine with a GPU (Machine.with_gpu)")
    g = m.gpu
    c = Cost("cuda_batched", p, 1)
    tr = _train(p)
    if p.kind == "linear":
        n = p.batch * p.nh
        c.bytes = 3 * ITEMSIZE * p.T * n * tr
        c.calls = tr
        c.comm_bytes = 3 * ITEMSIZE * p.T * n
        lat = p.T * g.step_latency_s * tr
        c.parts = {"compute": lat, "memory": c.bytes / (1e9 * g.bandwidth_gbs), "calls": c.calls * g.launch_s,
                   "sync": 0.0, "communication": c.comm_bytes / (1e9 * g.transfer_gbs)}
        c.seconds = max(lat, c.parts["memory"]) + c.parts["calls"] + c.parts["communication"]
        return c
    f, b, _ = step_cost(p, m, p.batch)
    c.work = c.span = p.T * f
    c.bytes = p.T * (b + p.param_bytes())
    c.calls = p.T * (p.layers + (1 if p.ny else 0)) * tr
    c.comm_bytes = ITEMSIZE * p.T * p.batch * (p.n_in + max(p.ny, p.nh))
    rate = 1e9 * min(g.gflops, p.batch * 2.0 * g.bandwidth_gbs / ITEMSIZE)
    c.parts = {"compute": c.work / rate, "memory": c.bytes / (1e9 * g.bandwidth_gbs),
               "calls": c.calls * g.launch_s, "sync": 0.0, "communication": c.comm_bytes / (1e9 * g.transfer_gbs)}
    c.seconds = max(c.parts["compute"], c.parts["memory"]) + c.parts["calls"] + c.parts["communication"]
    return c


_COSTS = {"sequential": cost_sequential, "batched": cost_batched, "threads": cost_threads, "wavefront": cost_wavefront,
          "mpi": cost_mpi, "chunked": cost_chunked, "channels": cost_channels, "mgrit": cost_mgrit,
          "newton": lambda p, m, **o: cost_deer(p, m, method="newton", **o),
          "quasi": lambda p, m, **o: cost_deer(p, m, method="quasi", **o),
          "cuda_chunked": cost_cuda_chunked, "cuda_batched": cost_cuda_batched}


def predict(method: str, problem: Problem, machine: Machine | None = None, **opts) -> Cost:
    """The :class:`Cost` of ``method`` on ``problem`` on ``machine`` (default: this one, measured).
    Options: ``P=`` (workers) for parallel methods, ``iters=`` for mgrit/newton/quasi. Raises
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
    if not isinstance(problem, Problem):
        raise TypeError(f"problem: expected a Problem, got {type(problem).__name__}")
    if methods is not None and (isinstance(methods, str) or not hasattr(methods, "__iter__")):
        raise TypeError(f"methods: expected a list of names from {METHODS}, got {methods!r}")
    machine = Machine.measure() if machine is None else machine
    if methods is None:
        ok = [k for k, v in applicable(problem, machine).items() if v is None]
    else:
        ok = [check_choice(k, "methods", METHODS) for k in methods]
    return {k: predict(k, problem, machine, **opts.get(k, {})) for k in ok}


# =========================================================================== the advisor
