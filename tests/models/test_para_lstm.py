"""ParaLSTM (2x2 block-diagonal Jacobian): parity with its loop, quasi (blocks) == Newton (dense), BPTT gradients."""
import numpy as np
import pytest

from course_lib.models import para_lstm
from helpers import raises_naming


def _setup(T=40, B=3, nx=3, nh=5, seed=0, scale=1.0):
    p = para_lstm.init_params(nx, nh, seed=seed, recurrent_scale=scale)
    rng = np.random.default_rng(seed + 1)
    return p, rng.standard_normal((T, B, nx)), 0.5 * rng.standard_normal((B, nh, 2))


@pytest.mark.parametrize("method", ["newton", "quasi"])
@pytest.mark.parametrize("init", para_lstm.INITS)
@pytest.mark.parametrize("T", [1, 40])
def test_parallel_newton_matches_the_loop_to_round_off(method, init, T):
    p, X, s0 = _setup(T=T)
    ref = para_lstm.forward(p, X, s0)
    S = para_lstm.forward(p, X, s0, method=method, init=init)
    np.testing.assert_allclose(S, ref, rtol=0, atol=1e-12)


def test_the_loop_is_the_lstm_equations():
    p, X, s0 = _setup(T=3, B=2, nh=4)
    n = p.nh
    c, h = s0[..., 0], s0[..., 1]
    S = para_lstm.forward(p, X, s0)
    sig = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
    for t in range(3):
        a = X[t] @ p.W_x + p.b + p.u * np.tile(h, 4)
        i, f, g, o = sig(a[:, :n]), sig(a[:, n:2 * n]), np.tanh(a[:, 2 * n:3 * n]), sig(a[:, 3 * n:])
        c = f * c + i * g
        h = o * np.tanh(c)
        np.testing.assert_allclose(S[t, ..., 0], c, atol=1e-14)
        np.testing.assert_allclose(S[t, ..., 1], h, atol=1e-14)


def test_quasi_blocks_and_dense_newton_coincide_iterate_by_iterate():
    p, X, s0 = _setup(scale=2.0)
    for k in (1, 2, 3):
        Sn, hn = para_lstm.solve(p, X, s0, method="newton", iters=k)
        Sq, hq = para_lstm.solve(p, X, s0, method="quasi", iters=k)
        np.testing.assert_allclose(Sq, Sn, rtol=0, atol=1e-14)
        np.testing.assert_allclose(hq, hn, rtol=0, atol=1e-14)


def test_jacobian_is_block_diagonal_and_right():
    p, X, _ = _setup(T=6, B=2, nh=3)
    _, _, jac_dense, f_dense = para_lstm.system(p)
    GI = X @ p.W_x + p.b
    F = np.random.default_rng(3).standard_normal((6, 2, 6))
    J = jac_dense(F, GI)
    eps, num = 1e-6, np.empty_like(J)
    for j in range(6):
        e = np.zeros(6)
        e[j] = eps
        num[..., :, j] = (f_dense(F + e, GI) - f_dense(F - e, GI)) / (2 * eps)
    np.testing.assert_allclose(J, num, atol=1e-8)
    block = np.kron(np.eye(3), np.ones((2, 2)))
    assert np.all(J * (1 - block) == 0.0) and np.any(J[..., 0, 1] != 0.0)  # blocks couple c and h


@pytest.mark.parametrize("method", ["newton", "quasi"])
def test_gradient_equals_bptt_through_its_own_loop(method):
    p, X, s0 = _setup(T=30)
    S = para_lstm.forward(p, X, s0)
    dS = np.random.default_rng(5).standard_normal(S.shape)
    g_ref, ds0_ref = para_lstm.backward(p, X, S, dS, s0)
    g, ds0 = para_lstm.backward(p, X, S, dS, s0, method=method)
    for name in ("W_x", "u", "b"):
        np.testing.assert_allclose(getattr(g, name), getattr(g_ref, name), rtol=1e-10, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(ds0, ds0_ref, rtol=1e-10, atol=1e-12)
    assert isinstance(g, para_lstm.ParaLSTMParams)


def test_bptt_matches_finite_differences():
    p, X, s0 = _setup(T=5, B=2, nx=2, nh=2, seed=3, scale=1.5)
    dS = np.random.default_rng(6).standard_normal((5, 2, 2, 2))
    g, ds0 = para_lstm.backward(p, X, para_lstm.forward(p, X, s0), dS, s0)

    def L(q, s=s0):
        return float((para_lstm.forward(q, X, s) * dS).sum())
    eps = 1e-6
    for name in ("W_x", "u", "b"):
        arr, num = getattr(p, name), np.zeros_like(getattr(p, name))
        for i in np.ndindex(arr.shape):
            qp, qm = p.copy(), p.copy()
            getattr(qp, name)[i] += eps
            getattr(qm, name)[i] -= eps
            num[i] = (L(qp) - L(qm)) / (2 * eps)
        np.testing.assert_allclose(getattr(g, name), num, rtol=1e-6, atol=1e-8, err_msg=name)
    num = np.zeros_like(s0)
    for i in np.ndindex(s0.shape):
        a, b = s0.copy(), s0.copy()
        a[i] += eps
        b[i] -= eps
        num[i] = (L(p, a) - L(p, b)) / (2 * eps)
    np.testing.assert_allclose(ds0, num, rtol=1e-6, atol=1e-8)


def test_float32_stays_float32():
    p, X, s0 = _setup(T=16)
    S = para_lstm.forward(p.astype(np.float32), X.astype(np.float32), method="quasi", iters=3)
    assert S.dtype == np.float32


def test_bad_arguments_are_named():
    p, X, s0 = _setup(T=4)
    raises_naming(ValueError, "method", para_lstm.forward, p, X, method="euler")
    raises_naming(ValueError, "init", para_lstm.forward, p, X, method="quasi", init="ones")
    raises_naming(ValueError, "X", para_lstm.forward, p, X[..., :2])
    raises_naming(ValueError, "h0", para_lstm.forward, p, X, s0[..., :1])
    raises_naming(TypeError, "params", para_lstm.forward, object(), X)
    raises_naming((ValueError, TypeError), "nh", para_lstm.init_params, 3, 0)
