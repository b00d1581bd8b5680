"""The worksheet-10 checks pass the reference and explain wrong answers (iteration, time point)."""
import numpy as np
import pytest

from course_lib.models import gru
from course_lib.algorithms import mgrit
from course_lib.teaching.checks import mgrit as mgrit_checks
from course_lib.teaching.checks.core import ExerciseFailed
from helpers import solution


def test_reference_solutions_pass(capsys, monkeypatch):
    """The course's answers, with the shortcut watch off (calling them is a shortcut: test_shortcuts.py)."""
    from course_lib.teaching.checks import shortcuts

    monkeypatch.setattr(shortcuts, "calls_made", lambda *a, **k: [])
    mgrit_checks.check_f_relax(lambda step, U, m: mgrit.f_relaxation(step, U, m))
    mgrit_checks.check_c_relax(lambda step, U, m: mgrit.c_relaxation(step, U, m))
    mgrit_checks.check_two_level_cycle(mgrit.two_level_iteration)
    mgrit_checks.check_implicit_gru_step(lambda params, x, h, gamma: gru.gru_cell(
        params, x @ params.W_ih.T + params.b_ih, h, implicit=True, gamma=gamma))
    out = capsys.readouterr().out
    for k in ("10.1", "10.2", "10.3", "10.4"):
        assert f"Exercise {k} passed" in out


def test_f_relax_that_also_overwrites_c_points_is_located():
    def wrong(step, U, m):
        U = U.copy()
        for p in range(1, len(U)):
            U[p] = step(U[p - 1], p - 1, 0)  # a serial march, C-points overwritten too
        return U
    with pytest.raises(ExerciseFailed, match=r"Exercise 10.1 failed on case 1/5(.|\n)*time point 4"):
        mgrit_checks.check_f_relax(wrong)


def test_c_relax_off_by_one_is_located():
    def wrong(step, U, m):
        U = U.copy()
        for j in range(1, (len(U) - 1) // m + 1):
            U[j * m] = step(U[j * m - 2], j * m - 2, 0)
        return U
    with pytest.raises(ExerciseFailed, match=r"Exercise 10.2 failed(.|\n)*time point 4"):
        mgrit_checks.check_c_relax(wrong)


def test_two_level_cycle_without_fas_residual_reports_iteration_and_point():
    def wrong(step, coarse, U, m):  # forgets the residual in gc: the coarse solve just re-marches
        U = mgrit.f_relaxation(step, U, m)
        uc = U[::m].copy()
        for j in range(1, len(uc)):
            uc[j] = coarse(uc[j - 1], j - 1, 1)
        U[::m] = uc
        return mgrit.f_relaxation(step, U, m)
    with pytest.raises(ExerciseFailed, match=r"first diverges from the reference at iteration 1, time point \d+ \(a C-point\)"):
        mgrit_checks.check_two_level_cycle(wrong)


def test_two_level_cycle_wrong_on_second_iteration():
    calls = {"n": 0}

    def wrong(step, coarse, U, m):
        calls["n"] += 1
        V = mgrit.two_level_iteration(step, coarse, U, m)
        if calls["n"] == 2:
            V[6] += 0.1
        return V
    with pytest.raises(ExerciseFailed, match=r"iteration 2, time point 6 \(an F-point\)"):
        mgrit_checks.check_two_level_cycle(wrong)


def test_explicit_instead_of_implicit_gru_step():
    def explicit(params, x, h, gamma):
        return gru.gru_cell(params, x @ params.W_ih.T + params.b_ih, h, implicit=False, gamma=gamma)
    with pytest.raises(ExerciseFailed, match=r"Exercise 10.4 failed on case 1/5 \(B=2, nx=3, H=4, gamma=1.0\)(.|\n)*gates at the old h"):
        mgrit_checks.check_implicit_gru_step(explicit)


def test_raising_student_is_reported():
    def broken(step, coarse, U, m):
        raise IndexError("boom")
    with pytest.raises(ExerciseFailed, match="iteration 1:\n  your function raised IndexError: boom"):
        mgrit_checks.check_two_level_cycle(broken)
    with pytest.raises(NotImplementedError):
        mgrit_checks.check_f_relax(lambda step, U, m: (_ for _ in ()).throw(NotImplementedError("todo")))


def _cycle(step, coarse_step, U, m):
    return mgrit.two_level_iteration(step, coarse_step, U, m)


def test_two_level_cycle_swapped_propagators_are_named():
    def swapped(step, coarse_step, U, m):
        return mgrit.two_level_iteration(coarse_step, step, U, m)
    with pytest.raises(ExerciseFailed, match=r"Exercise 10.3 failed on case 1/5[\s\S]*step and coarse_step look swapped"):
        mgrit_checks.check_two_level_cycle(swapped)


def test_two_level_cycle_fine_only_is_named():
    def fine_only(step, coarse_step, U, m):
        return mgrit.two_level_iteration(step, step, U, m)
    with pytest.raises(ExerciseFailed, match=r"you never called coarse_step"):
        mgrit_checks.check_two_level_cycle(fine_only)


def test_two_level_cycle_wrong_level_and_in_place_are_named():
    def coarse_at_level_0(step, coarse_step, U, m):
        return mgrit.two_level_iteration(step, lambda u, i, level: coarse_step(u, i, 0), U, m)
    with pytest.raises(ExerciseFailed, match=r"you called coarse_step with level 0"):
        mgrit_checks.check_two_level_cycle(coarse_at_level_0)

    def in_place(step, coarse_step, U, m):
        new = mgrit.two_level_iteration(step, coarse_step, U, m)
        U[...] = new
        return U
    with pytest.raises(ExerciseFailed, match=r"changed its input U in place"):
        mgrit_checks.check_two_level_cycle(in_place)


def test_relaxations_in_place_are_named():
    def f_in_place(step, U, m):
        new = mgrit.f_relaxation(step, U, m)
        U[...] = new
        return U
    with pytest.raises(ExerciseFailed, match=r"Exercise 10.1 failed on case 1/5[\s\S]*changed its input U in place"):
        mgrit_checks.check_f_relax(f_in_place)

    def c_in_place(step, U, m):
        new = mgrit.c_relaxation(step, U, m)
        U[...] = new
        return U
    with pytest.raises(ExerciseFailed, match=r"Exercise 10.2 failed[\s\S]*changed its input U in place"):
        mgrit_checks.check_c_relax(c_in_place)


# --------------------------------------------------------------------------- 10.5: F-relaxation on threads
def _threads_solution(step, U, m, threads):
    from concurrent.futures import ThreadPoolExecutor

    U = np.array(U, dtype=float, copy=True)

    def interval(j):
        for p in range(j * m + 1, j * m + m):
            U[p] = step(U[p - 1], p - 1, 0)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(interval, range((len(U) - 1) // m)))
    return U


def test_f_relax_threads_solution_passes(capsys):
    mgrit_checks.check_f_relax_threads(_threads_solution)
    out = capsys.readouterr().out
    assert "Exercise 10.5 passed: 5/5 cases" in out
    assert "24 calls of step from 2 threads, at most 2 at once (threads=2)" in out


def test_f_relax_threads_serial_map_is_named():
    def serial(step, U, m, threads):  # right numbers, one interval after another
        return mgrit.f_relaxation(step, U, m)

    with pytest.raises(ExerciseFailed, match=r"Exercise 10.5 failed with a step that sleeps 2 ms \(nt=32, m=4, "
                                             r"threads=2\):\n  your numbers are right, but the F-intervals ran one "
                                             r"after another: at most 1 call"):
        mgrit_checks.check_f_relax_threads(serial)


def test_f_relax_threads_one_worker_is_named():
    def one_worker(step, U, m, threads):
        return _threads_solution(step, U, m, 1)

    with pytest.raises(ExerciseFailed, match=r"the F-intervals ran one after another: at most 1 call of step was "
                                             r"in flight at once, from 1 thread"):
        mgrit_checks.check_f_relax_threads(one_worker)


def test_f_relax_threads_ignoring_threads_is_named():
    def eight(step, U, m, threads):
        return _threads_solution(step, U, m, 8)

    with pytest.raises(ExerciseFailed, match=r"calls of step ran at once with threads=2: your function ignores "
                                             r"`threads`"):
        mgrit_checks.check_f_relax_threads(eight)


def test_f_relax_threads_in_place_and_wrong_points_are_named():
    def in_place(step, U, m, threads):
        out = _threads_solution(step, U, m, threads)
        U[1] = out[1]
        return out

    with pytest.raises(ExerciseFailed, match=r"changed its input U in place"):
        mgrit_checks.check_f_relax_threads(in_place)

    def per_point(step, U, m, threads):  # parallel over F-points: each reads a stale neighbour
        from concurrent.futures import ThreadPoolExecutor

        U = np.array(U, dtype=float, copy=True)
        old = U.copy()
        pts = [p for p in range(1, len(U)) if p % m]

        def one(p):
            U[p] = step(old[p - 1], p - 1, 0)

        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(one, pts))
        return U

    with pytest.raises(ExerciseFailed, match=r"Exercise 10.5 failed on case 1/5(.|\n)*time point 2"):
        mgrit_checks.check_f_relax_threads(per_point)


# --------------------------------------------------------------------------- issue 29: races, gamed timers
def _per_point_racy(step, U, m, threads):
    """One task per F-point -- the race of issue 29, forced: with a fast step every task waits for the one
    before it (right numbers, as the old check saw); with a step that takes time (the check's sleeping step)
    each task reads its left neighbour as it was before any task wrote (what a real pool does when the
    neighbour's step is still running)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    U = np.array(U, dtype=float, copy=True)
    slow = isinstance(step, mgrit_checks.SleepyStep)
    old = U.copy()
    pts = [p for p in range(1, len(U)) if p % m]
    done = {p: threading.Event() for p in pts}

    def one(p):
        if slow:
            U[p] = step(old[p - 1], p - 1, 0)
        else:
            if p - 1 in done:
                done[p - 1].wait(10)
            U[p] = step(U[p - 1], p - 1, 0)
        done[p].set()

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(one, pts))
    return U


def test_f_relax_threads_one_task_per_f_point_is_a_race_named():
    # right with the numbers' fast steps (all the old check compared) ...
    for case in mgrit_checks._thread_cases():
        np.testing.assert_allclose(_per_point_racy(**case.kwargs), mgrit.f_relaxation(
            case.kwargs["step"], case.kwargs["U"], case.kwargs["m"]), rtol=1e-12)
    # ... and named, every time, once the sleeping runs' outputs are compared
    for _ in range(2):
        with pytest.raises(ExerciseFailed, match=r"Exercise 10.5 failed on run 1/4 with a sleeping step \(nt=32, m=4, "
                                                 r"threads=2; each call sleeps 2 ms in turn\):\n  'U' differs from the "
                                                 r"reference: first at index \(2, 0\) \(time point 2\)(.|\n)*a race"):
            mgrit_checks.check_f_relax_threads(_per_point_racy)


def test_f_relax_threads_passes_twice_in_a_row(fake_clock, capsys):
    fake_clock.cost(serial=2.0, yours=1.0)
    for _ in range(2):
        mgrit_checks.check_f_relax_threads(_threads_solution)
        assert "Exercise 10.5 passed: 5/5 cases" in capsys.readouterr().out


def test_f_relax_threads_cached_answer_while_timed_is_a_gamed_timer(fake_clock):
    """Right whenever the sleeping runs look (they all start from the same U), then the first answer again."""
    cache = {}

    def cached(step, U, m, threads):
        if isinstance(step, mgrit_checks.SleepyStep):
            if "U" not in cache:
                cache["U"] = _threads_solution(step, U, m, threads)
            return cache["U"].copy()
        return _threads_solution(step, U, m, threads)

    fake_clock.cost(serial=2.0, yours=1.0)
    with pytest.raises(ExerciseFailed, match=r"Exercise 10.5 failed on the speed test \(with a step that sleeps 2 ms "
                                             r"\(nt=32, m=4, threads=2\), timed call \d+\):\n  gamed timer"):
        mgrit_checks.check_f_relax_threads(cached)


def test_f_relax_threads_mutating_the_timed_input_is_named(fake_clock):
    def clobbers(step, U, m, threads):
        out = _threads_solution(step, U, m, threads)
        if isinstance(step, mgrit_checks.SleepyStep) and step.calls and U.shape == (33, 1):
            U[0] = 0.0    # only where no earlier part of the check looked
        return out

    fake_clock.cost(serial=2.0, yours=1.0)
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 10.5 failed.*changed its input '?U'? in place"):
        mgrit_checks.check_f_relax_threads(clobbers)


# --------------------------------------------------------------------------- issue 39, item 1: 10.1/10.2's work
def _f_relax_remarching(step, U, m):
    """The right F-points, each re-marched from its C-point: m(m-1)/2 steps per interval instead of m - 1."""
    U = np.array(U, dtype=float, copy=True)
    for j in range((len(U) - 1) // m):
        for p in range(j * m + 1, j * m + m):
            u = U[j * m]
            for q in range(j * m, p):
                u = step(u, q, 0)
            U[p] = u
    return U


def _c_relax_stepping_twice(step, U, m):
    """The right C-points, with every step computed twice (a first result thrown away)."""
    U = np.array(U, dtype=float, copy=True)
    for j in range(1, (len(U) - 1) // m + 1):
        step(U[j * m - 1], j * m - 1, 0)
        U[j * m] = step(U[j * m - 1], j * m - 1, 0)
    return U


def test_101_remarching_each_f_point_is_named_by_its_step_calls():
    with pytest.raises(ExerciseFailed, match=r"(?s)numbers are right.*called step \d+ times; F-relaxation calls it "
                                             r"16 times \(2 per C-interval\).*not re-marched"):
        mgrit_checks.check_f_relax(_f_relax_remarching)


def test_102_extra_step_calls_are_named():
    with pytest.raises(ExerciseFailed, match=r"(?s)called step 16 times; C-relaxation calls it 8 times"):
        mgrit_checks.check_c_relax(_c_relax_stepping_twice)


def test_101_102_the_worksheet_answers_pass(capsys):
    assert mgrit_checks.check_f_relax(solution("10_mgrit", "f_relax")).startswith("Exercise 10.1 passed")
    assert mgrit_checks.check_c_relax(solution("10_mgrit", "c_relax")).startswith("Exercise 10.2 passed")
