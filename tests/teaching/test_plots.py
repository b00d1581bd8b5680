import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.teaching import plots
from course_lib.teaching.plots import cost_model as p_cm
from course_lib.teaching.plots import halide as p_hal
from course_lib.teaching.plots import inference as p_inf
from course_lib.teaching.plots import lstm as p_lstm
from course_lib.teaching.plots import matmul as p_mm
from course_lib.teaching.plots import mgrit as p_mg
from course_lib.teaching.plots import newton as p_nt
from course_lib.teaching.plots import perf as p_perf
from course_lib.teaching.plots import rnn as p_rnn
from course_lib.teaching.plots import scan as p_scan
from helpers import raises_naming


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


# --------------------------------------------------------------------------- bad input
# empty or mismatched data named before a figure is drawn; good data still draws
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EMPTY = st.sampled_from([{}, [], (), np.zeros(0)])


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.timeout(30)
@FAST
@given(EMPTY)
def test_plots_reject_empty_data_by_name(empty):
    cases = [
        (p_cm.ranking, (empty,), "advice"), (p_cm.winner_map, (empty,), "grid"),
        (p_hal.schedule_bars, (empty,), "table"), (p_hal.rate_bars, (empty,), "gflops"),
        (p_lstm.profile_bars, (empty,), "profiles"), (p_lstm.overhead_plot, (empty,), "data"),
        (p_lstm.latency_plot, (empty,), "data"),
        (p_lstm.method_bars, (empty,), "values"), (p_lstm.hit_rate_bars, (empty,), "model"),
        (p_mm.ladder_plot, (empty,), "rows"), (p_mm.combination_plot, (empty,), "rows"),
        (p_mg.plot_histories, (empty,), "histories"), (p_nt.plot_histories, (empty,), "histories"),
        (p_nt.plot_predictability, (empty,), "rows"), (p_nt.plot_iterates, (empty, np.zeros((2, 1, 1))), "iterates"),
        (p_perf.per_sample_plot, (empty,), "data"), (p_perf.phase_bars, (empty,), "profiles"),
        (p_perf.thread_scaling_plot, (empty,), "data"), (p_perf.jit_bars, (empty,), "result"),
        (p_perf.residency_plot, (empty,), "data"), (p_perf.framework_plot, (empty,), "data"),
        (p_perf.step_bars, (empty, 1.0), "rows"), (p_rnn.loss_curve, (empty,), "history"),
        (p_rnn.image_strips, (empty, (2, 2)), "rows"), (p_scan.phase_split_bars, (empty,), "splits"),
        (p_scan.accuracy_curves, (empty,), "results"), (p_mg.plot_time_axis, (empty, {"a": []}), "Ts"),
        (plots.loglog_plot, (empty, {"a": []}), "sizes"),
    ]
    for fn, args, name in cases:
        raises_naming((ValueError, TypeError), name, fn, *args)


@pytest.mark.timeout(30)
@FAST
@given(st.integers(1, 4), st.integers(0, 3))
def test_plots_reject_mismatched_series(n, extra):
    xs = list(range(1, n + 1))
    ys = list(range(n + extra + 1))  # always one too many at least
    raises_naming(ValueError, "series['a']", plots.loglog_plot, xs, {"a": ys})
    raises_naming(ValueError, "series['a']", p_inf.speedup_plot, xs, {"a": ys})
    raises_naming(ValueError, "curves['a']", p_mg.plot_speedup_model, xs, {"a": ys})
    raises_naming(ValueError, "curves['a']", p_mg.plot_speedup_vs_length, xs, {"a": ys})
    raises_naming(ValueError, "ratio", p_lstm.ratio_heatmap, xs, [1, 2], np.ones((3 + extra, n)))
    raises_naming(ValueError, "grid", p_mm.tile_heatmap, np.ones((n, n + 1)), xs, xs)
    raises_naming(ValueError, "speedups['newton']", p_nt.plot_model_speedups, xs, [4], {"newton": np.ones((2, n))})


@pytest.mark.timeout(30)
def test_plots_other_arguments():
    raises_naming(TypeError, "ax", plots.new_axes, "axis")
    raises_naming((ValueError, TypeError), "T", p_inf.dependency_graph, 0, 2)
    raises_naming(ValueError, "T", p_inf.dependency_graph, 10**6, 2)
    raises_naming(ValueError, "nt", p_mg.draw_two_level_cycle, 10**6, 4)
    raises_naming((ValueError, TypeError), "m", p_mg.draw_two_level_cycle, 16, 1)
    raises_naming(ValueError, "T", p_rnn.bptt_work, 10**5)
    raises_naming(ValueError, "H", p_rnn.unrolled_rnn, np.zeros((3, 2)), np.zeros((2, 2)), np.zeros((3, 1)))
    raises_naming(TypeError, "schedule", p_cm.gantt, "schedule")
    raises_naming(TypeError, "cal", p_cm.predicted_vs_measured, {})
    raises_naming(ValueError, "sizes", p_mm.size_pair_plot, {"a": 1.0}, (1, 2, 3))
    raises_naming(ValueError, "peak", p_perf.step_bars, {"a": 1.0}, 0.0)
    raises_naming(ValueError, "data", p_scan.crossover_map, {"x": 1})
    raises_naming(ValueError, "drift", p_nt.plot_drift, {"x": 1})


@pytest.mark.timeout(30)
def test_plots_good_data_still_draw():
    ax = plots.loglog_plot([1, 2, 4], {"a": [1.0, 2.0, 4.0]})
    assert "slope 1.00" in ax.get_legend().get_texts()[0].get_text()
    ax = p_mm.tile_heatmap(np.array([[1.0, 2.0, 3.0], [4.0, 9.0, np.nan]]), [8, 16], [4, 8, 16])
    assert ax.images[0].get_array().shape == (2, 3)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4", "8", "16"]
    assert "9.0 ★" in [t.get_text() for t in ax.texts]  # the best cell is starred; the NaN cell has no label
    assert len(ax.texts) == 5
    ax = p_lstm.method_bars({"naive": 2.0, "fused": 1.0})
    assert [b.get_height() for b in ax.patches] == [2.0, 1.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["naive", "fused"]
    from course_lib.experiments.cost_model import cluster
    sched = cluster.wavefront_graph(3, 2).simulate(2)
    ax = p_cm.gantt(sched)
    bars = [r for r in sched.rows if r[3] > r[2] and r[1] < 16]
    assert bars and len(ax.patches) == len(bars)  # one bar per task that takes time
    assert max(b.get_x() + b.get_width() for b in ax.patches) == pytest.approx(sched.makespan)
    ax = p_mg.draw_two_level_cycle(8, 4)
    assert list(ax.get_xticks()) == [0, 4, 8]  # the C-points, every m steps
    assert [len(l.get_xdata()) for l in ax.lines[2:]] == [6, 3, 3]  # 6 F-points, 3 C-points on each level
    ax = p_inf.dependency_graph(3, 2)
    cells = [t.get_text() for t in ax.texts if t.get_text().startswith("h")]
    assert sorted(cells) == sorted(f"h{l},{t}" for l in range(2) for t in range(3))
    # arrows: x->h0 and h_top->y per step (2*3), layer below per cell above 0 (1*3), previous step (2*2)
    assert sum(1 for t in ax.texts if t.get_text() == "") == 6 + 3 + 4


def test_lstm_batch_lines_read_the_latency_result():
    """latency_plot / overhead_plot draw what experiments.lstm.latency_vs_batch returns (keys B, nh, noise)."""
    from course_lib.core.timing import Noise
    from course_lib.teaching.plots import lstm as lstm_plots

    data = {"B": [1, 4], "nh": 8, "noise": Noise(), "naive": [2.0, 3.0], "fused_pre": [1.0, 1.5]}
    ax = lstm_plots.latency_plot(data)
    assert "nh = 8" in ax.get_title() and sorted(line.get_label() for line in ax.get_lines()) == ["fused_pre", "naive"]
    plt.close("all")
