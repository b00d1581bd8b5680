"""Seed Fig. 7 for chapter 05 (experiments folder): one RNN training step in a framework against the
hand-written numpy step -- ``numpy`` (``rnn.bptt_linear`` + ``rnn.sgd_step``), ``numba``
(:func:`course_lib.models.fast_rnn.train_step`) and ``torch`` (``torch.nn.RNN`` + autograd + SGD, when torch is
installed). Re-exported by :mod:`course_lib.experiments.profile`.

``torch_steps(params, X, Y, lr, threads=None)``   the torch step, on the course's parameters
``framework_vs_numpy(sizes, T)``                  time per step of each method over hidden sizes
"""
from __future__ import annotations

import numpy as np

from ..core import backend, sysload, timing
from ..core.validate import check_float, check_int, check_positive_int, check_sizes
from ..models import fast_rnn
from ..models.rnn import RNNParams, check_inputs, init_params

__all__ = ["FRAMEWORK_METHODS", "torch_steps", "framework_vs_numpy"]


FRAMEWORK_METHODS = ("numpy", "numba", "torch")
"""Fig. 7's columns: ``numpy`` = the hand-written step of chapters 01-02 (``rnn.bptt_linear`` +
``rnn.sgd_step``), ``numba`` = :func:`course_lib.models.fast_rnn.train_step` (compiled fused kernels +
BLAS), ``torch`` = ``torch.nn.RNN`` + autograd + SGD (only when torch is installed)."""


def torch_steps(params: RNNParams, X: np.ndarray, Y: np.ndarray, lr: float, threads: int | None = None):
    """``{"torch explicit ops": f, "torch.nn.RNN": g}``: two zero-argument torch training steps of the
    same maths (float32, no biases), or None when torch is not installed. ``explicit`` writes the
    step with torch tensor ops and no autograd; ``nn.RNN`` uses the framework (module + autograd +
    ``torch.optim.SGD``). Each returns the loss before its update."""
    if Y is None:
        raise TypeError("Y: expected the targets (T, B, ny), got None")
    X, Y, _ = check_inputs(params, X, Y, None)
    lr = check_float(lr, "lr", low=0.0)
    if threads is not None:
        threads = check_positive_int(threads, "threads", high=1024)
    try:
        import torch
    except Exception:  # torch is optional (extra 'bench')
        return None
    _torch_threads(threads)
    Xt, Yt = torch.from_numpy(np.ascontiguousarray(X)), torch.from_numpy(np.ascontiguousarray(Y))
    W = [torch.from_numpy(w.copy()) for w in (params.Wxh, params.Whh, params.Why)]
    T, B, _ = X.shape

    @torch.no_grad()
    def explicit():
        Wxh, Whh, Why = W
        H = torch.matmul(Xt.reshape(T * B, -1), Wxh).reshape(T, B, -1)
        torch.tanh_(H[0])
        for t in range(1, T):
            H[t].addmm_(H[t - 1], Whh).tanh_()
        Yh = torch.tanh(H.reshape(T * B, -1) @ Why)
        e = Yh - Yt.reshape(T * B, -1)
        loss = float((e * e).sum())
        D = 2 * e * (1 - Yh * Yh)
        DZ = (D @ Why.T).reshape(T, B, -1)
        DZ[T - 1].mul_(1 - H[T - 1] * H[T - 1])
        for t in range(T - 2, -1, -1):
            DZ[t].addmm_(DZ[t + 1], Whh.T).mul_(1 - H[t] * H[t])
        H2, DZ2 = H.reshape(T * B, -1), DZ.reshape(T * B, -1)
        gy = H2.T @ D
        gh = H[:-1].reshape((T - 1) * B, -1).T @ DZ[1:].reshape((T - 1) * B, -1)
        gx = Xt.reshape(T * B, -1).T @ DZ2
        Wxh.sub_(lr * gx)
        Whh.sub_(lr * gh)
        Why.sub_(lr * gy)
        return loss

    cell = torch.nn.RNN(params.nx, params.nh, nonlinearity="tanh", bias=False)
    out_layer = torch.nn.Linear(params.nh, params.ny, bias=False)
    with torch.no_grad():
        cell.weight_ih_l0.copy_(torch.from_numpy(params.Wxh.T.copy()))
        cell.weight_hh_l0.copy_(torch.from_numpy(params.Whh.T.copy()))
        out_layer.weight.copy_(torch.from_numpy(params.Why.T.copy()))
    opt = torch.optim.SGD(list(cell.parameters()) + list(out_layer.parameters()), lr=lr)

    def module():
        opt.zero_grad(set_to_none=True)
        H, _ = cell(Xt)
        loss = ((torch.tanh(out_layer(H)) - Yt) ** 2).sum()
        loss.backward()
        opt.step()
        return float(loss.detach())

    return {"torch explicit ops": explicit, "torch.nn.RNN": module}


def _torch_threads(n: int | None = None) -> int | None:
    """torch's intra-op thread count (set to ``n`` when given); None where torch is not installed."""
    try:
        import torch
    except Exception:  # torch is optional (extra 'bench')
        return None
    if n is not None:
        torch.set_num_threads(n)
    return torch.get_num_threads()


def framework_vs_numpy(sizes=(8, 16, 32, 64, 128, 256), T: int = 10, *, repeat: int = 5,
                       seed: int = 0, threads: int | None = None) -> dict:
    """Seed Fig. 7: one training step (B = nx = nh = ny = n, T steps, float32, lr = 0) of
    hand-written numpy against compiled steps, at each ``n`` in ``sizes``, interleaved per size.

    Columns (``FRAMEWORK_METHODS``): ``numpy``, ``numba`` and, when torch imports, ``torch``
    (``torch.nn.RNN`` + autograd + SGD). Also measured: ``call_overhead_s``, the time of each method
    on the smallest possible problem (T = 1, n = 1) -- what one call costs before any arithmetic.
    Returns ``{"sizes", "T", "methods", "seconds": {method: [..]}, "vs_numpy": {method: [numpy time /
    method time]}, "call_overhead_s": {method: s}, "noise", "noise_by_size"}`` (``vs_numpy`` > 1: faster than
    numpy; ``noise`` all the runs', ``noise_by_size[i]`` the run at ``sizes[i]`` alone). ``threads``: hold numba,
    the BLAS and torch to that many threads meanwhile (at tiny sizes their idle pools only spin; on one thread
    every step is timed by CPU clock, which other programs cannot inflate); None: as they are.
    """
    sizes = check_sizes(sizes, "sizes", high=1024)
    T = check_positive_int(T, "T", high=1000)
    repeat = check_positive_int(repeat, "repeat", high=1000)
    seed = check_int(seed, "seed", low=0)

    def steps(n: int, T: int) -> dict:
        p = init_params(n, n, n, seed=seed)
        rng = np.random.default_rng(seed)
        X = rng.uniform(-1, 1, (T, n, n)).astype(np.float32)
        Y = rng.uniform(-1, 1, (T, n, n)).astype(np.float32)
        ws = fast_rnn.make_workspace(T, n, n, n, n)
        fns = {"numpy": lambda: sgd_step(p, bptt_linear(p, X, Y), 0.0),
               "numba": lambda: fast_rnn.train_step(p, X, Y, 0.0, workspace=ws)}
        ts = torch_steps(p, X, Y, 0.0)
        if ts is not None:
            fns["torch"] = ts["torch.nn.RNN"]
        return fns

    from ..models.rnn import bptt_linear, sgd_step

    if threads is not None:
        threads = check_positive_int(threads, "threads", high=backend.max_threads())
    torch_before, numba_before = _torch_threads(), backend.get_threads()
    try:
        if threads is not None:
            backend.set_threads(threads)
            _torch_threads(threads)
        with backend.blas_threads(threads):
            if threads is not None:   # the pools of a threaded call just before may still spin on the cores
                sysload.settle()
            tiny = timing.compare(repeat=max(repeat, 5), warmup=2, **steps(1, 1))
            methods = list(tiny.timings)
            seconds = {m: [] for m in methods}
            noise, by_size = tiny.noise, []
            for n in sizes:
                cmp = timing.compare(repeat=repeat, warmup=1, **steps(n, T))
                noise = noise | cmp.noise
                by_size.append(cmp.noise)
                for m in methods:
                    seconds[m].append(cmp.timings[m].min)
    finally:
        if threads is not None:       # numba's and torch's counts as they were (the BLAS's: by the block)
            import numba
            numba.set_num_threads(numba_before)
            _torch_threads(torch_before)
    vs = {m: [a / b for a, b in zip(seconds["numpy"], seconds[m])] for m in methods}
    return {"sizes": sizes, "T": T, "methods": methods, "seconds": seconds, "vs_numpy": vs,
            "call_overhead_s": {m: tiny.timings[m].min for m in methods}, "noise": noise, "noise_by_size": by_size}
