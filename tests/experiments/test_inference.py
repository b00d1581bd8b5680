"""Tests for course_lib.experiments.inference (chapter 07's measurements) and seed 004's goals:
the measuring helpers return consistent, agreeing data with a noise verdict; bad inputs name the argument."""
import re

import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.core import backend
from course_lib.core.timing import Noise
from course_lib.experiments import inference as ex
from course_lib.models import charlm, softmax_rnn
from course_lib.teaching.claims import seed004
from helpers import SEEDS_DIR, require_seed_texts

MPI_OK, _ = backend.mpi_available()


def test_problem_is_seeded():
    p, X = ex.problem(3, 2, T=4, nh=5, nx=3, vocab=4)
    q, Y = ex.problem(3, 2, T=4, nh=5, nx=3, vocab=4)
    assert X.shape == (4, 3, 3) and X.dtype == np.float32 and p.n_layers == 2
    np.testing.assert_array_equal(X, Y)
    np.testing.assert_array_equal(p.layers[1].W, q.layers[1].W)


def test_measure_methods_returns_consistent_data():
    methods = ("sequential", "batched", "threads", "wavefront") + (("mpi",) if MPI_OK else ())
    d = ex.measure_methods(batch=4, layers=2, methods=methods, T=4, nh=8, nx=4, vocab=5, repeat=2, threads=2)
    assert set(d["seconds"]) == set(methods) == set(d["speedup"]) == set(d["seq_per_s"])
    assert d["speedup"]["sequential"] == 1.0
    assert all(t > 0 for t in d["seconds"].values())
    assert d["seq_per_s"]["batched"] == pytest.approx(4 / d["seconds"]["batched"])
    assert max(d["max_diff"].values()) < 1e-5
    assert isinstance(d["noise"], Noise)


def test_measure_methods_bad_inputs():
    with pytest.raises(ValueError, match="methods"):
        ex.measure_methods(methods=("nope",))
    with pytest.raises(ValueError, match="methods"):
        ex.measure_methods(methods="sequential")
    with pytest.raises(ValueError, match="batch"):
        ex.measure_methods(batch=10**6)
    with pytest.raises(ValueError, match="sizes"):
        ex.batch_sweep([])


def test_sweeps_have_one_entry_per_size_and_a_model():
    by_B = ex.batch_sweep([1, 3], methods=("sequential", "batched"), T=3, nh=4, nx=3, vocab=3, repeat=1)
    assert [d["B"] for d in by_B] == [1, 3]
    ls = ex.layer_sweep([1, 3], batch=2, T=4, nh=4, nx=3, vocab=3, threads=2, repeat=1)
    assert ls["layers"] == [1, 3] and len(ls["measured"]) == 2
    assert ls["model"][0] == 1.0 and ls["model"][1] == pytest.approx(12 / 8)  # work_span(4, 3, 2)
    with pytest.raises(ValueError, match="depths"):
        ex.layer_sweep([0])


def test_wavefront_costs():
    c = ex.wavefront_costs(batch=4, nh=8, threads=2, repeat=3)
    assert c["cell"] > 0 and c["handoff"] > 0 and c["threads"] == 2 and isinstance(c["noise"], Noise)


def test_worker_sweep():
    w = ex.worker_sweep([1, 2], batch=6, layers=1, T=3, nh=4, nx=3, vocab=3, repeat=1, mpi=MPI_OK)
    assert w["P"] == [1, 2] and len(w["threads"]) == 2 and w["t_batched"] > 0
    if MPI_OK:
        assert len(w["mpi"]) == 2 and set(w["mpi_runs"]) == {1, 2}
        assert w["mpi_runs"][2].counts == [3, 3]
    with pytest.raises(ValueError, match="Ps"):
        ex.worker_sweep([7], batch=6)


def test_cuda_run_measures_only_on_a_gpu():
    r = ex.cuda_run(batch=2, layers=1, T=2, nh=4, nx=3, vocab=3, repeat=1)
    assert r["mode"] == backend.cuda_mode()
    if backend.gpu_available():
        assert r["measured"] and r["max_diff"] < 1e-4
    else:
        assert not r["measured"] and r["comparison"] is None  # nothing invented without a GPU


def test_perplexity_is_the_same_through_every_method():
    p = softmax_rnn.init_params(9, 6, 9, layers=2, seed=0)
    ids = np.random.default_rng(0).integers(0, 9, 300)
    methods = ("sequential", "batched", "threads", "wavefront", "cuda_batched") + (("mpi",) if MPI_OK else ())
    ppl = ex.perplexity_by_method(p, ids, methods, T=8, max_windows=4, threads=2, ranks=2)
    assert set(ppl) == set(methods)
    ref = charlm.perplexity(p, ids, T=8, max_windows=4)
    for m, v in ppl.items():
        assert v == pytest.approx(ref, rel=1e-5), m
    with pytest.raises(TypeError, match="workers"):
        ex.perplexity_by_method(p, ids, ("threads",), workers=2)
    with pytest.raises(ValueError, match="methods"):
        ex.perplexity_by_method(p, ids, ())


def test_seed004_goals_are_verbatim_and_hold_no_invented_number():
    require_seed_texts(SEEDS_DIR)
    text = re.sub(r"\s+", " ", next(SEEDS_DIR.glob("004_*.txt")).read_text())
    for gid, g in seed004.GOALS.items():
        assert re.sub(r"\s+", " ", g["quote"]) in text, gid
    assert seed004.ENTRIES == {}  # the proposal reports no measurement


def test_goal_verdict_outcomes():
    v = seed004.goal_verdict("004.goal.openmp", holds=True, ours="1.5x")
    assert v.outcome == "agrees" and "Holds here" in v and "Achieve speedup" in v
    v = seed004.goal_verdict("004.goal.openmp", holds=np.bool_(False), ours="0.8x",
                             reasons=[(False, "not this"), (True, "2 cores")])
    assert v.outcome == "opposite" and v.reason == "2 cores"
    v = seed004.goal_verdict("004.goal.openmp", holds=True, ours="1.5x", noise=Noise().add(True, "busy"))
    assert v.outcome == "unreliable" and "No verdict: busy" in v
    with pytest.raises(TypeError, match="holds"):
        seed004.goal_verdict("004.goal.openmp", holds=1.5, ours="")
    with pytest.raises(KeyError, match="gid"):
        seed004.goal("004.nope")


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (ex.problem, "T", st.one_of(NOT_SIZE, HUGE), {"batch": 2, "layers": 1}),
    (ex.problem, "seed", BAD_SEED, {"batch": 2, "layers": 1}),
    (ex.problem, "nh", st.one_of(NOT_SIZE, HUGE), {"batch": 2, "layers": 1}),
    (ex.measure_methods, "repeat", BAD_REPEAT, {"batch": 2, "layers": 1, "T": 2}),
    (ex.measure_methods, "ranks", st.one_of(NOT_SIZE, HUGE), {"batch": 2, "layers": 1, "T": 2}),
    (ex.measure_methods, "threads", st.one_of(NOT_SIZE_NN, HUGE), {"batch": 2, "layers": 1, "T": 2}),
    (ex.batch_sweep, "sizes", BAD_SIZES, {}),
    (ex.layer_sweep, "depths", BAD_SIZES, {}),
    (ex.wavefront_costs, "repeat", BAD_REPEAT, {"batch": 2, "nh": 4}),
    (ex.worker_sweep, "Ps", BAD_SIZES, {"batch": 4}),
    (ex.worker_sweep, "mpi", st.sampled_from(["yes", 2, None]), {"Ps": [1], "batch": 4}),
    (ex.cuda_run, "repeat", BAD_REPEAT, {}),
    (ex.perplexity_by_method, "methods", st.sampled_from(["batched", (), ("bogus",), 3]),
     {"params": softmax_rnn.init_params(3, 4, 3, seed=0), "ids": np.zeros(20, np.int64)}),
]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)
