"""The server's save hook (jupyter_server_config.json -> course_lib.teaching.lab): saving a lecture
notebook after a run changes neither it nor its jupytext twin; a changed cell is saved; worksheets
are saved as usual; the kernel `make lab` registers has the display name the notebooks store."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from course_lib.teaching import lab

ROOT = Path(__file__).resolve().parents[2]
LECTURE = "10_mgrit"


def _manager(root: Path):
    jupytext = pytest.importorskip("jupytext")
    config = json.loads((ROOT / "jupyter_server_config.json").read_text())["ContentsManager"]
    assert config["pre_save_hook"] == "course_lib.teaching.lab.keep_lecture_outputs"
    return jupytext.TextFileContentsManager(root_dir=str(root), pre_save_hook=config["pre_save_hook"])


def _course(tmp_path: Path) -> Path:
    for folder in ("notebooks", "exercises"):
        (tmp_path / folder).mkdir()
        for ext in ("ipynb", "py"):
            shutil.copy(ROOT / folder / f"{LECTURE}.{ext}", tmp_path / folder / f"{LECTURE}.{ext}")
    return tmp_path


def _as_after_a_run(model: dict) -> dict:
    """What JupyterLab sends after Run All: new outputs and counts, widget state, language info."""
    nb = model["content"]
    for k, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = k + 1
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": f"run {k}\n"}]
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2,
                                                                                "version_minor": 0}}
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.99.0"}
    return {"type": "notebook", "content": nb}


def test_saving_a_run_lecture_keeps_both_files_as_committed(tmp_path):
    root = _course(tmp_path)
    cm = _manager(root)
    path = f"notebooks/{LECTURE}.ipynb"
    before = {p: (root / p).read_bytes() for p in (path, path[:-6] + ".py")}
    cm.save(_as_after_a_run(cm.get(path)), path)
    for p, data in before.items():
        assert (root / p).read_bytes() == data, f"{p} changed after saving a run of an unchanged lecture"


def test_a_changed_lecture_cell_and_a_worksheet_are_saved(tmp_path):
    root = _course(tmp_path)
    cm = _manager(root)
    path = f"notebooks/{LECTURE}.ipynb"
    model = _as_after_a_run(cm.get(path))
    code = next(c for c in model["content"]["cells"] if c["cell_type"] == "code")
    code["source"] = "print('my change')\n" + "".join(code["source"])
    cm.save(model, path)
    assert "my change" in (root / path).read_text() and "my change" in (root / path[:-6]).with_suffix(".py").read_text()
    assert "run 0" in (root / path).read_text()  # the student's outputs come with their change

    ws = f"exercises/{LECTURE}.ipynb"
    cm.save(_as_after_a_run(cm.get(ws)), ws)
    assert "run 0" in (root / ws).read_text()  # worksheets keep the student's run


@pytest.mark.parametrize("path, lecture", [("notebooks/10_mgrit.ipynb", True), ("/course/notebooks/00_setup.ipynb", True),
                                           ("exercises/10_mgrit.ipynb", False), ("notebooks/my_10.ipynb", False),
                                           ("solutions/10_mgrit.ipynb", False), ("notebooks/10_mgrit.py", False)])
def test_is_lecture(path, lecture):
    assert lab.is_lecture(path) is lecture


def test_bad_input():
    with pytest.raises(TypeError, match="path"):
        lab.is_lecture(None)
    with pytest.raises(ValueError, match="nb"):
        lab.same_cells({"cells": 3}, {"cells": []})
    lab.keep_lecture_outputs({"type": "file", "content": "x"}, "notebooks/10_mgrit.ipynb", None)  # not a notebook: no-op


def test_the_kernel_make_lab_registers_is_the_one_the_notebooks_store():
    """`make lab` registers kernel python3 with a display name; JupyterLab writes that name into every
    notebook it saves, so it must be the name the committed notebooks (and their .py twins) hold."""
    make = (ROOT / "Makefile").read_text()
    m = re.search(r'ipykernel install .*--name (\S+) --display-name "([^"]+)"', make)
    assert m, "the Makefile's kernel target is not found"
    name, display = m.groups()
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        spec = json.loads(nb.read_text())["metadata"]["kernelspec"]
        assert (spec["name"], spec["display_name"]) == (name, display), (nb.name, spec)
        assert f"display_name: {display}\n" in nb.with_suffix(".py").read_text(), nb.with_suffix(".py").name
