"""Where the milliseconds of the tuned LSTM go (experiments layer; chapter 09).

``profile_pass(batch, nh, nx, T, backward=True)`` splits one pass of ``method="workspace"``
(:mod:`course_lib.models.lstm_tuned`) -- forward, or forward + backward -- into its phases and times
each on its own, interleaved with the whole pass in one :func:`course_lib.core.timing.compare` run.
Shapes: ``X (T, B, nx)``, ``nh`` hidden units. ``torch_pass`` is torch's side of a comparison; torch runs in
a process of its own (:mod:`course_lib.experiments.lstm_rivals`): in this one its thread pool and the
BLAS's would spin on each other's cores.

Every GEMM row carries its GFLOP/s against the *peak for that GEMM's shape*: the best rate of one
such product on hot operands (best of at least 7 repeats, and never below the phase's own rate), measured in the same run (a ``(16, 256) x (256, 1024)`` product never
reaches the rate of a big square one, so the big square peak would blame the wrong thing). The row
``other`` (``OTHER``) is the whole pass minus its phases timed alone: the Python loop over T, call overheads,
threads waiting, and data colder in the pass than in a phase repeated on its own. Only phases that take at
least ``MATTERS`` of the pass are judged by the noise guard.
"""
from __future__ import annotations

import numpy as np

from ..core.noise import noise_of_pairs
from ..core.timing import compare, gemm_flops, measure
from ..core.validate import check_bool, check_positive_int
from ..models import lstm, lstm_tuned

__all__ = ["profile_pass", "phases", "torch_pass", "OTHER", "MATTERS"]

OTHER = "other (the loop in Python, calls, colder data)"   # the whole pass less its phases timed alone
MATTERS = 0.05     # a phase under 5% of the pass cannot change what the profile says: its noise is not judged


def _problem(batch, nh, nx, T, dtype):
    p = lstm.init_params(nx, nh, seed=0, dtype=dtype)
    X = np.random.default_rng(1).standard_normal((T, batch, nx)).astype(dtype)
    dH = np.random.default_rng(2).standard_normal((T, batch, nh)).astype(dtype)
    return p, X, dH


def _gemm(a, b):
    """``(fn, flops)``: one product ``a @ b`` into a buffer of its own (operands hot after a call)."""
    out = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
    return (lambda: np.matmul(a, b, out=out)), gemm_flops(a.shape[0], b.shape[1], a.shape[1])


def phases(p, X, dH, backward: bool = True) -> list[tuple]:
    """The phases of one ``"workspace"`` pass, each ``(phase, kind, fn, flops, probe)``: ``fn`` repeats
    that work on buffers filled by one real pass (training's numbers, training's speed); ``probe`` is
    one GEMM of the phase's shape (``None`` for non-GEMM rows). kind: gemm, elementwise or memory."""
    T, B, nx = X.shape
    nh, dt = p.nh, X.dtype
    H, (_, _), cache = lstm.lstm_forward(p, X, method="workspace", return_cache=True)
    C, A = cache.C, cache.A
    ws = lstm_tuned.workspace(T, B, nx, nh, dt)
    h_prev = [cache.h0] + [H[t] for t in range(T - 1)]
    c_prev = [cache.c0] + [C[t] for t in range(T - 1)]
    X2, Aw, Hw, Cw = X.reshape(T * B, nx), A.copy(), np.empty_like(H), np.empty_like(C)
    z = np.empty((B, 4 * nh), dt)

    def recurrent():
        for t in range(T):
            np.matmul(h_prev[t], p.W_hh.T, out=z)

    def kernels():
        for t in range(T):
            lstm_tuned.gates_forward(z, Aw[t], ws.bias, c_prev[t], Cw[t], Hw[t])

    out = [("allocate H, C, gates", "memory", lambda: (np.empty_like(H), np.empty_like(C), np.empty_like(A)), 0, None),
           ("input GEMM, all T at once", "gemm", lambda: np.matmul(X2, p.W_ih.T, out=Aw.reshape(T * B, -1)),
            gemm_flops(T * B, 4 * nh, nx), _gemm(X2, p.W_ih.T)[0]),
           (f"recurrent GEMMs ({T} calls)", "gemm", recurrent, T * gemm_flops(B, 4 * nh, nh),
            _gemm(H[0], p.W_hh.T)[0]),
           (f"gate kernels ({T} calls, bias inside)", "elementwise", kernels, 0, None)]
    if not backward:
        return out
    dZ, dh, dc, db = np.empty_like(A), np.zeros((B, nh), dt), np.zeros((B, nh), dt), np.zeros(4 * nh, dt)
    lstm_tuned.backward(p.W_ih, p.W_hh, X, cache.h0, cache.c0, H, C, A, dH, dh.copy(), dc.copy())
    dZ[:] = ws.dZ                                # training's gate gradients, for the GEMM rows
    dZ2 = dZ.reshape(T * B, 4 * nh)
    dZr, Hr = dZ[1:].reshape(-1, 4 * nh), H[:-1].reshape(-1, nh)

    def kernels_bwd():
        dc[:] = 0.0
        for t in range(T - 1, -1, -1):
            lstm_tuned.gates_backward(A[t], C[t], c_prev[t], dH[t], dh, dc, ws.dZ[t], db)

    def recurrent_bwd():
        for t in range(T - 1, -1, -1):
            np.matmul(dZ[t], p.W_hh, out=dh)

    def weight_grads():
        np.matmul(dZ2.T, X2)
        np.matmul(dZr.T, Hr) + dZ[0].T @ cache.h0
    return out + [
        ("allocate dX", "memory", lambda: np.empty_like(X), 0, None),
        (f"backward gate kernels ({T} calls, bias grad inside)", "elementwise", kernels_bwd, 0, None),
        (f"backward recurrent GEMMs ({T} calls)", "gemm", recurrent_bwd, T * gemm_flops(B, nh, 4 * nh),
         _gemm(dZ[0], p.W_hh)[0]),
        ("weight-gradient GEMMs (one over all T each)", "gemm", weight_grads,
         gemm_flops(4 * nh, nx, T * B) + gemm_flops(4 * nh, nh, T * B), _gemm(dZ2.T, X2)[0]),
        ("input-gradient GEMM", "gemm", lambda: np.matmul(dZ2, p.W_ih), gemm_flops(T * B, nx, 4 * nh),
         _gemm(dZ2, p.W_ih)[0]),
        ("copies (h_T, c_T, b_hh's gradient)", "memory", lambda: (H[-1].copy(), C[-1].copy(), db.copy()), 0, None)]


def torch_pass(torch, m, X, dH, backward: bool):
    """A zero-argument callable: ``torch.nn.LSTM`` module ``m`` over ``X (T, B, nx)``, forward only (no
    autograd) or forward + backward of ``dH (T, B, nh)`` -- torch's side of every LSTM comparison."""
    Xt, dHt = torch.from_numpy(X), torch.from_numpy(dH)
    Xg = torch.from_numpy(X).requires_grad_(backward)     # its own tensor: Xt stays out of autograd

    def run():
        if not backward:
            with torch.no_grad():
                return m(Xt)
        m.zero_grad()
        Xg.grad = None
        m(Xg)[0].backward(dHt)
    return run


def profile_pass(batch: int, nh: int, nx: int | None = None, T: int = 20, *, backward: bool = True,
                 dtype="float32", repeat: int = 5) -> dict:
    """Profile one ``"workspace"`` pass (forward, or forward + backward) over ``X (T, batch, nx)``.

    Returns ``{"rows": [{"phase", "kind", "ms", "share", "gflop", "gflops", "shape_peak", "pct_shape_peak"}],
    "total_ms", "gemm_ms", "gemm_floor_ms", "non_gemm_ms", "other_ms", "largest", "comparison", "noise"}`` -- times
    in ms per time step; ``gemm_floor_ms``: the pass's products, each at the peak of its own shape -- what no pass
    that issues them through this BLAS can beat."""
    batch, nh, T = (check_positive_int(v, n) for v, n in ((batch, "batch"), (nh, "nh"), (T, "T")))
    nx = nh if nx is None else check_positive_int(nx, "nx")
    backward = check_bool(backward, "backward")
    repeat = check_positive_int(repeat, "repeat")
    p, X, dH = _problem(batch, nh, nx, T, dtype)
    rows = phases(p, X, dH, backward)

    def whole():
        out = lstm.lstm_forward(p, X, method="workspace", return_cache=backward)
        if backward:
            lstm.lstm_backward(p, out[2], dH)
    fns = {"whole": whole, **{f"p{i}": r[2] for i, r in enumerate(rows)}}
    cmp = compare(repeat=repeat, warmup=1, **fns)
    per_step = {k: 1e3 * cmp.timings[k].median / T for k in fns}
    out_rows = []
    for i, (name, kind, _, flops, probe) in enumerate(rows):
        sec = cmp.timings[f"p{i}"].median
        gf = flops / sec / 1e9 if flops else None
        calls = T if name.startswith(("recurrent", "backward recurrent")) else 2 if name.startswith("weight") else 1
        # the best rate seen for this shape: one product on hot operands (best of >= 7), or the phase itself
        peak = max(flops / calls / measure(probe, repeat=max(repeat, 7), warmup=1).min / 1e9, gf) if probe else None
        out_rows.append({"phase": name, "kind": kind, "ms": per_step[f"p{i}"], "share": sec / cmp.timings["whole"].median,
                         "gflop": flops / 1e9, "gflops": gf, "shape_peak": peak,
                         "pct_shape_peak": None if peak is None else 100 * gf / peak})
    total = per_step["whole"]
    gemm = sum(r["ms"] for r in out_rows if r["kind"] == "gemm")
    summed = sum(r["ms"] for r in out_rows)
    other = total - summed
    largest = max(out_rows + [{"phase": OTHER, "ms": other}], key=lambda r: r["ms"])
    floor = sum(1e3 * r["gflop"] / r["shape_peak"] / T for r in out_rows if r["kind"] == "gemm")
    return {"rows": out_rows, "total_ms": total, "gemm_ms": gemm, "gemm_floor_ms": floor, "non_gemm_ms": total - gemm,
            "other_ms": other,
            "largest": largest["phase"], "comparison": cmp, "noise": _noise(cmp, fns)}


def _noise(cmp, fns):
    """The profile's noise: of the phases that take at least ``MATTERS`` of the whole pass,
    each judged by its pairs with the whole (an allocation of 2 us may vary by 50% and change nothing)."""
    whole = cmp.timings["whole"].median
    big = [k for k in fns if k != "whole" and cmp.timings[k].median >= MATTERS * whole]
    return noise_of_pairs([cmp.pairs(k, "whole") for k in big], cmp.noise.others) if big else cmp.noise
