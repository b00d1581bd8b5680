"""The shared speed judge: fresh inputs, every timed result compared, inputs left alone; a pass needs an interval
wholly above the bar, a fail every measurement wholly below it, and anything between is "not judged" (never a pass).
All timed with the fake clock: a set cost per call, not a race with the machine's clock."""
import contextlib

import numpy as np
import pytest

from course_lib.teaching.checks.core import ExerciseFailed
from course_lib.teaching.checks import speed
from course_lib.teaching.checks.speed import SpeedNotJudged, Stopwatch, judge_speed


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
    with pytest.raises(ExerciseFailed, match=r"only 0\.01x as fast[\s\S]*whole interval lies below the bar, in "
                                             r"each of 2 measurements") as err:
        _judge(_ref)
    assert not isinstance(err.value, SpeedNotJudged)


def _jittery(clock, costs):
    """A student whose calls cost ``costs`` in turn (a noisy measurement whose interval is wide)."""
    calls = iter(list(costs) * 1000)

    def student(x):
        clock.advance(next(calls))
        return 2 * x
    return student


#: call costs spread evenly around 1 ms in a fixed shuffled order: against a 2 ms baseline a speed-up of about 2x
#: whose interval straddles a 2x bar in every measurement, whatever call a measurement starts at
_AROUND_1MS = list(np.random.default_rng(5).permutation(np.linspace(0.5e-3, 1.5e-3, 41)))


def test_a_straddling_interval_on_a_busy_machine_is_not_judged_and_not_passed(fake_clock, busy_machine, capsys):
    fake_clock.cost(course=2e-3, yours=0.0)
    with pytest.raises(SpeedNotJudged, match=r"Exercise 9\.9 not judged[\s\S]*the machine was busy") as err:
        _judge(_jittery(fake_clock, _AROUND_1MS), retries=1)   # speed-up between 1.33x and 4x
    j = err.value.judgement
    assert j.verdict == err.value.verdict == "not judged" and j.interval[0] < 2.0 <= j.interval[1]
    assert j.tries == speed.MIN_TRIES                  # measured again before giving up
    assert "passed" not in capsys.readouterr().out


def test_a_straddling_interval_on_a_quiet_machine_is_not_judged_either(fake_clock):
    """Too close to the bar to tell: neither a pass nor a fail (a correct answer must not fail on noise)."""
    fake_clock.cost(course=2e-3, yours=0.0)
    with pytest.raises(SpeedNotJudged, match=r"not judged[\s\S]*2x is needed: neither a pass nor a fail -- the "
                                             r"exercise stays open"):
        _judge(_jittery(fake_clock, _AROUND_1MS), retries=1, budget_s=0.05)


def test_the_ci_mode_reports_a_not_judged_speed_and_runs_on_but_still_fails_a_miss(fake_clock, busy_machine,
                                                                                     capsys, monkeypatch):
    """COURSE_NOT_JUDGED=continue (make test, over the reference solutions): the undecided measurement prints its
    'speed not judged' line and returns a Judgement that says so; a measurement wholly below the bar still fails."""
    monkeypatch.setenv(speed.NOT_JUDGED_ENV, "continue")
    fake_clock.cost(course=2e-3, yours=0.0)
    j = _judge(_jittery(fake_clock, _AROUND_1MS), retries=1)
    assert j.verdict == speed.NOT_JUDGED and j.interval[0] < 2.0 <= j.interval[1]
    assert "speed not judged: the machine was busy" in capsys.readouterr().out
    fake_clock.cost(course=1e-3, yours=100e-3)        # 0.01x against a 2x bar: wholly below, busy or not
    with pytest.raises(ExerciseFailed, match="whole interval lies below the bar") as err:
        _judge(_ref)
    assert not isinstance(err.value, SpeedNotJudged)


def test_one_bad_measurement_never_fails_a_correct_answer(fake_clock):
    """The Halide case: a correct schedule measured wholly below the bar once (a bad run) and well above it the
    next time passes; a fail needs every measurement wholly below."""
    fake_clock.cost(course=1e-3, yours=0.0)
    state = {"calls": 0}

    def student(x):
        state["calls"] += 1
        fake_clock.advance(10e-3 if state["calls"] <= 7 else 0.2e-3)   # first measurement 0.1x, then 5x
        return 2 * x
    j = _judge(student, repeat=5, max_rounds=5)
    assert j.verdict == "yes" and j.interval[0] >= 2.0 and j.tries == 2


def test_no_interval_wholly_below_the_bar_passes_busy_or_quiet(fake_clock, monkeypatch):
    """Every combination of machine state and thread count: an interval wholly below the bar never passes."""
    from course_lib.core import timing

    real = timing.noise_of_pairs
    monkeypatch.setattr(speed, "_threads", lambda n, blas: contextlib.nullcontext())
    for others in (None, 1.0):
        monkeypatch.setattr(timing, "noise_of_pairs", lambda ratios, others=others: real(ratios, others=others))
        for threads in (1, 2):
            for cost in (1.5e-3, 3e-3, 100e-3):                 # 0.67x, 0.33x, 0.01x against a 1x bar
                fake_clock.cost(course=1e-3, yours=cost)
                with pytest.raises(ExerciseFailed):
                    _judge(lambda x: x + x, min_speedup=1.0, threads=threads)


def test_the_pass_line_can_print_the_speed_up_earned(fake_clock):
    fake_clock.cost(course=4e-3, yours=1e-3)
    j = _judge(lambda x: x + x, baseline_desc="the course's loop")
    assert j.earned.startswith(f"{j.speedup:.2f}x as fast as the course's loop: between {j.interval[0]:.2f}x")
    assert "at least 2x needed" in j.earned and j.speedup > 1


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


def test_threaded_code_on_a_loaded_machine_below_the_bar_is_not_judged_within_the_slack_only(fake_clock, monkeypatch,
                                                                                           capsys):
    """Narrow pairs that still read low: two threads on a machine where another program holds a core (the
    guard sees the load, the interval itself is narrow). Within BIASED_SLACK of the bar: not judged -- never a
    pass -- and only when several threads ran; far below it: fails."""
    from course_lib.core import timing

    real = timing.noise_of_pairs
    monkeypatch.setattr(timing, "noise_of_pairs", lambda ratios, others=None: real(ratios, others=1.0))
    monkeypatch.setattr(speed, "_threads", lambda n, blas: contextlib.nullcontext())   # the count, not numba's pool:
    fake_clock.cost(course=1e-3, yours=3e-3)                    # 0.33x against a 1x bar: within 4x of it (1 core too)
    with pytest.raises(SpeedNotJudged, match="2 threads ran") as err:
        _judge(lambda x: x + x, min_speedup=1.0, threads=2)
    assert err.value.judgement.interval[1] < 1.0 and "passed" not in capsys.readouterr().out
    with pytest.raises(ExerciseFailed, match="whole interval lies below the bar") as err:
        _judge(lambda x: x + x, min_speedup=1.0, threads=1)      # one thread: the load is no excuse
    assert not isinstance(err.value, SpeedNotJudged)
    fake_clock.cost(course=1e-3, yours=10e-3)                   # 0.1x: beyond the slack, fails even threaded
    with pytest.raises(ExerciseFailed, match="whole interval lies below the bar") as err:
        _judge(lambda x: x + x, min_speedup=1.0, threads=2)
    assert not isinstance(err.value, SpeedNotJudged)
    assert speed.BIASED_SLACK == 4.0


def test_more_threads_than_numba_was_started_with_is_an_error_naming_threads(fake_clock):
    import numba

    too_many = int(numba.config.NUMBA_NUM_THREADS) + 1
    with pytest.raises(ValueError, match=r"threads: expected 1 to \d+"):
        _judge(lambda x: x + x, threads=too_many)


def test_each_measurement_is_classified_by_its_interval_alone():
    """The rule itself: above -> pass; below -> miss, unless biased pairs lie within the slack; else undecided."""
    c = speed._classify
    assert c(2.1, 3.0, 2.0, biased=True) == "pass"
    assert c(1.0, 1.9, 2.0, biased=False) == "miss"
    assert c(1.0, 1.9, 2.0, biased=True) == "undecided"           # biased, within 4x: not judged
    assert c(0.1, 0.4, 2.0, biased=True) == "miss"                # beyond the slack
    assert c(1.5, 2.5, 2.0, biased=False) == "undecided"          # straddles: never a fail, never a pass
    quiet = speed._Try(1.5, 2.5, 2.0, 9, [], "undecided")
    assert "too close to the bar" in speed._not_judged_note([quiet, quiet], 2.0, "the loop")
