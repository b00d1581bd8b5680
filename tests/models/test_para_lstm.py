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


# ---- bad input (issue 39): every parameter checked by name, before any work ------------------------------------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_P, _X, _S0 = _setup(T=6, B=2, nx=3, nh=4)


@given(data=st.data())
@_FAST
def test_bad_params_are_refused_by_name_for_every_function(data):
    from helpers import bad_array, clear_error_or
    p = _P.copy()
    field = data.draw(st.sampled_from(p.names()))
    what, bad = data.draw(bad_array(getattr(p, field)))
    setattr(p, field, bad)
    S = para_lstm.forward(_P, _X)
    calls = {"forward": lambda: para_lstm.forward(p, _X),
             "quasi": lambda: para_lstm.forward(p, _X, method="quasi", iters=2),
             "backward": lambda: para_lstm.backward(p, _X, S, np.ones_like(S)),
             "jacobian_blocks": lambda: para_lstm.jacobian_blocks(p, S, np.ones((6, 2, 16))),
             "system": lambda: para_lstm.system(p)}
    name = data.draw(st.sampled_from(sorted(calls)))
    # a W_x whose rows no longer match X's nx is a disagreement between the two: naming either is clear; without X
    # (jacobian_blocks, system) a W_x with another nx is a valid parameter set
    other_nx = field == "W_x" and np.ndim(bad) == 2 and np.shape(bad)[1] == 16 and name in ("jacobian_blocks", "system")
    clear_error_or(("params", f"params.{field}", "X", "Sprev", "GI"), calls[name],
                   lambda out: what == "int" or (other_nx and what == "shape"))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_params_are_refused_not_passed_through(bad):
    S = para_lstm.forward(_P, _X)
    for field in _P.names():
        p = _P.copy()
        getattr(p, field).flat[-1] = bad
        for fn, args in ((para_lstm.forward, (p, _X)), (para_lstm.solve, (p, _X)),
                         (para_lstm.backward, (p, _X, S, np.ones_like(S))), (para_lstm.system, (p,))):
            raises_naming(ValueError, f"params.{field}", fn, *args)


def test_none_params_and_wrong_shapes_are_named():
    raises_naming(TypeError, "params", para_lstm.jacobian_blocks, None, np.zeros((2, 2, 4, 2)), np.zeros((2, 2, 16)))
    p = _P.copy()
    p.u = p.u[:-1]
    raises_naming(ValueError, "params.u", para_lstm.forward, p, _X)
    p = _P.copy()
    p.b = None
    raises_naming(TypeError, "params.b", para_lstm.forward, p, _X)
    raises_naming(ValueError, "Sprev", para_lstm.jacobian_blocks, _P, np.zeros((2, 2, 4, 3)), np.zeros((2, 2, 16)))
    raises_naming(ValueError, "GI", para_lstm.jacobian_blocks, _P, np.zeros((2, 2, 4, 2)), np.zeros((2, 2, 15)))
    p = _P.copy()
    p.W_x = p.W_x[:0]          # no input rows: refused even where X is not needed (found by the property test)
    raises_naming(ValueError, "params.W_x", para_lstm.system, p)
    raises_naming(TypeError, "GI", para_lstm.jacobian_blocks, _P, np.zeros((2, 2, 4, 2)), np.zeros((2, 2, 16), complex))
    raises_naming(ValueError, "X", para_lstm.forward, _P, _X[:, :0])


@pytest.mark.parametrize("kw, name", [(dict(init="bogus"), "init"), (dict(init=None), "init"), (dict(tol=np.nan), "tol"),
                                      (dict(tol=-1.0), "tol"), (dict(tol="x"), "tol"), (dict(iters=10**12), "iters"),
                                      (dict(iters=True), "iters"), (dict(iters=2.5), "iters")])
@pytest.mark.parametrize("method", para_lstm.METHODS)
def test_options_are_checked_for_every_method(kw, name, method):
    """``init``/``tol``/``iters`` used to pass silently when the method ignored them (sequential) or when a fixed
    ``iters`` made ``tol`` moot; ``iters=10**12`` would have run for ever."""
    from helpers import raises_fast
    raises_fast((ValueError, TypeError), name, para_lstm.forward, _P, _X, method=method, **kw)


def test_init_params_checks_seed_dtype_and_size():
    from helpers import raises_fast
    raises_naming((ValueError, TypeError), "seed", para_lstm.init_params, 3, 4, seed=-1)
    raises_naming((ValueError, TypeError), "seed", para_lstm.init_params, 3, 4, seed="3")
    raises_naming(TypeError, "dtype", para_lstm.init_params, 3, 4, dtype="int64")
    raises_fast(ValueError, "nx", para_lstm.init_params, 10**12, 4)
    raises_fast(ValueError, "nh", para_lstm.init_params, 3, 10**12)


def test_float32_inputs_with_float64_params_solve_in_float64():
    """issue 39: the parallel solve met a float32 state and float64 projections and failed with a message about
    the scan's internal ``A`` and ``b``; it now solves in the projections' dtype and equals the loop."""
    X32 = _X.astype(np.float32)
    S = para_lstm.forward(_P, X32, method="quasi", iters=7)
    assert S.dtype == np.float64
    np.testing.assert_allclose(S, para_lstm.forward(_P, X32.astype(np.float64)), atol=1e-12)
