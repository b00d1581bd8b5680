"""Property tests (hypothesis): every way of computing the same numbers agrees with a reference,
over random shapes, dtypes (float32/float64) and inputs.

* scan: ``linear_recurrence`` by every CPU method (and its options) == a float64 numpy loop;
* MGRIT: the GRU solved by MGRIT at a tight tolerance == the sequential march;
* LSTM: every ``lstm_forward`` method == ``"naive"``;
* DEER: the GRU solved by Newton over the sequence (DEER, quasi, damped) == the sequential rollout.

Forward APIs only. Sizes stay small so that each test runs in seconds."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.algorithms import scan
from course_lib.models import gru, lstm
from course_lib.parallel import deer

PROPS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                 derandomize=True)
DTYPES = st.sampled_from([np.float32, np.float64])


def _close(got, want, dtype, scale=1.0):
    """float64: to 1e-10 (relative); float32: to a few ulps per step of the run, relative to ``scale``."""
    if np.dtype(dtype) == np.float64:
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * scale)
    else:
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * scale)


# --------------------------------------------------------------------------- scan
def _loop64(a, x, h0):
    """h_t = a_t h_{t-1} + x_t in float64, one step at a time."""
    h = np.zeros(x.shape[1:]) if h0 is None else np.asarray(h0, np.float64)
    out = np.empty(x.shape)
    for t in range(x.shape[0]):
        h = a[t].astype(np.float64) * h + x[t].astype(np.float64)
        out[t] = h
    return out


@st.composite
def scan_problems(draw):
    T = draw(st.integers(1, 80))
    shape = (T, draw(st.integers(1, 3)), draw(st.integers(1, 9))) if draw(st.booleans()) else \
        (T, draw(st.integers(1, 20)))
    dtype = draw(DTYPES)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a = rng.uniform(-1.0, 1.0, shape).astype(dtype)
    x = rng.standard_normal(shape).astype(dtype)
    h0 = rng.standard_normal(shape[1:]).astype(dtype) if draw(st.booleans()) else None
    return a, x, h0


SCAN_RUNS = [("sequential", {}), ("channels", {}), ("channels", {"groups": 2}), ("hillis_steele", {}),
             ("blelloch", {}), ("chunked", {}), ("chunked", {"chunks": 3}), ("chunked", {"chunk": 4, "lanes": 2})]


@pytest.mark.parametrize("method, opts", SCAN_RUNS, ids=[f"{m}{o or ''}" for m, o in SCAN_RUNS])
@settings(PROPS, max_examples=12)
@given(problem=scan_problems())
def test_scan_every_method_agrees_with_a_float64_loop(problem, method, opts):
    a, x, h0 = problem
    limits = {"groups": int(np.prod(x.shape[1:])), "chunks": x.shape[0]}  # at most one group per channel, ...
    opts = {k: min(v, limits.get(k, v)) for k, v in opts.items()}
    h = scan.linear_recurrence(a, x, h0, method=method, **opts)
    assert h.shape == x.shape and h.dtype == x.dtype
    want = _loop64(a, x, h0)
    _close(h, want, x.dtype, scale=max(1.0, float(np.abs(want).max())))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(scan_problems())
def test_scan_cuda_agrees_with_a_float64_loop(problem):
    """The CUDA kernels (on a GPU, or numba's simulator): few examples, the simulator is slow."""
    a, x, h0 = problem
    a, x = a[:24], x[:24]
    h = scan.linear_recurrence(a, x, h0, method="cuda_chunked")
    want = _loop64(a, x, h0)
    _close(h, want, x.dtype, scale=max(1.0, float(np.abs(want).max())))


# --------------------------------------------------------------------------- LSTM
@st.composite
def lstm_problems(draw):
    T, B, nx, nh = (draw(st.integers(1, 8)), draw(st.integers(1, 4)), draw(st.integers(1, 5)),
                    draw(st.integers(1, 6)))
    dtype = draw(DTYPES)
    seed = draw(st.integers(0, 2**16))
    p = lstm.init_params(nx, nh, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed + 1)
    X = rng.standard_normal((T, B, nx)).astype(dtype)
    state = (rng.standard_normal((B, nh)).astype(dtype), rng.standard_normal((B, nh)).astype(dtype)) \
        if draw(st.booleans()) else (None, None)
    return p, X, state


@PROPS
@given(lstm_problems(), st.sampled_from([m for m in lstm.METHODS if m != "naive"]))
def test_lstm_every_method_agrees_with_naive(problem, method):
    p, X, (h0, c0) = problem
    H_ref, (h_ref, c_ref) = lstm.lstm_forward(p, X, h0, c0, method="naive")
    H, (h, c) = lstm.lstm_forward(p, X, h0, c0, method=method)
    assert H.shape == H_ref.shape and H.dtype == X.dtype
    for got, want in ((H, H_ref), (h, h_ref), (c, c_ref)):
        _close(got, want, X.dtype, scale=max(1.0, float(np.abs(want).max())))


# --------------------------------------------------------------------------- GRU: MGRIT and DEER
@st.composite
def gru_problems(draw, min_T=1, max_T=48):
    T, B, nx, nh = (draw(st.integers(min_T, max_T)), draw(st.integers(1, 3)), draw(st.integers(1, 4)),
                    draw(st.integers(1, 6)))
    dtype = draw(DTYPES)
    seed = draw(st.integers(0, 2**16))
    p = gru.init_params(nx, nh, seed=seed, dtype=dtype)
    rng = np.random.default_rng(seed + 1)
    X = rng.standard_normal((T, B, nx)).astype(dtype)
    h0 = rng.uniform(-1, 1, (B, nh)).astype(dtype) if draw(st.booleans()) else None
    return p, X, h0


@pytest.mark.parametrize("m, levels", [(2, 2), (4, 2), (3, 3)])
@PROPS
@given(problem=gru_problems(min_T=10), implicit=st.booleans())
def test_mgrit_agrees_with_the_sequential_march(problem, implicit, m, levels):
    """(T >= 10: the coarsest level needs two steps, T >= 2 m**(levels-1) after padding; shorter
    sequences are refused with a ValueError naming ``levels``.)"""
    p, X, h0 = problem
    tol = 1e-12 if X.dtype == np.float64 else 1e-6
    want = gru.gru_forward(p, X, h0, implicit=implicit, method="sequential")
    got = gru.gru_forward(p, X, h0, implicit=implicit, method="mgrit", m=m, levels=levels, tol=tol,
                          max_iter=X.shape[0] + 2)
    assert got.shape == want.shape
    _close(got, want, X.dtype)


@PROPS
@given(gru_problems(max_T=32), st.sampled_from(["newton", "quasi", "damped"]))
def test_deer_agrees_with_the_sequential_gru(problem, method):
    p, X, h0 = problem
    want = gru.gru_forward(p, X, h0, method="sequential")
    got = deer.gru_forward(p, X, h0, method=method)
    assert got.shape == want.shape
    _close(got, want, X.dtype)
