"""Worksheet 04 checks: right answers pass, wrong ones fail with a precise message."""
import numpy as np
import pytest

import course_lib  # noqa: F401  (first: decides numba's CUDA simulator flag)
from course_lib.teaching.checks import ExerciseFailed, tiling_simd as tiling_simd_checks
from course_lib.algorithms import matmul as course_matmul
from course_lib.core import backend
from numba import njit, prange


@njit(cache=True)
def good_tiled(A, B, tile):
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i0 in range(0, m, tile):
        for p0 in range(0, k, tile):
            for j0 in range(0, n, tile):
                j1 = min(j0 + tile, n)
                for i in range(i0, min(i0 + tile, m)):
                    c_row = C[i, j0:j1]
                    for p in range(p0, min(p0 + tile, k)):
                        a = A[i, p]
                        b_row = B[p, j0:j1]
                        for j in range(j1 - j0):
                            c_row[j] += a * b_row[j]
    return C


@njit(cache=True)
def scalar_tiled(A, B, tile):
    """Tiled, but the inner loop starts at a run-time j0: numba emits scalar code only."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i0 in range(0, m, tile):
        for p0 in range(0, k, tile):
            for j0 in range(0, n, tile):
                for i in range(i0, min(i0 + tile, m)):
                    for p in range(p0, min(p0 + tile, k)):
                        for j in range(j0, min(j0 + tile, n)):
                            C[i, j] += A[i, p] * B[p, j]
    return C


@njit(cache=True)
def untiled_ikj(A, B, tile):
    """The plain ikj loop: vectorises, right numbers, ignores `tile`."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i in range(m):
        c_row = C[i]
        for p in range(k):
            a = A[i, p]
            b_row = B[p]
            for j in range(n):
                c_row[j] += a * b_row[j]
    return C


@njit(cache=True)
def fixed_tile(A, B, tile):
    """Tiled with a hard-coded tile of 64: ignores its argument `tile`."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i0 in range(0, m, 64):
        for p0 in range(0, k, 64):
            for j0 in range(0, n, 64):
                j1 = min(j0 + 64, n)
                for i in range(i0, min(i0 + 64, m)):
                    c_row = C[i, j0:j1]
                    for p in range(p0, min(p0 + 64, k)):
                        a = A[i, p]
                        b_row = B[p, j0:j1]
                        for j in range(j1 - j0):
                            c_row[j] += a * b_row[j]
    return C


def in_place_tiled(A, B, tile):
    C = good_tiled(A, B, tile)
    A[:] = 0.0
    return C


def ragged_tiled(A, B, tile):
    """Forgets the last, smaller tile."""
    C = good_tiled(A, B, tile)
    C[(A.shape[0] // tile) * tile:] = 0
    return C


@njit(parallel=True)
def good_parallel(A, B):
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i in prange(m):
        for p in range(k):
            a = A[i, p]
            for j in range(n):
                C[i, j] += a * B[p, j]
    return C


@njit(parallel=True)
def slow_parallel(A, B):
    """Right, parallel over rows, race-free -- and every row computed 32 times over (about 20x the course loop)."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i in prange(m):
        for _ in range(32):
            for j in range(n):
                C[i, j] = 0
            for p in range(k):
                a = A[i, p]
                for j in range(n):
                    C[i, j] += a * B[p, j]
    return C


@njit
def serial_only(A, B):
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i in range(m):
        for p in range(k):
            for j in range(n):
                C[i, j] += A[i, p] * B[p, j]
    return C


@njit(parallel=True)
def parallel_without_prange(A, B):
    return serial_only(A, B) + np.zeros((A.shape[0], B.shape[1]), A.dtype)


@njit(parallel=True)
def prange_over_reduction(A, B):
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for p in prange(k):
        for i in range(m):
            a = A[i, p]
            for j in range(n):
                C[i, j] += a * B[p, j]
    return C


@njit(parallel=True)
def prange_inner(A, B):
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i in range(m):
        for p in range(k):
            a = A[i, p]
            for j in prange(n):
                C[i, j] += a * B[p, j]
    return C


@njit(parallel=True)
def parallel_row_blocks(A, B):
    """A valid alternative: prange over blocks of rows, views of this block's rows."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    nb = (m + 7) // 8
    for b in prange(nb):
        i0 = b * 8
        i1 = min(i0 + 8, m)
        for i in range(i0, i1):
            c_row = C[i]
            for p in range(k):
                a = A[i, p]
                for j in range(n):
                    c_row[j] += a * B[p, j]
    return C


@njit(parallel=True)
def parallel_wrong_sum(A, B):
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i in prange(m):
        for p in range(1, k):  # skips p = 0
            for j in range(n):
                C[i, j] += A[i, p] * B[p, j]
    return C


def test_tiled_passes(capsys, fake_clock):
    fake_clock.cost(course_naive=5e-3, yours=1e-3)
    assert tiling_simd_checks.check_tiled_matmul(good_tiled) == "Exercise 4.1 passed: 5/5 cases"
    out = capsys.readouterr().out
    assert "Exercise 4.1 passed: 5/5 cases" in out and "uses SIMD instructions" in out
    assert "as fast as the naive loop" in out  # the speed was judged (the fake clock reads as quiet)


@pytest.mark.parametrize("fn,message", [
    (scalar_tiled, r"compiled it to scalar code only[\s\S]*row views that start at 0"),
    (untiled_ikj, r"your function is not tiled[\s\S]*use its argument `tile`"),
    (fixed_tile, r"your function is not tiled[\s\S]*use its argument `tile`"),
    (lambda A, B, tile: A @ B, r"plain Python/numpy function, not a numba function"),
    (in_place_tiled, r"changed its input A in place"),
])
def test_tiled_shortcuts_are_named(fn, message):
    with pytest.raises(ExerciseFailed, match=message):
        tiling_simd_checks.check_tiled_matmul(fn)


def test_reuse_distance():
    assert tiling_simd_checks.reuse_distance([0, 1, 2, 0, 1, 2]) == (3.0, 0.5)
    assert tiling_simd_checks.reuse_distance([0, 1]) == (float("inf"), 0.0)


def test_tiled_ragged_edge_message():
    with pytest.raises(ExerciseFailed, match=r"case 2/5 \(A \(13, 7\), B \(7, 10\), tile 4\)") as err:
        tiling_simd_checks.check_tiled_matmul(ragged_tiled)
    assert "first at index (12, 0) (row 12)" in str(err.value)
    assert "the last tile is smaller" in str(err.value)


def test_tiled_float64_and_not_implemented():
    assert tiling_simd_checks.check_tiled_matmul(good_tiled, dtype=np.float64, min_speedup=0).startswith(
        "Exercise 4.1 passed")

    def todo(A, B, tile):
        raise NotImplementedError("write me")
    with pytest.raises(NotImplementedError):
        tiling_simd_checks.check_tiled_matmul(todo)


def test_parallel_passes_and_reports_structure(capsys):
    # min_speedup=0: this test is about the structure the grader reports, not about timing (a good solution
    # measured during the parallel test run can lose the speed race on a shared host); the speed rule is
    # tested with the machine pinned quiet in test_a_slow_parallel_solution_fails_the_speed_test
    assert tiling_simd_checks.check_parallel_matmul(good_parallel, min_speedup=0) == "Exercise 4.2 passed: 5/5 cases"
    out = capsys.readouterr().out
    assert "Exercise 4.2 passed: 5/5 cases" in out and "1 prange loop(s)" in out and "outer loop" in out
    assert "right with twice as many threads as cores (separate process)" in out
    assert tiling_simd_checks.check_parallel_matmul(parallel_row_blocks, min_speedup=0).startswith("Exercise 4.2 passed")


def test_a_slow_parallel_solution_fails_the_speed_test(fake_clock):
    fake_clock.cost(course_parallel=1e-3, yours=20e-3)  # every row 32 times over: about 20x the course loop
    with pytest.raises(ExerciseFailed, match=r"speed test[\s\S]*only 0.05x as fast as the course's prange loop"):
        tiling_simd_checks.check_parallel_matmul(slow_parallel)


def test_a_right_parallel_solution_passes_the_speed_test_on_the_fake_clock_twice_in_a_row(fake_clock):
    fake_clock.cost(course_parallel=1e-3, yours=1e-3)
    for _ in range(2):
        assert tiling_simd_checks.check_parallel_matmul(good_parallel) == "Exercise 4.2 passed: 5/5 cases"


def test_prange_over_reduction_is_a_race():
    with pytest.raises(ExerciseFailed, match=r"a race: inside the prange loop over p[\s\S]*C\[i, j\]"):
        tiling_simd_checks.check_parallel_matmul(prange_over_reduction)
    (loop,) = tiling_simd_checks.prange_loops(prange_over_reduction)
    assert loop["depth"] == 0 and loop["races"] == [("C", "i, j")]


def test_prange_on_inner_loop_is_named():
    with pytest.raises(ExerciseFailed, match=r"prange loop \(line \d+, over j\) sits inside the loop over i and p"):
        tiling_simd_checks.check_parallel_matmul(prange_inner)


def test_parallel_in_place_is_named():
    def in_place(A, B):
        C = good_parallel(A, B)
        B[:] = 0
        return C
    with pytest.raises(ExerciseFailed, match="changed its input B in place"):
        tiling_simd_checks.check_parallel_matmul(in_place)


@pytest.mark.parametrize("fn,message", [
    (serial_only, "compiled without parallel=True"),
    (parallel_without_prange, "numba found no prange loop"),
    (lambda A, B: A @ B, "plain Python function"),
])
def test_parallel_right_answer_but_not_parallel(fn, message):
    with pytest.raises(ExerciseFailed, match="the results are right, but it does not run in parallel") as err:
        tiling_simd_checks.check_parallel_matmul(fn)
    assert message in str(err.value)


def test_parallel_wrong_values_message():
    with pytest.raises(ExerciseFailed, match=r"Exercise 4.2 failed on case 1/5") as err:
        tiling_simd_checks.check_parallel_matmul(parallel_wrong_sum)
    assert "differs from the reference" in str(err.value)


def test_parallel_structure_counts_other_loops():
    A = np.ones((4, 4), np.float32)
    info = tiling_simd_checks.parallel_structure(parallel_without_prange, A, A)
    assert info["parallel_option"] and info["prange_loops"] == 0 and info["other_parallel_loops"] >= 1
    info = tiling_simd_checks.parallel_structure(good_parallel, A, A)
    assert info["prange_loops"] == 1 and info["problem"] is None


# --------------------------------------------------------------------------- 4.2: more threads than cores
@njit(parallel=True)
def disguised_race(A, B):
    """prange over the reduction, with an index that names p but does not depend on it: the source
    check is fooled, the oversubscribed run is not."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for p in prange(k):
        for i in range(m):
            for j in range(n):
                C[i + p - p, j] += A[i, p] * B[p, j]
    return C


def test_oversubscribed_run_catches_a_race_the_source_check_misses():
    (loop,) = tiling_simd_checks.prange_loops(disguised_race)
    assert loop["races"] == []  # the structural check cannot see it
    verdict = tiling_simd_checks.oversubscribed_run(disguised_race)
    assert verdict["ok"] is False and verdict["threads"] == 2 * backend.cpu_count()
    assert verdict["shape"] == [1, 4_000_000, 1]
    # in the check the numbers of the small cases may already differ (threads collide there too)
    with pytest.raises(ExerciseFailed, match=r"Exercise 4\.2 failed[\s\S]*(\(a race\)|write its own rows of C only)"):
        tiling_simd_checks.check_parallel_matmul(disguised_race)


def test_oversubscribed_run_passes_the_solution_and_names_its_threads():
    assert tiling_simd_checks.oversubscribed_run(good_parallel) == {"ok": True, "threads": 2 * backend.cpu_count()}
    assert tiling_simd_checks.oversubscribed_run(parallel_row_blocks, threads=3) == {"ok": True, "threads": 3}


def test_oversubscribed_run_is_skipped_without_source():
    ns = {"np": np, "njit": njit, "prange": prange}
    exec("@njit(parallel=True)\ndef typed_at_a_prompt(A, B):\n    return A @ B\n", ns)
    verdict = tiling_simd_checks.oversubscribed_run(ns["typed_at_a_prompt"])
    assert verdict["ok"] is None and "source of 'typed_at_a_prompt' is not available" in verdict["skipped"]
    table = np.ones(3)

    def uses_a_global_array(A, B):
        return A @ B + table[0]

    verdict = tiling_simd_checks.oversubscribed_run(uses_a_global_array)
    assert verdict["ok"] is None and "not a plain top-level function" in verdict["skipped"]


def test_a_race_seen_only_when_oversubscribed_is_named(monkeypatch):
    seen = {"ok": False, "shape": [1, 4_000_000, 1], "repeat": 2, "got": [12.5], "want": [40.0], "threads": 4}
    monkeypatch.setattr(tiling_simd_checks, "oversubscribed_run", lambda fn: seen)
    with pytest.raises(ExerciseFailed, match=r"with A \(1, 4000000\) and B \(4000000, 1\) on 4 threads \(twice the "
                                             r"cores, run in a separate process\) your result is wrong[\s\S]*a race"):
        tiling_simd_checks.check_parallel_matmul(good_parallel)


# --------------------------------------------------------------------------- speed checks that judge the answer
@njit(cache=True)
def gamed_tiled(A, B, tile):
    """Right and tiled on small matrices; on the timed size (n >= 100) it returns zeros: a cheap wrong answer."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    if m >= 100:
        return C
    for i0 in range(0, m, tile):
        for p0 in range(0, k, tile):
            for j0 in range(0, n, tile):
                j1 = min(j0 + tile, n)
                for i in range(i0, min(i0 + tile, m)):
                    c_row = C[i, j0:j1]
                    for p in range(p0, min(p0 + tile, k)):
                        a = A[i, p]
                        b_row = B[p, j0:j1]
                        for j in range(j1 - j0):
                            c_row[j] += a * b_row[j]
    return C


@njit(cache=True)
def mutating_tiled(A, B, tile):
    """Right and tiled; on the timed size it scales A in place (and B back), changing its input."""
    m, k = A.shape
    n = B.shape[1]
    if m >= 100:
        A[0, 0] = 0.0
    C = np.zeros((m, n), A.dtype)
    for i0 in range(0, m, tile):
        for p0 in range(0, k, tile):
            for j0 in range(0, n, tile):
                j1 = min(j0 + tile, n)
                for i in range(i0, min(i0 + tile, m)):
                    c_row = C[i, j0:j1]
                    for p in range(p0, min(p0 + tile, k)):
                        a = A[i, p]
                        b_row = B[p, j0:j1]
                        for j in range(j1 - j0):
                            c_row[j] += a * b_row[j]
    return C


def test_41_a_cheap_answer_on_the_timed_size_is_a_gamed_timer(fake_clock):
    fake_clock.cost(course_naive=5e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 4\.1 failed on the speed test \(n=192[\s\S]*gamed timer[^:]*: the "
                                             r"result returned while timed differs from the reference"):
        tiling_simd_checks.check_tiled_matmul(gamed_tiled)


def test_41_changing_the_input_while_timed_is_named(fake_clock):
    fake_clock.cost(course_naive=5e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 4\.1 failed on the speed test[\s\S]*changed its input 'A'"):
        tiling_simd_checks.check_tiled_matmul(mutating_tiled)


def test_41_far_too_slow_fails_even_on_a_busy_machine(fake_clock, busy_machine):
    fake_clock.cost(course_naive=1e-3, yours=100e-3)     # 100x slower than the naive loop: no waiver covers it
    with pytest.raises(ExerciseFailed, match=r"only 0\.01x as fast as the course's naive[\s\S]*whole interval"):
        tiling_simd_checks.check_tiled_matmul(good_tiled)


def test_41_the_right_solution_passes_twice_in_a_row(fake_clock):
    fake_clock.cost(course_naive=5e-3, yours=1e-3)
    for _ in range(2):
        assert tiling_simd_checks.check_tiled_matmul(good_tiled) == "Exercise 4.1 passed: 5/5 cases"


@njit(parallel=True)
def gamed_parallel(A, B):
    """Right and race-free on small matrices; on the timed size (256 rows) it returns zeros."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    if m == 256:
        return C
    for i in prange(m):
        for p in range(k):
            a = A[i, p]
            for j in range(n):
                C[i, j] += a * B[p, j]
    return C


@njit(parallel=True)
def mutating_parallel(A, B):
    """Right and race-free; on the timed size it overwrites B[0, 0] first."""
    m, k = A.shape
    n = B.shape[1]
    if m == 256:
        B[0, 0] = 0.0
    C = np.zeros((m, n), A.dtype)
    for i in prange(m):
        for p in range(k):
            a = A[i, p]
            for j in range(n):
                C[i, j] += a * B[p, j]
    return C


@pytest.mark.parametrize("fn,message", [
    (gamed_parallel, r"gamed timer[^:]*: the result returned while timed differs"),
    (mutating_parallel, r"changed its input 'B'"),
])
def test_42_gamed_and_mutating_solutions_are_rejected_while_timed(fake_clock, fn, message):
    fake_clock.cost(course_parallel=1e-3, yours=1e-3)
    with pytest.raises(ExerciseFailed, match=r"Exercise 4\.2 failed on the speed test \(n=256[\s\S]*" + message):
        tiling_simd_checks.check_parallel_matmul(fn)


def test_42_far_too_slow_fails_even_on_a_busy_machine(fake_clock, busy_machine):
    fake_clock.cost(course_parallel=1e-3, yours=100e-3)
    with pytest.raises(ExerciseFailed, match=r"only 0\.01x as fast[\s\S]*whole interval lies below the bar"):
        tiling_simd_checks.check_parallel_matmul(good_parallel)


def register_tiled(A, B, tile):
    """Tiled with the inner order p, j, i: each B[p, j] is loaded once per tile of rows and reused from a
    register -- every reuse of an element of B is a full sweep of B, yet B is fetched only m / tile times."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i0 in range(0, m, tile):
        for p0 in range(0, k, tile):
            for j0 in range(0, n, tile):
                for p in range(p0, min(p0 + tile, k)):
                    for j in range(j0, min(j0 + tile, n)):
                        b = B[p, j]
                        for i in range(i0, min(i0 + tile, m)):
                            C[i, j] += A[i, p] * b
    return C


def test_41_a_tiled_nest_reusing_b_from_a_register_is_tiled():
    """Issue 29, item 7: 4.1 called such a nest "not tiled" (its median reuse distance is all of B)."""
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((32, 32)), rng.standard_normal((32, 32))
    tiled = tiling_simd_checks._trace_b_reads(register_tiled, A, B, 8)
    untiled = tiling_simd_checks._trace_b_reads(untiled_ikj.py_func, A, B, 8)
    assert tiling_simd_checks.reuse_distance(tiled)[0] > 512           # what misled the old detector
    assert tiling_simd_checks.b_streams(tiled, 512) == pytest.approx(4)   # m / tile
    assert tiling_simd_checks.b_streams(untiled, 512) == pytest.approx(32)  # m
    good = tiling_simd_checks._trace_b_reads(good_tiled.py_func, A, B, 8)
    assert tiling_simd_checks.b_streams(good, 512) == pytest.approx(4)
    with pytest.raises(ExerciseFailed) as err:                            # numba: scalar code (strided i loop)
        tiling_simd_checks.check_tiled_matmul(njit(register_tiled))
    assert "not tiled" not in str(err.value) and "scalar code" in str(err.value)


@njit
def blas_in_numba(A, B, tile):
    return np.dot(A, B)


def test_41_a_blas_call_inside_numba_without_scipy_is_explained():
    """Issue 29, item 7: numba's bare "scipy 0.16+ is required" ImportError is explained, with the case."""
    try:
        import scipy  # noqa: F401
        pytest.skip("scipy is installed: numba's np.dot works")
    except ImportError:
        pass
    with pytest.raises(ExerciseFailed, match=r"Exercise 4\.1 failed on case 1/5 \(A \(8, 8\), B \(8, 8\), tile 4\)"
                                             r"[\s\S]*ImportError: scipy 0\.16\+ is required[\s\S]*SciPy is not "
                                             r"installed here: write the products as loops"):
        tiling_simd_checks.check_tiled_matmul(blas_in_numba)


# --------------------------------------------------------------------------- properties taught (issue 39)
@njit(cache=True)
def fixed_tile_16(A, B, tile):
    """Tiled with a hard-coded tile of 16: at n = 32 it fetches B twice, as a tiled loop nest does."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), A.dtype)
    for i0 in range(0, m, 16):
        for p0 in range(0, k, 16):
            for j0 in range(0, n, 16):
                j1 = min(j0 + 16, n)
                for i in range(i0, min(i0 + 16, m)):
                    c_row = C[i, j0:j1]
                    for p in range(p0, min(p0 + 16, k)):
                        a = A[i, p]
                        b_row = B[p, j0:j1]
                        for j in range(j1 - j0):
                            c_row[j] += a * b_row[j]
    return C


def test_41_a_tiled_matmul_that_ignores_tile_is_named(capsys):
    """Issue 39, item 4 (P5): one traced tile value at n = 32 let any small fixed tile pass."""
    with pytest.raises(ExerciseFailed, match=r"ignores its argument `tile`: .* fetches B 2 times over with tile 4 and "
                                             r"2 times with tile 16 .*-- 8 and 2"):
        tiling_simd_checks.check_tiled_matmul(fixed_tile_16, min_speedup=0)
    tiling_simd_checks.check_tiled_matmul(good_tiled, min_speedup=0)
    assert "fetched about 8 times over with tile 4 and 2 with tile 16" in capsys.readouterr().out


@njit
def calls_course_tiled(A, B, tile):
    C = np.zeros((A.shape[0], B.shape[1]), A.dtype)
    course_matmul._tiled_simd(A, B, C, tile, tile, tile)
    return C


def test_course_kernels_are_found_by_name_and_through_the_module():
    from course_lib.algorithms import matmul
    from course_lib.algorithms.matmul import _ikj as my_loop

    def via_module(A, B, tile):
        C = np.zeros((A.shape[0], B.shape[1]))
        matmul._tiled_simd(A, B, C, tile, tile, tile)
        return C

    def via_alias(A, B):
        C = np.zeros((A.shape[0], B.shape[1]))
        my_loop(A, B, C)
        return C

    assert tiling_simd_checks.course_kernels_called(via_module) == ["matmul._tiled_simd"]
    assert tiling_simd_checks.course_kernels_called(via_alias) == ["matmul._ikj"]
    assert tiling_simd_checks.course_kernels_called(good_tiled) == []
    assert tiling_simd_checks.course_kernels_called(good_parallel) == []


def test_41_and_42_reject_calling_a_course_kernel():
    """Issue 39, item 7: the loop nest is the exercise; a call into the course's compiled kernel is no Python
    call that check_no_shortcut could see."""
    from course_lib.algorithms import matmul

    with pytest.raises(ExerciseFailed, match=r"calls matmul\._tiled_simd, one of the course's own matmul kernels"):
        tiling_simd_checks.check_tiled_matmul(calls_course_tiled, min_speedup=0)

    @njit(parallel=True)
    def calls_course_rows(A, B):
        C = np.zeros((A.shape[0], B.shape[1]), A.dtype)
        for i in prange(A.shape[0]):
            matmul._ikj(A[i:i + 1], B, C[i:i + 1])
        return C

    with pytest.raises(ExerciseFailed, match=r"calls matmul\._ikj, one of the course's own matmul kernels"):
        tiling_simd_checks.check_parallel_matmul(calls_course_rows, min_speedup=0)


_SPEED_WORDS = {2.0: "twice as fast", 0.5: "half"}


def _statement(sheet: str, exercise: str) -> str:
    """The markdown of ``exercise``'s section in a worksheet source (up to the next exercise)."""
    from pathlib import Path

    text = Path(__file__).resolve().parents[3].joinpath(sheet).read_text()
    start = text.index(f"## Exercise {exercise} ")
    nxt = text.find("## Exercise ", start + 1)
    return text[start:nxt if nxt > 0 else None]


@pytest.mark.parametrize("sheet", ["solutions/04_tiling_simd.py", "exercises/04_tiling_simd.py"])
@pytest.mark.parametrize("exercise,grader,answer,bar", [
    ("4.1", tiling_simd_checks.check_tiled_matmul, good_tiled, tiling_simd_checks.MIN_TILED_SPEEDUP),
    ("4.2", tiling_simd_checks.check_parallel_matmul, good_parallel, tiling_simd_checks.MIN_PARALLEL_SPEEDUP),
])
def test_statement_names_the_baseline_and_bar_the_grader_uses(monkeypatch, sheet, exercise, grader, answer, bar):
    """Issue 39, item 5: 4.2's statement named "the course's serial ikj loop" while the grader timed the prange
    loop, and 4.1's described a reuse-distance count the grader no longer made."""
    import inspect

    from course_lib.algorithms import matmul

    seen = {}

    class Stop(Exception):
        pass

    def spy(ex, student, reference, baseline, make_input, **kw):
        seen.update(baseline=inspect.unwrap(baseline), desc=kw["baseline_desc"], bar=kw["min_speedup"])
        raise Stop

    monkeypatch.setattr(tiling_simd_checks, "judge_speed", spy)
    with pytest.raises(Stop):
        grader(answer)
    text = _statement(sheet, exercise)
    named = tiling_simd_checks.BASELINES[exercise]
    assert getattr(matmul, named.split(".")[1]) is seen["baseline"]       # the grader times what it names
    assert f"`{named}`" in text and named in seen["desc"]                 # ... and the statement names it
    assert seen["bar"] == bar and _SPEED_WORDS[bar] in text
    assert "serial ikj loop" not in text and "reuse" not in text and "between two reads" not in text
    if exercise == "4.1":
        assert "two tile sizes" in text and "half of `B`" in text
