"""run(problem, method) executes the course's own code: it equals each method's own function, every
runnable method agrees with the batched pass, and impossible combinations are refused by name."""
import numpy as np
import pytest

from course_lib.algorithms import scan
from course_lib.experiments import cost_model as cm
from course_lib.experiments.cost_model.execute import upstream
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


def _subnormals(x) -> int:
    x = np.asarray(x)
    return int(np.count_nonzero((x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny))) if x.dtype.kind == "f" else 0


def _arrays(obj):
    """Every array in a backward's result (tuples, dataclasses of gradients)."""
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _arrays(o)
    elif hasattr(obj, "__dataclass_fields__"):
        for f in obj.__dataclass_fields__:
            yield from _arrays(getattr(obj, f))


def test_training_runs_backpropagate_a_dense_gradient_that_never_goes_subnormal(monkeypatch):
    """Issue 43: a one-hot last-step upstream gradient made the timed backward a pure product chain on subnormals
    (scan backward 10.02 ns per element on an Intel Xeon, 1.04 ns on Zen 5). The training runs -- scan_back's
    probe size among them -- now back-propagate execute.upstream (dense), and no gradient they return is subnormal;
    the old one-hot gradient on the same problems does produce subnormals (so this check can fail)."""
    seen = []

    def spy(module, name):
        real = getattr(module, name)

        def wrapped(*args, **kw):
            out = real(*args, **kw)
            seen.append((name, args, out))
            return out
        monkeypatch.setattr(module, name, wrapped)
    spy(scan, "linear_recurrence_backward"), spy(lstm, "lstm_backward"), spy(gru, "gru_backward")
    probs = [cm.Problem("linear", "training", batch=1, T=2048, nh=64),     # overheads.scan_back's run
             cm.Problem("lstm", "training", batch=2, T=193, nh=16),
             cm.Problem("gru", "training", batch=1, T=1024, nh=8)]
    for p in probs:
        for m in ("sequential", "batched"):
            cm.run(p, m)
    assert {name for name, *_ in seen} == {"linear_recurrence_backward", "lstm_backward", "gru_backward"}
    for name, args, out in seen:
        assert np.all(args[2 if name == "lstm_backward" else 3] != 0), name     # the upstream gradient is dense
        assert all(_subnormals(g) == 0 for g in _arrays(out)), name
    h = cm.run(probs[0], "sequential")
    np.testing.assert_array_equal(upstream(h), np.ones_like(h))
    a, _ = cm.inputs(probs[0])
    one_hot = np.zeros_like(h)
    one_hot[-1] = 1.0
    assert _subnormals(scan.linear_recurrence_backward(a, h, None, one_hot)[1]) > 0
    params, X = cm.inputs(probs[1])
    H, _, cache = lstm.lstm_forward(params, X, return_cache=True)
    one_hot = np.zeros_like(H)
    one_hot[-1] = 1.0
    assert sum(_subnormals(g) for g in _arrays(lstm.lstm_backward(params, cache, one_hot))) > 0
