"""course_lib.experiments.scan.stream_share / limit_reason and scan_kernels.stream (issue 42 item 5): the streaming
reference computes exactly a + x; the share data are well formed and consistent with their own timings; the limit
named is the lower of the two measured bounds; bad input is named. No timed assertions (the machine is shared)."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (before numba)
from course_lib.algorithms import scan_kernels
from course_lib.experiments import scan as xs
from helpers import raises_naming


@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (scan_kernels.STREAM_BLOCK + 5, 1), (3, 2 * scan_kernels.STREAM_BLOCK + 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stream_is_exactly_a_plus_x(shape, dtype):
    rng = np.random.default_rng(0)
    a, x = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    h = np.full(shape, np.nan, dtype)
    scan_kernels.stream(a, x, h)
    assert np.array_equal(h, a + x)


@pytest.mark.parametrize("nh", [1, 32])
def test_stream_share_is_well_formed_and_consistent(nh):
    r = xs.stream_share(2048, nh, chunks=(64,), repeat=1)
    scans = {"chunked", "channels", "chunked, chunk=64"}
    assert set(r["share"]) == scans == set(r["share_interval"]) == set(r["of_limit"]) == set(r["kernel"])
    assert r["kernel"]["chunked, chunk=64"] == "chunked_blocked" and r["kernel"]["channels"] == "channels"
    assert r["limit"] in xs.LIMITS
    assert r["limit_gbs"] == min(r["stream_gbs"], r["loop_bound_gbs"])
    assert r["stream_gbs"] == max(r["gbs"]["stream"], r["gbs"]["stream, 1 thread"])
    one = max(r["gbs"]["loop, 1 thread"], r["gbs"]["chunked, 1 thread"])
    assert r["gbs"][r["one_thread"]] == one and r["loop_bound_gbs"] == pytest.approx(one * r["threads"])
    assert r["lanes_ceiling_gbs"] == pytest.approx(r["gbs"]["loop, 1 thread"] * r["lanes"] * r["threads"])
    for k in scans:
        lo, hi = r["share_interval"][k]
        assert 0 < lo <= r["share"][k] <= hi
        assert r["of_limit"][k] == pytest.approx(r["gbs"][k] / r["limit_gbs"])
    text = xs.limit_reason(r)
    assert ("memory is the limit" in text) == (r["limit"] == "stream")
    assert f"{r['stream_gbs']:.1f} GB/s" in text and f"{r['loop_bound_gbs']:.1f} GB/s" in text


def test_stream_share_names_bad_arguments():
    raises_naming(ValueError, "T", xs.stream_share, 0)
    raises_naming(ValueError, "nh", xs.stream_share, 16, 0)
    raises_naming(ValueError, "methods", xs.stream_share, 16, 2, methods=["sideways"])
    raises_naming(TypeError, "chunks", xs.stream_share, 16, 2, chunks=8)
    raises_naming(ValueError, "chunks[i]", xs.stream_share, 16, 2, chunks=(0,))
    raises_naming(ValueError, "repeat", xs.stream_share, 16, 2, repeat=0)
