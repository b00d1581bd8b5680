"""run(problem, method) executes the course's own code: it equals each method's own function, every
runnable method agrees with the batched pass, and impossible combinations are refused by name."""
import numpy as np
import pytest

from course_lib.algorithms import scan
from course_lib.experiments import cost_model as cm
from course_lib.models import gru, lstm
from course_lib.parallel import deer, inference
from helpers import raises_naming

PROBLEMS = [cm.Problem("rnn", "inference", batch=4, T=6, nh=16, layers=2, ny=5),
            cm.Problem("gru", "inference", batch=3, T=16, nh=8),
            cm.Problem("gru", "training", batch=3, T=8, nh=8),
            cm.Problem("lstm", "inference", batch=3, T=8, nh=8),
            cm.Problem("lstm", "training", batch=2, T=5, nh=8),
            cm.Problem("linear", "inference", batch=2, T=300, nh=4),
            cm.Problem("linear", "training", batch=2, T=300, nh=4)]


@pytest.mark.parametrize("prob", PROBLEMS, ids=lambda p: f"{p.kind}-{p.mode}")
def test_every_runnable_method_agrees_with_batched(prob):
    ref = cm.run(prob, "batched")
    assert ref.shape[:2] == (prob.T, prob.batch)
    for m in cm.runnable(prob):
        if m in ("mpi", "cuda_batched", "mgrit"):
            continue
        out = cm.run(prob, m, threads=2 if m in ("threads", "wavefront", "channels") else None)
        tol = 1e-3 if m in ("mgrit", "newton", "quasi") else 1e-5
        np.testing.assert_allclose(out, ref, atol=tol, err_msg=m)


def test_run_equals_each_methods_own_function():
    p = cm.Problem("rnn", "inference", batch=4, T=6, nh=16, layers=2, ny=5)
    params, X = cm.inputs(p)
    for m in ("sequential", "batched"):
        np.testing.assert_array_equal(cm.run(p, m), inference.predict(params, X, method=m))
    np.testing.assert_array_equal(cm.run(p, "threads", threads=2), inference.predict(params, X, method="threads",
                                                                                      threads=2))
    g = cm.Problem("gru", "inference", batch=3, T=16, nh=8)
    params, X = cm.inputs(g)
    np.testing.assert_array_equal(cm.run(g, "batched"), gru.gru_forward(params, X))
    params64, X64 = cm.inputs(g, dtype=np.float64)
    np.testing.assert_array_equal(cm.run(g, "quasi"), deer.gru_forward(params64, X64, method="quasi", tol=1e-8))
    ls = cm.Problem("lstm", "inference", batch=3, T=8, nh=8)
    params, X = cm.inputs(ls)
    np.testing.assert_array_equal(cm.run(ls, "batched"), lstm.lstm_forward(params, X)[0])
    lin = cm.Problem("linear", "inference", batch=2, T=300, nh=4)
    a, x = cm.inputs(lin)
    np.testing.assert_array_equal(cm.run(lin, "chunked"), scan.linear_recurrence(a, x, method="chunked"))


def test_mgrit_solves_the_implicit_gru():
    g = cm.Problem("gru", "inference", batch=2, T=64, nh=8)
    params, X = cm.inputs(g)
    np.testing.assert_allclose(cm.run(g, "mgrit"), gru.gru_forward(params, X, implicit=True), atol=1e-4)


def test_run_refuses_by_name():
    raises_naming(ValueError, "mode", cm.run, cm.Problem("gru", "training", batch=2, T=8, nh=4), "mgrit")
    raises_naming(ValueError, "method", cm.run, cm.Problem("linear", batch=2, T=8, nh=4), "newton")
    raises_naming(ValueError, "method", cm.run, cm.Problem("gru", batch=2, T=8, nh=4), "warp")
    raises_naming(ValueError, "layers", cm.run, cm.Problem("gru", batch=2, T=8, nh=4, layers=2), "batched")
    raises_naming(TypeError, "problem", cm.run, "gru", "batched")


def test_measure_times_each_method_once_interleaved():
    p = cm.Problem("gru", "inference", batch=2, T=8, nh=4)
    cmp = cm.measure(p, ["sequential", "batched"], repeat=1)
    assert set(cmp.timings) == {"sequential", "batched"}
    assert all(t.median > 0 for t in cmp.timings.values())


def test_fresh_problems_are_fixed_by_seed_and_not_chapter_configurations():
    a, b = cm.fresh_problems(8, seed=3), cm.fresh_problems(8, seed=3)
    assert a == b and a != cm.fresh_problems(8, seed=4)
    assert {p.kind for p in cm.fresh_problems(8, seed=0)} == set(cm.KINDS)
    assert all(cm.runnable(p) for p in a)


def test_check_advisor_measures_every_predicted_method():
    import dataclasses
    from course_lib.core import timing
    m = dataclasses.replace(cm.Machine.preset("xeon_phi"), noise=timing.Noise())
    probs = [cm.Problem("gru", batch=2, T=16, nh=4), cm.Problem("linear", batch=1, T=500, nh=2)]
    chk = cm.check_advisor(probs, m, repeat=1)
    for r in chk.results:
        assert set(r.measured) == set(r.predicted) and r.fastest == min(r.measured, key=r.measured.get)
        assert r.advised in r.measured and r.hit in (True, False)
        assert r.hit == (r.measured[r.advised] <= cm.WITHIN * r.measured[r.fastest])
    assert "of 2 fresh problems" in chk.summary() and "predicted" in chk.table()
    busy = dataclasses.replace(m, noise=timing.Noise().add(True, "busy"))
    assert cm.check_advisor(probs[:1], busy, repeat=1).results[0].hit is None
