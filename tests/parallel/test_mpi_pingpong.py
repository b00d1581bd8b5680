"""MPI ping-pong: a real 2-rank job gives positive, increasing times and a sane alpha/beta; the fit; errors."""
import pytest

import course_lib  # noqa: F401
from course_lib.core import backend
from course_lib.parallel import mpi_pingpong as pp
from helpers import raises_naming

MPI_OK, MPI_WHY = backend.mpi_available()
needs_mpi = pytest.mark.skipif(not MPI_OK, reason=f"MPI is not available: {MPI_WHY}")
pytestmark = pytest.mark.mpi


@needs_mpi
@pytest.mark.timeout(120)
def test_pingpong_measures_latency_and_bandwidth():
    res = pp.pingpong((8, 1 << 16, 1 << 20, 1 << 22), repeat=5)
    assert res["sizes"] == [8, 1 << 16, 1 << 20, 1 << 22]
    assert all(t > 0 for t in res["seconds"]) and res["seconds"][-1] > res["seconds"][0]
    assert 1e-8 < res["alpha_s"] < 1e-3 and 0.05 < res["beta_gbs"] < 1000
    assert res["source"] == "measured on one node (shared memory)"


def test_fit_recovers_alpha_and_beta():
    sizes = [8, 1000, 10 ** 6, 4 * 10 ** 6]
    alpha, beta = pp.fit(sizes, [2e-6 + n / 5e9 for n in sizes])
    assert alpha == pytest.approx(2e-6, rel=1e-2) and beta == pytest.approx(5e9, rel=1e-6)


# --- bad input
def test_bad_inputs_are_named(tmp_path):
    raises_naming(ValueError, "sizes, seconds", pp.fit, [1, 2], [1e-6, 2e-6])
    raises_naming(ValueError, "seconds[1]", pp.fit, [1, 2, 3], [1e-6, 0.0, 2e-6])  # the index of the bad one
    raises_naming(ValueError, "sizes[0]", pp.pingpong, [0, 8])
    raises_naming(ValueError, "repeat", pp.pingpong, [8, 16, 32], repeat=0)
    assert pp.main([str(tmp_path), "--repeat", "3"]) == 2          # no sizes: says so, never aborts
    assert pp.main([str(tmp_path), "8", "--bogus"]) == 2


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import BAD_NUMBER, BAD_SIZES, NOT_SIZE, clear_or_correct  # noqa: E402


def _no_launch(*a, **k):
    raise AssertionError("mpiexec was launched with bad input (validate before launching)")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(["sizes", "repeat", "timeout"]), data=st.data())
def test_pingpong_bad_input_is_refused_before_launching(case, data, monkeypatch):
    monkeypatch.setattr(pp, "launch", _no_launch)
    bad = {"sizes": BAD_SIZES, "repeat": st.one_of(NOT_SIZE, st.just(10**9)), "timeout": BAD_NUMBER}[case]
    clear_or_correct(pp.pingpong, case, {case: data.draw(bad)})


@settings(max_examples=30, deadline=None)
@given(sizes=BAD_SIZES)
def test_fit_bad_sizes_are_a_clear_error(sizes):
    clear_or_correct(pp.fit, "sizes", {"sizes": sizes, "seconds": [1e-6, 2e-6, 3e-6]})
