"""MGRIT: exactness (Parareal), Dahlquist vs the exact serial solution, threads == serial, the one
iteration loop over any partition, the work count vs the span model, divergence, bad input."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.algorithms import mgrit as M
from course_lib.experiments import mgrit as XM
from helpers import raises_naming


def _nonlinear(m, n=4, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n)) / np.sqrt(n)

    def step(u, i, level):
        g = 0.7 * m**level
        return (u + g * np.tanh(u @ A + 0.05 * i)) / (1.0 + g)
    return step


@pytest.mark.parametrize("nt,m", [(16, 2), (24, 4), (27, 3)])
def test_parareal_exact_after_nt_over_m_iterations(nt, m):
    step = _nonlinear(m)
    u0 = np.linspace(-1, 1, 4)
    exact = M.serial_solve(step, u0, nt)
    U, hist = M.MGRIT(step, m=m, levels=2, relax="F", max_iter=nt // m, tol=0.0).solve(u0, nt)
    assert U.shape == (nt + 1, 4)
    np.testing.assert_allclose(U, exact, rtol=0, atol=1e-13)
    assert len(hist) <= nt // m


def test_parareal_c_points_exact_one_per_iteration():
    nt, m = 32, 4
    step = _nonlinear(m, seed=3)
    u0 = np.ones(4)
    exact = M.serial_solve(step, u0, nt)
    for k in range(1, nt // m):
        U, _ = M.MGRIT(step, m=m, levels=2, relax="F", max_iter=k, tol=0.0).solve(u0, nt)
        err = np.abs(U[::m] - exact[::m]).max(axis=1)
        assert np.all(err[: k + 1] < 1e-13)  # C-points 0..k are exact after k iterations
        assert err[k + 1] > 1e-12  # and the next is not yet


@pytest.mark.parametrize("relax", ["F", "FCF"])
@pytest.mark.parametrize("levels", [2, 3, 4])
def test_dahlquist_backward_euler_matches_exact_serial(relax, levels):
    nt, m, lam, dt = 128, 2, -2.0, 0.05
    exact = M.dahlquist_exact_serial(lam, dt, 1.0, nt)
    np.testing.assert_allclose(M.serial_solve(M.dahlquist_step(lam, dt, m), np.ones(1), nt)[:, 0], exact, rtol=1e-12)
    U, hist = M.MGRIT(M.dahlquist_step(lam, dt, m), m=m, levels=levels, relax=relax, max_iter=30,
                      tol=1e-13).solve(np.ones(1), nt)
    np.testing.assert_allclose(U[:, 0], exact, rtol=1e-9, atol=1e-11)
    assert hist[-1] <= 1e-13
    assert all(b < a for a, b in zip(hist, hist[1:]) if a > 1e-15)


def test_two_level_iteration_equals_solver_iterations():
    m, nt = 4, 32
    step = _nonlinear(m, seed=2)
    u0 = np.ones(4)
    U = np.broadcast_to(u0, (nt + 1, 4)).copy()
    for k in range(1, 4):
        U = M.two_level_iteration(step, step, U, m)
        V, _ = M.MGRIT(step, m=m, levels=2, relax="F", max_iter=k, tol=0).solve(u0, nt)
        np.testing.assert_allclose(U, V, rtol=0, atol=1e-14)


def test_f_and_c_relaxation_pieces():
    m, nt = 4, 16
    step = M.dahlquist_step(-1.0, 0.1, m)
    U = np.arange(nt + 1, dtype=float)[:, None]
    F = M.f_relaxation(step, U, m)
    assert np.array_equal(F[::m], U[::m])
    assert np.isclose(F[1, 0], step(U[0], 0, 0)[0]) and np.isclose(F[3, 0], step(F[2], 2, 0)[0])
    C = M.c_relaxation(step, U, m)
    assert np.isclose(C[4, 0], step(U[3], 3, 0)[0]) and C[0, 0] == 0 and C[5, 0] == 5


@pytest.mark.parametrize("cycle", ["V", "F"])
def test_threads_equal_serial_bit_for_bit(cycle):
    m, nt = 2, 64
    step = _nonlinear(m, seed=5)
    kw = dict(m=m, levels=3, relax="FCF", max_iter=4, tol=0.0, cycle=cycle)
    U1, h1 = M.MGRIT(step, **kw).solve(np.ones(4), nt)
    U2, h2 = M.MGRIT(step, threads=2, **kw).solve(np.ones(4), nt)
    assert np.array_equal(U1, U2)
    np.testing.assert_allclose(h1, h2, rtol=1e-12)


def test_fcf_converges_faster_than_f_and_table_shape():
    table = XM.convergence_table(ms=(2, 4), lam_dts=(-0.1, -1.0), nt=64, max_iter=4)
    assert table["rho"].shape == (2, 2) and np.all(table["rho"] < 1)
    d = XM.convergence_histories(ms=(4,), relax="F", nt=64, max_iter=4, lam_dt=-0.5)
    e = XM.convergence_histories(ms=(4,), relax="FCF", nt=64, max_iter=4, lam_dt=-0.5)
    assert e["factors"][4] < d["factors"][4]


def test_span_model_counts():
    one = M.span_model(64, m=4, levels=2, iters=1, P=1, relax="F")
    # first iteration only: leading F (48) + first residual (16 + latency);
    # every iteration: interp F (48) + residual (16 + latency; reused next iteration) + gc (16) + coarse march (16)
    assert one["span"] == (48 + 17) + 48 + 17 + 16 + 16
    big = M.span_model(4096, m=4, levels=3, iters=2, P=256)
    assert big["speedup"] > 1 > M.span_model(4096, m=4, levels=2, iters=2, P=1)["speedup"]
    sp = XM.speedup_model(4096, [1, 4, 16, 64], m=4, levels=3, iters=2)
    assert np.all(np.diff(sp) > 0)


@pytest.mark.parametrize("levels,relax,iters", [(2, "F", 3), (2, "FCF", 2), (3, "FCF", 2), (4, "FCFCF", 1)])
def test_span_model_work_is_the_counted_work(levels, relax, iters):
    nt, m = 256, 4
    s = M.MGRIT(M.dahlquist_step(-1.0, 1.0, m), m=m, levels=levels, relax=relax, max_iter=iters, tol=0.0)
    s.solve(np.ones(1), nt)
    assert s.steps_taken == M.span_model(nt, m=m, levels=levels, iters=iters, relax=relax)["work"]
    assert XM.counted_work(nt, m=m, levels=levels, relax=relax, iters=iters) == s.steps_taken / nt
    # one processor: the span is the work plus one latency per exchange
    one = M.span_model(nt, m=m, levels=levels, iters=iters, relax=relax, P=1, latency=0.0)
    assert one["span"] == one["work"]


def test_one_loop_over_a_partition_of_one_process():
    # the base Partition (everything local, serial map) gives the threaded solver's answer bit for bit
    m, nt = 4, 64
    step = _nonlinear(m, seed=7)
    kw = dict(m=m, levels=3, relax="FCF", max_iter=3, tol=0.0)
    U1, h1 = M.MGRIT(step, **kw).solve(np.ones(4), nt)
    s = M.MGRIT(step, **kw)
    seen = []
    U2, h2 = s.iterate(np.ones(4), nt, M.Partition(nt // m), status=seen.append)
    assert np.array_equal(U1, U2) and h1 == h2 and seen == ["iteration 1", "iteration 2", "iteration 3"]
    with pytest.raises(ValueError, match="partition: made for 4 C-intervals, the fine grid has 16"):
        s.iterate(np.ones(4), nt, M.Partition(4))
    assert [list(r) for r in M.ThreadPartition(10, 3).chunks(range(1, 11))] == [[1, 2, 3], [4, 5, 6], [7, 8, 9, 10]]


def test_diverging_iterations_raise_clearly():
    # an explicit (forward Euler) coarse step with lam*dt*m = -8 is unstable: |1 - 8| > 1
    def fine(u, i, level):
        return u / (1.0 + 2.0)

    def coarse(u, i, level):
        return u * (1.0 - 2.0 * 4**level)

    with pytest.raises(M.MGRITDivergence, match="diverged at iteration"):
        M.MGRIT(fine, m=4, levels=2, relax="F", max_iter=20, tol=0.0, coarse_step=coarse).solve(np.ones(1), 256)


def test_huge_first_residual_is_divergence_even_if_it_then_shrinks():
    # the coarse step amplifies by 1e6 per step: iteration 1 is astronomically wrong, later ones shrink
    # from there -- a solver that only watched the growth *between* iterations would return garbage
    def fine(u, i, level):
        return 0.5 * u + 1.0

    def coarse(u, i, level):
        return -1e6 * u + 1.0

    with pytest.raises(M.MGRITDivergence, match=r"diverged at iteration 1: the residual grew from .* \(the relaxed initial guess\)"):
        M.MGRIT(fine, m=4, levels=2, relax="F", max_iter=5, tol=0.0, coarse_step=coarse).solve(np.ones(1), 64)


def test_bad_input_messages():
    step = M.dahlquist_step(-1.0, 0.1)
    with pytest.raises(ValueError, match="m: the coarsening factor must be >= 2"):
        M.MGRIT(step, m=1)
    with pytest.raises(ValueError, match="levels: 3 levels with m=4 leave 1 coarse step"):
        M.MGRIT(step, m=4, levels=3).solve(np.ones(1), 16)
    with pytest.raises(ValueError, match="pad the sequence to 20 steps"):
        M.MGRIT(step, m=4, levels=2).solve(np.ones(1), 18)
    with pytest.raises(ValueError, match="relax: expected one of"):
        M.MGRIT(step, relax="C")
    with pytest.raises(ValueError, match="cycle: expected one of"):
        M.MGRIT(step, cycle="W")
    with pytest.raises(TypeError, match="step: expected a callable"):
        M.MGRIT(3)
    with pytest.raises(ValueError, match="u0: contains non-finite"):
        M.MGRIT(step).solve(np.array([np.nan]), 16)
    with pytest.raises(ValueError, match="nt: expected an integer >= 1"):
        M.hierarchy(0, 4, 2)
    with pytest.raises(ValueError, match="lam_dt: expected a number <= 0"):
        XM.convergence_histories(lam_dt=1.0)
    with pytest.raises(ValueError, match="threads: expected an integer >= 1"):
        M.MGRIT(step, threads=0)
    with pytest.raises(ValueError, match="dt: expected a number > 0"):
        M.dahlquist_step(-1.0, 0.0)
    with pytest.raises(ValueError, match="P: expected an integer >= 1"):
        M.span_model(64, P=0)


def test_plots_draw_without_error():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course_lib.teaching.plots import mgrit as mp

    ax = mp.draw_two_level_cycle(nt=8, m=4)
    assert "Parareal" in ax.get_title()
    d = XM.convergence_histories(ms=(2, 4), nt=32, max_iter=3)
    ax = mp.plot_histories(d["histories"])
    assert ax.get_ylabel() == "residual norm at C-points"
    Ps = [1, 4, 16]
    ax = mp.plot_speedup_model(Ps, {"x": XM.speedup_model(64, Ps)}, seed_speedup=6.6, measured={"here": (2, 0.2)})
    assert "model" in ax.get_title()
    ax = mp.plot_coarse_blowup(np.array([[0.0], [1e3], [np.inf]]), np.array([[0.0], [0.5], [0.6]]), M=16)
    assert len(ax.get_lines()) == 2
    plt.close("all")


def test_more_bad_inputs():
    step = M.dahlquist_step(-1.0, 0.1)
    with pytest.raises(ValueError, match="nt: expected an integer >= 1"):
        M.serial_solve(step, np.ones(1), 0)
    with pytest.raises(ValueError, match="nt: expected an integer >= 1"):
        M.dahlquist_exact_serial(-1.0, 0.1, 1.0, 0)
    with pytest.raises(ValueError, match="pad the sequence to 12 steps"):
        M.f_relaxation(step, np.ones((11, 1)), 4)
    with pytest.raises(ValueError, match="pad the sequence to 12 steps"):
        M.c_relaxation(step, np.ones((11, 1)), 4)
    with pytest.raises(ValueError, match="m: the coarsening factor must be >= 2"):
        M.two_level_iteration(step, step, np.ones((9, 1)), 1)
    with pytest.raises(ValueError, match=r"ms\[0\]: expected an integer >= 2, got 1"):
        XM.convergence_table(ms=(1,), lam_dts=(-1.0,))
    with pytest.raises(ValueError, match=r"Ps\[0\]: expected an integer >= 1"):
        XM.speedup_model(64, [0])
    with pytest.raises(ValueError, match="problem: expected one of"):
        XM.convergence_histories(problem="heat")
    assert M.convergence_factor([]) == 0.0 and M.convergence_factor([1.0, 0.1, 0.01]) == pytest.approx(0.1)


def test_f_cycle_converges_in_fewer_iterations_than_v_cycle():
    st = M.dahlquist_step(-2.0, 0.05, 2)
    exact = M.dahlquist_exact_serial(-2.0, 0.05, 1.0, 128)
    its = {}
    for cycle in ("V", "F"):
        U, h = M.MGRIT(st, m=2, levels=4, relax="FCF", cycle=cycle, max_iter=30, tol=1e-13).solve(np.ones(1), 128)
        np.testing.assert_allclose(U[:, 0], exact, atol=1e-12)
        its[cycle] = len(h)
    assert its["F"] < its["V"]


# --------------------------------------------------------------------------- relaxation helpers
# integer arrays never truncate silently, bad arguments named
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


STEP = M.dahlquist_step(-1.0, 0.1, 4)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("fn", [lambda U: M.f_relaxation(STEP, U, 4), lambda U: M.c_relaxation(STEP, U, 4),
                                lambda U: M.two_level_iteration(STEP, STEP, U, 4)])
def test_relaxation_helpers_refuse_integer_arrays(fn):
    U = np.ones((9, 1), dtype=np.int64)  # used to truncate every new state to an integer
    raises_naming(TypeError, "U", fn, U)
    Un = np.ones((9, 1))
    Un[2] = np.nan
    raises_naming(ValueError, "U", fn, Un)
    raises_naming(ValueError, "nt", fn, np.ones((8, 1)))
    out = fn(np.ones((9, 1)))
    assert out.dtype == np.float64 and np.isfinite(out).all()


@pytest.mark.timeout(30)
def test_relaxation_helpers_check_step_and_level():
    raises_naming(TypeError, "step", M.f_relaxation, None, np.ones(9), 4)
    raises_naming(ValueError, "level", M.c_relaxation, STEP, np.ones(9), 4, level=-1)
    raises_naming(TypeError, "coarse_step", M.two_level_iteration, STEP, 3, np.ones(9), 4)
    raises_naming(TypeError, "step", M.serial_solve, "f", np.ones(1), 4)
    raises_naming(ValueError, "nt", M.serial_solve, STEP, np.ones(1000), 10**9)
    raises_naming(ValueError, "history", M.convergence_factor, [1.0, np.nan])
    raises_naming(ValueError, "history", M.convergence_factor, [1.0, -0.5])
    assert M.convergence_factor([1.0, 0.5, 0.25]) == pytest.approx(0.5)


@pytest.mark.timeout(30)
@FAST
@given(st.integers(2, 6), st.sampled_from([np.float32, np.float64]))
def test_f_relaxation_matches_the_serial_march(nc, dtype):
    U0 = np.zeros((4 * nc + 1, 2), dtype)
    U0[::4] = M.serial_solve(STEP, np.ones(2, dtype), 4 * nc)[::4]
    np.testing.assert_allclose(M.f_relaxation(STEP, U0, 4), M.serial_solve(STEP, np.ones(2, dtype), 4 * nc),
                               rtol=1e-6)


# ---- issue 29: absurd levels fail at once (bounded by what nt allows, before any m**levels) --------------------
def test_absurd_levels_fail_fast():
    from helpers import raises_fast
    step = M.dahlquist_step(-1.0, 0.1)
    raises_fast(ValueError, "levels", M.hierarchy, 64, 4, 10**10)
    raises_fast(ValueError, "levels", M.MGRIT(step, m=4, levels=10**10).solve, np.array([1.0]), 64)
    raises_fast(ValueError, "levels", M.span_model, 64, levels=10**10)
    assert M.hierarchy(64, 4, 3) == [64, 16, 4]  # what nt allows still works


def test_dahlquist_exact_serial_checks_its_numbers():
    raises_naming(ValueError, "lam", M.dahlquist_exact_serial, float("nan"), 0.1, 1.0, 8)
    raises_naming(ValueError, "dt", M.dahlquist_exact_serial, -1.0, -0.1, 1.0, 8)
    raises_naming(TypeError, "u0", M.dahlquist_exact_serial, -1.0, 0.1, None, 8)
    raises_naming(ValueError, "lam", M.dahlquist_exact_serial, 10.0, 0.1, 1.0, 8)  # 1 - lam dt = 0
    raises_naming(ValueError, "nt", M.dahlquist_exact_serial, -1.0, 0.1, 1.0, 10**12)
    raises_naming(TypeError, "u0", M.MGRIT(M.dahlquist_step(-1.0, 0.1)).solve, "abc", 16)


@pytest.mark.parametrize("piece", [M.c_relaxation, M.f_relaxation])
@pytest.mark.parametrize("level", [10**10, 63, -1, 2.5, True, None])
def test_pieces_refuse_an_absurd_level_at_once(piece, level):
    """issue 39: ``c_relaxation(..., level=10**10)`` computed ``m**level`` for 25 s."""
    from helpers import raises_fast
    raises_fast((ValueError, TypeError), "level", piece, M.dahlquist_step(-1.0, 0.1), np.ones(9), 4, level=level,
                seconds=1.0)
    assert np.isfinite(piece(M.dahlquist_step(-1.0, 0.1), np.ones(9), 4, level=M.MAX_LEVEL)).all()
