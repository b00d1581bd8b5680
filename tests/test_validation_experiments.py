"""Issue 18, experiments layer (autotune): numpy integers as repeat/sizes never break JSON writing;
bad arguments name themselves; malformed cache entries are ignored."""
import json
import warnings

import numpy as np
import pytest

from course_lib.experiments import autotune
from helpers import raises_naming

pytestmark = pytest.mark.timeout(60)


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


@pytest.mark.parametrize("kw, name", [({"repeat": 0}, "repeat"), ({"repeat": True}, "repeat"),
                                      ({"probe_steps": 1.5}, "probe_steps"), ({"methods": "lstm"}, "methods"),
                                      ({"methods": ["nope"]}, "methods"), ({"force": 1}, "force"),
                                      ({"path": 3}, "path"), ({"threads": 0}, "threads"), ({"dtype": "int8"}, "dtype")])
def test_tune_rejects_bad_arguments(kw, name, tmp_path):
    call = dict(force=True, path=tmp_path / "c.json") | kw
    raises_naming((TypeError, ValueError), name, autotune.tune, 2, 4, 3, 2, **call)


def test_shape_key_and_cache_paths():
    raises_naming((TypeError, ValueError), "batch", autotune.shape_key, -1, 4, 3, 2)
    raises_naming(TypeError, "nh", autotune.shape_key, 1, "4", 3, 2)
    assert autotune.shape_key(np.int64(1), 2, 3, 4, threads=np.int64(2)) == "B=1,H=2,nx=3,T=4,float32,threads=2"
    raises_naming(TypeError, "path", autotune.load_cache, 3.0)
    raises_naming(TypeError, "path", autotune.clear_cache, ["x"])


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
