"""Issue 18, experiments layer and the simulated cluster, third pass (mgrit, newton, halide, scan, cost_model,
experiments.cost_model.cluster): bad input is a ValueError/TypeError naming the argument -- raised before anything is timed,
compiled or allocated -- or a correct result; never NaN, a hang or a crash."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.experiments import cost_model as cm
from course_lib.experiments import halide as ex_halide
from course_lib.experiments import mgrit as ex_mgrit
from course_lib.experiments import newton as ex_newton
from course_lib.experiments import scan as ex_scan
from course_lib.experiments.cost_model import cluster
from helpers import raises_naming

pytestmark = pytest.mark.timeout(30)
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BAD_SIZE = st.one_of(st.integers(-5, 0), st.just(2.5), st.just("3"), st.just(True), st.just(None))
HUGE = st.integers(10**12, 10**15)


# --------------------------------------------------------------------------- experiments.mgrit
@FAST
@given(BAD_SIZE)
def test_mgrit_sweeps_reject_bad_sizes(bad):
    raises_naming((ValueError, TypeError), "P", ex_mgrit.speedup_model, 64, [1, bad])
    raises_naming((ValueError, TypeError), "nt", ex_mgrit.convergence_table, nt=bad)
    raises_naming((ValueError, TypeError), "nt", ex_mgrit.counted_work, bad)


@FAST
@given(HUGE)
def test_mgrit_huge_nt_refused_before_allocating(nt):
    raises_naming(ValueError, "nt", ex_mgrit.counted_work, nt)
    raises_naming(ValueError, "nt", ex_mgrit.convergence_histories, nt=nt)


def test_mgrit_sequences_and_choices():
    raises_naming(ValueError, "ms", ex_mgrit.convergence_table, ms=())
    raises_naming(ValueError, "m", ex_mgrit.convergence_table, ms=(1,))  # each item named as before
    raises_naming(TypeError, "Ps", ex_mgrit.speedup_model, 64, 4)
    raises_naming(ValueError, "lam_dts", ex_mgrit.convergence_table, lam_dts=(float("nan"),))
    raises_naming(ValueError, "relax", ex_mgrit.convergence_table, relax="X")
    raises_naming(TypeError, "Ts", ex_mgrit.time_axis, 5)
    raises_naming(TypeError, "runs", ex_mgrit.train_compare, [], None)
    X = np.zeros((4, 3, 2), np.float32)
    y = np.zeros(3, np.int64)
    raises_naming(TypeError, "data", ex_mgrit.train_compare, {"a": {}}, (X, y))
    raises_naming(ValueError, "data[2] (Xte)", ex_mgrit.train_compare, {"a": {}}, (X, y, X[:, :, :1], y))
    raises_naming(TypeError, "progress", ex_mgrit.train_compare, {"a": {}}, (X, y, X, y), progress=3)
    # correct result on good input
    out = ex_mgrit.speedup_model(64, [1, 2], m=4, levels=2, iters=2)
    assert out.shape == (2,) and np.all(np.isfinite(out))
    t = ex_mgrit.convergence_table(ms=(2,), lam_dts=(-1.0,), nt=16, max_iter=2)
    assert t["rho"].shape == (1, 1)


# --------------------------------------------------------------------------- experiments.newton
@FAST
@given(BAD_SIZE)
def test_newton_sizes(bad):
    raises_naming((ValueError, TypeError), "Hs", ex_newton.model_speedups, 64, [bad], [1])
    raises_naming((ValueError, TypeError), "Ts", ex_newton.scan_drift, Ts=(bad,))
    raises_naming((ValueError, TypeError), "T", ex_newton.time_deer, T=bad)


def test_newton_choices_and_huge():
    raises_naming(ValueError, "methods", ex_newton.model_speedups, 64, [4], [1], methods=("nope",))
    raises_naming(ValueError, "iters", ex_newton.model_speedups, 64, [4], [1], iters={"newton": 3})
    raises_naming(ValueError, "kind", ex_newton.scan_drift, kind="lstm")
    raises_naming(ValueError, "T", ex_newton.time_deer, T=10**13)
    raises_naming(ValueError, "Ts", ex_newton.iterations_vs_T, Ts=())
    raises_naming(ValueError, "tol", ex_newton.work_comparison, tol=float("nan"))
    p = ex_newton.scaled_gru(4, 1.0)
    X = np.zeros((4, 1, 3))
    raises_naming(ValueError, "method", ex_newton.newton_iterates, p, X, method="bisection")
    raises_naming(TypeError, "implicit", ex_newton.mgrit_forward, p, X, implicit="yes")
    raises_naming(TypeError, "method", ex_newton.mgrit_forward, p, X, method="sequential")
    out = ex_newton.model_speedups(64, [2], [1, 2], iters=3)
    assert set(out) == {"newton", "quasi"} and all(np.all(np.isfinite(v)) for v in out.values())


# --------------------------------------------------------------------------- experiments.halide / scan
def test_halide_compile_seconds_checks_before_compiling():
    raises_naming(ValueError, "schedule", ex_halide.compile_seconds, "no-such-schedule")
    raises_naming((ValueError, TypeError), "schedule", ex_halide.compile_seconds, 3)


@pytest.mark.parametrize("dtype", ["int32", "float16", "nope", 3.5])
def test_scan_lane_instructions_dtype(dtype):
    raises_naming(TypeError, "dtype", ex_scan.lane_instructions, dtype)


# --------------------------------------------------------------------------- cost_model
@FAST
@given(st.sampled_from(["gemm_gflops_core", "bandwidth_core_gbs", "call_s", "cores", "simd_lanes"]),
       st.sampled_from([-1.0, float("nan"), float("inf"), "x", 0]))
def test_machine_fields(field, bad):
    base = cm.Machine.preset("xeon_phi")
    import dataclasses
    if bad == 0 and field == "call_s":
        assert dataclasses.replace(base, call_s=0).call_s == 0  # a time may be 0
        return
    raises_naming((ValueError, TypeError), field, dataclasses.replace, base, **{field: bad})


@FAST
@given(st.sampled_from([-1.0, float("nan"), "x", None]))
def test_rates_and_flops(bad):
    m = cm.Machine.preset("k80_host")
    raises_naming((ValueError, TypeError), "rows", m.gemm_rate, bad)
    raises_naming((ValueError, TypeError), "rows", cm.Problem().cell_flops, bad)
    raises_naming((ValueError, TypeError), "rows", cm.Problem(ny=3).output_flops, bad)
    raises_naming((ValueError, TypeError), "threads", m.bandwidth, bad)


def test_cost_model_objects():
    m = cm.Machine.preset("k80_host")
    p = cm.Problem(T=64, nh=8)
    raises_naming(TypeError, "quick", cm.Machine.measure, "yes")
    raises_naming(TypeError, "name", cm.GPU.assumed, 3)
    raises_naming(ValueError, "bandwidth_gbs", cm.GPU, "g", -1.0, 1.0, 1e-6, 1e-6)
    raises_naming(TypeError, "problem", cm.applicable, "p", m)
    raises_naming(TypeError, "machine", cm.applicable, p, "m")
    raises_naming(ValueError, "advice", cm.first_choice, [])
    raises_naming(TypeError, "advice", cm.first_choice, ["sequential"])
    raises_naming(ValueError, "seconds", cm.Advice, "sequential", float("nan"), "")
    raises_naming(TypeError, "problem", cm.Cost, "sequential", None, 1)
    raises_naming(ValueError, "measured", cm.Row, "c", "l", "sequential", 1.0, 0.0, p)
    raises_naming(TypeError, "cal", cm.measured_speedups, {})
    cal = cm.Calibration(m, [cm.Row("c", "l", "sequential", 1.0, 2.0, p)], {"c": None}, {})
    raises_naming(ValueError, "config", cal.measured_fastest, "other")
    assert cal.measured_fastest("c") == "l" and cal.predicted_fastest("c") == "l"
    raises_naming(TypeError, "rows", cm.Calibration, m, ["row"], {}, {})
    for bad in (0, -2, 1.5):
        raises_naming((ValueError, TypeError), "P", cm.mgrit_counts, 64, bad)
        raises_naming((ValueError, TypeError), "nh", cm.deer_counts, 64, bad, 1, iters=2)
    adv = cm.advise(p, m)
    assert cm.first_choice(adv) == adv[0].method
    assert all(v is None or isinstance(v, str) for v in cm.applicable(p, m).values())


# --------------------------------------------------------------------------- experiments.cost_model.cluster
@FAST
@given(st.sampled_from([-1.0, float("nan"), float("inf"), "1"]))
def test_cluster_costs_named(bad):
    raises_naming((ValueError, TypeError), "cell", cluster.wavefront_graph, 3, 2, bad)
    raises_naming((ValueError, TypeError), "combine", cluster.blelloch_graph, 8, bad)
    raises_naming((ValueError, TypeError), "combine", cluster.hillis_steele_graph, 8, bad)
    raises_naming((ValueError, TypeError), "carry", cluster.chunked_scan_graph, 8, 2, reduce=1.0, carry=bad, expand=1.0)
    raises_naming((ValueError, TypeError), "parallel_part", cluster.threads_step_graph, 4, 2, parallel_part=bad)
    raises_naming((ValueError, TypeError), "per_seq", cluster.data_parallel_graph, 4, 2, bad)


@FAST
@given(st.integers(10**7, 10**12))
def test_cluster_huge_graphs_refused_fast(n):
    raises_naming(ValueError, "T", cluster.blelloch_graph, n)
    raises_naming(ValueError, "T", cluster.hillis_steele_graph, n)
    raises_naming(ValueError, "T", cluster.wavefront_graph, n, 3)
    raises_naming(ValueError, "P", cluster.threads_step_graph, 4, n // 10**6 + 10**4, parallel_part=1.0)
    raises_naming(ValueError, "P", cluster.deer_graph, n, 4, iters=2, P=n)
    raises_naming(ValueError, "P", cluster.chunked_scan_graph, n, n, reduce=1.0, carry=1.0, expand=1.0)
    raises_naming(ValueError, "P", cluster.TaskGraph().simulate, n)


def test_cluster_objects():
    raises_naming(ValueError, "kind", cluster.Task, "a", 1.0, (), "nap")
    raises_naming(ValueError, "cost", cluster.Task, "a", -1.0)
    raises_naming(TypeError, "deps", cluster.Task, "a", 1.0, "b")
    raises_naming(TypeError, "label", cluster.TaskGraph, 3)
    raises_naming(TypeError, "deps", cluster.TaskGraph().add, "a", 1.0, "b")
    raises_naming((ValueError, TypeError), "P", cluster.Schedule, 0)
    g = cluster.wavefront_graph(4, 2, 1.0)
    s = g.simulate(2)
    raises_naming(ValueError, "proc", s.busy, 2)
    raises_naming(TypeError, "proc", s.busy, "0")
    assert math.isclose(s.busy(0) + s.busy(1), s.work) and s.makespan >= g.critical_path()[0]
