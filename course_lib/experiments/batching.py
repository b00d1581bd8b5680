"""Batching: from matrix-vector to matrix-matrix products (experiments layer; chapter 03).

An RNN that reads **one sequence at a time** computes ``h_t = tanh(x_t Wxh + h_{t-1} Whh)``
with ``x_t`` and ``h_{t-1}`` single rows: a matrix-*vector* product (GEMV). Every weight is read
from memory for two FLOPs -- about 0.5 FLOP/byte in float32 -- so the step is bandwidth-bound.
Stacking ``B`` sequences as the rows of ``X_t (B, nx)`` turns the same work into a
matrix-*matrix* product (GEMM): each weight, once in cache, is used ``B`` times, the intensity
grows roughly like ``B/2`` FLOP/byte and the roofline lets the step run at the compute peak.
The seed (Fig. 9) measured the training time per sample falling as the batch grew from 100 to 1000.

"Bandwidth-bound" means bound by the bandwidth of wherever the data *is*: a weight matrix that a cache
holds is re-read from that cache, many times faster than from DRAM. :func:`gemv_residency`
measures it (a GEMV whose matrix fits in cache vs one whose matrix does not). The cache sizes the OS
reports are not enough to say where data is read from: a virtual machine may report a level (a 480 MiB
"L3" on one Intel Xeon) that reads at DRAM speed. :func:`measured_residency` finds the bandwidth cliff in
the sweep, and every sentence about "staying in" a cache is conditioned on it.

``forward_one_at_a_time(params, X)``            the unbatched reference: a loop over sequences
``rnn_step_flops(batch, nx, nh)`` / ``rnn_step_bytes`` / ``rnn_step_intensity``   one recurrent step
``cache_sizes()``                               this CPU's cache sizes (bytes): :func:`course_lib.core.backend.cache_sizes`
``cache_level(nbytes)``                         the smallest cache a working set fits in ("DRAM" if none)
``gemv_residency(sizes)``                       GEMV speed vs matrix size: in cache vs from DRAM
``speed_class(gbps, dram_gbps)``                "cache speed" or "DRAM speed": a measured rate against the DRAM line
``measured_residency(res)``                     where a residency sweep's bandwidth cliff is, level by level
``reads_at(nbytes, res)``                       the speed a working set of ``nbytes`` was measured at
``gemv_vs_gemm(n, batch)``                          B GEMVs vs one GEMM, timed now
``time_per_sample(batch_sizes, n, T)``          seed Fig. 9: training time per sequence vs batch size
``batch_point(batch, width, T)``                one point of that curve (the widget's compute function)
"""
from __future__ import annotations

import numpy as np

from ..core.backend import cache_sizes
from ..core import backend, timing
from ..models import fast_rnn
from ..models.rnn import RNNParams, check_inputs, bptt_linear, init_params, sgd_step
from ..core.validate import check_choice, check_dtype, check_int, check_positive_int, check_repeat, check_sizes

__all__ = [
    "forward_one_at_a_time",
    "rnn_step_flops",
    "rnn_step_bytes",
    "rnn_step_intensity",
    "cache_sizes",
    "cache_level",
    "gemv_residency",
    "CACHE_SPEED",
    "speed_class",
    "measured_residency",
    "reads_at",
    "gemv_vs_gemm",
    "time_per_sample",
    "batch_point",
    "training_step",
]


def forward_one_at_a_time(params: RNNParams, X: np.ndarray, h0: np.ndarray | None = None):
    """The forward pass with no batching: for every sequence b, for every step t, two GEMVs.

    X (T, B, nx) -> (H (T, B, nh), Yhat (T, B, ny)); the same numbers as ``rnn.forward``,
    computed with ``T * B * 3`` matrix-vector products instead of a few large GEMMs.
    """
    X, _, h0 = check_inputs(params, X, None, h0)
    T, B, _ = X.shape
    H = np.empty((T, B, params.nh), params.dtype)
    Yhat = np.empty((T, B, params.ny), params.dtype)
    for b in range(B):
        h = h0[b]
        for t in range(T):
            h = np.tanh(X[t, b] @ params.Wxh + h @ params.Whh)    # two GEMVs
            H[t, b] = h
            Yhat[t, b] = np.tanh(h @ params.Why)                  # a third
    return H, Yhat


# --------------------------------------------------------------------------- counting
def rnn_step_flops(batch: int, nx: int, nh: int) -> int:
    """FLOPs of one recurrent step ``x_t Wxh + h_{t-1} Whh`` for ``batch`` sequences: ``2 B (nx + nh) nh``."""
    batch, nx, nh = (check_positive_int(v, n) for v, n in ((batch, "batch"), (nx, "nx"), (nh, "nh")))
    return 2 * batch * (nx + nh) * nh


def rnn_step_bytes(batch: int, nx: int, nh: int, itemsize: int = 4) -> int:
    """Bytes one recurrent step must move at least once: the weights ``Wxh (nx, nh)``,
    ``Whh (nh, nh)``, the inputs ``x_t (B, nx)``, ``h_{t-1} (B, nh)`` and the output ``h_t (B, nh)``."""
    batch, nx, nh, itemsize = (check_positive_int(v, n) for v, n in
                           ((batch, "batch"), (nx, "nx"), (nh, "nh"), (itemsize, "itemsize")))
    return itemsize * (nx * nh + nh * nh + batch * nx + 2 * batch * nh)


def rnn_step_intensity(batch: int, nx: int, nh: int, itemsize: int = 4) -> float:
    """Arithmetic intensity (FLOP/byte) of one recurrent step: flops / bytes. About ``B/2``
    for ``batch`` much smaller than ``n`` (float32): ~0.5 for one sequence, hundreds for B = 1000."""
    return rnn_step_flops(batch, nx, nh) / rnn_step_bytes(batch, nx, nh, itemsize)


# --------------------------------------------------------------------------- caches
def cache_level(nbytes: int, caches: dict | None = None) -> str:
    """The smallest cache (``"L1d"``, ``"L2"``, ``"L3"``) that holds ``nbytes``, else ``"DRAM"``."""
    nbytes = check_int(nbytes, "nbytes", low=0)
    if caches is None:
        caches = cache_sizes()
    elif not isinstance(caches, dict):  # {} is fine: no cache known, everything is "DRAM"
        raise TypeError(f"caches: expected a dict level -> bytes such as {{'L1d': 32768}}, got {caches!r}")
    else:
        caches = {k: check_int(v, f"caches[{k!r}]", low=1) for k, v in caches.items()}
    for level, size in sorted(caches.items(), key=lambda kv: kv[1]):
        if nbytes <= size:
            return level
    return "DRAM"


def gemv_residency(sizes=(256, 512, 1024, 2048, 4096, 8192), *, threads: int = 1, repeat: int = 5,
                   seed: int = 0) -> dict:
    """One GEMV ``x (n,) @ W (n, n)`` (float32) timed again and again at each ``n``: when ``W`` fits in a
    cache, every call after the first reads it from that cache; when it does not, from DRAM.

    ``threads`` (default 1, restored afterwards): BLAS threads for the GEMVs. One core is the clean
    case: its own L1/L2 and the shared L3; more threads add synchronisation that, on a busy machine,
    can cost more than a small GEMV itself.

    Returns ``{"n", "working_set" (bytes of W, x and the output), "level" (where it fits),
    "gflops", "gbps" (bytes of W read per second), "caches", "dram_gbps" (the streaming copy bandwidth
    of ``timing.copy_bandwidth``: the DRAM roof), "noise"}``, lists in the order of ``sizes``.
    """
    sizes = check_sizes(sizes, "sizes", high=16384)
    repeat = check_repeat(repeat)
    threads = check_positive_int(threads, "threads", high=backend.max_threads())
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    caches = cache_sizes()
    out = {"n": sizes, "working_set": [], "level": [], "gflops": [], "gbps": []}
    noise = timing.Noise()
    before = backend.get_threads()
    try:
        backend.set_threads(threads)
        ts = []
        for n in sizes:
            W = rng.standard_normal((n, n)).astype(np.float32)
            x = rng.standard_normal(n).astype(np.float32)
            y = np.empty(n, np.float32)
            ts.append((n, W, x, y, timing.measure(np.matmul, x, W, out=y, repeat=repeat, warmup=2, min_time=2e-3)))
    finally:
        backend.set_threads(before)
    for n, W, x, y, t in ts:
        noise = noise | t.noise
        ws = W.nbytes + x.nbytes + y.nbytes
        out["working_set"].append(ws)
        out["level"].append(cache_level(ws, caches))
        out["gflops"].append(timing.gemv_flops(n, n) / t.min / 1e9)
        out["gbps"].append(W.nbytes / t.min / 1e9)
    out.update(caches=caches, dram_gbps=timing.copy_bandwidth(), noise=noise)
    return out


CACHE_SPEED = 1.5   # a read at least this many times the DRAM copy line was served by something faster than DRAM


def speed_class(gbps: float, dram_gbps: float) -> str:
    """``"cache speed"`` when a measured rate ``gbps`` is at least :data:`CACHE_SPEED` times the DRAM
    streaming line ``dram_gbps``, else ``"DRAM speed"`` (no faster than main memory, whatever holds it)."""
    from ..core.validate import check_float

    gbps = check_float(gbps, "gbps", low=0.0)
    dram_gbps = check_float(dram_gbps, "dram_gbps", low=0.0, low_inclusive=False)
    return "cache speed" if gbps >= CACHE_SPEED * dram_gbps else "DRAM speed"


def _mib(nbytes: float) -> str:
    return f"{nbytes / 2**10:.0f} KiB" if nbytes < 2**20 else f"{nbytes / 2**20:.3g} MiB"


def measured_residency(res: dict) -> dict:
    """Where the bandwidth cliff of a :func:`gemv_residency` sweep ``res`` is: each point's
    :func:`speed_class` against ``res["dram_gbps"]``, and per reported level what it measured.

    Returns ``{"speed": [...] per point, "reach": the largest working set read at cache speed with every
    smaller one too (0: none), "slow_from": the smallest working set above the reach read at DRAM speed
    (None: none was), "levels": {level: "cache speed" | "DRAM speed" | "both"} for the reported levels the
    sweep has points in, "dram_levels": reported cache levels all of whose points read at DRAM speed,
    "text": one line per reported level, naming a level that reads at DRAM speed as such}``."""
    for key in ("working_set", "level", "gbps", "dram_gbps", "caches"):
        if key not in res:
            raise ValueError(f"res: expected the dict of batching.gemv_residency, missing {key!r}")
    dram = res["dram_gbps"]
    speed = [speed_class(g, dram) for g in res["gbps"]]
    order = sorted(range(len(speed)), key=lambda i: res["working_set"][i])
    reach, slow_from = 0, None
    for i in order:
        if speed[i] == "cache speed" and slow_from is None:
            reach = res["working_set"][i]
        elif speed[i] == "DRAM speed" and slow_from is None:
            slow_from = res["working_set"][i]
    levels, text = {}, []
    for lvl, size in sorted(res["caches"].items(), key=lambda kv: kv[1]):
        pts = [i for i in order if res["level"][i] == lvl]
        if not pts:
            continue
        kinds = {speed[i] for i in pts}
        levels[lvl] = kinds.pop() if len(kinds) == 1 else "both"
        rates = [res["gbps"][i] for i in pts]
        span = f"{min(rates):.1f}-{max(rates):.1f} GB/s" if len(rates) > 1 else f"{rates[0]:.1f} GB/s"
        ratio = f"{min(rates) / dram:.2g}-{max(rates) / dram:.2g}x" if len(rates) > 1 else f"{rates[0] / dram:.2g}x"
        what = {"cache speed": "reads at cache speed", "DRAM speed": "reads at DRAM speed here",
                "both": "reads at cache speed for the smaller sets and at DRAM speed for the larger"}[levels[lvl]]
        text.append(f"the {_mib(size)} the OS reports as {lvl} {what} ({span}, {ratio} the DRAM copy line "
                    f"of {dram:.1f} GB/s)")
    return {"speed": speed, "reach": reach, "slow_from": slow_from, "levels": levels,
            "dram_levels": [lvl for lvl, k in levels.items() if k == "DRAM speed"], "text": text}


def reads_at(nbytes: int, res: dict) -> str:
    """The speed a working set of ``nbytes`` reads at in the sweep ``res`` (:func:`measured_residency`):
    ``"cache speed"`` up to the measured reach, ``"DRAM speed"`` from the first set that read at DRAM speed,
    ``"not measured"`` between the two (or past the sweep's largest size with no slow point)."""
    nbytes = check_int(nbytes, "nbytes", low=0)
    m = measured_residency(res)
    if nbytes <= m["reach"]:
        return "cache speed"
    if m["slow_from"] is not None and nbytes >= m["slow_from"]:
        return "DRAM speed"
    return "not measured"


# --------------------------------------------------------------------------- measuring
def _gemv_loop(x: np.ndarray, W: np.ndarray, out: np.ndarray) -> None:
    for b in range(x.shape[0]):
        np.matmul(x[b], W, out=out[b])


def gemv_vs_gemm(n: int = 1000, batch: int = 256, *, repeat: int = 3, seed: int = 0,
                 dtype: str = "float32") -> dict:
    """Time ``batch`` separate ``(n,) @ (n, n)`` products against one ``(B, n) @ (n, n)`` product.

    Same FLOPs (``2 B n²``), same result. Returns a dict with ``n, B, flops``, ``gemv_s``,
    ``gemm_s`` (best of ``repeat``, interleaved), ``gemv_gflops``, ``gemm_gflops``, ``speedup``,
    the intensities ``gemv_intensity`` (one vector) and ``gemm_intensity``, the DRAM roofline's
    bounds at those intensities, ``gemv_bound_gflops`` and ``gemm_bound_gflops``, ``w_bytes`` and
    ``w_level`` (the cache ``W`` fits in, or "DRAM": where the B GEMVs actually read it from), and
    ``noise``.
    """
    n = check_positive_int(n, "n", high=8192)
    batch = check_positive_int(batch, "batch", high=8192)
    repeat = check_repeat(repeat)
    dt = check_dtype(dtype, "dtype")
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    W = rng.standard_normal((n, n)).astype(dt)
    x = rng.standard_normal((batch, n)).astype(dt)
    out1 = np.empty((batch, n), dt)
    out2 = np.empty((batch, n), dt)
    cmp = timing.compare(gemv=lambda: _gemv_loop(x, W, out1), gemm=lambda: np.matmul(x, W, out=out2),
                         repeat=repeat, warmup=1)
    flops = timing.gemm_flops(batch, n, n)
    t1, t2 = cmp.timings["gemv"].min, cmp.timings["gemm"].min
    ai1 = timing.gemm_intensity(1, n, n, dt.itemsize)
    ai2 = timing.gemm_intensity(batch, n, n, dt.itemsize)
    return {"n": n, "B": batch, "flops": flops, "gemv_s": t1, "gemm_s": t2,
            "gemv_gflops": flops / t1 / 1e9, "gemm_gflops": flops / t2 / 1e9, "speedup": t1 / t2,
            "gemv_intensity": ai1, "gemm_intensity": ai2,
            "gemv_bound_gflops": timing.roofline(ai1), "gemm_bound_gflops": timing.roofline(ai2),
            "w_bytes": W.nbytes, "w_level": cache_level(W.nbytes),
            "max_abs_diff": float(np.max(np.abs(out1 - out2))), "noise": cmp.noise}


def training_step(params: RNNParams, X: np.ndarray, Y: np.ndarray, lr: float, method: str = "reference"):
    """One training step on the batch ``X (T, B, nx)``: ``"reference"`` = ``rnn.bptt_linear`` +
    ``rnn.sgd_step``; ``"fast"`` = :func:`course_lib.models.fast_rnn.train_step`. Returns new params."""
    method = check_choice(method, "method", ("reference", "fast"))
    if method == "fast":
        return fast_rnn.train_step(params, X, Y, lr)[0]
    return sgd_step(params, bptt_linear(params, X, Y), lr)


def batch_point(batch: int = 100, width: int = 256, T: int = 10, *, method: str = "reference",
                repeat: int = 3, seed: int = 0) -> dict:
    """Time one training step on ``batch`` sequences of ``T`` steps with ``nx = nh = ny = width``.

    Returns ``batch, width, T, method, step_s`` (best of ``repeat``), ``per_sample_s = step_s / batch``,
    ``flops`` (the step's GEMM FLOPs, ``fast_rnn.step_flops``), ``gflops`` (flops / time),
    ``intensity`` (of one recurrent step), ``bound_gflops`` (the roofline at that intensity, from
    the measured peak and bandwidth) and ``noise``.
    """
    batch = check_positive_int(batch, "batch", high=4096)
    width = check_positive_int(width, "width", high=4096)
    T = check_positive_int(T, "T", high=1000)
    repeat = check_repeat(repeat)
    seed = check_int(seed, "seed", low=0)
    method = check_choice(method, "method", ("reference", "fast"))
    params = init_params(width, width, width, seed=seed)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (T, batch, width)).astype(np.float32)
    Y = rng.uniform(-1, 1, (T, batch, width)).astype(np.float32)
    method = check_choice(method, "method", ("reference", "fast"))
    t = timing.measure(training_step, params, X, Y, 1e-4, method, repeat=repeat, warmup=1, number=1)
    flops = fast_rnn.step_flops(T, batch, width, width, width)
    ai = rnn_step_intensity(batch, width, width)
    return {"batch": batch, "width": width, "T": T, "method": method, "step_s": t.min,
            "per_sample_s": t.min / batch, "flops": flops, "gflops": flops / t.min / 1e9, "intensity": ai,
            "bound_gflops": timing.roofline(ai), "noise": t.noise}


def time_per_sample(batch_sizes=(1, 10, 100, 1000), width: int = 256, T: int = 10, *,
                    method: str = "reference", repeat: int = 3, seed: int = 0) -> dict:
    """Seed Fig. 9: training time per sequence against the batch size.

    Returns ``{"batch": array, "per_sample_s": array, "step_s": array, "flops": array, "gflops": array,
    "intensity": array, "bound_gflops": array, "width", "T", "method", "noise"}``, one entry per batch
    size (see :func:`batch_point`).
    """
    sizes = check_sizes(batch_sizes, "batch_sizes", high=4096)
    check_positive_int(width, "width", high=4096)  # all arguments up front, before the first measurement
    check_positive_int(T, "T", high=1000)
    check_choice(method, "method", ("reference", "fast"))
    check_repeat(repeat)
    check_int(seed, "seed", low=0)
    points = [batch_point(b, width, T, method=method, repeat=repeat, seed=seed) for b in sizes]
    out = {k: np.array([p[k] for p in points]) for k in ("batch", "per_sample_s", "step_s", "flops", "gflops",
                                                          "intensity", "bound_gflops")}
    noise = timing.Noise()
    for p in points:
        noise = noise | p["noise"]
    out.update(width=width, T=T, method=method, noise=noise)
    return out
