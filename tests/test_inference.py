"""Tests for course_lib.parallel.inference: every strategy agrees with the serial loop; schedule,
scatter/gather and model properties; bad inputs give clear errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import course_lib  # noqa: F401  (switches numba's CUDA simulator on before numba loads)
from course_lib.core import backend
from course_lib.parallel import inference as inf


def _problem(T=5, B=4, nx=6, nh=8, vocab=7, layers=2, seed=0, dtype=np.float32):
    p = inf.init_params(nx, nh, vocab, layers=layers, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed + 10)
    for L in p.layers:
        L.b[:] = rng.standard_normal(nh).astype(dtype) * 0.3
    p.c[:] = rng.standard_normal(vocab).astype(dtype)
    X = rng.standard_normal((T, B, nx)).astype(dtype)
    return p, X


def test_init_params_shapes_and_dtype():
    p = inf.init_params(5, 7, 11, layers=3, seed=1)
    assert [L.U.shape for L in p.layers] == [(7, 5), (7, 7), (7, 7)]
    assert all(L.W.shape == (7, 7) and L.b.shape == (7,) for L in p.layers)
    assert p.V.shape == (11, 7) and p.c.shape == (11,)
    assert p.dtype == np.float32 and (p.nx, p.nh, p.vocab, p.n_layers) == (5, 7, 11, 3)
    q = inf.init_params(5, 7, 11, layers=3, seed=1)
    assert np.array_equal(p.layers[2].W, q.layers[2].W)
    assert inf.init_params(5, 7, 11, dtype=np.float64).dtype == np.float64


def test_serial_matches_the_seed_equations_by_hand():
    p, X = _problem(T=3, B=1, layers=1, dtype=np.float64)
    L = p.layers[0]
    h = np.zeros(p.nh)
    for t in range(3):
        h = np.tanh(L.b + L.W @ h + L.U @ X[t, 0])
        o = p.c + p.V @ h
        y = np.exp(o) / np.exp(o).sum()
        np.testing.assert_allclose(inf.predict(p, X)[t, 0], y, rtol=1e-12)


@pytest.mark.parametrize("layers", [1, 3])
@pytest.mark.parametrize("strategy", ["batched", "threads", "wavefront"])
def test_cpu_strategies_match_serial(strategy, layers):
    p, X = _problem(T=6, B=5, layers=layers)
    ref = inf.predict(p, X, strategy="serial")
    got = inf.predict(p, X, strategy=strategy, workers=2) if strategy != "batched" else inf.predict(p, X, strategy=strategy)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-5)


def test_float64_strategies_agree_tightly():
    p, X = _problem(T=4, B=3, layers=2, dtype=np.float64)
    ref = inf.predict_serial(p, X)
    for s in ("batched", "threads", "wavefront"):
        np.testing.assert_allclose(inf.predict(p, X, strategy=s), ref, rtol=1e-12, atol=1e-14)


def test_cuda_kernel_matches_serial_at_tiny_size():
    if backend.cuda_mode() == "unavailable":
        pytest.skip("numba was imported before course_lib and there is no GPU")
    p, X = _problem(T=3, B=2, nx=3, nh=4, vocab=5, layers=2)
    np.testing.assert_allclose(inf.predict(p, X, strategy="cuda"), inf.predict_serial(p, X), rtol=1e-5, atol=1e-6)


def test_cuda_refuses_large_simulated_problems_and_bad_blocks():
    p, X = _problem(T=100, B=50, nh=8)  # 115 000 simulated threads
    if backend.cuda_mode() == "simulator":
        with pytest.raises(ValueError, match="max_simulated"):
            inf.predict_cuda(p, X)
    with pytest.raises(ValueError, match="block"):
        inf.predict_cuda(p, X[:1, :1], block=(64, 32))


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


def test_softmax_is_stable_and_normalised():
    o = np.array([[1000.0, 1001.0, 999.0], [-800.0, -800.0, -801.0]])
    y = inf.softmax(o)
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y.sum(-1), 1.0)
    np.testing.assert_allclose(y[0], inf.softmax(np.array([1.0, 2.0, 0.0])))
    with pytest.raises(ValueError, match="o: contains"):
        inf.softmax(np.array([1.0, np.nan]))


def test_encode_one_hot_and_bad_token_ids():
    X = inf.encode(np.array([[0, 2], [1, 1]]), 3)
    assert X.shape == (2, 2, 3) and X.dtype == np.float32
    assert X[0, 1, 2] == 1 and X.sum() == 4
    assert inf.encode(np.array([2, 0]), 3).shape == (2, 1, 3)
    with pytest.raises(ValueError, match=r"ids: expected token ids in \[0, 3\)"):
        inf.encode(np.array([[0, 3]]), 3)
    with pytest.raises(ValueError, match="ids: expected token ids"):
        inf.one_hot(np.array([-1]), 3)
    with pytest.raises(ValueError, match="non-empty"):
        inf.encode(np.zeros((0, 2), dtype=np.int64), 3)
    with pytest.raises(TypeError, match="ids: expected an integer array"):
        inf.encode(np.array([[0.5]]), 3)


def test_predict_bad_inputs():
    p, X = _problem()
    with pytest.raises(ValueError, match="strategy: expected one of"):
        inf.predict(p, X, strategy="magic")
    with pytest.raises(ValueError, match=r"X: expected shape \(T=5, B=4, 6\)|X: expected shape"):
        inf.predict(p, X[..., :5])
    with pytest.raises(ValueError, match="empty"):
        inf.predict(p, X[:0])
    with pytest.raises(ValueError, match="empty"):
        inf.predict(p, X[:, :0], strategy="batched")
    with pytest.raises(TypeError, match="params: expected a course_lib.parallel.inference.Params"):
        inf.predict({"U": 1}, X)
    with pytest.raises(TypeError, match="X: expected a float32 or float64"):
        inf.predict(p, X.astype(np.int32))
    with pytest.raises(ValueError, match="workers"):
        inf.predict(p, X, strategy="threads", workers=0)


def test_mismatched_layer_sizes_are_reported():
    p, X = _problem(layers=2)
    p.layers[1].U = np.zeros((8, 5), np.float32)  # layer 1 must read the 8 units of layer 0
    with pytest.raises(ValueError, match=r"params.layers\[1\].U: expected shape"):
        inf.predict(p, X)
    p, X = _problem(layers=2)
    p.V = np.zeros((7, 9), np.float32)
    with pytest.raises(ValueError, match="params.V"):
        inf.predict(p, X, strategy="batched")
    p, X = _problem(layers=1)
    p.layers[0].W = p.layers[0].W.astype(np.float64)
    with pytest.raises(TypeError, match=r"layers\[0\].W: expected dtype float32"):
        inf.predict(p, X)


def test_init_params_bad_inputs():
    with pytest.raises(ValueError, match="nh"):
        inf.init_params(3, 0, 4)
    with pytest.raises(ValueError, match="layers"):
        inf.init_params(3, 4, 4, layers=0)
    with pytest.raises(TypeError, match="dtype"):
        inf.init_params(3, 4, 4, dtype=np.int32)


def test_params_arrays_round_trip_and_astype():
    p, _ = _problem(layers=3)
    q = inf.Params.from_arrays(p.arrays())
    assert q.n_layers == 3 and np.array_equal(q.layers[2].U, p.layers[2].U)
    assert p.astype(np.float64).layers[0].W.dtype == np.float64


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
    with pytest.raises(ValueError, match="B"):
        inf.data_parallel_model(0, 1, 1.0)


def test_measure_strategies_returns_consistent_data():
    d = inf.measure_strategies(B=4, layers=2, strategies=("serial", "batched", "wavefront"), T=4, nh=8, nx=4,
                               vocab=5, repeat=1)
    assert set(d["seconds"]) == {"serial", "batched", "wavefront"}
    assert d["speedup"]["serial"] == 1.0
    assert max(d["max_diff"].values()) < 1e-5
    with pytest.raises(ValueError, match="strategies"):
        inf.measure_strategies(strategies=("nope",))
    with pytest.raises(ValueError, match="B"):
        inf.measure_strategies(B=10**6)


def test_inference_flops():
    assert inf.inference_flops(1, 1, 2, 3, 4, layers=1) == 2 * (3 * 2 + 3 * 3 + 4 * 3)


def test_chapter_plots_draw():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from course_lib.teaching.plots import inference as iplots

    ax = iplots.dependency_graph(4, 2, color_diagonals=True)
    assert "2-layer" in ax.get_title()
    ax = iplots.wavefront_plot(inf.wavefront_schedule(5, 3))
    assert "7 parallel steps instead of 15" in ax.get_title()
    ax = iplots.speedup_plot([1, 2, 4], {"a": [1, 1.5, 2]}, xlabel="P", model={"m": ([1, 2], [1, 2])})
    assert ax.get_xlabel() == "P" and len(ax.get_legend().get_texts()) == 2
    ax = iplots.phase_bars({"mpi": {"scatter": 1e-3, "compute": 2e-3}, "threads": {"compute": 1e-3}})
    assert ax.get_xlabel() == "time (ms)"
    with pytest.raises(ValueError, match="schedule"):
        iplots.wavefront_plot([])
    plt.close("all")
