"""compare() on a fake clock: paired rounds survive a busy machine, abstain only when the data cannot decide,
and add rounds until the interval is narrow or the budget is spent. No test here depends on real time."""
import time

import numpy as np
import pytest

from course_lib.core import intervals, noise, timing


class FakeClock:
    """A clock that only moves when a fake function 'runs' (``spend``)."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def spend(self, seconds):
        self.t += seconds


def fns(clock, cost_a, cost_b):
    """Two zero-argument functions whose calls take ``cost_x(round)`` fake seconds; rounds are counted by a."""
    state = {"round": 0}

    def a():
        clock.spend(cost_a(state["round"]))
        state["round"] += 1

    def b():
        clock.spend(cost_b(state["round"] - 1))

    return {"a": a, "b": b}


@pytest.fixture
def loaded(monkeypatch):
    """Other processes keep 1.5 cores busy for the whole (fake) run, as /proc/stat would report."""
    clock = FakeClock()
    monkeypatch.setattr(noise, "_busy_cpu_seconds", lambda: 1.5 * clock.t)
    return clock


def run(clock, cost_a, cost_b, **kw):
    kw.setdefault("warmup", 0)
    kw.setdefault("time_budget", 200.0)
    return timing.compare(clock=clock, **fns(clock, cost_a, cost_b), **kw)


# --------------------------------------------------------------------------- the interval itself
def test_median_interval_uses_binomial_order_statistics():
    xs = list(range(1, 21))                       # n = 20: the textbook 95% interval is x(6)..x(15)
    assert intervals.median_interval(xs) == (6, 15)
    assert intervals.median_interval(xs[:6]) == (1, 6)   # n = 6: min..max already covers 96.9%
    assert intervals.median_interval([3.0, 1.0]) == (1.0, 3.0)  # too few: min..max, rough
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(400):                          # coverage on skewed (busy-machine-like) data
        lo, hi = intervals.median_interval(rng.lognormal(0.0, 1.0, 30))
        covered += lo <= 1.0 <= hi                # the lognormal's median is exp(0) = 1
    assert covered / 400 >= 0.93
    with pytest.raises(ValueError, match="values"):
        intervals.median_interval([])
    with pytest.raises(ValueError, match="confidence"):
        intervals.median_interval([1.0], confidence=1.0)


def test_ratio_answers_yes_no_cannot_tell_and_says_what_it_can():
    r = intervals.Ratio("b", "a", [0.5] * 10)
    assert r.speedup_interval == (2.0, 2.0) and r.narrow
    assert r.faster(1.8) == "yes" and r.faster(2.5) == "no"
    assert "at least 2.00x faster than a in every one of 10 pairs" in r.said()
    mixed = intervals.Ratio("b", "a", [0.4, 1.3] * 6)
    assert mixed.faster(1.0) == "cannot tell" and "each won some of 12 pairs" in mixed.said()
    slow = intervals.Ratio("b", "a", [2.0, 4.0] * 3)
    assert slow.faster(1.0) == "no" and "at least 2.00x slower than a" in slow.said()
    with pytest.raises(ValueError, match="values"):
        intervals.Ratio("b", "a", [1.0, 0.0])
    with pytest.raises(ValueError, match="by"):
        r.faster(0)


# --------------------------------------------------------------------------- (a) busy but consistent
def test_noisy_but_consistent_pairs_conclude_as_the_quiet_run_does(loaded):
    quiet = run(FakeClock(), lambda i: 1.0, lambda i: 0.5)
    rng = np.random.default_rng(1)
    drift = rng.uniform(1.0, 4.0, 1000)           # the machine's speed changes round to round, up to 4x ...
    busy = run(loaded, lambda i: drift[i], lambda i: 0.5 * drift[i] * rng.uniform(0.97, 1.03))
    for c in (quiet, busy):
        assert c.noise.ok, c.noise.warning()
        assert c.speedup("b") == pytest.approx(2.0, rel=0.05)
        assert c.faster("b", by=1.5) == "yes" and c.faster("b", by=2.5) == "no"
    # ... which the old guard (spread of the repeats, load of other processes) would have vetoed:
    assert busy.noise.others == pytest.approx(1.5, abs=0.01) and not busy.noise.busy
    assert not busy.timings["a"].noise.ok and busy.timings["a"].noise.busy
    assert quiet.timings["a"].times == [1.0] * 5          # a quiet run stops after the rounds asked for


def test_rounds_another_program_interrupted_are_set_aside(loaded):
    """Preemption: a third of the calls lose the core for 2-20x their own time, at random, to either function."""
    rng = np.random.default_rng(7)

    def preempted(t):
        return t * rng.uniform(0.98, 1.02) + (t * rng.uniform(2, 20) if rng.random() < 0.3 else 0.0)

    c = run(loaded, lambda i: preempted(1.0), lambda i: preempted(0.5))
    assert c.noise.ok, c.noise.warning()
    r = c.pairs("b")
    assert r.set_aside > 0 and c.speedup("b") == pytest.approx(2.0, rel=0.03)
    assert f"and {r.set_aside} disturbed rounds set aside" in c.said("b")
    assert intervals.undisturbed([1.0, 1.01, 0.99, 1.0, 9.0]) == [True, True, True, True, False]
    assert intervals.undisturbed([1.0, 3.0, 2.0, 2.5, 1.5]) == [True] * 5       # a spread, not an outlier
    assert intervals.Ratio.from_times("b", "a", [1] * 8 + [50, 60], [2] * 10).set_aside == 2
    few = intervals.Ratio.from_times("b", "a", [1, 1, 1, 1, 50, 60], [2] * 6)
    assert few.set_aside == 0 and few.n == 6                    # fewer than 5 would be left: all are kept


def test_unequal_waiting_for_cores_is_not_trusted(loaded, monkeypatch):
    """Threaded code on oversubscribed cores waits in every round, the serial baseline much less: pairs
    cannot cancel that, however narrow the interval -- abstain (the run queue's wait says so)."""
    queue = FakeClock()                                    # seconds our one thread waited for a core, so far
    monkeypatch.setattr(timing, "_run_queue_wait", lambda: {"1": queue.t})

    def call(t, waits):
        queue.spend(waits * t)
        return t

    c = run(loaded, lambda i: call(1.0, 0.1), lambda i: call(0.5, 0.9))
    assert c.waited == pytest.approx({"a": 0.1, "b": 0.9})
    assert c.pairs("b").narrow and not c.noise.ok and c.noise.busy       # narrow, but not to be trusted
    assert "threads waited for a core unequally (b 90%, a 10% of their time)" in c.noise.warning()
    assert c.noise.said == []
    assert c.noise.biased and c.faster("b") == "cannot tell" and c.noise.faster("b") == "cannot tell"
    alike = run(loaded, lambda i: call(1.0, 0.5), lambda i: call(0.5, 0.6))   # both slowed alike: pairs cancel it
    assert alike.noise.ok and not alike.noise.biased and alike.faster("b") == "yes"
    monkeypatch.setattr(timing, "_run_queue_wait", lambda: None)               # not Linux: nothing to judge by
    assert run(loaded, lambda i: 1.0, lambda i: 0.5).waited == {}
    assert timing._waited({"1": 2.0, "2": 5.0}, {"1": 2.5, "3": 0.25}) == pytest.approx(0.75)  # "2" ended: not -5


def test_load_alone_never_vetoes_but_is_named_when_pairs_disagree(loaded):
    c = run(loaded, lambda i: 1.0, lambda i: 0.5)
    assert c.noise.ok and c.noise.others == pytest.approx(1.5, abs=0.01)
    rng = np.random.default_rng(2)
    bad = run(loaded, lambda i: 1.0, lambda i: rng.uniform(0.5, 1.6), time_budget=30.0)
    assert not bad.noise.ok and bad.noise.busy
    assert "other processes kept up to 1.5 core(s) busy" in bad.noise.warning()


# --------------------------------------------------------------------------- (b) truly ambiguous
def test_ambiguous_data_abstains_and_says_what_can_be_said():
    rng = np.random.default_rng(3)
    c = run(FakeClock(), lambda i: 1.0, lambda i: rng.uniform(0.6, 1.5), time_budget=40.0)
    assert not c.noise.ok and c.faster("b") == "cannot tell"
    lo, hi = c.speedup_interval("b")
    assert lo < 1.0 < hi
    assert "each won some of" in c.said("b") and c.noise.said == [c.said("b")]
    assert "speed-up of b over a is only known to lie between" in c.noise.warning()
    assert "What it does show: b and a each won some" in c.table()


def test_a_clear_winner_with_a_wide_interval_still_says_by_how_much_at_least():
    rng = np.random.default_rng(4)
    c = run(FakeClock(), lambda i: rng.uniform(0.9, 1.3), lambda i: rng.uniform(0.2, 0.55), time_budget=8.0)
    assert not c.noise.ok                                  # +-15% not reached within the budget ...
    assert c.faster("b", by=1.5) == "yes"                  # ... but the question 'at least 1.5x?' is decided
    assert c.faster("b", by=4.0) == "cannot tell"
    every = min(ta / tb for ta, tb in zip(c.timings["a"].times, c.timings["b"].times))
    assert every > 1.6 and f"b was at least {every:.2f}x faster than a in every one of" in c.noise.said[0]
    assert c.noise.faster("b", by=1.5) == "yes"            # the noise answers it too, after merging
    merged = timing.Noise() | c.noise
    assert merged.faster("b", by=1.5) == "yes" and merged.said == c.noise.said
    with pytest.raises(ValueError, match="name: no measured ratio for 'z'"):
        merged.faster("z")


# --------------------------------------------------------------------------- (c) adaptive rounds
def test_rounds_are_added_until_the_interval_is_narrow():
    rng = np.random.default_rng(5)
    c = run(FakeClock(), lambda i: 1.0, lambda i: 0.5 * rng.uniform(0.7, 1.4), repeat=5, time_budget=1e6)
    n = len(c.timings["a"].times)
    assert 5 < n < 1000 and c.noise.ok and len(c.timings["b"].times) == n
    assert c.pairs("b").narrow and not intervals.Ratio("b", "a", c.pairs("b").values[:-1]).narrow


def test_rounds_stop_when_the_budget_is_spent():
    rng = np.random.default_rng(6)
    c = run(FakeClock(), lambda i: 1.0, lambda i: rng.uniform(0.5, 1.5), repeat=3, time_budget=20.0)
    n = len(c.timings["a"].times)
    assert n == 10      # each round costs 2 fake seconds on average: the 20 s budget ends it at about 10
    slow = run(FakeClock(), lambda i: 30.0, lambda i: 15.0 * rng.uniform(0.5, 1.5), repeat=2, time_budget=20.0)
    assert len(slow.timings["a"].times) == 2               # rounds asked for are always run, never more here
    capped = run(FakeClock(), lambda i: 1.0, lambda i: rng.uniform(0.5, 1.5), time_budget=1e6, max_rounds=50)
    assert len(capped.timings["a"].times) == 50


def test_calibration_makes_a_round_last_min_time():
    clock = FakeClock()
    calls = {"a": 0}

    def a():
        calls["a"] += 1
        clock.spend(1e-5)

    c = timing.compare(a=a, b=a, clock=clock, warmup=1, repeat=3, min_time=1e-3, time_budget=0.0)
    assert c.timings["a"].number == 100 and c.timings["a"].times == pytest.approx([1e-5] * 3)
    assert calls["a"] == 2 * (1 + 3 * 100)


def test_cpu_clock_is_a_named_hook(monkeypatch):
    clock = FakeClock()
    monkeypatch.setitem(timing.CLOCKS, "cpu", clock)
    c = timing.compare(clock="cpu", warmup=0, **fns(clock, lambda i: 2.0, lambda i: 1.0))
    assert c.speedup("b") == 2.0 and c.timings["a"].times == [2.0] * 5


def test_threaded_code_under_load_is_not_trusted():
    """A BLAS pool spins while a peer waits for a core: the run queue's wait stays small, yet a function on two
    threads loses far more to another program than its pair (seen: numpy 10x slower than Halide under one
    `yes`, against 2.3x faster quiet). Pairs cannot cancel it: abstain, naming the threads each ran on."""
    from course_lib.core.noise import noise_of_pairs

    def ratio(used):
        return intervals.Ratio.from_times("threaded", "serial", [1.0] * 8, [2.0] * 8, waited=(0.1, 0.1), used=used)

    loaded = noise_of_pairs([ratio((2, 1))], others=1.0)
    assert not loaded.ok and loaded.biased and loaded.ratios[0].biased
    assert "threaded code ran while other processes held a core (threads: threaded 2, serial 1)" in loaded.warning()
    assert noise_of_pairs([ratio((2, 1))], others=0.05).ok          # quiet: threads are what is measured
    assert noise_of_pairs([ratio((1, 1))], others=1.0).ok           # one thread each: pairs cancel the load
    assert noise_of_pairs([ratio(None)], others=1.0).ok             # not measured (a CPU-clock comparison)


def test_compare_counts_the_threads_a_function_ran_on():
    from concurrent.futures import ThreadPoolExecutor

    def spin(s=0.01):
        t = time.perf_counter() + s
        while time.perf_counter() < t:
            pass

    with ThreadPoolExecutor(2) as pool:
        c = timing.compare(one=spin, two=lambda: list(pool.map(lambda _: spin(), range(2))), repeat=3, warmup=1)
    # the caller counts; so may a stray thread of an earlier test (a pool still spinning): never fewer than ran
    assert c.threads["one"] >= 1 and c.threads["two"] >= 2
    assert timing.compare(one=spin, two=spin, repeat=2, clock="cpu").threads == {}


def test_floor_ratio_judges_by_the_fastest_rounds_only_where_they_form_a_floor():
    slowed = [3.0, 1.0, 2.8, 1.05, 3.1, 1.02, 2.9, 3.0, 2.7, 3.2]        # a threaded function another program hit
    steady = [2.0] * 10
    ratio, lo, hi = intervals.floor_ratio(slowed, steady)
    assert ratio == pytest.approx(0.5) and lo == pytest.approx(0.5 / intervals.FLOOR_SLACK)
    assert hi == pytest.approx(1.05 / 2.0 * intervals.FLOOR_SLACK)              # the 3rd fastest, widened
    assert intervals.floor_ratio(slowed[:9], steady[:9]) is None               # too few rounds
    fluke = [3.0, 1.0, 2.8, 2.5, 3.1, 2.6, 2.9, 3.0, 2.7, 3.2]                 # one fast round: no floor
    assert intervals.floor_ratio(fluke, steady) is None


def test_threaded_code_under_load_is_judged_by_its_floor_when_it_has_one():
    """The median pair ratio of threaded code under load is skewed (here 1.4x *slower*); its fastest rounds, which
    the other program left alone, show the quiet ratio (2x faster) -- and a verdict concludes from them."""
    from course_lib.core.noise import noise_of_pairs
    from course_lib.teaching.verdict import verdict

    slowed = [3.0, 1.0, 2.8, 1.05, 3.1, 1.02, 2.9, 3.0, 2.7, 3.2]
    r = intervals.Ratio.from_times("threaded", "serial", slowed, [2.0] * 10, waited=(0.1, 0.1), used=(2, 1))
    assert r.median == pytest.approx(1.425)                                     # the pairs: skewed
    noise = noise_of_pairs([r], others=1.0)
    assert not noise.ok and not noise.biased and r.by_floor and not r.biased
    assert r.median == pytest.approx(0.5) and r.faster(1.5) == "yes"           # the floors: 2x faster
    assert "judged by its fastest rounds" in noise.warning() and "fastest rounds" in r.said()
    lo, hi = r.speedup_interval
    line = verdict("000.halide.fig12.parallel_ideal", 1 / r.median, here="2 cores", noise=noise, interval=(lo, hi))
    assert line.outcome == "smaller" and "but every value between" in line
    fluke = intervals.Ratio.from_times("threaded", "serial", [3.0, 1.0] + [2.8] * 8, [2.0] * 10, used=(2, 1))
    assert noise_of_pairs([fluke], others=1.0).biased                           # no floor: still no verdict
