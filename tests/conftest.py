"""Shared fixtures, and the markers every test gets from what it covers.

Markers (registered in pyproject.toml):

* ``ch00`` ... ``ch12``: the chapters a test file covers, computed from the ``course_lib`` modules it
  imports (AST) and the chapter -> modules table ``course_lib.CHAPTERS``; a notebook item (nbval, a path
  ``notebooks/NN_*.ipynb``, ``solutions/...``, ``exercises/...``) or a test parametrized over notebooks
  (an id like ``solutions/08_scan``) belongs to chapter NN. ``pytest -m ch08`` runs chapter 08's tests.
* ``slow``: measured to take more than 20 s in a full run (``SLOW`` below, from ``--durations=0``);
  ``pytest -m "not slow"`` leaves them out.
"""
import inspect

import pytest

from helpers import chapters_of_item

SLOW_SECONDS = 20
#: node ids measured at more than SLOW_SECONDS (setup + call + teardown) in a full run
#: (the --durations=0 output of a full run, 2026-11-25; the seconds measured beside each). Notebook cells are not
#: listed: each is under 20 s, and nbval runs a notebook's cells in order.
SLOW = frozenset({
    "tests/benchmarks/test_halide.py::test_halide_benchmark_quick",                                  # 35.6 s
    "tests/browser/test_lab.py::test_setup_notebook_runs_and_slider_updates",                        # 28.8 s
    "tests/teaching/checks/test_tiling_simd.py::test_oversubscribed_run_catches_a_race_the_source_check_misses",  # 28.3 s
    "tests/course/test_nbgrader_export.py::test_real_nbgrader_autogrades_a_chapter",                 # 23.5 s
    "tests/algorithms/test_scan.py::test_subnormal_products_are_flushed_without_changing_h[opts2]",  # 21.0 s
    "tests/algorithms/test_scan.py::test_blocked_chunked_scan_equals_the_float64_loop[1-1-1]",       # 20.4 s
    "tests/teaching/checks/test_which.py::test_pass_measures_and_reports[measured]",                 # 20.1 s
})


def pytest_collection_modifyitems(config, items):
    for item in items:
        for ch in sorted(chapters_of_item(item)):
            item.add_marker(getattr(pytest.mark, f"ch{ch}"))
        if item.nodeid in SLOW:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _speed_not_judged_raises(monkeypatch):
    """``make test`` sets COURSE_NOT_JUDGED=continue for the reference solutions' kernels (teaching/checks/speed.py);
    the unit tests judge speed as a student's kernel does: a measurement that cannot decide raises."""
    monkeypatch.delenv("COURSE_NOT_JUDGED", raising=False)
    yield


@pytest.fixture
def busy_machine(monkeypatch):
    """Every measurement reads as disturbed by other processes (a miss near the bar is then not judged, never a
    pass)."""
    from course_lib.core import timing

    monkeypatch.setattr(timing, "noise_from", lambda times, others=None: timing.Noise(others=1.5, busy=True))
    monkeypatch.setattr(timing, "noise_of_pairs", lambda ratios, others=None: timing.Noise(others=1.5, busy=True))
    yield


class FakeClock:
    """A clock for ``course_lib.core.timing`` that moves only when the test says work was done.

    Each call of a function timed by ``timing.compare`` costs ``costs[name]`` seconds (its keyword in
    the compare call: ``yours``, ``course_parallel``, ...; ``default`` for the rest), and a timed
    function may charge more itself with :meth:`advance` ("this call did 20 ms of work"). The functions
    still run for real (their results are checked); only the time read is fake, so a slow solution is
    slow by a set factor, whatever else the machine runs."""

    def __init__(self, default: float = 1e-3):
        self.now = 0.0
        self.default = default
        self.costs: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        if not seconds >= 0:
            raise ValueError(f"seconds: a clock only moves forward, got {seconds!r}")
        self.now += seconds

    def cost(self, default: float | None = None, **costs: float) -> "FakeClock":
        """Set the seconds each compared function costs per call, by its keyword name."""
        if default is not None:
            self.default = default
        self.costs.update(costs)
        return self

    def _timed(self, name, fn):
        def call():
            out = fn()
            self.calls[name] = self.calls.get(name, 0) + 1
            self.advance(self.costs.get(name, self.default))
            return out
        return call


@pytest.fixture
def fake_clock(monkeypatch):
    """Replace the clock of every measurement in ``course_lib.core.timing`` by a :class:`FakeClock`.

    The machine also reads as quiet (no load from other processes): a test that proves a slow solution
    fails (or a fast one passes) a speed check is then deterministic on any machine, busy or not."""
    from course_lib.core import noise, timing

    clock = FakeClock()
    real_compare = timing.compare

    options = set(inspect.signature(real_compare).parameters)

    def compare(**kw):
        fns = {name: clock._timed(name, fn) for name, fn in kw.items() if name not in options}
        return real_compare(**{k: v for k, v in kw.items() if k in options}, **fns)

    monkeypatch.setattr(timing, "clock", clock)
    monkeypatch.setattr(noise, "_busy_cpu_seconds", lambda: None)
    monkeypatch.setattr(timing, "_run_queue_wait", lambda: None)   # no real waits either
    monkeypatch.setattr(timing, "_others_running", lambda: None)   # nor other programs' runnable threads
    monkeypatch.setattr(timing, "_thread_cpu", dict)               # nor which of this process's threads ran
    monkeypatch.setattr(timing, "compare", compare)
    yield clock
