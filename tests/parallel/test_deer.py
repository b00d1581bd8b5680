"""DEER on the course's GRU and Elman RNN: equals the serial models, the gradient equals BPTT."""
import numpy as np
import pytest

from course_lib.models import gru, jacobians, rnn
from course_lib.parallel import deer


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    p = gru.init_params(4, 6, seed=0, dtype=np.float64)
    X = rng.standard_normal((40, 3, 4))
    h0 = 0.3 * rng.standard_normal((3, 6))
    return p, X, h0


@pytest.mark.parametrize("implicit", [False, True])
@pytest.mark.parametrize("method", deer.METHODS)
def test_gru_forward_equals_serial_gru(problem, implicit, method):
    p, X, h0 = problem
    H, hist = deer.gru_forward(p, X, h0, method=method, implicit=implicit, return_history=True)
    np.testing.assert_allclose(H, gru.gru_forward(p, X, h0, implicit=implicit), atol=1e-10, rtol=0)
    assert hist[-1] <= 1e-12


@pytest.mark.parametrize("method", deer.METHODS)
def test_exact_after_T_iterations_from_zero(problem, method):
    p, X, h0 = problem
    T = 10
    H = deer.gru_forward(p, X[:T], h0, method=method, tol=0.0, max_iter=T)
    np.testing.assert_allclose(H, gru.gru_forward(p, X[:T], h0), atol=1e-14, rtol=0)


def test_chunked_scan_gives_the_same_trajectory(problem):
    p, X, h0 = problem
    a = deer.gru_forward(p, X, h0, scan="sequential")
    b = deer.gru_forward(p, X, h0, scan="chunked")
    np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("implicit", [False, True])
def test_gradient_equals_bptt(problem, implicit):
    p, X, h0 = problem
    dH = np.random.default_rng(1).standard_normal((40, 3, 6))
    g, dh0 = deer.gru_gradient(p, X, dH, h0, implicit=implicit)
    Hs = gru.gru_forward(p, X, h0, implicit=implicit)
    g_ref, dh0_ref = gru.gru_backward(p, X, Hs, dH, h0, implicit=implicit)
    assert type(g) is gru.GRUParams and g.names() == g_ref.names()
    for k, a, b in zip(g_ref.names(), g.arrays(), g_ref.arrays()):
        np.testing.assert_allclose(a, b, atol=1e-9, rtol=1e-9, err_msg=k)
    np.testing.assert_allclose(dh0, dh0_ref, atol=1e-12)


def test_gru_jacobian_matches_finite_differences(problem):
    p, X, _ = problem
    GI = jacobians.gru_input_projection(p, X[:5])
    Hp = np.random.default_rng(2).standard_normal((5, 3, 6))
    for implicit in (False, True):
        step = lambda h: jacobians.gru_step(p, h, GI, implicit=implicit, gamma=2.0)  # noqa: E731
        J = jacobians.gru_jacobian(p, Hp, GI, implicit=implicit, gamma=2.0)
        np.testing.assert_allclose(J, jacobians.finite_difference_jacobian(step, Hp), atol=1e-8)
        np.testing.assert_allclose(jacobians.gru_jacobian(p, Hp, GI, implicit=implicit, gamma=2.0, diagonal=True),
                                   np.diagonal(J, axis1=-2, axis2=-1), atol=1e-15)


def test_one_gru_deer_uses_the_models_cell(problem):
    p, X, h0 = problem
    GI = jacobians.gru_input_projection(p, X)
    Hp = np.concatenate([h0[None], gru.gru_forward(p, X, h0)[:-1]])
    for implicit in (False, True):
        np.testing.assert_array_equal(jacobians.gru_step(p, Hp, GI, implicit=implicit, gamma=0.7),
                                      gru.gru_cell(p, GI, Hp, implicit=implicit, gamma=0.7))
    r, z, n, _ = jacobians.gru_gates(p, Hp, GI)
    for a, b in zip((r, z, n), gru.gates(p, GI, Hp)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(jacobians.gru_serial_numba(p, X, h0), gru.gru_forward(p, X, h0), atol=1e-14)


def test_dicts_are_not_params(problem):
    p, X, h0 = problem
    d = dict(zip(p.names(), p.arrays()))
    for call in (lambda: deer.gru_forward(d, X, h0), lambda: jacobians.gru_step(d, h0, X[0] @ p.W_ih.T),
                 lambda: deer.elman_forward({"Wxh": np.eye(4), "Whh": np.eye(4)}, X)):
        with pytest.raises(TypeError, match=r"^params: expected"):
            call()


@pytest.mark.parametrize("method", deer.METHODS)
def test_elman_forward_equals_serial_rnn(method):
    rp = rnn.init_params(4, 6, 2, seed=0, dtype=np.float64)
    X = np.random.default_rng(3).standard_normal((30, 2, 4))
    h0 = 0.1 * np.ones((2, 6))
    np.testing.assert_allclose(deer.elman_forward(rp, X, h0, method=method), rnn.forward(rp, X, h0).H, atol=1e-10)
    np.testing.assert_allclose(jacobians.elman_serial_numba(rp.Wxh, rp.Whh, X, h0), rnn.forward(rp, X, h0).H,
                               atol=1e-14)


def test_chaotic_gru_newton_diverges_clearly_damped_converges(problem):
    p, _, _ = problem
    p8 = p.copy()
    p8.W_hh *= 8
    X = np.random.default_rng(4).standard_normal((400, 2, 4))
    assert deer.gru_lyapunov(p8, X) > 0 > deer.gru_lyapunov(p, X)
    with pytest.raises(deer.NewtonDivergence, match=r"iteration \d+"):
        deer.gru_forward(p8, X, method="newton")
    H = deer.gru_forward(p8, X, method="damped")
    np.testing.assert_allclose(H, gru.gru_forward(p8, X), atol=1e-10)


@pytest.mark.parametrize("call,exc,name", [
    (lambda p, X: deer.gru_forward(p, X[0]), ValueError, "X"),
    (lambda p, X: deer.gru_forward(p, X, np.zeros((2, 6))), ValueError, "h0"),
    (lambda p, X: deer.gru_forward(p, X, method="bfgs"), ValueError, "method"),
    (lambda p, X: deer.gru_forward(p, X, gamma=0.0), ValueError, "gamma"),
    (lambda p, X: deer.gru_forward(p, X[..., :3]), ValueError, "X"),
    (lambda p, X: deer.gru_forward(gru.GRUParams(p.W_ih, p.W_hh, p.b_ih, p.b_hh + np.nan), X), ValueError,
     "params.b_hh"),
    (lambda p, X: deer.gru_forward(42, X), TypeError, "params"),
    (lambda p, X: deer.gru_gradient(p, X, np.zeros((40, 3, 5))), ValueError, "dH"),
    (lambda p, X: deer.elman_forward(p, X), TypeError, "params"),
])
def test_bad_inputs_name_the_argument(problem, call, exc, name):
    p, X, _ = problem
    with pytest.raises(exc, match=rf"^{name}"):
        call(p, X)


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import BAD_NUMBER, BAD_SEED, bad_arrays, clear_or_correct  # noqa: E402
from helpers import raises_naming  # noqa: E402

_P = gru.init_params(3, 4, seed=0, dtype=np.float64)
_X = np.random.default_rng(0).standard_normal((6, 2, 3))


def test_gru_system_checks_its_params_and_options():
    """It used to accept anything and fail (or not) only when the returned functions were called."""
    raises_naming(TypeError, "params", deer.gru_system, None)
    raises_naming(TypeError, "params", deer.gru_system, "gru")
    raises_naming(TypeError, "params", deer.gru_system, rnn.init_params(3, 4, 2))
    raises_naming(TypeError, "implicit", deer.gru_system, _P, implicit="yes")
    raises_naming(ValueError, "gamma", deer.gru_system, _P, gamma=float("nan"))


def test_an_empty_batch_is_an_error_not_nan():
    """gru_lyapunov on zero sequences returned NaN (a mean over nothing)."""
    raises_naming(ValueError, "X", deer.gru_lyapunov, _P, _X[:, :0])
    raises_naming(ValueError, "X", deer.gru_forward, _P, _X[:, :0])
    raises_naming(ValueError, "seed", deer.gru_lyapunov, _P, _X, seed=-1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(["X", "h0", "gamma", "seed", "implicit", "return_history"]), data=st.data())
def test_deer_bad_input_is_a_clear_error_or_the_serial_answer(case, data):
    draw = {"X": bad_arrays((6, 2, 3)), "h0": bad_arrays((2, 4)), "gamma": BAD_NUMBER, "seed": BAD_SEED,
            "implicit": st.sampled_from(["yes", 2, None]), "return_history": st.sampled_from(["yes", 2, None])}[case]
    kw = {"params": _P, "X": _X, case: data.draw(draw)}
    if case == "seed":
        clear_or_correct(deer.gru_lyapunov, "seed", kw)
        return
    ref = gru.gru_forward(_P, _X)
    clear_or_correct(deer.gru_forward, case, kw, correct=lambda H: np.allclose(H, ref, atol=1e-6))
