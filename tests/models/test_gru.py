"""GRU cells: GRUParams in PyTorch layout, exact backward vs numerical gradients, MGRIT forward/backward == serial,
the classifier and its TrainResult."""
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.models import gru as G
from course_lib.algorithms.mgrit import MGRITDivergence
from course_lib.core.results import TrainResult
from helpers import raises_naming


def _problem(T=12, B=2, nx=3, nh=5, seed=0):
    p = G.init_params(nx, nh, seed=seed, dtype=np.float64)
    rng = np.random.default_rng(seed)
    return p, rng.standard_normal((T, B, nx)), 0.3 * rng.standard_normal((B, nh)), rng.standard_normal((T, B, nh))


def test_init_params_layout():
    p = G.init_params(7, 4, seed=1)
    assert isinstance(p, G.GRUParams) and (p.nx, p.nh, p.dtype) == (7, 4, np.float32)
    assert p.W_ih.shape == (12, 7) and p.W_hh.shape == (12, 4)
    assert p.b_ih.shape == (12,) and p.b_hh.shape == (12,) and p.W_ih.dtype == np.float32
    assert np.abs(p.W_hh).max() <= 0.5
    assert np.array_equal(G.init_params(7, 4, seed=1).W_hh, p.W_hh)
    q = p.copy()
    q.W_hh[0, 0] += 1
    assert q.W_hh[0, 0] != p.W_hh[0, 0] and p.astype(np.float64).dtype == np.float64


def test_params_are_not_a_dict_any_more():
    p = G.init_params(3, 2)
    assert p.names() == ["W_ih", "W_hh", "b_ih", "b_hh"]
    with pytest.raises(TypeError):
        p["W_hh"]
    with pytest.raises(TypeError, match="^params: expected GRUParams"):
        G.gru_forward(dict(zip(p.names(), p.arrays())), np.ones((3, 1, 3), dtype=np.float32))


def test_cell_param_grads_is_the_sum_of_cell_backward_terms():
    p, X, h0, dH = _problem()
    H = G.gru_forward(p, X, h0)
    Hprev = np.concatenate([h0[None], H[:-1]])
    GI = G.input_projection(p, X)
    g = G.cell_param_grads(p, X, GI, Hprev, dH, implicit=True, gamma=0.5)
    assert type(g) is G.GRUParams
    _, dgi, dgh = G.gru_cell_backward(p, GI, Hprev, dH, implicit=True, gamma=0.5)
    np.testing.assert_allclose(g.W_hh, sum(dgh[t].T @ Hprev[t] for t in range(len(X))), rtol=1e-12)
    np.testing.assert_allclose(g.b_ih, dgi.sum(axis=(0, 1)), rtol=1e-12)
    with pytest.raises(ValueError, match="^lam"):
        G.cell_param_grads(p, X, GI, Hprev, dH[:, :, :2])


def test_classic_cell_is_pytorch_formula():
    p, X, h0, _ = _problem()
    nh = 5
    gi = X[0] @ p.W_ih.T + p.b_ih
    gh = h0 @ p.W_hh.T + p.b_hh
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    r, z = sig(gi[:, :nh] + gh[:, :nh]), sig(gi[:, nh:2 * nh] + gh[:, nh:2 * nh])
    n = np.tanh(gi[:, 2 * nh:] + r * gh[:, 2 * nh:])
    np.testing.assert_allclose(G.gru_cell(p, gi, h0), z * h0 + (1 - z) * n, rtol=1e-12)
    np.testing.assert_allclose(G.gru_cell(p, gi, h0, implicit=True, gamma=3.0),
                               (h0 + 3 * (1 - z) * n) / (1 + 3 * (1 - z)), rtol=1e-12)


def test_matches_torch_when_available():
    torch = pytest.importorskip("torch")
    p = G.init_params(4, 6, seed=2)
    X = np.random.default_rng(1).standard_normal((7, 3, 4)).astype(np.float32)
    g = p.to_torch()
    with torch.no_grad():
        out, _ = g(torch.tensor(X))
    np.testing.assert_allclose(G.gru_forward(p, X), out.numpy(), atol=1e-5)
    back = G.GRUParams.from_torch(g)
    for name in ("W_ih", "W_hh", "b_ih", "b_hh"):
        np.testing.assert_array_equal(getattr(back, name), getattr(p, name))
    p64 = G.init_params(4, 6, seed=2, dtype=np.float64)
    assert next(p64.to_torch().parameters()).dtype == torch.float64


@pytest.mark.parametrize("implicit,dt", [(False, 1.0), (True, 1.0), (True, 4.0), (False, 0.5)])
def test_backward_matches_numerical_gradients(implicit, dt):
    p, X, h0, W = _problem(T=8)
    H = G.gru_forward(p, X, h0, implicit=implicit, dt=dt)
    grads, dh0 = G.gru_backward(p, X, H, W, h0, implicit=implicit, dt=dt)

    def loss(pp, hh):
        return float((G.gru_forward(pp, X, hh, implicit=implicit, dt=dt) * W).sum())

    eps = 1e-6
    assert isinstance(grads, G.GRUParams)
    for k in ("W_ih", "W_hh", "b_ih", "b_hh"):
        num = np.zeros_like(getattr(p, k))
        for idx in np.ndindex(num.shape):
            q = p.copy()
            getattr(q, k)[idx] += eps
            a = loss(q, h0)
            getattr(q, k)[idx] -= 2 * eps
            num[idx] = (a - loss(q, h0)) / (2 * eps)
        np.testing.assert_allclose(getattr(grads, k), num, rtol=1e-6, atol=1e-7, err_msg=k)
    num = np.zeros_like(h0)
    for idx in np.ndindex(h0.shape):
        hh = h0.copy()
        hh[idx] += eps
        a = loss(p, hh)
        hh[idx] -= 2 * eps
        num[idx] = (a - loss(p, hh)) / (2 * eps)
    np.testing.assert_allclose(dh0, num, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("levels,relax", [(2, "F"), (2, "FCF"), (3, "FCF")])
def test_mgrit_forward_and_backward_equal_serial(levels, relax):
    p, X, h0, W = _problem(T=32, seed=3)
    H = G.gru_forward(p, X, h0, implicit=True)
    Hm, hist = G.gru_forward(p, X, h0, implicit=True, method="mgrit", m=2, levels=levels, relax=relax,
                             max_iter=30, tol=1e-13, return_history=True)
    np.testing.assert_allclose(Hm, H, atol=1e-11)
    assert hist[-1] <= 1e-13
    g, d = G.gru_backward(p, X, H, W, h0, implicit=True)
    gm, dm, hb = G.gru_backward(p, X, H, W, h0, implicit=True, method="mgrit", m=2, levels=levels, relax=relax,
                                max_iter=30, tol=1e-13, return_history=True)
    for k in ("W_ih", "W_hh", "b_ih", "b_hh"):
        np.testing.assert_allclose(getattr(gm, k), getattr(g, k), atol=1e-9, err_msg=k)
    np.testing.assert_allclose(dm, d, atol=1e-10)


def test_mgrit_pads_sequences_not_fitting_the_hierarchy():
    p, X, h0, W = _problem(T=13, seed=4)
    H = G.gru_forward(p, X, h0, implicit=True)
    Hm = G.gru_forward(p, X, h0, implicit=True, method="mgrit", m=4, levels=2, max_iter=4, tol=0)
    assert Hm.shape == H.shape
    np.testing.assert_allclose(Hm, H, atol=1e-12)  # 16 padded steps: exact after 4 Parareal-like iterations
    g, _ = G.gru_backward(p, X, H, W, h0, implicit=True)
    gm, _ = G.gru_backward(p, X, H, W, h0, implicit=True, method="mgrit", m=4, levels=2, max_iter=4, tol=0)
    np.testing.assert_allclose(gm.W_hh, g.W_hh, atol=1e-10)


def test_explicit_coarse_step_blows_up_implicit_does_not():
    p = G.init_params(3, 8, seed=0)
    X = np.random.default_rng(0).standard_normal((1024, 4, 3)).astype(np.float32)
    exp_ = G.coarse_trajectory(p, X, implicit=False, M=16)
    imp = G.coarse_trajectory(p, X, implicit=True, M=16)
    assert not np.all(np.isfinite(exp_)) or np.abs(exp_).max() > 1e6
    assert np.abs(imp).max() <= 1.0 + 1e-6
    with pytest.raises(MGRITDivergence, match="diverged at iteration"):
        G.gru_forward(p, X, implicit=False, method="mgrit", m=16, levels=2, max_iter=5)


def test_classifier_gradients_and_training_reduce_loss():
    rng = np.random.default_rng(0)
    p = G.init_classifier(3, 6, 3, seed=0, dtype=np.float64)
    X = rng.standard_normal((10, 8, 3))
    y = rng.integers(0, 3, size=8)
    assert isinstance(p, G.GRUClassifierParams) and p.n_classes == 3 and len(p.arrays()) == 6
    loss, g = G.classifier_loss(p, X, y, implicit=True)
    assert isinstance(g, G.GRUClassifierParams)
    q = p.copy()
    q.W_out[1, 2] += 1e-6
    a = G.classifier_loss(q, X, y, implicit=True, grad=False)
    q.W_out[1, 2] -= 2e-6
    assert abs((a - G.classifier_loss(q, X, y, implicit=True, grad=False)) / 2e-6 - g.W_out[1, 2]) < 1e-7
    _, lm = G.classifier_loss(p, X, y, implicit=True, method="mgrit", m=2, levels=2, max_iter=20, tol=1e-14)
    np.testing.assert_allclose(lm.gru.W_hh, g.gru.W_hh, atol=1e-9)
    res = G.train_classifier(p, X, y, epochs=15, batch=8, lr=0.05, implicit=True)
    assert isinstance(res, TrainResult) and res.seconds > 0 and res.info["method"] == "sequential"
    losses = res.history["loss"]
    assert len(losses) == len(res.history["epoch"]) == 15 and losses[-1] < losses[0]
    assert np.array_equal(p.W_out, G.init_classifier(3, 6, 3, seed=0, dtype=np.float64).W_out)  # input untouched
    assert G.classifier_predict(res.params, X, implicit=True).shape == (8,)
    res_m = G.train_classifier(p, X, y, epochs=2, batch=8, lr=0.05, clip=1.0, implicit=True, method="mgrit",
                               m=2, levels=2, max_iter=2)
    assert res_m.info["mgrit_opts"] == {"m": 2, "levels": 2, "max_iter": 2} and res_m.info["clip"] == 1.0


def test_bad_input_messages():
    p, X, h0, W = _problem()
    with pytest.raises(ValueError, match=r"X: expected shape .*nx=3.*got \(12, 2, 2\)"):
        G.gru_forward(p, X[..., :2])
    with pytest.raises(ValueError, match="h0: expected shape"):
        G.gru_forward(p, X, h0[:, :3])
    with pytest.raises(ValueError, match="method: expected one of"):
        G.gru_forward(p, X, method="scan")
    with pytest.raises(ValueError, match="m: the coarsening factor must be >= 2"):
        G.gru_forward(p, X, method="mgrit", m=1)
    with pytest.raises(TypeError, match="only used with method='mgrit'"):
        G.gru_forward(p, X, m=4)
    with pytest.raises(TypeError, match="unknown option"):
        G.gru_forward(p, X, method="mgrit", banana=1)
    with pytest.raises(TypeError, match="params: expected GRUParams"):
        G.gru_forward({"W_ih": p.W_ih}, X)
    with pytest.raises(ValueError, match=r"params.W_hh: expected shape \(15, 5\)"):
        G.gru_forward(dataclasses.replace(p, W_hh=p.W_hh[:, :4]), X)
    with pytest.raises(ValueError, match="dH: expected shape"):
        G.gru_backward(p, X, G.gru_forward(p, X), W[:, :, :2])
    with pytest.raises(ValueError, match="dt: expected a number > 0"):
        G.gru_forward(p, X, dt=0.0)
    with pytest.raises(TypeError, match="dtype: expected float32 or float64"):
        G.init_params(2, 2, dtype=np.int32)
    pc = G.init_classifier(3, 5, 2)
    with pytest.raises(ValueError, match=r"y: labels must be in \[0, 2\)"):
        G.classifier_loss(pc, X.astype(np.float32), np.array([0, 5]))


def test_more_bad_inputs():
    p, X, h0, W = _problem()
    with pytest.raises(ValueError, match="M: expected an integer >= 1"):
        G.coarse_trajectory(p, X, implicit=True, M=0)
    with pytest.raises(ValueError, match="n_classes: expected an integer >= 2"):
        G.init_classifier(3, 4, 1)
    pc = G.init_classifier(3, 5, 2)
    with pytest.raises(ValueError, match="epochs: expected an integer >= 1"):
        G.train_classifier(pc, X.astype(np.float32), np.zeros(2, dtype=int), epochs=0)
    with pytest.raises(ValueError, match="X: expected a 3-D array"):
        G.classifier_predict(pc, X[0])
    with pytest.raises(TypeError, match="params: expected GRUParams"):
        G.gru_forward([1, 2], X)
    with pytest.raises(TypeError, match="params: expected GRUClassifierParams"):
        G.classifier_predict(p, X)
    with pytest.raises(ValueError, match="method: expected one of"):
        G.train_classifier(pc, X.astype(np.float32), np.zeros(2, dtype=int), method="fast")
    assert G.pad_to_hierarchy(100, 4, 3) == 112 and G.pad_to_hierarchy(16, 4, 2) == 16


# --------------------------------------------------------------------------- bad input
# the cell functions, params and helpers
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _gru():
    p = G.init_params(3, 4, seed=0, dtype=np.float64)
    rng = np.random.default_rng(1)
    return p, rng.standard_normal((2, 12)), rng.standard_normal((2, 4)), rng.standard_normal((5, 2, 3))


@pytest.mark.timeout(30)
def test_gru_cell_functions_check_their_inputs():
    p, gi, h, X = _gru()
    for fn, extra in ((G.gru_cell, ()), (G.gates, ()), (G.gru_cell_backward, (h,))):
        raises_naming(ValueError, "gi", fn, p, gi[:, :11], h, *extra)
        raises_naming(ValueError, "h", fn, p, gi, h[:, :3], *extra)
        bad = gi.copy()
        bad[0, 0] = np.nan
        raises_naming(ValueError, "gi", fn, p, bad, h, *extra)
        raises_naming(TypeError, "params", fn, "p", gi, h, *extra)
    raises_naming(ValueError, "dh_new", G.gru_cell_backward, p, gi, h, h[:1])
    raises_naming(ValueError, "gamma", G.gru_cell, p, gi, h, gamma=-1.0)
    raises_naming(TypeError, "implicit", G.gru_cell, p, gi, h, implicit="yes")
    raises_naming(ValueError, "X", G.input_projection, p, X[..., :2])
    raises_naming(TypeError, "X", G.input_projection, p, X.astype(np.int64))
    Xn = X.copy()
    Xn[0, 0, 0] = np.inf
    raises_naming(ValueError, "X", G.input_projection, p, Xn)
    np.testing.assert_allclose(G.input_projection(p, X), X @ p.W_ih.T + p.b_ih)


@pytest.mark.timeout(30)
def test_gru_params_and_helpers():
    p, *_ = _gru()
    raises_naming(ValueError, "params.W_hh", G.GRUParams, p.W_ih, p.W_hh[:, :3], p.b_ih, p.b_hh)
    raises_naming(ValueError, "params.W_ih", G.GRUParams, p.W_ih[:11], p.W_hh, p.b_ih, p.b_hh)
    raises_naming(TypeError, "dtype", p.astype, np.int8)
    raises_naming(TypeError, "module", G.GRUParams.from_torch, object())
    raises_naming(ValueError, "m", G.pad_to_hierarchy, 10, 1, 2)
    raises_naming(TypeError, "T", G.pad_to_hierarchy, "10", 4, 2)
    raises_naming(ValueError, "W_out", G.GRUClassifierParams, p, np.zeros((2, 5)), np.zeros(2))
    raises_naming(ValueError, "nh", G.init_params, 3, 10**7)  # refused before allocating


@pytest.mark.timeout(30)
@FAST
@given(st.floats(0.05, 20.0), st.booleans())
def test_gru_cell_is_the_private_cell(gamma, implicit):
    p, gi, h, _ = _gru()
    out = G.gru_cell(p, gi, h, implicit=implicit, gamma=gamma)
    r, z, n = G.gates(p, gi, h)
    a = gamma * (1 - z)
    want = (h + a * n) / (1 + a) if implicit else h + a * (n - h)
    np.testing.assert_allclose(out, want, rtol=1e-12)


# ---- issue 29: the classifier checks its head, labels and batch; init names the large argument -----------------
def test_classifier_head_labels_and_empty_batch_are_named():
    p = G.init_classifier(3, 4, 2, dtype=np.float64)
    X = np.random.default_rng(0).standard_normal((5, 2, 3))
    for field, bad in (("W_out", np.nan), ("b_out", np.inf)):
        q = p.copy()
        getattr(q, field).flat[0] = bad
        raises_naming(ValueError, f"params.{field}", G.classifier_loss, q, X, np.array([0, 1]))
    q = p.copy()
    q.W_out = q.W_out[:, :3]
    raises_naming(ValueError, "params.W_out", G.classifier_predict, q, X)
    raises_naming(ValueError, "X", G.classifier_loss, p, X[:, :0], np.zeros(0, int))  # used to return NaN
    raises_naming(ValueError, "y", G.classifier_loss, p, X, np.array([0, -1]))


def test_init_names_the_large_argument():
    from helpers import raises_fast
    raises_fast(ValueError, "nx", G.init_params, 10**11, 4)
    raises_fast(ValueError, "nh", G.init_params, 3, 10**11)


@pytest.mark.parametrize("fn", [G.init_params, lambda **kw: G.init_classifier(n_classes=2, **kw)])
@pytest.mark.parametrize("seed", [-1, "3", None, True, 2.5])
def test_a_bad_seed_is_named(fn, seed):
    raises_naming((ValueError, TypeError), "seed", fn, nx=3, nh=4, seed=seed)


def test_a_huge_classifier_head_is_refused_before_allocating():
    from helpers import raises_fast
    raises_fast(ValueError, "n_classes", G.init_classifier, 3, 4, 10**12)
