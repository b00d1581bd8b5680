"""Measuring the LSTM of chapter 09 (experiments folder): every timing the chapter and the benchmark show.

All helpers build on :func:`course_lib.core.timing.compare` / :func:`~course_lib.core.timing.measure`;
the model (:mod:`course_lib.models.lstm`) never times itself. Shapes: ``X (T, B, nx)``, ``H`` hidden units,
weights ``W_ih (4H, nx)``, ``W_hh (4H, H)``.

``step_time(batch, nh, nx, T, method=...)``            seconds per time step of one method
``method_times(batch, nh, nx, T, methods=...)``         ms per step of several methods, interleaved; the fastest
                                                   (a name ``"workspace@mkl"`` is a method on a GEMM provider:
                                                   ``split_choice``, ``choices(methods, providers)``)
``profile_step(batch, nh, nx, method=...)``             one step split into its library calls: GEMM vs element-wise
``profile_training(batch, nh, nx, T)``                  forward+backward of ``fused_pre`` split into its phases over
                                                   the whole sequence: where the milliseconds go
``overhead_vs_batch(batches, nh, methods=...)``     µs per step per sample against batch size
``latency_vs_batch(batches, nh, methods=...)``      ms per step against batch size (small-batch inference)
``layout_gemm_times(batch, nh, nx)``                    the seed's Fig. 3 runtime half: BLAS ``X W^T`` vs ``W X^T``
``loop_order_times(batch, nh, nx)``                     the same product as a plain dot-product loop nest, in both
                                                   layouts (no BLAS blocking): where the cache shows
``layout_traffic_model(batch, nh, nx)``                 Fig. 3's utilisation half, *modelled* from bytes moved
                                                   through each cache level of this machine
``hardware_counters(batch, nh, nx)``                    Fig. 3's utilisation half *measured* with ``perf stat``
                                                   where the machine exposes cache counters (else ``None``)
                                                   (the four Fig. 3 helpers: :mod:`.lstm_layout`, re-exported)
``lm_throughput(ids, V, methods=...)``             character-LM training tokens/s per method (seed Fig. 4)
``widget_compute(batch, nh, method)``                   the chapter's slider
"""
from __future__ import annotations

import numpy as np

from ..core import timing
from ..core.noise import noise_of_pairs
from ..algorithms import gemm
from ..core.timing import Noise, compare, gemm_flops, measure, peak_gflops
from ..core.validate import (check_alloc_of, check_bool, check_choice, check_dtype, check_float, check_positive_int,
                             check_repeat, check_sizes)
from ..models import lstm, lstm_lm, lstm_persistent, lstm_tuned
from .lstm_profile import MATTERS
from .lstm_layout import hardware_counters, layout_gemm_times, layout_traffic_model, loop_order_times

__all__ = ["split_choice", "choices", "PROVIDER_METHODS", "step_time", "method_times", "fused_baseline", "profile_step", "profile_training", "overhead_vs_batch",
           "latency_vs_batch", "layout_gemm_times", "loop_order_times", "layout_traffic_model", "hardware_counters", "lm_throughput", "widget_compute"]


def _shape(batch, nh, nx, T=1):
    """The sizes, checked (and the arrays they make bounded) before anything is allocated."""
    batch, nh, nx, T = (check_positive_int(v, k, high=1 << 24) for k, v in
                        (("batch", batch), ("nh", nh), ("nx", nx), ("T", T)))
    check_alloc_of(np.float64, "the inputs X", T=T, batch=batch, nx=nx)
    check_alloc_of(np.float64, "the gates", factor=4, T=T, batch=batch, nh=nh)
    check_alloc_of(np.float64, "the weights W_ih", factor=4, nh=nh, nx=nx)
    check_alloc_of(np.float64, "the weights W_hh", factor=4 * nh, nh=nh)
    return batch, nh, nx, T


# the methods whose big products a GEMM provider computes (lstm.lstm_forward's provider=)
PROVIDER_METHODS = ("fused", "fused_pre", "transposed", "gemv", "workspace")


def split_choice(choice, name: str = "methods") -> tuple[str, str]:
    """``"workspace@mkl"`` -> ``("workspace", "mkl")``; a plain method name runs on ``"numpy"``."""
    if not isinstance(choice, str):
        raise TypeError(f"{name}: expected a method name from {lstm.METHODS}, got {choice!r}")
    method, _, provider = choice.partition("@")
    check_choice(method, name, lstm.METHODS)
    if provider and method not in PROVIDER_METHODS:
        raise ValueError(f"{name}: {method!r} computes no product a provider could take ({choice!r}); "
                         f"methods with a provider: {', '.join(PROVIDER_METHODS)}")
    return method, gemm.check_provider(provider or "numpy", name)


def choices(methods=lstm.METHODS, providers=("numpy",)) -> tuple[str, ...]:
    """Every method on every provider it can use: ``("fused_pre", ..., "fused_pre@mkl", ...)``."""
    provs = tuple(gemm.check_provider(p, "providers") for p in providers)
    return tuple(m if p == "numpy" else f"{m}@{p}" for p in provs for m in methods
                 if p == "numpy" or m in PROVIDER_METHODS)


def _methods(methods, name="methods"):
    if isinstance(methods, str) or not hasattr(methods, "__iter__"):
        raise TypeError(f"{name}: expected a list of names from {lstm.METHODS}, got {methods!r}")
    methods = tuple(m for m in methods if split_choice(m, name))
    if not methods:
        raise ValueError(f"{name}: expected at least one of {', '.join(lstm.METHODS)}")
    return methods


def _random_problem(batch, nh, nx, T, dtype, seed=0):
    dtype = check_dtype(dtype, "dtype")
    p = lstm.init_params(nx, nh, seed=seed, dtype=dtype)
    X = np.random.default_rng(seed + 1).standard_normal((T, batch, nx)).astype(dtype)
    return p, X


def _runner(p, X, method, backward, dH):
    method, provider = split_choice(method, "method")

    def run():
        out = lstm.lstm_forward(p, X, method=method, return_cache=backward, provider=provider)
        if backward:
            lstm.lstm_backward(p, out[2], dH)
    return run


# --------------------------------------------------------------------------- whole layer
def step_time(batch: int, nh: int, nx: int, T: int = 10, *, method: str = "fused_pre", dtype="float32",
              backward: bool = False, repeat: int = 3) -> float:
    """Median seconds per time step of ``lstm_forward`` (+ ``lstm_backward``) at this shape."""
    batch, nh, nx, T = _shape(batch, nh, nx, T)
    method = check_choice(method, "method", lstm.METHODS)
    backward = check_bool(backward, "backward")
    repeat = check_repeat(repeat)
    p, X = _random_problem(batch, nh, nx, T, dtype)
    run = _runner(p, X, method, backward, np.ones((T, batch, nh), p.dtype))
    return measure(run, repeat=repeat, warmup=1, number=1).median / T


def fused_baseline(batch: int, nh: int, nx: int, T: int = 10, *, repeat: int = 3, torch_module=None) -> dict:
    """Seed 003's cuDNN-like fused baseline, on a CPU: ``torch.nn.LSTM`` (oneDNN's fused LSTM) beside
    ``naive`` (the framework default: many small calls) and ``fused_pre``, forward, float32, one thread.

    Returns ``{"available": False, "why": str}`` where torch is not installed; else ``{"available": True,
    "ms_per_step": {name: ms}, "comparison": Comparison}`` with names ``"naive"``, ``"fused_pre"`` and
    ``"torch"``. ``torch_module``: the module to use instead of ``import torch`` (tests pass a stand-in)."""
    batch, nh, nx, T = _shape(batch, nh, nx, T)
    repeat = check_repeat(repeat)
    torch = torch_module
    if torch is not None and not (hasattr(torch, "nn") and hasattr(torch, "from_numpy")):
        raise TypeError(f"torch_module: expected the torch module (or a stand-in with nn and from_numpy), "
                        f"got {type(torch).__name__}")
    if torch is None:
        try:
            import torch
        except ImportError as exc:
            return {"available": False, "why": f"torch is not installed ({exc})"}
    p, X = _random_problem(batch, nh, nx, T, "float32")
    module, Xt = p.to_torch() if torch_module is None else torch.nn.LSTM(nx, nh), torch.from_numpy(X)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)

    def run_torch():
        with torch.no_grad():
            module(Xt)
    try:
        cmp = compare(repeat=repeat, warmup=1, baseline="naive",
                      naive=_runner(p, X, "naive", False, None), fused_pre=_runner(p, X, "fused_pre", False, None),
                      torch=run_torch)
    finally:
        torch.set_num_threads(threads)
    return {"available": True, "ms_per_step": {k: t.median / T * 1e3 for k, t in cmp.timings.items()},
            "comparison": cmp}


def method_times(batch: int, nh: int, nx: int, T: int = 10, *, methods=lstm.METHODS, dtype="float32",
                 backward: bool = False, repeat: int = 3, time_budget: float | None = None) -> dict:
    """Milliseconds per step of each method at one shape, measured interleaved in one run (more rounds until
    the ratios are narrow or ``time_budget`` seconds are spent: :func:`course_lib.core.timing.compare`'s).

    Returns ``{"B", "nh", "nx", "T", "ms_per_step": {method: ms}, "best": name, "comparison": Comparison}``
    (the :class:`~course_lib.core.timing.Comparison` carries the spread of the repeats)."""
    batch, nh, nx, T = _shape(batch, nh, nx, T)
    methods = _methods(methods)
    backward = check_bool(backward, "backward")
    repeat = check_repeat(repeat)
    p, X = _random_problem(batch, nh, nx, T, dtype)
    dH = np.ones((T, batch, nh), p.dtype)
    # settle: the BLAS methods' pool spins after each call, and "persistent" runs on numba's threads -- timed
    # right after a BLAS method it would share its cores with the spinning threads (a test's fake clock applies)
    cmp = timing.compare(repeat=repeat, warmup=1, settle=True, time_budget=time_budget,
                         **{m: _runner(p, X, m, backward, dH) for m in methods})
    ms = {m: cmp.timings[m].median / T * 1e3 for m in methods}
    return {"B": batch, "nh": nh, "nx": nx, "T": T, "ms_per_step": ms, "best": min(ms, key=ms.get), "comparison": cmp}


def latency_vs_batch(batches, nh: int = 128, *, methods=("fused_pre", "gemv"), T: int = 20,
                     dtype="float32", repeat: int = 3) -> dict:
    """Milliseconds per forward step of each method at each batch size (nx = H) -- the latency a
    server answering B requests at once would see. Returns ``{"B": [...], "nh": nh, "noise": Noise,
    "comparisons": [the timing.Comparison at each B], method: [ms, ...], ...}`` (a verdict on one ratio at one B
    judges that comparison's pairs, not every size's noise)."""
    nh = check_positive_int(nh, "nh", high=1 << 24)
    methods = _methods(methods)
    Bs = check_sizes(batches, "batches", high=1 << 24)
    _shape(max(Bs), nh, nh, T)
    check_dtype(dtype, "dtype")
    check_repeat(repeat)
    out, noise = {"B": Bs, "nh": nh, "comparisons": []}, Noise()
    for b in Bs:
        r = method_times(b, nh, nh, T, methods=methods, dtype=dtype, repeat=repeat)
        noise = noise | r["comparison"].noise
        out["comparisons"].append(r["comparison"])
        for m in methods:
            out.setdefault(m, []).append(r["ms_per_step"][m])
    out["noise"] = noise
    return out


def overhead_vs_batch(batches, nh: int = 128, *, methods=("naive", "fused_pre"), T: int = 20,
                      dtype="float32", repeat: int = 3) -> dict:
    """Microseconds per step *per sample* of each method at each batch size (nx = H): at small B the
    per-call overhead dominates, so the method with fewer calls per step wins by more.
    Returns ``{"B": [...], "nh": nh, "noise": Noise, "comparisons": [...], method: [µs, ...], ...}``
    (``comparisons``: :func:`latency_vs_batch`'s, one per B)."""
    lat = latency_vs_batch(batches, nh, methods=methods, T=T, dtype=dtype, repeat=repeat)
    out = {"B": lat["B"], "nh": lat["nh"], "noise": lat["noise"], "comparisons": lat["comparisons"]}
    for m in _methods(methods):
        out[m] = [ms * 1e3 / b for ms, b in zip(lat[m], lat["B"])]
    return out


# --------------------------------------------------------------------------- one step, call by call
def _step_ops(method, p, x, h, c):
    """One time step spelled out as ``(ops, calls)``: ops a list of ``(kind, label, fn)`` library
    calls, calls how many numpy/BLAS/numba calls the step makes (naive rows stand for several)."""
    nh = p.nh
    B = x.shape[0]
    b = p.b_ih + p.b_hh
    if method == "naive":
        ops, z = [], {}
        for k, name in enumerate(lstm.GATES):
            r = slice(k * nh, (k + 1) * nh)
            Wi, Wh, bk = p.W_ih[r].T, p.W_hh[r].T, b[r]
            ops.append(("gemm", f"x W_ih[{name}]^T", lambda Wi=Wi: x @ Wi))
            ops.append(("gemm", f"h W_hh[{name}]^T", lambda Wh=Wh: h @ Wh))
            z[name] = x @ Wi + h @ Wh + bk
            ops.append(("elementwise", f"add z_{name}", lambda: z["i"] + z["f"]))
            ops.append(("elementwise", f"add b_{name}", lambda bk=bk: z["i"] + bk))
        for name in "ifo":  # sigmoid = 0.5 * (tanh(0.5 z) + 1): 4 ufunc calls
            ops.append(("elementwise", f"sigmoid {name} (4 ufuncs)", lambda n=name: 0.5 * (np.tanh(0.5 * z[n]) + 1.0)))
        ops += [("elementwise", "tanh g", lambda: np.tanh(z["g"])),
                ("elementwise", "f * c", lambda: z["f"] * c), ("elementwise", "i * g", lambda: z["i"] * z["g"]),
                ("elementwise", "c' = . + .", lambda: c + c), ("elementwise", "tanh c'", lambda: np.tanh(c)),
                ("elementwise", "h' = o * .", lambda: z["o"] * c)]
        return ops, 8 + 8 + 3 * 4 + 6
    if method == "fused":
        xh = np.concatenate([x, h], axis=1)
        WT = np.concatenate([p.W_ih, p.W_hh], axis=1).T
        z = np.empty((B, 4 * nh), x.dtype)
        co, ho = np.empty_like(c), np.empty_like(h)
        nx = x.shape[1]
        ops = [("elementwise", "copy x_t into [x|h]", lambda: xh.__setitem__((slice(None), slice(0, nx)), x)),
               ("elementwise", "copy h into [x|h]", lambda: xh.__setitem__((slice(None), slice(nx, None)), h)),
               ("gemm", "[x|h] W^T", lambda: np.matmul(xh, WT, out=z)),
               ("elementwise", "fused gate kernel", lambda: lstm.cell_bias(z, b, c, co, ho))]
        return ops, 4
    if method == "fused_pre":
        pre = x @ p.W_ih.T + b
        z = np.empty((B, 4 * nh), x.dtype)
        co, ho = np.empty_like(c), np.empty_like(h)
        ops = [("gemm", "h W_hh^T", lambda: np.matmul(h, p.W_hh.T, out=z)),
               ("elementwise", "fused gate kernel", lambda: lstm.cell_pre(z, pre.copy(), c, co, ho))]
        return ops, 2
    if method == "workspace":  # the tuned path: the bias is added inside the kernel
        pre = x @ p.W_ih.T
        z = np.empty((B, 4 * nh), x.dtype)
        co, ho = np.empty_like(c), np.empty_like(h)
        ops = [("gemm", "h W_hh^T", lambda: np.matmul(h, p.W_hh.T, out=z)),
               ("elementwise", "one-pass gate kernel", lambda: lstm_tuned.gates_forward(z, pre.copy(), b, c, co, ho))]
        return ops, 2
    if method == "persistent":  # the compiled loop: dot products on threads that own units, then the cells
        pre = x @ p.W_ih.T
        z = np.empty((B, 4 * nh), x.dtype)
        co, ho = np.empty_like(c), np.empty_like(h)
        ops = [("gemm", "h W_hh^T as dot products", lambda: lstm_persistent.step_products(p.W_hh, h, z)),
               ("elementwise", "one-pass gate kernel", lambda: lstm_tuned.gates_forward(z, pre.copy(), b, c, co, ho))]
        return ops, 1     # in the pass both are one parallel region per step; timed here as its two parts
    if method == "gemv":
        pre = x @ p.W_ih.T + b
        z = np.empty((B, 4 * nh), x.dtype)
        co, ho = np.empty_like(c), np.empty_like(h)

        def rows():
            for r in range(B):
                np.matmul(p.W_hh, h[r], out=z[r])
        ops = [("gemm", f"W_hh h_b, {B} gemv", rows),
               ("elementwise", "fused gate kernel", lambda: lstm.cell_pre(z, pre.copy(), c, co, ho))]
        return ops, B + 1
    preT = np.ascontiguousarray(p.W_ih @ x.T + b[:, None])
    hT, cT = np.ascontiguousarray(h.T), np.ascontiguousarray(c.T)
    zT = np.empty((4 * nh, B), x.dtype)
    AT, cT2, hT2 = np.empty((4 * nh, B), x.dtype), np.empty_like(cT), np.empty_like(hT)
    ops = [("gemm", "W_hh h^T", lambda: np.matmul(p.W_hh, hT, out=zT)),
           ("elementwise", "fused gate kernel", lambda: lstm.cell_transposed(zT, preT, 0, cT, AT, cT2, hT2))]
    return ops, 2


def profile_step(batch: int, nh: int, nx: int | None = None, *, method: str = "naive", dtype="float32",
                 repeat: int = 5) -> dict:
    """Profile one time step: time each library call of the step separately.

    Returns ``{"method", "B", "nh", "nx", "calls_per_step", "gemm_s", "elementwise_s", "gemm_share",
    "gemm_share_interval", "ops": [(kind, label, seconds), ...], "noise"}``. ``gemm_share_interval``: the share
    if the GEMM and the element-wise time were each off by the largest spread of any call's repeats, in opposite
    directions -- where the share lies when that spread is all the run's trouble (a share cannot leave 0..1 the
    way ours widened by the spread would); None where other programs' load could inflate the times (wall clock while
    the machine was busy), which no spread bounds. ``calls_per_step`` counts numpy/BLAS/numba calls -- the CPU
    analogue of the seed's kernel launches. (For ``fused_pre``/``transposed`` the big input GEMM done
    once for all steps is not part of the step.)"""
    batch, nh, nx, _ = _shape(batch, nh, nh if nx is None else nx)
    method = check_choice(method, "method", lstm.METHODS)
    repeat = check_repeat(repeat)
    p = lstm.init_params(nx, nh, seed=0, dtype=check_dtype(dtype, "dtype"))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, nx)).astype(p.dtype)
    h = rng.uniform(-0.5, 0.5, (batch, nh)).astype(p.dtype)
    c = rng.uniform(-0.5, 0.5, (batch, nh)).astype(p.dtype)
    ops, n_calls = _step_ops(method, p, x, h, c)
    timings = [(kind, label, measure(fn, repeat=repeat, warmup=1)) for kind, label, fn in ops]
    rows = [(kind, label, t.median) for kind, label, t in timings]
    noise = Noise()
    for _, _, t in timings:
        noise = noise | t.noise
    gemm = sum(s for k, _, s in rows if k == "gemm")
    ew = sum(s for k, _, s in rows if k == "elementwise")
    s2 = (1 + noise.spread) ** 2
    return {"method": method, "B": batch, "nh": nh, "nx": nx, "calls_per_step": n_calls, "gemm_s": gemm,
            "elementwise_s": ew, "gemm_share": gemm / (gemm + ew),
            "gemm_share_interval": None if noise.busy else (gemm / (gemm + ew * s2), gemm * s2 / (gemm * s2 + ew)),
            "ops": rows, "noise": noise}


def _training_phases(p, X, dH):
    """The phases of ``lstm_forward(method="fused_pre")`` + ``lstm_backward`` over a whole sequence, each
    a ``(phase, kind, fn, flops)`` that repeats exactly that work (the library calls, in their loops)
    on buffers filled by one real run, so the values -- and the speed -- are those of training."""
    T, B, nx = X.shape
    nh = p.nh
    out = lstm.lstm_forward(p, X, method="fused_pre", return_cache=True)
    cache = out[2]
    X2 = X.reshape(T * B, nx)
    W_ih_T, W_hh_T = p.W_ih.T, p.W_hh.T
    bias = p.b_ih + p.b_hh
    A = cache.A.copy()
    z = np.empty((B, 4 * nh), X.dtype)
    Hs, Cs = cache.H, cache.C
    h_prev = [cache.h0] + [Hs[t] for t in range(T - 1)]
    c_prev = [cache.c0] + [Cs[t] for t in range(T - 1)]
    Hw, Cw = np.empty_like(Hs), np.empty_like(Cs)
    dZ = np.empty((T, B, 4 * nh), X.dtype)
    dh, dc = np.zeros((B, nh), X.dtype), np.zeros((B, nh), X.dtype)
    # one real backward fills dZ, so the GEMMs below multiply training's numbers
    for t in range(T - 1, -1, -1):
        lstm.cell_backward(cache.A[t], Cs[t], c_prev[t], dH[t], dh, dc, dZ[t])
        np.matmul(dZ[t], p.W_hh, out=dh)
    dZ2 = dZ.reshape(T * B, 4 * nh)
    H_prev = np.concatenate([cache.h0[None], Hs[:-1]], axis=0).reshape(T * B, nh)

    def recurrent_fwd():
        for t in range(T):
            np.matmul(h_prev[t], W_hh_T, out=z)

    def cells_fwd():
        for t in range(T):
            lstm.cell_pre(z, A[t], c_prev[t], Cw[t], Hw[t])

    def cells_bwd():
        dc[:] = 0.0
        for t in range(T - 1, -1, -1):
            lstm.cell_backward(cache.A[t], Cs[t], c_prev[t], dH[t], dh, dc, dZ[t])

    def recurrent_bwd():
        for t in range(T - 1, -1, -1):
            np.matmul(dZ[t], p.W_hh, out=dh)

    g = lambda m, k, n: gemm_flops(m, n, k)  # noqa: E731  (rows, inner, columns)
    return [
        ("allocate H, C, gates", "memory", lambda: (np.empty_like(Hs), np.empty_like(Cs), np.empty_like(A)), 0),
        ("input GEMM, all T at once", "gemm", lambda: X2 @ W_ih_T, g(T * B, nx, 4 * nh)),
        ("add the biases", "elementwise", lambda: A.__iadd__(bias), 0),
        (f"recurrent GEMMs ({T} calls)", "gemm", recurrent_fwd, T * g(B, nh, 4 * nh)),
        (f"gate kernels ({T} calls)", "elementwise", cells_fwd, 0),
        (f"backward gate kernels ({T} calls)", "elementwise", cells_bwd, 0),
        (f"backward recurrent GEMMs ({T} calls)", "gemm", recurrent_bwd, T * g(B, 4 * nh, nh)),
        ("copy: stack h_0..h_T-1", "memory",
         lambda: np.concatenate([cache.h0[None], Hs[:-1]], axis=0), 0),
        ("weight-gradient GEMMs (2)", "gemm", lambda: (dZ2.T @ X2, dZ2.T @ H_prev),
         g(4 * nh, T * B, nx) + g(4 * nh, T * B, nh)),
        ("input-gradient GEMM", "gemm", lambda: dZ2 @ p.W_ih, g(T * B, 4 * nh, nx)),
        ("bias gradient (sum)", "elementwise", lambda: dZ2.sum(axis=0), 0),
    ]


def profile_training(batch: int, nh: int, nx: int | None = None, T: int = 20, *, dtype="float32",
                     repeat: int = 5, peak: float | None = None) -> dict:
    """Where the milliseconds of one training pass go: ``lstm_forward(method="fused_pre")`` +
    ``lstm_backward`` over ``X (T, B, nx)``, split into its phases (:func:`_training_phases`), each
    timed on its own, against the whole pass timed end to end in the same run.

    Returns ``{"rows": [{"phase", "kind", "ms", "share", "gflop", "gflops", "pct_peak"}, ...], "total_ms",
    "sum_ms", "other_ms", "peak", "noise"}`` (ms per *time step*). ``other_ms`` = end to end minus the
    phases: Python per step, call overheads and threads waiting for each other. ``gflops`` /
    ``pct_peak`` for GEMM rows, against ``peak`` (default :func:`course_lib.core.timing.peak_gflops`,
    measured now, same BLAS and threads)."""
    batch, nh, nx, T = _shape(batch, nh, nh if nx is None else nx, T)
    repeat = check_repeat(repeat)
    dtype = check_dtype(dtype, "dtype")
    peak = peak_gflops(dtype) if peak is None else check_float(peak, "peak", low=0.0, low_inclusive=False)
    p, X = _random_problem(batch, nh, nx, T, dtype)
    dH = np.random.default_rng(7).standard_normal((T, batch, nh)).astype(p.dtype)
    phases = _training_phases(p, X, dH)
    end_to_end = _runner(p, X, "fused_pre", True, dH)
    cmp = compare(repeat=repeat, warmup=1, whole=end_to_end,
                  **{f"p{i}": fn for i, (_, _, fn, _) in enumerate(phases)})
    total = cmp.timings["whole"].median
    rows = []
    for i, (name, kind, _, flops) in enumerate(phases):
        sec = cmp.timings[f"p{i}"].median
        gf = flops / sec / 1e9 if flops else None
        rows.append({"phase": name, "kind": kind, "ms": 1e3 * sec / T, "share": sec / total,
                     "gflop": flops / 1e9, "gflops": gf, "pct_peak": None if gf is None else 100 * gf / peak})
    summed = sum(r["ms"] for r in rows)
    return {"rows": rows, "total_ms": 1e3 * total / T, "sum_ms": summed,
            "other_ms": 1e3 * total / T - summed, "peak": peak, "noise": _phases_noise(cmp, len(phases))}


def _phases_noise(cmp, n: int) -> Noise:
    """The noise of the phases that take at least :data:`.lstm_profile.MATTERS` of the whole pass (pairs of phase
    ``p{i}`` against the whole): a phase of a few µs whose repeats scatter cannot change the GEMM share the
    profile reports, so its noise is not judged (the whole comparison's noise when no phase is that large)."""
    whole = cmp.timings["whole"].median
    big = [f"p{i}" for i in range(n) if cmp.timings[f"p{i}"].median >= MATTERS * whole]
    return noise_of_pairs([cmp.pairs(k, "whole") for k in big], cmp.noise.others) if big else cmp.noise


# --------------------------------------------------------------------------- training throughput
def lm_throughput(ids, V: int, *, methods=lstm.METHODS, repeat: int = 1, **train) -> dict:
    """Train the character LM (:func:`course_lib.models.lstm_lm.train_lm`, same batches) with each method,
    interleaved ``repeat`` times; ``train`` goes to ``train_lm`` (nh, T, batch, steps, lr, seed).

    Returns ``{"tokens_per_s": {method: best over repeats}, "loss": {method: loss curve},
    "best": name, "comparison": Comparison}`` (tokens/s counts the training loop only, as ``train_lm``)."""
    methods = _methods(methods)
    repeat = check_repeat(repeat)
    results: dict = {m: [] for m in methods}

    def run(m):
        return lambda: results[m].append(lstm_lm.train_lm(ids, V, method=m, **train))

    cmp = compare(repeat=repeat, warmup=0, **{m: run(m) for m in methods})
    tps = {m: max(r.info["tokens_per_s"] for r in rs) for m, rs in results.items()}
    return {"tokens_per_s": tps, "loss": {m: rs[-1].history["loss"] for m, rs in results.items()},
            "best": max(tps, key=tps.get), "comparison": cmp}


# --------------------------------------------------------------------------- the slider
def widget_compute(batch: int = 64, nh: int = 256, method: str = "fused_pre", T: int = 10) -> dict:
    """For the chapter's slider: ms per forward step of ``method`` and of ``naive`` at (B, H, nx = H),
    with the GFLOP/s of the step's two GEMMs (``x W_ih^T`` and ``h W_hh^T``)."""
    method = check_choice(method, "method", lstm.METHODS)
    _shape(batch, nh, nh, T)
    ms = method_times(batch, nh, nh, T, methods=tuple(dict.fromkeys(("naive", method))), repeat=3)["ms_per_step"]
    flops = 2 * gemm_flops(batch, 4 * nh, nh)
    return {"B": batch, "nh": nh, "method": method, "ms_per_step": ms,
            "gflops": {m: flops / (t * 1e-3) / 1e9 for m, t in ms.items()}}
