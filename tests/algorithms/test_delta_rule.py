"""course_lib.algorithms.delta_rule: the chunked WY/UT form equals the float64 loop (hypothesis); the delta rule
erases before it writes; the price of a scan over chunks; errors."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import course_lib  # noqa: F401  (before numba)
from course_lib.algorithms import delta_rule as dr
from helpers import raises_naming


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(T=st.integers(1, 70), chunk=st.integers(1, 80), B=st.integers(1, 2), heads=st.integers(1, 2),
       d_k=st.integers(1, 6), d_v=st.integers(1, 5), dtype=st.sampled_from(["float32", "float64"]),
       beta=st.sampled_from([None, 0.0, 1.0, 1e-3]), seed=st.integers(0, 2 ** 16), with_S0=st.booleans())
def test_chunked_equals_the_float64_loop(T, chunk, B, heads, d_k, d_v, dtype, beta, seed, with_S0):
    q, k, v, b = dr.random_problem(T, B, heads, d_k, d_v, seed=seed, dtype=dtype)
    if beta is not None:
        b[:] = beta
    S0 = np.random.default_rng(seed).standard_normal((B, heads, d_k, d_v)).astype(dtype) if with_S0 else None
    ref, S_ref = dr.recurrence_float64(q, k, v, b, S0, return_state=True)
    tol = 1e-12 if dtype == "float64" else 5e-6 * math.sqrt(T) + 1e-6
    for method, c in (("sequential", None), ("chunked", chunk), ("chunked", T), ("chunked", None)):
        o, S = dr.delta_rule(q, k, v, b, method=method, chunk=c, S0=S0, return_state=True)
        assert o.shape == (T, B, heads, d_v) and o.dtype == np.dtype(dtype)
        np.testing.assert_allclose(o, ref, atol=tol * (1 + np.abs(ref).max()), rtol=0, err_msg=f"{method} {c}")
        np.testing.assert_allclose(S, S_ref, atol=tol * (1 + np.abs(S_ref).max()), rtol=0)


def test_beta_one_overwrites_the_value_stored_under_a_key():
    """With beta = 1 and a unit key, reading the key right after writing returns exactly the new value."""
    q, k, v, b = dr.random_problem(6, 1, 1, 4, 3, seed=2, dtype="float64")
    b[:] = 1.0
    q[:] = k
    for m in dr.METHODS:
        np.testing.assert_allclose(dr.delta_rule(q, k, v, b, method=m, chunk=4 if m == "chunked" else None), v,
                                   atol=1e-12)


def test_wy_representation_is_the_product_of_the_rank_one_updates():
    q, k, v, b = dr.random_problem(5, 1, 1, 4, 3, seed=3, dtype="float64")
    K, V, Bt = k[:, 0, 0], v[:, 0, 0], b[:, 0, 0]
    W, U = dr.wy_representation(K, V, Bt)
    P = np.eye(4)
    for t in range(5):
        P = (np.eye(4) - Bt[t] * np.outer(K[t], K[t])) @ P
    np.testing.assert_allclose(np.eye(4) - K.T @ W, P, atol=1e-12)


def test_a_scan_over_steps_costs_about_d_times_the_march():
    per_step = dr.scan_price(4096, 64, 64, chunk=1)
    assert per_step["ratio"] > 16          # d^3 per combine against d^2 per step
    assert dr.scan_price(4096, 64, 64, chunk=64, P=4)["scan_span"] < dr.scan_price(4096, 64, 64, chunk=64)["scan_span"]


# --- bad input
def test_bad_inputs_are_named():
    q, k, v, b = dr.random_problem(5, 1, 2, 3, 4)
    raises_naming(ValueError, "method", dr.delta_rule, q, k, v, b, method="scan")
    raises_naming(ValueError, "beta", dr.delta_rule, q, k, v, b + 2)
    raises_naming(ValueError, "beta", dr.delta_rule, q, k, v, b[..., None])
    raises_naming(TypeError, "k", dr.delta_rule, q, k.astype(np.float64), v, b)
    raises_naming(ValueError, "chunk", dr.delta_rule, q, k, v, b, chunk=3)
    raises_naming(ValueError, "chunk", dr.delta_rule, q, k, v, b, method="chunked", chunk=-1)
    raises_naming(ValueError, "T", dr.scan_price, 0, 4, 4)


# ---- issue 29: bad input anywhere -> a clear error naming the argument, or the float64 answer ------------------
_DR = dr.random_problem(6, 1, 2, 4, dtype="float64")


@given(data=st.data())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_bad_arrays_clear_error_or_correct(data):
    from helpers import bad_array, clear_error_or
    names = ("q", "k", "v", "beta")
    i = data.draw(st.integers(0, 3))
    what, bad = data.draw(bad_array(_DR[i]))
    args = list(_DR)
    args[i] = bad
    method = data.draw(st.sampled_from(dr.METHODS))
    allowed = (names[i],) if what not in ("ndim+", "ndim-", "shape", "empty") else names
    out = clear_error_or(allowed, lambda: dr.delta_rule(*args, method=method, chunk=2),
                         lambda o: np.isfinite(o).all())
    if out is not None:
        np.testing.assert_allclose(out, dr.recurrence_float64(*(np.asarray(a, float) for a in args)), atol=1e-9)


def test_absurd_sizes_fail_fast():
    from helpers import raises_fast
    raises_fast(ValueError, "T", dr.random_problem, 10**10)


# ---- bad input (issue 39) ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["K", "V", "beta"])
@pytest.mark.parametrize("bad", ["nan", "complex", "none", "int", "shape", "empty", "float32"])
def test_wy_representation_refuses_bad_arrays_by_name(name, bad):
    rng = np.random.default_rng(39)
    args = dict(K=rng.standard_normal((2, 5, 3)) * 0.3, V=rng.standard_normal((2, 5, 2)), beta=rng.uniform(0, 1, (2, 5)))
    x = args[name]
    y = x.copy()
    y.flat[1] = np.nan
    args[name] = {"nan": y, "complex": x + 0j, "none": None, "int": x.astype(np.int64), "shape": x[:, :4],
                  "empty": x[:0], "float32": x.astype(np.float32)}[bad]
    with pytest.raises((ValueError, TypeError)) as exc:
        dr.wy_representation(args["K"], args["V"], args["beta"])
    # K sets the shapes and the dtype: a K that changed disagrees with the others, and naming either is clear
    assert any(str(exc.value).startswith(f"{n}:") for n in ((name,) if name != "K" else ("K", "V", "beta"))), exc.value


def test_wy_representation_refuses_beta_outside_0_1():
    K, V = np.ones((4, 2)) * 0.5, np.ones((4, 3))
    raises_naming(ValueError, "beta", dr.wy_representation, K, V, np.array([0.5, 1.5, 0.5, 0.5]))


def test_options_are_checked_before_the_run():
    q, k, v, b = dr.random_problem(4, d_k=4, dtype="float64")
    raises_naming(TypeError, "return_state", dr.delta_rule, q, k, v, b, return_state=1)
    raises_naming(TypeError, "return_state", dr.recurrence_float64, q, k, v, b, return_state=None)
    raises_naming((ValueError, TypeError), "chunk", dr.delta_rule, q, k, v, b, method="chunked", chunk=True)
    raises_naming(ValueError, "v", dr.delta_rule, q, k, v[..., :0], b)
    raises_naming(TypeError, "dtype", dr.random_problem, 4, dtype="int32")
    raises_naming((ValueError, TypeError), "seed", dr.random_problem, 4, seed=-3)
