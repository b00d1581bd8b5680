"""course_lib.models.halide_rnn: every schedule computes the reference SGD step; clear errors."""
import dataclasses

import numpy as np
import pytest

from course_lib.models import halide_rnn as H
from course_lib.models import rnn
from helpers import raises_naming

ok, why = H.available()
pytestmark = pytest.mark.skipif(not ok, reason=f"halide unavailable: {why}")

# shapes that are not multiples of the 64 x 16 tiles or the 16 lanes (B=70 spans two row tiles)
SHAPES = [(3, 70, 37, 45, 29), (2, 1, 5, 17, 3)]


def _problem(T, B, nx, nh, ny, seed=0):
    p = rnn.init_params(nx, nh, ny, seed=seed)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (T, B, nx)).astype(np.float32)
    Y = rng.uniform(-1, 1, (T, B, ny)).astype(np.float32)
    return p, X, Y


def _assert_same_step(got, loss, p, X, Y, lr):
    ref = rnn.sgd_step(p, rnn.bptt_linear(p, X, Y), lr)
    ref_loss = rnn.loss(rnn.forward(p, X).Yhat, Y)
    assert type(got) is type(p)
    for name in ("Wxh", "Whh", "Why"):
        g, r = getattr(got, name), getattr(ref, name)
        assert g.dtype == np.float32 and g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(r))), err_msg=name)
    assert loss == pytest.approx(ref_loss, rel=1e-5)


@pytest.mark.parametrize("name", list(H.SCHEDULES))
def test_every_schedule_equals_reference_step(name):
    for shape in SHAPES:
        p, X, Y = _problem(*shape)
        new, loss = H.train_step(p, X, Y, 0.05, schedule=name)
        _assert_same_step(new, loss, p, X, Y, 0.05)


def test_custom_schedule_odd_tiles_and_inputs_unchanged():
    p, X, Y = _problem(*SHAPES[0], seed=3)
    before = p.copy()
    sched = H.make_schedule(tile=(7, 5), vector=8, parallel=True)
    new, loss = H.train_step(p, X, Y, 0.1, schedule=sched)
    _assert_same_step(new, loss, p, X, Y, 0.1)
    for name in ("Wxh", "Whh", "Why"):  # the step returns new arrays
        np.testing.assert_array_equal(getattr(p, name), getattr(before, name))


def test_fig10_has_the_eight_combinations_and_special_schedules():
    assert len(H.FIG10_NAMES) == 8 and len(set(H.FIG10_NAMES)) == 8
    keys = {H.SCHEDULES[n].key() for n in H.FIG10_NAMES}
    assert len(keys) == 8  # eight different loop arrangements
    best = H.SCHEDULES["tiled+simd+parallel"]
    assert best.tile == (64, 16) and best.vector == 16 and best.parallel
    assert H.SCHEDULES["fused"].fused and H.SCHEDULES["specialized"].elementwise == "rows"
    assert H.SCHEDULES["jit_per_call"].compile == "per_call"


def test_compiled_once_and_cached_but_jit_per_call_is_not():
    a = H.compiled_step("tiled+simd")
    assert H.compiled_step("tiled+simd") is a
    assert H.compiled_step("jit_per_call") is not H.compiled_step("jit_per_call")


def test_returns_same_dataclass_type_for_other_param_types():
    @dataclasses.dataclass
    class MyParams:
        Wxh: np.ndarray
        Whh: np.ndarray
        Why: np.ndarray
        note: str = "kept"

    p, X, Y = _problem(*SHAPES[1])
    mine = MyParams(p.Wxh, p.Whh, p.Why)
    new, _ = H.train_step(mine, X, Y, 0.01, schedule="simd")
    assert isinstance(new, MyParams) and new.note == "kept"


def test_loop_nest_shows_the_schedule():
    serial = H.loop_nest("serial")
    best = H.loop_nest("tiled+simd+parallel")
    assert "vectorized" not in serial and "parallel" not in serial
    assert "vectorized" in best and "parallel" in best and ".io" in best and ".ji" in best
    assert H.loop_nest("tiled+simd+parallel") == best  # deterministic text
    assert "produce hidden_prod" not in H.loop_nest("fused")
    with pytest.raises(ValueError, match="stage"):
        H.loop_nest("serial", stage="nope")


def test_bad_schedule_name_and_params():
    p, X, Y = _problem(*SHAPES[1])
    with pytest.raises(ValueError, match="schedule"):
        H.train_step(p, X, Y, 0.1, schedule="fastest")
    with pytest.raises(ValueError, match="tile"):
        H.make_schedule(tile=(0, 16))
    with pytest.raises(ValueError, match="vector"):
        H.make_schedule(vector=12)
    with pytest.raises(ValueError, match="lr"):
        H.train_step(p, X, Y, -1.0)
    with pytest.raises(TypeError, match="params"):
        H.train_step(object(), X, Y, 0.1)


def test_bad_shapes_and_dtypes_name_the_argument():
    p, X, Y = _problem(*SHAPES[1])
    with pytest.raises(ValueError, match="X"):
        H.train_step(p, X[:, :, :-1], Y, 0.1)
    with pytest.raises(ValueError, match="Y"):
        H.train_step(p, X, Y[:, :, :-1], 0.1)
    with pytest.raises(ValueError, match="Y"):
        H.train_step(p, X, Y[:1], 0.1)
    with pytest.raises(ValueError, match="X"):
        H.train_step(p, X[0], Y, 0.1)
    with pytest.raises(ValueError, match="params.Whh"):
        H.train_step(dataclasses.replace(p, Whh=p.Whh[:, :-1]), X, Y, 0.1)
    with pytest.raises(TypeError, match="X"):
        H.train_step(p, X.astype(np.float64), Y, 0.1)


def test_worksheet_helpers():
    st = H.apply_schedule(H.hidden_stage(), "tiled+simd+parallel")
    fn = H.compile_hidden(st)
    rng = np.random.default_rng(1)
    P, hp, W = (rng.standard_normal(s).astype(np.float32) for s in ((5, 33), (5, 20), (20, 33)))
    np.testing.assert_allclose(fn(P, hp, W), np.tanh(P + hp @ W), rtol=1e-5, atol=1e-5)
    assert "vectorized" in fn.loop_nest
    two = H.compile_func(H.backward_two_stage, 4)
    dH, dn, WT, h = (rng.standard_normal(s).astype(np.float32) for s in ((5, 9), (5, 9), (9, 9), (5, 9)))
    np.testing.assert_allclose(two(dH, dn, WT, h), (dH + dn @ WT) * (1 - h * h), rtol=1e-5, atol=1e-5)
    assert two.stages == 2


# --------------------------------------------------------------------------- bad input: the helpers
@pytest.mark.timeout(60)
def test_halide_helpers():
    raises_naming(ValueError, "T", H.step_flops, -1, 1, 1, 1, 1)
    raises_naming(TypeError, "nh", H.step_flops, 1, 1, 1, "2", 1)
    assert H.step_flops(np.int64(1), 1, 1, 1, 1) == 16
    raises_naming(TypeError, "fn", H.capture_stderr, None)
    raises_naming(TypeError, "loop_nest_text", H.count_stages, None)
    raises_naming(ValueError, "elementwise", H.Schedule, "x", elementwise="outside")
    raises_naming(ValueError, "tile", H.Schedule, "x", tile=(0, 4))
    raises_naming(TypeError, "parallel", H.Schedule, "x", parallel="yes")
    raises_naming(TypeError, "stage", H.compile_hidden, None)


# ---- issue 29: the compiled pipelines check what they are given ----------------------------------------------
def test_compiled_pipelines_refuse_invalid_input():
    g = H.compiled_step("tiled+simd")["gemm"]
    A, B, C = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32), np.empty((4, 5), np.float32)
    g(A, B, C)
    np.testing.assert_allclose(C, 3.0)
    raises_naming(ValueError, "B", g, A, np.ones((5, 3), np.float32), C)
    raises_naming(ValueError, "A", g, A * np.nan, B, C)
    raises_naming(TypeError, "A", g, A.astype(np.float64), B, C)
    raises_naming(ValueError, "out", g, A, B, np.empty((4, 4), np.float32))
    raises_naming(TypeError, "out", g, A, B, [[0.0] * 5] * 4)
    raises_naming(TypeError, "gemm", g, A, B)
    raises_naming(ValueError, "A", g, A[:0], B, C[:0])
    up = H.compiled_step("tiled+simd")["grad_update"]
    raises_naming(ValueError, "lr", up, A, np.ones((4, 5), np.float32), np.ones((3, 5), np.float32), float("nan"),
                  np.empty((3, 5), np.float32))
    f = H.compile_func(H.backward_two_stage, 4)
    raises_naming(TypeError, "arrays", f, A, A, A)
    raises_naming(ValueError, "arrays[1]", f, A, A * np.inf, A, A)


def test_train_step_refuses_an_overflowing_lr():
    p = rnn.init_params(3, 4, 2)
    X = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    Y = np.random.default_rng(1).standard_normal((5, 2, 2)).astype(np.float32)
    raises_naming(FloatingPointError, "lr", H.train_step, p, X, Y, 1e38, schedule="tiled+simd")


@pytest.mark.parametrize("flag", ["parallel", "fused"])
@pytest.mark.parametrize("value", [1, "yes", None, 0.0])
def test_make_schedule_flags_are_booleans(flag, value):
    """issue 39: ``parallel="no"`` made a parallel schedule (bool("no") is True)."""
    from course_lib.models.halide_schedules import make_schedule
    raises_naming(TypeError, flag, make_schedule, **{flag: value})
