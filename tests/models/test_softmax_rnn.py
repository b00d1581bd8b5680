"""Tests for course_lib.models.softmax_rnn: parameters, the seed's serial loop, the batched forward pass,
the pieces (softmax, encode, step), the PyTorch layout, FLOP count, and clear errors on bad inputs."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import course_lib  # noqa: F401
from course_lib.models import softmax_rnn as m
from helpers import raises_naming


def _problem(T=5, B=4, nx=6, nh=8, vocab=7, layers=2, seed=0, dtype=np.float32):
    p = m.init_params(nx, nh, vocab, layers=layers, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed + 10)
    for L in p.layers:
        L.b[:] = rng.standard_normal(nh).astype(dtype) * 0.3
    p.c[:] = rng.standard_normal(vocab).astype(dtype)
    X = rng.standard_normal((T, B, nx)).astype(dtype)
    return p, X


def test_init_params_shapes_and_dtype():
    p = m.init_params(5, 7, 11, layers=3, seed=1)
    assert isinstance(p, m.SoftmaxRNNParams)
    assert [L.U.shape for L in p.layers] == [(7, 5), (7, 7), (7, 7)]
    assert all(L.W.shape == (7, 7) and L.b.shape == (7,) for L in p.layers)
    assert p.V.shape == (11, 7) and p.c.shape == (11,)
    assert p.dtype == np.float32 and (p.nx, p.nh, p.vocab, p.n_layers) == (5, 7, 11, 3)
    q = m.init_params(5, 7, 11, layers=3, seed=1)
    assert np.array_equal(p.layers[2].W, q.layers[2].W)
    assert m.init_params(5, 7, 11, dtype=np.float64).dtype == np.float64


def test_serial_matches_the_seed_equations_by_hand():
    p, X = _problem(T=3, B=1, layers=1, dtype=np.float64)
    L = p.layers[0]
    h = np.zeros(p.nh)
    Y = m.forward(p, X, method="sequential")
    for t in range(3):
        h = np.tanh(L.b + L.W @ h + L.U @ X[t, 0])
        o = p.c + p.V @ h
        y = np.exp(o) / np.exp(o).sum()
        np.testing.assert_allclose(Y[t, 0], y, rtol=1e-12)


@pytest.mark.parametrize("layers", [1, 3])
@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
def test_batched_matches_serial(layers, dtype, tol):
    p, X = _problem(T=6, B=5, layers=layers, dtype=dtype)
    got = m.forward(p, X)  # method="batched" is the default
    np.testing.assert_allclose(got, m.forward(p, X, method="sequential"), rtol=tol, atol=tol / 10)
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=tol)
    np.testing.assert_array_equal(got, m.batched_core(p, X))


def test_hidden_states_and_cell_step_and_output_probs_compose_to_forward():
    p, X = _problem(T=4, B=3, layers=2, dtype=np.float64)
    hs = m.hidden_states(p, X)
    assert [h.shape for h in hs] == [(4, 3, 8), (4, 3, 8)]
    h = np.zeros((3, 8))
    for t in range(4):  # layer 0 step by step
        h = m.cell_step(p.layers[0], X[t], h)
        np.testing.assert_allclose(hs[0][t], h, rtol=1e-12)
    np.testing.assert_allclose(m.output_probs(p, hs[-1]), m.forward(p, X), rtol=1e-12)


def test_step_is_the_seed_loop_body():
    p, X = _problem(T=3, B=1, layers=2, dtype=np.float64)
    h = [np.zeros(p.nh) for _ in p.layers]
    probs = [m.softmax(m.step(p, X[t, 0], h)) for t in range(3)]
    np.testing.assert_allclose(np.stack(probs), m.forward(p, X, method="sequential")[:, 0], rtol=1e-12)


def test_softmax_is_stable_and_normalised():
    o = np.array([[1000.0, 1001.0, 999.0], [-800.0, -800.0, -801.0]])
    y = m.softmax(o)
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y.sum(-1), 1.0)
    np.testing.assert_allclose(y[0], m.softmax(np.array([1.0, 2.0, 0.0])))
    with pytest.raises(ValueError, match="o: contains"):
        m.softmax(np.array([1.0, np.nan]))


def test_encode_one_hot_and_bad_token_ids():
    X = m.encode(np.array([[0, 2], [1, 1]]), 3)
    assert X.shape == (2, 2, 3) and X.dtype == np.float32
    assert X[0, 1, 2] == 1 and X.sum() == 4
    assert m.encode(np.array([2, 0]), 3).shape == (2, 1, 3)
    with pytest.raises(ValueError, match=r"ids: expected token ids in \[0, 3\)"):
        m.encode(np.array([[0, 3]]), 3)
    with pytest.raises(ValueError, match="ids: expected token ids"):
        m.one_hot(np.array([-1]), 3)
    with pytest.raises(ValueError, match="non-empty"):
        m.encode(np.zeros((0, 2), dtype=np.int64), 3)
    with pytest.raises(TypeError, match="ids: expected an integer array"):
        m.encode(np.array([[0.5]]), 3)


def test_forward_bad_inputs():
    p, X = _problem()
    with pytest.raises(ValueError, match="method: expected one of"):
        m.forward(p, X, method="threads")
    with pytest.raises(ValueError, match=r"X: expected shape"):
        m.forward(p, X[..., :5])
    with pytest.raises(ValueError, match="empty"):
        m.forward(p, X[:0], method="sequential")
    with pytest.raises(ValueError, match="empty"):
        m.forward(p, X[:, :0])
    with pytest.raises(TypeError, match="params: expected a course_lib.models.softmax_rnn.SoftmaxRNNParams"):
        m.forward({"U": 1}, X)
    with pytest.raises(TypeError, match="X: expected a float32 or float64"):
        m.forward(p, X.astype(np.int32))


def test_mismatched_layer_sizes_are_reported():
    p, X = _problem(layers=2)
    p.layers[1].U = np.zeros((8, 5), np.float32)  # layer 1 must read the 8 units of layer 0
    with pytest.raises(ValueError, match=r"params.layers\[1\].U: expected shape"):
        m.forward(p, X)
    p, X = _problem(layers=2)
    p.V = np.zeros((7, 9), np.float32)
    with pytest.raises(ValueError, match="params.V"):
        m.forward(p, X)
    p, X = _problem(layers=1)
    p.layers[0].W = p.layers[0].W.astype(np.float64)
    with pytest.raises(TypeError, match=r"layers\[0\].W: expected dtype float32"):
        m.forward(p, X, method="sequential")


def test_init_params_bad_inputs():
    with pytest.raises(ValueError, match="nh"):
        m.init_params(3, 0, 4)
    with pytest.raises(ValueError, match="layers"):
        m.init_params(3, 4, 4, layers=0)
    with pytest.raises(TypeError, match="dtype"):
        m.init_params(3, 4, 4, dtype=np.int32)


def test_params_arrays_round_trip_and_astype():
    p, _ = _problem(layers=3)
    q = m.SoftmaxRNNParams.from_arrays(dict(zip(p.names(), p.arrays())))
    assert q.n_layers == 3 and np.array_equal(q.layers[2].U, p.layers[2].U)
    assert p.astype(np.float64).layers[0].W.dtype == np.float64


def test_torch_round_trip_matches_torch_nn_rnn():
    torch = pytest.importorskip("torch")
    p, X = _problem(T=4, B=3, layers=2, dtype=np.float64)
    rnn, linear = p.to_torch()
    with torch.no_grad():
        hs, _ = rnn(torch.from_numpy(X))
        want = torch.softmax(linear(hs), dim=-1).numpy()
    np.testing.assert_allclose(m.forward(p, X), want, rtol=1e-10, atol=1e-12)
    q = m.SoftmaxRNNParams.from_torch(rnn, linear)
    np.testing.assert_allclose(q.layers[1].W, p.layers[1].W)
    np.testing.assert_allclose(q.layers[0].b, p.layers[0].b)


def test_flops():
    assert m.flops(1, 1, 2, 3, 4, layers=1) == 2 * (3 * 2 + 3 * 3 + 4 * 3)
    assert m.flops(2, 3, 2, 3, 4, layers=2) == 2 * 2 * 3 * (3 * 2 + 3 * 3 + 2 * 3 * 3 + 4 * 3)
    with pytest.raises(ValueError, match="layers"):
        m.flops(1, 1, 2, 3, 4, layers=0)


# --------------------------------------------------------------------------- bad input
# cell_step, step, softmax, output_probs, from_arrays
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def params():
    return m.init_params(5, 4, 5, layers=2, seed=0)


@pytest.mark.timeout(30)
def test_cell_step_checks(params):
    L = params.layers[0]
    x, h = np.zeros((3, 5), np.float32), np.zeros((3, 4), np.float32)
    assert m.cell_step(L, x, h).shape == (3, 4)
    raises_naming(TypeError, "layer", m.cell_step, "L", x, h)
    raises_naming(ValueError, "x", m.cell_step, L, np.zeros((3, 6), np.float32), h)
    raises_naming(ValueError, "h", m.cell_step, L, x, np.zeros((2, 4), np.float32))
    raises_naming(ValueError, "x", m.cell_step, L, np.full((3, 5), np.inf, np.float32), h)
    raises_naming(TypeError, "h", m.cell_step, L, x, h.astype(np.float64))


@pytest.mark.timeout(30)
def test_step_softmax_output_probs_from_arrays(params):
    h = [np.zeros(4, np.float32) for _ in range(2)]
    assert m.step(params, np.zeros(5, np.float32), h).shape == (5,)
    raises_naming(ValueError, "x", m.step, params, np.zeros(4, np.float32), h)
    raises_naming(TypeError, "h", m.step, params, np.zeros(5, np.float32), h[:1])
    raises_naming(ValueError, "o", m.softmax, np.zeros(0))
    raises_naming(ValueError, "axis", m.softmax, np.zeros((2, 3)), axis=2)
    raises_naming(ValueError, "h", m.output_probs, params, np.zeros((2, 3), np.float32))
    raises_naming(ValueError, "arrays", m.SoftmaxRNNParams.from_arrays, {"layers.0.U": np.zeros((2, 2))})
    raises_naming(TypeError, "arrays", m.SoftmaxRNNParams.from_arrays, [1, 2])
    back = m.SoftmaxRNNParams.from_arrays(dict(zip(params.names(), params.arrays())))
    np.testing.assert_array_equal(back.V, params.V)


@pytest.mark.timeout(30)
@FAST
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=8))
def test_softmax_is_a_distribution(vals):
    p = m.softmax(np.array(vals))
    assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)


def test_a_huge_stack_of_layers_is_blamed_on_layers():
    from helpers import raises_fast
    raises_fast(ValueError, "layers", m.init_params, 3, 4, 5, layers=10**12)
    raises_fast(ValueError, "nh", m.init_params, 3, 10**12, 5, layers=2)
