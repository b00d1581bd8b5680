"""course_lib.algorithms.gemm: every provider this machine has agrees with numpy (float32 within a
tolerance that grows with K, float64 tightly), writes into ``out=`` in place, reads transposed views
without copies, and refuses bad input with an error naming the argument. A provider that is not installed
is skipped with the reason (``pip install -e '.[fast]'`` adds mkl and blis; ``make test-fast`` runs this
file with them). No timed assertions."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (backend decisions first)
from course_lib.algorithms import gemm as G
from helpers import raises_naming


def _provider(name):
    if name not in G.providers():
        pytest.skip(G.absent()[name])
    return name


@pytest.fixture(params=G.PROVIDERS)
def provider(request):
    return _provider(request.param)


SHAPES = [(7, 5, 3), (1, 300, 1), (1, 64, 257), (257, 64, 1), (40, 1, 30), (3, 5000, 4), (64, 512, 2048),
          (130, 70, 41)]


def _ab(m, k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)


def _close(C, A, B, alpha=1.0, beta=0.0, C0=None):
    """C against a float64 reference; float32's tolerance scales with K (a sum of K products)."""
    ref = alpha * (A.astype(np.float64) @ B.astype(np.float64))
    if C0 is not None:
        ref += beta * C0.astype(np.float64)
    k = A.shape[1]
    tol = 1e-12 * k if C.dtype == np.float64 else 4e-7 * k
    scale = np.sqrt(k) * max(1.0, abs(alpha)) + (abs(beta) * np.abs(C0).max() if C0 is not None else 0)
    np.testing.assert_allclose(C, ref, rtol=0, atol=tol * scale + (1e-6 if C.dtype == np.float32 else 1e-13))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_agrees_with_numpy(provider, shape, dtype):
    A, B = _ab(*shape, dtype)
    C = G.gemm(A, B, provider=provider)
    assert C.shape == (shape[0], shape[2]) and C.dtype == dtype
    _close(C, A, B)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_out_is_written_in_place(provider, dtype):
    A, B = _ab(33, 17, 9, dtype, seed=1)
    out = np.full((33, 9), np.nan, dtype)
    got = G.gemm(A, B, out, provider=provider)
    assert got is out
    _close(out, A, B)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_alpha_beta(provider, dtype):
    A, B = _ab(20, 30, 10, dtype, seed=2)
    C0 = np.random.default_rng(3).standard_normal((20, 10)).astype(dtype)
    out = C0.copy()
    G.gemm(A, B, out, provider=provider, alpha=-0.5, beta=2.0)
    _close(out, A, B, -0.5, 2.0, C0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta, tb", [(True, False), (False, True), (True, True)])
def test_transposed_views_read_without_copy(provider, ta, tb, dtype):
    A, B = _ab(24, 40, 16, dtype, seed=4)
    Aop = np.ascontiguousarray(A.T).T if ta else A      # F-contiguous: the transpose of a C-contiguous array
    Bop = np.ascontiguousarray(B.T).T if tb else B
    assert Aop.flags.f_contiguous == ta and Bop.flags.f_contiguous == tb
    _close(G.gemm(Aop, Bop, provider=provider), A, B)


def test_providers_agree_with_each_other():
    A, B = _ab(64, 512, 2048, np.float64, seed=5)
    ref = G.gemm(A, B)
    for p in G.providers():
        np.testing.assert_allclose(G.gemm(A, B, provider=p), ref, rtol=1e-12, atol=1e-10)


def test_empty_inner_dimension(provider):
    A, B = np.ones((3, 0), np.float32), np.ones((0, 4), np.float32)
    out = np.full((3, 4), 5.0, np.float32)
    assert np.array_equal(G.gemm(A, B, provider=provider), np.zeros((3, 4), np.float32))
    G.gemm(A, B, out, provider=provider, beta=0.5)
    assert np.array_equal(out, np.full((3, 4), 2.5, np.float32))


def test_matmul_for(provider):
    A, B = _ab(9, 8, 7, np.float32)
    f = G.matmul_for(provider)
    out = np.empty((9, 7), np.float32)
    assert f(A, B, out=out) is out
    _close(out, A, B)
    assert G.matmul_for("numpy") is np.matmul


def test_bad_input_names_the_argument(provider):
    A, B = _ab(4, 5, 6, np.float32)
    raises_naming(ValueError, "B", G.gemm, A, B[:4], provider=provider)
    raises_naming(TypeError, "B", G.gemm, A, B.astype(np.float64), provider=provider)
    raises_naming(TypeError, "A", G.gemm, A.astype(np.int64), B, provider=provider)
    raises_naming(TypeError, "A", G.gemm, A.tolist(), B, provider=provider)
    raises_naming(ValueError, "A", G.gemm, A[None], B, provider=provider)
    raises_naming(ValueError, "A", G.gemm, np.ones((4, 10), np.float32)[:, ::2], B, provider=provider)
    raises_naming(ValueError, "out", G.gemm, A, B, np.empty((4, 7), np.float32), provider=provider)
    raises_naming(TypeError, "out", G.gemm, A, B, np.empty((4, 6), np.float64), provider=provider)
    raises_naming(ValueError, "out", G.gemm, A, B, np.empty((6, 4), np.float32).T, provider=provider)
    raises_naming(ValueError, "alpha", G.gemm, A, B, provider=provider, alpha=np.nan)
    raises_naming(TypeError, "beta", G.gemm, A, B, provider=provider, beta="1")
    raises_naming(TypeError, "alpha", G.gemm, A, B, provider=provider, alpha=np.ones(2))


def test_out_overlapping_an_input_is_refused(provider):
    buf = np.ones((8, 8), np.float32)
    raises_naming(ValueError, "out", G.gemm, buf, buf, buf, provider=provider)
    raises_naming(ValueError, "out", G.gemm, buf[:4], np.ones((8, 8), np.float32), buf[:4], provider=provider)
    # disjoint rows of one buffer are fine
    big = np.zeros((16, 8), np.float32)
    big[:8] = np.eye(8)
    G.gemm(big[:8], np.full((8, 8), 2.0, np.float32), big[8:], provider=provider)
    assert np.array_equal(big[8:], np.full((8, 8), 2.0, np.float32))


def test_unknown_provider_lists_the_available_ones():
    A, B = _ab(2, 2, 2, np.float32)
    msg = raises_naming(ValueError, "provider", G.gemm, A, B, provider="cublas")
    for p in G.providers():
        assert p in msg


def test_absent_provider_says_how_to_get_it():
    for name, why in G.absent().items():
        msg = raises_naming(ValueError, "provider", G.gemm, np.ones((2, 2)), np.ones((2, 2)), provider=name)
        assert why in msg and "[fast]" in why


def test_providers_and_info():
    avail = G.providers()
    assert avail[0] == "numpy" and set(avail) | set(G.absent()) == set(G.PROVIDERS)
    assert not set(avail) & set(G.absent())
    for p in avail:
        info = G.provider_info(p)
        assert info["provider"] == p and info["library"] and info["version"]


def test_a_missing_provider_is_refused_with_the_reason(monkeypatch):
    why = f"mkl: not installed ({G.EXTRA})"
    monkeypatch.setitem(G._LOADERS, "mkl", lambda: (None, why))
    assert "mkl" not in G.providers() and G.absent()["mkl"] == why
    msg = raises_naming(ValueError, "provider", G.gemm, np.ones((2, 2)), np.ones((2, 2)), provider="mkl")
    assert why in msg and "numpy" in msg
    raises_naming(ValueError, "provider", G.matmul_for, "mkl")


# --------------------------------------------------------------------------- stacks of products (gemm_batch)
def _stacks(g, m, k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((g, m, k)).astype(dtype), rng.standard_normal((g, k, n)).astype(dtype)


def _close_stack(C, A, B):
    ref = np.matmul(A.astype(np.float64), B.astype(np.float64))
    tol = 1e-12 * A.shape[2] if C.dtype == np.float64 else 4e-7 * A.shape[2]
    assert np.abs(C - ref).max() <= tol * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 7, 5, 3), (5, 32, 64, 32), (3, 1, 9, 4), (4, 6, 1, 5), (2, 33, 70, 1)])
def test_gemm_batch_agrees_with_numpy(provider, shape, dtype):
    g, m, k, n = shape
    A, B = _stacks(g, m, k, n, dtype)
    out = np.full((g, m, n), np.nan, dtype)
    assert G.gemm_batch(A, B, out, provider=provider) is out
    _close_stack(out, A, B)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_batch_reads_and_writes_the_chunked_forms_views(provider, dtype):
    """The views the chunked scan hands it: a transposed stack (``Kw^T``), a slice of columns as the left operand
    and another slice of the same buffer as ``out`` (``A = Qd Kd`` into ``P[:, :, d:]``), and a slice of rows."""
    rng = np.random.default_rng(1)
    g, c, d = 4, 8, 6
    Kw, V = (rng.standard_normal((g, c, d)).astype(dtype) for _ in range(2))
    dS = np.empty((g, d, d), dtype)
    G.gemm_batch(np.swapaxes(Kw, 1, 2), V, dS, provider=provider)
    _close_stack(dS, np.swapaxes(Kw, 1, 2), V)
    P, Kd = rng.standard_normal((g, c, d + c)).astype(dtype), rng.standard_normal((g, d, c)).astype(dtype)
    left = P[:, :, :d].copy()
    G.gemm_batch(P[:, :, :d], Kd, P[:, :, d:], provider=provider)
    _close_stack(P[:, :, d:], left, Kd)
    assert np.array_equal(P[:, :, :d], left)                        # the columns beside out are untouched
    R = rng.standard_normal((g, d + c, d)).astype(dtype)
    O = np.empty((g, c, d), dtype)
    G.gemm_batch(P[:, :, d:], R[:, d:], O, provider=provider)
    _close_stack(O, P[:, :, d:], R[:, d:])


def test_gemm_batch_providers_agree_with_each_other():
    A, B = _stacks(6, 32, 96, 64, np.float32, seed=3)
    outs = [G.gemm_batch(A, B, np.empty((6, 32, 64), np.float32), provider=p) for p in G.providers()]
    for o in outs[1:]:
        np.testing.assert_allclose(o, outs[0], rtol=1e-5, atol=1e-4)


def test_gemm_batch_empty_inner_dimension_gives_zeros(provider):
    out = np.full((3, 4, 5), np.nan, np.float32)
    G.gemm_batch(np.ones((3, 4, 0), np.float32), np.ones((3, 0, 5), np.float32), out, provider=provider)
    assert not out.any()


def test_gemm_batch_bad_input_names_the_argument(provider):
    A, B = _stacks(3, 4, 5, 6, np.float32)
    out = np.empty((3, 4, 6), np.float32)
    raises_naming(ValueError, "A", G.gemm_batch, A[0], B, out, provider=provider)
    raises_naming(TypeError, "A", G.gemm_batch, A.astype(np.int32), B, out, provider=provider)
    raises_naming(TypeError, "B", G.gemm_batch, A, B.astype(np.float64), out, provider=provider)
    raises_naming(ValueError, "B", G.gemm_batch, A, B[:, :4], out, provider=provider)
    raises_naming(ValueError, "B", G.gemm_batch, A, B[:2], out, provider=provider)
    raises_naming(ValueError, "A", G.gemm_batch, np.ones((3, 4, 10), np.float32)[:, :, ::2], B, out, provider=provider)
    raises_naming(ValueError, "out", G.gemm_batch, A, B, np.empty((3, 6, 4), np.float32).transpose(0, 2, 1),
                  provider=provider)
    raises_naming(ValueError, "out", G.gemm_batch, A, B, np.empty((3, 4, 5), np.float32), provider=provider)
    raises_naming(ValueError, "out", G.gemm_batch, A, B, np.broadcast_to(np.empty((1, 4, 6), np.float32), (3, 4, 6)),
                  provider=provider)
    buf = np.ones((3, 4, 4), np.float32)
    raises_naming(ValueError, "out", G.gemm_batch, buf, buf, buf, provider=provider)
    raises_naming(ValueError, "A", G.gemm_batch, np.broadcast_to(np.ones((1, 5), np.float32), (3, 4, 5)), B, out,
                  provider=provider)
    raises_naming(ValueError, "provider", G.gemm_batch, A, B, out, provider="cublas")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_gemm_is_numpys_blas_or_none(dtype):
    """numpy's BLAS as a ctypes function numba can call: where it exists, a transposed and a strided product through it
    equal numpy's; elsewhere None (the chunked form then takes its Python path)."""
    f = G.compiled_gemm(dtype)
    if f is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS numba can call here")
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((5, 7)).astype(dtype), rng.standard_normal((5, 9)).astype(dtype)
    C = np.zeros((7, 12), dtype)                                    # out: 7 x 9 in rows of 12
    f(101, 112, 111, 7, 9, 5, 1.0, A.ctypes.data, 7, B.ctypes.data, 9, 0.0, C.ctypes.data, 12)
    np.testing.assert_allclose(C[:, :9], A.T @ B, rtol=1e-5)
    assert not C[:, 9:].any()


def test_compiled_gemm_refuses_other_dtypes():
    raises_naming(TypeError, "dtype", G.compiled_gemm, np.int32)
