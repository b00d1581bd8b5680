"""Verdict lines: agreement in direction and size, reasons chosen by the caller's facts, noise respected."""
import pytest

from course_lib.core.timing import Noise
from course_lib.teaching.claims import Claim
from course_lib.teaching.verdict import judge, verdict

SEED = Claim("t.speedup", 39.0, "x", "000", "§1", "61-core Xeon Phi", "approx. 39x speedup")


def test_judge_directions_and_sizes():
    assert judge(39.0, 30.0) == "agrees"
    assert judge(39.0, 1.8) == "smaller"
    assert judge(3.0, 0.5) == "opposite"          # seed: faster; here: slower
    assert judge(1.5, 40.0) == "larger"
    assert judge(10.0, 6.0, pivot=None) == "agrees"
    assert judge(10.0, 2.0, pivot=None) == "smaller"
    assert judge(0.5, 0.45) == "agrees"           # both slowdowns of similar size


def test_agreeing_verdict_names_both_numbers():
    v = verdict(SEED, 30.0, here="2 cores")
    assert v.agrees and "39×" in v and "30×" in v and "61-core Xeon Phi" in v and "2 cores" in v


def test_the_first_true_reason_explains_a_disagreement():
    v = verdict(SEED, 1.8, reasons=[(False, "not this"), (True, "2 cores here, not 61"), (True, "later")])
    assert v.outcome == "smaller" and v.reason == "2 cores here, not 61" and "not 61" in v and "later" not in v


def test_no_reason_is_said_plainly():
    v = verdict(SEED, 0.5, reasons=[(False, "x")])
    assert v.outcome == "opposite" and "no fact measured here explains" in v


def test_unreliable_measurement_draws_no_conclusion():
    noise = Noise().add(True, "other processes kept 1.0 core(s) busy meanwhile")
    v = verdict(SEED, 1.8, reasons=[(True, "2 cores")], noise=noise)
    assert v.outcome == "unreliable" and "No verdict" in v and "busy" in v and "2 cores" not in v.split("No verdict")[1]


def test_bad_arguments():
    with pytest.raises(TypeError, match="ours"):
        verdict(SEED, "fast")
    with pytest.raises(ValueError, match="ours"):
        verdict(SEED, float("nan"))
    with pytest.raises(TypeError, match="noise"):
        verdict(SEED, 1.0, noise="busy")
    with pytest.raises(TypeError, match="reasons"):
        verdict(SEED, 1.0, reasons=["2 cores"])
    with pytest.raises(ValueError, match="within"):
        judge(1.0, 2.0, within=0.5)
