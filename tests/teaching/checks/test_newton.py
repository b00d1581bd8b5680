"""The worksheet-11 checks accept the reference solutions and reject wrong ones with a precise message."""
import numpy as np
import pytest

from course_lib.algorithms import matrix_scan, newton
from course_lib.models import jacobians
from course_lib.teaching.checks import newton as checks
from course_lib.teaching.checks.core import ExerciseFailed


def _good_step(f, jac, h0, X, H):
    return newton.newton_step(f, jac, h0, X, H)[0]


def _good_jac(params, h, gi):
    return jacobians.gru_jacobian(params, h, gi)


def _good_log_scan(log_a, log_b):
    a_star = np.cumsum(log_a, axis=0)
    return np.exp(a_star + np.logaddexp.accumulate(log_b - a_star, axis=0))


def test_reference_solutions_pass(capsys, monkeypatch):
    """The course's answers, with the shortcut watch off (calling them is a shortcut: test_shortcuts.py)."""
    from course_lib.teaching.checks import shortcuts

    monkeypatch.setattr(shortcuts, "calls_made", lambda *a, **k: [])
    checks.check_combine(matrix_scan.combine)
    checks.check_newton_step(_good_step)
    checks.check_gru_jacobian(_good_jac)
    checks.check_log_space_scan(_good_log_scan)
    out = capsys.readouterr().out
    for k in ("11.1", "11.2", "11.3", "11.4"):
        assert f"Exercise {k} passed" in out


@pytest.mark.parametrize("wrong,msg", [
    (lambda p, q: (p[0] @ q[0], (q[0] @ p[1][..., None])[..., 0] + q[1]), r"11.1 failed(.|\n)*'A'"),
    (lambda p, q: (q[0] @ p[0], p[1] + q[1]), r"11.1 failed(.|\n)*'b'"),
])
def test_combine_wrong_order_or_missing_product(wrong, msg):
    with pytest.raises(ExerciseFailed, match=msg):
        checks.check_combine(wrong)


def _plus_sign(f, jac, h0, X, H):
    Hp = newton.shift(h0, H)
    r = H - f(Hp, X)
    return H + matrix_scan.linear_recurrence(jac(Hp, X), r)  # + r instead of - r


def _jacobian_at_new_state(f, jac, h0, X, H):
    Hp = newton.shift(h0, H)
    r = H - f(Hp, X)
    return H + matrix_scan.linear_recurrence(jac(H, X), -r)  # J evaluated at h_t, not h_{t-1}


@pytest.mark.parametrize("wrong,msg", [
    (_plus_sign, r"11.2 failed on problem 1/3 .*iteration 1: first wrong at time step 0"),
    (_jacobian_at_new_state, r"11.2 failed on problem 1/3 .*iteration 2: first wrong at time step [1-9]"),
])
def test_newton_step_errors_name_iteration_and_time_step(wrong, msg):
    with pytest.raises(ExerciseFailed, match=msg):
        checks.check_newton_step(wrong)


def _no_reset_path(params, h, gi):
    p = params
    J = jacobians.gru_jacobian(p, h, gi)
    H = h.shape[-1]
    r, z, n, gh = jacobians.gru_gates(p, h, gi)
    dr = (r * (1 - r))[..., :, None] * p.W_hh[:H]
    return J - ((1 - z) * (1 - n * n) * gh[..., 2 * H:])[..., :, None] * dr  # forgets dr * gh_n


@pytest.mark.parametrize("wrong,msg", [
    (lambda p, h, gi: np.swapaxes(jacobians.gru_jacobian(p, h, gi), -1, -2), r"gate 'z'.*J\[b=\d, i=\d, j=\d\](.|\n)*transposed"),
    (_no_reset_path, r"reset gate r.*gate 'r'.*J\[b="),
    (lambda p, h, gi: jacobians.gru_jacobian(p, h, gi) - np.eye(4) * 0.5, r"update gate z.*gate 'z'"),
])
def test_gru_jacobian_errors_name_gate_and_entry(wrong, msg):
    with pytest.raises(ExerciseFailed, match=msg):
        checks.check_gru_jacobian(wrong)


@pytest.mark.parametrize("wrong,msg", [
    (lambda log_a, log_b: np.exp(np.cumsum(log_a, 0) + np.cumsum(log_b, 0)), r"11.4 failed on case 1/4(.|\n)*time step"),
    (lambda log_a, log_b: np.exp(np.logaddexp.accumulate(log_b, axis=0)), r"11.4 failed on case 1/4(.|\n)*time step 1"),
])
def test_log_scan_errors_name_time_step(wrong, msg):
    with pytest.raises(ExerciseFailed, match=msg):
        checks.check_log_space_scan(wrong)


# --------------------------------------------------------------------------- issue 17: 11.5 and holes
from course_lib.algorithms import scan  # noqa: E402


def _quasi(f, jac_diag, h0, X, H):
    Hp = np.concatenate([h0[None], H[:-1]])
    r = H - f(Hp, X)
    return H + scan.linear_recurrence(jac_diag(Hp, X), -r)


def test_quasi_step_passes(capsys, fake_clock):
    fake_clock.cost(full_newton=4e-3, yours=1e-3)
    assert checks.check_quasi_step(_quasi) == "Exercise 11.5 passed: 2/2 cases"


def test_quasi_step_with_full_matrices_is_caught_by_its_memory():
    def full(f, jac_diag, h0, X, H):
        Hp = np.concatenate([h0[None], H[:-1]])
        r = H - f(Hp, X)
        J = jac_diag(Hp, X)[..., :, None] * np.eye(H.shape[-1])
        return H + matrix_scan.linear_recurrence(J, -r)
    with pytest.raises(ExerciseFailed, match=r"(?s)bytes of memory per state element at nh=64.*you built matrices"):
        checks.check_quasi_step(full)


@pytest.mark.parametrize("wrong,msg", [
    (lambda f, jd, h0, X, H: f(np.concatenate([h0[None], H[:-1]]), X), r"time step 1(.|\n)*Picard"),
    (lambda f, jd, h0, X, H: H + scan.linear_recurrence(jd(H, X), -(H - f(np.concatenate([h0[None], H[:-1]]), X))),
     r"iteration 2: first wrong at time step [1-9]"),
    (lambda f, jd, h0, X, H: None, "returned None"),
])
def test_quasi_step_wrong_numbers_are_named(wrong, msg):
    with pytest.raises(ExerciseFailed, match=msg):
        checks.check_quasi_step(wrong)


def test_quasi_step_slow_loop_fails_the_speed_ratio(fake_clock):
    def slow(f, jac_diag, h0, X, H):
        Hp = np.concatenate([h0[None], H[:-1]])
        r, d = H - f(Hp, X), jac_diag(Hp, X)
        delta, prev = np.empty_like(H), np.zeros_like(H[0])
        for t in range(len(H)):
            for b in range(H.shape[1]):
                for i in range(H.shape[2]):
                    prev[b, i] = d[t, b, i] * prev[b, i] - r[t, b, i]
            delta[t] = prev
        return H + delta
    fake_clock.cost(full_newton=1e-3, yours=2e-3)  # the Python triple loop: half the speed of a Newton step
    with pytest.raises(ExerciseFailed, match=r"(?s)speed test.*only 0.50x as fast as one full Newton step"):
        checks.check_quasi_step(slow, retries=1)


def test_non_array_results_are_explained_not_raised():
    with pytest.raises(ExerciseFailed, match="expected the new guess H"):
        checks.check_newton_step(lambda f, jac, h0, X, H: {"H": H})
    with pytest.raises(ExerciseFailed, match=r"expected J \(B, nh, nh\) as a numeric array"):
        checks.check_gru_jacobian(lambda p, h, gi: "J")


def test_log_scan_in_place_is_rejected():
    def in_place(log_a, log_b):
        np.cumsum(log_a, axis=0, out=log_a)
        return np.exp(log_a + np.logaddexp.accumulate(log_b - log_a, axis=0))
    with pytest.raises(ExerciseFailed, match="changed its input log_a in place"):
        checks.check_log_space_scan(in_place)


# --------------------------------------------------------------------------- issue 29: gamed timers
def test_quasi_step_passes_twice_in_a_row(fake_clock):
    fake_clock.cost(full_newton=4e-3, yours=1e-3)
    for _ in range(2):
        assert checks.check_quasi_step(_quasi) == "Exercise 11.5 passed: 2/2 cases"


def test_quasi_step_cached_answer_while_timed_is_a_gamed_timer(fake_clock):
    cache = {}

    def cached(f, jac_diag, h0, X, H):
        if H.shape == (256, 4, 48):
            return cache.setdefault("H", _quasi(f, jac_diag, h0, X, H))
        return _quasi(f, jac_diag, h0, X, H)

    fake_clock.cost(full_newton=4e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 11.5 failed on the speed test \(T=256, B=4, nh=48, timed call "
                                             r"\d+\):\n  gamed timer"):
        checks.check_quasi_step(cached)


def test_newton_step_and_jacobian_changing_their_inputs_are_named():
    def clobber_step(f, jac, h0, X, H):
        out = _good_step(f, jac, h0, X, H)
        X *= 2.0
        return out

    def clobber_jac(params, h, gi):
        J = _good_jac(params, h, gi)
        h[:] = 0.0
        return J

    with pytest.raises(ExerciseFailed, match=r"Exercise 11.2 failed on problem 1/3, iteration 1:\n  your function "
                                             r"changed its input X in place"):
        checks.check_newton_step(clobber_step)
    with pytest.raises(ExerciseFailed, match=r"Exercise 11.3 failed on .*:\n  your function changed its input h in "
                                             r"place"):
        checks.check_gru_jacobian(clobber_jac)


def test_quasi_step_changing_its_input_only_while_timed_is_named(fake_clock):
    def clobbers(f, jac_diag, h0, X, H):
        out = _quasi(f, jac_diag, h0, X, H)
        if H.shape == (256, 4, 48):
            X[0] = 0.0
        return out

    fake_clock.cost(full_newton=4e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 11.5 failed on the speed test \(T=256, B=4, nh=48, timed call "
                                             r"\d+\):\n  your function changed its input 'X' in place while timed"):
        checks.check_quasi_step(clobbers)


# --------------------------------------------------------------------------- issue 39: numerics taught (11.4)
def _linear_space(log_a, log_b):
    """The closed form in linear space that 11.4's hint warns about."""
    A = np.exp(np.cumsum(log_a, axis=0))
    return A * np.cumsum(np.exp(log_b) / A, axis=0)


def _split_exp(log_a, log_b):
    a_star = np.cumsum(log_a, axis=0)
    return np.exp(a_star) * np.exp(np.logaddexp.accumulate(log_b - a_star, axis=0))


def test_long_cases_sink_below_the_exp_range():
    for kind, T, seed in checks.LONG_LOG_CASES:
        la, _ = checks.long_log_case(kind, T, seed)
        assert np.cumsum(la, axis=0)[-1].max() < -745          # exp(a*) is 0 in float64 for every unit


@pytest.mark.parametrize("wrong", [_linear_space, _split_exp])
def test_a_linear_space_form_is_rejected_naming_underflow(wrong):
    """Issue 39, item 6 (P4): 11.4's cases stopped at T = 200, where nothing underflows."""
    with np.errstate(all="ignore"):
        la, lb = checks.long_log_case("mingru", 64, 0)
        assert np.allclose(wrong(la, lb), _good_log_scan(la, lb), rtol=1e-10)   # right where nothing underflows
    with pytest.raises(ExerciseFailed, match=r"(?s)11\.4 failed on a long sequence \(minlstm, T=2000.*NaN or inf.*"
                                             r"exp\(a\*\) underflows.*exponentiate once"):
        checks.check_log_space_scan(wrong)


def test_a_wrong_long_answer_without_underflow_gets_no_underflow_story():
    def off_late(log_a, log_b):
        h = _good_log_scan(log_a, log_b)
        if len(h) > 1000:
            h[10] *= 1.01                                      # wrong early, where a* is small
        return h

    with pytest.raises(ExerciseFailed, match=r"long sequence \(minlstm") as err:
        checks.check_log_space_scan(off_late)
    assert "underflow" not in str(err.value) and "time step 10" in str(err.value)


def test_115_statement_names_the_baseline_and_bar_the_grader_uses(monkeypatch):
    """Issue 39, item 3: a worksheet statement names the baseline and bar its grader times against."""
    import re
    from pathlib import Path

    seen = {}

    class Stop(Exception):
        pass

    def spy(ex, student, reference, baseline, make_input, **kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(checks, "judge_speed", spy)
    with pytest.raises(Stop):
        checks.check_quasi_step(_quasi)
    assert seen["min_speedup"] == checks.MIN_SPEEDUP and seen["baseline_desc"] == "one full Newton step (DEER)"
    assert re.search(r"nh=48\b", seen["label"])
    root = Path(__file__).resolve().parents[3]
    for sheet in ("solutions/11_newton.py", "exercises/11_newton.py"):
        text = root.joinpath(sheet).read_text()
        text = text[text.index("## Exercise 11.5 "):text.index("## Exercise 11.6 ")]
        assert "one full Newton\n# step at `nh = 48`" in text or "one full Newton step at `nh = 48`" in text
        assert "newton_checks.MIN_SPEEDUP" in text
