"""Newton's method over the whole sequence: DEER, quasi-DEER and a damped variant (algorithms folder).

A nonlinear recurrence ``h_t = f(h_{t-1}, x_t)`` (t = 1..T, ``h_0`` given) is the root of the
residual over the *whole trajectory* ``H = (h_1, ..., h_T)``::

    r(H)_t = h_t - f(h_{t-1}, x_t)

Newton's method linearises ``f`` around the current guess. With ``J_t = df/dh (h_{t-1}, x_t)`` the
update ``delta`` solves ``delta_t - J_t delta_{t-1} = -r_t`` (``delta_0 = 0``: h_0 is fixed), i.e.

    delta_t = J_t delta_{t-1} - r_t            -- a *linear recurrence*: a scan (matrix_scan)

Everything else in an iteration (``f`` and ``J`` at every t) is independent over t. This is DEER
(Lim et al., ICLR 2024). Facts the chapter verifies:

* after k iterations ``h_1 .. h_k`` are exact (h_1 depends only on the fixed h_0, and so on), so
  *any* start reaches the serial answer after at most T iterations -- for every method below;
* near the solution the convergence is quadratic, typically a handful of iterations;
* ``method="quasi"`` keeps only ``diag(J_t)`` (quasi-DEER): an element-wise scan, O(T H) instead of
  O(T H^3) per iteration, at the price of more (linearly converging) iterations;
* ``method="damped"`` shrinks each Jacobian so that ``||J_t||_inf <= clip`` (a trust region in the
  spirit of ELK, Gonzalez et al. 2024): products of the J's can no longer overflow, so the iteration
  cannot blow up where full Newton does (unpredictable, chaotic dynamics), and the T-step bound still holds;
* ``method="picard"`` (A_t = I: delta is a cumulative sum of -r) and ``method="jacobi"`` (A_t = 0:
  ``h_t <- f(h_{t-1})`` for all t at once, no scan) are the same iteration
  ``h_t' = f(h_{t-1}) + A_t (h_{t-1}' - h_{t-1})`` with a cruder A (Gonzalez et al., TMLR 2026,
  lindermanlab/parallelizing_with_lds): no Jacobian, cheaper steps, more iterations.
* for a cell with no analytic Jacobian, :func:`hutchinson_diagonal` estimates diag(J_t) from
  Rademacher Jacobian-vector products (``E[z * (J z)] = diag J``), e.g. for ``jac_diag`` with "quasi".

How many iterations are needed tracks the system's largest Lyapunov exponent
(:func:`lyapunov_exponent`): contracting systems (negative exponent) converge in a few, chaotic
ones (positive) gain nothing (Gonzalez, Kozachkov et al., 2025).

The module is generic: ``f(H_prev, X) -> H`` and ``jac(H_prev, X) -> J`` evaluate one step for all t
at once (``H_prev`` ``(T, *batch, H)``, ``J`` ``(T, *batch, H, H)``, column convention
``J[..., i, j] = d f_i / d h_j``); it never imports a model.

Public API
----------
``solve(f, jac, h0, X, *, method="newton", tol=None, max_iter=None, ...)`` -> ``(H, history)``
``NewtonDivergence`` (a FloatingPointError) -- raised, never NaN returned
``newton_step(f, jac, h0, X, H, *, method="newton", ...)`` -> the next iterate (one step)
``residual(f, h0, X, H)``, ``shift(h0, H)``
``gradient(jac, H, h0, X, dH, *, vjp=None)`` -> ``(lam, dh0)`` or ``(vjp(...), dh0)``: implicit function theorem
``lyapunov_exponent(jac, H, h0, X, *, seed=0)`` -> largest Lyapunov exponent along the trajectory
``span_model(T, nh, *, iters, P, method)`` -> work/span counts of DEER vs the sequential march
``hutchinson_diagonal(jvp, H_prev, X, *, samples=64, seed=0)`` -> estimated diag(J_t), ``(T, *batch, H)``
``fd_jvp(f, eps=1e-6)`` -> a central-difference ``jvp(H_prev, X, V)`` for any ``f``
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..core.validate import (as_array, check_array, check_callable, check_choice, check_count, check_float, check_int,
                             check_positive_int)
from . import matrix_scan

__all__ = [
    "METHODS",
    "NewtonDivergence",
    "solve",
    "newton_step",
    "residual",
    "shift",
    "gradient",
    "lyapunov_exponent",
    "lyapunov_from_jacobians",
    "span_model",
    "hutchinson_diagonal",
    "fd_jvp",
]

METHODS = ("newton", "quasi", "damped", "picard", "jacobi")
DEFAULT_TOL = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5}


class NewtonDivergence(FloatingPointError):
    """The Newton iterations blew up (non-finite or exploding residual). The message names the
    iteration and the residual; the fix is usually ``method="damped"`` (or ``"quasi"``)."""


# --------------------------------------------------------------------------- helpers
def shift(h0, H):
    """``H_prev = (h_0, h_1, ..., h_{T-1})``: the state each step starts from."""
    H = _check_states(H, "H")
    h0 = check_array(h0, "h0", shape=H.shape[1:], dtype=None)
    if h0.dtype.kind not in "iuf":
        raise TypeError(f"h0: expected a real array, got dtype {h0.dtype}")
    return _shift(h0, H)


def _shift(h0, H):
    return np.concatenate([np.asarray(h0, dtype=H.dtype)[None], H[:-1]], axis=0)


def residual(f: Callable, h0, X, H):
    """``r_t = h_t - f(h_{t-1}, x_t)`` for all t at once, shape of ``H``."""
    if not callable(f):
        raise TypeError(f"f: expected a function f(H_prev, X) -> H, got {type(f).__name__}")
    H = _check_states(H, "H")
    X = _check_X(X, H.shape[0])
    out = _call(f, "f", shift(h0, H), X)
    if np.shape(out) != H.shape:
        raise ValueError(f"f: expected f(H_prev, X) to return the shape of H {H.shape}, got {np.shape(out)}")
    return H - out


def _check_states(H, name: str) -> np.ndarray:
    H = check_array(H, name, ndim=(1, 2, 3, 4))
    if H.shape[0] < 1:
        raise ValueError(f"{name}: expected at least one time step (axis 0), got shape {tuple(H.shape)}")
    return H


def _check_X(X, T: int) -> np.ndarray:
    """``X``: the inputs, time on axis 0 (``T`` steps), real and finite (any trailing shape: ``f`` reads it)."""
    X = as_array(X, "X")
    if X.dtype.kind not in "iuf":
        raise TypeError(f"X: expected a real (float or integer) array, got dtype {X.dtype}")
    if X.ndim < 1 or X.shape[0] != T:
        raise ValueError(f"X: expected T = {T} steps on axis 0, got shape {tuple(X.shape)}")
    if X.dtype.kind == "f":
        check_array(X, "X", dtype=None)
    return X


def _check_h0(h0, H) -> np.ndarray:
    return check_array(h0, "h0", shape=H.shape[1:]).astype(H.dtype, copy=False)


def _check_jac_out(J, want: tuple, name: str = "jac") -> np.ndarray:
    J = np.asarray(J)
    if J.shape != want:
        raise ValueError(f"{name}: expected shape {want} (T, *batch, H, H), got {J.shape}")
    return J


def _call(fn: Callable, name: str, Hprev, X, *more):
    """``fn(Hprev, X, ...)``; an error inside it (often from an ``X`` of the wrong shape) is re-raised naming
    the function and the shapes it was given."""
    try:
        return fn(Hprev, X, *more)
    except (ValueError, TypeError, IndexError) as exc:
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        raise kind(f"{name}: failed on H_prev of shape {np.shape(Hprev)} and X of shape {np.shape(X)} "
                   f"(check X's shape against what {name} expects): {type(exc).__name__}: {exc}") from exc


def _norm(r) -> float:
    return float(np.max(np.abs(r))) if r.size else 0.0


def _jacobians(jac, jac_diag, Hprev, X, method, clip):
    """The A_t of the Newton scan and its structure (``"identity"``/``"zero"``: no array needed)."""
    if method == "picard":
        return None, "identity"
    if method == "jacobi":
        return None, "zero"
    if method == "quasi":
        if jac_diag is not None:
            D = np.asarray(_call(jac_diag, "jac_diag", Hprev, X))
        else:
            D = np.diagonal(np.asarray(_call(jac, "jac", Hprev, X)), axis1=-2, axis2=-1)
        if D.shape != Hprev.shape:
            raise ValueError(f"jac_diag: expected shape {Hprev.shape} (one diagonal per step), got {D.shape}")
        return np.ascontiguousarray(D, dtype=Hprev.dtype), "diagonal"
    J = np.asarray(_call(jac, "jac", Hprev, X))
    want = Hprev.shape + (Hprev.shape[-1],)
    if J.shape != want:
        raise ValueError(f"jac: expected shape {want} (T, *batch, H, H), got {J.shape}")
    J = J.astype(Hprev.dtype, copy=False)
    if method == "damped":
        norm = np.abs(J).sum(axis=-1).max(axis=-1)  # ||J_t||_inf per step and sequence
        scale = np.minimum(1.0, clip / np.maximum(norm, 1e-300))
        J = J * scale[..., None, None]
    return np.ascontiguousarray(J), "full"


def newton_step(f: Callable, jac: Callable, h0, X, H, *, method: str = "newton", jac_diag: Callable | None = None,
                clip: float = 1.0, scan: str = "sequential"):
    """One iteration from the guess ``H``: ``H + delta`` with ``delta_t = A_t delta_{t-1} - r_t``
    (``A_t`` = J_t, diag(J_t) or the clipped J_t). Returns ``(H_new, r)`` (r: the residual of ``H``)."""
    check_callable(f, "f", "a function f(H_prev, X)")
    check_choice(method, "method", METHODS)
    if not callable(jac) and not (jac is None and (method in ("picard", "jacobi") or
                                                   (method == "quasi" and callable(jac_diag)))):
        raise TypeError(f"jac: expected a callable jac(H_prev, X) (None only for picard/jacobi, or quasi with "
                        f"jac_diag), "
                        f"got {type(jac).__name__}")
    if jac_diag is not None:
        check_callable(jac_diag, "jac_diag")
    check_choice(scan, "scan", matrix_scan.METHODS)
    clip = check_float(clip, "clip", low=0.0, low_inclusive=False)
    H = _check_states(H, "H")
    h0 = _check_h0(h0, H)
    X = _check_X(X, H.shape[0])
    Hprev = _shift(h0, H)
    r = H - _call(f, "f", Hprev, X)
    A, structure = _jacobians(jac, jac_diag, Hprev, X, method, clip)
    return H + _direction(A, structure, r, scan), r


def _direction(A, structure, r, scan):
    """``delta_t = A_t delta_{t-1} - r_t``, delta_0 = 0: the one scan every method shares.
    Picard (A = I) is a cumulative sum; Jacobi (A = 0) needs no scan (delta = -r)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if structure == "zero":
            return -r
        if structure == "identity":
            delta = -np.cumsum(r, axis=0)
            if not np.all(np.isfinite(delta)):
                raise FloatingPointError("the cumulative sum of the residuals is not finite")
            return delta
        return matrix_scan.linear_recurrence(A, np.ascontiguousarray(-r), None, structure=structure, method=scan)


# --------------------------------------------------------------------------- the solver
def solve(f: Callable, jac: Callable, h0, X, *, method: str = "newton", tol: float | None = None,
          max_iter: int | None = None, init=None, jac_diag: Callable | None = None, clip: float = 1.0,
          scan: str = "sequential", diverge_factor: float = 1e8, callback: Callable | None = None):
    """Solve ``h_t = f(h_{t-1}, x_t)``, t = 1..T, for the whole trajectory by Newton's method.

    ``f(H_prev, X) -> (T, *batch, H)`` and ``jac(H_prev, X) -> (T, *batch, H, H)`` evaluate every step
    at once (``X`` is passed through untouched; its first axis is time, length T).
    ``h0`` ``(*batch, H)``; ``init`` the starting guess (default zeros, shape ``(T, *batch, H)``).
    ``method``: ``"newton"`` (DEER), ``"quasi"`` (diag(J) only; ``jac_diag(H_prev, X) -> (T, *batch, H)``
    if given, else the diagonal of ``jac``), ``"damped"`` (each J_t scaled to ``||J_t||_inf <= clip``),
    ``"picard"`` (A = I: a cumulative sum, ``jac`` unused) or ``"jacobi"`` (A = 0: ``H <- f(H_prev)``,
    no scan, ``jac`` unused) -- one iteration, only the choice of A differs.
    ``tol``: stop when ``max |r| <= tol`` (default 1e-12 for float64, 1e-5 for float32);
    ``max_iter``: default T (enough for an exact answer in exact arithmetic, any method).
    ``scan``: the method of :func:`matrix_scan.linear_recurrence` for the Newton scan.
    ``callback(k, H)`` is called with every iterate (k = 0 is ``init``).

    Returns ``(H, history)``; ``history[k]`` = max-abs residual of iterate k (``history[0]``: the
    start), so ``len(history) - 1`` iterations were done. Raises :class:`NewtonDivergence` when the
    residual becomes non-finite or grows by more than ``diverge_factor``."""
    if not callable(f):
        raise TypeError(f"f: expected a callable f(H_prev, X), got {type(f).__name__}")
    check_choice(method, "method", METHODS)
    if not callable(jac) and not (jac is None and (method in ("picard", "jacobi") or
                                                   (method == "quasi" and callable(jac_diag)))):
        raise TypeError(f"jac: expected a callable jac(H_prev, X) (None only for picard/jacobi, or quasi with "
                        f"jac_diag), "
                        f"got {type(jac).__name__}")
    if jac_diag is not None and not callable(jac_diag):
        raise TypeError(f"jac_diag: expected a callable or None, got {type(jac_diag).__name__}")
    check_choice(scan, "scan", matrix_scan.METHODS)
    h0 = check_array(h0, "h0", ndim=(1, 2, 3))
    try:
        T = len(X)
    except TypeError:
        raise TypeError(f"X: expected an array with time on axis 0, got {type(X).__name__}") from None
    if T < 1:
        raise ValueError("X: expected at least one time step (axis 0), got 0")
    X = _check_X(X, T)
    dtype = h0.dtype
    if init is None:
        H = np.zeros((T,) + h0.shape, dtype=dtype)
    else:
        H = check_array(init, "init", shape=(T,) + h0.shape).astype(dtype, copy=True)
    tol = DEFAULT_TOL.get(dtype, 1e-10) if tol is None else check_float(tol, "tol", low=0.0)
    max_iter = T if max_iter is None else check_count(max_iter, "max_iter", low=0)   # <= MAX_COUNT: 1e12 is a typo
    clip = check_float(clip, "clip", low=0.0, low_inclusive=False)
    diverge_factor = check_float(diverge_factor, "diverge_factor", low=1.0)
    Hprev = _shift(h0, H)
    with np.errstate(over="ignore", invalid="ignore"):
        r = H - _call(f, "f", Hprev, X)
    if r.shape != H.shape:
        raise ValueError(f"f: expected an output of shape {H.shape} (T, *batch, H), got {r.shape}")
    history = [_norm(r)]
    if not math.isfinite(history[0]):
        raise NewtonDivergence("iteration 0: the residual of the starting guess is not finite "
                               "(check init, h0 and X)")
    if callback is not None:
        callback(0, H)
    for k in range(1, max_iter + 1):
        if history[-1] <= tol:
            break
        A, structure = _jacobians(jac, jac_diag, Hprev, X, method, clip)
        try:
            delta = _direction(A, structure, r, scan)
        except (FloatingPointError, ValueError) as exc:
            raise NewtonDivergence(
                f"iteration {k}: the Newton scan overflowed (residual before it {history[-1]:.3g}): products of "
                f"the Jacobians grow without bound -- the dynamics are unpredictable (positive Lyapunov "
                f"exponent); try method='damped'. ({exc})") from None
        H = H + delta
        Hprev = _shift(h0, H)
        with np.errstate(over="ignore", invalid="ignore"):
            r = H - _call(f, "f", Hprev, X)
        res = _norm(r)
        history.append(res)
        if not math.isfinite(res) or res > diverge_factor * max(history[0], 1.0):
            raise NewtonDivergence(
                f"iteration {k}: residual {res:.3g} (started at {history[0]:.3g}) -- method={method!r} diverged"
                + _remedy(method))
        if callback is not None:
            callback(k, H)
    return H, history


def _remedy(method: str) -> str:
    if method in ("picard", "jacobi"):
        return (f"; {method} needs A close to the true Jacobian (picard: f near the identity, jacobi: a strongly "
                "contracting f) -- try method='quasi' or 'newton'")
    return "; try method='damped' (clipped Jacobians)" if method != "damped" else "; try a smaller clip"


# --------------------------------------------------------------------------- gradient (IFT)
def gradient(jac: Callable, H, h0, X, dH, *, vjp: Callable | None = None, scan: str = "sequential"):
    """Gradient of a loss ``L(H)`` through the converged trajectory, by the implicit function theorem.

    ``r(H*) = 0`` defines ``H*``; the adjoint ``lam = dL/dH*`` (total) solves the *transposed*
    linear recurrence through the same Jacobians, backward in time::

        lam_T = dH_T,     lam_t = dH_t + J_{t+1}^T lam_{t+1}

    -- one matrix scan on the reversed sequence. ``dH`` = ``dL/dH`` (direct, ``(T, *batch, H)``).
    Returns ``(lam, dh0)`` with ``dh0 = J_1^T lam_1``; with ``vjp(H_prev, X, lam)`` (the model's
    parameter vector-Jacobian product, all steps at once) returns ``(vjp(...), dh0)`` instead."""
    if not callable(jac):
        raise TypeError(f"jac: expected a callable jac(H_prev, X), got {type(jac).__name__}")
    if vjp is not None:
        check_callable(vjp, "vjp", "a function vjp(H_prev, X, lam)")
    check_choice(scan, "scan", matrix_scan.METHODS)
    H = _check_states(check_array(H, "H", ndim=(2, 3, 4)), "H")
    dH = check_array(dH, "dH", shape=H.shape).astype(H.dtype, copy=False)
    h0 = check_array(h0, "h0", shape=H.shape[1:])
    X = _check_X(X, H.shape[0])
    Hprev = _shift(h0, H)
    J = _check_jac_out(_call(jac, "jac", Hprev, X), H.shape + (H.shape[-1],))
    JT = np.swapaxes(J, -1, -2)
    A_rev = np.empty_like(JT)
    A_rev[0] = 0.0
    A_rev[1:] = JT[:0:-1]  # reversed step s uses J_{T-s}^T (0-based: J[T-s])
    lam = matrix_scan.linear_recurrence(np.ascontiguousarray(A_rev), np.ascontiguousarray(dH[::-1]), None,
                                        structure="full", method=scan)[::-1]
    dh0 = (JT[0] @ lam[0][..., None])[..., 0]
    if vjp is not None:
        return vjp(Hprev, X, lam), dh0
    return np.ascontiguousarray(lam), dh0


# --------------------------------------------------------------------------- predictability
def lyapunov_from_jacobians(J, *, seed: int = 0) -> float:
    """Largest Lyapunov exponent from the Jacobians ``J`` ``(T, *batch, H, H)`` of one trajectory:
    push a random unit vector through ``J_1, J_2, ...``, renormalising each step, and average the
    log growth (per step; averaged over the batch)."""
    J = check_array(J, "J", ndim=(3, 4, 5))
    T = J.shape[0]
    if T < 1 or J.shape[-1] != J.shape[-2] or J.shape[-1] < 1:
        raise ValueError(f"J: expected T >= 1 square Jacobians (T, *batch, H, H) with H >= 1, got shape {J.shape}")
    rng = np.random.default_rng(check_int(seed, "seed", low=0))
    v = rng.standard_normal(J.shape[1:-1])
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    total = np.zeros(J.shape[1:-2])
    for t in range(T):
        v = (J[t] @ v[..., None])[..., 0]
        n = np.linalg.norm(v, axis=-1)
        n = np.maximum(n, 1e-300)
        total += np.log(n)
        v /= n[..., None]
    return float(np.mean(total) / T)


def lyapunov_exponent(jac: Callable, H, h0, X, *, seed: int = 0, burn_in: int = 0) -> float:
    """Largest Lyapunov exponent along the trajectory ``H`` (from ``h0``): negative = contracting
    (perturbations die out, Newton converges in a few iterations), positive = chaotic.
    ``burn_in`` first steps are pushed through but not counted."""
    check_callable(jac, "jac", "a function jac(H_prev, X)")
    H = _check_states(check_array(H, "H", ndim=(2, 3, 4)), "H")
    h0 = check_array(h0, "h0", shape=H.shape[1:])
    X = _check_X(X, H.shape[0])
    burn_in = check_int(burn_in, "burn_in", low=0, high=H.shape[0] - 1)
    J = _check_jac_out(_call(jac, "jac", _shift(h0, H), X), H.shape + (H.shape[-1],))
    if burn_in:
        rng = np.random.default_rng(seed)
        v = rng.standard_normal(J.shape[1:-1])
        for t in range(burn_in):
            v = (J[t] @ v[..., None])[..., 0]
            v /= np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-300)
        J = J[burn_in:]
    return lyapunov_from_jacobians(J, seed=seed)


# --------------------------------------------------------------------------- cost model
def span_model(T: int, nh: int, *, iters: int, P: int = 1, method: str = "newton",
               step_flops: float | None = None) -> dict:
    """Work and critical path (flops) of ``iters`` DEER iterations on ``P`` processors vs the
    sequential march, for one sequence of a GRU-sized step.

    A step costs ``step_flops`` (default ``6 H^2 + 20 H``: the ``h W_hh^T`` GEMV plus gates).
    Per iteration: f and its Jacobian at every t (parallel over t; the full Jacobian costs another
    ``6 H^2``, the diagonal ``20 H``), the residual, and the Newton scan
    (:func:`matrix_scan.work_span`, chunked: matrix-matrix combines, ``2 H^3`` each, for the full
    Jacobian; ``2 H`` for the diagonal). It counts flops only: no memory traffic, no communication,
    no latency per step. Returns ``{"serial", "work", "span", "speedup"}``."""
    T = check_positive_int(T, "T")
    nh = check_positive_int(nh, "nh")
    iters = check_positive_int(iters, "iters")
    P = check_positive_int(P, "P")
    check_choice(method, "method", METHODS)
    c = 6.0 * nh * nh + 20.0 * nh if step_flops is None else check_float(step_flops, "step_flops", low=0.0)
    serial = c * T
    jac_cost = {"quasi": 20.0 * nh, "picard": 0.0, "jacobi": 0.0}.get(method, 6.0 * nh * nh)
    structure = "full" if method in ("newton", "damped") else "diagonal"
    per = math.ceil(T / min(P, T))
    scan = matrix_scan.work_span(T, nh, structure=structure, method="chunked", P=P)
    if method == "jacobi":
        scan = {"work": 0.0, "span": 0.0}
    it_work = T * (c + jac_cost + nh) + scan["work"]
    it_span = per * (c + jac_cost + nh) + scan["span"]
    work, span = iters * it_work, iters * it_span
    return {"serial": serial, "work": work, "span": span, "speedup": serial / span}


# --------------------------------------------------------------------------- Jacobian diagonals without a Jacobian
def fd_jvp(f: Callable, eps: float = 1e-6) -> Callable:
    """``jvp(H_prev, X, V) ~ J V`` by central differences of ``f`` (error O(eps^2); float64 advised)."""
    if not callable(f):
        raise TypeError(f"f: expected a callable f(H_prev, X), got {type(f).__name__}")
    eps = check_float(eps, "eps", low=0.0, low_inclusive=False)

    def jvp(Hprev, X, V):
        return (f(Hprev + eps * V, X) - f(Hprev - eps * V, X)) / (2.0 * eps)
    return jvp


def hutchinson_diagonal(jvp: Callable, Hprev, X, *, samples: int = 64, seed: int = 0) -> np.ndarray:
    """Hutchinson's estimate of ``diag(J_t)`` for every t: the mean of ``z * (J z)`` over Rademacher
    ``z`` (entries +-1), unbiased because ``E[z_i z_j] = [i = j]``. ``jvp(H_prev, X, V) -> J V``
    (all steps at once, ``V`` shaped like ``H_prev``). Returns ``(T, *batch, H)``; its error falls
    like ``1/sqrt(samples)`` times the off-diagonal size (exact for a diagonal J)."""
    if not callable(jvp):
        raise TypeError(f"jvp: expected a callable jvp(H_prev, X, V), got {type(jvp).__name__}")
    Hprev = _check_states(Hprev, "Hprev")
    X = _check_X(X, Hprev.shape[0])
    samples = check_count(samples, "samples")
    rng = np.random.default_rng(seed)
    acc = np.zeros_like(Hprev)
    for _ in range(samples):
        z = rng.choice(np.array([-1.0, 1.0], dtype=Hprev.dtype), size=Hprev.shape)
        Jz = np.asarray(_call(jvp, "jvp", Hprev, X, z))
        if Jz.shape != Hprev.shape:
            raise ValueError(f"jvp: expected J V shaped like H_prev {Hprev.shape}, got {Jz.shape}")
        acc += z * Jz
    return acc / samples
