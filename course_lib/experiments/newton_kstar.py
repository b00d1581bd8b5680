"""K*(T): how many parallel-Newton iterations a cell needs, measured (experiments folder).

``K*`` is the fewest iterations after which the iterate matches the sequential unroll (computed in
float64) within ``tol`` everywhere: ``max |H_k - H_seq| <= tol``. It is the number recent work
compares (Gonzalez et al., TMLR 2026; ParaRNN, ICLR 2026 fixes K = 3). Three cells, one solver
(:func:`course_lib.algorithms.newton.solve`):

* ``"gru"``      the dense GRU (:mod:`course_lib.parallel.deer`), full Newton (nh x nh Jacobians);
* ``"diag_gru"`` the diagonal-Jacobian GRU (:mod:`course_lib.models.diag_gru`): quasi == Newton;
* ``"mingru"``   minGRU: a linear recurrence, so Newton is exact after one iteration.

``cell_system(cell, T, ...)`` -> the pieces; ``k_star(cell, Ts, tol, dtype)`` -> K* per T;
``measure(cell, T, tol, method=...)`` -> K* of any member of the family at one T, with the cell's
largest Lyapunov exponent and the starting error (what a prediction of K* needs);
``fixed_vs_tolerance(cell, T, K)`` -> error and seconds of K fixed iterations vs run-to-tolerance;
``iteration_seconds(nhs, T)`` -> ``timing.compare`` of one Newton iteration: dense GRU, diagonal GRU,
ParaLSTM (2x2 blocks).
"""
from __future__ import annotations

import time

import numpy as np

from ..algorithms import newton as _newton
from ..core import timing
from ..core.validate import (check_alloc_of, check_choice, check_dtype, check_float, check_int, check_positive_int,
                             check_sizes)
from ..models import diag_gru, gru, mingru, para_lstm
from ..models import jacobians as _jx
from ..parallel import deer

__all__ = ["CELLS", "cell_system", "measure", "k_star", "fixed_vs_tolerance", "iteration_seconds"]

CELLS = ("gru", "diag_gru", "mingru")


def cell_system(cell: str, T: int, *, nh: int = 8, batch: int = 2, nx: int = 3, dtype="float64", seed: int = 0,
                scale: float = 1.0) -> dict:
    """``{"f", "jac", "jac_diag", "h0", "inputs", "method", "reference"}`` for one cell on random
    inputs ``(T, batch, nx)``; ``reference`` is the float64 sequential unroll; ``method`` the Newton
    flavour that is exact Newton for the cell ("newton" for the dense GRU, "quasi" for the others)."""
    check_choice(cell, "cell", CELLS)
    T, nh, batch = check_positive_int(T, "T"), check_positive_int(nh, "nh"), check_positive_int(batch, "batch")
    nx = check_positive_int(nx, "nx")
    dtype = check_dtype(dtype, "dtype")
    seed = check_int(seed, "seed", low=0)
    scale = check_float(scale, "scale", low=0.0)
    _check_sizes(T, nh, batch, nx, dense=cell == "gru")
    X = np.random.default_rng(seed + 1).standard_normal((T, batch, nx))
    if cell == "gru":
        p = gru.init_params(nx, nh, seed=seed, dtype=np.float64)
        p.W_hh = p.W_hh * check_float(scale, "scale", low=0.0)
        ref = gru.gru_forward(p, X)
        p = p.astype(dtype)
        GI = _jx.gru_input_projection(p, X.astype(dtype))
        f, jac, jd = deer.gru_system(p)
        method = "newton"
    elif cell == "diag_gru":
        p = diag_gru.init_params(nx, nh, seed=seed, recurrent_scale=scale)
        ref = diag_gru.forward(p, X)
        p = p.astype(dtype)
        GI = (X.astype(dtype) @ p.W_x + p.b).astype(dtype)
        f, jac, jd = diag_gru.system(p)
        method = "quasi"
    else:
        p = mingru.init_params("mingru", nx, nh, seed=seed)
        ref = mingru.forward("mingru", p, X)
        a, b = mingru.coefficients("mingru", p, X)
        GI = np.stack([a, b]).astype(dtype)  # (2, T, B, nh) -> time on axis 1: pass (T, 2, B, nh)
        GI = np.ascontiguousarray(np.moveaxis(GI, 0, 1))

        def f(Hp, AB):
            return AB[:, 0] * Hp + AB[:, 1]

        def jd(Hp, AB):
            return AB[:, 0] + 0.0 * Hp

        def jac(Hp, AB):
            return jd(Hp, AB)[..., :, None] * np.eye(Hp.shape[-1], dtype=Hp.dtype)
        method = "quasi"
    return {"f": f, "jac": jac, "jac_diag": jd, "h0": np.zeros((batch, nh), dtype=dtype), "inputs": GI,
            "method": method, "reference": ref}


def _check_sizes(T, nh, batch, nx, dense, T_name="T", nh_name="nh"):
    """Bound, before allocating, the (T, B, nx) inputs and the (T, B, H[, H]) Jacobians a cell's system holds
    (a too-large one names ``T_name`` or ``nh_name``: the argument the caller was given)."""
    check_alloc_of(np.float64, "the inputs", **{T_name: T, "batch": batch, "nx": nx})
    check_alloc_of(np.float64, "the Jacobians", factor=nh if dense else 1, **{T_name: T, "batch": batch, nh_name: nh})


def _errors(s: dict, max_iter: int, init=None, method=None) -> list[float]:
    """max |H_k - reference| for k = 0..(iterations done)."""
    errs: list[float] = []
    ref = s["reference"]

    def cb(k, H):
        errs.append(float(np.max(np.abs(H.astype(np.float64) - ref))))
    try:
        _newton.solve(s["f"], s["jac"], s["h0"], s["inputs"], method=method or s["method"], jac_diag=s["jac_diag"],
                      tol=0.0, max_iter=max_iter, init=init, callback=cb, diverge_factor=1e30)
    except _newton.NewtonDivergence:
        pass
    return errs


def measure(cell: str, T: int, *, tol: float = 1e-8, method: str | None = None, dtype="float64", nh: int = 8,
            batch: int = 2, max_iter: int | None = None, seed: int = 0, scale: float = 1.0) -> dict:
    """K* of one iteration of the family on one cell at one T, from a zero start:
    ``{"k_star", "error", "err0", "lyapunov", "T", "method"}``. ``method``: any of
    ``newton.METHODS`` (default: the cell's exact Newton flavour); ``k_star`` None: not reached
    within ``max_iter`` (default T + 1: every method is exact after T iterations) or diverged;
    ``err0`` = max |0 - H_seq|, the error of the start; ``lyapunov``: the largest Lyapunov exponent
    along the sequential trajectory (per step)."""
    check_choice(cell, "cell", CELLS)
    tol = check_float(tol, "tol", low=0.0, low_inclusive=False)
    if method is not None:
        check_choice(method, "method", _newton.METHODS)
    T = check_positive_int(T, "T")
    _check_sizes(T, check_positive_int(nh, "nh"), check_positive_int(batch, "batch"), 3, dense=cell == "gru")
    max_iter = T + 1 if max_iter is None else check_int(max_iter, "max_iter", low=1, high=10_000)
    s = cell_system(cell, T, nh=nh, batch=batch, dtype=dtype, seed=seed, scale=scale)
    errs = _errors(s, min(max_iter, T + 1), method=method)
    k = next((i for i, e in enumerate(errs) if e <= tol), None)
    ref = s["reference"]
    lam = _newton.lyapunov_exponent(s["jac"], ref, np.zeros(ref.shape[1:]), s["inputs"].astype(np.float64))
    return {"k_star": k, "error": errs[k] if k is not None else errs[-1], "err0": errs[0], "lyapunov": lam,
            "T": T, "method": method or s["method"]}


def k_star(cell: str, Ts=(256, 1024, 4096), *, tol: float = 1e-8, dtype="float64", nh: int = 8, batch: int = 2,
           max_iter: int = 30, seed: int = 0, scale: float = 1.0) -> dict:
    """``{"T": [...], "k_star": [...], "error": [...]}``: K* (None: not reached within ``max_iter``)
    and the error at K* (or at the last iterate)."""
    check_choice(cell, "cell", CELLS)
    tol = check_float(tol, "tol", low=0.0, low_inclusive=False)
    max_iter = check_int(max_iter, "max_iter", low=1, high=10_000)
    Ts = check_sizes(Ts, "Ts")
    for T in Ts:  # all of them up front, before the first (slow) one runs
        _check_sizes(T, check_positive_int(nh, "nh"), check_positive_int(batch, "batch"), 3, dense=cell == "gru",
                     T_name="Ts")
    out: dict = {"T": [], "k_star": [], "error": []}
    for T in Ts:
        s = cell_system(cell, T, nh=nh, batch=batch, dtype=dtype, seed=seed, scale=scale)
        errs = _errors(s, min(max_iter, T + 1))
        k = next((i for i, e in enumerate(errs) if e <= tol), None)
        out["T"].append(int(T))
        out["k_star"].append(k)
        out["error"].append(errs[k] if k is not None else errs[-1])
    return out


def fixed_vs_tolerance(cell: str = "diag_gru", T: int = 4096, *, K: int = 3, tol: float | None = None,
                       nh: int = 8, batch: int = 2, seed: int = 0) -> dict:
    """K fixed iterations from ``h0 = f(0, x)`` (ParaRNN) vs running until the residual is below
    ``tol``: ``{"fixed": {"iters", "error", "seconds"}, "tolerance": {...}}`` (seconds: one run each,
    wall clock -- indicative only on a shared machine)."""
    K = check_int(K, "K", low=0, high=10_000)
    if tol is not None:
        tol = check_float(tol, "tol", low=0.0)
    s = cell_system(cell, T, nh=nh, batch=batch, seed=seed)
    f, ref = s["f"], s["reference"]
    start = f(np.zeros((T,) + s["h0"].shape), s["inputs"])
    out = {}
    for name, kw in (("fixed", dict(tol=0.0, max_iter=K)), ("tolerance", dict(tol=tol))):
        t0 = time.perf_counter()
        H, hist = _newton.solve(f, s["jac"], s["h0"], s["inputs"], method=s["method"], jac_diag=s["jac_diag"],
                                init=start, diverge_factor=1e30, **kw)
        out[name] = {"iters": len(hist) - 1, "error": float(np.max(np.abs(H - ref))),
                     "seconds": time.perf_counter() - t0}
    return out


def iteration_seconds(nhs=(8, 32), *, T: int = 1024, batch: int = 2, seed: int = 0) -> dict:
    """``{nh: Comparison}``: one Newton iteration of the dense GRU (nh x nh Jacobians, matrix scan)
    vs the diagonal GRU (element-wise scan) vs ParaLSTM (:mod:`course_lib.models.para_lstm`: 2x2
    blocks per unit, a scan of 2x2 matrices) at the same T, batch and nh (``timing.compare``)."""
    nhs = check_sizes(nhs, "nhs")
    for nh in nhs:
        _check_sizes(check_positive_int(T, "T"), nh, check_positive_int(batch, "batch"), 3, dense=True, nh_name="nhs")
    out = {}
    for nh in nhs:
        sd = cell_system("gru", T, nh=nh, batch=batch, seed=seed)
        sg = cell_system("diag_gru", T, nh=nh, batch=batch, seed=seed)
        Hd = np.zeros((T,) + sd["h0"].shape)
        pl = para_lstm.init_params(3, nh, seed=seed)
        GI = np.random.default_rng(seed + 1).standard_normal((T, batch, 3)) @ pl.W_x + pl.b
        f_pl, jac_pl, _, _ = para_lstm.system(pl)
        S0, Sd = np.zeros((batch, nh, 2)), np.zeros((T, batch, nh, 2))

        def step(s, m):
            return lambda: _newton.newton_step(s["f"], s["jac"], s["h0"], s["inputs"], Hd, method=m,
                                               jac_diag=s["jac_diag"])
        out[nh] = timing.compare(dense_gru=step(sd, "newton"), diag_gru=step(sg, "quasi"),
                                 para_lstm=lambda: _newton.newton_step(f_pl, jac_pl, S0, GI, Sd), repeat=3)
    return out
