"""Issue 41, item 4: the pass lines of 2.3, 4.1, 4.2 and 11.5 print what was measured -- the speed-up earned
(``Judgement.earned``, under a fake clock: the baseline 4x the student's cost) and 2.3's fitted slopes -- as the other
speed exercises' do (tests/teaching/checks/test_speed_statements.py)."""
import re

import pytest

import course_lib  # noqa: F401  (first: before numba)
from helpers import bptt_cpu_timer, solution
from course_lib.teaching.checks import bptt as bptt_checks
from course_lib.teaching.checks import newton as newton_checks
from course_lib.teaching.checks import tiling_simd as tiling_checks
from course_lib.teaching.checks.speed import Judgement

EARNED = r"  speed: ([0-9.]+)x as fast as {desc}[^\n]*: between [0-9.]+x and [0-9.]+x in \d+ interleaved rounds, " \
         r"at least {bar:g}x needed"


def _ratio(out: str, ex: str, desc: str, bar: float) -> float:
    m = re.search(rf"Exercise {re.escape(ex)} passed[^\n]*\n(?:[^\n]*\n)*?" + EARNED.format(desc=re.escape(desc), bar=bar),
                  out)
    assert m, out
    return float(m.group(1))


@pytest.mark.timeout(300)
def test_tiled_and_parallel_matmul_pass_lines_print_the_speedup(capsys, fake_clock):
    fake_clock.cost(course_naive=4e-3, course_parallel=4e-3, yours=1e-3)
    tiling_checks.check_tiled_matmul(solution("04_tiling_simd", "tiled_matmul"))
    assert _ratio(capsys.readouterr().out, "4.1", "the course's naive ijk loop",
                  tiling_checks.MIN_TILED_SPEEDUP) == pytest.approx(4.0, rel=0.05)
    tiling_checks.check_parallel_matmul(solution("04_tiling_simd", "parallel_matmul"))
    assert _ratio(capsys.readouterr().out, "4.2", "the course's prange loop",
                  tiling_checks.MIN_PARALLEL_SPEEDUP) == pytest.approx(4.0, rel=0.05)


@pytest.mark.timeout(300)
def test_quasi_step_pass_line_prints_the_speedup(capsys, fake_clock):
    fake_clock.cost(full_newton=4e-3, yours=1e-3)
    assert newton_checks.check_quasi_step(solution("11_newton", "quasi_step")) == "Exercise 11.5 passed: 2/2 cases"
    assert _ratio(capsys.readouterr().out, "11.5", "one full Newton step (DEER)",
                  newton_checks.MIN_SPEEDUP) == pytest.approx(4.0, rel=0.05)


def test_complexity_pass_line_prints_the_fitted_slopes(capsys):
    assert bptt_checks.check_complexity(bptt_cpu_timer) == "Exercise 2.3 passed: 2/2 cases"
    m = re.search(r"Exercise 2\.3 passed: 2/2 cases\n  slopes measured: bptt_linear ([0-9.-]+) \(expected 1 \+- 0\.45\), "
                  r"bptt_quadratic ([0-9.-]+) \(expected 2 \+- 0\.45\)\n", capsys.readouterr().out)
    assert m
    linear, quadratic = float(m.group(1)), float(m.group(2))
    assert abs(linear - 1) <= 0.45 and abs(quadratic - 2) <= 0.45   # what the check passed on


def test_a_speed_not_timed_says_so_instead_of_nan():
    j = Judgement("4.2", "not timed", float("nan"), (float("nan"),) * 2, 0.0, 0, 0)
    assert j.earned == "not timed (no bar: min_speedup=0)"
