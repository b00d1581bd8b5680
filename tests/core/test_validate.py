import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.core import validate as v
from helpers import BAD_SIZES, raises_naming


def test_check_array_accepts_and_binds_dims():
    dims = {}
    X = v.check_array(np.zeros((5, 3, 8), np.float32), "X", shape=("T", "B", 8), dims=dims)
    assert X.shape == (5, 3, 8) and dims == {"T": 5, "B": 3}
    v.check_array(np.zeros((5, 3, 2)), "Y", shape=("T", "B", None), dims=dims)


def test_shape_mismatch_names_argument_and_shapes():
    dims = {"T": 5}
    with pytest.raises(ValueError, match=r"Y: expected shape \(T=5, B, 2\).*got \(4, 3, 2\)"):
        v.check_array(np.zeros((4, 3, 2)), "Y", shape=("T", "B", 2), dims=dims)
    with pytest.raises(ValueError, match=r"X: expected a 3-D array.*got a 2-D array of shape \(4, 3\)"):
        v.check_array(np.zeros((4, 3)), "X", shape=("T", "B", 8))
    with pytest.raises(ValueError, match=r"W: expected shape \(8, 4\), got \(4, 8\)"):
        v.check_array(np.zeros((4, 8)), "W", shape=(8, 4))


def test_dtype_rules():
    with pytest.raises(TypeError, match="X: expected a float32 or float64 array, got dtype int64"):
        v.check_array(np.zeros(3, np.int64), "X")
    with pytest.raises(TypeError, match="ids: expected an integer array, got dtype float64"):
        v.check_array(np.zeros(3), "ids", dtype="int")
    with pytest.raises(TypeError, match="X: expected dtype float32, got float64"):
        v.check_array(np.zeros(3), "X", dtype=np.float32)
    with pytest.raises(TypeError, match="X: expected dtype float64, got float32"):
        v.check_array(np.zeros(3, np.float32), "X", dtype=np.float64)
    with pytest.raises(TypeError, match="X: expected dtype float64, got float32"):
        v.check_array(np.zeros(3, np.float32), "X", dtype=np.dtype("float64"))
    with pytest.raises(TypeError, match="X: expected an array, got None"):
        v.check_array(None, "X")
    with pytest.raises(TypeError, match="X: expected a numeric array"):
        v.check_array([object()], "X")


def test_non_finite_rejected_with_location():
    x = np.zeros((2, 3))
    x[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"X: contains 1 non-finite value\(s\); the first is nan at index \(1, 2\)"):
        v.check_array(x, "X")
    v.check_array(x, "X", finite=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_finite_check_sees_through_sums_that_overflow_or_cancel(dtype):
    """check_finite clears an array by its sum when the sum is finite; a sum that overflows (huge finite values) or
    a NaN/inf between them falls back to the element check: the verdict is always the elements'."""
    big = np.full(64, np.finfo(dtype).max / 2, dtype)
    v.check_array(big, "X")                            # the sum overflows, every element is finite: accepted
    for bad in (np.nan, np.inf, -np.inf):
        x = big.copy()
        x[::2] *= -1                                   # the sum cancels to 0 ...
        x[37] = bad                                    # ... and one element is not finite
        with pytest.raises(ValueError, match=r"X: contains 1 non-finite value\(s\); the first is .* at index \(37,\)"):
            v.check_array(x, "X")
    x = np.array([np.inf, -np.inf], dtype)             # inf - inf = nan: still caught
    with pytest.raises(ValueError, match="X: contains 2 non-finite"):
        v.check_array(x, "X")


def test_min_size_ndim_and_contiguity():
    with pytest.raises(ValueError, match=r"X: T \(axis 0\) must be >= 1, got shape \(0, 2, 3\)"):
        v.check_array(np.zeros((0, 2, 3)), "X", shape=("T", "B", 3), min_size={"T": 1})
    with pytest.raises(ValueError, match="a: expected a 2-D or 3-D array, got shape"):
        v.check_array(np.zeros(4), "a", ndim=(2, 3))
    with pytest.raises(ValueError, match="A: expected a C-contiguous array"):
        v.check_array(np.zeros((4, 4)).T[:, ::2], "A", contiguous=True)


def test_same_shape():
    v.check_same_shape(np.zeros(3), "a", np.zeros(3), "x")
    with pytest.raises(ValueError, match=r"x: expected the same shape as a \(3,\), got \(4,\)"):
        v.check_same_shape(np.zeros(3), "a", np.zeros(4), "x")


def test_scalars():
    assert v.check_int(3, "n", low=1) == 3
    assert v.check_int(np.int64(3), "n") == 3
    with pytest.raises(TypeError, match="n: expected an integer, got bool True"):
        v.check_int(True, "n")
    with pytest.raises(TypeError, match="n: expected an integer, got float 2.5"):
        v.check_int(2.5, "n")
    with pytest.raises(ValueError, match="n: expected an integer >= 1, got 0"):
        v.check_positive_int(0, "n")
    with pytest.raises(ValueError, match="threads: expected an integer <= 4, got 9"):
        v.check_int(9, "threads", low=1, high=4)
    assert v.check_float(0.5, "lr", low=0, low_inclusive=False) == 0.5
    with pytest.raises(ValueError, match="lr: expected a number > 0"):
        v.check_float(0.0, "lr", low=0, low_inclusive=False)
    with pytest.raises(ValueError, match="lr: expected a finite number, got nan"):
        v.check_float(float("nan"), "lr")
    with pytest.raises(TypeError, match="lr: expected a number, got str"):
        v.check_float("0.1", "lr")
    with pytest.raises(ValueError, match="lr: expected a number <= 1"):
        v.check_float(2.0, "lr", high=1)


def test_choice_and_power_of_two():
    assert v.check_choice("a", "method", ["a", "b"]) == "a"
    with pytest.raises(ValueError, match="method: expected one of 'a', 'b', got 'c'"):
        v.check_choice("c", "method", ["a", "b"])
    assert v.check_power_of_two(64, "block") == 64
    with pytest.raises(ValueError, match="block: expected a power of two, got 48"):
        v.check_power_of_two(48, "block")


# --------------------------------------------------------------------------- bad input
# a ValueError/TypeError naming the argument, or the right answer; never NaN, a hang or a crash
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(30)
@FAST
@given(BAD_SIZES)
def test_check_positive_int_rejects_non_sizes(bad):
    if isinstance(bad, int) and not isinstance(bad, bool) and bad >= 1:
        return
    raises_naming((TypeError, ValueError), "n", v.check_positive_int, bad, "n")


@pytest.mark.timeout(30)
@FAST
@given(st.integers(min_value=0, max_value=2**62))
def test_numpy_integers_are_accepted_and_become_python_ints(n):
    out = v.check_int(np.int64(n), "n", low=0)
    assert out == n and type(out) is int


@pytest.mark.timeout(30)
def test_bools_rejected_where_numbers_are_wanted():
    for b in (True, np.bool_(False)):
        raises_naming(TypeError, "n", v.check_int, b, "n")
        raises_naming(TypeError, "x", v.check_float, b, "x")
    assert v.check_bool(np.bool_(True), "flag") is True
    raises_naming(TypeError, "flag", v.check_bool, 1, "flag")


@pytest.mark.timeout(30)
def test_check_alloc_names_the_argument_and_the_memory_before_allocating():
    with pytest.raises(ValueError, match=r"T: too large: .* would need 149 TiB; the limit here is"):
        v.check_alloc((10**10 + 1, 8, 16, 16), np.float64, "T")
    assert v.check_alloc((3, 4), np.float32, "X") == 48
    raises_naming(ValueError, "X", v.check_alloc, (10, 10), np.float64, "X", limit=799)


@pytest.mark.timeout(30)
def test_check_dtype_and_to_builtin():
    assert v.check_dtype("float32") == np.float32
    raises_naming(TypeError, "dtype", v.check_dtype, np.int32)
    raises_naming(TypeError, "dtype", v.check_dtype, "not a dtype")
    data = {"repeat": np.int64(3), "ms": [np.float32(0.5)], "pair": (np.int8(1), 2), "a": np.arange(2)}
    assert json.loads(json.dumps(v.to_builtin(data))) == {"repeat": 3, "ms": [0.5], "pair": [1, 2], "a": [0, 1]}


@pytest.mark.timeout(30)
def test_check_choice_with_unhashable_or_array_values():
    raises_naming(ValueError, "method", v.check_choice, np.arange(3), "method", ("a", "b"))
    raises_naming(ValueError, "method", v.check_choice, [1], "method", ("a", "b"))


def test_read_json_names_the_argument_and_the_file(tmp_path):
    from course_lib.core.validate import read_json

    good = tmp_path / "good.json"
    good.write_text('{"a": [1, 2]}', encoding="utf-8")
    assert read_json(good, "path", "a record") == {"a": [1, 2]}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^directory: .*bad\.json' is not a record \(not JSON"):
        read_json(bad, "directory", "a record")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="^path: .* is not a saved Machine"):
        read_json(binary, "path", "a saved Machine")
    with pytest.raises(FileNotFoundError, match=r"^path: .*absent\.json' does not exist \(expected a record\)"):
        read_json(tmp_path / "absent.json", "path", "a record")
    with pytest.raises(TypeError, match="^path: expected a file name"):
        read_json(3, "path", "a record")
