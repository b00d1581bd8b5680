"""Worksheet 11's family items (11.6 Picard as a prefix sum, 11.7 K* from the Lyapunov exponent): the
solutions pass; a loop, np.cumsum, an input-mutating step and a constant predictor are rejected by name."""
import math

import numpy as np
import pytest

from course_lib.algorithms import newton
from course_lib.experiments import newton_kstar
from course_lib.teaching.checks import newton_family as checks
from course_lib.teaching.checks.core import ExerciseFailed


def _prefix_sum(v):
    S = v.copy()
    k = 1
    while k < len(S):
        S[k:] = S[k:] + S[:-k]
        k *= 2
    return S


def _picard(f, h0, X, H):
    H_prev = np.concatenate([h0[None], H[:-1]])
    return h0 + _prefix_sum(f(H_prev, X) - H_prev)


def _loop(f, h0, X, H):
    H_prev = np.concatenate([h0[None], H[:-1]])
    D = f(H_prev, X) - H_prev
    out = np.zeros_like(H)
    acc = h0
    for t in range(len(H)):
        acc = acc + D[t]
        out[t] = acc
    return out


def _cumsum(f, h0, X, H):
    H_prev = np.concatenate([h0[None], H[:-1]])
    return h0 + np.cumsum(f(H_prev, X) - H_prev, axis=0)


def _mutating(f, h0, X, H):
    new = _picard(f, h0, X, H)
    H[...] = new
    return H


def _fixed_chunks(f, h0, X, H, chunks=8):
    """Right numbers, span ~ T/chunks: not logarithmic."""
    H_prev = np.concatenate([h0[None], H[:-1]])
    D = f(H_prev, X) - H_prev
    T = len(D)
    bounds = np.linspace(0, T, min(chunks, T) + 1).astype(int)
    out = D.copy()
    for s, e in zip(bounds[:-1], bounds[1:]):
        for t in range(s + 1, e):  # every chunk in its own running sum (side by side in a real kernel)
            out[t] = out[t - 1] + D[t]
    carry = h0 + 0 * D[0]
    for s, e in zip(bounds[:-1], bounds[1:]):
        if e > s:
            out[s:e] = out[s:e] + carry
            carry = out[e - 1]
    return out


def _predict(lyapunov, T, tol, err0):
    if err0 <= tol:
        return 0
    if lyapunov >= 0:
        return T
    return min(T, math.ceil(math.log(tol / err0) / lyapunov))


def test_the_solutions_pass(capsys):
    checks.check_picard_step(_picard)
    checks.check_predict_kstar(_predict)
    out = capsys.readouterr().out
    assert "Exercise 11.6 passed: 4/4 cases" in out and "Exercise 11.7 passed: 3/3 cases" in out


def test_the_prefix_form_is_the_loops_picard_step():
    """The worksheet's formula is the one iteration with A = I (not only on the check's cells)."""
    f = checks.tanh_cell(4, 0.9, 5)
    rng = np.random.default_rng(0)
    for T in (1, 2, 7, 100):
        h0, X, H = rng.standard_normal((3, 4)), rng.standard_normal((T, 3, 4)), rng.standard_normal((T, 3, 4))
        want = newton.newton_step(f, None, h0, X, H, method="picard")[0]
        np.testing.assert_allclose(_picard(f, h0, X, H), want, rtol=1e-12, atol=1e-12)


def test_the_span_is_logarithmic_for_the_prefix_sum_and_linear_for_the_loop():
    small, big = (checks.picard_span(fn, T)["span"] for fn in (_picard,) for T in checks.SPAN_TS)
    assert big - small <= 2 * 4 + 2 and big < 40
    loop = checks.picard_span(_loop, 1024)["span"]
    assert loop >= 1024


@pytest.mark.parametrize("wrong", [_loop, _cumsum], ids=["python loop", "np.cumsum"])
def test_a_sequential_prefix_sum_is_rejected_by_name(wrong):
    with pytest.raises(ExerciseFailed, match="sequential span"):
        checks.check_picard_step(wrong)


def test_fixed_chunks_are_rejected_as_faster_than_log():
    with pytest.raises(ExerciseFailed, match="faster than log T"):
        checks.check_picard_step(_fixed_chunks)


def test_mutating_the_guess_is_rejected_by_name():
    with pytest.raises(ExerciseFailed, match="changed its input H in place"):
        checks.check_picard_step(_mutating)


def test_a_wrong_start_is_named_at_its_time_step():
    def off_by_one(f, h0, X, H):  # forgets h0: sums from H[0] instead
        return _picard(f, h0, X, H) - h0
    with pytest.raises(ExerciseFailed, match=r"11.6 failed on case 1/4(.|\n)*time step 0"):
        checks.check_picard_step(off_by_one)


@pytest.mark.parametrize("constant", [lambda lam, T, tol, err0: 5, lambda lam, T, tol, err0: T])
def test_a_constant_prediction_is_rejected_by_name(constant):
    with pytest.raises(ExerciseFailed, match="constant prediction"):
        checks.check_predict_kstar(constant)


@pytest.mark.parametrize("wrong,cell", [
    (lambda lam, T, tol, err0: math.ceil(math.log(tol / err0) / lam), "near-critical"),    # no cap at T
    (lambda lam, T, tol, err0: min(T, math.ceil(math.log10(tol / err0) / lam)), "contracting"),  # log10
])
def test_wrong_predictions_name_the_cell(wrong, cell):
    with pytest.raises(ExerciseFailed, match=f"failed on the {cell} cell"):
        checks.check_predict_kstar(wrong)


def test_the_measured_cells_span_the_three_regimes():
    rows = checks.measured_kstar()
    lam = [r["lyapunov"] for r in rows]
    assert lam[0] < lam[1] < lam[2] < 0
    assert rows[2]["k_star"] == rows[2]["T"]          # near-critical: no gain over the T-step bound
    assert rows[0]["k_star"] < rows[0]["T"] // 2       # contracting: far fewer than T


def test_measure_agrees_with_k_star():
    m = newton_kstar.measure("diag_gru", 64, tol=1e-8)
    assert m["k_star"] == newton_kstar.k_star("diag_gru", (64,), tol=1e-8)["k_star"][0]
    assert m["method"] == "quasi" and m["lyapunov"] < 0 and m["err0"] > 0


def test_measure_names_its_arguments():
    from helpers import raises_naming
    raises_naming(ValueError, "method", newton_kstar.measure, "diag_gru", 16, method="euler")
    raises_naming((ValueError, TypeError), "T", newton_kstar.measure, "diag_gru", 0)


# --------------------------------------------------------------------------- issue 39: edges and shortcuts
@pytest.mark.parametrize("unguarded", [
    lambda lam, T, tol, err0: min(T, math.ceil(math.log(tol / err0) / lam)),       # 0: ZeroDivisionError
    lambda lam, T, tol, err0: T if lam == 0 else min(T, math.ceil(math.log(tol / err0) / lam)),   # +0.1: negative
])
def test_a_non_negative_exponent_must_give_t(unguarded):
    """Issue 39, item 5: the statement asks what a non-negative exponent gives; the cells never had one."""
    with pytest.raises(ExerciseFailed, match=r"(?s)non-negative exponent \(lyapunov=0(\.1)?, T=100.*expected 100.*"
                                             r"K\* = T"):
        checks.check_predict_kstar(unguarded)


@pytest.mark.parametrize("name", ["newton.newton_step", "scan.hillis_steele"])
def test_picard_built_on_the_course_answers_is_rejected(name):
    """Issue 39, item 7: 11.6 had no shortcut check: the course's Picard step or prefix scans passed."""
    from course_lib.algorithms import newton, scan

    def via_newton(f, h0, X, H):
        if X.dtype == object:
            return _picard(f, h0, X, H)          # the span is measured on traced numbers: looks right there
        return newton.newton_step(f, None, h0, X, H, method="picard")[0]

    def via_scan(f, h0, X, H):
        if X.dtype == object:
            return _picard(f, h0, X, H)
        H_prev = np.concatenate([h0[None], H[:-1]])
        D = f(H_prev, X) - H_prev
        return h0 + scan.hillis_steele(np.ones_like(D), D)[0]

    fn = via_newton if name.startswith("newton") else via_scan
    with pytest.raises(ExerciseFailed, match=f"calls {name}, the course's own answer"):
        checks.check_picard_step(fn)
