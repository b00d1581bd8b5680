"""course_lib.algorithms.scan: every method agrees with a float64 loop; backward vs finite differences; errors."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import course_lib  # noqa: F401  (before numba)
from course_lib.core import backend
from course_lib.algorithms import scan, scan_kernels
from helpers import raises_naming

CPU_METHODS = ("sequential", "channels", "hillis_steele", "blelloch", "chunked")


# (method, step shape, dtype, threads, opts, the kernel that must run): every kernel of scan_kernels,
# every branch of the "chunked" choice (narrow rows, lanes, wide rows, forced blocking with and without
# lanes, the textbook split on one and on two threads)
AGREEMENT_CASES = [
    ("sequential", (5,), "float32", 1, {}, "sequential"),
    ("channels", (3, 5), "float32", 2, {}, "channels"),
    ("hillis_steele", (5,), "float32", 1, {}, "hillis_steele"),
    ("blelloch", (3, 5), "float64", 1, {}, "blelloch"),
    ("chunked", (5,), "float32", 2, {}, "sequential"),           # 5..16 float32: one vector, the loop
    ("chunked", (3,), "float32", 2, {}, "lanes"),                # few channels, small problem: lanes
    ("chunked", (1, 2), "float64", 1, {}, "lanes"),
    ("chunked", (3, 7), "float32", 2, {}, "sequential"),         # wide rows, small problem: the loop
    ("chunked", (3,), "float32", 1, {"chunk": 16}, "chunked_blocked"),   # blocked, lanes
    ("chunked", (2, 5), "float64", 2, {"chunk": 5}, "chunked_blocked"),  # blocked, channel loop
    ("chunked", (2,), "float64", 2, {"chunk": 7, "lanes": 8}, "chunked_blocked"),
    ("chunked", (3, 5), "float32", 1, {"chunks": 3}, "chunked"),         # textbook split, one thread
    ("chunked", (5,), "float64", 2, {"chunks": 3}, "chunked_par"),       # textbook split, threads
]


class _KernelSpy:
    """Stands in for scan's ``kernels`` module (scan_kernels itself is untouched: its kernels call each
    other) and records every kernel that scan fetches from it."""

    def __init__(self, ran):
        self.ran = ran

    def __getattr__(self, name):
        fn = getattr(scan_kernels, name)
        if name not in scan.KERNELS:
            return fn
        return lambda *args: (self.ran.append(name), fn(*args))[1]


def _spy_on_kernels(monkeypatch):
    """Record which kernel of scan_kernels (or numpy reference of scan) each call runs."""
    ran = []
    monkeypatch.setattr(scan, "kernels", _KernelSpy(ran))
    for name in ("hillis_steele", "blelloch"):
        fn = getattr(scan, "_" + name)
        monkeypatch.setattr(scan, "_" + name, lambda *args, _fn=fn, _name=name: (ran.append(_name), _fn(*args))[1])
    return ran


@pytest.mark.parametrize("case", AGREEMENT_CASES, ids=lambda c: f"{c[0]}-{c[5]}-{c[2]}-{len(c[1])}d-p{c[3]}-{c[4]}")
@pytest.mark.parametrize("T", [1, 2, 3, 7, 64, 333])
def test_methods_agree_with_float64_loop(case, T, monkeypatch):
    method, step, dtype, threads, opts, kernel = case
    if "chunks" in opts:
        opts = {"chunks": min(opts["chunks"], T)}  # at most one chunk per step
    if threads > backend.max_threads():
        pytest.skip(f"needs {threads} numba threads")
    a, x, h0 = scan.random_problem(T, step[-1], step[0] if len(step) == 2 else None, seed=T, dtype=dtype)
    assert scan.kernel_for(a, x, method=method, threads=threads, **opts) == kernel
    ran = _spy_on_kernels(monkeypatch)
    h = backend.on_threads(threads, lambda: scan.linear_recurrence(a, x, h0, method=method, **opts))()
    assert ran == [kernel]
    ref = scan.recurrence_float64(a, x, h0)
    tol = 2e-5 if dtype == "float32" else 1e-12
    assert h.shape == x.shape and h.dtype == np.dtype(dtype)
    np.testing.assert_allclose(h, ref, rtol=tol, atol=tol)


def test_big_problems_take_the_blocked_scan_on_threads_and_the_loop_on_one():
    a, x, h0 = scan.random_problem(4096, 256, seed=3)  # 2^20 elements: big enough to leave the serial path
    assert scan.kernel_for(a, x, method="chunked", threads=2) == "chunked_blocked"
    assert scan.kernel_for(a, x, method="chunked", threads=1) == "sequential"
    assert scan.kernel_for(a[:, :2], x[:, :2], method="chunked", threads=1) == "lanes"
    with pytest.raises(ValueError, match="threads: expected an integer >= 1"):
        scan.kernel_for(a, x, method="chunked", threads=0)
    with pytest.raises(ValueError, match="method"):
        scan.kernel_for(a, x, method="nope")
    with pytest.raises(ValueError, match="give chunks"):
        scan.kernel_for(a, x, method="chunked", chunks=2, lanes=2)
    if backend.max_threads() >= 2:
        h = backend.on_threads(2, lambda: scan.linear_recurrence(a, x, h0, method="chunked"))()
        ref = scan.recurrence_float64(a, x, h0)
        assert np.max(np.abs(h - ref)) / np.max(np.abs(ref)) < 1e-5


@pytest.mark.parametrize("chunks", [1, 2, 3, 5, 17, 40])
def test_chunked_any_split(chunks):
    a, x, h0 = scan.random_problem(40, 3, seed=1, dtype="float64")
    h = scan.linear_recurrence(a, x, h0, method="chunked", chunks=chunks)
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-12, atol=1e-12)


def test_h0_defaults_to_zero_and_channels_method():
    a, x, _ = scan.random_problem(50, 6, seed=2)
    ref = scan.recurrence_float64(a, x, np.zeros(6, np.float32))
    np.testing.assert_allclose(scan.linear_recurrence(a, x), ref, rtol=1e-5, atol=1e-5)
    for groups in (1, 2, 6):
        np.testing.assert_allclose(scan.linear_recurrence(a, x, method="channels", groups=groups), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opts", [{"chunks": 3}, {"lanes": 16}, {"lanes": 4, "chunk": 700}, {"lanes": 1, "chunk": 700}])
def test_subnormal_products_are_flushed_without_changing_h(opts):
    a, x, h0 = scan.random_problem(5000, 4, seed=3, low=0.01, high=0.1)
    h = scan.linear_recurrence(a, x, h0, method="chunked", **opts)
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-5, atol=1e-6)


def test_combine_is_associative_not_commutative():
    rng = np.random.default_rng(0)
    p, q, r = ((rng.uniform(0.5, 1, 4), rng.standard_normal(4)) for _ in range(3))
    for u, v in zip(scan.combine(scan.combine(p, q), r), scan.combine(p, scan.combine(q, r))):
        np.testing.assert_allclose(u, v)
    assert not np.allclose(scan.combine(p, q)[1], scan.combine(q, p)[1])
    one = (np.ones(4), np.zeros(4))
    for u, v in zip(scan.combine(one, p), p):
        np.testing.assert_allclose(u, v)


def test_counts_match_formulas_and_references():
    assert (scan.scan_counts("sequential", 16).work, scan.scan_counts("sequential", 16).span) == (15, 15)
    c = scan.scan_counts("blelloch", 16)
    assert (c.work, c.span) == (30, 8)
    c = scan.scan_counts("hillis_steele", 16)
    assert (c.work, c.span) == (15 + 14 + 12 + 8, 4)
    a, x, h0 = scan.random_problem(16, 2, seed=0)
    assert scan.blelloch(a, x, h0)[1] == scan.scan_counts("blelloch", 16)
    assert scan.hillis_steele(a, x, h0)[1] == scan.scan_counts("hillis_steele", 16)
    assert scan.scan_counts("blelloch", 1).work == 0


def test_closed_form_is_right_early_and_overflows_late():
    a, x, h0 = scan.random_problem(4000, 2, seed=1, low=0.9, high=1.0)
    h = scan.closed_form(a, x, h0)
    ref = scan.recurrence_float64(a, x, h0)
    np.testing.assert_allclose(h[:100], ref[:100], rtol=1e-3, atol=1e-3)
    assert not np.isfinite(h[-1]).all()


@pytest.mark.parametrize("method", ["sequential", "chunked", "blelloch"])
def test_backward_matches_finite_differences(method):
    rng = np.random.default_rng(0)
    a, x, h0 = scan.random_problem(7, 3, 2, seed=4, dtype="float64")
    w = rng.standard_normal(x.shape)

    def loss(a_, x_, h0_):
        return float((scan.linear_recurrence(a_, x_, h0_) * w).sum())

    h = scan.linear_recurrence(a, x, h0)
    ga, gx, gh0 = scan.linear_recurrence_backward(a, h, h0, w, method=method)
    for arr, g in ((a, ga), (x, gx), (h0, gh0)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + 1e-6
            up = loss(a, x, h0)
            arr[idx] = old - 1e-6
            dn = loss(a, x, h0)
            arr[idx] = old
            num[idx] = (up - dn) / 2e-6
        np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


def test_phase_steps_and_choose_chunks():
    a, x, h0 = scan.random_problem(1000, 8, seed=0)
    steps = scan.phase_steps(a, x, h0, chunks=4)
    assert steps["chunks"] == 4
    for p in ("reduce", "scan", "expand", "expand"):  # a phase may run again: same numbers
        steps[p]()
    np.testing.assert_allclose(steps["result"](), scan.recurrence_float64(a, x, h0), rtol=1e-5, atol=1e-5)
    assert scan.choose_chunks(100, 8, threads=2) == 1          # tiny problem stays serial
    assert scan.choose_chunks(1 << 16, 128, threads=2) == 3     # p + 1 chunks
    assert scan.choose_chunks(1 << 16, 128, threads=1) == 1


def test_choose_lanes():
    assert [scan.choose_lanes(n, 4, 64) for n in (1, 2, 3, 4, 5, 8, 128)] == [16, 8, 4, 4, 1, 1, 1]
    assert [scan.choose_lanes(n, 8, 64) for n in (1, 2, 3)] == [8, 4, 1]
    # AVX2 (32-byte vectors): 8 float32 lanes at most, as issue 23 found on a Zen 3
    assert [scan.choose_lanes(n, 4, 32) for n in (1, 2, 3, 4, 5)] == [8, 4, 2, 2, 1]
    assert [scan.choose_lanes(n, 4, 16) for n in (1, 2, 4)] == [4, 2, 1]


def test_choose_lanes_reads_the_vector_width_from_the_cpu(monkeypatch):
    """The width of the compiled code (here: a zmm kernel), capped by what the CPU's flags support."""
    monkeypatch.setattr(backend, "code_vector", lambda: {"register": "zmm", "bits": 512, "source": "planted"})
    monkeypatch.setattr(backend, "_simd_flags", lambda: "sse4_2 avx avx2 fma")
    assert backend.simd_bytes() == 32 and scan.choose_lanes(1, 4) == 8
    monkeypatch.setattr(backend, "_simd_flags", lambda: "sse4_2 avx avx2 fma avx512f")
    assert backend.simd_bytes() == 64 and scan.choose_lanes(1, 4) == 16
    monkeypatch.setattr(backend, "_simd_flags", lambda: "unknown")
    assert backend.simd_bytes() == 16 and scan.choose_lanes(1, 4) == 4
    raises_naming(ValueError, "vector_bytes", lambda: scan.choose_lanes(1, 4, 0))
    monkeypatch.setattr(backend, "_simd_flags", lambda: "sse4_2 avx avx2 fma avx512f")   # 256-bit code, AVX-512 CPU
    monkeypatch.setattr(backend, "code_vector", lambda: {"register": "ymm", "bits": 256, "source": "planted"})
    assert backend.simd_bytes() == 32 and scan.choose_lanes(1, 4) == 8


# --------------------------------------------------------------------------- bad input
def test_bad_inputs():
    a, x, h0 = scan.random_problem(8, 3, seed=0)
    with pytest.raises(ValueError, match="x: expected shape"):
        scan.linear_recurrence(a, x[:, :2])
    with pytest.raises(ValueError, match="h0: expected shape"):
        scan.linear_recurrence(a, x, np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="T .* must be >= 1"):
        scan.linear_recurrence(a[:0], x[:0])
    with pytest.raises(TypeError, match="a: expected a float32 or float64"):
        scan.linear_recurrence(a.astype(int), x)
    with pytest.raises(TypeError, match="x: expected the dtype of a"):
        scan.linear_recurrence(a, x.astype(np.float64))
    with pytest.raises(ValueError, match="a: expected a 2-D or 3-D"):
        scan.linear_recurrence(a[0], x[0])
    with pytest.raises(ValueError, match="chunks: expected an integer >= 1"):
        scan.linear_recurrence(a, x, method="chunked", chunks=0)
    with pytest.raises(ValueError, match="chunks: expected an integer <= 8"):
        scan.linear_recurrence(a, x, method="chunked", chunks=9)
    with pytest.raises(ValueError, match="method: expected one of"):
        scan.linear_recurrence(a, x, method="magic")
    with pytest.raises(ValueError, match="opts: method 'sequential' accepts"):
        scan.linear_recurrence(a, x, chunks=2)
    with pytest.raises(ValueError, match="grad_h: expected shape"):
        scan.linear_recurrence_backward(a, x, h0, x[:4])
    with pytest.raises(ValueError, match="groups: expected an integer <= 3"):
        scan.linear_recurrence(a, x, method="channels", groups=4)
    with pytest.raises(ValueError, match="lanes: expected a power of two, got 3"):
        scan.linear_recurrence(a, x, method="chunked", lanes=3)
    with pytest.raises(ValueError,
                       match="opts: method 'cuda_chunked' accepts \\['block', 'chunk'\\], got \\['threads'\\]"):
        scan.linear_recurrence(a, x, method="cuda_chunked", threads=4)
    with pytest.raises(ValueError, match="method: expected one of"):
        scan.scan_counts("cuda_chunked", 8)
    with pytest.raises(ValueError, match="T: expected an integer >= 1"):
        scan.choose_chunks(0)
    with pytest.raises(ValueError, match="h0: contains"):
        scan.hillis_steele(a, x, np.full(3, np.nan, np.float32))
    with pytest.raises(ValueError, match="x: expected shape"):
        scan.blelloch(a, x[:3])
    with pytest.raises(ValueError, match="x: expected shape"):
        scan.closed_form(a, x[:3])
    with pytest.raises(ValueError, match="x: expected shape"):
        scan.recurrence_float64(a, x[:3])
    with pytest.raises(ValueError, match="x: expected shape"):
        scan.phase_steps(a, x[:3], chunks=2)
    with pytest.raises(ValueError, match="chunks: expected an integer <= 8"):
        scan.phase_steps(a, x, chunks=9)
    with pytest.raises(TypeError, match="T: expected an integer"):
        scan.random_problem(2.5, 3)


def test_combine_rejects_non_pairs():
    with pytest.raises(TypeError, match="q: expected a pair \\(a, b\\), got tuple of length 3"):
        scan.combine((1.0, 2.0), (1.0, 2.0, 3.0))
    with pytest.raises(TypeError, match="p: expected a pair"):
        scan.combine(np.ones(2), (1.0, 2.0))


def test_plots_draw_and_reject_bad_input():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course_lib.experiments import scan as xscan
    from course_lib.teaching.plots import scan as scan_plots

    fig = scan_plots.draw_scan_trees(8)
    assert len(fig.axes) == 3 and "work 14 combines, span 6" in fig.axes[2].get_title()
    ax = scan_plots.phase_split_bars({"seed": scan_plots.seed_phases()})
    assert ax.get_xlabel() == "fraction of the scan's time"
    assert abs(sum(scan_plots.seed_phases().values()) - 1) < 1e-9
    d = xscan.scan_sweep(T=1024, nh=4, method="chunked", repeat=1)
    _, ax2 = plt.subplots()
    assert "speedup" in scan_plots.render_sweep(d, ax2)
    plt.close("all")
    with pytest.raises(ValueError, match="method: expected one of"):
        scan_plots.draw_scan_tree("cuda_chunked", 8)
    with pytest.raises(ValueError, match="T: expected an integer <= 64"):
        scan_plots.draw_scan_tree("blelloch", 1000)


def test_out_is_written_and_returned():
    a, x, h0 = scan.random_problem(300, 4, batch=2, seed=9)
    ref = scan.recurrence_float64(a, x, h0)
    for method in ("sequential", "chunked", "channels"):
        out = np.full_like(x, np.nan)
        h = scan.linear_recurrence(a, x, h0, method=method, out=out)
        assert np.shares_memory(h, out) and h.shape == x.shape
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="out: expected a 3-D array of shape \\(300, 2, 4\\)"):
        scan.linear_recurrence(a, x, h0, out=np.empty((300, 4), np.float32))
    with pytest.raises(TypeError, match="out: expected dtype float32"):
        scan.linear_recurrence(a, x, h0, out=np.empty(x.shape))
    with pytest.raises(ValueError, match="out: expected a C-contiguous"):
        scan.linear_recurrence(a, x, h0, out=np.empty((300, 2, 8), np.float32)[:, :, ::2])
    with pytest.raises(ValueError, match="opts: method 'blelloch' accepts no options"):
        scan.linear_recurrence(a, x, h0, method="blelloch", out=np.empty_like(x))


# --------------------------------------------------------------------------- non-finite values
@pytest.mark.parametrize("method", ["sequential", "chunked", "blelloch", "hillis_steele", "channels", "lanes"])
def test_non_finite_input_is_located_not_propagated(method):
    rng = np.random.default_rng(3)
    a = rng.uniform(0.5, 0.9, (64, 5)).astype(np.float32)
    x = rng.standard_normal((64, 5)).astype(np.float32)
    x[17, 3] = np.nan
    opts = {"chunked": {"chunks": 4}, "lanes": {"lanes": 8, "chunk": 20}}.get(method, {})
    method = "chunked" if method == "lanes" else method
    with pytest.raises(ValueError, match=r"a, x: the recurrence became non-finite at time step 17, channel 3 "
                                         r"\(a=[0-9.]+, x=nan\): non-finite input"):
        scan.linear_recurrence(a, x, method=method, **opts)
    a[40, 0] = np.inf
    x[17, 3] = 0.0
    with pytest.raises(ValueError, match="time step 40, channel 0 .*non-finite input"):
        scan.linear_recurrence(a, x, method=method, **opts)
    a[40, 0] = np.nan  # a NaN in a (not x) must not vanish in a flushed product
    with pytest.raises(ValueError, match="time step 40, channel 0 .*non-finite input"):
        scan.linear_recurrence(a, x, method=method, **opts)


def test_overflow_is_reported_with_a_reason():
    a = np.full((3000, 2), 1.5, np.float32)
    x = np.ones((3000, 2), np.float32)
    with pytest.raises(ValueError, match=r"overflow: \|a\| > 1 made h grow without bound"):
        scan.linear_recurrence(a, x)
    for opts in ({"method": "channels"}, {"method": "chunked", "lanes": 16}, {"method": "chunked", "chunk": 100}):
        with pytest.raises(ValueError, match="overflow"):
            scan.linear_recurrence(a, x, **opts)


def test_backward_reports_non_finite_gradients_in_forward_time():
    rng = np.random.default_rng(4)
    a = rng.uniform(0.5, 0.9, (32, 3)).astype(np.float32)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    h = scan.linear_recurrence(a, x)
    g = rng.standard_normal((32, 3)).astype(np.float32)
    g[9, 1] = np.inf
    with pytest.raises(ValueError, match=r"a, grad_h: .*time step 9, channel 1 .*grad_h=inf"):
        scan.linear_recurrence_backward(a, h, None, g)


# --------------------------------------------------------------------------- cache-blocked chunked scan
@pytest.mark.parametrize("T", [1, 2, 3, 7, 17, 64, 257])
@pytest.mark.parametrize("chunk", [1, 2, 5, 16, 1000])
@pytest.mark.parametrize("lanes", [1, 2, 8])
def test_blocked_chunked_scan_equals_the_float64_loop(T, chunk, lanes):
    rng = np.random.default_rng(T * 31 + chunk)
    a = rng.uniform(-1, 1, (T, 2, 3))
    x = rng.standard_normal((T, 2, 3))
    h0 = rng.standard_normal((2, 3))
    h = scan.linear_recurrence(a, x, h0, method="chunked", chunk=chunk, lanes=lanes)
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("p", [1, 2, 3, 5])
@pytest.mark.parametrize("K", [1, 4])
@pytest.mark.parametrize("T", [1, 6, 40, 333])
def test_pipelined_rounds_equal_the_float64_loop_for_any_thread_count(p, K, T):
    """The pipelined kernel with p chunk owners (independent of how many threads the machine has):
    rounds of X + (p-1) Y chunks, partial last rounds, empty Y chunks, lanes or the channel loop."""
    a, x, h0 = scan.random_problem(T, 3, seed=T + p + K, dtype="float64", low=-1.0, high=1.0)
    for L in (1, 4, 7):
        h = np.empty_like(a)
        scan_kernels.chunked_blocked(a, x, h0, h, p, L, K, scan_kernels.x_chunk(L))
        np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("H", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("T", [1, 5, 33, 4097, 20000])
def test_simd_lanes_equal_the_float64_loop(dtype, tol, H, T):
    """The default chunked scan on one thread (SIMD lanes over time for few channels), on two
    threads with small chunks, and many lanes: every size and dtype, against the float64 loop."""
    a, x, h0 = scan.random_problem(T, H, seed=T + H, dtype=dtype, low=-1.0, high=1.0)
    ref = scan.recurrence_float64(a, x, h0)
    for opts in ({}, {"chunk": 999}, {"lanes": 64, "chunk": 4000}):
        h = scan.linear_recurrence(a, x, h0, method="chunked", **opts)
        assert h.dtype == np.dtype(dtype)
        np.testing.assert_allclose(h, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("method", ["chunked", "channels"])
def test_backward_through_the_parallel_scans(method):
    a, x, h0 = scan.random_problem(3000, 2, seed=8, dtype="float64")
    h = scan.linear_recurrence(a, x, h0)
    g = np.random.default_rng(1).standard_normal(h.shape)
    ref = scan.linear_recurrence_backward(a, h, h0, g)
    for opts in ({}, {"chunk": 500}) if method == "chunked" else ({},):
        for u, v in zip(scan.linear_recurrence_backward(a, h, h0, g, method=method, **opts), ref):
            np.testing.assert_allclose(u, v, rtol=1e-11, atol=1e-11)


def test_default_chunked_uses_the_blocked_scan_for_big_problems():
    rng = np.random.default_rng(7)
    T, n = 1 << 13, 128  # 2^20 elements: big enough to leave the serial path
    a = rng.uniform(0.9, 1.0, (T, n)).astype(np.float32)
    x = rng.standard_normal((T, n)).astype(np.float32)
    ref = scan.recurrence_float64(a, x)
    h = scan.linear_recurrence(a, x, method="chunked")
    assert np.max(np.abs(h - ref)) / np.max(np.abs(ref)) < 1e-5
    assert scan.chunk_steps(128, 4) == 1536 and scan.chunk_steps(1 << 20, 8) == 8


def test_blocked_option_errors():
    a = np.ones((8, 2), np.float32)
    with pytest.raises(ValueError, match="chunk: expected an integer >= 1, got 0"):
        scan.linear_recurrence(a, a, method="chunked", chunk=0)
    with pytest.raises(ValueError, match="give chunks .* or chunk/lanes .*, not both"):
        scan.linear_recurrence(a, a, method="chunked", chunk=4, chunks=2)
    with pytest.raises(ValueError, match="n: expected an integer >= 1"):
        scan.chunk_steps(0, 4)


# --------------------------------------------------------------------------- bad input
# NaN never passes through a reference, arguments named
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NONFINITE = st.sampled_from([np.inf, -np.inf, np.nan])


REFS = [scan.recurrence_float64, lambda a, x: scan.hillis_steele(a, x)[0], lambda a, x: scan.blelloch(a, x)[0],
        scan.closed_form]


@pytest.mark.timeout(30)
@FAST
@given(NONFINITE, st.sampled_from(["a", "x"]), st.integers(0, 6), st.integers(0, 2), st.sampled_from(range(4)))
def test_scan_references_reject_non_finite(bad, which, t, c, k):
    a, x, _ = scan.random_problem(7, 3, seed=1, dtype="float64")
    (a if which == "a" else x)[t, c] = bad
    raises_naming(ValueError, which, REFS[k], a, x)


@pytest.mark.timeout(30)
@FAST
@given(st.integers(1, 40), st.integers(1, 4), st.sampled_from(["float32", "float64"]))
def test_scan_references_agree_on_good_input(T, H, dtype):
    a, x, h0 = scan.random_problem(T, H, seed=T, dtype=dtype)
    ref = scan.recurrence_float64(a, x, h0)
    tol = 1e-4 if dtype == "float32" else 1e-10
    for h in (scan.hillis_steele(a, x, h0)[0], scan.blelloch(a, x, h0)[0]):
        np.testing.assert_allclose(h, ref, rtol=tol, atol=tol)


@pytest.mark.timeout(30)
@FAST
@given(NONFINITE, st.sampled_from(["a0", "h"]))
def test_linear_recurrence_backward_rejects_non_finite(bad, which):
    a, x, h0 = scan.random_problem(6, 3, seed=2, dtype="float64")
    h = scan.linear_recurrence(a, x, h0)
    g = np.ones_like(h)
    if which == "a0":
        a[0, 1] = bad  # the reverse scan never reads a[0]: it used to come back as a NaN grad_h0
        raises_naming(ValueError, "a", scan.linear_recurrence_backward, a, h, h0, g)
    else:
        h[3, 1] = bad  # h is not scanned: it used to come back as NaN in grad_a
        raises_naming(ValueError, "h", scan.linear_recurrence_backward, a, h, h0, g)


@pytest.mark.timeout(30)
def test_scan_small_helpers():
    raises_naming(TypeError, "dtype", scan.random_problem, 3, 2, dtype="int32")
    raises_naming(ValueError, "T", scan.random_problem, 10**12, 10)
    raises_naming(ValueError, "low", scan.random_problem, 3, 2, low=np.nan)
    raises_naming(ValueError, "cache_bytes", scan.chunk_steps, 4, 4, 0)
    raises_naming(ValueError, "T", scan.ScanCounts, "blelloch", 0, 0, 0)


# --------------------------------------------------------------------------- subnormals (issue 43)
# A running product of factors in [0.5, 1) never underflows to 0 by itself: under round-to-nearest it sticks at
# the smallest subnormal, and every later multiply takes the CPU's subnormal assist (13x on an Intel Xeon). The
# detectors below are not clocks: numpy raises on the hardware's underflow flag (np.errstate(under="raise")), and
# a numba kernel's Python body (.py_func) runs on numpy scalars, which raise the same way; compiled kernels are
# judged by their products, which a product that went subnormal never leaves (it sticks).
LONG = 1 << 16


def subnormals(x) -> int:
    """How many entries of ``x`` are subnormal (0 < |v| < finfo.tiny)."""
    x = np.asarray(x)
    return int(np.count_nonzero((x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_unflushed_product_sticks_at_the_smallest_subnormal_and_the_detectors_see_it(dtype):
    a, _, _ = scan.random_problem(LONG, 1, seed=4, dtype=dtype)                     # a ~ U(0.5, 1)
    with np.errstate(under="ignore"):
        run = np.multiply.accumulate(a[:, 0])                                        # left to right, no flush
    assert run[-1] == np.finfo(dtype).smallest_subnormal and subnormals(run) > LONG // 2
    with np.errstate(under="raise"), pytest.raises(FloatingPointError):
        np.multiply.accumulate(a[:, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_kernels_running_products_never_go_subnormal(dtype):
    """The chunk reduce and the product kernel, their Python bodies on a ~ U(0.5, 1) over 2^16 steps, with every
    underflow raising: their running products are flushed before they could go subnormal."""
    a, x, _ = scan.random_problem(LONG, 1, seed=5, dtype=dtype)
    A, B, out = np.empty(1, dtype), np.empty(1, dtype), np.empty(1, np.float64)
    with np.errstate(under="raise"):
        scan_kernels._reduce_chunk.py_func(a, x, A, B)
        scan_kernels._product_rows.py_func(a, out)
    assert A[0] == 0 and out[0] == 0                           # the true product: exp(-0.31 * 2^16), far below TINY
    np.testing.assert_allclose(B, scan.recurrence_float64(a, x)[-1], rtol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 3, 16, 40])
def test_product_is_flushed_and_equals_the_log_space_product(dtype, n):
    rng = np.random.default_rng(n)
    long = rng.uniform(0.5, 1.0, (LONG, n)).astype(dtype)
    out = scan_kernels.product(long, np.empty(n, np.float64))
    assert subnormals(out) == 0 and not out.any()
    near = rng.uniform(0.9999, 1.0, (LONG + 3, n)).astype(dtype)                 # a product that stays normal
    ref = np.exp(np.log(near.astype(np.float64)).sum(axis=0))
    np.testing.assert_allclose(scan_kernels.product(near, np.empty(n, np.float64)), ref, rtol=1e-9)
    np.testing.assert_allclose(scan_kernels.product(near, np.empty(n, dtype)), ref, rtol=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_chunk_and_lane_products_are_flushed(dtype):
    """The compiled textbook reduce and the lane reduce on 2^16 steps of a ~ U(0.5, 1): no chunk product is
    subnormal (a stuck one would stay at the smallest subnormal), and h still equals the float64 loop."""
    a, x, h0 = scan.random_problem(LONG, 2, seed=6, dtype=dtype)
    bounds = scan_kernels.chunk_bounds(LONG, 3)
    A, B = np.empty((3, 2), dtype), np.empty((3, 2), dtype)
    scan_kernels.phase_reduce(a, x, bounds, A, B)
    assert subnormals(A[:2]) == 0
    n, K = 1, 16
    W = n * K
    flat_a, flat_x = np.ascontiguousarray(a[:, 0]), np.ascontiguousarray(x[:, 0])
    scratch, PA, PB = np.empty((4, scan_kernels.LANE_TILE), dtype), np.empty(W, dtype), np.empty(W, dtype)
    A_out, B_out, WA, WB = np.empty(n, dtype), np.empty(n, dtype), np.empty(LONG, dtype), np.empty(LONG, dtype)
    scan_kernels._lanes_reduce(flat_a, flat_x, n, K, scratch, PA, PB, A_out, B_out, WA, WB)
    assert subnormals(A_out) == subnormals(PA) == subnormals(WA) == 0
    ref = scan.recurrence_float64(a, x, h0)
    for opts in ({"chunks": 3}, {"lanes": 16}, {"lanes": 4, "chunk": 4096}):
        np.testing.assert_allclose(scan.linear_recurrence(a, x, h0, method="chunked", **opts), ref, rtol=1e-4,
                                   atol=1e-4, err_msg=str(opts))


@pytest.mark.parametrize("method", ["hillis_steele", "blelloch"])
def test_numpy_references_never_multiply_into_subnormals(method, monkeypatch):
    a, x, h0 = scan.random_problem(4096, 3, seed=7)                                # float32, a ~ U(0.5, 1)
    with np.errstate(under="raise"):
        h, _ = getattr(scan, method)(a, x, h0)
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-4, atol=1e-4)
    monkeypatch.setattr(scan, "flush", lambda A: A)                                # without the flush: caught
    with np.errstate(under="raise"), pytest.raises(FloatingPointError):
        getattr(scan, method)(a, x, h0)


def _contraction(T, H, rho, seed):
    """``T`` steps of ``rho`` times a random rotation ``(T, 1, H, H)``: every product has norm ``rho^t``."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((T, H, H)))
    return (rho * q)[:, None]


def test_matrix_products_are_flushed_and_equal_the_unflushed_chain_where_it_stays_normal():
    from course_lib.algorithms import matrix_scan

    A = _contraction(4096, 2, 0.6, seed=8)                       # 0.6^4096: float64 subnormal after ~1,400 steps
    b = np.random.default_rng(9).standard_normal((4096, 1, 2))
    with np.errstate(under="raise"):
        P = np.empty((1, 2, 2))
        matrix_scan._compose.py_func(np.ascontiguousarray(A), P)
        h = matrix_scan.linear_recurrence(A, b, method="hillis_steele")
        out, bounds = np.empty_like(b), np.array([0, 2048, 4096])
        matrix_scan._chunked.py_func(np.ascontiguousarray(A), b, np.zeros((1, 2)), out, bounds)
    assert not P.any() and subnormals(matrix_scan.product(A)) == 0
    ref = matrix_scan.recurrence_float64(A, b)
    np.testing.assert_allclose(h, ref, atol=1e-12)
    np.testing.assert_allclose(out, ref, atol=1e-12)
    near = _contraction(3000, 3, 0.9995, seed=10)                # 0.9995^3000 = 0.22: stays normal
    chain = np.broadcast_to(np.eye(3), (1, 3, 3))
    for At in near:
        chain = At @ chain
    np.testing.assert_allclose(matrix_scan.product(near), chain, rtol=1e-10, atol=1e-13)
    raises_naming(ValueError, "A", matrix_scan.product, np.ones((4, 2, 3)))


def test_large_matrix_products_take_blas_and_are_flushed_too():
    from course_lib.algorithms import matrix_scan

    A = _contraction(2000, 20, 0.6, seed=14)                     # H = 20: BLAS per step, flushed per step
    P = matrix_scan.product(A)
    assert P.shape == (1, 20, 20) and subnormals(P) == 0 and not P.any()
    near = _contraction(500, 20, 0.9995, seed=15)
    chain = np.broadcast_to(np.eye(20), (1, 20, 20))
    for At in near:
        chain = At @ chain
    np.testing.assert_allclose(matrix_scan.product(near), chain, rtol=1e-10, atol=1e-13)


def test_random_problem_and_x_chunk_check_their_arguments():
    """issue 39: a huge nh was blamed on T; ``x_chunk(0)`` and ``x_chunk(2.5)`` returned a chunk length."""
    from helpers import raises_fast
    raises_fast(ValueError, "nh", scan.random_problem, 8, 10**12)
    raises_fast(ValueError, "batch", scan.random_problem, 8, 4, 10**12)
    for seed in (-1, None, "3", True):
        raises_naming((ValueError, TypeError), "seed", scan.random_problem, 8, 4, seed=seed)
    raises_naming(ValueError, "high", scan.random_problem, 8, 4, low=0.9, high=0.5)
    for L in (0, -1, 2.5, True, None, "3"):
        raises_naming((ValueError, TypeError), "L", scan_kernels.x_chunk, L)
    assert scan_kernels.x_chunk(3) == 4


@pytest.mark.parametrize("name", ["a", "x"])
def test_phase_steps_refuses_nan_up_front(name):
    """issue 39: the phases check no result, so a NaN in ``a`` or ``x`` came back as h."""
    a, x, h0 = scan.random_problem(16, 3, seed=2)
    (a if name == "a" else x)[5, 1] = np.nan
    raises_naming(ValueError, name, scan.phase_steps, a, x, h0, chunks=2)
