"""Measuring helpers for chapter 11 (Newton in time): plain functions that return data (experiments folder).

``scaled_gru(nh, scale, ...)``            a GRU whose W_hh is multiplied by ``scale`` (predictability knob)
``newton_iterates(...)``                 every DEER iterate: the trajectory zipping into place
``predictability(scale, ...)``           Lyapunov exponent + iterations of Newton / quasi / damped / MGRIT
``iterations_vs_T(Ts, ...)``             iterations of each method vs the sequence length
``work_comparison(...)``                 DEER vs MGRIT on one GRU at one tolerance: iterations and work
``time_deer(T, nh, batch, ...)``              timing.compare of the numba serial loop, DEER and quasi-DEER
``model_speedups(T, Hs, Ps, iters)``     the work/span model's predicted speedup
``scan_drift(Ts, ...)``                  float32 linear- vs log-space minGRU scan vs a float64 loop
``mingru_vs_gru(...)``                   accuracy and time of minGRU / minLSTM / GRU on both tasks
"""
from __future__ import annotations

import dataclasses

import time

import numpy as np

from ..algorithms import mgrit as _mgrit
from ..algorithms import newton as _newton
from ..core import timing
from ..core.validate import (check_alloc, check_alloc_of, check_array, check_bool, check_choice, check_float, check_int, check_positive_int,
                             check_repeat)
from ..models import gru, jacobians, mingru
from ..parallel import deer

__all__ = [
    "scaled_gru",
    "mgrit_forward",
    "newton_iterates",
    "predictability",
    "iterations_vs_T",
    "work_comparison",
    "time_deer",
    "model_speedups",
    "scan_drift",
    "mingru_vs_gru",
]


def _check_seq(values, name: str, item) -> list:
    """A non-empty list/tuple/array whose items pass ``item(value, name)``."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name}: expected a non-empty sequence, got {type(values).__name__} {values!r}")
    values = list(values)
    if not values:
        raise ValueError(f"{name}: expected a non-empty sequence, got an empty one")
    return [item(v, name) for v in values]


def _check_T(T, name: str = "T", *, nh: int = 8, batch: int = 4, dense: bool = False) -> int:
    """A sequence length; refused before a (T, B, H) float64 trajectory (``dense``: (T, B, H, H) Jacobians)
    too large to hold is made -- naming whichever argument (``name``, ``batch`` or ``nh``) made it large."""
    T = check_positive_int(T, name)
    check_alloc_of(np.float64, "a trajectory" if not dense else "the Jacobians", factor=nh if dense else 1,
                   **{name: T, "batch": batch, "nh": nh})
    return T


def scaled_gru(nh: int = 8, scale: float = 1.0, *, nx: int = 3, seed: int = 0):
    """float64 GRU parameters (PyTorch init) with ``W_hh`` multiplied by ``scale``."""
    scale = check_float(scale, "scale", low=0.0)
    nh, nx = check_positive_int(nh, "nh"), check_positive_int(nx, "nx")
    check_alloc((3 * nh, max(nh, nx)), np.float64, "nh" if nh >= nx else "nx", what="a weight matrix")
    p = gru.init_params(nx, nh, seed=check_int(seed, "seed", low=0), dtype=np.float64)
    p = dataclasses.replace(p, W_hh=p.W_hh * scale)
    return p


def mgrit_forward(params, X, h0=None, *, implicit=True, **opts):
    """``models.gru.gru_forward(..., method="mgrit", return_history=True)`` -> ``(H, history)``."""
    implicit = check_bool(implicit, "implicit")
    check_array(X, "X", shape=("T", "B", None), min_size={"T": 1, "B": 1})  # no batch of 0 sequences
    for key in ("method", "solver", "return_history"):
        if key in opts:
            raise TypeError(f"{key}: mgrit_forward always runs MGRIT and returns the history; do not pass {key}=")
    return gru.gru_forward(params, X, h0, implicit=implicit, return_history=True, method="mgrit", **opts)


def newton_iterates(params, X, *, method: str = "newton", n_iter: int = 6, implicit: bool = False):
    """Iterates 0..n_iter of DEER from a zero start and the serial trajectory:
    ``{"iterates": [H0, H1, ...], "sequential": H, "history": [...]}``."""
    check_choice(method, "method", deer.METHODS)
    n_iter = check_int(n_iter, "n_iter", low=0, high=10_000)
    check_array(X, "X", shape=("T", "B", None), min_size={"T": 1, "B": 1})
    implicit = check_bool(implicit, "implicit")
    iterates = []
    _, hist = deer.gru_forward(params, X, method=method, implicit=implicit, tol=0.0, max_iter=n_iter,
                               return_history=True, callback=lambda k, H: iterates.append(H.copy()))
    return {"iterates": iterates, "sequential": gru.gru_forward(params, X, implicit=implicit), "history": hist}


def _iters(params, X, method, tol, implicit):
    try:
        _, hist = deer.gru_forward(params, X, method=method, implicit=implicit, tol=tol, return_history=True)
        return len(hist) - 1
    except deer.NewtonDivergence:
        return None


def predictability(scale: float = 1.0, *, T: int = 256, nh: int = 8, batch: int = 2, tol: float = 1e-8,
                   implicit: bool = False, seed: int = 0, mgrit: bool = True) -> dict:
    """One point on the predictability axis: the GRU with ``W_hh * scale`` on random inputs.
    Returns ``{"scale", "lyapunov", "newton", "quasi", "damped", "mgrit"}`` (iterations to reach
    ``tol``; None = diverged; mgrit: two-level FCF MGRIT on the *implicit* GRU, m = 4)."""
    nh, batch = check_positive_int(nh, "nh"), check_positive_int(batch, "batch")
    T = _check_T(T, nh=nh, batch=batch, dense=True)
    tol = check_float(tol, "tol", low=0.0)
    implicit, mgrit = check_bool(implicit, "implicit"), check_bool(mgrit, "mgrit")
    p = scaled_gru(nh, scale, seed=seed)
    X = np.random.default_rng(seed + 1).standard_normal((T, batch, 3))
    out = {"scale": float(scale), "lyapunov": deer.gru_lyapunov(p, X, implicit=implicit)}
    for m in deer.METHODS:
        out[m] = _iters(p, X, m, tol, implicit)
    if mgrit:
        try:
            _, hist = mgrit_forward(p, X, implicit=True, m=4, levels=2, relax="FCF", max_iter=T // 4 + 1, tol=tol)
            out["mgrit"] = len(hist)
        except _mgrit.MGRITDivergence:
            out["mgrit"] = None
    return out


def iterations_vs_T(Ts=(16, 64, 256, 1024), *, scale: float = 1.0, nh: int = 8, batch: int = 2, tol: float = 1e-8,
                    seed: int = 0) -> dict:
    """Iterations of Newton / quasi / damped vs T: ``{"T": [...], "newton": [...], ...}``."""
    nh, batch = check_positive_int(nh, "nh"), check_positive_int(batch, "batch")
    Ts = _check_seq(Ts, "Ts", lambda v, n: _check_T(v, n, nh=nh, batch=batch, dense=True))
    tol = check_float(tol, "tol", low=0.0)
    out: dict = {"T": list(Ts), **{m: [] for m in deer.METHODS}}
    p = scaled_gru(nh, scale, seed=seed)
    for T in Ts:
        X = np.random.default_rng(seed + 1).standard_normal((T, batch, 3))
        for m in deer.METHODS:
            out[m].append(_iters(p, X, m, tol, False))
    return out


def work_comparison(scales=(0.5, 1.0, 2.0, 4.0), *, T: int = 256, nh: int = 8, batch: int = 2, tol: float = 1e-8,
                    seed: int = 0) -> list[dict]:
    """DEER (Newton, quasi) and MGRIT (m = 4, 2 levels, FCF) on the same implicit GRU at the same
    tolerance, along the predictability axis. Work is in multiples of one serial march (DEER:
    :func:`newton.span_model` flops / serial flops; MGRIT: :func:`mgrit.span_model` steps / T)."""
    scales = _check_seq(scales, "scales", lambda v, n: check_float(v, n, low=0.0))
    nh, batch = check_positive_int(nh, "nh"), check_positive_int(batch, "batch")
    T = _check_T(T, nh=nh, batch=batch, dense=True)
    tol = check_float(tol, "tol", low=0.0)
    rows = []
    for s in scales:
        p = scaled_gru(nh, s, seed=seed)
        X = np.random.default_rng(seed + 1).standard_normal((T, batch, 3))
        row = {"scale": s, "lyapunov": deer.gru_lyapunov(p, X, implicit=True)}
        for m in ("newton", "quasi"):
            it = _iters(p, X, m, tol, True)
            row[f"{m}_iters"] = it
            row[f"{m}_work"] = (None if it is None else
                                _newton.span_model(T, nh, iters=max(it, 1), method=m)["work"]
                                / _newton.span_model(T, nh, iters=1, method=m)["serial"])
        try:
            H_m, hist = mgrit_forward(p, X, implicit=True, m=4, levels=2, relax="FCF", max_iter=T // 4 + 1, tol=tol)
            it = len(hist)
            row["mgrit_iters"] = it
            row["mgrit_work"] = _mgrit.span_model(T, m=4, levels=2, iters=it, P=1, relax="FCF")["work"] / T
        except _mgrit.MGRITDivergence:
            row["mgrit_iters"] = row["mgrit_work"] = None
        rows.append(row)
    return rows


def time_deer(T: int = 1024, nh: int = 8, batch: int = 4, *, repeat: int = 3, tol: float = 1e-8, seed: int = 0,
              scan: str = "sequential"):
    """``timing.compare`` of the numba serial GRU loop (baseline), DEER and quasi-DEER (same GRU).
    Returns ``(comparison, info)`` with the iteration counts and the max error vs serial."""
    nh, batch = check_positive_int(nh, "nh"), check_positive_int(batch, "batch")
    T = _check_T(T, nh=nh, batch=batch, dense=True)
    tol = check_float(tol, "tol", low=0.0)
    repeat = check_repeat(repeat)
    check_choice(scan, "scan", _newton.matrix_scan.METHODS)
    p = scaled_gru(nh, 1.0, seed=seed)
    X = np.random.default_rng(seed + 1).standard_normal((T, batch, 3))
    ref = jacobians.gru_serial_numba(p, X)
    info = {}
    for m in ("newton", "quasi"):
        Hd, hist = deer.gru_forward(p, X, method=m, tol=tol, scan=scan, return_history=True)
        info[m] = {"iters": len(hist) - 1, "err": float(np.abs(Hd - ref).max())}
    cmp = timing.compare(serial_numba=lambda: jacobians.gru_serial_numba(p, X),
                         newton=lambda: deer.gru_forward(p, X, method="newton", tol=tol, scan=scan),
                         quasi=lambda: deer.gru_forward(p, X, method="quasi", tol=tol, scan=scan),
                         repeat=repeat)
    return cmp, info


def model_speedups(T: int, Hs, Ps, *, iters: dict | int = 5, methods=("newton", "quasi")) -> dict:
    """``{method: array (len(Hs), len(Ps))}`` of :func:`newton.span_model` speedups;
    ``iters`` per method (a dict) or one number for all."""
    T = check_positive_int(T, "T")
    Hs = _check_seq(Hs, "Hs", check_positive_int)
    Ps = _check_seq(Ps, "Ps", check_positive_int)
    methods = _check_seq(methods, "methods", lambda v, n: check_choice(v, n, deer.METHODS))
    if isinstance(iters, dict):
        missing = [m for m in methods if m not in iters]
        if missing:
            raise ValueError(f"iters: expected a count for every method, missing {missing}")
        iters = {m: check_positive_int(iters[m], f"iters[{m!r}]") for m in methods}
    else:
        iters = check_positive_int(iters, "iters")
    out = {}
    for m in methods:
        k = iters[m] if isinstance(iters, dict) else iters
        out[m] = np.array([[_newton.span_model(T, H, iters=k, P=P, method=m)["speedup"] for P in Ps] for H in Hs])
    return out


def scan_drift(Ts=(64, 256, 1024, 4096), *, kind: str = "mingru", nh: int = 8, batch: int = 4, seed: int = 0) -> dict:
    """Max relative error of the float32 sequential / linear scan / log scan against a float64 loop:
    ``{"T": [...], "sequential": [...], "chunked": [...], "log_space": [...]}``."""
    check_choice(kind, "kind", mingru.KINDS)
    nh = check_positive_int(nh, "nh")
    batch = check_positive_int(batch, "batch")
    Ts = _check_seq(Ts, "Ts", lambda v, n: _check_T(v, n, nh=nh, batch=batch))
    seed = check_int(seed, "seed", low=0)
    out: dict = {"T": list(Ts), **{m: [] for m in mingru.METHODS}}
    p64 = mingru.init_params(kind, 3, nh, seed=seed)
    p32 = p64.astype(np.float32)
    for T in Ts:
        X = np.random.default_rng(seed + 1).standard_normal((T, batch, 3))
        a, b = mingru.coefficients(kind, p64, X)
        ref = np.empty_like(b)
        h = np.zeros(b.shape[1:])
        for t in range(T):
            h = a[t] * h + b[t]
            ref[t] = h
        for m in mingru.METHODS:
            got = mingru.forward(kind, p32, X.astype(np.float32), method=m).astype(np.float64)
            out[m].append(float(np.max(np.abs(got - ref) / (np.abs(ref) + 1e-3))))
    return out


def mingru_vs_gru(*, T_remember: int = 16, T_activity: int = 64, nh: int = 16, epochs: int = 6,
                  n_train: int = 2048, seed: int = 0) -> list[dict]:
    """Train minGRU, minLSTM (scan) and the classic GRU (serial) on both tasks (float64, Adam).
    Rows ``{"task", "model", "val_accuracy", "seconds"}``."""
    T_remember = check_int(T_remember, "T_remember", low=2)
    T_activity = check_positive_int(T_activity, "T_activity")
    nh = check_positive_int(nh, "nh", high=1 << 14)
    epochs = check_positive_int(epochs, "epochs", high=100_000)
    n_train = check_int(n_train, "n_train", low=2)
    seed = check_int(seed, "seed", low=0)
    T_name = "T_remember" if T_remember >= T_activity else "T_activity"
    check_alloc_of(np.float64, "the training inputs", factor=4,
                   **{T_name: max(T_remember, T_activity), "n_train": n_train})
    from ..data.activity import train_test
    from ..models.linear_rnn import remember_first_batch

    rows = []
    tasks = {}
    Xr, yr = remember_first_batch(T_remember, n_train, 4, np.random.default_rng(seed))
    Xrv, yrv = remember_first_batch(T_remember, 256, 4, np.random.default_rng(seed + 12345))
    tasks[f"remember first (T={T_remember})"] = (Xr, yr, Xrv, yrv, 2)
    Xa, ya, Xav, yav = train_test(n_train // 2, 128, T_activity, seed=seed)
    tasks[f"activity (T={T_activity})"] = (Xa.astype(np.float64), ya, Xav.astype(np.float64), yav, 4)
    for task, (X, y, Xv, yv, C) in tasks.items():
        for kind in mingru.KINDS:
            r = mingru.train_classifier(kind, X, y, nh=nh, n_classes=C, epochs=epochs, lr=2e-2, seed=seed,
                                        method="chunked", X_val=Xv, y_val=yv)
            rows.append({"task": task, "model": kind, "val_accuracy": r.history["val_accuracy"][-1],
                         "seconds": r.seconds})
        t0 = time.perf_counter()
        p0 = gru.init_classifier(X.shape[2], nh, C, seed=seed, dtype=np.float64)
        trained, _ = gru.train_classifier(p0, X, y, epochs=epochs, batch=32, lr=2e-2, seed=seed)
        acc = float(np.mean(gru.classifier_predict(trained, Xv) == yv))
        rows.append({"task": task, "model": "gru", "val_accuracy": acc, "seconds": time.perf_counter() - t0})
    return rows
