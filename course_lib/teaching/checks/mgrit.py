"""Checks for worksheet 10 (MGRIT): F-relaxation, C-relaxation, a two-level cycle, the implicit GRU step,
and F-relaxation on threads.

Failures say which iteration and which time point first differs from the reference.

Exercise 10.5 is a speed exercise. After the numbers (inputs unchanged, threads = 1, 2, 3), the check runs
your function with a ``step`` that sleeps :data:`SLEEP_S` per call (releasing the GIL, as a real step's
numpy/BLAS work does) and counts, deterministically enough to grade: the distinct threads that called it
and the largest number of calls in flight at once (at least 2 with ``threads=2``, never more than
``threads``). The output of EVERY sleeping run is compared (:data:`SLEEPY_RUNS`: 2, 3 and 4 threads, steps
whose sleep varies from point to point), so tasks that read a point before another task wrote it (one task
per F-point) are named as a race. The speed is then a ratio to the serial ``mgrit.f_relaxation`` with the
same sleeping step, measured alongside by :func:`.speed.judge_speed` (a fresh ``U`` per timed call, every
timed result compared): sleeping is not computing, so a busy machine does not change it. Every grader
here rejects a solution that calls the course's own answer (:mod:`.shortcuts`).
"""
from __future__ import annotations

import threading
import time

import numpy as np

from ...models import gru, jacobians
from ...algorithms import mgrit
from .shortcuts import check_no_shortcut
from .core import Case, ExerciseFailed, check_function, compare_outputs, passed
from .speed import judge_speed

__all__ = ["check_f_relax", "check_c_relax", "check_two_level_cycle", "check_implicit_gru_step",
           "check_f_relax_threads", "SleepyStep", "test_problems", "MIN_THREAD_SPEEDUP", "SLEEP_S"]

MIN_THREAD_SPEEDUP = 1.5   # 10.5: threads=2 vs the serial F-relaxation, sleeping step, same run
SLEEP_S = 0.002


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
    for nt, m, lam in [(16, 4, -1.0), (24, 3, -0.2), (32, 4, -3.0)]:
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


def _step_calls(ex: str, student, what: str, per_interval) -> None:
    """The work of a relaxation, counted: ``step`` is wrapped in a counter and the student's function run with
    nt = 24 at m = 3 and m = 4; every run must call it ``(nt / m) * per_interval(m)`` times. A relaxation that
    re-marches each F-point from its C-point (the same numbers, m²/2 calls per interval) is named."""
    nt = 24
    for m in (3, 4):
        calls = [0]
        base = mgrit.dahlquist_step(-0.5, 1.0, m)

        def step(u, i, level, _base=base):
            calls[0] += 1
            return _base(u, i, level)

        U = np.linspace(1.0, 0.2, nt + 1)[:, None]
        try:
            student(step, U, m)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise ExerciseFailed(f"Exercise {ex} failed while counting its calls of step (nt={nt}, m={m}):\n  your "
                                 f"function raised {type(exc).__name__}: {exc}") from exc
        want = nt // m * per_interval(m)
        if calls[0] != want:
            raise ExerciseFailed(
                f"Exercise {ex} failed (nt={nt}, m={m}):\n  your numbers are right, but your function called step "
                f"{calls[0]} times; {what} calls it {want} times ({per_interval(m)} per C-interval)"
                + (": each point is stepped from the one before it, once -- not re-marched from the C-point"
                   if calls[0] > want else "") + ".")


def check_f_relax(student) -> str:
    """Exercise 10.1: ``f_relax(step, U, m) -> U_new`` recomputes every F-point from its C-point.

    Property: one step per F-point, intervals independent. The numbers from an arbitrary iterate (C-points left
    alone, five problems, m = 2 to 4), the input unchanged, then the calls of ``step`` counted at two values of
    m (:func:`_step_calls`): m - 1 per interval."""
    line = check_function(
        "10.1", student, lambda step, U, m: mgrit.f_relaxation(step, U, m), _relax_cases(), rtol=1e-10, atol=1e-12,
        time_name="time point", inputs_unchanged=True, quiet=True,
        hint="inside interval j, march U[j*m+k] = step(U[j*m+k-1], j*m+k-1, 0) for k = 1..m-1; leave C-points "
             "(multiples of m) alone; return a new array (or the updated copy).")
    _step_calls("10.1", student, "F-relaxation", lambda m: m - 1)
    return _no_shortcut_then_pass("10.1", student, {"mgrit.f_relaxation": mgrit.f_relaxation}, line)


def check_c_relax(student) -> str:
    """Exercise 10.2: ``c_relax(step, U, m) -> U_new`` recomputes every C-point j*m (j >= 1).

    Property: one step per C-point from the F-point before it. The numbers (F-points and U[0] untouched), the
    input unchanged, then the calls of ``step`` counted at two values of m: one per interval."""
    line = check_function(
        "10.2", student, lambda step, U, m: mgrit.c_relaxation(step, U, m), _relax_cases(), rtol=1e-10, atol=1e-12,
        time_name="time point", inputs_unchanged=True, quiet=True,
        hint="U[j*m] = step(U[j*m-1], j*m-1, 0) for j = 1..N/m; U[0] and every F-point stay as they were.")
    _step_calls("10.2", student, "C-relaxation", lambda m: 1)
    return _no_shortcut_then_pass("10.2", student, {"mgrit.c_relaxation": mgrit.c_relaxation}, line)


def _no_shortcut_then_pass(ex: str, student, forbidden: dict, line: str, case=None) -> str:
    """Reject a call of the course's own answer (on the first relaxation case, or ``case``), then print ``line``."""
    case = case if case is not None else _relax_cases()[0].kwargs
    check_no_shortcut(ex, student, forbidden, **case)
    print(line)
    return line


class _Propagator:
    """``step`` pinned to one level, recording the ``level`` argument of every call: the fine and the
    coarse propagator of 10.3 are *different* functions, so swapping them changes the numbers and the
    log says which was called where."""

    def __init__(self, step, level: int, name: str):
        self.step, self.level, self.name = step, level, name
        self.levels: list = []

    def __call__(self, u, i, level):
        self.levels.append(level)
        return self.step(u, i, self.level)


def _level_fault(fine: _Propagator, coarse: _Propagator) -> str:
    if not coarse.levels:
        return ("you never called coarse_step: the coarse solve (steps 3-4) must march with coarse_step, "
                "not with step")
    if not fine.levels:
        return "you never called step: F-relaxation and the residual use the fine propagator step"
    bad_f = sorted({lv for lv in fine.levels if lv != 0})
    bad_c = sorted({lv for lv in coarse.levels if lv != 1})
    if bad_f and bad_c:
        return ("step and coarse_step look swapped: you called step with level " f"{bad_f[0]} and coarse_step "
                f"with level {bad_c[0]}; F-relaxation and the residual use step(u, i, 0), the coarse right-hand "
                "side and the coarse solve use coarse_step(u, j, 1)")
    if bad_f:
        return (f"you called step (the fine propagator) with level {bad_f[0]}: on the coarse grid use "
                "coarse_step(u, j, 1)")
    if bad_c:
        return (f"you called coarse_step with level {bad_c[0]}: F-relaxation and the residual live on the fine "
                "grid and use step(u, i, 0)")
    return ""


def check_two_level_cycle(student, n_iter: int = 4) -> str:
    """Exercise 10.3: ``two_level_cycle(step, coarse_step, U, m) -> U_new`` (one iteration).

    Runs your cycle ``n_iter`` times from the initial guess u0-everywhere on each test problem and
    compares every iterate with the reference; a failure names the iteration and the time point. The
    fine and the coarse propagator are distinct functions that record the level they are called with,
    so swapping ``step`` and ``coarse_step`` (or passing the wrong level) is named; ``U`` must be left
    unchanged.

    Property: the FAS correction that makes it Parareal -- every iterate compared, and exactness after nt/m
    iterations checked; ``mgrit.two_level_iteration`` is a shortcut."""
    probs = test_problems(1)
    for case_no, p in enumerate(probs, start=1):
        nt, m = p["nt"], p["m"]
        fine_ref, coarse_ref = _Propagator(p["step"], 0, "step"), _Propagator(p["step"], 1, "coarse_step")
        U_ref = np.broadcast_to(p["u0"], (nt + 1,) + p["u0"].shape).astype(np.float64).copy()
        U_you = U_ref.copy()
        for it in range(1, n_iter + 1):
            U_ref = mgrit.two_level_iteration(fine_ref, coarse_ref, U_ref, m)
            fine, coarse = _Propagator(p["step"], 0, "step"), _Propagator(p["step"], 1, "coarse_step")
            given = U_you.copy()
            try:
                got = student(fine, coarse, given, m)
            except NotImplementedError:
                raise
            except Exception as exc:
                raise ExerciseFailed(f"Exercise 10.3 failed on case {case_no}/{len(probs)} ({p['label']}), "
                                     f"iteration {it}:\n  your function raised {type(exc).__name__}: {exc}") from exc
            if not np.array_equal(given, U_you):
                raise ExerciseFailed(f"Exercise 10.3 failed on case {case_no}/{len(probs)} ({p['label']}), iteration "
                                     f"{it}:\n  your function changed its input U in place; start from a copy "
                                     f"(U = np.array(U, copy=True)) and return the new iterate")
            fault = _level_fault(fine, coarse)
            msg = compare_outputs(got, U_ref, name="U", rtol=1e-9, atol=1e-12, time_axis=0, time_name="time point")
            if msg or fault:
                first = ""
                g = np.asarray(got, dtype=float) if not msg or "shape" not in msg else None
                if msg and g is not None and g.shape == U_ref.shape:
                    bad = ~np.isclose(g, U_ref, rtol=1e-9, atol=1e-12).reshape(nt + 1, -1).all(axis=1)
                    p0 = int(np.argmax(bad))
                    kind = "a C-point" if p0 % m == 0 else "an F-point"
                    first = f"\n  your solver first diverges from the reference at iteration {it}, time point {p0} ({kind})"
                body = (f"\n  {fault}" if fault else "") + (f"\n  {msg}" if msg else "")
                raise ExerciseFailed(
                    f"Exercise 10.3 failed on case {case_no}/{len(probs)} ({p['label']}):{first}{body}\n"
                    "  Hint: F-relax; r_j = -(U[jm] - step(U[jm-1])); uc = U[::m]; gc_j = uc_j - coarse(uc_{j-1}, j-1, 1) "
                    "+ r_j (gc_0 = uc_0); march vc_j = coarse(vc_{j-1}, j-1, 1) + gc_j; U[::m] = vc; F-relax again.")
            U_you = np.asarray(got, dtype=np.float64)
    # the property that makes it Parareal: exact after nt/m iterations
    p = probs[0]
    U = np.broadcast_to(p["u0"], (p["nt"] + 1,) + p["u0"].shape).astype(np.float64).copy()
    for _ in range(p["nt"] // p["m"]):
        U = np.asarray(student(_Propagator(p["step"], 0, "step"), _Propagator(p["step"], 1, "coarse_step"), U, p["m"]),
                       dtype=np.float64)
    exact = mgrit.serial_solve(lambda u, i, level: p["step"](u, i, 0), p["u0"], p["nt"])
    if not np.allclose(U, exact, rtol=1e-10, atol=1e-13):
        raise ExerciseFailed("Exercise 10.3 failed: after nt/m iterations your two-level cycle is not exact "
                             "(Parareal must reproduce the serial solution by then)")
    p = probs[0]
    U0 = np.broadcast_to(p["u0"], (p["nt"] + 1,) + p["u0"].shape).astype(np.float64).copy()
    check_no_shortcut("10.3", student, {"mgrit.two_level_iteration": mgrit.two_level_iteration},
                      _Propagator(p["step"], 0, "step"), _Propagator(p["step"], 1, "coarse_step"), U0, p["m"])
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
    :class:`course_lib.models.gru.GRUParams`.

    Property: the implicit (damped) update, with the student's ``gamma``. Five cases with gamma from 0.25 to 64
    (an explicit step, or gamma ignored, is off by far more than the tolerance), inputs unchanged, the course's
    GRU cell and step rejected as shortcuts."""
    line = check_function(
        "10.4", student, _implicit_ref, _gru_cases, n_cases=5, rtol=1e-9, atol=1e-12, time_axis=None, quiet=True,
        inputs_unchanged=True,
        hint="gates at the old h (params.W_ih, params.W_hh, ...; PyTorch order r, z, n; n uses r * (W_hn h + b_hn)); "
             "h_new = (h + gamma (1 - z) n) / (1 + gamma (1 - z)).")
    return _no_shortcut_then_pass("10.4", student, {"gru.gru_cell": gru.gru_cell, "jacobians.gru_step": jacobians.gru_step},
                                  line, _gru_cases(np.random.default_rng(4), 1).kwargs)


# --------------------------------------------------------------------------- 10.5: F-relaxation on threads
class SleepyStep:
    """``step`` that sleeps ``sleep`` seconds per call (the GIL is released meanwhile, as during a real
    step's numpy work) and records which threads called it, how many calls ran at once at most and
    how many calls there were. ``jitter``: a list of factors; the call at time point ``i`` sleeps
    ``sleep * jitter[i % len(jitter)]``, so that neighbouring points take different times and a
    thread that reads a point before another wrote it reads it too early."""

    def __init__(self, step, sleep: float = SLEEP_S, jitter=(1.0,)):
        self.step, self.sleep, self.jitter = step, sleep, tuple(float(j) for j in jitter)
        self._lock = threading.Lock()
        self.active = self.max_active = self.calls = 0
        self.threads: set = set()

    def __call__(self, u, i, level):
        with self._lock:
            self.active += 1
            self.calls += 1
            self.max_active = max(self.max_active, self.active)
            self.threads.add(threading.get_ident())
        try:
            time.sleep(self.sleep * self.jitter[int(i) % len(self.jitter)])
            return self.step(u, i, level)
        finally:
            with self._lock:
                self.active -= 1


def _thread_cases():
    cases = []
    for k, c in enumerate(_relax_cases(3)):
        kw = dict(c.kwargs, threads=[2, 1, 3, 2, 4][k])
        cases.append(Case(kw, label=f"{c.label}, threads={kw['threads']}"))
    return cases


#: (threads, jitter) of the sleeping runs of 10.5; the first one's counts are reported
SLEEPY_RUNS = ((2, (1.0,)), (2, (1.5, 0.25, 1.0, 0.5)), (3, (0.25, 1.5, 0.5, 1.0, 2.0)), (4, (1.0, 0.25)))


def _sleepy_runs(ex: str, student, prob, U, m) -> list:
    """Run ``student`` with a sleeping (and jittering) step once per :data:`SLEEPY_RUNS` entry and compare
    EVERY run's output with the serial F-relaxation: tasks that read a point another task has not yet
    written (one task per F-point, a missing wait) give wrong numbers here. Returns the steps."""
    nt = U.shape[0] - 1
    want = mgrit.f_relaxation(prob, U, m)
    steps = []
    for k, (threads, jitter) in enumerate(SLEEPY_RUNS, start=1):
        sleepy = SleepyStep(prob, jitter=jitter)
        label = (f"run {k}/{len(SLEEPY_RUNS)} with a sleeping step (nt={nt}, m={m}, threads={threads}; each call "
                 f"sleeps {', '.join(f'{SLEEP_S * j * 1e3:g}' for j in jitter)} ms in turn)")
        try:
            got = student(sleepy, U.copy(), m, threads)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise ExerciseFailed(f"Exercise {ex} failed on {label}:\n  your function raised "
                                 f"{type(exc).__name__}: {exc}") from exc
        msg = compare_outputs(got, want, name="U", rtol=1e-10, atol=1e-12, time_axis=0, time_name="time point")
        if msg:
            raise ExerciseFailed(
                f"Exercise {ex} failed on {label}:\n  {msg}\n  your numbers were right with a fast step but are "
                "wrong when the step takes time: a race -- a task read a point before the task computing it had "
                "written it.\n  Hint: one task per C-interval, marching its F-points in order inside the task "
                "(each point needs the one before it); tasks per F-point cannot run at the same time.")
        steps.append(sleepy)
    return steps


def check_f_relax_threads(student, *, min_speedup: float = MIN_THREAD_SPEEDUP, retries: int = 2) -> str:
    """Exercise 10.5: ``f_relaxation_threads(step, U, m, threads)`` equals ``mgrit.f_relaxation`` (inputs
    unchanged), runs the F-intervals on ``threads`` threads at once (counted with a sleeping step), and
    with ``threads=2`` is at least ``min_speedup`` times as fast as the serial F-relaxation.

    Property: the intervals run concurrently, never more than ``threads`` at once, without races. Counted with a
    sleeping step: calls in flight at once (>= 2 with threads=2, <= threads at 2, 3, 4), calls in all (one per
    F-point), every jittered run compared; the speed-up must lie wholly above :data:`MIN_THREAD_SPEEDUP`, and the
    pass prints it."""
    ex = "10.5"
    line = check_function(
        ex, student, lambda step, U, m, threads: mgrit.f_relaxation(step, U, m), _thread_cases(), rtol=1e-10,
        atol=1e-12, time_name="time point", inputs_unchanged=True, quiet=True,
        hint="one task per C-interval j: march U[j*m+k] = step(U[j*m+k-1], j*m+k-1, 0) for k = 1..m-1 inside it; "
             "the tasks write disjoint points of one copy of U; wait for all of them before returning.")
    nt, m, threads = 32, 4, 2
    prob = mgrit.dahlquist_step(-0.5, 1.0, m)
    U = np.linspace(1.0, 0.0, nt + 1)[:, None]
    runs = _sleepy_runs(ex, student, prob, U, m)
    sleepy = runs[0]
    n_f = nt // m * (m - 1)
    where = f"with a step that sleeps {SLEEP_S * 1e3:g} ms (nt={nt}, m={m}, threads={threads})"
    if sleepy.calls != n_f:
        raise ExerciseFailed(f"Exercise {ex} failed {where}:\n  your function called step {sleepy.calls} times; "
                             f"F-relaxation calls it once per F-point: {n_f} times")
    if sleepy.max_active < 2 or len(sleepy.threads) < 2:
        raise ExerciseFailed(
            f"Exercise {ex} failed {where}:\n  your numbers are right, but the F-intervals ran one after another: at "
            f"most {sleepy.max_active} call of step was in flight at once, from {len(sleepy.threads)} thread(s); with "
            f"threads={threads} two intervals must march at the same time.\n  Hint: submit one task per C-interval "
            "to concurrent.futures.ThreadPoolExecutor(max_workers=threads) (pool.map over the intervals) and wait "
            "for them all; a for loop, or a pool with one worker, runs them serially.")
    for (n, _), run in zip(SLEEPY_RUNS, runs):
        if run.max_active > n:
            raise ExerciseFailed(
                f"Exercise {ex} failed with a step that sleeps (nt={nt}, m={m}, threads={n}):\n  your numbers are "
                f"right, but {run.max_active} calls of step ran at once with threads={n}: your function ignores "
                "`threads`.\n  Hint: ThreadPoolExecutor(max_workers=threads).")
    check_no_shortcut(ex, student, {"mgrit.f_relaxation": mgrit.f_relaxation}, **_thread_cases()[0].kwargs)
    # the speed, with the sleeping step: a fresh U for every timed call, every timed result compared
    def make_input(rng):
        return {"step": SleepyStep(prob), "U": rng.standard_normal((nt + 1, 1)), "m": m, "threads": threads}

    judged = judge_speed(ex, student, lambda step, U, m, threads: mgrit.f_relaxation(step.step, U, m),
                lambda step, U, m, threads: mgrit.f_relaxation(step, U, m), make_input, min_speedup=min_speedup,
                baseline_name="serial", baseline_desc="the serial F-relaxation (mgrit.f_relaxation)", rtol=1e-10,
                atol=1e-12, retries=retries, repeat=3, budget_s=0.5, blas_threads=None, seed=105, label=where,
                context="your numbers are right and your intervals overlap",
                explain=f"With threads={threads}, ideally 2x: the step sleeps, so a busy machine does not slow it.",
                hint="create the pool once per call, give each task a whole interval (not one step), and do not "
                     "hold a lock while calling step.")
    print(line)
    print(f"  {sleepy.calls} calls of step from {len(sleepy.threads)} threads, at most {sleepy.max_active} at once "
          f"(threads={threads}); the intervals run concurrently")
    print(f"  speed: {judged.earned}")
    return line
