"""Where does a training step spend its time? The seed's §4.10 phase breakdown (layer 2: methods).

The seed timed one epoch of its Halide RNN in ten phases and found the three matrix-product
phases (compute h_t, hidden delta, gradient updates) plus "saving all intermediate variables"
at ~22-25% each. :func:`profile_step` does the same for two steps of the same maths:

* ``"reference"`` -- written the way the seed's step is organised: a time loop that computes
  ``h_t``, then ``ŷ_t``, then copies both into the arrays kept for backpropagation; the loss;
  a reverse loop with the output delta, the hidden delta and the gradient updates of every
  time step; finally the descent ``W − lr·g``.
* ``"fast"`` -- :mod:`course_lib.models.fast_rnn`'s phases: one GEMM per phase over all time steps,
  fused element-wise kernels, nothing copied (intermediates are computed where they are kept),
  the loss fused into the output delta.

Both compute the same gradients as :func:`course_lib.models.rnn.bptt_linear` (tests check it).

``PHASES``                                  the eight phase names, in order
``reference_step_phased(params, X, Y, lr)`` -> (new params, loss, {phase: seconds})
``fast_step_phased(params, X, Y, lr, workspace=None)`` -> (new params, loss, {phase: seconds})
``profile_step(kind, T, B, n, repeat, seed)`` -> dict with seconds and percentages per phase

Chapter 05's other measurements live here too (compute functions behind its plots and widget):

``thread_scaling(variants, threads, n)``   seed Fig. 12: time vs thread count for each variant
``fusion_comparison(B, n, T)``             loop fusion vs separate passes (seed §4.9: ~2x)
``error_model_comparison(n)``              numba's error model and SIMD: the same kernel, 2 ways
``VARIANTS``                               the variants ``thread_scaling`` knows
"""
from __future__ import annotations

import time

import numpy as np
from numba import njit

from ..core import backend, timing
from ..models import fast_rnn
from ..models.rnn import RNNParams, init_params, _check_inputs
from ..core.validate import check_choice, check_float, check_positive_int

__all__ = ["PHASES", "SEED_PERCENT", "VARIANTS", "reference_step_phased", "fast_step_phased", "profile_step",
           "thread_scaling", "fusion_comparison", "variant_time", "error_model_comparison"]

PHASES = (
    "compute h_t",
    "compute ŷ_t",
    "saving intermediates",
    "loss",
    "output delta",
    "hidden delta",
    "gradient updates",
    "descent",
)

#: the seed's §4.10 numbers (%), with its two "initialize" rows folded into the next phase
SEED_PERCENT = {
    "compute h_t": 22.16 + 0.05,
    "compute ŷ_t": 5.78,
    "saving intermediates": 22.55,
    "loss": 0.79,
    "output delta": 0.54 + 0.16,
    "hidden delta": 23.33,
    "gradient updates": 24.60,
    "descent": 0.06,
}


class _Clock:
    """Adds the time since the previous ``tick`` to a phase."""

    def __init__(self):
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.t = time.perf_counter()

    def tick(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] += now - self.t
        self.t = now


def reference_step_phased(params: RNNParams, X: np.ndarray, Y: np.ndarray, lr: float,
                          h0: np.ndarray | None = None):
    """One plain numpy step organised like the seed's, timed phase by phase.

    X (T, B, nx), Y (T, B, ny). Returns ``(new params, loss, {phase: seconds})``.
    """
    X, Y, h0 = _check_inputs(params, X, Y, h0)
    lr = check_float(lr, "lr", low=0.0)
    Wxh, Whh, Why = params.Wxh, params.Whh, params.Why
    T = X.shape[0]
    H, Yhat = [], []
    c = _Clock()
    h = h0
    for t in range(T):                                            # forward, one time step at a time
        h = np.tanh(X[t] @ Wxh + h @ Whh)
        c.tick("compute h_t")
        yhat = np.tanh(h @ Why)
        c.tick("compute ŷ_t")
        H.append(h.copy())                                        # keep what backprop needs
        Yhat.append(yhat.copy())
        c.tick("saving intermediates")
    Hs = np.stack(H)
    Yh = np.stack(Yhat)
    c.tick("saving intermediates")
    diff = Yh - Y
    E = float(np.sum(diff.astype(np.float64) ** 2))
    c.tick("loss")
    gWxh, gWhh, gWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    dh_next = np.zeros_like(h0)
    for t in range(T - 1, -1, -1):                                # backward, one time step at a time
        dO = 2 * (Yh[t] - Y[t]) * (1 - Yh[t] ** 2)
        c.tick("output delta")
        dpre = (dO @ Why.T + dh_next) * (1 - Hs[t] ** 2)
        dh_next = dpre @ Whh.T
        c.tick("hidden delta")
        h_prev = Hs[t - 1] if t > 0 else h0
        gWhy += Hs[t].T @ dO
        gWhh += h_prev.T @ dpre
        gWxh += X[t].T @ dpre
        c.tick("gradient updates")
    new = RNNParams(Wxh - lr * gWxh, Whh - lr * gWhh, Why - lr * gWhy)
    c.tick("descent")
    return new, E, c.seconds


def fast_step_phased(params: RNNParams, X: np.ndarray, Y: np.ndarray, lr: float, *,
                     workspace: fast_rnn.Workspace | None = None, h0: np.ndarray | None = None):
    """:func:`course_lib.models.fast_rnn.train_step`, timed phase by phase.

    "saving intermediates" is ~0 (H is computed where backprop reads it) and the loss is fused
    into the output delta (its time is counted there). Returns ``(new params, loss, {phase: s})``.
    """
    lr = check_float(lr, "lr", low=0.0)
    params, X, Y, h0, ws = fast_rnn._validate(params, X, Y, h0, workspace)
    c = _Clock()
    fast_rnn.forward_into(ws, params, X, h0)
    c.tick("compute h_t")
    fast_rnn.output_pre_activation_into(ws, params)
    c.tick("compute ŷ_t")
    c.tick("saving intermediates")
    E = fast_rnn.output_delta_into(ws, Y)
    c.tick("output delta")
    c.tick("loss")
    fast_rnn.backward_into(ws, params)
    c.tick("hidden delta")
    fast_rnn.weight_gradients_into(ws, X, h0)
    c.tick("gradient updates")
    new = fast_rnn.descend(params, ws, lr)
    c.tick("descent")
    return new, E, c.seconds


def profile_step(kind: str = "fast", T: int = 10, B: int = 256, n: int = 256, *, repeat: int = 3,
                 seed: int = 0, dtype=np.float32) -> dict:
    """Phase breakdown of one training step at ``nx = nh = ny = n``.

    Runs ``repeat`` steps (after one warm-up) and keeps, per phase, the median seconds.
    Returns ``{"kind", "total_s", "seconds": {phase: s}, "percent": {phase: %}}``.
    """
    kind = check_choice(kind, "kind", ("reference", "fast"))
    T = check_positive_int(T, "T", high=1000)
    B = check_positive_int(B, "B", high=4096)
    n = check_positive_int(n, "n", high=4096)
    repeat = check_positive_int(repeat, "repeat")
    params = init_params(n, n, n, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (T, B, n)).astype(dtype)
    Y = rng.uniform(-1, 1, (T, B, n)).astype(dtype)
    if kind == "fast":
        ws = fast_rnn.make_workspace(T, B, n, n, n, dtype)
        run = lambda: fast_step_phased(params, X, Y, 1e-4, workspace=ws)  # noqa: E731
    else:
        run = lambda: reference_step_phased(params, X, Y, 1e-4)  # noqa: E731
    run()
    samples = [run()[2] for _ in range(repeat)]
    seconds = {p: float(np.median([s[p] for s in samples])) for p in PHASES}
    total = sum(seconds.values())
    percent = {p: 100.0 * s / total for p, s in seconds.items()}
    return {"kind": kind, "total_s": total, "seconds": seconds, "percent": percent}


# --------------------------------------------------------------------------- threads (seed Fig. 12)
VARIANTS = ("blas matmul", "numba parallel matmul", "numba parallel+tiled matmul", "fused element-wise",
            "fast step", "numpy step")


def _variant(name: str, n: int, seed: int):
    """A zero-argument callable running one variant at size ``n``, and its FLOPs (None: not counted)."""
    rng = np.random.default_rng(seed)
    if name.endswith("matmul"):
        A = rng.standard_normal((n, n)).astype(np.float32)
        Bm = rng.standard_normal((n, n)).astype(np.float32)
        C = np.empty((n, n), np.float32)
        if name == "blas matmul":
            return (lambda: np.matmul(A, Bm, out=C)), timing.gemm_flops(n, n, n)
        from ..algorithms import matmul as kernels  # noqa: PLC0415  (chapter 04's kernel ladder)

        f = kernels.matmul_parallel if name == "numba parallel matmul" else kernels.matmul_parallel_tiled
        return (lambda: f(A, Bm, out=C)), timing.gemm_flops(n, n, n)
    if name == "fused element-wise":
        z = rng.standard_normal((4 * n, n)).astype(np.float32)
        r = rng.standard_normal((4 * n, n)).astype(np.float32)
        h = np.tanh(rng.standard_normal((4 * n, n))).astype(np.float32)
        return (lambda: fast_rnn._add_tanh_backward_par(z, r, h)), None
    T = 4
    params = init_params(n, n, n, seed=seed)
    X = rng.uniform(-1, 1, (T, n, n)).astype(np.float32)
    Y = rng.uniform(-1, 1, (T, n, n)).astype(np.float32)
    flops = fast_rnn.step_flops(T, n, n, n, n)
    if name == "fast step":
        ws = fast_rnn.make_workspace(T, n, n, n, n)
        return (lambda: fast_rnn.train_step(params, X, Y, 0.0, workspace=ws, inplace=True)), flops
    step = fast_rnn.NumpyStep(T, n, n, n, n)
    return (lambda: step(params, X, Y, 0.0)), flops


def variant_time(variant: str = "fast step", threads: int = 1, n: int = 256, *, repeat: int = 3,
                 seed: int = 0) -> dict:
    """Time one variant at one thread count (the widget's compute function).

    Returns ``{"variant", "threads", "n", "seconds" (best of repeat), "gflops" (None for the
    element-wise kernel)}``. The thread count is restored afterwards.
    """
    variant = check_choice(variant, "variant", VARIANTS)
    n = check_positive_int(n, "n", high=2048)
    before = backend.get_threads()
    threads = backend.set_threads(threads)
    try:
        fn, flops = _variant(variant, n, seed)
        t = timing.measure(fn, repeat=check_positive_int(repeat, "repeat"), warmup=1, number=1)
    finally:
        backend.set_threads(before)
    return {"variant": variant, "threads": threads, "n": n, "seconds": t.min,
            "gflops": None if flops is None else flops / t.min / 1e9}


def thread_scaling(variants=("blas matmul", "numba parallel matmul", "numba parallel+tiled matmul"),
                   threads=None, n: int = 256, *, repeat: int = 3, seed: int = 0) -> dict:
    """Seed Fig. 12: each variant timed at every thread count in ``threads`` (default 1..cores).

    Returns ``{"threads": [..], "n", "seconds": {variant: [..]}, "speedup": {variant: [..]}}``
    where speedup is over the same variant on the first thread count.
    """
    variants = [check_choice(v, "variants[i]", VARIANTS) for v in variants]
    if not variants:
        raise ValueError("variants: expected at least one variant, got none")
    import numba  # noqa: PLC0415

    top = min(backend.cpu_count(), int(numba.config.NUMBA_NUM_THREADS))
    threads = list(range(1, top + 1)) if threads is None else [int(t) for t in threads]
    for t in threads:
        if not 1 <= t <= int(numba.config.NUMBA_NUM_THREADS):
            raise ValueError(f"threads: expected counts between 1 and {numba.config.NUMBA_NUM_THREADS}, got {t}")
    seconds = {v: [variant_time(v, t, n, repeat=repeat, seed=seed)["seconds"] for t in threads] for v in variants}
    speedup = {v: [s[0] / x for x in s] for v, s in seconds.items()}
    return {"threads": threads, "n": n, "seconds": seconds, "speedup": speedup}


# --------------------------------------------------------------------------- fusion (seed §4.9)
def _separate_hidden_delta(dz, r, h, sq):
    np.add(dz, r, out=dz)            # pass 1
    np.multiply(h, h, out=sq)        # pass 2
    np.subtract(1, sq, out=sq)       # pass 3
    np.multiply(dz, sq, out=dz)      # pass 4


def _separate_output_delta(z, y, e):
    np.tanh(z, out=z)                # ŷ
    np.subtract(z, y, out=e)         # e = ŷ − y
    loss = float(np.vdot(e, e))      # Σ e²
    np.multiply(z, z, out=z)         # ŷ²
    np.subtract(1, z, out=z)
    np.multiply(z, e, out=z)
    np.multiply(z, 2, out=z)         # 2 e (1 − ŷ²)
    return loss


def fusion_comparison(B: int = 256, n: int = 256, T: int = 10, *, repeat: int = 5, seed: int = 0) -> dict:
    """The element-wise work of a training step on ``(T*B, n)`` float32 arrays, three ways:

    * ``separate``: one numpy pass per operation (11 passes: 4 for the hidden delta, 7 for
      tanh + loss + output delta), 1 thread;
    * ``fused_1thread``: the fused numba kernels of :mod:`fast_rnn` (2 passes), 1 thread;
    * ``fused_all``: the same kernels on all threads.

    Returns seconds (best of ``repeat``) for each, ``fusion_speedup = separate / fused_1thread``
    and ``total_speedup = separate / fused_all``, and ``max_abs_diff`` between the two results.
    """
    B = check_positive_int(B, "B", high=4096)
    n = check_positive_int(n, "n", high=4096)
    T = check_positive_int(T, "T", high=1000)
    rng = np.random.default_rng(seed)
    shape = (T * B, n)
    z0 = rng.standard_normal(shape).astype(np.float32)
    y = rng.uniform(-1, 1, shape).astype(np.float32)
    dz0 = rng.standard_normal(shape).astype(np.float32)
    r = rng.standard_normal(shape).astype(np.float32)
    h = np.tanh(rng.standard_normal(shape)).astype(np.float32)
    z, dz, e, sq = (np.empty(shape, np.float32) for _ in range(4))
    z2, dz2 = np.empty_like(z), np.empty_like(dz)

    def separate():
        np.copyto(z, z0)
        np.copyto(dz, dz0)
        _separate_hidden_delta(dz, r, h, sq)
        return _separate_output_delta(z, y, e)

    def fused():
        np.copyto(z2, z0)
        np.copyto(dz2, dz0)
        fast_rnn._add_tanh_backward_par(dz2, r, h)
        return fast_rnn._output_delta_loss_par(z2, y)

    def copies():
        np.copyto(z2, z0)
        np.copyto(dz2, dz0)

    before = backend.get_threads()
    try:
        backend.set_threads(1)
        one = timing.compare(separate=separate, fused=fused, copies=copies, repeat=repeat, warmup=1)
        backend.set_threads(before if before > 1 else backend.cpu_count())
        many = timing.compare(fused=fused, copies=copies, repeat=repeat, warmup=1)
    finally:
        backend.set_threads(before)
    # the two input copies are the same in every version: take them out
    c1, c2 = one.timings["copies"].min, many.timings["copies"].min
    sep = max(one.timings["separate"].min - c1, 1e-9)
    f1 = max(one.timings["fused"].min - c1, 1e-9)
    fa = max(many.timings["fused"].min - c2, 1e-9)
    loss_sep, loss_fused = separate(), fused()
    diff = max(float(np.max(np.abs(z - z2))), float(np.max(np.abs(dz - dz2))))
    return {"B": B, "n": n, "T": T, "separate_s": sep, "fused_1thread_s": f1, "fused_all_s": fa,
            "fusion_speedup": sep / f1, "total_speedup": sep / fa, "max_abs_diff": diff,
            "loss_rel_diff": abs(loss_sep - loss_fused) / max(abs(loss_sep), 1e-30)}


# --------------------------------------------------------------------------- a vectorisation trap
@njit(fastmath=True, cache=True)
def _tanh_like_python_errors(z):
    for i in range(z.shape[0]):
        x = z[i]
        z[i] = x * (np.float32(27) + x * x) / (np.float32(27) + np.float32(9) * x * x)


@njit(fastmath=True, error_model="numpy", cache=True)
def _tanh_like_numpy_errors(z):
    for i in range(z.shape[0]):
        x = z[i]
        z[i] = x * (np.float32(27) + x * x) / (np.float32(27) + np.float32(9) * x * x)


def error_model_comparison(n: int = 1_000_000, *, repeat: int = 5, seed: int = 0) -> dict:
    """The same element-wise loop (a rational function with one division per element, float32)
    compiled with numba's default ``error_model="python"`` -- which checks every division for a
    zero divisor so it can raise ZeroDivisionError, a branch that stops LLVM's vectoriser -- and
    with ``error_model="numpy"`` (IEEE semantics: x/0 is inf, no branch, SIMD).

    Returns ``{"n", "python_s", "numpy_s", "speedup", "same_result"}``.
    """
    n = check_positive_int(n, "n", high=100_000_000)
    z = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    a, b = z.copy(), z.copy()
    cmp = timing.compare(python=lambda: _tanh_like_python_errors(a), numpy=lambda: _tanh_like_numpy_errors(b),
                         repeat=check_positive_int(repeat, "repeat"), warmup=1)
    a, b = z.copy(), z.copy()
    _tanh_like_python_errors(a)
    _tanh_like_numpy_errors(b)
    return {"n": n, "python_s": cmp.timings["python"].min, "numpy_s": cmp.timings["numpy"].min,
            "speedup": cmp.timings["python"].min / cmp.timings["numpy"].min,
            "same_result": bool(np.allclose(a, b, rtol=1e-5, atol=1e-6))}
