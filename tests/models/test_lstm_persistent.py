"""course_lib.models.lstm_persistent (method="persistent"): the numbers of fused_pre on shapes whose batch,
units and sizes are not multiples of the blocks (4 rows, UNITS units, TILE tiles); its products and
transposes equal numpy's; NaN stays NaN; results never alias the scratch of a later call."""
import numpy as np
import pytest

from course_lib.models import lstm, lstm_persistent as P


def _problem(T, B, nx, H, dtype=np.float64, seed=0):
    p = lstm.init_params(nx, H, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed + 1)
    X = rng.standard_normal((T, B, nx)).astype(dtype)
    dH = rng.standard_normal((T, B, H)).astype(dtype)
    h0, c0 = rng.standard_normal((B, H)).astype(dtype), rng.standard_normal((B, H)).astype(dtype)
    return p, X, dH, h0, c0


@pytest.mark.parametrize("T, B, nx, H", [(1, 1, 1, 1), (5, 3, 7, 5), (4, 8, 9, 33), (3, 5, 4, P.UNITS + 7),
                                         (2, 4, 70, 2 * P.UNITS)])
def test_persistent_equals_fused_pre_forward_and_backward(T, B, nx, H):
    p, X, dH, h0, c0 = _problem(T, B, nx, H)
    dh, dc = np.ones((B, H)), np.full((B, H), 0.5)
    ref = lstm.lstm_forward(p, X, h0, c0, method="fused_pre", return_cache=True)
    got = lstm.lstm_forward(p, X, h0, c0, method="persistent", return_cache=True)
    np.testing.assert_allclose(got[0], ref[0], atol=1e-13)
    np.testing.assert_allclose(got[2].A, ref[2].A, atol=1e-13)
    g_ref = lstm.lstm_backward(p, ref[2], dH, dh, dc)
    g_got = lstm.lstm_backward(p, got[2], dH, dh, dc)
    for a, b in zip(g_got[0].arrays() + list(g_got[1:]), g_ref[0].arrays() + list(g_ref[1:])):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_float32_agrees_with_fused_pre():
    p, X, dH, h0, c0 = _problem(6, 6, 40, 50, dtype=np.float32)
    ref = lstm.lstm_forward(p, X, h0, c0, method="fused_pre", return_cache=True)
    got = lstm.lstm_forward(p, X, h0, c0, method="persistent", return_cache=True)
    np.testing.assert_allclose(got[0], ref[0], atol=2e-6)
    g_ref, g_got = lstm.lstm_backward(p, ref[2], dH), lstm.lstm_backward(p, got[2], dH)
    np.testing.assert_allclose(g_got[0].W_hh, g_ref[0].W_hh, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(g_got[1], g_ref[1], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("M, N, K", [(1, 1, 1), (5, 3, 7), (P.TILE + 3, 2 * P.TILE + 1, 9), (8, 8, 130)])
def test_gemm_nt_and_transpose_equal_numpy(M, N, K):
    rng = np.random.default_rng(M * N)
    X, W = rng.standard_normal((M, K)), rng.standard_normal((N, K))
    out = np.full((M, N), np.nan)
    P.gemm_nt(X, W, out)
    np.testing.assert_allclose(out, X @ W.T, rtol=1e-12, atol=1e-12)
    T = np.empty((K, M))
    P.transpose_into(X, T)
    np.testing.assert_array_equal(T, X.T)


def test_step_products_equal_numpy():
    rng = np.random.default_rng(3)
    H, B = P.UNITS + 5, 6
    W, h = rng.standard_normal((4 * H, H)), rng.standard_normal((B, H))
    z = np.empty((B, 4 * H))
    P.step_products(W, h, z)
    np.testing.assert_allclose(z, h @ W.T, rtol=1e-12, atol=1e-12)


def test_nan_stays_nan_and_results_do_not_alias():
    """The dot products may be summed in any order, but not assume away NaN; two calls of one shape share
    the backward's scratch and never the arrays they return."""
    p, X, dH, h0, c0 = _problem(3, 4, 5, 6)
    X[1, 2, 3] = np.nan                         # lstm_forward refuses it by name; the kernels must not hide it
    H, _, _ = P.forward(p.W_ih, p.W_hh, p.b_ih, p.b_hh, X, h0, c0)
    assert np.isnan(H[1:, 2]).all() and np.isfinite(H[0]).all() and np.isfinite(H[1, :2]).all()
    p, X, dH, h0, c0 = _problem(3, 4, 5, 6)
    c1 = lstm.lstm_forward(p, X, method="persistent", return_cache=True)[2]
    g1 = lstm.lstm_backward(p, c1, dH)
    keep = [g1[0].W_hh.copy(), g1[1].copy()]
    g2 = lstm.lstm_backward(p, lstm.lstm_forward(p, -X, method="persistent", return_cache=True)[2], dH)
    np.testing.assert_array_equal(keep[0], g1[0].W_hh)
    np.testing.assert_array_equal(keep[1], g1[1])
    assert not np.shares_memory(g1[1], g2[1]) and not np.shares_memory(g1[0].W_hh, g2[0].W_hh)


# ---- bad input (issue 39): the exported kernels check shapes and dtypes (a wrong one read past an array's end) -------
def _kernel_calls(H=6, B=3, T=4, nx=5, dt=np.float64):
    rng = np.random.default_rng(39)
    W_hh, W_ih, b = rng.standard_normal((4 * H, H)).astype(dt), rng.standard_normal((4 * H, nx)).astype(dt), np.zeros(4 * H, dt)
    h0, c0, X = np.zeros((B, H), dt), np.zeros((B, H), dt), rng.standard_normal((T, B, nx)).astype(dt)
    Hs, Cs, A = P.forward(W_ih, W_hh, b, b, X, h0, c0)
    return {
        "gemm_nt": (P.gemm_nt, dict(X=X[0], W=W_ih, out=np.zeros((B, 4 * H), dt))),
        "transpose_into": (P.transpose_into, dict(src=X[0], dst=np.zeros((nx, B), dt))),
        "step_products": (P.step_products, dict(W_hh=W_hh, h=h0, z=np.zeros((B, 4 * H), dt))),
        "steps_forward": (P.steps_forward, dict(W_hh=W_hh, A=A.copy(), bias=b, h0=h0, c0=c0, H=np.zeros_like(Hs),
                                                C=np.zeros_like(Cs), z=np.zeros((B, 4 * H), dt))),
        "forward": (P.forward, dict(W_ih=W_ih, W_hh=W_hh, b_ih=b, b_hh=b, X=X, h0=h0, c0=c0)),
        "backward": (P.backward, dict(W_ih=W_ih, W_hh=W_hh, X=X, h0=h0, c0=c0, H=Hs, C=Cs, A=A, dH=np.ones_like(Hs),
                                      dh=np.zeros_like(h0), dc=np.zeros_like(c0))),
    }


_ARGS = [(fn, arg) for fn, (_, kw) in _kernel_calls().items() for arg in kw]


@pytest.mark.parametrize("fn, arg", _ARGS)
@pytest.mark.parametrize("bad", ["row", "col", "ndim", "float32", "list", "none", "int"])
def test_kernels_refuse_a_wrong_shape_or_dtype_by_name(fn, arg, bad):
    f, kw = _kernel_calls()[fn]
    x = kw[arg]
    kw[arg] = {"row": x[:-1] if x.ndim > 1 else x[:-1], "col": x[..., :-1], "ndim": x[None],
               "float32": x.astype(np.float32), "list": x.tolist(), "none": None, "int": x.astype(np.int64)}[bad]
    if fn == "forward" and arg == "X" and bad == "row":       # fewer steps: a valid, shorter run
        assert f(**kw)[0].shape[0] == x.shape[0] - 1
        return
    with pytest.raises((ValueError, TypeError)) as exc:
        f(**kw)
    # the first array checked sets the dtype and the named sizes: a change in it disagrees with another one, and
    # naming that one is clear; what is not an array at all is named itself
    named = str(exc.value).split(":")[0]
    assert named in kw and (named == arg or bad not in ("none", "list")), exc.value


def test_kernels_refuse_read_only_outputs():
    f, kw = _kernel_calls()["gemm_nt"]
    kw["out"].flags.writeable = False
    with pytest.raises(ValueError, match="out: the kernel writes into it"):
        f(**kw)


def test_kernels_still_equal_numpy_after_the_checks():
    f, kw = _kernel_calls()["step_products"]
    kw["h"] = np.random.default_rng(1).standard_normal(kw["h"].shape)
    f(**kw)
    np.testing.assert_allclose(kw["z"], kw["h"] @ kw["W_hh"].T, rtol=1e-12, atol=1e-12)
