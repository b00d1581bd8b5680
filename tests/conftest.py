"""Shared fixtures."""
import pytest


@pytest.fixture
def quiet_machine(monkeypatch):
    """Measurements read as reliable whatever the load, so a speed check *judges* the speed.

    The graders pass a slow-but-correct solution when the machine was busy (the noise guard says the
    ratio means nothing); tests that prove a slow solution is rejected use this fixture so that they
    do not depend on what else the machine is running."""
    from course_lib.core import timing

    monkeypatch.setattr(timing, "noise_from", lambda times, others=None: timing.Noise())
    monkeypatch.setattr(timing, "noise_of_pairs", lambda ratios, others=None: timing.Noise())
    yield


@pytest.fixture
def busy_machine(monkeypatch):
    """Every measurement reads as disturbed by other processes (the opposite of ``quiet_machine``)."""
    from course_lib.core import timing

    monkeypatch.setattr(timing, "noise_from", lambda times, others=None: timing.Noise(others=1.5, busy=True))
    monkeypatch.setattr(timing, "noise_of_pairs", lambda ratios, others=None: timing.Noise(others=1.5, busy=True))
    yield
