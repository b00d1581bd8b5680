"""Checks for worksheet 11 (Newton in time): the (A, b) combine, one Newton step as a scan, the GRU
Jacobian, the log-space minGRU scan, and (11.5, a speed exercise) quasi-DEER as one element-wise scan.
Failures name the iteration, the time step, the gate and the entry.

Exercise 11.5 checks, in this order: the numbers (three iterations on two problems, against
``newton.newton_step(method="quasi")``); the memory the step needs, counted with ``tracemalloc`` in
bytes per state element ``T*B*nh`` (deterministic: a diagonal step needs a few float64 arrays of the
state's size, full ``(nh, nh)`` Jacobians need ``8 nh`` bytes per element); and the speed against one full
Newton (DEER) step measured in the same run at ``nh = 48`` by :func:`.speed.judge_speed` (a fresh input for
every timed call, every timed result compared with the reference quasi step): at least :data:`MIN_SPEEDUP`
times faster, BLAS on one thread for both. Every grader here rejects a solution that calls the course's
own answer (``newton.newton_step`` for 11.2 and 11.5; :mod:`.shortcuts`) and names a changed input.
"""
from __future__ import annotations

import tracemalloc

import numpy as np

from ...algorithms import matrix_scan, newton
from ...models import gru, jacobians, mingru
from .shortcuts import check_no_shortcut
from .core import ExerciseFailed, check_function, compare_outputs, passed
from .speed import judge_speed

__all__ = ["check_combine", "check_newton_step", "check_gru_jacobian", "check_log_space_scan", "check_quasi_step",
           "toy_system", "toy_diagonal", "MIN_SPEEDUP", "MAX_BYTES_PER_ELEMENT", "LONG_LOG_CASES", "long_log_case"]

MIN_SPEEDUP = 1.5               # 11.5: quasi step vs one full Newton step, nh = 48, same run
MAX_BYTES_PER_ELEMENT = 160     # 11.5: peak memory of one quasi step / (T*B*nh); 20 float64 arrays of the state


def _call(exercise, fn, *args):
    try:
        return fn(*args)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise ExerciseFailed(f"Exercise {exercise}: your function raised {type(exc).__name__}: {exc}") from exc


def _inputs_kept(exercise, where, given, originals, names=("h0", "X", "H")) -> None:
    """Fail, naming the array, when the student's function changed one of its array arguments in place."""
    for name, a, b in zip(names, given, originals):
        if not np.array_equal(a, b):
            raise ExerciseFailed(f"Exercise {exercise} failed on {where}:\n  your function changed its input {name} "
                                 "in place; compute into new arrays and leave the inputs as they were")


def _as_float_array(exercise, got, what):
    try:
        arr = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        raise ExerciseFailed(f"Exercise {exercise} failed: expected {what} as a numeric array, got "
                             f"{type(got).__name__}") from None
    return arr


# --------------------------------------------------------------------------- 11.1
def _combine_cases(rng, i):
    H = (2, 3, 4, 1, 5)[i % 5]
    batch = ((), (2,), (3,), (), (2,))[i % 5]
    A1, A2 = (rng.standard_normal(batch + (H, H)) for _ in range(2))
    b1, b2 = (rng.standard_normal(batch + (H,)) for _ in range(2))
    return dict(p=(A1, b1), q=(A2, b2))


def check_combine(combine) -> str:
    """Exercise 11.1: ``combine(p, q)`` for ``p = (A1, b1)`` then ``q = (A2, b2)`` -> ``(A2 A1, A2 b1 + b2)``
    (``A`` may have leading batch axes)."""
    line = check_function("11.1", combine, matrix_scan.combine, _combine_cases, n_cases=5, rtol=1e-10, atol=1e-12,
                          output_names=["A", "b"], time_axis=None, inputs_unchanged=True, quiet=True,
                          hint="apply p first: h -> A1 h + b1, then q: A2 (A1 h + b1) + b2. Matrix products "
                               "do not commute -- the order is A2 @ A1; use A2 @ b1[..., None] for batched vectors.")
    check_no_shortcut("11.1", combine, {"matrix_scan.combine": matrix_scan.combine},
                      **_combine_cases(np.random.default_rng(3), 0))
    print(line)
    return line


# --------------------------------------------------------------------------- 11.2
def toy_system(nh: int = 3, scale: float = 1.2, seed: int = 0):
    """``(f, jac)`` of ``h_t = tanh(h_{t-1} W^T + x_t)`` (column-convention Jacobian)."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((nh, nh)) * scale / np.sqrt(nh)

    def f(Hp, X):
        return np.tanh(Hp @ W.T + X)

    def jac(Hp, X):
        return (1 - f(Hp, X) ** 2)[..., :, None] * W

    return f, jac


def check_newton_step(newton_step, n_iter: int = 4) -> str:
    """Exercise 11.2: ``newton_step(f, jac, h0, X, H) -> H_new``: one DEER iteration
    (``delta_t = J_t delta_{t-1} - r_t``). Your step is iterated ``n_iter`` times from zero on three
    problems; a failure names the iteration and the first wrong time step."""
    problems = [(toy_system(3, 1.2, 0), 12, 2, 3), (toy_system(2, 0.6, 1), 9, 1, 2), (toy_system(4, 2.0, 2), 16, 3, 4)]
    for case, ((f, jac), T, B, H_dim) in enumerate(problems, start=1):
        rng = np.random.default_rng(case)
        X = rng.standard_normal((T, B, H_dim))
        h0 = 0.5 * rng.standard_normal((B, H_dim))
        H_ref = np.zeros((T, B, H_dim))
        H_you = H_ref.copy()
        for it in range(1, n_iter + 1):
            H_ref = newton.newton_step(f, jac, h0, X, H_ref)[0]
            args = (h0.copy(), X.copy(), H_you.copy())
            got = _call("11.2", newton_step, f, jac, *args)
            _inputs_kept("11.2", f"problem {case}/3, iteration {it}", args, (h0, X, H_you))
            got = _as_float_array("11.2", got, "the new guess H (T, B, nh)")
            if got.shape != H_ref.shape:
                raise ExerciseFailed(f"Exercise 11.2 failed on problem {case}/3, iteration {it}: expected shape "
                                     f"{H_ref.shape} (T, B, nh), got {got.shape}")
            bad = ~np.isclose(got, H_ref, rtol=1e-9, atol=1e-11)
            if bad.any():
                t, b, i = np.argwhere(bad)[0]
                hint = ("the first state is already wrong: r_1 = h_1 - f(h0, x_1) uses h0, and delta_0 = 0"
                        if t == 0 else
                        "steps before t are right: check the recurrence delta_t = J_t delta_{t-1} - r_t "
                        "(the minus sign, and J_t evaluated at h_{t-1})")
                raise ExerciseFailed(
                    f"Exercise 11.2 failed on problem {case}/3 (T={T}, B={B}, nh={H_dim}), iteration {it}: "
                    f"first wrong at time step {t} (batch {b}, unit {i}): got {got[t, b, i]:.6g}, expected "
                    f"{H_ref[t, b, i]:.6g}; {int(bad.sum())} of {bad.size} entries differ.\n  Hint: {hint}")
            H_you = got
    (f, jac), T, B, H_dim = problems[0]
    check_no_shortcut("11.2", newton_step, _NEWTON_ANSWERS, f, jac, np.zeros((B, H_dim)), np.ones((T, B, H_dim)),
                      np.zeros((T, B, H_dim)))
    return passed("11.2", 3, 3)


# --------------------------------------------------------------------------- 11.3
_GATES = {"r": "the reset gate r (only W_hh's r rows are nonzero)",
          "z": "the update gate z (only W_hh's z rows are nonzero)",
          "n": "the candidate n (only W_hh's n rows are nonzero)",
          "all": "the full GRU (all of W_hh)"}


def _gate_params(which: str, seed: int):
    p0 = gru.init_params(3, 4, seed=seed, dtype=np.float64)
    p = p0.copy()
    p.W_hh *= 3.0
    if which != "all":
        k = {"r": 0, "z": 1, "n": 2}[which]
        W = np.zeros_like(p.W_hh)
        W[k * 4:(k + 1) * 4] = p.W_hh[k * 4:(k + 1) * 4]
        p.W_hh = W
    return p


def check_gru_jacobian(gru_jacobian) -> str:
    """Exercise 11.3: ``gru_jacobian(params, h, gi) -> J`` (B, nh, nh), ``J[b, i, j] = d h'_i / d h_j`` of the
    classic GRU cell ``h' = z h + (1 - z) n`` (models.gru). Checked against central finite differences
    with one gate at a time depending on ``h``; a failure names the gate and the entry."""
    n_ok = 0
    for case, which in enumerate(("z", "n", "r", "all"), start=1):
        p = _gate_params(which, case)
        rng = np.random.default_rng(10 + case)
        h = 0.8 * rng.standard_normal((2, 4))
        gi = rng.standard_normal((2, 12))
        fd = jacobians.finite_difference_jacobian(lambda hh: jacobians.gru_step(p, hh, gi), h)
        args = (p.copy(), h.copy(), gi.copy())
        got = _as_float_array("11.3", _call("11.3", gru_jacobian, *args), "J (B, nh, nh)")
        _inputs_kept("11.3", f"{_GATES[which]}", args[1:], (h, gi), ("h", "gi"))
        if any(not np.array_equal(a, b) for a, b in zip(args[0].arrays(), p.arrays())):
            raise ExerciseFailed(f"Exercise 11.3 failed with {_GATES[which]}:\n  your function changed its input "
                                 f"params in place; leave the parameters as they were")
        if got.shape != fd.shape:
            raise ExerciseFailed(f"Exercise 11.3 failed with {_GATES[which]}: expected shape {fd.shape} (B, nh, nh), "
                                 f"got {got.shape}")
        bad = ~np.isclose(got, fd, rtol=1e-5, atol=1e-6)
        if bad.any():
            b, i, j = np.argwhere(bad)[0]
            transposed = np.allclose(np.swapaxes(got, -1, -2), fd, rtol=1e-5, atol=1e-6)
            hint = ("your J is transposed: J[b, i, j] is d h'_i / d h_j (row i = output unit)" if transposed else
                    {"z": "d z_i/d h_j = z_i (1 - z_i) W_z[i, j]; h' depends on z through (h_i - n_i) dz",
                     "n": "d n_i/d h_j = (1 - n_i^2) r_i W_n[i, j]; h' depends on n through (1 - z_i) dn",
                     "r": "n = tanh(gi_n + r * gh_n): d n_i/d h_j gets (1 - n_i^2) gh_n[i] dr_i/dh_j",
                     "all": "the diagonal term z_i (from z * h) plus the three gate paths"}[which])
            raise ExerciseFailed(
                f"Exercise 11.3 failed with {_GATES[which]}: gate {which!r}, first wrong entry "
                f"J[b={b}, i={i}, j={j}] = {got[b, i, j]:.6g}, finite differences give {fd[b, i, j]:.6g}; "
                f"{int(bad.sum())} of {bad.size} entries differ.\n  Hint: {hint}")
        n_ok += 1
    check_no_shortcut("11.3", gru_jacobian, {"jacobians.gru_jacobian": jacobians.gru_jacobian},
                      _gate_params("all", 4), 0.8 * np.ones((2, 4)), np.ones((2, 12)))
    return passed("11.3", n_ok, 4)


# --------------------------------------------------------------------------- 11.4
#: 11.4's long cases: (kind, T, seed) on which a*_T = cumsum(log a) sinks far below float64's exp range
#: (about -745): a linear-space form exp(a*) * cumsum(b / exp(a*)) gives NaN/inf or lost digits there
LONG_LOG_CASES = (("minlstm", 2000, 21), ("mingru", 6000, 22))
EXP_UNDERFLOW = -700.0          # exp(x) of float64 loses digits (subnormal) near -708 and is 0 below -745


def _recurrence_loop(log_a, log_b):
    """``h (T, B, nh)`` of ``h_t = a_t h_{t-1} + b_t`` (h_{-1} = 0), a float64 loop over t: 11.4's reference."""
    a, b = np.exp(log_a), np.exp(log_b)
    out, h = np.empty_like(a), np.zeros(a.shape[1:])
    for t in range(a.shape[0]):
        h = a[t] * h + b[t]
        out[t] = h
    return out


def _log_cases(rng, i):
    T = (5, 20, 64, 200)[i % 4]
    p = mingru.init_params(("mingru", "minlstm")[i % 2], 3, 4, seed=i)
    X = rng.standard_normal((T, 2, 3))
    la, lb = mingru.log_coefficients(("mingru", "minlstm")[i % 2], p, X)
    return dict(log_a=la, log_b=lb)


def long_log_case(kind: str, T: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(log_a, log_b)`` (T, 2, 4) of a minGRU/minLSTM on standard normal inputs (float64)."""
    p = mingru.init_params(kind, 3, 4, seed=seed)
    X = np.random.default_rng(seed).standard_normal((T, 2, 3))
    return mingru.log_coefficients(kind, p, X)


def _long_log_scans(log_space_scan) -> None:
    """Fail, naming the underflow of exp(a*), when ``log_space_scan`` is wrong on :data:`LONG_LOG_CASES`."""
    for kind, T, seed in LONG_LOG_CASES:
        la, lb = long_log_case(kind, T, seed)
        with np.errstate(all="ignore"):             # a linear-space form warns here; the message says why
            got = _as_float_array("11.4", _call("11.4", log_space_scan, la.copy(), lb.copy()), "h (T, B, nh)")
        want = _recurrence_loop(la, lb)
        msg = compare_outputs(got, want, name="h", rtol=1e-8, atol=1e-12)
        if not msg:
            continue
        where = f"a long sequence ({kind}, T={T}, B=2, H=4)"
        a_star = np.cumsum(la, axis=0).min(axis=(1, 2))
        bad = ~np.isfinite(got) | ~np.isclose(got, want, rtol=1e-8, atol=1e-12) if got.shape == want.shape else None
        t = int(np.argmax(bad.reshape(T, -1).any(axis=1))) if bad is not None else T - 1
        if a_star[t] < EXP_UNDERFLOW:
            raise ExerciseFailed(
                f"Exercise 11.4 failed on {where}:\n  {msg}\n  there a*_t = cumsum(log a) has reached "
                f"{a_star[t]:.0f}: exp(a*) underflows (float64's exp is subnormal below about -708 and 0 below "
                "-745, and 1/exp(a*) overflows) -- a linear-space form such as exp(a*) * cumsum(b / exp(a*)), "
                "or exp(a*) * exp(logcumsumexp(...)), breaks once the gates have decayed that far.\n  Hint: add "
                "in log space first and exponentiate once: h_t = exp(a*_t + logcumsumexp(log_b - a*)_t) -- the "
                "exponent then stays near log h_t.")
        raise ExerciseFailed(f"Exercise 11.4 failed on {where}:\n  {msg}")


def check_log_space_scan(log_space_scan) -> str:
    """Exercise 11.4: ``log_space_scan(log_a, log_b) -> h`` (T, B, nh): ``h_t = a_t h_{t-1} + b_t`` (h_0 = 0) from
    the logs of positive coefficients, by two prefix sums (cumsum, logcumsumexp).

    Checks the numbers against a float64 loop on minGRU/minLSTM coefficients (T = 5 ... 200, inputs
    unchanged), then the numerics the exercise teaches: on :data:`LONG_LOG_CASES` (T = 2000 and 6000)
    ``a*_T = cumsum(log a)`` sinks to about -900, where ``exp(a*)`` underflows -- a linear-space form
    gives NaN/inf or lost digits and is rejected with a message naming the underflow. Calling the
    course's ``mingru.log_space_scan`` is rejected."""
    line = check_function("11.4", log_space_scan, _recurrence_loop, _log_cases, n_cases=4, rtol=1e-8, atol=1e-12,
                          inputs_unchanged=True, quiet=True,
                          hint="a*_t = cumsum(log_a); h_t = exp(a*_t + logcumsumexp(log_b - a*)) with "
                               "np.logaddexp.accumulate along axis 0 (time). Do not exponentiate a* alone: it underflows.")
    _long_log_scans(log_space_scan)
    check_no_shortcut("11.4", log_space_scan, {"mingru.log_space_scan": mingru.log_space_scan},
                      **_log_cases(np.random.default_rng(3), 0))
    print(line)
    return line


# --------------------------------------------------------------------------- 11.5
def toy_diagonal(nh: int = 3, scale: float = 1.2, seed: int = 0):
    """``(f, jac, jac_diag)`` of :func:`toy_system`; ``jac_diag(H_prev, X) -> (T, B, nh)`` is the diagonal of
    the Jacobian in O(T B nh) work: ``(1 - f^2) * diag(W)``."""
    f, jac = toy_system(nh, scale, seed)
    w = np.diagonal(jac(np.zeros((1, nh)), np.zeros((1, nh)))[0]).copy()  # tanh'(0) = 1: diag(W)

    def jac_diag(Hp, X):
        return (1 - f(Hp, X) ** 2) * w

    return f, jac, jac_diag


#: the course's own Newton steps: a solution to 11.2 or 11.5 that calls one of them is a shortcut
_NEWTON_ANSWERS = {"newton.newton_step": newton.newton_step, "newton.solve": newton.solve}


def _peak_bytes(fn, *args) -> int:
    was = tracemalloc.is_tracing()
    if not was:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        if not was:
            tracemalloc.stop()


def check_quasi_step(quasi_step, n_iter: int = 3, *, min_speedup: float = MIN_SPEEDUP, retries: int = 2) -> str:
    """Exercise 11.5: ``quasi_step(f, jac_diag, h0, X, H) -> H_new``: one quasi-DEER iteration, the Newton scan
    with only the Jacobians' diagonals, ``delta_t = d_t * delta_{t-1} - r_t`` element-wise (O(T B nh) work
    and memory). See the module doc for what is measured."""
    ex = "11.5"
    if not callable(quasi_step):
        raise ExerciseFailed(f"Exercise {ex}: expected a function, got {type(quasi_step).__name__}")
    for case, (H_dim, scale, T, B) in enumerate([(3, 1.2, 12, 2), (5, 0.8, 20, 3)], start=1):
        f, jac, jd = toy_diagonal(H_dim, scale, case)
        rng = np.random.default_rng(50 + case)
        X = rng.standard_normal((T, B, H_dim))
        h0 = 0.5 * rng.standard_normal((B, H_dim))
        H_ref = np.zeros((T, B, H_dim))
        H_you = H_ref.copy()
        for it in range(1, n_iter + 1):
            H_ref = newton.newton_step(f, jac, h0, X, H_ref, method="quasi", jac_diag=jd)[0]
            args = (h0.copy(), X.copy(), H_you.copy())
            raw = _call(ex, quasi_step, f, jd, *args)
            if raw is None:
                raise ExerciseFailed(f"Exercise {ex} failed on problem {case}/2: your function returned None; "
                                     f"return the new guess H + delta")
            got = _as_float_array(ex, raw, "the new guess H (T, B, nh)")
            for name, a, b in zip(("h0", "X", "H"), args, (h0, X, H_you)):
                if not np.array_equal(a, b):
                    raise ExerciseFailed(f"Exercise {ex} failed on problem {case}/2: your function changed its "
                                         f"input {name} in place; return a new array")
            if got.shape != H_ref.shape:
                raise ExerciseFailed(f"Exercise {ex} failed on problem {case}/2, iteration {it}: expected shape "
                                     f"{H_ref.shape} (T, B, nh), got {got.shape}")
            bad = ~np.isclose(got, H_ref, rtol=1e-9, atol=1e-11)
            if bad.any():
                t, b, i = np.argwhere(bad)[0]
                hint = ("the first state is already wrong: r_1 = h_1 - f(h0, x_1) uses h0, and delta_0 = 0" if t == 0
                        else "steps before t are right: check delta_t = d_t * delta_{t-1} - r_t, with d_t = "
                             "jac_diag(H_prev, X)[t] evaluated at h_{t-1} (the state the step starts from)")
                if np.allclose(got, f(newton.shift(h0, H_you), X), rtol=1e-9, atol=1e-11):
                    hint = ("your step returns f(H_prev, X): a fixed-point (Picard) step that ignores the Jacobian's "
                            "diagonal; quasi-DEER carries the correction: delta_t = d_t * delta_{t-1} - r_t")
                raise ExerciseFailed(
                    f"Exercise {ex} failed on problem {case}/2 (T={T}, B={B}, nh={H_dim}), iteration {it}: first "
                    f"wrong at time step {t} (batch {b}, unit {i}): got {got[t, b, i]:.6g}, expected "
                    f"{H_ref[t, b, i]:.6g}; {int(bad.sum())} of {bad.size} entries differ.\n  Hint: {hint}")
            H_you = got
    f, jac, jd = toy_diagonal(3, 1.2, 1)
    check_no_shortcut(ex, quasi_step, _NEWTON_ANSWERS, f, jd, np.zeros((2, 3)), np.ones((12, 2, 3)), np.zeros((12, 2, 3)))
    # the memory the step needs, in bytes per state element: a deterministic count
    T, B, Hm = 64, 2, 64
    f, jac, jd = toy_diagonal(Hm, 1.0, 7)
    rng = np.random.default_rng(7)
    X, h0, Hg = rng.standard_normal((T, B, Hm)), rng.standard_normal((B, Hm)), 0.1 * rng.standard_normal((T, B, Hm))
    _call(ex, quasi_step, f, jd, h0, X, Hg)  # compile / warm caches first
    per_elem = _peak_bytes(quasi_step, f, jd, h0, X, Hg) / (T * B * Hm)
    if per_elem > MAX_BYTES_PER_ELEMENT:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your step needed {per_elem:.0f} bytes of memory per state element at nh={Hm} "
            f"(T={T}, B={B}); at most {MAX_BYTES_PER_ELEMENT} are needed (a few float64 arrays of the state's "
            f"shape), while full (nh, nh) Jacobians take 8 nh = {8 * Hm} per element: you built matrices.\n  Hint: keep "
            f"d = jac_diag(H_prev, X) as (T, B, nh) and scan element-wise, e.g. scan.linear_recurrence(d, -r) "
            f"(course_lib.algorithms.scan), never np.eye(H) * d or matrix_scan.")
    # the speed: one full Newton step at nh = 48, measured alongside; a fresh X, h0 and guess for every timed
    # call, and every timed result compared with the reference quasi step
    T, B, Hs = 256, 4, 48
    f, jac, jd = toy_diagonal(Hs, 1.0, 8)

    def make_input(rng):
        return {"h0": rng.standard_normal((B, Hs)), "X": rng.standard_normal((T, B, Hs)),
                "H": 0.1 * rng.standard_normal((T, B, Hs))}

    judged = judge_speed(ex, lambda h0, X, H: quasi_step(f, jd, h0, X, H),
                         lambda h0, X, H: newton.newton_step(f, jac, h0, X, H, method="quasi", jac_diag=jd)[0],
                         lambda h0, X, H: newton.newton_step(f, jac, h0, X, H), make_input,
                         min_speedup=min_speedup, baseline_name="full_newton",
                         baseline_desc="one full Newton step (DEER)", rtol=1e-9, atol=1e-11, retries=retries,
                         blas_threads=1, seed=8, label=f"T={T}, B={B}, nh={Hs}",
                         context="your numbers are right and your memory is O(T B nh)",
                         hint="no Python loop over batch or units: the scan over time works on whole (B, nh) "
                              "slices, or use scan.linear_recurrence(d, -r).")
    line = passed(ex, 2, 2)
    print(f"  speed: {judged.earned}")
    return line
