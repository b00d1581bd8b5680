"""course_lib.models.lstm with ``provider=``: every method computes the same forward and backward pass
whichever GEMM provider does its products (course_lib.algorithms.gemm) -- float64 to round-off, float32
within float32's. Providers this machine lacks are skipped with the reason (``make test-fast`` installs them)."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (backend decisions first)
from course_lib.algorithms import gemm
from course_lib.models import lstm
from helpers import raises_naming


@pytest.fixture(params=gemm.PROVIDERS)
def provider(request):
    if request.param not in gemm.providers():
        pytest.skip(gemm.absent()[request.param])
    return request.param


def _problem(dtype, T=5, B=3, nx=6, nh=4):
    p = lstm.init_params(nx, nh, seed=3, dtype=dtype)
    rng = np.random.default_rng(4)
    X = rng.standard_normal((T, B, nx)).astype(dtype)
    h0, c0 = (0.5 * rng.standard_normal((B, nh)).astype(dtype) for _ in range(2))
    dH = rng.standard_normal((T, B, nh)).astype(dtype)
    return p, X, h0, c0, dH


def _pass(p, X, h0, c0, dH, method, provider):
    H, (hT, cT), cache = lstm.lstm_forward(p, X, h0, c0, method=method, provider=provider, return_cache=True)
    assert cache.provider == provider
    g, dX, dh0, dc0 = lstm.lstm_backward(p, cache, dH)
    return [H, hT, cT, g.W_ih, g.W_hh, g.b_ih, dX, dh0, dc0]


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
@pytest.mark.parametrize("method", lstm.METHODS)
def test_every_method_agrees_on_every_provider(provider, method, dtype, tol):
    p, X, h0, c0, dH = _problem(dtype)
    ref = _pass(*_problem(np.float64), "fused_pre", "numpy")
    got = _pass(p, X, h0, c0, dH, method, provider)
    for a, r in zip(got, ref):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, r, rtol=tol, atol=tol)


def test_one_step_batch_one(provider):
    p, X, h0, c0, dH = _problem(np.float64, T=1, B=1)
    ref = _pass(p, X, h0, c0, dH, "fused_pre", "numpy")
    for method in ("fused", "fused_pre", "transposed", "workspace"):
        for a, r in zip(_pass(p, X, h0, c0, dH, method, provider), ref):
            np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12)


def test_unknown_provider_is_refused():
    p, X, *_ = _problem(np.float32)
    msg = raises_naming(ValueError, "provider", lstm.lstm_forward, p, X, provider="cublas")
    assert "numpy" in msg
    _, _, cache = lstm.lstm_forward(p, X, return_cache=True)
    raises_naming(ValueError, "cache.provider", lstm.LSTMCache, cache.X, cache.h0, cache.c0, cache.H, cache.C,
                  cache.A, "fused_pre", "cublas")
