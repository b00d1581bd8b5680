"""The diagonal-Jacobian GRU (ParaGRU-style): parity with its loop, quasi == Newton, BPTT gradients, training."""
import numpy as np
import pytest

from course_lib.algorithms import newton
from course_lib.models import diag_gru
from helpers import raises_naming


def _setup(T=40, B=3, nx=3, nh=5, seed=0, scale=1.0):
    p = diag_gru.init_params(nx, nh, 2, seed=seed, recurrent_scale=scale)
    rng = np.random.default_rng(seed + 1)
    return p, rng.standard_normal((T, B, nx)), 0.5 * rng.standard_normal((B, nh))


@pytest.mark.parametrize("method", ["newton", "quasi"])
@pytest.mark.parametrize("init", diag_gru.INITS)
def test_parallel_newton_matches_the_loop_to_round_off(method, init):
    p, X, h0 = _setup()
    ref = diag_gru.forward(p, X, h0)
    H = diag_gru.forward(p, X, h0, method=method, init=init)
    np.testing.assert_allclose(H, ref, atol=1e-12)


def test_quasi_and_newton_coincide_iterate_by_iterate():
    p, X, h0 = _setup(scale=2.0)
    for k in (1, 2, 3):
        Hn, hn = diag_gru.solve(p, X, h0, method="newton", iters=k)
        Hq, hq = diag_gru.solve(p, X, h0, method="quasi", iters=k)
        np.testing.assert_allclose(Hq, Hn, atol=1e-14)
        np.testing.assert_allclose(hq, hn, atol=1e-14)


def test_jacobian_is_diagonal_and_right():
    p, X, h0 = _setup(T=6, B=2)
    f, jac, _ = diag_gru.system(p)
    GI = X @ p.W_x + p.b
    Hp = np.random.default_rng(3).standard_normal((6, 2, p.nh))
    J = jac(Hp, GI)
    eps, num = 1e-6, np.empty_like(J)
    for j in range(p.nh):
        e = np.zeros(p.nh)
        e[j] = eps
        num[..., :, j] = (f(Hp + e, GI) - f(Hp - e, GI)) / (2 * eps)
    np.testing.assert_allclose(J, num, atol=1e-8)
    off = J * (1 - np.eye(p.nh))
    assert np.all(off == 0.0)


def test_f0_start_is_at_least_as_good_as_zeros_after_three_iterations():
    p, X, h0 = _setup(T=200, scale=0.5)
    ref = diag_gru.forward(p, X)
    err = {i: np.abs(diag_gru.forward(p, X, method="quasi", init=i, iters=3) - ref).max() for i in diag_gru.INITS}
    assert err["f0"] <= err["zeros"] * 1.0000001


@pytest.mark.parametrize("method", ["newton", "quasi"])
def test_gradient_equals_bptt_through_its_own_loop(method):
    p, X, h0 = _setup(T=30)
    Hs = diag_gru.forward(p, X, h0)
    dHs = np.random.default_rng(5).standard_normal(Hs.shape)
    g_ref, dh0_ref = diag_gru.backward(p, X, Hs, dHs, h0)
    g, dh0 = diag_gru.backward(p, X, Hs, dHs, h0, method=method)
    for name in ("W_x", "u", "b"):
        np.testing.assert_allclose(getattr(g, name), getattr(g_ref, name), rtol=1e-10, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(dh0, dh0_ref, rtol=1e-10, atol=1e-12)
    assert isinstance(g, diag_gru.DiagGRUParams)


def test_bptt_matches_finite_differences():
    p, X, h0 = _setup(T=8, B=2, nh=3)
    dHs = np.random.default_rng(6).standard_normal((8, 2, 3))
    g, dh0 = diag_gru.backward(p, X, diag_gru.forward(p, X, h0), dHs, h0)

    def L(q, h=h0):
        return float((diag_gru.forward(q, X, h) * dHs).sum())
    eps = 1e-6
    for name in ("W_x", "u", "b"):
        arr, num = getattr(p, name), np.zeros_like(getattr(p, name))
        for i in np.ndindex(arr.shape):
            q1, q2 = p.copy(), p.copy()
            getattr(q1, name)[i] += eps
            getattr(q2, name)[i] -= eps
            num[i] = (L(q1) - L(q2)) / (2 * eps)
        np.testing.assert_allclose(getattr(g, name), num, rtol=1e-6, atol=1e-8, err_msg=name)
    e = np.zeros_like(h0)
    e[0, 0] = eps
    assert abs(dh0[0, 0] - (L(p, h0 + e) - L(p, h0 - e)) / (2 * eps)) < 1e-7


def test_training_on_remember_first_learns_and_parallel_training_matches():
    from course_lib.models.linear_rnn import remember_first_batch
    X, y = remember_first_batch(10, 256, 4, np.random.default_rng(0))
    Xv, yv = remember_first_batch(10, 256, 4, np.random.default_rng(1))
    seq = diag_gru.train_classifier(X, y, nh=16, epochs=10, lr=3e-2, X_val=Xv, y_val=yv)
    par = diag_gru.train_classifier(X, y, nh=16, epochs=10, lr=3e-2, X_val=Xv, y_val=yv, method="quasi")
    assert seq.history["val_accuracy"][-1] > 0.8
    np.testing.assert_allclose(par.history["loss"], seq.history["loss"], rtol=1e-8)


def test_bad_input_names_the_argument():
    p, X, h0 = _setup()
    raises_naming(ValueError, "method", diag_gru.forward, p, X, method="dense")
    raises_naming(ValueError, "init", diag_gru.forward, p, X, method="quasi", init="ones")
    raises_naming(ValueError, "X", diag_gru.forward, p, X[..., :2])
    raises_naming(ValueError, "h0", diag_gru.forward, p, X, np.zeros((3, 2)))
    raises_naming((ValueError, TypeError), "iters", diag_gru.forward, p, X, method="quasi", iters=-1)
    raises_naming((ValueError, TypeError), "nh", diag_gru.init_params, 3, 0)


def test_divergence_is_an_error_not_nan():
    p, X, _ = _setup(T=300, scale=40.0)
    try:
        H = diag_gru.forward(p, X, method="quasi", init="zeros")
    except newton.NewtonDivergence as exc:
        assert "iteration" in str(exc)
    else:
        assert np.all(np.isfinite(H))


# ---- bad input (issue 29): a clear error naming the argument, or the right answer ---------------------------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_P = diag_gru.init_params(3, 4, 2, seed=1)
_X = np.random.default_rng(2).standard_normal((6, 2, 3))


@pytest.mark.parametrize("method", diag_gru.METHODS)
@given(data=st.data())
@_FAST
def test_forward_bad_X_clear_error_or_correct(method, data):
    from helpers import bad_array, clear_error_or
    what, X = data.draw(bad_array(_X))
    out = clear_error_or("X", lambda: diag_gru.forward(_P, X, method=method, iters=6),
                         lambda H: np.isfinite(H).all())
    if out is not None:
        np.testing.assert_allclose(out, diag_gru.forward(_P, np.asarray(X, float)), rtol=1e-8, atol=1e-10)


@given(data=st.data())
@_FAST
def test_bad_params_clear_error(data):
    from helpers import bad_array, clear_error_or
    p = _P.copy()
    field = data.draw(st.sampled_from(p.names()))
    what, bad = data.draw(bad_array(getattr(p, field)))
    setattr(p, field, bad)
    method = data.draw(st.sampled_from(diag_gru.METHODS))
    # a W_x whose rows no longer match X's nx is a disagreement between the two: naming either is clear
    clear_error_or(("params", f"params.{field}", "X"), lambda: diag_gru.forward(p, _X, method=method, iters=3),
                   lambda H: what == "int" and np.isfinite(H).all())


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_params_refused_everywhere(bad):
    Hs = diag_gru.forward(_P, _X)
    for field in _P.names():
        p = _P.copy()
        getattr(p, field).flat[-1] = bad
        for fn, args in ((diag_gru.forward, (p, _X)), (diag_gru.solve, (p, _X)), (diag_gru.predict, (p, _X)),
                         (diag_gru.backward, (p, _X, Hs, np.ones_like(Hs))),
                         (diag_gru.loss_and_grads, (p, _X, np.array([0, 1])))):
            raises_naming(ValueError, f"params.{field}", fn, *args)


def test_params_type_shapes_empty_batch_labels():
    raises_naming(TypeError, "params", diag_gru.forward, "params", _X)
    p = _P.copy()
    p.u = p.u[:-1]
    raises_naming(ValueError, "params.u", diag_gru.forward, p, _X)
    raises_naming(ValueError, "X", diag_gru.loss_and_grads, _P, _X[:, :0], np.zeros(0, int))
    raises_naming(ValueError, "y", diag_gru.loss_and_grads, _P, _X, np.array([0, 5]))
    raises_naming(ValueError, "y", diag_gru.train_classifier, _X, np.array([-1, 1]), epochs=1, nh=3)


def test_absurd_sizes_fail_fast():
    from helpers import raises_fast
    raises_fast(ValueError, "epochs", diag_gru.train_classifier, _X, np.array([0, 1]), epochs=10**10)
    raises_fast(ValueError, "nh", diag_gru.init_params, 3, 10**10)


@pytest.mark.parametrize("kw, name", [(dict(tol=np.nan), "tol"), (dict(tol="x"), "tol"), (dict(tol=-1.0), "tol"),
                                      (dict(iters=10**12), "iters"), (dict(iters=True), "iters")])
def test_tol_and_iters_are_checked_even_when_the_other_decides(kw, name):
    """issue 39: a fixed ``iters`` made a NaN ``tol`` pass unnoticed; ``iters=10**12`` is refused up front."""
    from helpers import raises_fast
    raises_fast((ValueError, TypeError), name, diag_gru.forward, _P, _X, method="quasi", **{"iters": 2, **kw})


def test_init_params_checks_seed_and_dtype():
    raises_naming((ValueError, TypeError), "seed", diag_gru.init_params, 3, 4, seed=-1)
    raises_naming(TypeError, "dtype", diag_gru.init_params, 3, 4, dtype="int64")
    raises_naming(TypeError, "dtype", diag_gru.init_params, 3, 4, dtype="bogus")


def test_float32_inputs_with_float64_params_solve_in_float64():
    """issue 39: the parallel solve failed on a dtype clash inside the scan (naming its internal ``A`` and ``b``)."""
    X32 = _X.astype(np.float32)
    H = diag_gru.forward(_P, X32, method="quasi", iters=7)
    np.testing.assert_allclose(H, diag_gru.forward(_P, X32.astype(np.float64)), atol=1e-12)
