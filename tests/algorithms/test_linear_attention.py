"""course_lib.algorithms.linear_attention: every method equals the float64 loop (hypothesis over shapes, T not a
multiple of the chunk, T = 1, chunk = T, decays near 0 and near 1); the mask never overflows; errors."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import course_lib  # noqa: F401  (before numba)
from course_lib.algorithms import linear_attention as la
from helpers import raises_naming


def _tol(T, dtype):
    """float32: a tolerance that grows with sqrt(T) (round-off of T summed terms), as public scan checkers use."""
    return 1e-12 if dtype == "float64" else 2e-6 * math.sqrt(T) + 1e-6


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(T=st.integers(1, 70), chunk=st.integers(1, 80), B=st.integers(1, 2), heads=st.integers(1, 2),
       d_k=st.integers(1, 6), d_v=st.integers(1, 5), per_channel=st.booleans(),
       decays=st.sampled_from([(0.0, 1e-3), (0.999, 1.0), (0.3, 1.0), (0.0, 1.0), (1.0, 1.0)]),
       dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2 ** 16), with_S0=st.booleans())
def test_every_method_equals_the_float64_loop(T, chunk, B, heads, d_k, d_v, per_channel, decays, dtype, seed, with_S0):
    q, k, v, d = la.random_problem(T, B, heads, d_k, d_v, per_channel=per_channel, low=decays[0], high=decays[1],
                                   seed=seed, dtype=dtype)
    S0 = np.random.default_rng(seed).standard_normal((B, heads, d_k, d_v)).astype(dtype) if with_S0 else None
    ref, S_ref = la.recurrence_float64(q, k, v, d, S0, return_state=True)
    scale = 1 + np.abs(ref).max()
    for method, c in (("sequential", None), ("scan", None), ("chunked", chunk), ("chunked", T), ("chunked", None)):
        o, S = la.gated_linear_recurrence(q, k, v, d, method=method, chunk=c, S0=S0, return_state=True)
        assert o.shape == (T, B, heads, d_v) and o.dtype == np.dtype(dtype)
        np.testing.assert_allclose(o, ref, atol=_tol(T, dtype) * scale, rtol=0, err_msg=f"{method} chunk={c}")
        np.testing.assert_allclose(S, S_ref, atol=_tol(T, dtype) * (1 + np.abs(S_ref).max()), rtol=0)


@pytest.mark.parametrize("per_channel", [False, True])
def test_long_chunks_do_not_underflow_or_overflow(per_channel):
    """A chunk of 512 steps with decay 0.5: exp(G_i) alone would be 2^-512 (0 in float32) and 1/exp(G_j) inf;
    in log space the result is still the loop's."""
    q, k, v, d = la.random_problem(600, 1, 1, 4, 3, per_channel=per_channel, low=0.5, high=0.5, seed=1)
    ref = la.recurrence_float64(q, k, v, d)
    o = la.gated_linear_recurrence(q, k, v, d, method="chunked", chunk=512)
    assert np.isfinite(o).all()
    np.testing.assert_allclose(o, ref, atol=1e-4 * (1 + np.abs(ref).max()), rtol=0)


def test_decay_mask_is_lower_triangular_in_log_space():
    G = np.cumsum(np.log(np.full(300, 0.01)))          # exp(G) underflows even in float64
    L = la.decay_mask(G)
    assert np.isfinite(L).all() and np.all(np.triu(L, 1) == 0) and np.allclose(np.diag(L), 1)
    np.testing.assert_allclose(L[5, 3], 0.01 ** 2)


def test_chunked_flops_and_default_chunk():
    assert la.chunked_flops(128, 8, 4, 64) == 2 * (2 * 64 * 64 * 12 + 4 * 64 * 32)
    assert la.chunked_flops(129, 8, 4, 64) == 3 * (2 * 64 * 64 * 12 + 4 * 64 * 32)   # padded last chunk
    assert la.default_chunk(10_000, 64) == 128 and la.default_chunk(5, 64) == 5


def test_threads_do_not_change_the_numbers():
    q, k, v, d = la.random_problem(200, 2, 3, 8, 8, seed=4)
    one = la.gated_linear_recurrence(q, k, v, d, method="chunked", chunk=32, threads=1)
    two = la.gated_linear_recurrence(q, k, v, d, method="chunked", chunk=32, threads=2)
    np.testing.assert_array_equal(one, two)


# --- bad input
def test_bad_inputs_are_named():
    q, k, v, d = la.random_problem(5, 1, 2, 3, 4)
    raises_naming(ValueError, "method", la.gated_linear_recurrence, q, k, v, d, method="blelloch")
    raises_naming(ValueError, "k", la.gated_linear_recurrence, q, k[:, :, :1], v, d)
    raises_naming(ValueError, "v", la.gated_linear_recurrence, q, k, v[:4], d)
    raises_naming(ValueError, "decay", la.gated_linear_recurrence, q, k, v, d + 1)
    raises_naming(ValueError, "decay", la.gated_linear_recurrence, q, k, v, d[:, :, :1])
    raises_naming(TypeError, "v", la.gated_linear_recurrence, q, k, v.astype(np.float64), d)
    raises_naming(ValueError, "chunk", la.gated_linear_recurrence, q, k, v, d, method="chunked", chunk=0)
    raises_naming(ValueError, "chunk", la.gated_linear_recurrence, q, k, v, d, method="scan", chunk=2)
    raises_naming(ValueError, "S0", la.gated_linear_recurrence, q, k, v, d, S0=np.zeros((1, 2, 3, 3), np.float32))
    raises_naming(ValueError, "threads", la.gated_linear_recurrence, q, k, v, d, method="chunked", threads=0)
    raises_naming(ValueError, "q", la.gated_linear_recurrence, q[:0], k[:0], v[:0], d[:0])
    raises_naming(ValueError, "q", la.gated_linear_recurrence, np.full_like(q, np.nan), k, v, d)


# ---- issue 29: bad input anywhere -> a clear error naming the argument, or the float64 answer ------------------
_LA = la.random_problem(6, 1, 2, 4, dtype="float64")


@pytest.mark.parametrize("method", la.METHODS)
@given(data=st.data())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_bad_arrays_clear_error_or_correct(method, data):
    from helpers import bad_array, clear_error_or
    names = ("q", "k", "v", "decay")
    i = data.draw(st.integers(0, 3))
    what, bad = data.draw(bad_array(_LA[i]))
    args = list(_LA)
    args[i] = bad
    # a shape that disagrees with another argument may be reported under either name
    allowed = (names[i],) if what not in ("ndim+", "ndim-", "shape", "empty") else names
    out = clear_error_or(allowed, lambda: la.gated_linear_recurrence(*args, method=method, chunk=2),
                         lambda o: np.isfinite(o).all())
    if out is not None:
        np.testing.assert_allclose(out, la.recurrence_float64(*(np.asarray(a, float) for a in args)), atol=1e-9)


def test_absurd_sizes_fail_fast():
    from helpers import raises_fast
    raises_fast(ValueError, "T", la.random_problem, 10**10)
    raises_fast(ValueError, "d_k", la.random_problem, 4, d_k=10**10)


# ---- bad input (issue 39): the chunk helpers check their arrays; a decay above 1 is refused, never clipped ----------
def _chunk_args(n=2, c=5, d_k=3, d_v=4, low=0.5):
    rng = np.random.default_rng(39)
    G = np.cumsum(np.log(rng.uniform(low, 1.0, (n, c))), axis=1)
    return rng.standard_normal((n, c, d_k)), rng.standard_normal((n, c, d_k)), rng.standard_normal((n, c, d_v)), G


def test_a_rising_G_is_refused_by_decay_mask_intra_chunk_and_chunk_states():
    """A decay above 1 makes G rise; ``decay_mask`` clipped the rise to 0 and returned a wrong mask."""
    Q, K, V, G = _chunk_args()
    G[:, 3] = G[:, 2] + 0.5                                  # step 3 decays by e^0.5 = 1.65
    msg = raises_naming(ValueError, "G", la.decay_mask, G)
    assert "1.65" in msg
    raises_naming(ValueError, "G", la.intra_chunk, Q, K, V, G)
    raises_naming(ValueError, "G", la.chunk_states, K, V, G, False)
    Gc = np.cumsum(np.log(np.full((2, 5, 3), 0.9)), axis=1)
    Gc[:, 4, 1] += 1.0
    raises_naming(ValueError, "G", la.chunk_states, K, V, Gc, True)


@pytest.mark.parametrize("name", ["Q", "K", "V", "G"])
@pytest.mark.parametrize("bad", ["nan", "inf", "complex", "none", "int", "ndim-", "empty"])
def test_intra_chunk_refuses_bad_arrays_by_name(name, bad):
    args = dict(zip("QKVG", _chunk_args()))
    x = args[name]
    args[name] = {"nan": np.where(np.arange(x.size).reshape(x.shape) == 1, np.nan, x),
                  "inf": np.where(np.arange(x.size).reshape(x.shape) == 1, -np.inf, x), "complex": x + 0j,
                  "none": None, "int": x.astype(np.int64), "ndim-": x[0], "empty": x[:0]}[bad]
    with pytest.raises((ValueError, TypeError)) as exc:
        la.intra_chunk(args["Q"], args["K"], args["V"], args["G"])
    # K sets the shapes and the dtype: a K that changed disagrees with the others, and naming either is clear
    assert any(str(exc.value).startswith(f"{n}:") for n in ((name,) if name != "K" else "KQVG")), exc.value


def test_chunk_helpers_still_equal_the_loop():
    Q, K, V, G = _chunk_args()
    L = la.decay_mask(G)
    np.testing.assert_allclose(la.intra_chunk(Q, K, V, G), ((Q @ np.swapaxes(K, 1, 2)) * L) @ V, rtol=1e-12)
    dS, a = la.chunk_states(K, V, G, False)
    np.testing.assert_allclose(a[:, 0], np.exp(G[:, -1]), rtol=1e-12)
    raises_naming(TypeError, "per_channel", la.chunk_states, K, V, G, 1)
    raises_naming(TypeError, "dtype", la.decay_mask, G, "int64")


@pytest.mark.parametrize("threads", [0, -1, 2.5, True, "3", 10**12])
@pytest.mark.parametrize("method", la.METHODS)
def test_threads_are_checked_for_every_method(threads, method):
    """``threads`` was checked only inside the chunked form (and not bounded there)."""
    q, k, v, d = la.random_problem(4, d_k=4, dtype="float64")
    raises_naming((ValueError, TypeError), "threads", la.gated_linear_recurrence, q, k, v, d, method=method,
                  threads=threads)


def test_bad_options_are_refused_before_any_work():
    q, k, v, d = la.random_problem(4, d_k=4, dtype="float64")
    raises_naming(TypeError, "return_state", la.gated_linear_recurrence, q, k, v, d, return_state=1)
    raises_naming(TypeError, "return_state", la.recurrence_float64, q, k, v, d, return_state="yes")
    raises_naming(ValueError, "v", la.gated_linear_recurrence, q, k, v[..., :0], d, method="scan")
    raises_naming(ValueError, "q", la.gated_linear_recurrence, q[:, :0], k[:, :0], v[:, :0], d[:, :0])
    for kw, name in ((dict(low=None), "low"), (dict(high="x"), "high"), (dict(low=True), "low"), (dict(seed=-1), "seed"),
                     (dict(seed=2.5), "seed"), (dict(dtype="int64"), "dtype"), (dict(low=0.9, high=0.5), "high")):
        raises_naming((ValueError, TypeError), name, la.random_problem, 4, **kw)
