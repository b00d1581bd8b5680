"""The simulated cluster: critical paths equal hand-computed ones and the course's own counts."""
import pytest

from course_lib.algorithms import mgrit, newton, scan
from course_lib.parallel import cluster, inference


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
