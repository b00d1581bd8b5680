"""The cost model's counts come from the implementations: the calls (numpy operations and compiled-kernel
calls) it predicts for a pass equal a fresh count of the course's own code at sizes the counts were not
taken at, and DEER's calls and bytes per iteration likewise."""
import numpy as np
import pytest

from course_lib.experiments import cost_model as cm
from course_lib.experiments.cost_model import counts
from helpers import raises_naming

PHI = cm.Machine.preset("xeon_phi")


@pytest.mark.parametrize("prob", [cm.Problem("rnn", batch=3, T=7, nh=6, layers=3, ny=2),
                                  cm.Problem("rnn", batch=5, T=11, nh=5, layers=1, ny=3),
                                  cm.Problem("gru", batch=3, T=9, nh=5),
                                  cm.Problem("gru", "training", batch=2, T=6, nh=7),
                                  cm.Problem("lstm", batch=4, T=10, nh=6),
                                  cm.Problem("lstm", "training", batch=3, T=7, nh=5),
                                  cm.Problem("linear", batch=2, T=50, nh=3),
                                  cm.Problem("linear", "training", batch=2, T=50, nh=3)],
                         ids=lambda p: f"{p.kind}-{p.mode}-L{p.layers}")
def test_batched_and_sequential_calls_equal_the_implementations(prob):
    assert cm.predict("batched", prob, PHI).calls == counts.count_run(prob, "batched").calls
    if prob.kind != "linear":  # one pass per sequence
        assert cm.predict("sequential", prob, PHI).calls == counts.count_run(prob, "sequential").calls


@pytest.mark.parametrize("method", ["threads", "wavefront"])
@pytest.mark.parametrize("T,L,P", [(9, 2, 2), (6, 3, 3), (2, 4, 2), (13, 2, 1)])
def test_threaded_rnn_calls_equal_the_implementations(method, T, L, P):
    prob = cm.Problem("rnn", batch=4, T=T, nh=6, layers=L, ny=2)
    assert cm.predict(method, prob, PHI, P=P).calls == counts.count_run(prob, method, threads=P).calls


@pytest.mark.parametrize("method", ["newton", "quasi"])
@pytest.mark.parametrize("mode", ["inference", "training"])
def test_deer_calls_and_bytes_equal_the_implementation(method, mode):
    prob = cm.Problem("gru", mode, batch=3, T=16, nh=6, nx=3)
    c = cm.predict(method, prob, PHI, iters=3)
    assert c.calls == counts.count_deer(method, T=16, batch=3, nh=6, iters=3, training=mode == "training").calls
    # bytes per iteration: the difference of two counted runs at a size the fit never saw
    b3 = counts.count_deer(method, T=16, batch=3, nh=6, iters=3).bytes
    b2 = counts.count_deer(method, T=16, batch=3, nh=6, iters=2).bytes
    one = cm.predict(method, cm.Problem("gru", batch=3, T=16, nh=6, nx=3), PHI, iters=1).bytes
    assert one == pytest.approx(b3 - b2, rel=0.05)  # per-sequence arrays (h0) do not scale with T


def test_newton_moves_nh_squared_bytes_quasi_nh():
    n0, n1, n2 = cm.deer_bytes("newton")
    q0, q1, q2 = cm.deer_bytes("quasi")
    assert n2 > 20 * max(q2, 1.0)  # full Jacobians: nh^2 per step; quasi keeps the diagonal (nh)


def test_counting_sees_numpy_operations_and_kernels():
    x = counts.counted(np.ones(4))
    with counts.counting() as t:
        y = np.tanh(x) + x @ x
        np.concatenate([x, y])
    assert t.calls == 4 and t.by_name == {"tanh": 1, "matmul": 1, "add": 1, "concatenate": 1}
    assert t.bytes > 0
    with counts.counting() as t2:
        np.tanh(np.ones(3))  # plain arrays are not counted
    assert t2.calls == 0


def test_count_functions_name_bad_arguments():
    raises_naming(TypeError, "problem", counts.count_run, "gru")
    raises_naming(ValueError, "method", counts.count_deer, "picard", T=4, batch=1, nh=2, iters=1)
    raises_naming((ValueError, TypeError), "iters", counts.count_deer, "newton", T=4, batch=1, nh=2, iters=0)
    raises_naming(ValueError, "kind", counts.step_calls, "transformer")


@pytest.mark.parametrize("mode", ["bogus", None, 3, "Training"])
def test_deer_calls_names_a_bad_mode(mode):
    """A mode other than inference/training used to be counted silently as inference (the fuzz of issue 39)."""
    with pytest.raises(ValueError, match="mode"):
        counts.deer_calls("newton", mode)
