"""What a student sees before running anything: the committed outputs of the lecture notebooks,
worksheets and solutions hold no machine path and no progress bar stuck at 0%; progress bars in a
notebook store a statement of their work, and backend.report() names its MPI launcher generically."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from course_lib.core import backend
from course_lib.core.progress import progress_bar, stored_text

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p for d in ("notebooks", "solutions", "exercises") for p in (ROOT / d).glob("[0-9][0-9]_*.ipynb"))
#: an absolute path into a home, a checkout, a venv or a temp dir (what a committed output must not show)
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:home|Users|work|tmp|root|opt|usr/local)/[\w.-]+|[\w/.-]*\.venv/bin/")
STUCK_BAR = re.compile(r"\b0%\|[ ]*\|\s*0/\d+")


def _output_texts(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            texts = [out.get("text", "")] + [v for k, v in out.get("data", {}).items() if k.startswith("text/")]
            for t in texts:
                yield i, "".join(t) if isinstance(t, list) else str(t)


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 39


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_committed_outputs_hold_no_machine_path_and_no_stuck_bar(path):
    for i, text in _output_texts(path):
        hit = MACHINE_PATH.search(text)
        assert not hit, f"{path.name} cell {i}: a machine path in a committed output: {hit.group(0)!r}"
        assert not STUCK_BAR.search(text), f"{path.name} cell {i}: a progress bar stuck at 0%: {text[:120]!r}"


def test_report_names_mpiexec_without_a_path():
    ok, info = backend.mpi_available()
    line = str(backend.report())
    assert not MACHINE_PATH.search(line), line
    if ok:
        assert info == backend.mpiexec_path()  # the launcher's path, for who starts it
        assert backend.mpiexec_name(info).startswith("mpiexec (") and "/" not in backend.mpiexec_name(info)
        assert f"mpi4py + {backend.mpiexec_name(info)}" in line
    assert backend.mpiexec_name("/somewhere/else/bin/mpiexec") == "mpiexec (on PATH)"
    with pytest.raises(TypeError, match="exe"):
        backend.mpiexec_name(None)


@pytest.mark.parametrize("desc, total, unit, text", [
    ("training", 320, "step", "training: 320 steps (a live progress bar while it runs)"),
    ("gilr T=64", 1, "epoch", "gilr T=64: 1 epoch (a live progress bar while it runs)"),
    ("", None, "it", "progress (a live progress bar while it runs)"),
])
def test_stored_text(desc, total, unit, text):
    assert stored_text(desc, total, unit) == text


def test_stored_text_bad_input():
    with pytest.raises(TypeError, match="desc"):
        stored_text(3, 10)
    with pytest.raises(ValueError, match="unit"):
        stored_text("x", 10, "")


def test_progress_bar_outside_a_kernel_is_the_terminal_bar(capsys):
    bar = progress_bar(range(5), desc="work", unit="step", mininterval=0)
    assert list(bar) == [0, 1, 2, 3, 4]
    assert "5/5" in capsys.readouterr().err


def test_progress_bar_in_a_kernel_stores_its_work_not_0_percent():
    """Executed as `course_lib notebooks --execute` executes: the stored display is the widget with
    a text form that states the work (and is the same from run to run)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from course_lib.core.progress import progress_bar\n"
        "total = sum(progress_bar(range(30), desc='training', unit='step'))\nprint(total)")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outs = nb.cells[0].outputs
    shown = [o for o in outs if o.output_type == "display_data"]
    assert len(shown) == 1, outs
    assert shown[0].data["text/plain"] == "training: 30 steps (a live progress bar while it runs)"
    assert "application/vnd.jupyter.widget-view+json" in shown[0].data
    assert [o.text for o in outs if o.output_type == "stream"] == ["435\n"]
