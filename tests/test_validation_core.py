"""Issue 18, core layer: bad input gives a ValueError/TypeError naming the argument (or a right answer),
never NaN, a hang or an allocation attempt. Property-based (hypothesis) plus the issue's regressions."""
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.core import mpi, optim, results, timing, validate as v
from helpers import raises_naming

pytestmark = pytest.mark.timeout(30)
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# anything that is not a usable size: negatives, bools, floats, strings, None, numpy bools
BAD_SIZES = st.one_of(st.integers(max_value=-1), st.booleans(), st.floats(), st.text(max_size=3), st.none(),
                      st.just(np.bool_(True)), st.just(3.0), st.just("3"))


# --------------------------------------------------------------------------- validate
@FAST
@given(BAD_SIZES)
def test_check_positive_int_rejects_non_sizes(bad):
    if isinstance(bad, int) and not isinstance(bad, bool) and bad >= 1:
        return
    raises_naming((TypeError, ValueError), "n", v.check_positive_int, bad, "n")


@FAST
@given(st.integers(min_value=0, max_value=2**62))
def test_numpy_integers_are_accepted_and_become_python_ints(n):
    out = v.check_int(np.int64(n), "n", low=0)
    assert out == n and type(out) is int


def test_bools_rejected_where_numbers_are_wanted():
    for b in (True, np.bool_(False)):
        raises_naming(TypeError, "n", v.check_int, b, "n")
        raises_naming(TypeError, "x", v.check_float, b, "x")
    assert v.check_bool(np.bool_(True), "flag") is True
    raises_naming(TypeError, "flag", v.check_bool, 1, "flag")


def test_check_alloc_names_the_argument_and_the_memory_before_allocating():
    with pytest.raises(ValueError, match=r"T: too large: .* would need 149 TiB; the limit here is"):
        v.check_alloc((10**10 + 1, 8, 16, 16), np.float64, "T")
    assert v.check_alloc((3, 4), np.float32, "X") == 48
    raises_naming(ValueError, "X", v.check_alloc, (10, 10), np.float64, "X", limit=799)


def test_check_dtype_and_to_builtin():
    assert v.check_dtype("float32") == np.float32
    raises_naming(TypeError, "dtype", v.check_dtype, np.int32)
    raises_naming(TypeError, "dtype", v.check_dtype, "not a dtype")
    data = {"repeat": np.int64(3), "ms": [np.float32(0.5)], "pair": (np.int8(1), 2), "a": np.arange(2)}
    assert json.loads(json.dumps(v.to_builtin(data))) == {"repeat": 3, "ms": [0.5], "pair": [1, 2], "a": [0, 1]}


def test_check_choice_with_unhashable_or_array_values():
    raises_naming(ValueError, "method", v.check_choice, np.arange(3), "method", ("a", "b"))
    raises_naming(ValueError, "method", v.check_choice, [1], "method", ("a", "b"))


# --------------------------------------------------------------------------- optim.Adam
@pytest.mark.parametrize("kw, name", [({"b1": 1.0}, "b1"), ({"b2": 1.0}, "b2"), ({"b1": -0.1}, "b1"),
                                      ({"b1": True}, "b1"), ({"eps": 0.0}, "eps"), ({"clip": -1.0}, "clip")])
def test_adam_rejects_settings_that_give_nan_weights(kw, name):
    raises_naming((ValueError, TypeError), name, optim.Adam, [np.zeros(3)], 0.1, **kw)


def test_adam_rejects_bad_params_and_grads():
    raises_naming(TypeError, "lr", optim.Adam, [np.zeros(3)], None)
    raises_naming(TypeError, "params[0]", optim.Adam, [np.zeros(3, np.int64)], 0.1)
    raises_naming(ValueError, "params[0]", optim.Adam, [np.array([np.nan])], 0.1)
    opt = optim.Adam([np.zeros(3)], 0.1)
    raises_naming(TypeError, "grads", opt.step, np.zeros(3))
    raises_naming(ValueError, "grads[0]", opt.step, [np.zeros(4)])
    raises_naming(TypeError, "grads[0]", opt.step, [np.array(["a", "b", "c"])])


@FAST
@given(b1=st.floats(0, 0.999), b2=st.floats(0, 0.999), lr=st.floats(1e-6, 1.0))
def test_adam_valid_settings_never_make_nan(b1, b2, lr):
    w = np.ones(4)
    opt = optim.Adam([w], lr, b1=b1, b2=b2)
    for _ in range(3):
        opt.step([np.full(4, 0.5)])
    assert np.all(np.isfinite(w))


# --------------------------------------------------------------------------- timing counters
@FAST
@given(BAD_SIZES)
def test_flop_counters_reject_bad_sizes(bad):
    raises_naming((TypeError, ValueError), "m", timing.gemm_flops, bad, 2, 3)
    raises_naming((TypeError, ValueError), "k", timing.gemv_flops, 2, bad)
    raises_naming((TypeError, ValueError), "n", timing.gemm_intensity, 2, bad, 3)


@FAST
@given(st.integers(1, 2**40), st.integers(1, 2**40), st.integers(1, 2**40))
def test_gemm_flops_exact_with_numpy_ints(m, n, k):
    got = timing.gemm_flops(np.int64(m), np.int64(n), np.int64(k))
    assert got == 2 * m * n * k and type(got) is int          # no int64 overflow


def test_gflops_array_bytes_and_slope_reject_garbage():
    raises_naming(TypeError, "flops", timing.gflops, "1e9", 1.0)
    raises_naming(ValueError, "flops", timing.gflops, float("nan"), 1.0)
    raises_naming((TypeError, ValueError), "seconds", timing.gflops, 1e9, "2")
    raises_naming(ValueError, "seconds", timing.gflops, 1e9, 0.0)
    raises_naming(TypeError, "arrays[1]", timing.array_bytes, np.zeros(2), None)
    raises_naming(TypeError, "arrays[0]", timing.array_bytes, ["a", "b"])
    raises_naming(TypeError, "sizes", timing.loglog_slope, ["a", "b"], [1, 2])
    raises_naming(ValueError, "sizes", timing.loglog_slope, [4, 4, 4], [1, 2, 3])
    raises_naming(ValueError, "times", timing.loglog_slope, [1, 2], [[1, 2]])
    assert timing.loglog_slope([1, 2, 4], [1, 4, 16]) == pytest.approx(2.0)


# --------------------------------------------------------------------------- results
def test_train_result_checks():
    r = results.TrainResult(None, {"loss": [3.0, 2.0, 1.0]}, 1.0)
    assert r.last() == 1.0 and r.final(frac=1.0) == 2.0
    raises_naming(ValueError, "frac", r.final, "loss", 0.0)
    raises_naming(ValueError, "frac", r.final, "loss", float("nan"))
    raises_naming(TypeError, "key", r.last, ["loss"])
    raises_naming(TypeError, "history", results.TrainResult, None, [1, 2])
    raises_naming(ValueError, "seconds", results.TrainResult, None, {}, -1.0)


# --------------------------------------------------------------------------- mpi launcher
def _noop(work):
    return None


@pytest.mark.parametrize("kw, name", [
    ({"ranks": 0}, "ranks"), ({"ranks": 10**6}, "ranks"), ({"ranks": True}, "ranks"),
    ({"timeout": 0}, "timeout"), ({"timeout": float("inf")}, "timeout"), ({"timeout": 1e9}, "timeout"),
    ({"prepare": None}, "prepare"), ({"collect": 3}, "collect"),
    ({"args": "--repeat 3"}, "args"), ({"args": [None]}, "args[0]"), ({"args": [True]}, "args[0]"),
])
def test_launch_rejects_out_of_range_arguments_before_starting(kw, name):
    call = dict(ranks=1, prepare=_noop, collect=_noop, timeout=5.0) | kw
    raises_naming((TypeError, ValueError), name, mpi.launch, "course_lib.parallel.mpi_infer", **call)


def test_launch_module_and_worker_main_arguments():
    raises_naming(ValueError, "module", mpi.launch, "x y; rm", ranks=1, prepare=_noop, collect=_noop)
    raises_naming(TypeError, "body", mpi.worker_main, None, [])
    raises_naming(TypeError, "argv", mpi.worker_main, lambda *a: None, "folder")
    raises_naming(ValueError, "rank", mpi.status_file, "/tmp", -1)
    assert mpi.worker_main(lambda *a: None, ["/definitely/not/a/folder"]) == 2
