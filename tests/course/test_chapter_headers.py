"""The generated cells of every lecture and worksheet (course_lib.teaching.chapters): one table row per chapter,
the header / Colab setup / footer cells present and up to date in notebooks/, solutions/ and exercises/, the setup
cell never running pip where course_lib imports, and run times read from the recordings."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

import course_lib
from course_lib.teaching import chapters, links, replay
from course_lib.teaching.chapter_table import CHAPTER_TABLE

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.glob("notebooks/[0-9][0-9]_*.py"), *ROOT.glob("solutions/[0-9][0-9]_*.py")])
NOTEBOOKS = sorted([*ROOT.glob("notebooks/[0-9][0-9]_*.ipynb"), *ROOT.glob("solutions/[0-9][0-9]_*.ipynb"),
                    *ROOT.glob("exercises/[0-9][0-9]_*.ipynb")])
FIX = "python -m course_lib notebooks (rewrites the generated cells and syncs the .ipynb; then commit)"


def _rel(p: Path) -> str:
    return f"{p.parent.name}/{p.name}"


# --------------------------------------------------------------------------- the table
def test_every_chapter_has_a_row():
    assert sorted(CHAPTER_TABLE) == sorted(course_lib.CHAPTERS)
    order = sorted(course_lib.CHAPTERS)
    for ch, row in CHAPTER_TABLE.items():
        assert 3 <= len(row.objectives) <= 5, f"chapter {ch}: {len(row.objectives)} objectives, expected 3-5"
        assert all(isinstance(o, str) and len(o) > 30 and o.endswith(".") for o in row.objectives), ch
        assert len(set(row.objectives)) == len(row.objectives), f"chapter {ch}: an objective is repeated"
        assert all(p in order and p < ch for p in row.prerequisites), (
            f"chapter {ch}: prerequisites {row.prerequisites} must be earlier chapters")
        assert list(row.prerequisites) == sorted(set(row.prerequisites)), ch
        assert isinstance(row.minutes, int) and 15 <= row.minutes <= 300, (ch, row.minutes)
        later = [int(n) for n in re.findall(r"\bchapters? (\d\d)\b|\band (\d\d)\b", row.not_yet) for n in n if n]
        if ch != order[-1]:
            assert later and all(n > int(ch) for n in later), (
                f"chapter {ch}: 'not yet' must point to the later chapter that does it: {row.not_yet!r}")
    assert not CHAPTER_TABLE[order[0]].prerequisites


# --------------------------------------------------------------------------- the committed files
@pytest.mark.parametrize("py", SOURCES, ids=_rel)
def test_generated_cells_are_up_to_date(py):
    assert chapters.generated_text(py) == py.read_text(encoding="utf-8"), (
        f"{_rel(py)}: its generated cells (tags chapter-header, colab-setup, chapter-footer) differ from what "
        f"course_lib/teaching/chapter_table.py and recordings/ give; run: {FIX}")


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_rel)
def test_every_lecture_and_worksheet_has_the_generated_cells(path):
    nb = nbformat.read(path, as_version=4)
    ch = path.name[:2]
    cells = nb.cells[1:] if path.parent.name == "exercises" else nb.cells  # after the worksheet banner
    title, header, setup = cells[0], cells[1], cells[2]
    assert title.cell_type == "markdown" and title.source.startswith("# "), f"{_rel(path)}: title cell first"
    assert header.cell_type == "markdown" and chapters.TAG_HEADER in _tags(header), _rel(path)
    assert f"**Chapter {ch} at a glance**" in header.source
    for objective in CHAPTER_TABLE[ch].objectives:
        assert objective in header.source, (_rel(path), objective)
    assert "**Study time:**" in header.source and "**Run time of this" in header.source
    opened = f"{'notebooks' if path.parent.name == 'notebooks' else 'exercises'}/{path.name}"
    assert links.colab_url(opened) in header.source and links.raw_url(opened) in header.source
    assert setup.cell_type == "code" and _tags(setup) == [chapters.TAG_SETUP, "nbval-ignore-output"], _rel(path)
    assert [c for c in nb.cells if c.cell_type == "code"][0] is setup, f"{_rel(path)}: setup is not the first code cell"
    *_, timer, report = nb.cells
    assert timer.cell_type == "code" and "chapters.finished()" in timer.source
    assert _tags(timer) == [chapters.TAG_FOOTER, "nbval-ignore-output"]
    assert report.cell_type == "markdown" and chapters.TAG_FOOTER in _tags(report)
    assert links.issues_url() in report.source and "CONTRIBUTING.md" in report.source


def test_generation_keeps_every_other_cell_and_is_idempotent(tmp_path):
    import jupytext

    root = tmp_path / "course"
    for folder in ("notebooks", "solutions"):
        (root / folder).mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / "02_bptt.py", root / "notebooks")
    for pre in ("00_setup", "01_serial_rnn"):                                  # the prerequisites headers link
        shutil.copy(ROOT / "notebooks" / f"{pre}.py", root / "notebooks")
    (root / "recordings").symlink_to(ROOT / "recordings")                      # the same run times
    shutil.copy(ROOT / "solutions" / "02_bptt.py", root / "solutions")
    py = root / "notebooks" / "02_bptt.py"
    mine = {chapters.TAG_HEADER, chapters.TAG_SETUP, chapters.TAG_FOOTER}

    def others(text):
        return [(c.cell_type, c.source) for c in jupytext.reads(text, fmt="py:percent").cells
                if not mine & set(c.metadata.get("tags", []))]

    before = py.read_text()
    bare = "".join(c for c in re.split(r"(?=^# %%)", before, flags=re.M)
                   if not any(f'"{t}"' in c.split("\n", 1)[0] for t in mine))
    py.write_text(bare)                                   # no generated cells at all
    assert chapters.apply_headers(root) == [py]           # the solution is already up to date
    assert py.read_text() == before                       # made afresh, byte for byte the committed file
    assert chapters.apply_headers(root) == []
    assert others(bare) == others(py.read_text())
    py.write_text(before.replace("**Chapter 02 at a glance**", "**edited**"))
    assert chapters.apply_headers(root, only="02_bptt") == [py] and py.read_text() == before


def test_a_file_without_a_title_first_is_refused(tmp_path):
    py = tmp_path / "notebooks" / "03_x.py"
    py.parent.mkdir()
    py.write_text("# %%\nx = 1\n")
    with pytest.raises(ValueError, match="title"):
        chapters.generated_text(py)
    with pytest.raises(ValueError, match="stem"):
        chapters.header_markdown("notebooks", "99_nothing", {})
    with pytest.raises(ValueError, match="folder"):
        chapters.header_markdown("exercises", "08_scan", {})


# --------------------------------------------------------------------------- the setup cell and the clock
def _run_cell(prelude: str) -> subprocess.CompletedProcess:
    code = textwrap.dedent(prelude) + "\n" + chapters.setup_source()
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_the_setup_cell_never_runs_pip_where_course_lib_imports():
    r = _run_cell("""
        import subprocess
        def refuse(*a, **k):
            raise SystemExit("pip was called: " + repr(a))
        subprocess.run = refuse
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (f"course_lib {course_lib.__version__} is installed: nothing more to set up "
                                "(this notebook's clock starts now)")


def test_the_setup_cell_installs_where_course_lib_is_missing():
    r = _run_cell("""
        import subprocess, sys
        sys.modules["course_lib"] = None     # as on Colab: the import fails
        def fake_pip(args, check):
            print("PIP", args[1:], check)
            del sys.modules["course_lib"]    # "installed": the import works again
        subprocess.run = fake_pip
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("course_lib is not installed in this kernel: installing the course with pip")
    assert lines[1] == f"PIP {['-m', 'pip', 'install', '--quiet', links.pip_source()]} True"
    assert lines[2].startswith(f"course_lib {course_lib.__version__} is installed")


def test_the_last_cell_prints_the_run_time_or_says_why_not(capsys, monkeypatch):
    monkeypatch.setattr(chapters, "_clock", [])
    chapters.finished()
    assert capsys.readouterr().out == ("this notebook's start time is unknown (run the first code cell, the setup "
                                       "cell, then this one)\n")
    chapters.started()
    monkeypatch.setattr(chapters, "_clock", [chapters._clock[0] - 71.2])
    chapters.finished()
    assert capsys.readouterr().out.splitlines()[-1] == "this notebook took 71 s here"


# --------------------------------------------------------------------------- run times
def test_run_times_are_recorded_merged_and_shown(tmp_path):
    rec = tmp_path / "recordings"
    assert chapters.run_times(rec) == {}
    assert "not yet recorded on any machine" in chapters.header_markdown("notebooks", "08_scan", {}, ROOT)
    path = chapters.record_time(rec / "zen5-quiet", "notebooks/08_scan", 71.26, cpu="AMD EPYC")
    chapters.record_time(rec / "zen5-quiet", "solutions/08_scan", 20, cpu="AMD EPYC")
    chapters.record_time(rec / "xeon", "notebooks/08_scan", 90.0, cpu="Intel Xeon")
    assert json.loads(path.read_text()) == {"cpu": "AMD EPYC",
                                            "seconds": {"notebooks/08_scan": 71.3, "solutions/08_scan": 20.0}}
    times = chapters.run_times(rec)
    assert list(times) == ["xeon", "zen5-quiet"]
    header = chapters.header_markdown("notebooks", "08_scan", times, ROOT)
    assert "measured 90 s on Intel Xeon (xeon); 71 s on AMD EPYC (zen5-quiet)" in header
    assert "20 s on AMD EPYC (zen5-quiet)" in chapters.header_markdown("solutions", "08_scan", times, ROOT)
    assert "not yet recorded" in chapters.header_markdown("notebooks", "09_lstm_layout", times, ROOT)
    page = chapters.run_times_page(rec)
    assert "| `notebooks/08_scan` | 90 s | 71 s |" in page and "| `solutions/08_scan` | not recorded | 20 s |" in page
    assert "not yet recorded on any machine" in chapters.run_times_page(tmp_path / "empty")


def test_the_times_file_is_not_read_as_a_verdict_recording(tmp_path):
    chapters.record_time(tmp_path / "run", "notebooks/08_scan", 3.0, cpu="x")
    assert replay.replay(tmp_path / "run") == {}
    assert replay.recording_dirs(tmp_path) == []


@pytest.mark.parametrize("name, seconds, match", [
    ("08_scan", 1.0, "name"), ("notebooks/08_scan", -1.0, "seconds"), ("notebooks/08_scan", float("nan"), "seconds"),
    ("notebooks/08_scan", True, "seconds"), ("notebooks/08_scan", "3", "seconds")])
def test_bad_run_times_are_refused_by_name(tmp_path, name, seconds, match):
    with pytest.raises(ValueError, match=match):
        chapters.record_time(tmp_path, name, seconds, cpu="x")
    assert not (tmp_path / chapters.TIMES_FILE).exists()


def test_the_notebooks_runner_records_run_times_only_when_executing_under_course_record(tmp_path, monkeypatch, capsys):
    from course_lib import __main__ as cli
    from course_lib.teaching import authoring

    applied = []
    monkeypatch.setattr(chapters, "apply_headers", lambda only=None: applied.append(only) or [])
    monkeypatch.setattr(authoring, "sync_notebook", lambda py, ipynb, execute, timeout: 12.34)
    monkeypatch.setenv("COURSE_RECORD", str(tmp_path / "rec"))
    assert cli.main(["notebooks", "--only", "01_serial", "--no-exercises"]) == 0
    assert applied == ["01_serial"] and not (tmp_path / "rec").exists()     # synced, not run: no time
    assert cli.main(["notebooks", "--execute", "--only", "01_serial", "--no-exercises"]) == 0
    times = chapters.run_times(tmp_path)["rec"]["seconds"]
    assert times == {"notebooks/01_serial_rnn": 12.3, "solutions/01_serial_rnn": 12.3}
    monkeypatch.delenv("COURSE_RECORD")
    assert cli.main(["notebooks", "--execute", "--only", "02_bptt", "--no-exercises"]) == 0
    assert chapters.run_times(tmp_path)["rec"]["seconds"] == times                # record mode off: nothing written
