"""The versions that ran: backend.versions() (one place), every recording's machine facts, and replay's table."""
import json
import platform
import re

import numba
import numpy

from course_lib.core import backend
from course_lib.teaching import record, replay


def test_versions_are_the_running_ones():
    v = backend.versions()
    assert v["Python"] == platform.python_version()
    assert v["numpy"] == numpy.__version__ and v["numba"] == numba.__version__
    assert {"llvmlite", "halide", "matplotlib", "ipywidgets", "threadpoolctl", "BLAS"} <= set(v)
    assert "(" not in v["BLAS"], "the BLAS entry is name and version, not the machine's kernel family"


def test_the_report_prints_them():
    text = str(backend.report())
    assert re.search(rf"^numba +: {re.escape(numba.__version__)}$", text, re.M), text
    assert "llvmlite" in text and "halide" in text


def test_every_recording_holds_the_versions():
    assert record.machine_facts()["versions"] == backend.versions()


def test_replay_shows_the_versions_beside_the_machine(tmp_path):
    for run, machine in (("new-run", {"cores": 2, "versions": {"Python": "3.11.7", "numpy": "2.4.6"}}),
                         ("old-run", {"cores": 2})):
        (tmp_path / run).mkdir()
        (tmp_path / run / "99_x.json").write_text(json.dumps({"notebook": "notebooks/99_x", "machine": machine,
                                                               "records": []}))
    text = replay.machines([tmp_path / "new-run", tmp_path / "old-run"])
    header, rule, new, old = text.splitlines()
    assert header.endswith("| versions |") and rule.count("|") == header.count("|")
    assert new.endswith("| Python 3.11.7, numpy 2.4.6 |") and old.endswith("| not recorded |")
