"""The shared speed judge: fresh inputs, every timed result compared, inputs left alone, a proportional waiver."""
import contextlib

import numpy as np
import pytest

from course_lib.teaching.checks.core import ExerciseFailed
from course_lib.teaching.checks.speed import Stopwatch, judge_speed


def _inputs(rng):
    return dict(x=rng.standard_normal((4, 5)))


def _ref(x):
    return 2.0 * x


def _judge(student, **kw):
    kw.setdefault("min_speedup", 2.0)
    return judge_speed("9.9", student, _ref, _ref, _inputs, baseline_name="course", **kw)


def test_a_right_fast_solution_passes_and_every_timed_result_is_checked(fake_clock):
    fake_clock.cost(course=4e-3, yours=1e-3)
    j = _judge(lambda x: x + x)
    assert j.verdict == "yes" and j.interval[0] >= 2.0
    assert j.checked == fake_clock.calls["yours"] >= 5


def test_every_timed_call_gets_fresh_numbers(fake_clock):
    fake_clock.cost(course=4e-3, yours=1e-3)
    seen = []

    def spy(x):
        seen.append(x.copy())
        return 2 * x
    _judge(spy)
    assert len(seen) >= 5
    assert all(not np.array_equal(a, b) for a, b in zip(seen, seen[1:]))


def test_a_cached_answer_is_rejected_as_a_gamed_timer(fake_clock):
    fake_clock.cost(course=4e-3, yours=1e-3)
    cache = {}

    def cached(x):
        if x.shape not in cache:
            cache[x.shape] = 2 * x
        return cache[x.shape]
    with pytest.raises(ExerciseFailed, match=r"Exercise 9\.9 failed on the speed test[\s\S]*gamed timer[^:]*: the result "
                                             r"returned while timed differs from the reference on that same input"):
        _judge(cached)


def test_a_mutating_solution_is_rejected_by_name(fake_clock):
    fake_clock.cost(course=4e-3, yours=1e-3)

    def in_place(x):
        x *= 2
        return x
    with pytest.raises(ExerciseFailed, match=r"changed its input 'x' in place"):
        _judge(in_place)


def test_a_far_too_slow_solution_fails_even_on_a_busy_machine(fake_clock, busy_machine):
    fake_clock.cost(course=1e-3, yours=100e-3)      # 100x slower than the baseline: far below a 2x bar
    with pytest.raises(ExerciseFailed, match=r"only 0\.01x as fast[\s\S]*whole interval lies below the bar"):
        _judge(_ref)


def _jittery(clock, costs):
    """A student whose calls cost ``costs`` in turn (a noisy measurement whose interval is wide)."""
    calls = iter(costs * 1000)

    def student(x):
        clock.advance(next(calls))
        return 2 * x
    return student


def test_a_straddling_interval_is_waived_only_on_a_busy_machine(fake_clock, busy_machine, capsys):
    fake_clock.cost(course=2e-3, yours=0.0)
    j = _judge(_jittery(fake_clock, [0.5e-3, 1.5e-3]), retries=1)   # speed-up between 1.33x and 4x
    assert j.verdict == "waived" and j.interval[0] < 2.0 <= j.interval[1]
    assert "speed not judged" in capsys.readouterr().out


def test_a_straddling_interval_on_a_quiet_machine_fails(fake_clock):
    fake_clock.cost(course=2e-3, yours=0.0)
    with pytest.raises(ExerciseFailed, match=r"not waived"):
        _judge(_jittery(fake_clock, [0.5e-3, 1.5e-3]), retries=1, budget_s=0.05)


def test_the_stopwatch_leaves_out_paused_time():
    now = [0.0]
    w = Stopwatch(lambda: now[0])
    now[0] = 1.0
    with w.paused():
        now[0] = 5.0
    assert w() == 1.0


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="min_speedup"):
        judge_speed("1", _ref, _ref, _ref, _inputs, min_speedup=-1)
    with pytest.raises(TypeError, match="make_input"):
        judge_speed("1", _ref, _ref, _ref, None, min_speedup=2)


def test_threaded_code_on_a_loaded_machine_is_waived_within_the_slack_only(fake_clock, monkeypatch, capsys):
    """Narrow pairs that still read low: two threads on a machine where another program holds a core (the
    guard sees the load, the interval itself is narrow). Within BIASED_SLACK of the bar: waived, and only
    when several threads ran; far below it: fails."""
    from course_lib.core import timing
    from course_lib.teaching.checks import speed

    real = timing.noise_of_pairs
    monkeypatch.setattr(timing, "noise_of_pairs", lambda ratios, others=None: real(ratios, others=1.0))
    monkeypatch.setattr(speed, "_threads", lambda n, blas: contextlib.nullcontext())   # the count, not numba's pool:
    fake_clock.cost(course=1e-3, yours=3e-3)                    # 0.33x against a 1x bar: within 4x of it (1 core too)
    j = _judge(lambda x: x + x, min_speedup=1.0, threads=2)
    assert j.verdict == "waived" and "2 threads ran" in capsys.readouterr().out
    with pytest.raises(ExerciseFailed, match="whole interval lies below the bar"):
        _judge(lambda x: x + x, min_speedup=1.0, threads=1)      # one thread: the load is no excuse
    fake_clock.cost(course=1e-3, yours=10e-3)                   # 0.1x: beyond the slack, fails even threaded
    with pytest.raises(ExerciseFailed, match="whole interval lies below the bar"):
        _judge(lambda x: x + x, min_speedup=1.0, threads=2)
    assert speed.BIASED_SLACK == 4.0


def test_more_threads_than_numba_was_started_with_is_an_error_naming_threads(fake_clock):
    import numba

    too_many = int(numba.config.NUMBA_NUM_THREADS) + 1
    with pytest.raises(ValueError, match=r"threads: expected 1 to \d+"):
        _judge(lambda x: x + x, threads=too_many)
