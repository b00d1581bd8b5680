"""Checks for worksheet 10 (MGRIT): F-relaxation, C-relaxation, a two-level cycle, the implicit GRU step.

Failures say which iteration and which time point first differs from the reference."""
from __future__ import annotations

import numpy as np

from ...models import gru
from ...algorithms import mgrit
from .core import Case, ExerciseFailed, check_function, compare_outputs, passed

__all__ = ["check_f_relax", "check_c_relax", "check_two_level_cycle", "check_implicit_gru_step",
           "test_problems"]


def _vector_step(seed: int, n: int = 3):
    """A small nonlinear step (a GRU-like contraction) that knows its level: dt = 0.5 * m**level."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n)) * 0.6 / np.sqrt(n)
    b = rng.standard_normal(n) * 0.3

    def make(m):
        def step(u, i, level):
            g = 0.5 * m**level
            return (u + g * np.tanh(u @ A + b + 0.01 * i)) / (1.0 + g)
        return step
    return make


def test_problems(seed: int = 0) -> list[dict]:
    """Seeded problems for the worksheet: ``{"label", "step", "u0", "nt", "m"}`` (Dahlquist and a
    nonlinear vector step)."""
    rng = np.random.default_rng(seed)
    probs = []
    for k, (nt, m, lam) in enumerate([(16, 4, -1.0), (24, 3, -0.2), (32, 4, -3.0)]):
        probs.append({"label": f"Dahlquist lam*dt={lam}, nt={nt}, m={m}", "step": mgrit.dahlquist_step(lam, 1.0, m),
                      "u0": np.array([1.0]), "nt": nt, "m": m})
    for k, (nt, m) in enumerate([(16, 2), (32, 4)]):
        probs.append({"label": f"nonlinear 3-vector, nt={nt}, m={m}", "step": _vector_step(seed + k)(m),
                      "u0": rng.standard_normal(3), "nt": nt, "m": m})
    return probs


def _relax_cases(seed=0):
    rng = np.random.default_rng(seed + 7)
    cases = []
    for p in test_problems(seed):
        U = p["u0"] + 0.3 * rng.standard_normal((p["nt"] + 1,) + p["u0"].shape)  # an arbitrary iterate
        cases.append(Case({"step": p["step"], "U": U, "m": p["m"]}, label=p["label"]))
    return cases


def check_f_relax(student) -> str:
    """Exercise 10.1: ``f_relax(step, U, m) -> U_new`` recomputes every F-point from its C-point."""
    return check_function(
        "10.1", student, lambda step, U, m: mgrit.f_relaxation(step, U, m), _relax_cases(), rtol=1e-10, atol=1e-12,
        time_name="time point",
        hint="inside interval j, march U[j*m+k] = step(U[j*m+k-1], j*m+k-1, 0) for k = 1..m-1; leave C-points "
             "(multiples of m) alone; return a new array (or the updated copy).")


def check_c_relax(student) -> str:
    """Exercise 10.2: ``c_relax(step, U, m) -> U_new`` recomputes every C-point j*m (j >= 1)."""
    return check_function(
        "10.2", student, lambda step, U, m: mgrit.c_relaxation(step, U, m), _relax_cases(), rtol=1e-10, atol=1e-12,
        time_name="time point",
        hint="U[j*m] = step(U[j*m-1], j*m-1, 0) for j = 1..N/m; U[0] and every F-point stay as they were.")


def check_two_level_cycle(student, n_iter: int = 4) -> str:
    """Exercise 10.3: ``two_level_cycle(step, coarse_step, U, m) -> U_new`` (one iteration).

    Runs your cycle ``n_iter`` times from the initial guess u0-everywhere on each test problem and
    compares every iterate with the reference; a failure names the iteration and the time point."""
    probs = test_problems(1)
    for case_no, p in enumerate(probs, start=1):
        nt, m = p["nt"], p["m"]
        U_ref = np.broadcast_to(p["u0"], (nt + 1,) + p["u0"].shape).astype(np.float64).copy()
        U_you = U_ref.copy()
        for it in range(1, n_iter + 1):
            U_ref = mgrit.two_level_iteration(p["step"], p["step"], U_ref, m)
            try:
                got = student(p["step"], p["step"], U_you.copy(), m)
            except NotImplementedError:
                raise
            except Exception as exc:
                raise ExerciseFailed(f"Exercise 10.3 failed on case {case_no}/{len(probs)} ({p['label']}), "
                                     f"iteration {it}:\n  your function raised {type(exc).__name__}: {exc}") from exc
            msg = compare_outputs(got, U_ref, name="U", rtol=1e-9, atol=1e-12, time_axis=0, time_name="time point")
            if msg:
                first = ""
                g = np.asarray(got, dtype=float)
                if g.shape == U_ref.shape:
                    bad = ~np.isclose(g, U_ref, rtol=1e-9, atol=1e-12).reshape(nt + 1, -1).all(axis=1)
                    p0 = int(np.argmax(bad))
                    kind = "a C-point" if p0 % m == 0 else "an F-point"
                    first = f"\n  your solver first diverges from the reference at iteration {it}, time point {p0} ({kind})"
                raise ExerciseFailed(
                    f"Exercise 10.3 failed on case {case_no}/{len(probs)} ({p['label']}):{first}\n  {msg}\n"
                    "  Hint: F-relax; r_j = -(U[jm] - step(U[jm-1])); uc = U[::m]; gc_j = uc_j - coarse(uc_{j-1}, j-1, 1) "
                    "+ r_j (gc_0 = uc_0); march vc_j = coarse(vc_{j-1}, j-1, 1) + gc_j; U[::m] = vc; F-relax again.")
            U_you = np.asarray(got, dtype=np.float64)
    # the property that makes it Parareal: exact after nt/m iterations
    p = probs[0]
    U = np.broadcast_to(p["u0"], (p["nt"] + 1,) + p["u0"].shape).astype(np.float64).copy()
    for _ in range(p["nt"] // p["m"]):
        U = np.asarray(student(p["step"], p["step"], U, p["m"]), dtype=np.float64)
    exact = mgrit.serial_solve(p["step"], p["u0"], p["nt"])
    if not np.allclose(U, exact, rtol=1e-10, atol=1e-13):
        raise ExerciseFailed("Exercise 10.3 failed: after nt/m iterations your two-level cycle is not exact "
                             "(Parareal must reproduce the serial solution by then)")
    return passed("10.3", len(probs), len(probs))


def _gru_cases(rng, i):
    nx, nh, B = [(3, 4, 2), (5, 8, 3), (2, 6, 1), (4, 4, 5), (3, 7, 2)][i]
    gamma = [1.0, 4.0, 16.0, 64.0, 0.25][i]
    params = gru.init_params(nx, nh, seed=int(rng.integers(1000)), dtype=np.float64)
    return Case({"params": params, "x": rng.standard_normal((B, nx)), "h": rng.standard_normal((B, nh)),
                 "gamma": gamma}, label=f"B={B}, nx={nx}, H={nh}, gamma={gamma}")


def _implicit_ref(params, x, h, gamma):
    gi = x @ params.W_ih.T + params.b_ih
    return gru.gru_cell(params, gi, h, implicit=True, gamma=gamma)


def check_implicit_gru_step(student) -> str:
    """Exercise 10.4: ``implicit_gru_step(params, x, h, gamma) -> h_new`` (B, H); ``params`` is a
    :class:`course_lib.models.gru.GRUParams`."""
    return check_function(
        "10.4", student, _implicit_ref, _gru_cases, n_cases=5, rtol=1e-9, atol=1e-12, time_axis=None,
        hint="gates at the old h (params.W_ih, params.W_hh, ...; PyTorch order r, z, n; n uses r * (W_hn h + b_hn)); "
             "h_new = (h + gamma (1 - z) n) / (1 + gamma (1 - z)).")
