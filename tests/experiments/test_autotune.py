"""course_lib.experiments.autotune: measures once, caches per shape and machine, survives bad cache files."""
import json
import re
import warnings

import numpy as np
import pytest

from course_lib.experiments import autotune
from course_lib.experiments import lstm as lstm_experiments
from course_lib.models import lstm
from helpers import raises_naming


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path / "c"))
    autotune._MEMO.clear()
    yield tmp_path / "c" / "lstm_autotune.json"
    autotune._MEMO.clear()


def test_cache_dir_honours_env(tmp_path, monkeypatch, cache):
    assert autotune.cache_path() == cache
    monkeypatch.delenv("COURSE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert autotune.cache_dir() == tmp_path / "xdg" / "parallel-rnns-course"


def test_tune_measures_then_reads_cache(cache, monkeypatch):
    d = autotune.tune(2, 8, 4, 5, "float32", threads=1, repeat=1, probe_steps=2)
    assert d.measured_now and d.best in lstm.METHODS
    assert set(d.table_ms) == set(lstm.METHODS) and all(ms > 0 for ms in d.table_ms.values())
    assert d.best == min(d.table_ms, key=d.table_ms.get)
    assert "picked" in d.table() and d.key == "B=2,H=8,nx=4,T=5,float32,threads=1"
    data = json.loads(cache.read_text())
    assert data["format"] == autotune.FORMAT
    assert data["machines"][autotune.machine_id()][d.key]["best"] == d.best

    calls = []
    monkeypatch.setattr(lstm_experiments, "method_times", lambda *a, **k: calls.append(1))
    again = autotune.tune(2, 8, 4, 5, "float32", threads=1)
    assert not again.measured_now and again.best == d.best and again.table_ms == d.table_ms and not calls
    autotune._MEMO.clear()  # a new process: reads the file, still no measuring
    again = autotune.tune(2, 8, 4, 5, "float32", threads=1)
    assert not again.measured_now and again.best == d.best and not calls


def test_force_remeasures_and_keys_differ(monkeypatch):
    fake = {"B": 2, "nh": 8, "nx": 4, "T": 2, "ms_per_step": {"naive": 3.0, "fused": 1.0}, "best": "fused"}
    calls = []
    monkeypatch.setattr(lstm_experiments, "method_times", lambda *a, **k: calls.append(k) or fake)
    assert autotune.tune(2, 8, 4, 5, threads=1).best == "fused"
    autotune.tune(2, 8, 4, 5, threads=1)
    assert len(calls) == 1
    autotune.tune(2, 8, 4, 5, threads=1, force=True)
    assert len(calls) == 2
    autotune.tune(2, 8, 4, 5, threads=2)          # another thread count is another key
    autotune.tune(2, 8, 4, 5, "float64", threads=1)
    assert len(calls) == 4
    assert autotune.best_method(2, 8, 4, 5, threads=1) == "fused" and len(calls) == 4


@pytest.mark.parametrize("content", ["{not json", json.dumps([1, 2]), json.dumps({"format": "other/9", "machines": {}}),
                                     "\x00\x01"])
def test_corrupt_or_foreign_cache_is_ignored_with_warning(cache, content, monkeypatch):
    cache.parent.mkdir(parents=True)
    cache.write_text(content)
    fake = {"ms_per_step": {"naive": 2.0, "transposed": 1.0}, "best": "transposed"}
    monkeypatch.setattr(lstm_experiments, "method_times", lambda *a, **k: fake)
    with pytest.warns(UserWarning, match="autotune: ignoring"):
        d = autotune.tune(3, 8, 4, 5, threads=1)
    assert d.best == "transposed" and d.measured_now
    data = json.loads(cache.read_text())   # replaced by a valid file
    assert data["format"] == autotune.FORMAT


def test_other_machine_and_malformed_entries(cache, monkeypatch):
    key = autotune.shape_key(3, 8, 4, 5, threads=1)
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({"format": autotune.FORMAT, "machines": {
        "someone-else": {key: {"best": "naive", "table_ms": {"naive": 0.1}}},
        autotune.machine_id(): {"bad": {"best": "cudnn", "table_ms": {}}}}}))
    with pytest.warns(UserWarning, match="malformed entry"):
        assert autotune.load_cache() == {}
    fake = {"ms_per_step": {"naive": 2.0, "fused": 1.0}, "best": "fused"}
    monkeypatch.setattr(lstm_experiments, "method_times", lambda *a, **k: fake)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert autotune.tune(3, 8, 4, 5, threads=1).best == "fused"   # not the other machine's 'naive'
    data = json.loads(cache.read_text())
    assert data["machines"]["someone-else"][key]["best"] == "naive"   # kept, not ours to delete


def test_tuned_forward_uses_the_decision(monkeypatch, cache):
    fake = {"ms_per_step": {"naive": 2.0, "transposed": 1.0}, "best": "transposed"}
    monkeypatch.setattr(lstm_experiments, "method_times", lambda *a, **k: fake)
    p = lstm.init_params(4, 8)
    X = np.random.default_rng(0).standard_normal((5, 3, 4)).astype(np.float32)
    H, _, c = autotune.lstm_forward_tuned(p, X, return_cache=True)
    assert c.method == "transposed" and cache.exists()
    np.testing.assert_array_equal(H, lstm.lstm_forward(p, X, method="transposed")[0])
    assert autotune.best_method(3, 8, 4, 5, "float32") == "transposed"
    with pytest.raises(ValueError, match="X: expected a 3-D array"):
        autotune.lstm_forward_tuned(p, X[0])


@pytest.mark.parametrize("entry, why", [
    ({"best": "fused", "table_ms": {"fused": 1.0}, "probe": [1, 2]}, "probe: expected a dict"),
    ({"best": "fused", "table_ms": {"naive": 1.0}}, "best: 'fused' is not one of the measured"),
    ({"best": "naive", "table_ms": {"naive": True}}, "expected a positive number"),
    ({"best": "naive", "table_ms": {"naive": -1.0}}, "expected a positive number"),
    ({"best": "naive", "table_ms": {}}, "non-empty dict"),
    ("naive", "expected a dict"),
])
def test_load_cache_rejects_malformed_entries(cache, entry, why):
    """issue 18: a non-dict probe, a best missing from its times, boolean or non-positive times."""
    cache.parent.mkdir(parents=True)
    good = {"best": "fused", "table_ms": {"fused": 1.0, "naive": 2.0}, "probe": {"steps": 2}}
    cache.write_text(json.dumps({"format": autotune.FORMAT, "machines": {
        autotune.machine_id(): {"bad": entry, "good": good}}}))
    with pytest.warns(UserWarning, match="malformed entry 'bad'.*" + re.escape(why)):
        assert autotune.load_cache() == {"good": good}


def test_clear_cache(cache):
    autotune.tune(2, 8, 4, 2, threads=1, repeat=1, probe_steps=1)
    assert cache.exists()
    autotune.clear_cache()
    assert not cache.exists() and not autotune._MEMO


def test_bad_input():
    with pytest.raises(ValueError, match="batch: expected an integer >= 1"):
        autotune.tune(0, 8, 4)
    with pytest.raises(TypeError, match="dtype: expected float32 or float64"):
        autotune.shape_key(2, 8, 4, 5, "int8")
    with pytest.raises(ValueError, match="methods: expected one of"):
        autotune.tune(2, 8, 4, methods=("naive", "cudnn"))
    with pytest.raises(ValueError, match="methods: expected at least one"):
        autotune.tune(2, 8, 4, methods=())
    with pytest.raises(ValueError, match="threads: expected an integer >= 1"):
        autotune.best_method(2, 8, 4, 5, threads=0)


# --------------------------------------------------------------------------- bad input
# numpy integers write valid JSON, bad arguments named, malformed cache entries ignored
@pytest.mark.timeout(60)
def test_numpy_integers_as_repeat_write_valid_json(tmp_path):
    path = tmp_path / "cache.json"
    d = autotune.tune(np.int64(2), np.int32(4), np.int64(3), np.int64(2), "float32", threads=1,
                      methods=("naive",) if "naive" in autotune.lstm.METHODS else autotune.lstm.METHODS[:1],
                      force=True, probe_steps=np.int64(1), repeat=np.int64(1), path=path)
    data = json.loads(path.read_text())
    entry = next(iter(next(iter(data["machines"].values())).values()))
    assert entry["probe"]["repeat"] == 1 and isinstance(entry["probe"]["repeat"], int)
    assert d.best in d.table_ms
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert autotune.load_cache(path)           # reads back cleanly


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kw, name", [({"repeat": 0}, "repeat"), ({"repeat": True}, "repeat"),
                                      ({"probe_steps": 1.5}, "probe_steps"), ({"methods": "lstm"}, "methods"),
                                      ({"methods": ["nope"]}, "methods"), ({"force": 1}, "force"),
                                      ({"path": 3}, "path"), ({"threads": 0}, "threads"), ({"dtype": "int8"}, "dtype")])
def test_tune_rejects_bad_arguments(kw, name, tmp_path):
    call = dict(force=True, path=tmp_path / "c.json") | kw
    raises_naming((TypeError, ValueError), name, autotune.tune, 2, 4, 3, 2, **call)


@pytest.mark.timeout(60)
def test_shape_key_and_cache_paths():
    raises_naming((TypeError, ValueError), "batch", autotune.shape_key, -1, 4, 3, 2)
    raises_naming(TypeError, "nh", autotune.shape_key, 1, "4", 3, 2)
    assert autotune.shape_key(np.int64(1), 2, 3, 4, threads=np.int64(2)) == "B=1,H=2,nx=3,T=4,float32,threads=2"
    raises_naming(TypeError, "path", autotune.load_cache, 3.0)
    raises_naming(TypeError, "path", autotune.clear_cache, ["x"])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("entry", [
    {"best": "x", "table_ms": {"x": 1.0}}, {"best": None, "table_ms": {}},
    {"best": "M", "table_ms": {"M": True}}, {"best": "M", "table_ms": {"M": 1.0}, "probe": [1]},
    {"best": "M2", "table_ms": {"M": 1.0}},
])
def test_malformed_cache_entries_are_ignored(entry, tmp_path):
    m = autotune.lstm.METHODS[0]
    entry = json.loads(json.dumps(entry).replace('"M"', json.dumps(m)))
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"format": autotune.FORMAT, "machines": {autotune.machine_id(): {"k": entry}}}))
    with pytest.warns(UserWarning, match="malformed"):
        assert autotune.load_cache(path) == {}


# --------------------------------------------------------------------------- bad input (issue 29)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from bad_input import (BAD_NUMBER, BAD_REPEAT, BAD_SEED, BAD_SIZES, HUGE, NOT_SIZE, NOT_SIZE_NN,  # noqa: E402,F401
                       bad_arrays, case_test, clear_or_correct, fails_fast, finishes_fast)

_BAD_CASES = [
    (autotune.tune, "batch", HUGE, {"nh": 4, "nx": 4, "T": 2, "force": True}),
    (autotune.tune, "repeat", BAD_REPEAT, {"batch": 2, "nh": 4, "nx": 4, "T": 2, "force": True}),
    (autotune.tune, "probe_steps", st.one_of(NOT_SIZE, HUGE), {"batch": 2, "nh": 4, "nx": 4, "T": 2, "force": True}),
    (autotune.Decision, "best", st.sampled_from(["bogus", None, 3]), {"key": "k", "table_ms": {"naive": 1.0}}),
    (autotune.Decision, "table_ms", st.sampled_from([None, {}, {"naive": -1.0}, {"naive": "x"}]),
     {"key": "k", "best": "naive"}),
    (autotune.Decision, "measured_now", st.sampled_from(["yes", 2, None]),
     {"key": "k", "best": "naive", "table_ms": {"naive": 1.0}}),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_BAD_CASES), data=st.data())
def test_bad_input_is_a_clear_error_before_any_measurement(case, data):
    """Every public function of the module, one bad argument at a time: a clear error naming it, at once
    (all of them are checked before anything is allocated, launched or timed)."""
    case_test(case, data)


# --------------------------------------------------------------------------- issue 30: repeat until decided, re-tune
def _jitter(clock, name, extra):
    """Each call of ``name`` costs its set cost plus the next of ``extra`` (cycled): a noisy method."""
    import itertools
    seq, timed = itertools.cycle(extra), clock._timed

    def _timed(n, fn):
        call = timed(n, fn)
        if n != name:
            return call

        def noisy():
            out = call()
            clock.advance(next(seq))
            return out
        return noisy
    clock._timed = _timed


FOUR = ("naive", "fused", "fused_pre", "workspace")


@pytest.mark.timeout(120)
def test_tune_decides_in_one_try_when_the_pairs_agree(fake_clock, tmp_path):
    fake_clock.cost(naive=8e-3, fused=4e-3, fused_pre=3e-3, workspace=2e-3)
    d = autotune.tune(2, 8, 4, 3, threads=1, methods=FOUR, force=True, repeat=3, path=tmp_path / "c.json")
    assert d.best == "workspace" and d.tied == [] and d.measured_now
    assert d.probe["rounds"] == 3                  # clean pairs: the first rounds decide, nothing repeated
    np.testing.assert_allclose(d.table_ms["naive"] / d.table_ms["workspace"], 4.0)


@pytest.mark.timeout(120)
def test_tune_repeats_the_undecided_and_reports_a_tie(fake_clock, tmp_path, monkeypatch):
    """fused_pre and workspace differ by less than their noise: each try drops the methods beaten beyond
    doubt (naive, fused) and times the rest again; after `tries` they are reported as tied."""
    races = []
    real = lstm_experiments.method_times
    monkeypatch.setattr(lstm_experiments, "method_times", lambda *a, **k: races.append(k["methods"]) or real(*a, **k))
    fake_clock.cost(naive=8e-3, fused=6e-3, fused_pre=2e-3, workspace=0.0)
    _jitter(fake_clock, "workspace", [1.5e-3, 2.1e-3, 2.5e-3, 1.9e-3])   # 1.5 to 2.5 ms against fused_pre's 2.0
    d = autotune.tune(2, 8, 4, 3, threads=1, methods=FOUR, force=True, repeat=4, tries=3, path=tmp_path / "c.json")
    assert set(races[0]) == set(FOUR) and len(races) == 3
    assert all(set(r) == {"fused_pre", "workspace"} for r in races[1:])
    assert {d.best, *d.tied} == {"fused_pre", "workspace"} and len(d.tied) == 1
    assert json.loads((tmp_path / "c.json").read_text())["machines"][autotune.machine_id()][d.key]["tied"] == d.tied


@pytest.mark.timeout(120)
def test_recheck_retunes_only_when_beaten_beyond_the_noise(fake_clock, tmp_path):
    path = tmp_path / "c.json"
    fake_clock.cost(naive=2e-3, fused=4e-3, fused_pre=6e-3, workspace=8e-3)
    first = autotune.tune(2, 8, 4, 3, threads=1, methods=FOUR, path=path)
    assert first.best == "naive"
    # later, workspace is faster than the cached choice only within the noise: the choice stays
    fake_clock.cost(naive=2e-3, workspace=0.0)
    _jitter(fake_clock, "workspace", [1.5e-3, 2.1e-3, 2.5e-3, 1.9e-3])
    same = autotune.recheck(2, 8, 4, 3, threads=1, methods=FOUR, path=path)
    assert same.best == "naive" and not same.retuned and not same.measured_now
    # then it is 2x faster in every pair: re-tuned, saved, and the next call reads the new choice
    fake_clock._timed = type(fake_clock)._timed.__get__(fake_clock)
    fake_clock.cost(naive=4e-3, workspace=2e-3)
    new = autotune.recheck(2, 8, 4, 3, threads=1, methods=FOUR, path=path)
    assert new.retuned and new.measured_now and new.best == "workspace"
    assert autotune.tune(2, 8, 4, 3, threads=1, path=path).best == "workspace"
    assert autotune.load_cache(path)[new.key]["best"] == "workspace"


def test_recheck_and_tries_bad_input(tmp_path):
    raises_naming(ValueError, "tries", autotune.tune, 2, 4, 3, 2, force=True, tries=0, path=tmp_path / "c.json")
    raises_naming(ValueError, "methods", autotune.recheck, 2, 4, 3, 2, methods=("nope",), path=tmp_path / "c.json")


def test_training_is_a_decision_of_its_own(cache, monkeypatch):
    """The fastest forward need not be the fastest to train: its own key, timed with the backward pass."""
    seen = []

    def fake(*a, **k):
        seen.append(k.get("backward"))
        return {"ms_per_step": {"workspace": 1.0, "persistent": 2.0} if k.get("backward") else
                {"workspace": 2.0, "persistent": 1.0}, "best": "workspace" if k.get("backward") else "persistent"}
    monkeypatch.setattr(lstm_experiments, "method_times", fake)
    fwd = autotune.tune(2, 8, 4, 5, "float32", threads=1, methods=("workspace", "persistent"))
    train = autotune.tune(2, 8, 4, 5, "float32", threads=1, methods=("workspace", "persistent"), training=True)
    assert seen == [False, True] and fwd.best == "persistent" and train.best == "workspace"
    assert train.key == fwd.key + ",training"
    assert autotune.best_method(2, 8, 4, 5, "float32", threads=1, training=True) == "workspace" and len(seen) == 2
    raises_naming(TypeError, "training", autotune.shape_key, 2, 8, 4, 5, training="yes")


def test_providers_are_raced_like_methods(cache, monkeypatch):
    """A choice "method@provider" runs the method with that GEMM provider; the table names the winner of each
    shape, and lstm_forward_tuned runs the winning method on the winning provider."""
    from course_lib.algorithms import gemm

    provs = gemm.providers()
    choices = lstm_experiments.choices(("fused_pre", "naive"), provs)
    assert choices[:2] == ("fused_pre", "naive") and all(c.split("@")[0] == "fused_pre" for c in choices[2:])
    assert len(choices) == 2 + (len(provs) - 1)
    d = autotune.tune(2, 8, 4, 2, methods=("fused_pre", "naive"), providers=None, repeat=1, probe_steps=1)
    assert set(d.table_ms) == set(choices) and d.best in choices
    assert (d.method, d.provider) == lstm_experiments.split_choice(d.best)
    key = autotune.shape_key(2, 8, 4, 2, providers=provs)
    assert d.key == key and (len(provs) == 1) == ("providers=" not in key)
    assert autotune.load_cache()[key]["best"] == d.best
    with pytest.raises(ValueError, match="providers: .*cublas"):
        autotune.tune(2, 8, 4, providers=("numpy", "cublas"))
    with pytest.raises(ValueError, match="methods: 'naive' computes no product"):
        lstm_experiments.split_choice("naive@numpy")


def test_a_won_provider_is_what_lstm_forward_tuned_runs(cache, monkeypatch):
    from course_lib.algorithms import gemm
    from course_lib.models import lstm

    winner = "fused_pre@" + gemm.providers()[-1] if len(gemm.providers()) > 1 else "fused_pre"
    fake = {"ms_per_step": {winner: 1.0, "naive": 5.0}, "best": winner, "comparison": None}
    monkeypatch.setattr(lstm_experiments, "method_times", lambda *a, **k: fake)
    seen = []
    real = lstm.lstm_forward
    monkeypatch.setattr(lstm, "lstm_forward", lambda *a, **k: seen.append(k) or real(*a, **k))
    p = lstm.init_params(4, 8, dtype=np.float64)
    X = np.random.default_rng(0).standard_normal((2, 3, 4))
    H, _ = autotune.lstm_forward_tuned(p, X, providers=None)
    assert (seen[-1]["method"], seen[-1]["provider"]) == lstm_experiments.split_choice(winner)
    np.testing.assert_allclose(H, real(p, X)[0], atol=1e-12)
