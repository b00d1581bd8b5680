"""The cost model's measured probes (issue 24): MGRIT's convergence, the channel scan, the thread pool.

Each constant is checked against what it claims to price, on the course's own code."""
import math
from dataclasses import replace

import pytest

import course_lib  # noqa: F401
from course_lib.core import backend
from course_lib.core.forkjoin import Team
from course_lib.experiments import cost_model as cm
from course_lib.experiments.cost_model import overheads
from course_lib.experiments.cost_model.execute import inputs
from course_lib.models import gru


def test_mgrit_iterations_follow_the_measured_convergence():
    m = replace(cm.Machine.preset("xeon_phi"), mgrit_convergence=(0.1, 0.01))
    assert m.mgrit_iterations(1, 100, 100, 1e-5) == 5        # r0 = 1: 1 * 0.1^5 <= 1e-5
    assert m.mgrit_iterations(1, 1, 1, 1.0) == 1
    assert replace(m, mgrit_convergence=None).mgrit_iterations(1, 100, 100, 1e-5) is None
    p = cm.Problem("gru", "inference", batch=1, T=400, nh=25)
    assert cm.predict("mgrit", p, m).counts["iters"] == 5
    assert cm.predict("mgrit", p, replace(m, mgrit_convergence=None)).counts["iters"] == cm.MGRIT_ITERS


def test_measured_mgrit_convergence_predicts_the_iterations_of_a_fresh_problem():
    rho, c = overheads.mgrit_convergence(quick=True)
    assert 0 < rho < 1 and c > 0
    m = replace(cm.Machine.preset("xeon_phi"), mgrit_convergence=(rho, c))
    p = cm.Problem("gru", "inference", batch=2, T=192, nh=17)   # not the probe's size
    params, X = inputs(p)
    _, hist = gru.gru_forward(params, X, implicit=True, method="mgrit", m=4, levels=2, relax="FCF", max_iter=30,
                              tol=cm.MGRIT_TOL, return_history=True)
    assert abs(m.mgrit_iterations(p.batch, p.T, p.nh, cm.MGRIT_TOL) - (len(hist) - 1)) <= 1


def test_channel_seconds_is_a_line_in_steps_and_elements_on_the_measured_threads():
    m = replace(cm.Machine.preset("xeon_phi"), channel_rates=(2e-9, 1e-10, 5e-6), channel_threads=2)
    assert m.channel_seconds(1000, 30, 2) == pytest.approx(5e-6 + 1000 * 2e-9 + 30_000 * 1e-10)
    assert m.channel_seconds(1000, 30, 4) is None          # measured on 2 threads only
    p = cm.Problem("linear", "inference", batch=1, T=1 << 16, nh=64)
    slow = replace(m, channel_rates=(1e-6, 1e-7, 5e-6))
    assert cm.predict("channels", p, slow, P=2).seconds > cm.predict("channels", p, m, P=2).seconds
    step, elem, call = overheads.channel_rates(quick=True)
    assert step > 0 and elem > 0 and call > 0


def test_thread_methods_pay_the_measured_pool_start_and_the_gil():
    m = cm.Machine.preset("xeon_phi")
    p = cm.Problem("rnn", "inference", batch=32, T=16, nh=64, layers=4, nx=32, ny=32)
    base = cm.predict("threads", p, m, P=2)
    started = cm.predict("threads", p, replace(m, pool_start_s=1e-3), P=2)
    assert started.seconds == pytest.approx(base.seconds - m.handoff_s + 1e-3, rel=1e-9)
    one = cm.predict("batched", replace(p, batch=16), m).seconds      # one thread's share
    overlap = cm.predict("threads", p, replace(m, gil_serial=((1e-9, 0.0), (1.0, 0.0))), P=2)
    assert overlap.seconds == pytest.approx(one + m.handoff_s, rel=1e-9)  # a measured share of 0: they overlap
    assert overlap.seconds < base.seconds     # unmeasured: the calls are counted one after another, the rest overlaps
    bound = cm.predict("threads", p, replace(m, gil_serial=((1e-9, 1.0), (1.0, 1.0))), P=2)
    assert bound.seconds == pytest.approx(2 * one + m.handoff_s, rel=1e-9)   # the two shares one after the other
    convoy = cm.predict("threads", p, replace(m, gil_serial=((1e-9, 3.0), (1.0, 3.0))), P=2)
    assert convoy.seconds == pytest.approx(4 * one + m.handoff_s, rel=1e-9)  # handing the GIL over costs more
    blas = [cm.predict("threads", p, replace(m, gil_serial=g), P=2, python=False) for g in ((), ((1e-9, 3.0), (1.0, 3.0)))]
    assert blas[0].seconds == blas[1].seconds and blas[0].calls == cm.pass_calls(p)   # one Python thread: no GIL
    with pytest.raises(TypeError, match="python"):
        cm.predict("threads", p, m, P=2, python="no")
    wf = cm.predict("wavefront", p, replace(m, pool_start_s=1e-3), P=2)
    assert wf.parts["sync"] == pytest.approx(1e-3 + wf.regions * m.handoff_s)
    barriers = cm.predict("wavefront", p, replace(m, pool_start_s=1e-3, barrier_s=2e-4), P=2)
    assert barriers.parts["sync"] == pytest.approx(1e-3 + wf.regions * 2e-4)   # the measured barrier, once a diagonal
    assert math.isfinite(wf.seconds)


def test_gil_share_interpolates_between_the_measured_call_sizes():
    m = replace(cm.Machine.preset("xeon_phi"), gil_serial=((1e-6, 0.9), (1e-4, 0.1)))
    assert m.gil_share(1e-7) == 0.9 and m.gil_share(1e-3) == 0.1
    assert m.gil_share(1e-5) == pytest.approx(0.5)
    assert replace(m, gil_serial=()).gil_share(1e-5) == 0.0
    three = replace(m, gil_serial=((1e-4, 0.1), (1e-6, 3.0), (1e-5, 1.0)))   # any order, above 1 kept
    assert three.gil_share(1e-6) == 3.0 and three.gil_share(1e-5) == pytest.approx(1.0)
    assert three.gil_share(10 ** -5.5) == pytest.approx(2.0) and three.gil_share(10 ** -4.5) == pytest.approx(0.55)


def test_team_is_what_the_inference_methods_use():
    from course_lib.parallel import inference
    with Team(2) as team:
        assert team.run(lambda i: i + 1, [1, 2]) == [2, 3]
    assert "Team" in inference.predict_threads.__globals__


def test_gil_shares_time_the_course_threads_method_at_growing_calls(monkeypatch):
    start, shares, busy = overheads.gil_shares(quick=True)
    if backend.cpu_count() < 2:
        assert (start, shares, busy) == (None, (), None)
        return
    assert len(shares) == 2 and 0.0 <= start < 0.1
    assert busy is None or busy.startswith("threads at (")     # which pass was measured busy, and why
    (small, f_small), (large, f_large) = shares
    assert 0 < small < large          # the pass of large products makes longer calls
    assert 0.0 <= f_small <= 10.0 and 0.0 <= f_large <= 10.0
    monkeypatch.setattr(backend, "cpu_count", lambda: 1)
    assert overheads.gil_shares(quick=True) == (None, (), None)        # one core: no threads to contend


def test_wavefront_barrier_is_what_the_course_wavefront_pays_per_diagonal():
    start, shares, _ = overheads.gil_shares(quick=True)
    barrier, busy = overheads.wavefront_barrier(start, shares, quick=True)
    if backend.cpu_count() < 2:
        assert barrier is None
    else:
        assert 0.0 <= barrier < 0.01       # seconds per diagonal: a hand-off, not a pass
        assert busy is None or busy.startswith("the wavefront at")
    assert overheads.wavefront_barrier(start, (), quick=True) == (None, None)   # no GIL shares: nothing to take out


def test_a_probe_measured_busy_is_marked_busy_in_the_machine_table(monkeypatch):
    from course_lib.experiments.cost_model import probes
    monkeypatch.setattr(overheads, "gil_shares", lambda quick: (1e-4, ((1e-6, 1.0), (1e-4, 0.1)), "threads: held"))
    monkeypatch.setattr(overheads, "wavefront_barrier", lambda start, shares, quick: (4e-5, None))
    probes.measure_machine.cache_clear()
    try:
        m = cm.Machine.measure(quick=True)
    finally:
        probes.measure_machine.cache_clear()
    assert m.busy["gil_serial"] == m.busy["gil_start_s"] == "threads: held" and "barrier_s" not in m.busy
    rows = {q: src for q, _, src in m.table()}
    assert rows["threads: pool start and first GIL contention"].endswith("BUSY: threads: held")


def test_a_threaded_probe_run_while_other_programs_held_a_core_is_busy():
    assert overheads._load_busy(1.0, 2, "the channel scan") == \
        "the channel scan on 2 threads: other processes kept 1.0 core(s) busy meanwhile"
    assert overheads._load_busy(0.1, 2, "the channel scan") is None     # quiet
    assert overheads._load_busy(1.0, 1, "the channel scan") is None     # one thread: its fastest runs are a floor
    assert overheads._load_busy(None, 2, "the channel scan") is None    # the OS does not tell
