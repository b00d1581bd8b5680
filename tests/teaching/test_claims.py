"""The seed-claims registry: every quote is verbatim in its seed text and contains its value."""
import re

import pytest

from course_lib.teaching import claims
from course_lib.teaching.claims import CLAIMS, Claim, numbers_in
from helpers import SEEDS_DIR, require_seed_texts, seed_texts_decision


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _seed_text(seed: str) -> str:
    require_seed_texts(SEEDS_DIR)
    files = sorted(SEEDS_DIR.glob(f"{seed}_*.txt"))
    assert files, f"no seed text for {seed} in {SEEDS_DIR}"
    return _norm(files[0].read_text())


def test_registry_is_not_empty_and_well_formed():
    assert len(CLAIMS) > 0
    for cid, c in CLAIMS.items():
        assert isinstance(c, Claim) and c.id == cid
        assert c.seed in claims.SEEDS
        assert c.quote.strip() and c.where.strip() and c.conditions.strip()


@pytest.mark.parametrize("cid", sorted(c for c in CLAIMS if CLAIMS[c].seed != "beyond"))
def test_quote_is_verbatim_in_the_seed_and_holds_the_value(cid):
    c = CLAIMS[cid]
    text = _seed_text(c.seed)
    assert _norm(c.quote) in text, f"{cid}: quote not found verbatim in seed {c.seed}: {c.quote!r}"
    vals = numbers_in(c.quote)
    assert any(abs(v - c.value) <= 1e-9 * max(1.0, abs(c.value)) for v in vals), (
        f"{cid}: value {c.value:g} is not written in its quote (numbers there: {vals})")


@pytest.mark.parametrize("ci, present, expected", [
    ("true", True, "run"), ("", True, "run"),
    ("true", False, "fail"), ("1", False, "fail"),
    ("", False, "skip"), ("false", False, "skip")])
def test_missing_seed_texts_fail_under_ci_and_skip_elsewhere(tmp_path, monkeypatch, ci, present, expected):
    seeds = tmp_path / "shared" / "seeds"
    if present:
        seeds.mkdir(parents=True)
        (seeds / "000_abc.txt").write_text("text")
    monkeypatch.setenv("CI", ci)
    what, msg = seed_texts_decision(seeds)
    assert what == expected
    if expected != "run":
        assert str(seeds) in msg
    if expected == "fail":  # and the test itself fails (not skips) with that message
        with pytest.raises(pytest.fail.Exception, match="seed texts are missing"):
            require_seed_texts(seeds)


def test_an_empty_seeds_folder_counts_as_missing(tmp_path):
    (tmp_path / "seeds").mkdir()
    assert seed_texts_decision(tmp_path / "seeds", {"CI": "true"})[0] == "fail"
    assert seed_texts_decision(tmp_path / "seeds", {})[0] == "skip"


@pytest.mark.parametrize("cid", sorted(c for c in CLAIMS if CLAIMS[c].seed == "beyond"))
def test_claims_beyond_the_seeds_cite_their_source(cid):
    assert CLAIMS[cid].source.strip()


def test_numbers_in():
    assert numbers_in("approx. 39x speedup on a 61 core") == [39.0, 61.0]
    assert numbers_in("1,000 and 6.6 and 43%") == [1000.0, 6.6, 43.0]


def test_lookup_errors_name_the_problem():
    with pytest.raises(KeyError, match="no claim 'nope'"):
        claims.claim("nope")
    with pytest.raises(TypeError, match="claim id"):
        claims.claim(39)


def test_bad_entries_are_rejected():
    good = dict(value=1.0, unit="x", seed="000", where="§1", conditions="c", quote="q 1")
    assert claims._check_entry("a", good, "m").value == 1.0
    with pytest.raises(ValueError, match="missing field"):
        claims._check_entry("a", {k: v for k, v in good.items() if k != "quote"}, "m")
    with pytest.raises(ValueError, match="seed must be one of"):
        claims._check_entry("a", dict(good, seed="007"), "m")
    with pytest.raises(ValueError, match="needs a 'source'"):
        claims._check_entry("a", dict(good, seed="beyond"), "m")
    with pytest.raises(TypeError, match="value must be a number"):
        claims._check_entry("a", dict(good, value="39"), "m")


def test_a_wrong_id_says_the_id_and_the_nearest_ids():
    """The lookup used to print a quoted KeyError with, at best, the ids sharing the first dotted part."""
    some = next(iter(CLAIMS))
    typo = some[:-1] + ("x" if some[-1] != "x" else "y")
    with pytest.raises(KeyError) as info:
        claims.claim(typo)
    msg = str(info.value)
    assert msg.startswith("cid: no claim") and repr(typo) in msg and some in msg, msg
    assert claims.nearest_ids(typo)[0] == some
    msg = str(pytest.raises(KeyError, claims.claim, "nonsense").value)
    assert "'nonsense'" in msg and "claims.CLAIMS" in msg  # nothing near: where to look
    with pytest.raises(TypeError, match="cid: expected a claim id"):
        claims.claim(None)
