"""Measuring helpers for chapter 08 (linear recurrences and the scan) and ``benchmarks/scan.py``.

Everything is timed with :func:`course_lib.core.timing.compare` / :func:`~course_lib.core.timing.measure`
(interleaved, one process), and every function returns plain data (dicts, lists, the ``noise`` of the
run) -- the notebook prints, plots and draws verdicts from it. Sizes come from the caller, so nothing
here depends on ``COURSE_BUDGET``. Bytes: the recurrence reads ``a`` and ``x`` and writes ``h``,
``3 * itemsize`` bytes per element (12 for float32).

``methods_vs_T``       sequential / chunked (over time) / channels at one H over a list of T
``thread_scaling``     chunked on 1..p numba threads against the sequential loop
``stream_share``       the scans' rate as a share of the streaming rate (the same bytes, no dependency) measured in
                       the same run, and which limit applies here: the stream or the dependent loop
``crossover``          which of sequential / over channels / over time wins, for T x H
``crossover_sentence`` the printed reading of one row of that map, computed from its decided winners
``lanes_vs_scalar``    the same chunked kernel with and without SIMD lanes over time, one thread
``lane_instructions``  packed vs scalar float instructions in the lane kernel and the serial loop
``chunked_phases``     reduce / scan-of-carries / expand of the CPU scan, timed one by one
``cuda_phases``        the same for the three CUDA kernels (simulator without a GPU)
``scan_sweep``         one (T, H, method) point against the serial loop: the slider panel's data
``backward_speedup``   the backward pass: the reverse scan alone and the whole ``linear_recurrence_backward``
``layer_speedup``      a whole GILR-LSTM / SRU / QRNN layer, forward + backward, scan method vs method
``remember_first``     seed 001's table: time and epochs to 100% for the LSTM and the scan-based layer
"""
from __future__ import annotations

import numba
import numpy as np

from ..algorithms import scan, scan_kernels
from ..core import backend, timing
from ..core.validate import (check_alloc, check_alloc_of, check_array, check_choice, check_dtype, check_int, check_positive_int,
                             check_repeat, check_sizes)
from ..models import linear_rnn

__all__ = [
    "methods_vs_T",
    "thread_scaling",
    "stream_share",
    "limit_reason",
    "LIMITS",
    "crossover",
    "crossover_sentence",
    "lanes_vs_scalar",
    "lane_instructions",
    "chunked_phases",
    "cuda_phases",
    "scan_sweep",
    "backward_speedup",
    "layer_speedup",
    "remember_first",
    "PHASES",
]

PHASES = ("reduce", "scan", "expand")
LIMITS = ("stream", "dependent loop")
_SCANS_PER_PASS = {"gilr_lstm": 2, "sru": 1, "qrnn": 1}


def _methods(a, x, h0, out, methods):
    calls = {}
    for m in methods:
        if m == "sequential":
            calls[m] = lambda: scan.linear_recurrence(a, x, h0, out=out)
        elif m in ("chunked", "channels"):
            calls[m] = lambda m=m: scan.linear_recurrence(a, x, h0, method=m, out=out)
        else:
            calls[m] = lambda m=m: scan.linear_recurrence(a, x, h0, method=m)
    return calls


# --------------------------------------------------------------------------- sweeps
def _sizes(T: int, nh: int, seed: int, name: str = "T") -> tuple[int, int, int]:
    """``T``, ``nh`` and ``seed`` checked, the float32 ``(T, nh)`` arrays a, x, h bounded before allocating."""
    T, nh = check_positive_int(T, name), check_positive_int(nh, "nh")
    check_alloc_of(np.float32, "a, x and h", **{name: T, "nh": nh})
    return T, nh, check_int(seed, "seed", low=0)


def _scan_methods(methods, name: str = "methods") -> tuple:
    if isinstance(methods, str) or not hasattr(methods, "__iter__"):
        raise TypeError(f"{name}: expected a list of names from {scan.METHODS[:-1]}, got {methods!r}")
    methods = tuple(check_choice(m, f"{name}[i]", scan.METHODS[:-1]) for m in methods)
    if not methods:
        raise ValueError(f"{name}: expected at least one method name, got none")
    return methods


def methods_vs_T(sizes, nh: int = 128, *, methods=("sequential", "chunked", "channels"), repeat: int = 3,
                 seed: int = 0) -> dict:
    """Each method against the sequential loop at every T in ``sizes``, H channels, float32, results
    written into one preallocated array (a fresh result array costs page faults that threads cannot
    share). Returns ``{"nh", "rows": [{"T", "seconds": {method: median s}, "gbs": {method: GB/s},
    "speedup": {method: x sequential}, "comparison": that T's Comparison}], "noise"}``."""
    sizes = check_sizes(sizes, "sizes")
    _, nh, seed = _sizes(max(sizes), nh, seed, "sizes")
    methods = _scan_methods(methods)
    repeat = check_repeat(repeat)
    a_all, x_all, h0 = scan.random_problem(max(sizes), nh, seed=seed)
    out_all = np.empty_like(a_all)
    rows, noise = [], timing.Noise()
    for T in sizes:
        a, x, out = a_all[:T], x_all[:T], out_all[:T]
        cmp = timing.compare(repeat=repeat, **_methods(a, x, h0, out, ("sequential",) + tuple(m for m in methods if m != "sequential")))
        noise = noise | cmp.noise
        secs = {k: t.median for k, t in cmp.timings.items()}
        nbytes = 3 * a.nbytes
        rows.append({"T": T, "seconds": secs, "gbs": {k: nbytes / v / 1e9 for k, v in secs.items()},
                     "speedup": {k: cmp.speedup(k) for k in secs}, "comparison": cmp})
    return {"nh": nh, "rows": rows, "noise": noise}


def thread_scaling(T: int, nh: int = 128, *, repeat: int = 3, seed: int = 0) -> dict:
    """``method="chunked"`` on 1, 2, ... numba threads and the sequential loop, interleaved in one
    run. Returns ``{"T", "nh", "rows": [{"threads", "seconds", "speedup", "gbs"}], "sequential_seconds",
    "sequential_gbs", "noise"}`` (speed-ups over the sequential loop)."""
    T, nh, seed = _sizes(T, nh, seed)
    repeat = check_repeat(repeat)
    a, x, h0 = scan.random_problem(T, nh, seed=seed)
    out = np.empty_like(a)
    p = int(numba.config.NUMBA_NUM_THREADS)
    fns = {"sequential": lambda: scan.linear_recurrence(a, x, h0, out=out)}
    for n in range(1, p + 1):
        fns[f"chunked_{n}"] = backend.on_threads(n, lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=out))
    cmp = timing.compare(repeat=repeat, **fns)
    nbytes = 3 * a.nbytes
    rows = [{"threads": n, "seconds": cmp.timings[f"chunked_{n}"].median, "speedup": cmp.speedup(f"chunked_{n}"),
             "gbs": nbytes / cmp.timings[f"chunked_{n}"].median / 1e9} for n in range(1, p + 1)]
    seq = cmp.timings["sequential"].median
    return {"T": T, "nh": nh, "rows": rows, "sequential_seconds": seq, "sequential_gbs": nbytes / seq / 1e9,
            "noise": cmp.noise}


def stream_share(T: int, nh: int = 128, *, methods=("chunked", "channels"), chunks=(), repeat: int = 5,
                 seed: int = 0) -> dict:
    """The scans against the bytes they move, interleaved in one run: ``scan_kernels.stream`` (``h = a + x``: read
    ``a``, ``x``, write ``h``, no dependency) on all numba threads and on one, the one-thread sequential loop, and
    each of ``methods`` (plus ``method="chunked"`` with ``chunk=c`` for every ``c`` in ``chunks``, named
    ``"chunked, chunk=c"``), all into one preallocated ``h``. Two limits bound a scan here:

    * the **stream**: the faster stream's rate (GB/s, 12 bytes per float32 element);
    * the **dependent loop**: the threads times the best one-thread scan measured here (``"loop, 1 thread"`` or
      ``"chunked, 1 thread"``: the chain of dependent multiply-adds, with the SIMD lanes over time
      :func:`course_lib.algorithms.scan.choose_lanes` gives a channel) -- what the arithmetic allows when every
      thread runs its share as fast as one thread runs it alone. ``lanes_ceiling_gbs``: the loop's rate times the
      lanes times the threads, what perfect lanes would give (they cost extra passes that make the windows:
      ``log2 lanes`` doubling passes, or two passes in L1 for one channel on 16 lanes, ``algorithms.scan_lanes``).

    Returns ``{"T", "nh", "threads", "lanes", "gbs": {name: GB/s of its median}, "stream_gbs", "loop_bound_gbs",
    "lanes_ceiling_gbs", "limit": "stream" | "dependent loop" (the lower of the two), "limit_gbs", "share": {scan: its
    rate / the stream's, median pair ratio}, "share_interval": {scan: (lo, hi)}, "of_limit": {scan: its rate / the
    limit's}, "kernel": {scan: scan.kernel_for's name}, "comparison", "noise"}``."""
    T, nh, seed = _sizes(T, nh, seed)
    methods = _scan_methods(methods)
    if isinstance(chunks, (str, bytes)) or not hasattr(chunks, "__iter__"):
        raise TypeError(f"chunks: expected a list of steps per chunk, got {chunks!r}")
    chunks = tuple(check_int(c, "chunks[i]", low=1, high=T) for c in chunks)
    repeat = check_repeat(repeat)
    a, x, h0 = scan.random_problem(T, nh, seed=seed)
    h = np.empty_like(a)
    p = backend.get_threads()
    fns = {"stream": lambda: scan_kernels.stream(a, x, h),
           "stream, 1 thread": backend.on_threads(1, lambda: scan_kernels.stream(a, x, h)),
           "loop, 1 thread": lambda: scan.linear_recurrence(a, x, h0, out=h),
           "chunked, 1 thread": backend.on_threads(1, lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=h))}
    fns.update({m: (lambda m=m: scan.linear_recurrence(a, x, h0, method=m, out=h)) for m in methods})
    fns.update({f"chunked, chunk={c}": (lambda c=c: scan.linear_recurrence(a, x, h0, method="chunked", chunk=c, out=h))
                for c in chunks})
    cmp = timing.compare(repeat=repeat, **fns)
    nbytes = 3 * a.nbytes
    gbs = {k: nbytes / t.median / 1e9 for k, t in cmp.timings.items()}
    ref = max(("stream", "stream, 1 thread"), key=lambda k: gbs[k])
    lanes = scan.choose_lanes(nh, a.dtype.itemsize)
    one = max(("loop, 1 thread", "chunked, 1 thread"), key=lambda k: gbs[k])
    loop_bound = gbs[one] * p
    limit = "stream" if gbs[ref] <= loop_bound else "dependent loop"
    limit_gbs = min(gbs[ref], loop_bound)
    scans = [k for k in fns if not k.startswith(("stream", "loop")) and k != "chunked, 1 thread"]
    return {"T": T, "nh": nh, "threads": p, "lanes": lanes, "gbs": gbs, "stream_gbs": gbs[ref], "one_thread": one,
            "loop_bound_gbs": loop_bound, "lanes_ceiling_gbs": gbs["loop, 1 thread"] * lanes * p,
            "limit": limit, "limit_gbs": limit_gbs,
            "share": {k: cmp.ratio(ref, to=k) for k in scans},
            "share_interval": {k: cmp.ratio_interval(ref, to=k) for k in scans},
            "of_limit": {k: gbs[k] / limit_gbs for k in scans},
            "kernel": {k: scan.kernel_for(a, x, method=k.split(",")[0],
                                          **({"chunk": int(k.split("=")[1])} if "=" in k else {})) for k in scans},
            "comparison": cmp, "noise": cmp.noise}


def limit_reason(r: dict) -> str:
    """The sentence naming the limit that applies in a :func:`stream_share` result (measured, not assumed)."""
    loop = (f"{r['threads']} thread(s) x the best one-thread scan ({r['one_thread']}: {r['gbs'][r['one_thread']]:.1f} "
            f"GB/s, {r['lanes']} SIMD lane(s) per channel) = {r['loop_bound_gbs']:.1f} GB/s")
    if r["limit"] == "stream":
        return (f"memory is the limit here: the stream moves the same bytes at {r['stream_gbs']:.1f} GB/s, below what "
                f"the dependent loop allows ({loop})")
    return f"the dependent loop is the limit here: {loop}, below the stream's {r['stream_gbs']:.1f} GB/s for the same bytes"


def crossover(Ts, Hs, *, repeat: int = 3, max_elements: int = 1 << 24, seed: int = 0) -> dict:
    """The crossover map: at every ``(T, H)`` with ``T * H <= max_elements``, the sequential loop,
    ``"channels"`` (parallel over channels) and ``"chunked"`` (parallel over time, SIMD lanes for few
    channels) are timed interleaved. The winner is the fastest method, but the sequential loop keeps
    the cell unless another method is at least 5% faster (on small problems ``"chunked"`` *is* the
    sequential loop, and a coin toss should not paint the map). ``"decided"`` says whether the
    interleaved pairs support that winner on their own (busy machine or not): another method at
    least 5% faster in the pairs' interval, or the sequential loop not beaten by 5% by either.
    Returns ``{"Ts", "Hs", "cells": {(T, H): {"seconds": {...}, "speedup": {...}, "winner": name,
    "decided": bool}}, "noise"}``."""
    max_elements = check_positive_int(max_elements, "max_elements")
    Ts = check_sizes(Ts, "Ts", high=max_elements)  # a cell with T * H > max_elements is never timed
    Hs = check_sizes(Hs, "Hs", high=max_elements)
    check_alloc((3, max_elements), np.float32, "max_elements", what="a, x and h")
    repeat = check_repeat(repeat)
    seed = check_int(seed, "seed", low=0)
    cells, noise = {}, timing.Noise()
    for H in Hs:
        for T in Ts:
            if T * H > max_elements:
                continue
            a, x, h0 = scan.random_problem(T, H, seed=seed)
            out = np.empty_like(a)
            cmp = timing.compare(repeat=repeat, **_methods(a, x, h0, out, ("sequential", "channels", "chunked")))
            noise = noise | cmp.noise
            secs = {k: t.median for k, t in cmp.timings.items()}
            best = min(secs, key=secs.get)
            winner = best if cmp.speedup(best) >= 1.05 else "sequential"
            others = [k for k in secs if k != cmp.baseline]
            decided = (cmp.faster(winner, by=1.05) == "yes" if winner != cmp.baseline
                       else all(cmp.faster(k, by=1.05) == "no" for k in others))
            cells[(T, H)] = {"seconds": secs, "speedup": {k: cmp.speedup(k) for k in secs}, "winner": winner,
                             "decided": decided}
    return {"Ts": Ts, "Hs": Hs, "cells": cells, "noise": noise}


_WHO = {"sequential": "the serial loop", "channels": "parallel over channels", "chunked": "parallel over time"}


def crossover_sentence(row) -> str:
    """The reading of one row of :func:`crossover`'s map, from its *decided* cells only: ``row`` is a list of
    ``(H, winner)`` for the H the pairs decide, in any order. Says where parallel over time won and what won
    at smaller, in-between and larger H -- each clause only where such H exist (so a row whose loop wins at
    small H and the scan at the largest never reads "at larger H the serial loop took over"). An empty
    string when ``row`` is empty."""
    row = sorted((check_positive_int(h, "H"), check_choice(w, "winner", tuple(_WHO))) for h, w in row)
    if not row:
        return ""

    def who(cells):
        return " or ".join(sorted({_WHO[w] for _, w in cells}))

    wins = [h for h, w in row if w == "chunked"]
    if not wins:
        return f"Parallel over time won by 5% at none of the H the pairs decide ({[h for h, _ in row]}) at this T."
    below = [(h, w) for h, w in row if w != "chunked" and h < min(wins)]
    inside = [(h, w) for h, w in row if w != "chunked" and min(wins) < h < max(wins)]
    above = [(h, w) for h, w in row if w != "chunked" and h > max(wins)]
    parts = [f"at smaller H ({[h for h, _ in below]}) {who(below)} won" if below else "",
             f"between them ({[h for h, _ in inside]}) {who(inside)} won" if inside else "",
             f"at larger H ({[h for h, _ in above]}) {who(above)} took over" if above else ""]
    parts = [p for p in parts if p] or ["no other H was decided"]
    return f"Parallel over time won, by 5% or more in the timed pairs, for H in {wins}; " + "; ".join(parts) + "."


def lanes_vs_scalar(T: int, nh: int = 1, *, repeat: int = 5, seed: int = 0) -> dict:
    """One thread: the sequential loop, and ``"chunked"`` with 1 lane per channel (the channel loop)
    and with :func:`~course_lib.algorithms.scan.choose_lanes` lanes (SIMD lanes over time).
    Returns ``{"T", "nh", "lanes", "seconds": {...}, "speedup": {...}, "noise"}``."""
    T, nh, seed = _sizes(T, nh, seed)
    repeat = check_repeat(repeat)
    a, x, h0 = scan.random_problem(T, nh, seed=seed)
    out = np.empty_like(a)
    K = scan.choose_lanes(nh, a.dtype.itemsize)
    L = scan.chunk_steps(nh, a.dtype.itemsize)
    fns = {"sequential": lambda: scan.linear_recurrence(a, x, h0, out=out),
           "scalar chunks": backend.on_threads(1, lambda: scan.linear_recurrence(a, x, h0, method="chunked", lanes=1,
                                                                           chunk=L, out=out)),
           f"{K} lanes": backend.on_threads(1, lambda: scan.linear_recurrence(a, x, h0, method="chunked", lanes=K,
                                                                       chunk=L, out=out))}
    cmp = timing.compare(repeat=repeat, **fns)
    secs = {k: t.median for k, t in cmp.timings.items()}
    return {"T": T, "nh": nh, "lanes": K, "seconds": secs, "speedup": {k: cmp.speedup(k) for k in secs},
            "noise": cmp.noise}


def lane_instructions(dtype: str = "float32") -> dict:
    """Packed (SIMD) vs scalar multiply/add instructions in the machine code of the loop that runs one channel's
    SIMD lanes over time here, and of the serial loop (``scan_kernels.sequential``), as chapter 04 counts them
    (:func:`course_lib.experiments.matmul.simd_ops`; recompiles, a second or two each). The lane loop is the one the
    chunked scan of ONE channel of ``dtype`` runs with the lanes :func:`~course_lib.algorithms.scan.choose_lanes` gives
    it here: ``scan_lanes.rows_scan`` where :func:`~course_lib.algorithms.scan_kernels.flat_lanes` says those lanes
    run :mod:`~course_lib.algorithms.scan_lanes`, else the doubling pass ``scan_kernels.level``. Returns
    ``{"lane kernel": {...}, "serial loop": {...}}``, each with the counts and ``"function"`` (the one counted)."""
    dtype = check_dtype(dtype, "dtype")
    from numba import typeof

    from ..algorithms import scan_lanes
    from .matmul import simd_ops

    v = typeof(np.zeros(4, np.dtype(dtype)))
    m = typeof(np.zeros((2, 2), np.dtype(dtype)))
    i = typeof(1)
    if scan_kernels.flat_lanes(1, scan.choose_lanes(1, np.dtype(dtype).itemsize)):   # the loop scan_kernels runs
        lane = dict(simd_ops(scan_lanes.rows_scan, (v, v, v, v)), function="scan_lanes.rows_scan")
    else:
        lane = dict(simd_ops(scan_kernels.level, (v, v, v, v, i, i)), function="scan_kernels.level")
    return {"lane kernel": lane, "serial loop": dict(simd_ops(scan_kernels.sequential, (m, m, v, m)),
                                                    function="scan_kernels.sequential")}


# --------------------------------------------------------------------------- phases
def chunked_phases(a, x, h0=None, *, chunks: int = 8, repeat: int = 3) -> dict:
    """Time the textbook chunked scan's phases one by one on one thread (best of ``repeat``, after a
    warm-up): reduce, scan of the chunk carries, expand. Returns ``{"chunks", "<phase>_s",
    "<phase>_frac", "noise"}`` (compare with the seed's GPU split)."""
    repeat = check_repeat(repeat)
    _finite(a, x, h0)
    steps = scan.phase_steps(a, x, h0, chunks=chunks)
    for p in PHASES:  # warm-up in order, so the carries exist before the first expand
        steps[p]()
    ts = {p: timing.measure(steps[p], repeat=repeat, warmup=0) for p in PHASES}
    return _phase_dict(ts, {"chunks": steps["chunks"]})


def cuda_phases(a, x, h0=None, *, block: int | None = None, chunk: int | None = None, repeat: int = 1) -> dict:
    """Time the three CUDA kernels one by one (best of ``repeat`` after one warm-up launch each).
    Returns ``{"mode": "gpu" | "simulator", "block", "chunk", "grid", "<phase>_s", "<phase>_frac",
    "noise"}``; simulator time is Python threads on the CPU and says little about a GPU."""
    from ..algorithms import scan_cuda

    repeat = check_repeat(repeat)
    _finite(a, x, h0)
    steps = scan_cuda.phase_steps(a, x, h0, block=block, chunk=chunk)
    for p in PHASES:
        steps[p]()
    ts = {p: timing.measure(steps[p], repeat=repeat, warmup=0, number=1) for p in PHASES}
    return _phase_dict(ts, {"mode": backend.cuda_mode(), "block": steps["block"], "chunk": steps["chunk"],
                            "grid": steps["grid"]})


def _finite(a, x, h0) -> None:
    """Timing a scan of NaN/inf says nothing: refuse them (shapes are the scan's own check)."""
    for name, arr in (("a", a), ("x", x), ("h0", h0)):
        if arr is not None:
            check_array(arr, name, ndim=range(1, 4))


def _phase_dict(ts: dict, extra: dict) -> dict:
    best = {p: t.min for p, t in ts.items()}
    total = sum(best.values())
    noise = timing.Noise()
    for t in ts.values():
        noise = noise | t.noise
    return {**extra, **{f"{p}_s": v for p, v in best.items()}, **{f"{p}_frac": v / total for p, v in best.items()},
            "noise": noise}


# --------------------------------------------------------------------------- slider data
SWEEP_METHODS = ("sequential", "chunked", "channels", "blelloch", "hillis_steele")


def scan_sweep(T: int = 4096, nh: int = 128, method: str = "chunked", chunks: int = 0,
               threads: int = 0, seed: int = 0, repeat: int = 3) -> dict:
    """Time one method against the sequential loop at (T, H) float32, interleaved. ``chunks=0`` /
    ``threads=0`` mean "automatic" / "all". Returns times, GB/s (12 bytes per element), the speed-up,
    the max relative error against the sequential loop and the run's ``noise``."""
    check_choice(method, "method", SWEEP_METHODS)
    T = check_positive_int(T, "T", high=1 << 22)
    nh = check_positive_int(nh, "nh", high=4096)
    chunks = check_int(chunks, "chunks", low=0, high=T)
    threads = check_int(threads, "threads", low=0, high=int(numba.config.NUMBA_NUM_THREADS))
    seed, repeat = check_int(seed, "seed", low=0), check_repeat(repeat)
    a, x, h0 = scan.random_problem(T, nh, seed=seed)
    opts = {"chunks": chunks} if (method == "chunked" and chunks) else {}
    fn = lambda: scan.linear_recurrence(a, x, h0, method=method, **opts)  # noqa: E731
    if threads:
        fn = backend.on_threads(threads, fn)
    ref = lambda: scan.linear_recurrence(a, x, h0)  # noqa: E731
    cmp = timing.compare(repeat=repeat, sequential=ref, method=fn)
    h, r = fn(), ref()
    err = float(np.max(np.abs(h - r)) / max(1.0, float(np.max(np.abs(r)))))
    t_m, t_s = cmp.timings["method"].median, cmp.timings["sequential"].median
    nbytes = 3 * a.nbytes
    return {"T": T, "nh": nh, "method": method, "seconds": t_m, "sequential_seconds": t_s,
            "speedup": t_s / t_m, "gbs": nbytes / t_m / 1e9, "sequential_gbs": nbytes / t_s / 1e9,
            "max_rel_error": err, "noise": cmp.noise,
            "chunks": (chunks or scan.choose_chunks(T, nh)) if method == "chunked" else None}


# --------------------------------------------------------------------------- seed 001's layer experiments
def backward_speedup(T: int, nh: int = 1, *, method: str = "chunked", repeat: int = 3, seed: int = 3) -> dict:
    """The backward pass of ``h = linear_recurrence(a, x, h0)`` with ``method`` against the serial one,
    float32, timed twice in one interleaved run: the reverse scan alone (the forward code on the
    time-reversed ``a_{t+1}`` and ``dL/dh``, into a preallocated array -- what a scan method
    parallelises) and the whole :func:`~course_lib.algorithms.scan.linear_recurrence_backward` call
    (which also reverses its inputs and forms ``dL/da``). Returns ``{"T", "nh", "method", "ms":
    {"scan_seq", "scan_par", "whole_seq", "whole_par"}, "scan_speedup", "whole_speedup",
    "scan_share" (the serial reverse scan's share of the serial backward), "max_rel_diff", "noise"}``."""
    T, nh, seed = _sizes(T, nh, seed)
    method = check_choice(method, "method", scan.METHODS[:-1])
    repeat = check_repeat(repeat)
    a, x, h0 = scan.random_problem(T, nh, seed=seed)
    h = scan.linear_recurrence(a, x, h0)
    g = np.random.default_rng(seed + 1).standard_normal(a.shape).astype(np.float32)
    a_rev = np.concatenate([np.zeros((1, nh), np.float32), a[:0:-1]])  # a_{t+1}, reversed in time
    g_rev = np.ascontiguousarray(g[::-1])
    out = np.empty_like(a)
    zero = np.zeros(nh, np.float32)
    ref = scan.linear_recurrence_backward(a, h, h0, g)
    got = scan.linear_recurrence_backward(a, h, h0, g, method=method)
    diff = max(float(np.max(np.abs(r - q)) / max(1.0, float(np.max(np.abs(r))))) for r, q in zip(ref, got))
    scan_par = _methods(a_rev, g_rev, zero, out, (method,))[method]
    cmp = timing.compare(repeat=repeat,
                         scan_seq=lambda: scan.linear_recurrence(a_rev, g_rev, zero, out=out),
                         scan_par=scan_par,
                         whole_seq=lambda: scan.linear_recurrence_backward(a, h, h0, g),
                         whole_par=lambda: scan.linear_recurrence_backward(a, h, h0, g, method=method))
    ms = {k: 1e3 * t.median for k, t in cmp.timings.items()}
    return {"T": T, "nh": nh, "method": method, "ms": ms, "scan_speedup": ms["scan_seq"] / ms["scan_par"],
            "whole_speedup": ms["whole_seq"] / ms["whole_par"], "scan_share": ms["scan_seq"] / ms["whole_seq"],
            "max_rel_diff": diff, "noise": cmp.noise}


def layer_speedup(layer: str = "sru", T: int = 1 << 16, batch: int = 1, nx: int = 4, nh: int = 4, *,
                  methods=("sequential", "channels", "chunked"), dtype: str = "float32", repeat: int = 3,
                  seed: int = 0) -> dict:
    """Seed 001's end-to-end experiment: one whole layer, forward + backward, with each scan method,
    interleaved; and the same layer's scans alone (forward scans + reverse scans, as the layer
    calls them) to say how much of the layer the scan is.

    Returns ``{"layer", "T", "B", "nx", "nh", "layer_seconds": {method: s}, "layer_speedup": {method: x
    first method}, "scan_seconds": {...}, "scan_speedup": {...}, "scan_share": share of the first
    method's layer time spent in its scans, "amdahl": {method: layer speed-up predicted from the
    share and that method's scan speed-up}, "cap": the layer speed-up with an infinitely fast scan,
    "noise"}``."""
    check_choice(layer, "layer", tuple(_SCANS_PER_PASS))
    T = check_positive_int(T, "T")
    batch = check_positive_int(batch, "batch")
    nx, nh = check_positive_int(nx, "nx"), check_positive_int(nh, "nh")
    dtype = check_dtype(dtype, "dtype").name
    seed = check_int(seed, "seed", low=0)
    repeat = check_repeat(repeat)
    check_alloc_of(np.float64, "the inputs", T=T, batch=batch, nx=nx)
    check_alloc_of(np.float64, "the states and gates", factor=4, T=T, batch=batch, nh=nh)
    methods = _scan_methods(methods)
    rng = np.random.default_rng(seed)
    params = linear_rnn.init_params(layer, nx, nh, seed=seed, dtype=dtype)
    X = rng.standard_normal((T, batch, nx)).astype(dtype)
    dHs = rng.standard_normal((T, batch, nh)).astype(dtype)

    def step(m):
        Hs, cache = linear_rnn.forward(params, X, method=m)
        return linear_rnn.backward(params, cache, dHs, method=m)

    ref_grads = step(methods[0])[0]
    for m in methods[1:]:  # every method computes the same layer
        got = step(m)[0]
        for k, g, v in zip(ref_grads.names(), got.arrays(), ref_grads.arrays()):
            if not np.allclose(g, v, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(v).max()))):
                raise AssertionError(f"method {m!r}: gradient {k} differs from method {methods[0]!r}")
    lay = timing.compare(repeat=repeat, **{m: (lambda m=m: step(m)) for m in methods})

    a = rng.uniform(0.5, 1.0, (T, batch, nh)).astype(dtype)
    u = rng.standard_normal((T, batch, nh)).astype(dtype)
    hs = scan.linear_recurrence(a, u)
    n = _SCANS_PER_PASS[layer]

    def scans(m):
        for _ in range(n):
            scan.linear_recurrence(a, u, method=m)
            scan.linear_recurrence_backward(a, hs, None, u, method=m)

    sc = timing.compare(repeat=repeat, **{m: (lambda m=m: scans(m)) for m in methods})
    base = methods[0]
    share = min(1.0, sc.timings[base].median / lay.timings[base].median)
    amdahl = {m: 1.0 / ((1 - share) + share / sc.speedup(m)) for m in methods}
    return {"layer": layer, "T": T, "B": batch, "nx": nx, "nh": nh, "dtype": dtype,
            "layer_seconds": {m: lay.timings[m].median for m in methods},
            "layer_speedup": {m: lay.speedup(m) for m in methods},
            "scan_seconds": {m: sc.timings[m].median for m in methods},
            "scan_speedup": {m: sc.speedup(m) for m in methods},
            "scan_share": share, "amdahl": amdahl, "cap": 1.0 / max(1e-9, 1 - share),
            "layer_interval": {m: lay.speedup_interval(m) for m in methods if m != base},
            "noise": lay.noise | sc.noise}


def remember_first(T: int, *, layers=("lstm", "gilr_lstm"), method: str = "chunked", **train_kw) -> dict:
    """Seed 001's table: each layer trained on the remember-the-first-element task at length T with
    :func:`course_lib.models.linear_rnn.train_remember_first` (same settings, same data), and the
    wall time and epochs until the held-out set was 100% right. ``method`` is the scan method of the
    scan-based layers. Returns ``{"T", "rows": [{"layer", "converged", "epochs", "seconds",
    "seconds_per_epoch", "final_accuracy"}], "results": {layer: TrainResult}}``."""
    T = check_positive_int(T, "T")
    check_choice(method, "method", scan.METHODS[:-1])
    if isinstance(layers, str) or not hasattr(layers, "__iter__"):
        raise TypeError(f"layers: expected a list of names from {linear_rnn.LAYERS}, got {layers!r}")
    layers = [check_choice(layer, "layers[i]", linear_rnn.LAYERS) for layer in layers]
    if not layers:
        raise ValueError("layers: expected at least one layer name, got none")
    rows, results = [], {}
    for layer in layers:
        res = linear_rnn.train_remember_first(layer, T, method=method, **train_kw)
        results[layer] = res
        rows.append({"layer": layer, "converged": res.info["converged"], "epochs": res.info["epochs"],
                     "seconds": res.seconds, "seconds_per_epoch": res.seconds / max(1, res.info["epochs"]),
                     "final_accuracy": res.history["val_accuracy"][-1]})
    return {"T": T, "rows": rows, "results": results}
