"""The simulated cluster: critical paths equal hand-computed ones and the course's own counts."""
import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from course_lib.algorithms import mgrit, newton, scan
from course_lib.experiments.cost_model import cluster
from course_lib.parallel import inference
from helpers import raises_naming


def test_critical_path_hand_computed_diamond():
    g = cluster.TaskGraph()
    g.add("a", 1.0)
    g.add("b", 2.0, ["a"])
    g.add("c", 5.0, ["a"])
    g.add("d", 1.0, ["b", "c"])
    length, path = g.critical_path()
    assert length == 7.0 and path == ["a", "c", "d"]
    assert g.work() == 9.0
    assert g.simulate(1).makespan == 9.0      # one processor: all work in a row
    assert g.simulate(2).makespan == 7.0      # two: b runs beside c, the critical path is the bound


def test_pinned_tasks_wait_for_their_processor():
    g = cluster.TaskGraph()
    g.add("x", 3.0, proc=0)
    g.add("y", 2.0, proc=0)
    assert g.simulate(4).makespan == 5.0
    with pytest.raises(ValueError, match="P"):
        g.simulate(0)


def test_bad_graphs_are_rejected():
    g = cluster.TaskGraph()
    with pytest.raises(ValueError, match="deps"):
        g.add("a", 1.0, ["missing"])
    with pytest.raises(ValueError, match="cost"):
        g.add("a", -1.0)


@pytest.mark.parametrize("T", [1, 2, 5, 8, 13, 64])
def test_scan_graphs_match_scan_counts(T):
    for method, build in (("blelloch", cluster.blelloch_graph), ("hillis_steele", cluster.hillis_steele_graph)):
        g, c = build(T), scan.scan_counts(method, T)
        assert g.critical_path()[0] == c.span and g.work() == c.work


@pytest.mark.parametrize("T,L,P", [(10, 3, 2), (7, 4, 3), (5, 1, 2), (3, 6, 4)])
def test_wavefront_graph_matches_work_span(T, L, P):
    g, ws = cluster.wavefront_graph(T, L), inference.work_span(T, L, P)
    assert g.critical_path()[0] == ws["span"] and g.work() == ws["work"]
    assert g.simulate(P).makespan == ws["steps"]
    assert cluster.wavefront_graph(T, L, barrier=False).critical_path()[0] == ws["span"]


@pytest.mark.parametrize("nt,m,levels,iters,P,relax,lat",
                         [(64, 4, 2, 2, 4, "FCF", 0.0), (256, 4, 3, 3, 8, "F", 1.0), (64, 2, 3, 1, 3, "FCFCF", 0.5),
                          (16, 4, 1, 2, 2, "FCF", 0.0)])
def test_mgrit_graph_matches_span_model(nt, m, levels, iters, P, relax, lat):
    g = cluster.mgrit_graph(nt, m=m, levels=levels, iters=iters, P=P, relax=relax, latency=lat)
    sm = mgrit.span_model(nt, m=m, levels=levels, iters=iters, P=P, relax=relax, latency=lat)
    assert g.critical_path()[0] == pytest.approx(sm["span"])
    assert g.simulate(P).makespan == pytest.approx(sm["span"])
    g0 = cluster.mgrit_graph(nt, m=m, levels=levels, iters=iters, P=P, relax=relax)
    assert g0.work() == pytest.approx(sm["work"])


def test_mgrit_graph_work_equals_steps_the_solver_takes():
    import numpy as np

    solver = mgrit.MGRIT(mgrit.dahlquist_step(-1.0, 0.1, 4), m=4, levels=2, relax="FCF", max_iter=2, tol=0.0)
    solver.solve(np.array(1.0), 64)
    assert cluster.mgrit_graph(64, m=4, levels=2, iters=2, P=1).work() == solver.steps_taken


@pytest.mark.parametrize("T,H,iters,P,method", [(64, 4, 3, 4, "newton"), (100, 8, 2, 7, "quasi"), (5, 3, 1, 8, "newton")])
def test_deer_graph_span_matches_newton_span_model(T, H, iters, P, method):
    g = cluster.deer_graph(T, H, iters=iters, P=P, method=method)
    assert g.critical_path()[0] == pytest.approx(newton.span_model(T, H, iters=iters, P=P, method=method)["span"])
    if P == 1:
        assert g.work() == pytest.approx(newton.span_model(T, H, iters=iters, P=1, method=method)["work"])


# --------------------------------------------------------------------------- bad input
# costs and sizes named, huge graphs refused fast
FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.timeout(30)
@FAST
@given(st.sampled_from([-1.0, float("nan"), float("inf"), "1"]))
def test_cluster_costs_named(bad):
    raises_naming((ValueError, TypeError), "cell", cluster.wavefront_graph, 3, 2, bad)
    raises_naming((ValueError, TypeError), "combine", cluster.blelloch_graph, 8, bad)
    raises_naming((ValueError, TypeError), "combine", cluster.hillis_steele_graph, 8, bad)
    raises_naming((ValueError, TypeError), "carry", cluster.chunked_scan_graph, 8, 2, reduce=1.0, carry=bad, expand=1.0)
    raises_naming((ValueError, TypeError), "parallel_part", cluster.threads_step_graph, 4, 2, parallel_part=bad)
    raises_naming((ValueError, TypeError), "per_seq", cluster.data_parallel_graph, 4, 2, bad)


@pytest.mark.timeout(30)
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


@pytest.mark.timeout(30)
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


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (cluster.mgrit_graph, "levels", st.one_of(NOT_SIZE, HUGE), {"nt": 64}),
    (cluster.mgrit_graph, "nt", NOT_SIZE, {}),
    (cluster.wavefront_graph, "T", HUGE, {"L": 3}),
    (cluster.deer_graph, "iters", st.one_of(NOT_SIZE, HUGE), {"T": 8, "nh": 4}),
    (cluster.hillis_steele_graph, "T", HUGE, {}),
    (cluster.threads_step_graph, "P", HUGE, {"T": 8, "parallel_part": 1.0}),
]


def test_simulated_cluster_refuses_absurd_levels_at_once():
    """mgrit_graph(levels=1e10) ran ~50 s computing m**(levels-1) before failing."""
    exc = fails_fast(cluster.mgrit_graph, 64, levels=10**10)
    assert isinstance(exc, ValueError) and str(exc).startswith("levels"), exc


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)
