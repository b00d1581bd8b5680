"""Worksheet 08 checks: they pass the references and explain what is wrong with wrong answers,
including CUDA kernels that are right only by luck (missing barrier, unwritten shared memory), a chunked scan
whose carries walk the sequence (measured span), and a fast scan whose products stick at subnormal numbers
(traced in float32, on every machine)."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (before numba)
from numba import cuda, float64

from course_lib.core import backend
from course_lib.algorithms import scan, scan_cuda
from course_lib.teaching.checks import scan as scan_checks
from course_lib.teaching.checks.core import ExerciseFailed

BLOCK_MAX = scan_cuda.BLOCK_MAX
needs_sim = pytest.mark.skipif(backend.cuda_mode() != "simulator",
                               reason="race tracing needs numba's CUDA simulator (a GPU is present)")


def good_chunked(a, x, h0, chunks):
    T = a.shape[0]
    bounds = np.linspace(0, T, chunks + 1).round().astype(int)
    pairs = []
    for c in range(chunks):
        A, B = np.ones_like(h0), np.zeros_like(h0)
        for t in range(bounds[c], bounds[c + 1]):
            A, B = scan.combine((A, B), (a[t], x[t]))
        pairs.append((A, B))
    carries = [h0]
    for A, B in pairs[:-1]:
        carries.append(A * carries[-1] + B)
    h = np.empty_like(x)
    for c in range(chunks):
        prev = carries[c]
        for t in range(bounds[c], bounds[c + 1]):
            prev = a[t] * prev + x[t]
            h[t] = prev
    return h


def _expand(a, x, carry):
    """The recurrence over one chunk's rows from ``carry`` (a student's own loop, no course function)."""
    h = np.empty_like(x)
    for t in range(a.shape[0]):
        carry = a[t] * carry + x[t]
        h[t] = carry
    return h


def sliced_chunked(a, x, h0, chunks):
    """A valid alternative: whole-row updates per chunk, each chunk expanded on its slices."""
    T = a.shape[0]
    bounds = np.linspace(0, T, chunks + 1).astype(int)
    carry = h0
    h = np.empty_like(x)
    reduced = []
    for c in range(chunks):
        s, e = bounds[c], bounds[c + 1]
        A, B = np.ones_like(h0), np.zeros_like(h0)
        for t in range(s, e):
            A, B = a[t] * A, a[t] * B + x[t]
        reduced.append((A, B))
    for c in range(chunks):
        s, e = bounds[c], bounds[c + 1]
        h[s:e] = _expand(a[s:e], x[s:e], carry)
        carry = reduced[c][0] * carry + reduced[c][1]
    return h


def serial_walk_chunked(a, x, h0, chunks):
    """Wrong: each chunk's carry found by walking the sequence step by step, then every chunk expanded from it --
    every a_t is read twice, the numbers are right, but the span is the loop's."""
    T = a.shape[0]
    bounds = np.linspace(0, T, chunks + 1).round().astype(int)
    carries, prev = [h0], h0
    for c in range(chunks - 1):
        for t in range(bounds[c], bounds[c + 1]):
            prev = a[t] * prev + x[t]
        carries.append(prev)
    h = np.empty_like(x)
    for c in range(chunks):
        h[bounds[c]:bounds[c + 1]] = _expand(a[bounds[c]:bounds[c + 1]], x[bounds[c]:bounds[c + 1]], carries[c])
    return h


def test_references_pass(capsys, monkeypatch):
    """Right answers, with the shortcut watch off (calling the course's answers is a shortcut: test_shortcuts.py)."""
    from course_lib.teaching.checks import shortcuts

    monkeypatch.setattr(shortcuts, "calls_made", lambda *a, **k: [])
    scan_checks.check_combine(scan.combine)
    scan_checks.check_combine(lambda p, q: [q[0] * p[0], q[0] * p[1] + q[1]])  # a list of two is fine
    scan_checks.check_chunked_scan(good_chunked)
    scan_checks.check_chunked_scan(sliced_chunked)
    scan_checks.check_backward(scan.linear_recurrence_backward)
    out = capsys.readouterr().out
    for ex, n in (("8.1", 5), ("8.2", 6), ("8.3", 5)):
        assert f"Exercise {ex} passed: {n}/{n} cases" in out
    assert "span, measured: 45 dependent operations at T=64 with 8 chunks (69 with 4; the loop: 128)" in out


def test_chunked_scan_whose_carries_walk_the_sequence_is_named():
    """Issue 39: right numbers and every step read twice, but the carries come from a serial walk: the measured
    span (the loop's, the same for 4 and 8 chunks) rejects it, naming the walk."""
    assert scan_checks.chunk_work(serial_walk_chunked)["steps_read_twice"] >= 18     # the old count passed it
    with pytest.raises(ExerciseFailed, match=r"Exercise 8\.2 failed:\n  your numbers are right and you read every "
                                             r"step twice, but your chunks wait for each other: [\s\S]*span\) is 128 "
                                             r"for T=64 with 8 chunks and 128 with 4[\s\S]*walking the sequence step "
                                             r"by step"):
        scan_checks.check_chunked_scan(serial_walk_chunked)


def test_combine_in_the_wrong_order_is_explained():
    with pytest.raises(ExerciseFailed, match="(?s)Exercise 8.1 failed on case 1/5.*not commutative"):
        scan_checks.check_combine(lambda p, q: (p[0] * q[0], p[0] * q[1] + p[1]))


def test_chunked_scan_with_wrong_carries_is_explained():
    def bad(a, x, h0, chunks):  # every chunk restarts from h0
        bounds = np.linspace(0, a.shape[0], chunks + 1).astype(int)
        h = np.empty_like(x)
        for c in range(chunks):
            s, e = bounds[c], bounds[c + 1]
            h[s:e] = scan.linear_recurrence(a[s:e], x[s:e], h0)
        return h

    with pytest.raises(ExerciseFailed, match=r"(?s)'h' differs.*time step 4.*Hint: Chunk c must start"):
        scan_checks.check_chunked_scan(bad)


def test_chunked_scan_ignoring_chunks_is_named():
    def sequential(a, x, h0, chunks):
        h = np.empty_like(x)
        prev = h0
        for t in range(a.shape[0]):
            prev = a[t] * prev + x[t]
            h[t] = prev
        return h
    with pytest.raises(ExerciseFailed, match=r"does not work in chunks[\s\S]*ignoring `chunks`"):
        scan_checks.check_chunked_scan(sequential)
    with pytest.raises(ExerciseFailed, match=r"does not work in chunks"):
        scan_checks.check_chunked_scan(lambda a, x, h0, chunks: scan.linear_recurrence(a, x, h0))


def test_in_place_inputs_are_named():
    def chunked_in_place(a, x, h0, chunks):
        h = good_chunked(a, x, h0, chunks)
        x[:] = h  # reuses x as the output buffer
        return x
    with pytest.raises(ExerciseFailed, match=r"Exercise 8.2 failed on case 1/6[\s\S]*changed its input x in place"):
        scan_checks.check_chunked_scan(chunked_in_place)

    def combine_in_place(p, q):
        a1, b1 = p
        a2, b2 = q
        b1 *= a2
        b1 += b2
        a1 *= a2
        return a1, b1
    with pytest.raises(ExerciseFailed, match=r"Exercise 8.1 failed:\n  your combine changed its input p\[0\] in place|changed its input p\[1\] in place"):
        scan_checks.check_combine(combine_in_place)


def test_combine_wrong_length_message_is_true():
    with pytest.raises(ExerciseFailed, match=r"expected a tuple of 2 outputs \(a, b\), got 3"):
        scan_checks.check_combine(lambda p, q: (q[0] * p[0], q[0] * p[1] + q[1], 0))


def test_backward_missing_shift_is_explained():
    def bad(a, h, h0, grad_h):  # uses a_t instead of a_{t+1}
        g = scan.linear_recurrence(np.ascontiguousarray(a[::-1]), np.ascontiguousarray(grad_h[::-1]))[::-1]
        h_prev = np.concatenate([h0[None], h[:-1]])
        return h_prev * g, g, a[0] * g[0]

    with pytest.raises(ExerciseFailed, match="(?s)Exercise 8.3 failed on case 1/5.*'grad_a' differs"):
        scan_checks.check_backward(bad)


@cuda.jit
def _no_first_barrier(a, x, h0, h):
    """Correct Blelloch scan, except: no cuda.syncthreads() after loading shared memory."""
    sa = cuda.shared.array(BLOCK_MAX, float64)
    sb = cuda.shared.array(BLOCK_MAX, float64)
    c = cuda.blockIdx.x
    i = cuda.threadIdx.x
    n = cuda.blockDim.x
    sa[i] = a[i, c]
    sb[i] = x[i, c]
    step = 1
    while step < n:
        k = (i + 1) * 2 * step - 1
        if k < n:
            sb[k] = sa[k] * sb[k - step] + sb[k]
            sa[k] = sa[k] * sa[k - step]
        step *= 2
        cuda.syncthreads()
    if i == n - 1:
        sa[i] = 1.0
        sb[i] = 0.0
    cuda.syncthreads()
    step = n // 2
    while step >= 1:
        k = (i + 1) * 2 * step - 1
        if k < n:
            ta = sa[k - step]
            tb = sb[k - step]
            sa[k - step] = sa[k]
            sb[k - step] = sb[k]
            sb[k] = ta * sb[k] + tb
            sa[k] = ta * sa[k]
        step //= 2
        cuda.syncthreads()
    h[i, c] = a[i, c] * (sa[i] * h0[c] + sb[i]) + x[i, c]


@cuda.jit
def _no_root_barrier(a, x, h0, h):
    """Up-sweep, identity at the root, down-sweep -- but no barrier between the root write and the
    first down-sweep level (thread 0 reads the root that thread n-1 writes)."""
    sa = cuda.shared.array(BLOCK_MAX, float64)
    sb = cuda.shared.array(BLOCK_MAX, float64)
    c = cuda.blockIdx.x
    i = cuda.threadIdx.x
    n = cuda.blockDim.x
    sa[i] = a[i, c]
    sb[i] = x[i, c]
    cuda.syncthreads()
    step = 1
    while step < n:
        k = (i + 1) * 2 * step - 1
        if k < n:
            sb[k] = sa[k] * sb[k - step] + sb[k]
            sa[k] = sa[k] * sa[k - step]
        step *= 2
        cuda.syncthreads()
    if i == n - 1:
        sa[i] = 1.0
        sb[i] = 0.0
    step = n // 2
    while step >= 1:
        k = (i + 1) * 2 * step - 1
        if k < n:
            ta = sa[k - step]
            tb = sb[k - step]
            sa[k - step] = sa[k]
            sb[k - step] = sb[k]
            sb[k] = ta * sb[k] + tb
            sa[k] = ta * sa[k]
        step //= 2
        cuda.syncthreads()
    h[i, c] = a[i, c] * (sa[i] * h0[c] + sb[i]) + x[i, c]


@cuda.jit
def _reads_unwritten(a, x, h0, h):
    """Right answer, but thread 0 reads slot -1 (never written) and then discards the value."""
    sa = cuda.shared.array(BLOCK_MAX, float64)
    sb = cuda.shared.array(BLOCK_MAX, float64)
    c = cuda.blockIdx.x
    i = cuda.threadIdx.x
    n = cuda.blockDim.x
    sa[i] = a[i, c]
    sb[i] = x[i, c]
    cuda.syncthreads()
    step = 1
    while step < n:
        k = (i + 1) * 2 * step - 1
        if k < n:
            sb[k] = sa[k] * sb[k - step] + sb[k]
            sa[k] = sa[k] * sa[k - step]
        step *= 2
        cuda.syncthreads()
    if i == n - 1:
        sa[i] = 1.0
        sb[i] = 0.0
    cuda.syncthreads()
    step = n // 2
    while step >= 1:
        k = (i + 1) * 2 * step - 1
        if k < n:
            ta = sa[k - step]
            tb = sb[k - step]
            sa[k - step] = sa[k]
            sb[k - step] = sb[k]
            sb[k] = ta * sb[k] + tb
            sa[k] = ta * sa[k]
        step //= 2
        cuda.syncthreads()
    prev_a = sa[i - 1]  # i = 0 reads the last slot of the array: garbage
    if i == 0:
        prev_a = 1.0
    h[i, c] = a[i, c] * (sa[i] * h0[c] + sb[i]) + x[i, c] + 0.0 * prev_a * 0.0


@needs_sim
def test_missing_first_barrier_is_caught():
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 8\.4 failed on case 2/8.*(race|no thread of this block has written)"):
        scan_checks.check_block_kernel(_no_first_barrier)


@needs_sim
def test_missing_root_barrier_is_caught_even_when_the_output_is_right():
    a, x, h0 = scan.random_problem(8, 1, seed=0, dtype="float64")
    # the plain output may well be right (the simulator often runs thread n-1's write first) ...
    scan_cuda.run_block_kernel(_no_root_barrier, a, x, h0)
    # ... but the check sees the unsynchronised access every time
    for _ in range(2):
        with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 8\.4 failed.*no cuda\.syncthreads\(\) in between"):
            scan_checks.check_block_kernel(_no_root_barrier)


@needs_sim
def test_read_of_unwritten_shared_memory_is_caught_though_the_output_is_right():
    a, x, h0 = scan.random_problem(8, 2, seed=0, dtype="float64")
    h = scan_cuda.run_block_kernel(_reads_unwritten, a, x, h0)
    np.testing.assert_allclose(h, scan.recurrence_float64(a, x, h0), rtol=1e-12)  # right by luck
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 8\.4 failed on case 1/8.*read slot 1023 .*no thread of this block has written"):
        scan_checks.check_block_kernel(_reads_unwritten)


def test_wrong_formula_kernel_is_explained():
    @cuda.jit
    def no_h0(a, x, h0, h):
        sa = cuda.shared.array(BLOCK_MAX, float64)
        sb = cuda.shared.array(BLOCK_MAX, float64)
        c = cuda.blockIdx.x
        i = cuda.threadIdx.x
        sa[i] = a[i, c]
        sb[i] = x[i, c]
        cuda.syncthreads()
        n = cuda.blockDim.x
        step = 1
        while step < n:
            k = (i + 1) * 2 * step - 1
            if k < n:
                sb[k] = sa[k] * sb[k - step] + sb[k]
                sa[k] = sa[k] * sa[k - step]
            step *= 2
            cuda.syncthreads()
        if i == n - 1:
            sa[i] = 1.0
            sb[i] = 0.0
        cuda.syncthreads()
        step = n // 2
        while step >= 1:
            k = (i + 1) * 2 * step - 1
            if k < n:
                ta = sa[k - step]
                tb = sb[k - step]
                sa[k - step] = sa[k]
                sb[k - step] = sb[k]
                sb[k] = ta * sb[k] + tb
                sa[k] = ta * sa[k]
            step //= 2
            cuda.syncthreads()
        h[i, c] = a[i, c] * sb[i] + x[i, c]  # forgot A * h0

    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 8\.4 failed on case 1/8.*'h' differs.*Hint"):
        scan_checks.check_block_kernel(no_h0)


def test_not_a_kernel():
    with pytest.raises(ExerciseFailed, match="expected a @cuda.jit kernel"):
        scan_checks.check_block_kernel(None)


@needs_sim
def test_tracing_is_undone_after_the_check():
    from numba.cuda.simulator import kernelapi

    before = kernelapi.FakeCUDAShared.array
    with scan_checks.traced_shared_memory():
        assert kernelapi.FakeCUDAShared.array is not before
    assert kernelapi.FakeCUDAShared.array is before


# --------------------------------------------------------------------------- 8.4: memory budget per thread
def _solution_block_kernel():
    """The worksheet's solution kernel (solutions/08_scan.py), compiled here."""
    import pathlib

    src = (pathlib.Path(__file__).resolve().parents[3] / "solutions" / "08_scan.py").read_text()
    body = src[src.index("@cuda.jit\ndef my_scan_kernel"):src.index("# %%\nscan_checks.check_block_kernel")]
    ns = {"cuda": cuda, "float64": float64, "BLOCK_MAX": BLOCK_MAX}
    exec(body, ns)
    return ns["my_scan_kernel"]


def test_block_kernel_solution_passes_with_its_memory_counts(capsys):
    line = scan_checks.check_block_kernel(_solution_block_kernel())
    out = capsys.readouterr().out
    if backend.cuda_mode() == "simulator":
        assert "Exercise 8.4 passed: 8/8 cases" in out and line == "Exercise 8.4 passed: 8/8 cases"
    else:  # a real GPU cannot trace memory accesses: the line says so (seen on an H200)
        assert "Exercise 8.4 (on a GPU: outputs only, races and memory accesses are not traced) passed: 8/8 cases" in out
    if backend.cuda_mode() == "simulator":
        assert ("most per thread (T=64, 64 threads): global reads 3 (budget 3), global writes 1 (budget 1), "
                "shared reads 68 (budget 76), shared writes 38 (budget 52)") in out


def test_memory_budget_follows_the_levels():
    assert scan_checks.memory_budget(1) == (3, 1, 4, 4)
    assert scan_checks.memory_budget(64) == (3, 1, 76, 52)


def _scan_body_then(final):
    """Source of a correct Blelloch kernel (for T <= n) whose last line is ``final``."""
    return f"""
@cuda.jit
def k(a, x, h0, h):
    sa = cuda.shared.array(BLOCK_MAX, float64)
    sb = cuda.shared.array(BLOCK_MAX, float64)
    c = cuda.blockIdx.x
    i = cuda.threadIdx.x
    n = cuda.blockDim.x
    T = a.shape[0]
    ai = 1.0
    xi = 0.0
    if i < T:
        ai = a[i, c]
        xi = x[i, c]
    sa[i] = ai
    sb[i] = xi
    cuda.syncthreads()
    step = 1
    while step < n:
        k = (i + 1) * 2 * step - 1
        if k < n:
            sb[k] = sa[k] * sb[k - step] + sb[k]
            sa[k] = sa[k] * sa[k - step]
        step *= 2
        cuda.syncthreads()
    if i == n - 1:
        sa[i] = 1.0
        sb[i] = 0.0
    cuda.syncthreads()
    step = n // 2
    while step >= 1:
        k = (i + 1) * 2 * step - 1
        if k < n:
            ta = sa[k - step]
            tb = sb[k - step]
            sa[k - step] = sa[k]
            sb[k - step] = sb[k]
            sb[k] = ta * sb[k] + tb
            sa[k] = ta * sa[k]
        step //= 2
        cuda.syncthreads()
{final}
"""


def _compile(src):
    ns = {"cuda": cuda, "float64": float64, "BLOCK_MAX": BLOCK_MAX}
    exec(src, ns)
    return ns["k"]


@needs_sim
def test_kernel_rereading_the_input_from_global_memory_is_over_budget():
    # right numbers: every thread recomputes h_i serially from the whole input in global memory
    k = _compile(_scan_body_then("""    if i < T:
        acc = h0[c]
        for t in range(i + 1):
            acc = a[t, c] * acc + x[t, c]
        h[i, c] = acc"""))
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 8\.4 failed on case 1/8 .*your numbers are right, "
                                             r"but thread 0 of block 0 made 5 global reads; the budget is 3 per thread"
                                             r".*Hint: read a\[i, c\], x\[i, c\] and h0\[c\] once each"):
        scan_checks.check_block_kernel(k)


@needs_sim
def test_kernel_writing_its_output_twice_is_over_budget():
    k = _compile(_scan_body_then("""    if i < T:
        h[i, c] = 0.0
        h[i, c] = ai * (sa[i] * h0[c] + sb[i]) + xi"""))
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 8\.4 failed on case 1/8 .*thread 0 of block 0 made 2 "
                                             r"global writes; the budget is 1 per thread.*write h\[i, c\] once"):
        scan_checks.check_block_kernel(k)


@needs_sim
def test_kernel_with_a_serial_prefix_in_shared_memory_is_over_budget():
    @cuda.jit
    def serial_shared(a, x, h0, h):
        sa = cuda.shared.array(BLOCK_MAX, float64)
        sb = cuda.shared.array(BLOCK_MAX, float64)
        c = cuda.blockIdx.x
        i = cuda.threadIdx.x
        T = a.shape[0]
        ai = 1.0
        xi = 0.0
        if i < T:
            ai = a[i, c]
            xi = x[i, c]
        sa[i] = ai
        sb[i] = xi
        cuda.syncthreads()
        if i < T:
            acc = h0[c]
            for t in range(i + 1):
                acc = sa[t] * acc + sb[t]
            h[i, c] = acc

    # at T=32 thread 31 reads 64 slots, exactly the budget 12*5 + 4; at T=64 it needs 128 of 76
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 8\.4 failed on case 8/8 \(T=64, 64 threads per block, "
                                             r"1 block\(s\)\).*thread 63 of block 0 made 128 shared reads; the budget "
                                             r"is 76 per thread.*O\(log T\)"):
        scan_checks.check_block_kernel(serial_shared)


@needs_sim
def test_power_of_two_only_kernel_is_told_about_t_below_the_block():
    # the course's lecture kernel assumes T == blockDim.x: odd T / spare threads index past the input
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 8\.4 failed on case 5/8 \(T=5, 8 threads per block, "
                                             r"3 block\(s\)\).*IndexError.*threads with i >= T must not read a or x"):
        scan_checks.check_block_kernel(scan_cuda.blelloch_block_kernel)


@needs_sim
def test_counting_is_undone_after_the_check():
    from numba.cuda.simulator.cudadrv import devicearray

    before = devicearray.FakeWithinKernelCUDAArray.__getitem__
    with scan_checks.counted_memory() as counts:
        assert devicearray.FakeWithinKernelCUDAArray.__getitem__ is not before
        assert counts == {}
    assert devicearray.FakeWithinKernelCUDAArray.__getitem__ is before


# --------------------------------------------------------------------------- 8.5: a scan that beats the loop
def _solution_fast_scan():
    """The worksheet's solution (solutions/08_scan.py), compiled here."""
    import pathlib

    from numba import njit

    src = (pathlib.Path(__file__).resolve().parents[3] / "solutions" / "08_scan.py").read_text()
    body = src[src.index("@njit\ndef fast_scan"):src.index("\n# %%", src.index("@njit\ndef fast_scan"))]
    ns = {"np": np, "njit": njit}
    exec(body, ns)
    return ns["fast_scan"]


def _unflushed(fast_scan_src: str) -> str:
    """The solution's source with its flush taken out: four chains, right, time-parallel -- products unflushed."""
    flush = "                if abs(A{k}) < tiny:\n                    A{k} = zero\n"
    for k in range(4):
        assert flush.format(k=k) in fast_scan_src
        fast_scan_src = fast_scan_src.replace(flush.format(k=k), "")
    return fast_scan_src


def test_fast_scan_solution_passes_twice_in_a_row(capsys, fake_clock):
    fake_clock.cost(plain_loop=2e-3, yours=1e-3)
    fast_scan = _solution_fast_scan()
    for _ in range(2):
        scan_checks.check_fast_scan(fast_scan)
        out = capsys.readouterr().out
        assert "Exercise 8.5 passed: 8/8 cases" in out
        assert "span: 93 dependent operations for T=256 with 16 chunks" in out
        assert "speed: 2.00x as fast as the plain compiled loop over t" in out     # the speed-up earned, printed
    assert fake_clock.calls["yours"] >= 10 and fake_clock.calls["plain_loop"] >= 10


def test_the_solution_never_computes_on_subnormals_and_the_unflushed_one_does():
    """Counted, not timed: on subnormal-prone input (a in [0.5, 1), float32, long chunks) the solution's values
    stay normal; without its flush its chunk products turn subnormal after about 290 steps and stick."""
    clean = scan_checks.subnormal_trace(_solution_fast_scan())
    assert clean["made"] == clean["used"] == 0 and clean["first_depth"] is None and clean["ops"] > 10_000
    sub = scan_checks.subnormal_trace(_unflushed_fast_scan())
    assert 250 <= sub["first_depth"] <= 320
    assert sub["share"] > 10 * scan_checks.MAX_SUBNORMAL_SHARE


def _unflushed_fast_scan():
    import pathlib

    from numba import njit

    src = (pathlib.Path(__file__).resolve().parents[3] / "solutions" / "08_scan.py").read_text()
    body = _unflushed(src[src.index("@njit\ndef fast_scan"):src.index("\n# %%", src.index("@njit\ndef fast_scan"))])
    ns = {"np": np, "njit": njit}
    exec(body, ns)
    return ns["fast_scan"]


def test_an_unflushed_four_chain_scan_is_told_its_products_went_subnormal(fake_clock):
    """Issue 43: the four-chain solution without its flush is right and time-parallel; on a CPU with a subnormal
    penalty it ran at 0.05x and was told to add the chains it had. Now it fails before any timing -- on every
    machine, whatever the clock says (here it would have passed the speed bar) -- naming the cause."""
    fake_clock.cost(plain_loop=2e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 8\.5 failed:\n  your numbers are right and your scan is "
                                             r"time-parallel, but your chunk products went subnormal after about "
                                             r"\d{3} steps[\s\S]*microcode[\s\S]*Hint: flush") as err:
        scan_checks.check_fast_scan(_unflushed_fast_scan())
    assert "independent chains" not in str(err.value)
    assert fake_clock.calls.get("yours", 0) == 0                   # rejected before the speed test


@pytest.mark.parametrize("nh", [1, 3])
def test_the_speed_baseline_is_the_plain_loop(nh):
    a, x, h0 = scan.random_problem(1000, nh, seed=4, dtype="float32")
    np.testing.assert_allclose(scan_checks.sequential_loop(a, x, h0), scan.recurrence_float64(a, x, h0),
                               rtol=1e-4, atol=1e-5)


def test_fast_scan_cached_answer_while_timed_is_a_gamed_timer(fake_clock):
    """Right everywhere the check looks without a clock, then the first timed answer again and again."""
    fast_scan = _solution_fast_scan()
    cache = {}

    def cached(a, x, h0, chunks):
        if a.shape[0] == scan_checks.SCAN_SPEED_T:
            if "h" not in cache:
                cache["h"] = fast_scan(a, x, h0, chunks)
            return cache["h"]
        return fast_scan(a, x, h0, chunks)
    cached.py_func = fast_scan.py_func

    fake_clock.cost(plain_loop=2e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 8.5 failed on the speed test \(T=262144, H=1, chunks=16, "
                                             r"float32, timed call \d+\):\n  gamed timer \(or a mistake that shows "
                                             r"only at this size\): the result returned while timed differs from the "
                                             r"reference on that same input"):
        scan_checks.check_fast_scan(cached)


def test_fast_scan_sequential_loop_is_named():
    from numba import njit

    @njit
    def loop(a, x, h0, chunks):  # fast (one chain in a register), right, but sequential
        T, H = a.shape
        h = np.empty_like(x)
        for j in range(H):
            p = h0[j]
            for t in range(T):
                p = a[t, j] * p + x[t, j]
                h[t, j] = p
        return h

    with pytest.raises(ExerciseFailed, match=r"Exercise 8.5 failed:\n  your numbers are right, but your scan is "
                                             r"sequential in time(.|\n)*the span\) is 512"):
        scan_checks.check_fast_scan(loop)


def test_fast_scan_ignoring_chunks_is_named():
    def fixed_chunks(a, x, h0, chunks):
        return good_chunked(a, x, h0, min(8, a.shape[0]))  # always 8 chunks, whatever it is asked

    with pytest.raises(ExerciseFailed, match=r"your function ignores `chunks`: for T=256 its span is \d+ with "
                                             r"chunks=4 and \d+ with chunks=16"):
        scan_checks.check_fast_scan(fixed_chunks)


def flushed_chunked(a, x, h0, chunks):
    """good_chunked with its running products flushed below 1e-30 (so they never turn subnormal)."""
    T = a.shape[0]
    bounds = np.linspace(0, T, chunks + 1).round().astype(int)
    carries = [h0]
    for c in range(chunks - 1):
        A, B = np.ones_like(h0), np.zeros_like(h0)
        for t in range(bounds[c], bounds[c + 1]):
            A, B = a[t] * A, a[t] * B + x[t]
            A = np.where(abs(A) < 1e-30, 0 * A, A)
        carries.append(A * carries[-1] + B)
    h = np.empty_like(x)
    for c in range(chunks):
        h[bounds[c]:bounds[c + 1]] = _expand(a[bounds[c]:bounds[c + 1]], x[bounds[c]:bounds[c + 1]], carries[c])
    return h


def test_fast_scan_slow_chunked_scan_fails_on_speed(fake_clock):
    """A chunked scan in plain numpy is time-parallel (short span), its products flushed, but slow: the speed test
    names it (on the fake clock it costs twice the plain compiled loop, in every measurement)."""
    fake_clock.cost(plain_loop=1e-3, yours=2e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 8.5 failed on the speed test \(T=262144, H=1, chunks=16, "
                                             r"float32\):\n  your scan is right, time-parallel and its products stay "
                                             r"normal \(all \d+ timed results matched the reference\), but your "
                                             r"function is only 0.50x as fast as the plain compiled loop[\s\S]*in each "
                                             r"of 2 measurements[\s\S]*independent chains"):
        scan_checks.check_fast_scan(flushed_chunked, retries=1)


def test_fast_scan_too_close_to_the_bar_on_a_busy_machine_is_not_judged_and_prints_no_pass(fake_clock, busy_machine,
                                                                                            capsys):
    """The solution measured straddling the bar on a busy machine: not judged (the exercise stays open), never
    "passed"."""
    from course_lib.teaching.checks.speed import SpeedNotJudged

    fast_scan = _solution_fast_scan()
    costs = iter(list(np.random.default_rng(5).permutation(np.linspace(0.5e-3, 1.5e-3, 41))) * 100)

    def jittery(a, x, h0, chunks):
        if a.shape[0] == scan_checks.SCAN_SPEED_T:
            fake_clock.advance(next(costs))
        return fast_scan(a, x, h0, chunks)
    jittery.py_func = fast_scan.py_func
    fake_clock.cost(plain_loop=scan_checks.MIN_SCAN_SPEEDUP * 1e-3, yours=0.0)   # about the bar's speed-up
    with pytest.raises(SpeedNotJudged, match=r"Exercise 8\.5 not judged[\s\S]*the machine was busy"):
        scan_checks.check_fast_scan(jittery)
    assert "passed" not in capsys.readouterr().out


def test_fast_scan_fixed_float_type_and_in_place_are_named():
    def float64_work(a, x, h0, chunks):
        h = np.empty(x.shape)  # a fixed float type: the traced numbers cannot be stored
        h[:] = good_chunked(a, x, h0, chunks)
        return h.astype(x.dtype)

    with pytest.raises(ExerciseFailed, match=r"stored one into an array of a fixed float type"):
        scan_checks.check_fast_scan(float64_work)

    def in_place(a, x, h0, chunks):
        x[0] = a[0] * h0 + x[0]
        h = good_chunked(a, x, h0 * 0, chunks)
        return h

    with pytest.raises(ExerciseFailed, match=r"changed its input x in place"):
        scan_checks.check_fast_scan(in_place)


# --------------------------------------------------------------------------- issue 29: divergent barriers
_FINAL = """    if i < T:
        h[i, c] = ai * (sa[i] * h0[c] + sb[i]) + xi"""


@needs_sim
def test_the_reference_body_passes_the_barrier_log():
    assert scan_checks.check_block_kernel(_compile(_scan_body_then(_FINAL))).startswith("Exercise 8.4 passed")


@needs_sim
def test_a_barrier_inside_the_branch_is_named_a_divergent_barrier_not_a_race():
    src = _scan_body_then(_FINAL).replace("        step *= 2\n        cuda.syncthreads()",
                                          "            cuda.syncthreads()\n        step *= 2", 1)
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 8\.4 failed on case 2/8 \(T=2, 2 threads per block, 3 "
                                             r"block\(s\)\):\n  a divergent barrier in block 0: thread 0 reached its "
                                             r"barrier no\. 2 on line \d+ .*but thread 1 reached its barrier no\. 2 on "
                                             r"line \d+.*Hint: put cuda\.syncthreads\(\) where every thread passes it") as e:
        scan_checks.check_block_kernel(_compile(src))
    assert "race" not in str(e.value)


@needs_sim
def test_an_early_return_of_the_spare_threads_is_named_a_divergent_barrier():
    src = _scan_body_then(_FINAL).replace("    T = a.shape[0]\n", "    T = a.shape[0]\n    if i >= T:\n        return\n", 1)
    with pytest.raises(ExerciseFailed, match=r"(?s)Exercise 8\.4 failed on case \d/8 \(T=\d+, \d+ threads per block.*"
                                             r"a divergent barrier in block 0: .*thread \d+ passed only 0 barrier\(s\)"):
        scan_checks.check_block_kernel(_compile(src))


# --------------------------------------------------------------------------- issue 39, item 1: 8.4's work, counted
@cuda.jit
def _hillis_steele(a, x, h0, h):
    """A right, race-free parallel scan within every per-thread budget, but O(n log n) work: every thread
    combines at every level (Hillis-Steele), not the Blelloch tree 8.4 asks for."""
    sa = cuda.shared.array(BLOCK_MAX, float64)
    sb = cuda.shared.array(BLOCK_MAX, float64)
    c = cuda.blockIdx.x
    i = cuda.threadIdx.x
    n = cuda.blockDim.x
    T = a.shape[0]
    ai = 1.0
    xi = 0.0
    if i < T:
        ai = a[i, c]
        xi = x[i, c]
    sa[i] = ai
    sb[i] = xi
    cuda.syncthreads()
    step = 1
    while step < n:
        A = sa[i]
        B = sb[i]
        A2 = 1.0
        B2 = 0.0
        if i >= step:
            A2 = sa[i - step]
            B2 = sb[i - step]
        cuda.syncthreads()
        if i >= step:
            sa[i] = A * A2
            sb[i] = A * B2 + B
        cuda.syncthreads()
        step *= 2
    if i < T:
        h[i, c] = sa[i] * h0[c] + sb[i]


@needs_sim
def test_a_hillis_steele_scan_is_named_by_its_work():
    with pytest.raises(ExerciseFailed, match=r"(?s)case 8/8 \(T=64, 64 threads.*every thread stays within its "
                                             r"budget, but block 0 made 770 shared writes in all.*O\(n log n\) work, "
                                             r"like a Hillis-Steele scan"):
        scan_checks.check_block_kernel(_hillis_steele)
