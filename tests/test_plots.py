import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from course_lib.teaching import plots


def test_roofline_plot_draws_roof_and_points():
    ax = plots.roofline_plot(100.0, 10.0, [(0.5, 4.0, "GEMV"), (50.0, 80.0, "GEMM")])
    roof = ax.lines[0]
    x, y = roof.get_data()
    np.testing.assert_allclose(y, np.minimum(100.0, x * 10.0))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["roofline (measured)", "GEMV", "GEMM"]
    plt.close("all")


def test_loglog_plot_labels_fitted_slopes():
    n = np.array([10, 20, 40])
    ax = plots.loglog_plot(n, {"quadratic": n**2 * 1e-6, "linear": n * 1e-6})
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["quadratic (slope 2.00)", "linear (slope 1.00)"]
    plt.close("all")


def test_bar_compare_annotates_values():
    ax = plots.bar_compare({"a": 1.0, "b": 2.5}, reference=3.0, reference_label="peak")
    assert [t.get_text() for t in ax.texts] == ["1", "2.5"]
    plt.close("all")


def test_bad_input():
    with pytest.raises(ValueError, match="peak_gflops, bandwidth_gbs: expected positive numbers"):
        plots.roofline_plot(0.0, 10.0)
    with pytest.raises(ValueError, match="intensity_range: expected 0 < low < high"):
        plots.roofline_plot(1.0, 1.0, intensity_range=(1.0, 0.5))
    with pytest.raises(ValueError, match=r"series\['a'\]: expected 3 values \(one per size\), got 2"):
        plots.loglog_plot([1, 2, 3], {"a": [1, 2]})
    with pytest.raises(ValueError, match="values: expected a non-empty mapping"):
        plots.bar_compare({})
    plt.close("all")


def test_lstm_batch_lines_read_the_latency_result():
    """latency_plot / overhead_plot draw what experiments.lstm.latency_vs_batch returns (keys B, nh, noise)."""
    from course_lib.core.timing import Noise
    from course_lib.teaching.plots import lstm as lstm_plots

    data = {"B": [1, 4], "nh": 8, "noise": Noise(), "naive": [2.0, 3.0], "fused_pre": [1.0, 1.5]}
    ax = lstm_plots.latency_plot(data)
    assert "nh = 8" in ax.get_title() and sorted(line.get_label() for line in ax.get_lines()) == ["fused_pre", "naive"]
    plt.close("all")
