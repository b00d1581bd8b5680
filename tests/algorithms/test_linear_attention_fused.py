"""course_lib.algorithms.linear_attention's fused scalar-decay path (issue 42): the numba passes around the chunk
products and the one stacked product per chunk give the float64 loop's numbers; edge sizes; the products-only
callable; the state scan's flush of subnormal-prone states. No timings are asserted."""
import math

import numpy as np
import pytest

import course_lib  # noqa: F401  (before numba)
from course_lib.algorithms import linear_attention as la
from course_lib.algorithms import linear_attention_fused as laf
from course_lib.algorithms.scan import TINY
from helpers import raises_naming


def _err(o, ref):
    return float(np.abs(o - ref).max() / (1 + np.abs(ref).max()))


@pytest.fixture(autouse=True)
def runs_of_any_length(monkeypatch):
    """The tests' heads are short: let a head be cut in runs of any length, so that the several-runs path (phases 1
    and 2) runs here as on a long sequence (by default a head shorter than 2 x MIN_RUN_STEPS stays one run)."""
    monkeypatch.setattr(laf, "MIN_RUN_STEPS", 1)


def test_short_heads_stay_one_run_by_default(monkeypatch):
    monkeypatch.undo()
    assert laf.MIN_RUN_STEPS >= 2 and laf.run_chunks(32) == -(-laf.MIN_RUN_STEPS // 32) and laf.run_chunks(10**9) == 1
    n = 2 * laf.run_chunks(64) - 1                                 # a head just short of two runs of 64-step chunks
    assert laf.units(1, n, threads=2, min_chunks=laf.run_chunks(64)) == [(0, slice(0, n))]
    assert len(laf.units(1, n + 1, threads=2, min_chunks=laf.run_chunks(64))) == 2
    assert len(laf.units(3, 4, threads=8, min_chunks=4)) == 3      # never fewer runs than heads


@pytest.mark.parametrize("T, chunk, B, heads, d_k, d_v", [
    (1, None, 1, 1, 1, 1),        # T = 1
    (37, 8, 2, 3, 8, 5),          # T not a multiple of the chunk, d_k != d_v, batch and heads
    (64, 16, 1, 1, 8, 8),         # whole chunks
    (50, 50, 1, 2, 4, 3),         # one chunk = T
    (33, 1, 1, 1, 3, 2)])         # chunks of one step
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fused_path_equals_the_float64_loop(T, chunk, B, heads, d_k, d_v, dtype):
    q, k, v, dec = la.random_problem(T, B, heads, d_k, d_v, low=0.8, high=1.0, seed=T, dtype=dtype)
    S0 = np.random.default_rng(T).standard_normal((B, heads, d_k, d_v)).astype(dtype)
    o, S = la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=chunk, S0=S0, return_state=True)
    ref, S_ref = la.recurrence_float64(q, k, v, dec, S0, return_state=True)
    tol = 1e-12 if dtype == "float64" else 2e-6 * math.sqrt(T) + 1e-6
    assert o.dtype == np.dtype(dtype) and o.shape == ref.shape
    assert _err(o, ref) < tol and _err(S, S_ref) < tol


def test_fused_and_unfused_paths_agree_where_both_apply():
    """Decays that fold take the fused path; the same inputs with one strongly decaying step in a chunk take the
    unfused one. Both equal the loop (the unfused path is the pre-issue-42 code, kept for long/strong decays)."""
    q, k, v, dec = la.random_problem(200, 1, 2, 16, 16, low=0.9, high=1.0, seed=3, dtype="float64")
    strong = dec.copy()
    strong[5] = 1e-30     # log decay -69 in one step: that chunk no longer folds
    for d in (dec, strong):
        o = la.gated_linear_recurrence(q, k, v, d, method="chunked", chunk=32)
        assert _err(o, la.recurrence_float64(q, k, v, d)) < 1e-12


def test_subnormal_prone_states_are_flushed_like_the_reference():
    """No new input for a long stretch (k = 0) with decays in [0.5, 1): the state decays towards the subnormal
    range; the state scan flushes below TINY, the float64 loop does not -- they agree to far below round-off."""
    T = 4000
    q, k, v, dec = la.random_problem(T, 1, 1, 8, 8, low=0.5, high=0.999, seed=5)
    dec[:] = np.float32(0.97)    # every chunk folds (32 * log 0.97 = -1), so the fused path runs
    k[64:] = 0
    o, S = la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=32, return_state=True)
    ref, S_ref = la.recurrence_float64(q, k, v, dec, return_state=True)
    assert _err(o, ref) < 1e-5
    assert np.all(np.abs(S_ref) < 1e-30) and np.all((S == 0) | (np.abs(S) >= TINY))


def test_chunked_products_runs_the_products_and_refuses_what_it_does_not_time():
    q, k, v, dec = la.random_problem(100, 1, 1, 8, 8, low=0.9, high=1.0, seed=1)
    run = la.chunked_products(q, k, v, dec, chunk=16, threads=2)
    assert run() is None                                       # runs, twice (the buffers are reused)
    assert run() is None
    _, _, _, pc = la.random_problem(100, 1, 1, 8, 8, per_channel=True, seed=1)
    raises_naming(ValueError, "decay", la.chunked_products, q, k, v, pc)
    strong = dec.copy()
    strong[3] = 1e-30
    raises_naming(ValueError, "decay", la.chunked_products, q, k, v, strong, chunk=16)
    raises_naming(ValueError, "chunk", la.chunked_products, q, k, v, dec, chunk=0)
    raises_naming(ValueError, "threads", la.chunked_products, q, k, v, dec, threads=0)


def test_carry_states_writes_each_incoming_state_and_ends_at_the_last():
    rng = np.random.default_rng(0)
    G = np.cumsum(np.log(rng.uniform(0.5, 1.0, (5, 4))), axis=1)
    dS = rng.standard_normal((5, 3, 2))
    S0 = rng.standard_normal((3, 2))
    R = np.full((5, 4, 2), 7.0)
    S = S0.copy()
    la.carry_states(G, dS, S, R)
    ref = S0.copy()
    for b in range(5):
        np.testing.assert_allclose(R[b, :3], ref, rtol=1e-13)
        ref = np.exp(G[b, -1]) * ref + dS[b]
    np.testing.assert_allclose(S, ref, rtol=1e-13)
    assert np.all(R[:, 3:] == 7.0)                              # rows past d_k untouched
    S2 = S0.copy()
    la.carry_states(G, dS, S2, np.empty((0, 3, 2)))             # no rows: carry only
    np.testing.assert_array_equal(S2, S)


def test_folded_buffers_shapes():
    b = la.folded_buffers(5, 4, 3, 2, np.float32)
    assert {k: v.shape for k, v in b.items()} == {"P": (5, 4, 7), "R": (5, 7, 2), "Kd": (5, 3, 4)}
    assert all(v.dtype == np.float32 and v.flags.c_contiguous for v in b.values())


@pytest.mark.parametrize("T, chunk, B, heads", [
    (203, 16, 1, 1),      # one head cut in runs; T not a multiple of the chunk
    (203, 16, 1, 3),      # fewer heads than threads: each head in runs
    (97, 8, 2, 3),        # batch and heads, a partial last chunk
    (40, 16, 1, 1)])      # fewer chunks (3) than threads: some runs of one chunk
@pytest.mark.parametrize("threads", [1, 2, 5, 16])
def test_runs_of_chunks_on_any_number_of_threads_equal_the_float64_loop(T, chunk, B, heads, threads):
    """The fused path cuts each head's chunks in runs (one per thread where heads are few), carries each run's own
    state, and joins the runs by a scan over them: any cut gives the loop's numbers and final state."""
    q, k, v, dec = la.random_problem(T, B, heads, 8, 6, low=0.85, high=1.0, seed=T + threads)
    S0 = np.random.default_rng(threads).standard_normal((B, heads, 8, 6)).astype(np.float32)
    o, S = la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=chunk, S0=S0, return_state=True,
                                      threads=threads)
    ref, S_ref = la.recurrence_float64(q, k, v, dec, S0, return_state=True)
    tol = 2e-6 * math.sqrt(T) + 1e-6
    assert _err(o, ref) < tol and _err(S, S_ref) < tol
    if threads > 1:   # the runs change the order of float32 sums only
        one = la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=chunk, S0=S0, threads=1)
        assert _err(o, one) < tol


def test_runs_split_every_head_and_cover_every_chunk_once():
    for BH, n, threads in ((1, 10, 2), (3, 10, 8), (4, 10, 2), (2, 1, 16)):
        units = laf.units(BH, n, threads)
        covered = np.concatenate([np.arange(sl.start, sl.stop) for _, sl in units])
        assert np.array_equal(covered, np.arange(BH * n))                      # in order, each chunk once
        assert all(bh * n <= sl.start < sl.stop <= (bh + 1) * n for bh, sl in units)  # a run stays in its head
        assert len(units) >= min(threads, BH * n)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_awkward_sizes_equal_the_float64_loop(per_channel, threads):
    """T a prime (never a multiple of the chunk), heads and batch > 1, d_k != d_v, both kinds of decay."""
    q, k, v, dec = la.random_problem(131, 2, 3, 12, 7, per_channel=per_channel, low=0.8, high=1.0, seed=7)
    for chunk in (1, 10, 64, 131, None):
        o, S = la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=chunk, threads=threads,
                                          return_state=True)
        ref, S_ref = la.recurrence_float64(q, k, v, dec, return_state=True)
        assert _err(o, ref) < 3e-5 and _err(S, S_ref) < 3e-5


# ---- the keys' tiled transpose and the fused pass's finiteness check (issue 42 item 4) --------------------------
@pytest.mark.parametrize("c, d_k, d_v", [(32, 16, 24), (48, 40, 16), (17, 33, 5), (64, 64, 64), (16, 8, 8)])
def test_fold_outputs_equals_numpy_and_says_finite(c, d_k, d_v):
    """Whole 16 x 16 tiles, edges in either direction, and sizes with no whole tile: the same numbers as numpy."""
    from course_lib.algorithms import linear_attention_kernels as lak
    rng = np.random.default_rng(c * d_k)
    g = 3
    Q, K = (rng.standard_normal((g, c, d_k)).astype(np.float32) for _ in range(2))
    V = rng.standard_normal((g, c, d_v)).astype(np.float32)
    G = np.cumsum(np.log(rng.uniform(0.9, 1.0, (g, c))), axis=1)
    P = np.full((g, c, d_k + c), np.nan, np.float32)
    R = np.full((g, d_k + c, d_v), np.nan, np.float32)
    Kd = np.full((g, d_k, c), np.nan, np.float32)
    seen = lak.fold_outputs(Q, K, G, V, P, Kd, R)
    assert seen == 0
    np.testing.assert_allclose(P[:, :, :d_k], Q * np.exp(G)[..., None].astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(Kd, np.swapaxes(K * np.exp(-G)[..., None].astype(np.float32), 1, 2), rtol=1e-6)
    np.testing.assert_array_equal(R[:, d_k:], V)
    for X, where in ((Q, (1, c - 1, d_k - 1)), (K, (2, 0, 0)), (K, (0, c - 1, d_k - 1)), (V, (1, c // 2, 0))):
        for bad in (np.nan, np.inf, -np.inf):
            keep = X[where]
            X[where] = bad
            assert np.isnan(lak.fold_outputs(Q, K, G, V, P, Kd, R)), (where, bad)
            X[where] = keep


@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_chunked_names_a_non_finite_input_found_by_its_fused_pass(name, threads, bad):
    """The chunked form checks q, k, v for NaN/inf in its fused pass (not in passes of their own); the error still
    names the argument, on every number of threads (one head split in runs, or not), and no warning escapes."""
    import warnings
    q, k, v, dec = la.random_problem(300, 1, 2, 16, 16, low=0.9, high=1.0, seed=5, dtype="float32")
    args = dict(q=q, k=k, v=v)
    args[name] = args[name].copy()
    args[name][217, 0, 1, 3] = bad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        msg = raises_naming(ValueError, name, la.gated_linear_recurrence, args["q"], args["k"], args["v"], dec,
                            method="chunked", chunk=32, threads=threads)
    assert "(217, 0, 1, 3)" in msg


@pytest.mark.parametrize("per_channel", [False, True])
def test_chunked_unfused_paths_still_name_a_non_finite_input(per_channel):
    """Per-channel decay, and a chunk decaying past exp(-FOLD_LIMIT), take the numpy paths: checked before them."""
    q, k, v, dec = la.random_problem(64, 1, 1, 8, 8, per_channel=per_channel, low=0.9, high=1.0, seed=6)
    if not per_channel:
        dec[10] = 1e-30          # log decay -69 in one step: that chunk cannot fold
    v = v.copy()
    v[40, 0, 0, 2] = np.nan
    raises_naming(ValueError, "v", la.gated_linear_recurrence, q, k, v, dec, method="chunked", chunk=16)


@pytest.mark.parametrize("T, chunk, d_k, d_v, threads", [(100, 32, 16, 24, 2), (130, 48, 40, 16, 1), (512, 64, 64, 64, 2)])
def test_fused_path_with_whole_key_tiles_equals_the_float64_loop(T, chunk, d_k, d_v, threads):
    q, k, v, dec = la.random_problem(T, 1, 2, d_k, d_v, low=0.85, high=1.0, seed=T, dtype="float32")
    o = la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=chunk, threads=threads)
    assert _err(o, la.recurrence_float64(q, k, v, dec)) < 2e-6 * math.sqrt(T) + 1e-6


@pytest.mark.parametrize("c, d_k", [(1, 3), (5, 2), (128, 64)])
def test_tril_scores_zeroes_exactly_the_upper_triangle(c, d_k):
    from course_lib.algorithms import linear_attention_kernels as lak
    P = np.random.default_rng(c).standard_normal((2, c, d_k + c)).astype(np.float32)
    want = P.copy()
    want[:, :, d_k:] = np.tril(want[:, :, d_k:])
    lak.tril_scores(P, d_k)
    np.testing.assert_array_equal(P, want)


def test_decays_past_float32_normals_are_flushed_not_subnormal():
    """The unfused path (chunks decaying past exp(-FOLD_LIMIT)) and phase 2's pieces form decays such as exp(-95):
    a float32 subnormal, on which every product takes a microcode assist where the CPU has one. They are 0 instead
    (below TINY), and the outputs still equal the float64 loop."""
    tiny32 = np.finfo(np.float32).tiny
    G = np.cumsum(np.full((2, 48), -2.0), axis=1)           # down to exp(-96) within a chunk
    L = la.decay_mask(G, np.float32)
    assert not ((L != 0) & (np.abs(L) < tiny32)).any() and L[0, 47, 0] == 0 and L[0, 47, 47] == 1
    K = np.ones((2, 48, 4), np.float32)
    dS, a = la.chunk_states(K, np.ones((2, 48, 3), np.float32), G, False)
    assert (a == 0).all() and not ((dS != 0) & (np.abs(dS) < tiny32)).any()
    q, k, v, dec = la.random_problem(96, 1, 1, 4, 3, low=0.1, high=0.2, seed=4)   # log decay about -1.9 per step
    o = la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=48)
    assert _err(o, la.recurrence_float64(q, k, v, dec)) < 1e-5


def test_every_provider_gives_the_chunked_form_s_outputs():
    """The fused path's products on each GEMM library this machine has (``provider``): the same outputs and final
    state as the float64 loop, on one and two threads; the products-only callable runs on each too."""
    from course_lib.algorithms import gemm
    q, k, v, dec = la.random_problem(200, 1, 2, 16, 12, low=0.9, high=1.0, seed=5)
    ref, S_ref = la.recurrence_float64(q, k, v, dec, return_state=True)
    tol = 2e-6 * math.sqrt(200) + 1e-6
    for provider in gemm.providers():
        for threads in (1, 2):
            o, S = la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=32, threads=threads,
                                              provider=provider, return_state=True)
            assert _err(o, ref) < tol and _err(S, S_ref) < tol, (provider, threads)
        la.chunked_products(q, k, v, dec, chunk=32, threads=2, provider=provider)()


def test_provider_is_checked():
    q, k, v, dec = la.random_problem(16, 1, 1, 4, 4, seed=0)
    raises_naming(ValueError, "provider", la.gated_linear_recurrence, q, k, v, dec, method="chunked", provider="cublas")
    raises_naming(ValueError, "provider", la.gated_linear_recurrence, q, k, v, dec, method="scan", provider="mkl")
    raises_naming(ValueError, "provider", la.chunked_products, q, k, v, dec, provider=None)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_compiled_runs_and_the_python_path_give_the_same_outputs(monkeypatch, dtype, threads):
    """Where numba can call numpy's BLAS (``gemm.compiled_gemm``), each run goes through
    ``linear_attention_runs`` in one call; elsewhere the Python path runs the same kernels and products. Both equal the
    float64 loop, and the compiled path is the one taken where it exists (counted, so this test cannot pass vacuously
    on a machine that has it)."""
    from course_lib.algorithms import gemm, linear_attention_runs as runs
    q, k, v, dec = la.random_problem(300, 1, 2, 12, 9, low=0.9, high=1.0, seed=11, dtype=dtype)
    ref, S_ref = la.recurrence_float64(q, k, v, dec, return_state=True)
    tol = 1e-12 if dtype == "float64" else 2e-6 * math.sqrt(300) + 1e-6
    calls = []
    real = runs.outputs
    monkeypatch.setattr(runs, "outputs", lambda *a: calls.append(1) or real(*a))
    o, S = la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=16, threads=threads, return_state=True)
    assert _err(o, ref) < tol and _err(S, S_ref) < tol
    assert bool(calls) == (gemm.compiled_gemm(dtype) is not None)
    monkeypatch.setattr(laf, "_compiled", lambda provider, dtype: None)
    o2, S2 = la.gated_linear_recurrence(q, k, v, dec, method="chunked", chunk=16, threads=threads, return_state=True)
    assert _err(o2, ref) < tol and _err(S2, S_ref) < tol
    assert _err(o2, o) < tol
