"""Measuring helpers for chapter 08's "the scan as matmuls" and the MPI split, and ``benchmarks/scan.py``.

The loop, the element-wise scan over the flattened state and the chunked matmul form of the gated linear
recurrence (:mod:`course_lib.algorithms.linear_attention`), timed interleaved in one process with
:func:`course_lib.core.timing.compare`; the chunked form's rate against this machine's GEMM peak measured
in the same process (:func:`course_lib.core.timing.peak_gflops`). Plain data out; sizes from the caller.

``gemm_peak``        GEMM peak (float32, all cores), GFLOP/s
``methods_vs_T``     time per token of loop / scan / chunked over T, the chunked form's % of the GEMM peak
``chunk_sweep``      time per token of the chunked form over chunk sizes at one T
``product_share``    the chunked form's time in matrix products vs the rest, from the whole call timed beside its
                     products alone
``provider_race``    the chunked form at one chunk with its products on each GEMM library this machine has
``stage_times``      the chunked form on one thread, stage by stage: each product's shape and rate, each fused
                     element-wise pass, the validation and layout, against the whole call
``matmul_sweep``     one (T, chunk, d) point: the widget's data
``mpi_split``        the element-wise scan and the chunked form on 1 and more MPI ranks, with the message
                     bytes and the ping-pong latency: where splitting the sequence pays
"""
from __future__ import annotations

import numpy as np

from ..algorithms import gemm as gemm_lib, linear_attention as la, linear_attention_kernels as lak, scan
from ..core import backend, timing
from ..core.validate import (check_alloc_of, check_choice, check_float, check_int, check_positive_int, check_repeat,
                             check_sizes)
from ..parallel import mpi_pingpong, mpi_scan

__all__ = ["METHODS", "gemm_peak", "methods_vs_T", "chunk_sweep", "product_share", "provider_race", "stage_times",
           "matmul_sweep",
           "mpi_split"]

METHODS = ("sequential", "scan", "chunked")


def gemm_peak(threads: int | None = None, n: int = 1024, repeat: int = 5) -> float:
    """float32 GEMM peak in GFLOP/s on ``threads`` BLAS threads (default all cores): the best ``(n, n) @ (n, n)``
    of ``repeat`` runs, measured now (not cached: the thread count is part of what is measured)."""
    threads = backend.cpu_count() if threads is None else check_positive_int(threads, "threads", high=1024)
    n = check_positive_int(n, "n", high=8192)
    repeat = check_repeat(repeat)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    out = np.empty((n, n), np.float32)
    with backend.blas_threads(threads):
        t = timing.measure(np.matmul, a, b, out=out, repeat=repeat, warmup=1, number=1)
    return timing.gemm_flops(n, n, n) / t.min / 1e9


def _gemm_call(n: int = 1024):
    """``(fn, flops)``: a zero-argument ``(n, n) @ (n, n)`` float32 GEMM on all cores, to be timed interleaved with the
    chunked form, so that the peak and the call see the same load (a peak measured once, before, does not). Time it
    with ``compare(settle=True)``: its BLAS pool spins after each call, and a chunked call timed right after it shared
    the cores with those threads (it measured up to 2x slower here)."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    out = np.empty((n, n), np.float32)

    def gemm():
        with backend.blas_threads(backend.cpu_count()):
            np.matmul(a, b, out=out)
    return gemm, timing.gemm_flops(n, n, n)


def _check_common(T_max, d, repeat, seed, peak, chunk=None):
    """The arguments every sweep shares, checked before anything is allocated or measured."""
    check_alloc_of(np.float32, "q, k, v", T=T_max, d=d)
    if chunk is not None:
        check_positive_int(chunk, "chunk")
    return (check_repeat(repeat), check_int(seed, "seed", low=0),
            None if peak is None else check_float(peak, "peak", low=0.0, low_inclusive=False))


def _problem(T, d, seed, heads=1):
    return la.random_problem(T, 1, heads, d, d, low=0.9, high=1.0, seed=seed)


def _calls(q, k, v, dec, methods, chunk):
    calls = {}
    for m in methods:
        c = chunk if m == "chunked" else None
        calls[m] = lambda m=m, c=c: la.gated_linear_recurrence(q, k, v, dec, method=m, chunk=c)
    return calls


def methods_vs_T(sizes, d: int = 64, *, chunk: int | None = None, methods=METHODS, repeat: int = 3,
                 max_scan_elements: int = 1 << 28, seed: int = 0, peak: float | None = None) -> dict:
    """Each method at every T in ``sizes`` (one head, ``d_k = d_v = d``, float32). The scan is left out where
    ``T d^2`` passes ``max_scan_elements`` (it moves ~20 bytes per state entry and step). Returns
    ``{"d", "chunk", "peak", "rows": [{"T", "per_token": {method: s}, "gflops": chunked GFLOP/s,
    "pct_peak", "x_scan", "x_sequential" (the chunked form's median pair speed-up over each), "x_scan_interval",
    "x_sequential_interval" (where it lies), "noise" (this T's run)}], "noise"}`` (every run's)."""
    d = check_positive_int(d, "d", high=1024)
    sizes = check_sizes(sizes, "sizes", high=1 << 22)
    if isinstance(methods, str) or not hasattr(methods, "__iter__"):
        raise TypeError(f"methods: expected a list of names from {METHODS}, got {methods!r}")
    methods = [check_choice(m, "methods", METHODS) for m in methods]
    if not methods:
        raise ValueError("methods: expected at least one method name, got none")
    max_scan_elements = check_positive_int(max_scan_elements, "max_scan_elements")
    repeat, seed, peak = _check_common(max(sizes), d, repeat, seed, peak, chunk)
    peak = gemm_peak() if peak is None else peak
    rows, noise = [], timing.Noise()
    for T in sizes:
        q, k, v, dec = _problem(T, d, seed)
        ms = [m for m in methods if m != "scan" or T * d * d <= max_scan_elements]
        cmp = timing.compare(repeat=repeat, **_calls(q, k, v, dec, ms, chunk))
        noise = noise | cmp.noise
        secs = {m: t.median for m, t in cmp.timings.items()}
        row = {"T": T, "per_token": {m: s / T for m, s in secs.items()}}
        if "chunked" in secs:
            c = min(T, chunk or la.default_chunk(T, d))
            row["gflops"] = la.chunked_flops(T, d, d, c) / secs["chunked"] / 1e9
            row["pct_peak"] = 100 * row["gflops"] / peak
            row["chunk"] = c
            for other in ("scan", "sequential"):
                if other in secs:     # the median pair ratio, and where it lies (the pairs' interval)
                    row[f"x_{other}"] = cmp.speedup("chunked", over=other)
                    row[f"x_{other}_interval"] = cmp.speedup_interval("chunked", over=other)
        row["noise"] = cmp.noise
        rows.append(row)
    return {"d": d, "chunk": chunk, "peak": peak, "rows": rows, "noise": noise}


def chunk_sweep(T: int, d: int = 64, chunks=(16, 32, 64, 128, 256), *, repeat: int = 3, seed: int = 0,
                peak: float | None = None) -> dict:
    """The chunked form at one T over chunk sizes (interleaved). ``peak`` None: the GEMM peak (1024^3 float32, all
    cores) is timed interleaved with the chunk sizes, its median rate (the same load as theirs). Returns ``{"T", "d",
    "peak", "rows": [{"chunk", "per_token", "gflops", "pct_peak"}], "best", "noise"}``."""
    T = check_positive_int(T, "T", high=1 << 22)
    d = check_positive_int(d, "d", high=1024)
    chunks = check_sizes(chunks, "chunks", high=T)
    repeat, seed, peak = _check_common(T, d, repeat, seed, peak)
    q, k, v, dec = _problem(T, d, seed)
    fns = {f"c{c}": (lambda c=c: la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=c)) for c in chunks}
    if peak is None:
        fns["gemm"], gemm_flops = _gemm_call()
    cmp = timing.compare(repeat=repeat, settle=peak is None, **fns)   # the GEMM's BLAS pool spins after it (_gemm_call)
    peak = gemm_flops / cmp.timings["gemm"].median / 1e9 if peak is None else peak
    rows = []
    for c in chunks:
        s = cmp.timings[f"c{c}"].median
        g = la.chunked_flops(T, d, d, c) / s / 1e9
        rows.append({"chunk": c, "per_token": s / T, "gflops": g, "pct_peak": 100 * g / peak})
    best = min(rows, key=lambda r: r["per_token"])
    return {"T": T, "d": d, "peak": peak, "rows": rows, "best": best, "noise": cmp.noise}


def product_share(T: int, d: int = 64, *, chunk: int | None = None, repeat: int = 5, seed: int = 0,
                  peak: float | None = None) -> dict:
    """Where the chunked form's time goes (one head, ``d_k = d_v = d``, float32, scalar decay): the whole call and
    its matrix products alone (:func:`course_lib.algorithms.linear_attention.chunked_products`: the same products
    on the same threads, none of the element-wise work), interleaved. Returns ``{"T", "d", "chunk", "seconds":
    {"whole", "products"}, "products_share" (median pair ratio products / whole), "products_interval",
    "products_gflops" (the products' own rate), "gflops" (the whole call's), "pct_peak" (whole call, of ``peak``),
    "products_pct_peak", "peak", "noise"}``. ``peak`` None: the GEMM peak is timed interleaved with both (as in
    :func:`chunk_sweep`)."""
    T = check_positive_int(T, "T", high=1 << 22)
    d = check_positive_int(d, "d", high=1024)
    repeat, seed, peak = _check_common(T, d, repeat, seed, peak, chunk)
    q, k, v, dec = _problem(T, d, seed)
    c = min(T, chunk or la.default_chunk(T, d))
    fns = {"whole": lambda: la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=c),
           "products": la.chunked_products(q, k, v, dec, chunk=c)}
    if peak is None:
        fns["gemm"], gemm_flops = _gemm_call()
    cmp = timing.compare(repeat=repeat, settle=peak is None, **fns)
    peak = gemm_flops / cmp.timings["gemm"].median / 1e9 if peak is None else peak
    flops = la.chunked_flops(T, d, d, c)
    secs = {k_: cmp.timings[k_].median for k_ in ("whole", "products")}
    g = {k_: flops / s / 1e9 for k_, s in secs.items()}
    return {"T": T, "d": d, "chunk": c, "seconds": secs, "products_share": cmp.ratio("products", to="whole"),
            "products_interval": cmp.ratio_interval("products", to="whole"), "gflops": g["whole"],
            "products_gflops": g["products"], "pct_peak": 100 * g["whole"] / peak,
            "products_pct_peak": 100 * g["products"] / peak, "peak": peak, "noise": cmp.noise}


def provider_race(T: int, d: int = 64, *, chunk: int | None = None, providers=None, repeat: int = 5, seed: int = 0,
                  peak: float | None = None) -> dict:
    """The chunked form (one head, ``d_k = d_v = d``, float32, scalar decay) with its products on each GEMM library
    (``providers``: default every one this machine has, :func:`course_lib.algorithms.gemm.providers`), the whole call
    and its products alone per library, all interleaved (``peak`` None: with the GEMM peak too, as in
    :func:`chunk_sweep`). Returns ``{"T", "d", "chunk", "peak", "rows": [{"provider", "per_token", "pct_peak",
    "products_per_token", "products_pct_peak"}], "best" (the row of the fastest whole call), "absent" (provider ->
    why it is missing), "noise"}``."""
    T = check_positive_int(T, "T", high=1 << 22)
    d = check_positive_int(d, "d", high=1024)
    repeat, seed, peak = _check_common(T, d, repeat, seed, peak, chunk)
    if providers is None:
        providers = gemm_lib.providers()
    elif isinstance(providers, str) or not hasattr(providers, "__iter__") or not list(providers):
        raise ValueError(f"providers: expected a non-empty list of provider names, got {providers!r}")
    providers = [gemm_lib.check_provider(p, f"providers[{i}]") for i, p in enumerate(providers)]
    q, k, v, dec = _problem(T, d, seed)
    c = min(T, chunk or la.default_chunk(T, d))
    fns = {}
    for p in providers:
        fns[f"whole@{p}"] = lambda p=p: la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=c, provider=p)
        fns[f"products@{p}"] = la.chunked_products(q, k, v, dec, chunk=c, provider=p)
    if peak is None:
        fns["gemm"], gemm_flops = _gemm_call()
    cmp = timing.compare(repeat=repeat, settle=True, **fns)       # providers run separate thread pools
    peak = gemm_flops / cmp.timings["gemm"].median / 1e9 if peak is None else peak
    flops = la.chunked_flops(T, d, d, c)
    rows = []
    for p in providers:
        whole, prods = cmp.timings[f"whole@{p}"].median, cmp.timings[f"products@{p}"].median
        rows.append({"provider": p, "per_token": whole / T, "pct_peak": 100 * flops / whole / 1e9 / peak,
                     "products_per_token": prods / T, "products_pct_peak": 100 * flops / prods / 1e9 / peak})
    return {"T": T, "d": d, "chunk": c, "peak": peak, "rows": rows, "best": min(rows, key=lambda r: r["per_token"]),
            "absent": gemm_lib.absent(), "noise": cmp.noise}


def _stages(q, k, v, dec, c):
    """Zero-argument callables, one per stage of the fused scalar-decay path, each over every chunk on the calling
    thread a cache-sized group at a time (the group buffers of the real call); each product's ``(M, K, N, count)``:
    ``count`` products of ``(M x K)(K x N)``; and the outputs ``O (m, c, d_v)`` the last stage writes (with one group,
    the stages run in order compute the call's outputs)."""
    _, n, Q, K, V, G = la.chunk_views(q, k, v, dec, False, c)
    G = np.cumsum(G, axis=1)
    m, c, d_k = Q.shape
    d_v = V.shape[2]
    group = la.chunks_per_group(c, d_k, d_v, Q.dtype.itemsize)
    gs = [slice(s, min(m, s + group)) for s in range(0, m, group)]
    buf = la.folded_buffers(group, c, d_k, d_v, Q.dtype)
    Kw, dS, S, O = np.empty_like(K[:group]), np.empty((group, d_k, d_v), Q.dtype), np.zeros((d_k, d_v), Q.dtype), np.empty_like(V)

    def each(fn):     # one thread holds a head in one run: each group's states are made in cache (buffer dS)
        return lambda: [fn(g, buf["P"][:g.stop - g.start], buf["R"][:g.stop - g.start], buf["Kd"][:g.stop - g.start])
                        for g in gs]

    stages = {
        "inputs": lambda: (la.check_inputs(q, k, v, dec, finite=False),   # the fused pass checks NaN/inf itself
                           np.cumsum(la.chunk_views(q, k, v, dec, False, c)[5], axis=1)),
        "fold_states": each(lambda g, P, R, Kd: lak.fold_states(K[g], G[g], Kw[:g.stop - g.start])),
        "Kw^T V": each(lambda g, P, R, Kd: np.matmul(np.swapaxes(Kw[:g.stop - g.start], 1, 2), V[g],
                                                     out=dS[:g.stop - g.start])),
        "carry_states": each(lambda g, P, R, Kd: lak.carry_states(G[g], dS[:g.stop - g.start], S, R)),
        "fold_outputs": each(lambda g, P, R, Kd: lak.fold_outputs(Q[g], K[g], G[g], V[g], P, Kd, R)),
        "Qd Kd^T": each(lambda g, P, R, Kd: np.matmul(P[:, :, :d_k], Kd, out=P[:, :, d_k:])),
        "tril_scores": each(lambda g, P, R, Kd: lak.tril_scores(P, d_k)),
        "[Qd|A] [S_in;V]": each(lambda g, P, R, Kd: np.matmul(P, R, out=O[g])),
    }
    shapes = {"Kw^T V": (d_k, c, d_v, m), "Qd Kd^T": (c, d_k, c, m), "[Qd|A] [S_in;V]": (c, d_k + c, d_v, m)}
    return stages, shapes, O


def stage_times(T: int, d: int = 64, *, chunk: int | None = None, repeat: int = 5, seed: int = 0,
                peak: float | None = None) -> dict:
    """Where the chunked form's time goes, stage by stage, on ONE thread (one head, ``d_k = d_v = d``, float32, scalar
    decay, the fused path): the validation and layout (``"inputs"``), each fused element-wise pass and each matrix
    product over all chunks, a cache-sized group at a time as the real call runs them, timed interleaved beside the
    whole call on one thread. ``peak``: the one-thread GEMM peak (measured here when None). Returns ``{"T", "d",
    "chunk", "peak", "whole" (seconds), "rows": [{"stage", "kind" ("product" | "element-wise" | "inputs"), "seconds",
    "share" (of the whole call), "shape" ((M, K, N, count) of a product), "gflops", "pct_peak" (products)}],
    "products_share", "noise"}``."""
    T = check_positive_int(T, "T", high=1 << 22)
    d = check_positive_int(d, "d", high=1024)
    repeat, seed, peak = _check_common(T, d, repeat, seed, peak, chunk)
    peak = gemm_peak(threads=1) if peak is None else peak
    q, k, v, dec = _problem(T, d, seed)
    c = min(T, chunk or la.default_chunk(T, d))
    stages, shapes, _ = _stages(q, k, v, dec, c)
    with backend.blas_threads(1):
        cmp = timing.compare(repeat=repeat, whole=lambda: la.gated_linear_recurrence(q, k, v, dec, method="chunked",
                                                                                      chunk=c, threads=1), **stages)
    whole = cmp.timings["whole"].median
    rows = []
    for name in stages:
        sec = cmp.timings[name].median
        row = {"stage": name, "kind": "product" if name in shapes else "inputs" if name == "inputs" else "element-wise",
               "seconds": sec, "share": sec / whole}
        if name in shapes:
            M, K_, N, count = shapes[name]
            row.update(shape=shapes[name], gflops=timing.gemm_flops(M, K_, N) * count / sec / 1e9)
            row["pct_peak"] = 100 * row["gflops"] / peak
        rows.append(row)
    return {"T": T, "d": d, "chunk": c, "peak": peak, "whole": whole, "rows": rows,
            "products_share": sum(r["share"] for r in rows if r["kind"] == "product"), "noise": cmp.noise}


def matmul_sweep(T: int = 4096, chunk: int = 64, d: int = 64, repeat: int = 3, seed: int = 0) -> dict:
    """One point of the widget: loop, scan and chunked form at (T, chunk, d), interleaved; per-token times,
    the chunked form's GFLOP/s and its error against the float32 loop."""
    T = check_positive_int(T, "T", high=1 << 20)
    chunk = min(check_positive_int(chunk, "chunk"), T)   # a slider may ask for a chunk longer than T
    d = check_positive_int(d, "d", high=512)
    repeat, seed, _ = _check_common(T, d, repeat, seed, None)
    q, k, v, dec = _problem(T, d, seed)
    methods = METHODS if T * d * d <= 1 << 26 else ("sequential", "chunked")
    cmp = timing.compare(repeat=repeat, **_calls(q, k, v, dec, methods, chunk))
    secs = {m: t.median for m, t in cmp.timings.items()}
    o = la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=chunk)
    ref = la.gated_linear_recurrence(q, k, v, dec)
    err = float(np.abs(o - ref).max() / max(1.0, float(np.abs(ref).max())))
    return {"T": T, "chunk": chunk, "d": d, "per_token": {m: s / T for m, s in secs.items()},
            "gflops": la.chunked_flops(T, d, d, min(chunk, T)) / secs["chunked"] / 1e9,
            "max_rel_error": err, "noise": cmp.noise}


def mpi_split(T: int, *, nh: int = 128, d: int = 64, ranks=(1, 2), repeat: int = 3, timeout: float = 120.0,
              seed: int = 0) -> dict:
    """The element-wise scan (``(T, nh)``) and the chunked form (one head, ``d``) on each number of ranks:
    per-rank compute (reduce + expand, the slowest rank; the fastest of ``repeat`` rounds), exscan seconds, wall time (MPI start-up included),
    the message bytes, the max error against one process, and the ping-pong's alpha/beta on this machine.
    Returns ``{"rows": [...], "alpha_s", "beta_gbs"}``."""
    T = check_positive_int(T, "T", high=1 << 24)
    nh = check_positive_int(nh, "nh", high=1 << 16)
    d = check_positive_int(d, "d", high=1024)
    ranks = check_sizes(ranks, "ranks", high=64)
    timeout = check_float(timeout, "timeout", low=0.0, high=86400.0, low_inclusive=False)
    check_alloc_of(np.float32, "a, x", T=T, nh=nh)
    repeat, seed, _ = _check_common(T, d, repeat, seed, None)
    a, x, h0 = scan.random_problem(T, nh, seed=seed)
    q, k, v, dec = _problem(T, d, seed)
    ref_h = scan.linear_recurrence(a, x, h0)
    ref_o = la.gated_linear_recurrence(q, k, v, dec, method="chunked")
    rows = []
    for P in ranks:
        for kind, run in (("elementwise", lambda P=P: mpi_scan.linear_recurrence_mpi(a, x, h0, ranks=P, timeout=timeout,
                                                                                     repeat=repeat, return_info=True)),
                          ("gated", lambda P=P: mpi_scan.gated_linear_recurrence_mpi(q, k, v, dec, ranks=P, repeat=repeat,
                                                                                     timeout=timeout, return_info=True))):
            out, info = run()
            ref = ref_h if kind == "elementwise" else ref_o
            err = float(np.abs(out - ref).max() / max(1.0, float(np.abs(ref).max())))
            t = info["times"]
            rows.append({"kind": kind, "ranks": P, "compute": float(np.max(t["reduce"] + t["expand"])),
                         "exscan": float(np.max(t["exscan"])), "wall": info["wall"],
                         "message_bytes": info["message_bytes"], "max_rel_error": err})
    pp = mpi_pingpong.pingpong(repeat=10, timeout=timeout)
    return {"T": T, "nh": nh, "d": d, "rows": rows, "alpha_s": pp["alpha_s"], "beta_gbs": pp["beta_gbs"]}
