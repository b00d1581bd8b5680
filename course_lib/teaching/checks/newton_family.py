"""Checks for worksheet 11's fixed-point family items: Picard as a prefix sum (11.6) and K* predicted
from the Lyapunov exponent (11.7).

* 11.6 ``picard_step(f, h0, X, H)`` -- one Picard iteration (A = I), written as
  ``h0 + prefix_sum(f(H_prev, X) - H_prev)``. Checked against the course's one iteration loop
  (``newton.newton_step(method="picard")``) on four cells (T = 1 included, float64, 1e-12), inputs
  unchanged, and for its *span*: the Python body runs on arrays of traced numbers
  (:func:`.scan.dependency_traced`, the tracer of exercise 8.5) at T = 64 and T = 1024; a parallel
  prefix sum adds a few levels per doubling of T, a loop over t (or ``np.cumsum``, which numpy runs
  one term after another) adds one per step -- rejected as a "sequential span".
* 11.7 ``predict_kstar(lyapunov, T, tol, err0)`` -- how many Jacobi iterations (A = 0) the diagonal
  GRU needs to match its sequential unroll within ``tol``. Measured on three cells (contracting,
  weakly contracting, near-critical; :func:`course_lib.experiments.newton_kstar.measure`), accepted
  within :data:`KSTAR_REL` of the measured K* or :data:`KSTAR_ABS` iterations, whichever is larger;
  a prediction that ignores the exponent is rejected as a "constant prediction".

Why that tolerance: the largest Lyapunov exponent is the *average* log growth per step, while the
error after k iterations is set by the worst stretch of k steps in the sequence, which contracts a
little less than average; on the three cells the measured K* lies 0-10 % above ``ln(tol/err0)/lyapunov``
(capped at T). 20 % keeps room for that and still fails a natural-log/log10 slip (a factor 2.3) or a
missing cap at T.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...algorithms import newton, scan
from ...experiments import newton_kstar
from ...models import diag_gru, gru, jacobians
from ...parallel import deer
from .core import Case, ExerciseFailed, check_function, passed
from .scan import TraceEscape, dependency_depths, dependency_traced
from .shortcuts import check_no_shortcut

__all__ = ["check_picard_step", "check_predict_kstar", "picard_span", "measured_kstar", "tanh_cell",
           "KSTAR_CELLS", "KSTAR_REL", "KSTAR_ABS", "SPAN_TS", "EDGE_PROBES", "PICARD_ANSWERS"]

SPAN_TS = (64, 1024)        # 11.6: the span is measured at these T
#: 11.6: the course's answers -- its Picard step and its prefix scans; a solution that calls one is rejected
PICARD_ANSWERS = {"newton.newton_step": newton.newton_step, "newton.solve": newton.solve,
                  "scan.linear_recurrence": scan.linear_recurrence, "scan.hillis_steele": scan.hillis_steele,
                  "scan.blelloch": scan.blelloch}
KSTAR_REL = 0.2             # 11.7: accepted relative deviation from the measured K*
KSTAR_ABS = 2               # 11.7: ... or this many iterations, whichever is larger
# 11.7: (label, seed, recurrent scale, T, tol) of the diagonal GRU cells the prediction is checked on
KSTAR_CELLS = (("contracting", 1, 0.5, 128, 1e-4), ("weakly contracting", 1, 3.0, 256, 1e-8),
               ("near-critical", 0, 6.0, 192, 1e-6))


# --------------------------------------------------------------------------- 11.6
def tanh_cell(nh: int, scale: float, seed: int = 0):
    """``f(H_prev, X) = tanh(H_prev W^T + X)`` with ``W ~ N(0, scale^2 / nh)``: a dense test cell."""
    W = np.random.default_rng(seed).standard_normal((nh, nh)) * scale / np.sqrt(nh)

    def f(Hp, X):
        return np.tanh(Hp @ W.T + X)
    return f


def _picard_reference(f, h0, X, H):
    return newton.newton_step(f, None, h0, X, H, method="picard")[0]


def _picard_cases() -> list:
    out = []
    f = tanh_cell(3, 1.2, 0)
    rng = np.random.default_rng(60)
    out.append(Case(dict(f=f, h0=rng.standard_normal((2, 3)), X=rng.standard_normal((1, 2, 3)),
                         H=rng.standard_normal((1, 2, 3))), label="tanh cell, T=1, B=2, nh=3"))
    f = tanh_cell(2, 0.5, 1)
    out.append(Case(dict(f=f, h0=0.5 * rng.standard_normal((1, 2)), X=rng.standard_normal((64, 1, 2)),
                         H=rng.standard_normal((64, 1, 2))), label="tanh cell, T=64, B=1, nh=2"))
    p = diag_gru.init_params(3, 4, seed=2)
    f, _, _ = diag_gru.system(p)
    X = rng.standard_normal((17, 2, 3)) @ p.W_x + p.b
    out.append(Case(dict(f=f, h0=0.3 * rng.standard_normal((2, 4)), X=X, H=np.zeros((17, 2, 4))),
                    label="diagonal GRU, T=17, B=2, nh=4, from zeros"))
    pg = gru.init_params(3, 5, seed=3, dtype=np.float64)
    f, _, _ = deer.gru_system(pg)
    X = jacobians.gru_input_projection(pg, rng.standard_normal((33, 3, 3)))
    out.append(Case(dict(f=f, h0=np.zeros((3, 5)), X=X, H=0.5 * rng.standard_normal((33, 3, 5))),
                    label="GRU, T=33, B=3, nh=5"))
    return out


def _traced_cell(Hp, X):
    """A cell made of + - * only, so that it runs on traced numbers (depth 4 per step)."""
    return 0.8 * Hp - 0.1 * (Hp * Hp) * Hp + X


def picard_span(picard_step, T: int, *, nh: int = 2) -> dict:
    """Run ``picard_step`` on traced numbers (a polynomial cell, batch 1) and return
    ``{"span": the longest chain of dependent + - * / behind any output, "T", "values", "reference"}``
    (``values``: the traced result as floats, ``reference``: the course's Picard step)."""
    rng = np.random.default_rng(T)
    h0, X, H = 0.5 * rng.standard_normal((1, nh)), 0.3 * rng.standard_normal((T, 1, nh)), rng.standard_normal((T, 1, nh))
    fn = getattr(picard_step, "py_func", picard_step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fn(_traced_cell, dependency_traced(h0), dependency_traced(X), dependency_traced(H))
    got = np.asarray(got, dtype=object)
    if got.shape != H.shape:
        raise ValueError(f"returned shape {got.shape} on the traced run, expected {H.shape}")
    depth, values = dependency_depths(got)
    return {"span": int(depth.max()), "T": T, "values": values,
            "reference": _picard_reference(_traced_cell, h0, X, H)}


def check_picard_step(picard_step) -> str:
    """Exercise 11.6: ``picard_step(f, h0, X, H)`` equals one Picard iteration of the course's loop
    (4 cells, T = 1 included, float64, rtol = atol = 1e-12), leaves its inputs unchanged, has a span
    that grows like log T (counted on traced numbers at T = 64 and 1024: at most 2 levels more per
    doubling of T), and calls none of the course's answers (:data:`PICARD_ANSWERS`: its Newton/Picard
    step and its prefix scans -- the prefix sum is the exercise)."""
    ex = "11.6"
    line = check_function(ex, picard_step, _picard_reference, _picard_cases(), output_names=["H_new"],
                          rtol=1e-12, atol=1e-12, quiet=True, inputs_unchanged=True,
                          hint="with A = I the iteration unrolls to H_new[t] = h0 + sum_{s<=t} (f(H_prev, X)[s] - "
                               "H_prev[s]), H_prev = (h0, H[0], ..., H[T-2]); the first wrong time step shows "
                               "where your sum starts or stops one step off.")
    spans = {}
    for T in SPAN_TS:
        try:
            s = picard_span(picard_step, T)
        except NotImplementedError:
            raise
        except TraceEscape:
            raise ExerciseFailed(
                f"Exercise {ex} failed:\n  the check runs your function on arrays of traced numbers (dtype object) "
                "to measure its span, and your function stored one into an array of a fixed float type.\n  Hint: "
                "allocate with the inputs' dtype (np.zeros_like(H), arr.copy()), never np.empty(shape).") from None
        except Exception as exc:
            raise ExerciseFailed(
                f"Exercise {ex} failed:\n  the check runs your function on arrays of traced numbers (T={T}) to "
                f"measure its span, and it raised {type(exc).__name__}: {exc}\n  Hint: use + - * and numpy "
                "slicing only (no np.tanh, no numba) inside the prefix sum.") from exc
        if not np.allclose(s["values"], s["reference"], rtol=1e-9, atol=1e-9):
            raise ExerciseFailed(f"Exercise {ex} failed:\n  on traced numbers (T={T}) your function returns other "
                                 "values than on plain floats; compute the same thing whatever the dtype.")
        spans[T] = s["span"]
    (t1, s1), (t2, s2) = sorted(spans.items())
    if s2 >= t2 // 2:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your numbers are right, but the step has a sequential span: its longest chain "
            f"of dependent operations is {s2} at T={t2} ({s1} at T={t1}) -- it grows with T, one addition per time "
            f"step. A loop over t does that, and so do np.cumsum / np.add.accumulate, which numpy runs one term "
            f"after another.\n  Hint: a prefix sum in ceil(log2 T) rounds: for k = 1, 2, 4, ... while k < T: "
            f"S[k:] = S[k:] + S[:-k] (Hillis-Steele; the right-hand side is read before it is written).")
    allowed = 2 * (math.log2(t2) - math.log2(t1)) + 2
    if s2 - s1 > allowed:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your numbers are right, but the span grows faster than log T: {s1} at T={t1}, "
            f"{s2} at T={t2}; a tree-shaped prefix sum adds at most 2 levels per doubling of T "
            f"({allowed:.0f} here).\n  Hint: double the stride every round (k = 1, 2, 4, ...), not a fixed number "
            "of chunks.")
    check_no_shortcut(ex, picard_step, PICARD_ANSWERS, **_picard_cases()[1].kwargs)
    print(line)
    print(f"  span: {s1} dependent operations at T={t1}, {s2} at T={t2} (a loop over t: about T)")
    return line


# --------------------------------------------------------------------------- 11.7
#: 11.7's edge, asked about in the statement: a non-negative exponent gives no contraction, so K* = T
#: (after T iterations the first T states -- all of them -- are exact); (lyapunov, T, tol, err0)
EDGE_PROBES = ((0.0, 100, 1e-6, 1.0), (0.1, 100, 1e-6, 1.0))


def _no_contraction_edge(ex: str, predict_kstar) -> None:
    """Fail unless ``predict_kstar`` gives T for every probe of :data:`EDGE_PROBES` (an exponent >= 0)."""
    for lam, T, tol, err0 in EDGE_PROBES:
        try:
            got = predict_kstar(lam, T, tol, err0)
            said = f"you predicted {got!r}"
            right = float(got) == T
        except NotImplementedError:
            raise
        except Exception as exc:
            said, right = f"your predict_kstar raised {type(exc).__name__}: {exc}", False
        if not right:
            raise ExerciseFailed(
                f"Exercise {ex} failed on a non-negative exponent (lyapunov={lam:g}, T={T}, tol={tol:g}, "
                f"err0={err0:g}):\n  {said}; expected {T}. With lyapunov >= 0 the error does not shrink from one "
                "iteration to the next, so only the other bound holds: after k iterations the first k states are "
                f"exact, and K* = T.\n  Hint: handle lyapunov >= 0 before dividing by it (ln(tol/err0) / lyapunov "
                "is negative or a division by zero there).")


def _as_count(ex, got, what):
    try:
        v = float(got)
    except (TypeError, ValueError):
        raise ExerciseFailed(f"Exercise {ex} failed: expected a number of iterations for {what}, got "
                             f"{type(got).__name__} {got!r}") from None
    if not math.isfinite(v) or v < 0:
        raise ExerciseFailed(f"Exercise {ex} failed: expected a number of iterations >= 0 for {what}, got {got!r}")
    return v


def _predict(ex, predict_kstar, lam, T, tol, err0, what):
    try:
        got = predict_kstar(lam, T, tol, err0)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise ExerciseFailed(f"Exercise {ex}: your predict_kstar raised {type(exc).__name__} for {what}: "
                             f"{exc}") from exc
    return _as_count(ex, got, what)


def measured_kstar() -> list[dict]:
    """The three cells of 11.7: ``[{"label", "lyapunov", "T", "tol", "err0", "k_star"}, ...]`` (Jacobi on the
    diagonal GRU from a zero start, float64)."""
    rows = []
    for label, seed, scale, T, tol in KSTAR_CELLS:
        m = newton_kstar.measure("diag_gru", T, tol=tol, method="jacobi", seed=seed, scale=scale)
        rows.append({"label": label, "lyapunov": m["lyapunov"], "T": T, "tol": tol, "err0": m["err0"],
                     "k_star": m["k_star"]})
    return rows


def check_predict_kstar(predict_kstar) -> str:
    """Exercise 11.7: ``predict_kstar(lyapunov, T, tol, err0)`` predicts the Jacobi K* of three diagonal-GRU
    cells within ``max(KSTAR_REL * K*, KSTAR_ABS)`` of the measurement (K* measured now by running Jacobi
    against the sequential unroll); a prediction that does not move with the Lyapunov exponent is rejected
    first (a constant prediction), and the edge the statement asks about is checked last: a non-negative
    exponent must give K* = T (:data:`EDGE_PROBES`)."""
    ex = "11.7"
    if not callable(predict_kstar):
        raise ExerciseFailed(f"Exercise {ex}: expected a function, got {type(predict_kstar).__name__}")
    probe = [_predict(ex, predict_kstar, lam, 1000, 1e-6, 1.0, f"lyapunov={lam}, T=1000, tol=1e-06, err0=1.0")
             for lam in (-0.5, -0.05)]
    if probe[0] == probe[1]:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  a constant prediction: {probe[0]:g} iterations both for a Lyapunov exponent "
            "of -0.5 and of -0.05 (T=1000, tol=1e-6, err0=1). The exponent is how fast the error shrinks per "
            "iteration, so it must set the count.\n  Hint: Jacobi's error after k iterations is about "
            "err0 * exp(lyapunov * k); solve for the k where it reaches tol.")
    rows = measured_kstar()
    for r in rows:
        what = f"the {r['label']} cell (lyapunov={r['lyapunov']:.4f}, T={r['T']}, tol={r['tol']:g}, err0={r['err0']:.3f})"
        r["predicted"] = _predict(ex, predict_kstar, r["lyapunov"], r["T"], r["tol"], r["err0"], what)
        k = r["k_star"]
        allowed = max(KSTAR_REL * k, KSTAR_ABS)
        if abs(r["predicted"] - k) > allowed:
            raise ExerciseFailed(
                f"Exercise {ex} failed on {what}:\n  you predicted {r['predicted']:g} iterations, measured K* = {k} "
                f"(accepted: within {allowed:.0f}).\n  Hint: each Jacobi iteration multiplies the error by about "
                "exp(lyapunov) (natural log); after k iterations the first k states are exact, so K* never "
                "exceeds T -- and a non-negative exponent gives no contraction at all.")
    _no_contraction_edge(ex, predict_kstar)
    line = passed(ex, len(rows), len(rows))
    for r in rows:
        print(f"  {r['label']:>18}: Lyapunov {r['lyapunov']:+.3f}, T={r['T']}, tol={r['tol']:.0e} -> "
              f"predicted {r['predicted']:g}, measured {r['k_star']}")
    return line
