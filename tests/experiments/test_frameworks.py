"""Tests for course_lib.experiments.frameworks: bad input is refused before torch is imported or anything runs."""
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from bad_input import BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, NOT_SIZE, bad_arrays, case_test
from course_lib.experiments import frameworks
from course_lib.models import rnn

_P = rnn.init_params(3, 4, 2, seed=0)
_X, _Y = np.zeros((5, 2, 3), np.float32), np.zeros((5, 2, 2), np.float32)
_BAD_CASES = [
    (frameworks.torch_steps, "X", bad_arrays((5, 2, 3), np.float32), {"params": _P, "Y": _Y, "lr": 0.1}),
    (frameworks.torch_steps, "Y", bad_arrays((5, 2, 2), np.float32), {"params": _P, "X": _X, "lr": 0.1}),
    (frameworks.torch_steps, "lr", BAD_NUMBER, {"params": _P, "X": _X, "Y": _Y}),
    (frameworks.torch_steps, "threads", NOT_SIZE.filter(lambda v: v is not None),
     {"params": _P, "X": _X, "Y": _Y, "lr": 0.1}),
    (frameworks.torch_steps, "params", st.sampled_from([None, "p", 3]), {"X": _X, "Y": _Y, "lr": 0.1}),
    (frameworks.framework_vs_numpy, "sizes", BAD_SIZES, {}),
    (frameworks.framework_vs_numpy, "repeat", BAD_REPEAT, {"sizes": (4,)}),
    (frameworks.framework_vs_numpy, "seed", BAD_SEED, {"sizes": (4,)}),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """One bad argument at a time: a clear error naming it, before torch is imported or a step runs."""
    case_test(case, data)


def test_a_one_thread_run_waits_for_spinning_pools_before_timing(monkeypatch):
    """With ``threads`` given, the pools of a threaded call just before may still spin on the cores (chapter 05's
    one-thread verdict follows a threaded table): the run settles once before its first timed round, and only
    then; without ``threads`` it times the pools as they are."""
    from course_lib.core import sysload, timing

    events = []
    real_compare = timing.compare
    monkeypatch.setattr(sysload, "settle", lambda *a, **k: events.append("settle") or True)
    monkeypatch.setattr(timing, "compare", lambda **kw: events.append("compare") or real_compare(**kw))
    frameworks.framework_vs_numpy((2,), T=2, repeat=1, threads=1)
    assert events[0] == "settle" and events.count("settle") == 1 and "compare" in events
    events.clear()
    frameworks.framework_vs_numpy((2,), T=2, repeat=1)
    assert "settle" not in events and "compare" in events
