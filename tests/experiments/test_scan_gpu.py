"""course_lib.experiments.scan_gpu: the three kernels on one problem (simulator here: tiny)."""
import pytest

import course_lib  # noqa: F401  (before numba)
from course_lib.experiments import scan_gpu


def test_layouts_rows_are_checked_and_consistent():
    rows = scan_gpu.layouts(16, 3, repeat=1)
    assert [r["kernel"] for r in rows] == list(scan_gpu.KERNELS)
    assert all(r["max_abs_err"] < 1e-5 for r in rows)
    assert rows[0]["speedup_over_serial"] == 1.0
    for r in rows:
        assert r["speedup_over_serial"] == pytest.approx(rows[0]["median_s"] / r["median_s"])


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="T"):
        scan_gpu.layouts(0, 2)
    with pytest.raises(ValueError, match="repeat"):
        scan_gpu.event_seconds(lambda: None, 0)
