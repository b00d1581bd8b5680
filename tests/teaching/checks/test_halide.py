"""Graders of worksheet 06 (Halide): each accepts the solution and rejects wrong ones with the right message."""
import pytest

from course_lib.models import halide_rnn as H
from course_lib.teaching.checks import ExerciseFailed
from course_lib.teaching.checks import halide as C

ok, why = H.available()
pytestmark = pytest.mark.skipif(not ok, reason=f"halide unavailable: {why}")
hl = H._hl() if ok else None


# --------------------------------------------------------------------------- 6.1
def good_schedule(s):
    jo, io, ji, ii = hl.Var("jo"), hl.Var("io"), hl.Var("ji"), hl.Var("ii")
    s.h.tile(s.j, s.i, jo, io, ji, ii, 16, 64, hl.TailStrategy.GuardWithIf).vectorize(ji).parallel(io)
    s.prod.compute_at(s.h, jo).vectorize(s.j, 16, hl.TailStrategy.GuardWithIf)
    s.prod.update().reorder(s.j, s.i, s.k.x).vectorize(s.j, 16, hl.TailStrategy.GuardWithIf)


def test_61_accepts_solution(capsys, fake_clock):
    fake_clock.cost(course=1e-3, yours=1e-3)
    assert C.check_hidden_schedule(good_schedule) == "Exercise 6.1 passed: 4/4 cases"


def test_61_rejects_unscheduled():
    with pytest.raises(ExerciseFailed, match="no 'vectorized' loop"):
        C.check_hidden_schedule(lambda s: None)


def test_61_rejects_vectorised_but_untiled():
    def rows_only(s):
        s.h.vectorize(s.j, 16, hl.TailStrategy.GuardWithIf).parallel(s.i)
        s.prod.compute_at(s.h, s.i)

    with pytest.raises(ExerciseFailed, match="not tiled: the row loop h_i"):
        C.check_hidden_schedule(rows_only)


def test_61_rejects_illegal_schedule_and_changed_algorithm():
    with pytest.raises(ExerciseFailed, match="could not compile|your schedule raised"):
        C.check_hidden_schedule(lambda s: s.prod.update().parallel(s.k.x))

    def changes_definition(s):
        s.h[s.j, s.i] = s.h[s.j, s.i] * 2  # an update definition: different numbers
        good_schedule(s)

    with pytest.raises(ExerciseFailed, match="wrong numbers|your schedule raised"):
        C.check_hidden_schedule(changes_definition)


def test_61_rejects_slow_with_ratio_message(fake_clock):
    fake_clock.cost(course=1e-3, yours=1e-2)  # a tenth of the course's speed
    with pytest.raises(ExerciseFailed, match=r"only 0.10x as fast as the course's best schedule"):
        C.check_hidden_schedule(good_schedule, retries=1)
    fake_clock.cost(yours=1e-3)  # as fast as the course's
    assert C.check_hidden_schedule(good_schedule, retries=1).startswith("Exercise")


def test_61_rejects_non_function():
    with pytest.raises(ExerciseFailed, match="expected a function"):
        C.check_hidden_schedule(42)


# --------------------------------------------------------------------------- 6.2
def fused(dH, dnext, WT, Hc):
    j, i = hl.Var("j"), hl.Var("i")
    k = hl.RDom([(0, dnext.dim(0).extent())], "k")
    dpre = hl.Func("dpre")
    dpre[j, i] = (dH[j, i] + hl.sum(dnext[k.x, i] * WT[j, k.x])) * (1 - Hc[j, i] * Hc[j, i])
    return dpre


def test_62_accepts_solution():
    assert C.check_fused_backward(fused) == "Exercise 6.2 passed: 4/4 cases"


def test_62_rejects_two_stages():
    with pytest.raises(ExerciseFailed, match="still makes 2 passes"):
        C.check_fused_backward(H.backward_two_stage)


def test_62_rejects_wrong_numbers():
    def no_tanh_factor(dH, dnext, WT, Hc):
        j, i = hl.Var("j"), hl.Var("i")
        k = hl.RDom([(0, dnext.dim(0).extent())], "k")
        f = hl.Func("dpre")
        f[j, i] = dH[j, i] + hl.sum(dnext[k.x, i] * WT[j, k.x])
        return f

    def transposed(dH, dnext, WT, Hc):
        j, i = hl.Var("j"), hl.Var("i")
        k = hl.RDom([(0, dnext.dim(0).extent())], "k")
        f = hl.Func("dpre")
        f[j, i] = (dH[j, i] + hl.sum(dnext[k.x, i] * WT[k.x, j])) * (1 - Hc[j, i] * Hc[j, i])
        return f

    for wrong in (no_tanh_factor, transposed):
        with pytest.raises(ExerciseFailed, match="wrong numbers on case"):
            C.check_fused_backward(wrong)


def test_62_rejects_not_a_func():
    with pytest.raises(ExerciseFailed, match="expected a function returning an hl.Func"):
        C.check_fused_backward(lambda dH, dnext, WT, Hc: None)
    with pytest.raises(ExerciseFailed, match="expected a function"):
        C.check_fused_backward("dpre")


def test_unsolved_exercise_passes_not_implemented_through():
    def todo(*args):
        raise NotImplementedError

    with pytest.raises(NotImplementedError):
        C.check_hidden_schedule(todo)
    with pytest.raises(NotImplementedError):
        C.check_fused_backward(todo)


# --------------------------------------------------------------------------- issue 17: crashes and slow schedules named
def test_62_runtime_error_is_explained_not_raised():
    def out_of_bounds(dH, dnext, WT, Hc):
        j, i = hl.Var("j"), hl.Var("i")
        k = hl.RDom([(0, dnext.dim(0).extent())], "k")
        f = hl.Func("dpre")
        f[j, i] = (dH[j, i] + hl.sum(dnext[i, k.x] * WT[j, k.x])) * (1 - Hc[j, i] * Hc[j, i])
        return f

    with pytest.raises(ExerciseFailed, match=r"(?s)compiled but failed when run on case \d/4.*Hint: index every input"):
        C.check_fused_backward(out_of_bounds)


def test_61_slow_message_names_what_the_nest_lacks(fake_clock):
    def serial_scalar_update(s):
        jo, io, ji, ii = hl.Var("jo"), hl.Var("io"), hl.Var("ji"), hl.Var("ii")
        s.h.tile(s.j, s.i, jo, io, ji, ii, 16, 64, hl.TailStrategy.GuardWithIf).vectorize(ji)
        s.prod.compute_at(s.h, jo)

    fake_clock.cost(course=1e-3, yours=1e-2)
    with pytest.raises(ExerciseFailed, match=r"(?s)no loop is parallel.*loop over k\) is scalar"):
        C.check_hidden_schedule(serial_scalar_update, retries=1)


# --------------------------------------------------------------------------- 6.1: speed checks that judge the answer
def _pipeline_that(monkeypatch, change):
    """Make the course compile the student's schedule into a pipeline that behaves as ``change(run)`` says on
    the timed size (64, 512), the way a gamed or mutating pipeline would; right on the small cases."""
    real = H.compile_hidden

    def compile_hidden(stage):
        run = real(stage)

        def wrapped(P, h_prev, W):
            return change(run, P, h_prev, W) if P.shape == C.SPEED_SHAPE else run(P, h_prev, W)
        wrapped.loop_nest = run.loop_nest
        return wrapped
    monkeypatch.setattr(C.H, "compile_hidden", compile_hidden)


def test_61_a_cached_result_while_timed_is_a_gamed_timer(fake_clock, monkeypatch):
    cache = {}

    def cached(run, P, h_prev, W):
        if "h" not in cache:
            cache["h"] = run(P, h_prev, W)
        return cache["h"]
    _pipeline_that(monkeypatch, cached)
    fake_clock.cost(course=1e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 6\.1 failed on the speed test \(B=64, n=512[\s\S]*gamed timer"):
        C.check_hidden_schedule(good_schedule)


def test_61_a_pipeline_changing_its_input_while_timed_is_named(fake_clock, monkeypatch):
    def mutating(run, P, h_prev, W):
        out = run(P, h_prev, W)
        P[0, 0] = 0.0
        return out
    _pipeline_that(monkeypatch, mutating)
    fake_clock.cost(course=1e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"changed its input 'P' in place"):
        C.check_hidden_schedule(good_schedule)


def test_61_far_too_slow_fails_even_on_a_busy_machine(fake_clock, busy_machine):
    fake_clock.cost(course=1e-3, yours=100e-3)
    with pytest.raises(ExerciseFailed, match=r"only 0\.01x as fast[\s\S]*whole interval lies below the bar"):
        C.check_hidden_schedule(good_schedule)


def test_61_one_bad_measurement_does_not_fail_a_correct_schedule(fake_clock, monkeypatch):
    """Issue 39: a correct schedule measured 1.02x and then 0.28x against a 0.25 bar on two quiet runs. Here its
    first measurement is 10x slower than the course's (wholly below the bar: a bad run) and the next at par: it
    passes -- a fail needs every measurement wholly below the bar."""
    calls = {"n": 0}

    def bad_first_run(run, P, h_prev, W):
        calls["n"] += 1
        fake_clock.advance(10e-3 if calls["n"] <= 7 else 1e-3)
        return run(P, h_prev, W)
    _pipeline_that(monkeypatch, bad_first_run)
    fake_clock.cost(course=1e-3, yours=0.0)
    assert C.check_hidden_schedule(good_schedule) == "Exercise 6.1 passed: 4/4 cases"
    assert calls["n"] > 7                                           # measured again after the bad run


def test_61_passes_twice_in_a_row(fake_clock):
    fake_clock.cost(course=1e-3, yours=1e-3)
    for _ in range(2):
        assert C.check_hidden_schedule(good_schedule) == "Exercise 6.1 passed: 4/4 cases"


def test_61_a_pipeline_changing_its_input_on_a_case_is_named(monkeypatch):
    def mutating(run, P, h_prev, W):
        out = run(P, h_prev, W)
        h_prev[0, 0] = 0.0
        return out
    real = H.compile_hidden

    def compile_hidden(stage):
        run = real(stage)

        def wrapped(P, h_prev, W):
            return mutating(run, P, h_prev, W)
        wrapped.loop_nest = run.loop_nest
        return wrapped
    monkeypatch.setattr(C.H, "compile_hidden", compile_hidden)
    with pytest.raises(ExerciseFailed, match=r"on case 1/4 \(B=1, n_in=1, n_out=1\) your pipeline changed its input "
                                             r"'h_prev' in place"):
        C.check_hidden_schedule(good_schedule)
