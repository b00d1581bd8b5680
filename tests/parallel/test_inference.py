"""Tests for course_lib.parallel.inference: every method agrees with the serial loop; schedule,
scatter/gather and model properties; bad inputs give clear errors naming the argument."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import course_lib  # noqa: F401  (switches numba's CUDA simulator on before numba loads)
from course_lib.core import backend
from course_lib.models import softmax_rnn
from course_lib.parallel import inference as inf
from helpers import raises_naming


def _problem(T=5, B=4, nx=6, nh=8, vocab=7, layers=2, seed=0, dtype=np.float32):
    p = softmax_rnn.init_params(nx, nh, vocab, layers=layers, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed + 10)
    for L in p.layers:
        L.b[:] = rng.standard_normal(nh).astype(dtype) * 0.3
    p.c[:] = rng.standard_normal(vocab).astype(dtype)
    X = rng.standard_normal((T, B, nx)).astype(dtype)
    return p, X


def _serial(p, X):
    return softmax_rnn.forward(p, X, method="sequential")


def test_methods_list_and_default():
    assert inf.METHODS == ("sequential", "batched", "threads", "wavefront", "mpi", "cuda_batched")
    p, X = _problem()
    np.testing.assert_array_equal(inf.predict(p, X), softmax_rnn.forward(p, X))  # default: batched
    np.testing.assert_array_equal(inf.predict(p, X, method="sequential"), _serial(p, X))


@pytest.mark.parametrize("layers", [1, 3])
@pytest.mark.parametrize("method", ["threads", "wavefront"])
@pytest.mark.parametrize("threads", [1, 2, 5])
def test_cpu_methods_match_serial(method, layers, threads):
    p, X = _problem(T=6, B=5, layers=layers)
    got = inf.predict(p, X, method=method, threads=threads)
    np.testing.assert_allclose(got, _serial(p, X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-5)


def test_float64_methods_agree_tightly():
    p, X = _problem(T=4, B=3, layers=2, dtype=np.float64)
    ref = _serial(p, X)
    for s in ("batched", "threads", "wavefront"):
        np.testing.assert_allclose(inf.predict(p, X, method=s), ref, rtol=1e-12, atol=1e-14)


def test_cuda_kernel_matches_serial_at_tiny_size():
    if backend.cuda_mode() == "unavailable":
        pytest.skip("numba was imported before course_lib and there is no GPU")
    p, X = _problem(T=3, B=2, nx=3, nh=4, vocab=5, layers=2)
    np.testing.assert_allclose(inf.predict(p, X, method="cuda_batched"), _serial(p, X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(inf.predict(p, X, method="cuda_batched", block=(2, 1)), _serial(p, X),
                               rtol=1e-5, atol=1e-6)


def test_cuda_refuses_large_simulated_problems_and_bad_blocks():
    p, X = _problem(T=100, B=50, nh=8)  # 115 000 simulated threads
    if backend.cuda_mode() == "simulator":
        with pytest.raises(ValueError, match="max_simulated"):
            inf.predict_cuda(p, X)
    with pytest.raises(ValueError, match="block"):
        inf.predict_cuda(p, X[:1, :1], block=(64, 32))
    with pytest.raises(ValueError, match="block"):
        inf.predict_cuda(p, X[:1, :1], block=32)


@settings(max_examples=25, deadline=None)
@given(T=st.integers(1, 9), L=st.integers(1, 6))
def test_wavefront_schedule_is_a_valid_topological_order(T, L):
    sched = inf.wavefront_schedule(T, L)
    assert len(sched) == T + L - 1
    step = {cell: d for d, diag in enumerate(sched) for cell in diag}
    assert sorted(step) == [(l, t) for l in range(L) for t in range(T)]
    assert sum(len(d) for d in sched) == T * L  # every cell exactly once
    for (l, t), d in step.items():
        assert l + t == d
        if l > 0:
            assert step[(l - 1, t)] < d
        if t > 0:
            assert step[(l, t - 1)] < d
    assert max(len(d) for d in sched) == min(T, L)


def test_wavefront_schedule_example_and_errors():
    assert inf.wavefront_schedule(3, 2) == [[(0, 0)], [(0, 1), (1, 0)], [(0, 2), (1, 1)], [(1, 2)]]
    with pytest.raises(ValueError, match="T"):
        inf.wavefront_schedule(0, 2)
    with pytest.raises(TypeError, match="L"):
        inf.wavefront_schedule(3, 1.5)


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 200), P=st.integers(1, 40))
def test_split_batch_is_balanced_and_covers_the_batch(B, P):
    if P > B:
        with pytest.raises(ValueError, match="P"):
            inf.split_batch(B, P)
        return
    counts, offsets = inf.split_batch(B, P)
    assert len(counts) == P and sum(counts) == B and max(counts) - min(counts) <= 1
    assert offsets[0] == 0 and all(offsets[r + 1] == offsets[r] + counts[r] for r in range(P - 1))
    assert counts == sorted(counts, reverse=True)


def test_scatter_gather_round_trip_and_errors():
    X = np.arange(3 * 7 * 2, dtype=np.float32).reshape(3, 7, 2)
    chunks = inf.scatter_batch(X, 3)
    assert [c.shape[1] for c in chunks] == [3, 2, 2]
    np.testing.assert_array_equal(inf.gather_chunks(chunks), X)
    with pytest.raises(ValueError, match="P: expected at most B = 7"):
        inf.scatter_batch(X, 8)
    with pytest.raises(ValueError, match=r"chunks\[1\]"):
        inf.gather_chunks([np.zeros((3, 2, 4)), np.zeros((4, 2, 4))])
    with pytest.raises(ValueError, match="chunks"):
        inf.gather_chunks([])


def test_predict_bad_inputs():
    p, X = _problem()
    with pytest.raises(ValueError, match="method: expected one of"):
        inf.predict(p, X, method="magic")
    with pytest.raises(ValueError, match=r"X: expected shape"):
        inf.predict(p, X[..., :5], method="threads")
    with pytest.raises(ValueError, match="empty"):
        inf.predict(p, X[:0], method="wavefront")
    with pytest.raises(TypeError, match="params: expected a course_lib.models.softmax_rnn.SoftmaxRNNParams"):
        inf.predict({"U": 1}, X, method="threads")
    with pytest.raises(ValueError, match="threads"):
        inf.predict(p, X, method="threads", threads=0)
    with pytest.raises(TypeError, match="threads"):
        inf.predict(p, X, method="wavefront", threads=1.5)
    with pytest.raises(TypeError, match="takes no options"):
        inf.predict(p, X, method="batched", threads=2)
    with pytest.raises(TypeError, match="workers"):  # the old name is gone
        inf.predict(p, X, method="threads", workers=2)


def test_work_span_model():
    m = inf.work_span(10, 3)
    assert (m["work"], m["span"]) == (30, 12)
    assert inf.work_span(10, 3, P=1)["steps"] == 30
    assert inf.work_span(10, 3, P=3)["steps"] == 12
    assert inf.work_span(10, 3, P=64)["speedup"] == pytest.approx(30 / 12)
    assert inf.work_span(10, 4, P=2)["speedup"] <= 2
    with pytest.raises(ValueError, match="P"):
        inf.work_span(4, 4, P=0)


def test_data_parallel_model():
    m = inf.data_parallel_model(8, 4, t_seq=1.0)
    assert m["time"] == 2.0 and m["speedup"] == 4.0
    assert inf.data_parallel_model(8, 4, t_seq=1.0, t_comm=0.5)["speedup"] < 4.0
    with pytest.raises(ValueError, match="batch"):
        inf.data_parallel_model(0, 1, 1.0)
    with pytest.raises(ValueError, match="t_seq"):
        inf.data_parallel_model(4, 1, 0.0)


def test_chapter_plots_draw():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from course_lib.teaching.plots import inference as iplots

    ax = iplots.dependency_graph(4, 2, color_diagonals=True)
    assert "2-layer" in ax.get_title()
    ax = iplots.wavefront_plot(inf.wavefront_schedule(5, 3))
    assert "7 parallel steps instead of 15" in ax.get_title()
    ax = iplots.speedup_plot([1, 2, 4], {"a": [1, 1.5, 2]}, xlabel="P", model={"m": ([1, 2], [1, 3])})
    assert ax.get_xlabel() == "P" and len(ax.get_legend().get_texts()) == 2
    assert ax.get_ylim()[1] >= 3  # every point inside the axes
    ax = iplots.speedup_plot([1, 2], {"a": [0.25, 4.0]}, logy=True)
    lo, hi = ax.get_ylim()
    assert lo < 0.25 and hi > 4.0
    ax = iplots.phase_bars({"mpi": {"scatter": 1e-3, "compute": 2e-3}, "threads": {"compute": 4e-3}})
    assert ax.get_xlabel() == "time (ms)" and ax.get_xlim()[1] > 4.0  # the longest bar is not cut
    with pytest.raises(ValueError, match="schedule"):
        iplots.wavefront_plot([])
    with pytest.raises(ValueError, match="phases"):
        iplots.phase_bars({})
    plt.close("all")


# --------------------------------------------------------------------------- bad input: cell_step
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(60)
@FAST
@given(st.integers(1, 4), st.sampled_from(["x", "h"]), st.sampled_from([np.nan, np.inf]))
def test_cell_step_checks_its_inputs(B, which, bad):
    p = softmax_rnn.init_params(3, 4, 3, seed=0)
    args = {"x": np.zeros((B, 3), np.float32), "h": np.zeros((B, 4), np.float32)}
    assert softmax_rnn.cell_step(p.layers[0], **args).shape == (B, 4)
    args[which][0, 0] = bad
    raises_naming(ValueError, which, softmax_rnn.cell_step, p.layers[0], **args)


@pytest.mark.timeout(60)
def test_wavefront_still_matches_batched():
    p = softmax_rnn.init_params(3, 4, 3, layers=2, seed=1)
    X = softmax_rnn.encode(np.random.default_rng(0).integers(0, 3, (5, 2)), 3)
    np.testing.assert_allclose(inf.predict(p, X, method="wavefront", threads=2),
                               softmax_rnn.forward(p, X), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- bad input (issue 29)
from bad_input import HUGE, NOT_SIZE, bad_arrays, clear_or_correct, finishes_fast  # noqa: E402


def test_work_span_counts_any_length_in_closed_form():
    """It listed every cell of the schedule: T = 1e10 never returned."""
    out = finishes_fast(inf.work_span, 10**10, 10**10, 7)
    assert out["work"] == 10**20 and out["span"] == 2 * 10**10 - 1
    for T in range(1, 9):
        for L in range(1, 6):
            for P in range(1, 7):
                steps = sum(math.ceil(len(d) / P) for d in inf.wavefront_schedule(T, L))
                assert inf.work_span(T, L, P)["steps"] == steps, (T, L, P)
    raises_naming(ValueError, "T", inf.wavefront_schedule, 10**10, 3)  # a list that large is refused up front


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(["T", "L", "P"]), bad=st.one_of(NOT_SIZE, HUGE))
def test_work_span_bad_input_is_a_clear_error_or_correct(case, bad):
    kw = {"T": 5, "L": 3, "P": 2, case: bad}

    def correct(out):  # huge sizes: the closed form's own identities
        return (out["work"] == kw["T"] * kw["L"] and out["span"] == kw["T"] + kw["L"] - 1
                and ("steps" not in out or out["steps"] >= out["span"]))
    finishes_fast(clear_or_correct, inf.work_span, case, kw, correct=correct)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(method=st.sampled_from(["threads", "wavefront", "batched"]), data=st.data())
def test_predict_bad_input_is_a_clear_error(method, data):
    p = softmax_rnn.init_params(3, 4, 5, layers=2, seed=0)
    X = data.draw(bad_arrays((4, 2, 3), np.float32))
    clear_or_correct(inf.predict, "X", {"params": p, "X": X, "method": method})
    if method != "batched":
        X = np.zeros((4, 2, 3), np.float32)
        bad = data.draw(NOT_SIZE.filter(lambda v: v is not None))  # None: all cores (the default)
        clear_or_correct(inf.predict, "threads", {"params": p, "X": X, "method": method, "threads": bad})
