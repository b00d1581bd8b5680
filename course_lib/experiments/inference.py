"""Measurements for chapter 07 (parallel inference): every timing the notebook, the widget and the
benchmark show, built on :func:`course_lib.core.timing.compare` (interleaved, with its noise guard).

``problem(batch, layers, T=, nh=, nx=, vocab=, seed=)``      -> (params, X) a seeded random problem
``measure_methods(batch, layers, methods, ...)``              -> seconds, sequences/s, speed-up, agreement, noise
``batch_sweep(sizes, methods, ...)``                      -> one :func:`measure_methods` per batch size
``layer_sweep(layers, batch=, threads=, ...)``                -> wavefront / batched measured and modelled per depth
``wavefront_costs(batch, nh, threads=)``                      -> one cell vs one hand-off to the pool and back
``worker_sweep(Ps, batch=, ...)``                             -> threads and MPI over the batch, P = 1, 2, ...
``cuda_run(...)``                                         -> the CUDA kernel against batched numpy, on a GPU only
``perplexity_by_method(params, ids, methods, ...)``       -> held-out perplexity through each inference method

Every result carries a :class:`course_lib.core.timing.Noise` (``"noise"``): when it is not ``ok`` the
numbers are not to be trusted and the notebook draws no conclusion from them.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..core import backend, timing
from ..core.timing import Noise, compare
from ..core.validate import (check_alloc_of, check_bool, check_choice, check_int, check_positive_int, check_repeat,
                             check_sizes)
from ..models import charlm
from ..models.softmax_rnn import SoftmaxRNNParams, cell_step, forward, init_params
from ..parallel import inference

__all__ = ["problem", "measure_methods", "batch_sweep", "layer_sweep", "wavefront_costs", "worker_sweep",
           "cuda_run", "perplexity_by_method"]


def _threads(threads) -> int:
    return backend.cpu_count() if threads is None else check_positive_int(threads, "threads", high=1024)


def _methods(methods) -> tuple:
    if isinstance(methods, str) or not hasattr(methods, "__iter__"):
        raise ValueError(f"methods: expected a sequence of method names from {inference.METHODS}, got {methods!r}")
    methods = tuple(check_choice(m, "methods", inference.METHODS) for m in methods)
    if not methods:
        raise ValueError(f"methods: expected at least one method name, got {methods!r}")
    return methods


def problem(batch: int, layers: int, *, T: int = 32, nh: int = 64, nx: int = 32, vocab: int = 32,
            seed: int = 0) -> tuple[SoftmaxRNNParams, np.ndarray]:
    """Seeded random float32 parameters and inputs ``X (T, B, nx)``."""
    batch = check_positive_int(batch, "batch", high=1 << 16)
    layers = check_positive_int(layers, "layers", high=64)
    T = check_positive_int(T, "T", high=1 << 20)
    nh, nx, vocab = (check_positive_int(v, k, high=1 << 14) for k, v in (("nh", nh), ("nx", nx), ("vocab", vocab)))
    seed = check_int(seed, "seed", low=0)
    check_alloc_of(np.float32, "the inputs X", T=T, batch=batch, nx=nx)
    check_alloc_of(np.float32, "the hidden states", T=T, batch=batch, nh=nh)
    params = init_params(nx, nh, vocab, layers=layers, seed=seed)
    X = np.random.default_rng(seed + 1).standard_normal((T, batch, nx)).astype(np.float32)
    return params, X


def measure_methods(batch: int = 32, layers: int = 2, methods=("sequential", "batched"), *, T: int = 32, nh: int = 64,
                    nx: int = 32, vocab: int = 32, seed: int = 0, repeat: int = 3, threads: int | None = None,
                    ranks: int = 2, blas_threads: int | None = 1) -> dict:
    """Time each inference method on one random problem (the widget's and the B-sweep's data).

    Returns ``{"B", "layers", "T", "nh", "seconds": {method: s}, "seq_per_s": {method: ...},
    "speedup": {method: x over the first method}, "max_diff": {method: max |p - p_first|}, "noise"}``.
    All methods but ``mpi`` are timed interleaved by :func:`~course_lib.core.timing.compare` (medians),
    with BLAS limited to ``blas_threads`` (default 1: one core, the baseline the parallel methods are
    compared with; ``None`` leaves BLAS alone; ``threads`` and ``wavefront`` always give each of their
    ``threads`` workers one BLAS thread). ``mpi`` is timed as the slowest rank's scatter + compute +
    gather inside one launch (best of ``repeat`` rounds; process start-up not included).
    """
    methods = _methods(methods)
    repeat = check_repeat(repeat)
    if threads is not None:
        threads = _threads(threads)
    ranks = check_positive_int(ranks, "ranks", high=256)
    if blas_threads is not None:
        blas_threads = check_positive_int(blas_threads, "blas_threads", high=1024)
    params, X = problem(batch, layers, T=T, nh=nh, nx=nx, vocab=vocab, seed=seed)
    batch = X.shape[1]

    def run(m):
        opts = {"threads": threads} if m in ("threads", "wavefront") else {}
        return lambda: inference.predict(params, X, method=m, **opts)

    timed = [m for m in methods if m != "mpi"]
    seconds, probs, noise = {}, {}, Noise()
    if timed:
        with backend.blas_threads(blas_threads):
            probs.update({m: run(m)() for m in timed})
            cmp = compare(**{m: run(m) for m in timed}, repeat=repeat, warmup=0)
        seconds.update({m: cmp.timings[m].median for m in timed})
        noise = cmp.noise
    if "mpi" in methods:
        res = inference.run_mpi(params, X, ranks=min(ranks, batch), repeat=repeat)
        seconds["mpi"], probs["mpi"] = res.in_job, res.probs
    first = methods[0]
    return {"B": batch, "layers": layers, "T": T, "nh": nh,
            "seconds": {m: seconds[m] for m in methods},
            "seq_per_s": {m: batch / seconds[m] for m in methods},
            "speedup": {m: seconds[first] / seconds[m] for m in methods},
            "max_diff": {m: float(np.max(np.abs(probs[m] - probs[first]))) for m in methods},
            "noise": noise}


def batch_sweep(sizes, methods=("sequential", "batched", "threads"), **kwargs) -> list[dict]:
    """:func:`measure_methods` for every batch size in ``sizes`` (same keyword arguments)."""
    sizes = check_sizes(sizes, "sizes", high=1 << 16)
    _methods(methods)
    return [measure_methods(batch=b, methods=methods, **kwargs) for b in sizes]


def layer_sweep(depths, *, batch: int = 64, T: int = 32, nh: int = 128, nx: int = 32, vocab: int = 32,
                threads: int | None = None, repeat: int = 3) -> dict:
    """The wavefront over ``threads`` CPU threads against the layer-by-layer batched pass on one core,
    for each depth in ``depths``, beside the work/span model (:func:`course_lib.parallel.inference.work_span`).

    Returns ``{"layers": [...], "measured": [speed-up], "model": [speed-up], "threads": P, "noise"}``."""
    depths = check_sizes(depths, "depths", high=64)
    P = _threads(threads)
    repeat = check_repeat(repeat)
    measured, noise = [], Noise()
    for L in depths:
        d = measure_methods(batch=batch, layers=L, methods=("batched", "wavefront"), T=T, nh=nh, nx=nx, vocab=vocab,
                            threads=P, repeat=repeat)
        measured.append(d["speedup"]["wavefront"])
        noise = noise | d["noise"]
    return {"layers": depths, "measured": measured, "threads": P, "B": batch, "T": T, "nh": nh,
            "model": [inference.work_span(T, L, P)["speedup"] for L in depths], "noise": noise}


def wavefront_costs(batch: int = 64, nh: int = 128, *, threads: int | None = None, repeat: int = 20) -> dict:
    """What one wavefront step costs: the compute of one cell ``(B, H) @ (H, H)`` twice plus ``tanh``
    (one BLAS thread), against handing ``threads`` empty tasks to a thread pool and waiting for
    them (the barrier every diagonal pays). Returns ``{"cell": s, "handoff": s, "noise"}`` (medians)."""
    P = _threads(threads)
    repeat = check_repeat(repeat)
    params, X = problem(batch, 1, T=1, nh=nh, nx=nh)
    layer, x = params.layers[0], X[0]
    h = np.zeros((X.shape[1], nh), np.float32)
    with backend.blas_threads(1), ThreadPoolExecutor(P) as pool:
        cmp = compare(cell=lambda: cell_step(layer, x, h), handoff=lambda: list(pool.map(int, range(P))),
                      repeat=repeat, warmup=2)
    return {"cell": cmp.timings["cell"].median, "handoff": cmp.timings["handoff"].median, "threads": P,
            "noise": cmp.noise}


def worker_sweep(Ps, *, batch: int = 256, layers: int = 2, T: int = 32, nh: int = 128, nx: int = 64, vocab: int = 64,
                 repeat: int = 3, mpi: bool = True) -> dict:
    """Batch parallelism with ``P`` workers for each ``P`` in ``Ps``: threads (shared memory) and, with
    ``mpi``, MPI ranks (in-job: scatter + compute + gather of the slowest rank), each against the
    batched pass on one core (one BLAS thread).

    Returns ``{"P": [...], "t_batched": s, "threads": [speed-up], "mpi": [speed-up] or None,
    "mpi_runs": {P: MPIResult}, "noise"}``; the noise covers the interleaved threads/batched timings."""
    batch = check_positive_int(batch, "batch", high=1 << 16)
    Ps = check_sizes(Ps, "Ps", high=min(batch, 256))
    repeat = check_repeat(repeat)
    mpi = check_bool(mpi, "mpi")
    params, X = problem(batch, layers, T=T, nh=nh, nx=nx, vocab=vocab)
    fns = {"batched": lambda: forward(params, X)}
    fns.update({f"threads={p}": (lambda p=p: inference.predict_threads(params, X, threads=p)) for p in Ps})
    with backend.blas_threads(1):
        cmp = compare(**fns, repeat=repeat, warmup=1)
    t_batched = cmp.timings["batched"].median
    out = {"P": Ps, "B": batch, "layers": layers, "T": T, "nh": nh, "t_batched": t_batched,
           "threads": [cmp.speedup(f"threads={p}") for p in Ps], "thread_seconds":
           [cmp.timings[f"threads={p}"].median for p in Ps], "mpi": None, "mpi_runs": {}, "noise": cmp.noise}
    if mpi:
        # the ranks run in other processes, which no clock here can watch: judge the MPI times by the load just
        # before and just after them (a busy moment either side makes them unreliable)
        before = timing.background_load()
        runs = {p: inference.run_mpi(params, X, ranks=p, repeat=repeat) for p in Ps}
        out["mpi_runs"] = runs
        out["mpi"] = [t_batched / runs[p].in_job for p in Ps]
        out["noise"] = out["noise"] | before | timing.background_load()
    return out


def cuda_run(*, batch: int = 1024, layers: int = 2, T: int = 32, nh: int = 256, nx: int = 64, vocab: int = 64,
             repeat: int = 3) -> dict:
    """The CUDA kernel timed against the batched numpy pass (all BLAS threads), on a real GPU only.

    Returns ``{"mode": backend.cuda_mode(), "measured": bool, "comparison": Comparison or None,
    "max_diff": float or None, "noise"}``. Without a GPU nothing is timed (the simulator runs every
    GPU thread as a Python thread: its time says nothing about a GPU) and ``measured`` is False."""
    repeat = check_repeat(repeat)
    for k, v in (("batch", batch), ("layers", layers), ("T", T), ("nh", nh), ("nx", nx), ("vocab", vocab)):
        check_positive_int(v, k, high=1 << 20)
    mode = backend.cuda_mode()
    if mode != "gpu":
        return {"mode": mode, "measured": False, "comparison": None, "max_diff": None, "noise": Noise()}
    params, X = problem(batch, layers, T=T, nh=nh, nx=nx, vocab=vocab)
    ref = forward(params, X)
    got = inference.predict_cuda(params, X)  # also compiles the kernels
    cmp = compare(batched=lambda: forward(params, X), cuda_batched=lambda: inference.predict_cuda(params, X),
                  repeat=repeat, warmup=1)
    return {"mode": mode, "measured": True, "comparison": cmp, "max_diff": float(np.max(np.abs(got - ref))),
            "B": batch, "layers": layers, "T": T, "nh": nh, "noise": cmp.noise}


def perplexity_by_method(params: SoftmaxRNNParams, ids, methods=("sequential", "batched", "wavefront"), *,
                         T: int = 64, max_windows: int | None = None, **opts) -> dict:
    """Held-out perplexity (:func:`course_lib.models.charlm.perplexity`) computed through each inference
    method of :func:`course_lib.parallel.inference.predict` (``opts`` go to the methods that take them).
    Every method must give the same number. Returns ``{method: perplexity}``."""
    methods = _methods(methods)
    takes = {"threads": ("threads",), "wavefront": ("threads",), "mpi": ("ranks", "timeout"),
             "cuda_batched": ("block",)}
    unknown = set(opts) - {k for m in methods for k in takes.get(m, ())}
    if unknown:
        raise TypeError(f"opts: {sorted(unknown)} is not an option of the methods {list(methods)}")

    def via(m):
        kw = {k: v for k, v in opts.items() if k in takes.get(m, ())}
        return lambda p, X: inference.predict(p, X, method=m, **kw)

    return {m: charlm.perplexity(params, ids, T=T, max_windows=max_windows, predict=via(m)) for m in methods}
