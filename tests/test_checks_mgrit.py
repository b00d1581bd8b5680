"""The worksheet-10 checks pass the reference and explain wrong answers (iteration, time point)."""
import numpy as np
import pytest

from course_lib.models import gru
from course_lib.algorithms import mgrit
from course_lib.teaching.checks import mgrit as mgrit_checks
from course_lib.teaching.checks.core import ExerciseFailed


def test_reference_solutions_pass(capsys):
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
