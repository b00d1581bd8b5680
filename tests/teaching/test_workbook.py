"""Issue 41, items 4 and 5: a student's own copy of the worksheets -- `start`, `progress` on a half-done worksheet,
and an `update` to a new course version that keeps every answer (teaching.workbook, python -m course_lib start /
progress / update).

Each test builds worksheet 01 (the cheapest to run) from the course's solutions into a temporary course folder, so the
course's own exercises/ are never touched."""
import re
import shutil
from pathlib import Path

import nbformat
import pytest

import course_lib
from course_lib import __main__ as cli
from course_lib.teaching import authoring, lab, workbook, workbook_cli

ROOT = Path(__file__).resolve().parents[2]
SHEET = "01_serial_rnn"


@pytest.fixture
def course(tmp_path):
    """A course folder with solutions/01 and its generated exercises/01."""
    (tmp_path / "solutions").mkdir()
    for suffix in (".py", ".ipynb"):
        shutil.copy(ROOT / "solutions" / f"{SHEET}{suffix}", tmp_path / "solutions")
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n### Worksheet 01\n- Exercise 1.3 asks for a "
                                           "Python\n  float.\n### Other\n- Exercise 1.30 is another exercise.\n\n"
                                           "## 2026-01-01\n\n- Exercise 1.3 was new.\n")
    assert [r.status for r in authoring.build_exercises(root=tmp_path, only=SHEET)] == ["written"]
    return tmp_path


def _solution_code(root: Path, exercise: str) -> str:
    """The reference answer of ``exercise``: the solution cell with its marker lines dropped."""
    sol = authoring.read_ipynb(root / "solutions" / f"{SHEET}.ipynb")
    cells = [c for c in sol.cells if "### BEGIN SOLUTION" in c.source and "def " in c.source]
    ex_cells = dict(zip(["1.1", "1.2", "1.3", "1.4"], cells))
    return "\n".join(line for line in ex_cells[exercise].source.splitlines() if "SOLUTION" not in line)


def _answers(path: Path) -> dict:
    return workbook._answers(nbformat.read(str(path), as_version=4))


def _write_answers(path: Path, answers: dict, extra=()):
    """Put ``answers`` ({exercise: source}) into the worksheet's answer cells; insert ``extra`` (index, cell)."""
    nb = nbformat.read(str(path), as_version=4)
    for (ex, _), cell in workbook._answers(nb).items():
        if ex in answers:
            cell.source = answers[ex]
    for i, cell in extra:
        nb.cells.insert(i, cell)
    nbformat.write(nb, str(path))
    path.with_suffix(".py").unlink()     # the student worked in JupyterLab without jupytext: only the .ipynb


def test_worksheets_carry_the_course_version_and_fingerprints(course):
    nb = authoring.read_ipynb(course / "exercises" / f"{SHEET}.ipynb")
    meta = nb.metadata["course_lib"]
    assert meta["course_version"] == course_lib.__version__
    assert f"Course version {course_lib.__version__}" in nb.cells[0].source
    assert sorted(meta["exercises"]) == ["1.1", "1.2", "1.3", "1.4"]
    assert all(len(v["answers"]) == 1 and v["statement"] and v["check"] for v in meta["exercises"].values())
    assert len(meta["cells"]) == len(nb.cells)
    tagged = [authoring.answer_exercise(c) for c in nb.cells if "solution" in authoring.cell_tags(c)]
    assert tagged == ["1.1", "1.2", "1.3", "1.4"]


def test_an_answer_stub_names_the_exercise_of_its_heading_not_one_the_statement_mentions():
    nb = nbformat.reads(authoring.exercise_texts(ROOT / "solutions" / "10_mgrit.ipynb")[0], as_version=4)
    stubs = {authoring.answer_exercise(c): c.source for c in nb.cells if authoring.answer_exercise(c)}
    assert 'NotImplementedError("Exercise 10.5:' in stubs["10.5"]   # its statement mentions Exercise 10.1


def test_start_copies_and_never_overwrites(course, tmp_path, capsys):
    mine = tmp_path / "my-work"
    assert workbook.start(mine, root=course) == [(f"{SHEET}.ipynb", "copied")]
    assert (mine / f"{SHEET}.py").exists()
    (mine / f"{SHEET}.ipynb").write_text("my work")
    again = workbook.start(mine, root=course)
    assert again[0][1].startswith("kept") and (mine / f"{SHEET}.ipynb").read_text() == "my work"
    assert workbook_cli.cmd_start(str(mine), root=course) == 0
    out = capsys.readouterr().out
    assert f"{SHEET}.ipynb: kept" in out and "python -m course_lib progress --dir" in out


def test_start_and_update_without_exercises_say_they_need_the_checkout(tmp_path, capsys):
    from course_lib.teaching.notebook_io import NeedsCheckout

    with pytest.raises(NeedsCheckout, match="exercises is missing"):
        workbook.start(tmp_path / "my-work", root=tmp_path)
    (tmp_path / "my-work").mkdir()
    with pytest.raises(NeedsCheckout, match="exercises is missing"):
        workbook.update(tmp_path / "my-work", root=tmp_path)


def test_jupyterlab_saves_a_students_copy_as_usual():
    assert not lab.is_lecture("my-work/01_serial_rnn.ipynb") and lab.is_lecture("notebooks/01_serial_rnn.ipynb")


@pytest.mark.timeout(300)
def test_progress_on_a_half_done_worksheet(course, tmp_path, capsys):
    mine = tmp_path / "my-work"
    workbook.start(mine, root=course)
    sheet = mine / f"{SHEET}.ipynb"
    _write_answers(sheet, {"1.1": _solution_code(course, "1.1"),
                           "1.2": "def forward(params, X, h0):\n    return None, None"})   # wrong
    before = sheet.read_bytes()
    assert cli.main(["progress", "--dir", str(mine)]) == 0
    out = capsys.readouterr().out
    rows = dict(re.findall(r"^  (1\.\d)\s+(\S+(?: \S+)?)", out, flags=re.M))
    assert rows == {"1.1": "passed", "1.2": "failing", "1.3": "not started", "1.4": "not started"}, out
    assert re.search(r"^  1\.1\s+passed\s+Exercise 1\.1 passed: \d+/\d+ cases$", out, flags=re.M), out
    assert re.search(r"^  1\.2\s+failing\s+'H': expected a numeric array, got NoneType", out, flags=re.M), out
    assert "1 of 4 exercises done" in out
    assert sheet.read_bytes() == before and not (mine / f"{SHEET}.py").exists()   # nothing written back


def test_progress_without_the_folder_names_dir_and_start(tmp_path, capsys):
    assert cli.main(["progress", "--dir", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "--dir" in err and "python -m course_lib start" in err and "nowhere" in err


def _executed(sources_outputs):
    """A worksheet 'run': [(tags, source, outputs)] under a heading for Exercise 5.1."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## Exercise 5.1 · fused")]
    for tags, source, outputs in sources_outputs:
        c = nbformat.v4.new_code_cell(source, metadata={"tags": tags})
        c.outputs, c.execution_count = [nbformat.v4.new_output(**o) for o in outputs], 1 if outputs else None
        nb.cells.append(c)
    return nb


@pytest.mark.parametrize("check_outputs,status,detail", [
    ([dict(output_type="error", ename="SpeedNotJudged", evalue="Exercise 5.1 not judged on the speed test (x): the "
           "machine was busy", traceback=[])], "not judged", "run again on a quieter machine: the machine was busy"),
    ([dict(output_type="error", ename="ExerciseFailed", evalue="Exercise 5.1 failed:\n  case 2/5: wrong\n  Hint: h",
           traceback=[])], "failing", "case 2/5: wrong"),
    ([dict(output_type="error", ename="NotImplementedError", evalue="Exercise 5.1: replace", traceback=[])],
     "not started", ""),
    ([], "not run", "the run stopped before this exercise"),
])
def test_each_outcome_of_a_check_cell(check_outputs, status, detail):
    nb = _executed([(["solution", "raises-exception", "answer:5.1"], "def f(): ...", []),
                    (["raises-exception"], "checks.check_f(f)", check_outputs)])
    roles = workbook.exercise_cells(nb)
    assert roles[1:] == [("answer", "5.1"), ("check", "5.1")]
    cells = [(role, c) for (role, _), c in zip(roles, nb.cells) if role in ("answer", "check")]
    got = workbook._status("5.1", cells)
    assert (got.status, got.detail) == (status, detail)


def _new_version(course: Path, monkeypatch):
    """The course's next version: 1.3's statement changed, 1.4 renumbered 1.5, the version bumped."""
    sol = authoring.read_ipynb(course / "solutions" / f"{SHEET}.ipynb")
    for c in sol.cells:
        if c.cell_type == "markdown" and "## Exercise 1.3" in c.source:
            c.source += "\nReturn a Python float (not a numpy scalar)."
        c.source = c.source.replace("Exercise 1.4", "Exercise 1.5")
    nbformat.write(sol, str(course / "solutions" / f"{SHEET}.ipynb"))
    monkeypatch.setattr(course_lib, "__version__", "99.0.0")
    assert [r.status for r in authoring.build_exercises(root=course, only=SHEET)] == ["written"]


def test_update_keeps_every_answer_and_reports_the_changed_statement(course, tmp_path, monkeypatch, capsys):
    mine = tmp_path / "my-work"
    workbook.start(mine, root=course)
    sheet = mine / f"{SHEET}.ipynb"
    written = {"1.1": _solution_code(course, "1.1"), "1.2": "def forward(params, X, h0):\n    # half done\n    pass",
               "1.4": "def numerical_gradient(f, W, eps=1e-6):\n    return 'my 1.4'"}
    own_code = nbformat.v4.new_code_cell("def helper(x):\n    return 2 * x   # my helper, used by 1.1")
    own_note = nbformat.v4.new_markdown_cell("My note: tanh saturates.")
    answer_11 = next(i for i, c in enumerate(nbformat.read(str(sheet), as_version=4).cells)
                     if authoring.answer_exercise(c) == "1.1")
    _write_answers(sheet, written, extra=[(answer_11, own_code), (len(nbformat.read(str(sheet), 4).cells), own_note)])
    old_bytes, old_version = sheet.read_bytes(), course_lib.__version__
    _new_version(course, monkeypatch)

    assert workbook_cli.cmd_update(str(mine), root=course) == 0
    out = capsys.readouterr().out
    assert f"{SHEET}.ipynb: updated from course version {old_version} to 99.0.0 (2 answer(s) carried into their exercise, " \
           "2 cell(s) of yours kept in place; backup: " in out, out
    assert "Exercise 1.3: statement changed" in out
    assert "    CHANGELOG: Exercise 1.3 asks for a Python float.\n" in out and "1.30" not in out and "was new" not in out
    assert "Exercise 1.4: removed" in out and "Exercise 1.5: new exercise" in out
    assert "answers to 1.4 have no exercise any more" in out
    # the backup is the student's file as it was
    backups = list((mine / ".backup").glob(f"*/{SHEET}.ipynb"))
    assert len(backups) == 1 and backups[0].read_bytes() == old_bytes
    # every cell the student wrote is in the new version
    new = nbformat.read(str(sheet), as_version=4)
    sources = [c.source for c in new.cells]
    for text in [*written.values(), own_code.source, own_note.source]:
        assert text in sources, text
    answers = workbook._answers(new)
    assert answers[("1.1", 0)].source == written["1.1"] and answers[("1.2", 0)].source == written["1.2"]
    assert "NotImplementedError" in answers[("1.5", 0)].source                       # the new exercise's stub
    assert sources.index(own_code.source) == sources.index(written["1.1"]) - 1        # still just above its use
    heading = next(i for i, s in enumerate(sources) if s.startswith(workbook.CARRIED_HEADING))
    assert heading < sources.index(written["1.4"]) and heading > sources.index(own_note.source)
    assert "Return a Python float (not a numpy scalar)." in "\n".join(sources)       # the new statement
    assert new.metadata["course_lib"]["course_version"] == "99.0.0"
    assert authoring.pair_problems(sheet.with_suffix(".py"), sheet) == []
    # idempotent: a second update changes nothing and makes no backup
    updated = sheet.read_bytes()
    assert [r.status for r in workbook.update(mine, root=course)] == ["up to date"]
    assert sheet.read_bytes() == updated and len(list((mine / ".backup").iterdir())) == 1


def test_update_of_a_worksheet_without_fingerprints_keeps_everything(course, tmp_path, monkeypatch):
    """A copy made before worksheets carried fingerprints (or whose metadata was lost): every answer that differs
    from the new stub, and every cell not in the new worksheet, is kept."""
    mine = tmp_path / "my-work"
    workbook.start(mine, root=course)
    sheet = mine / f"{SHEET}.ipynb"
    nb = nbformat.read(str(sheet), as_version=4)
    del nb.metadata["course_lib"]
    for c in nb.cells:
        if authoring.answer_exercise(c) == "1.3":
            c.source = "def loss(Yhat, Y):\n    return 'mine'"
    nbformat.write(nb, str(sheet))
    _new_version(course, monkeypatch)
    [r] = workbook.update(mine, root=course)
    assert r.status.startswith("updated")
    new = nbformat.read(str(sheet), as_version=4)
    assert workbook._answers(new)[("1.3", 0)].source == "def loss(Yhat, Y):\n    return 'mine'"


@pytest.mark.timeout(300)
def test_progress_reads_the_speedup_of_a_passed_speed_exercise_and_a_speed_not_judged(tmp_path):
    """A worksheet run for real (a fresh kernel): 5.1's check prints a pass line and its measured speed-up; 5.2's
    raises the course's SpeedNotJudged, which is "not judged", never a fail."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("## Exercise 5.1 · fused"),
        nbformat.v4.new_code_cell("def f():\n    return 1", metadata={"tags": ["solution", "answer:5.1"]}),
        nbformat.v4.new_code_cell('print("Exercise 5.1 passed: 5/5 cases")\nprint("  speed: 2.50x as fast as the '
                                  'loop (one thread): between 2.41x and 2.60x in 5 interleaved rounds, at least 1.3x '
                                  'needed")', metadata={"tags": ["raises-exception"]}),
        nbformat.v4.new_markdown_cell("## Exercise 5.2 · threads"),
        nbformat.v4.new_code_cell("def g():\n    return 2", metadata={"tags": ["solution", "answer:5.2"]}),
        nbformat.v4.new_code_cell("from course_lib.teaching.checks.speed import SpeedNotJudged\nraise SpeedNotJudged("
                                  '"Exercise 5.2 not judged on the speed test (T=64): your numbers are right, but the '
                                  'machine was busy", None)', metadata={"tags": ["raises-exception"]}),
    ]
    nbformat.write(nb, str(tmp_path / "05_fake.ipynb"))
    statuses, problem = workbook.worksheet_progress(tmp_path / "05_fake.ipynb", timeout=120)
    assert problem == ""
    assert [(s.exercise, s.status) for s in statuses] == [("5.1", "passed"), ("5.2", "not judged")]
    assert statuses[0].speed == "2.50x as fast as the loop (one thread), at least 1.3x needed"
    assert statuses[1].detail == "run again on a quieter machine: your numbers are right, but the machine was busy"


def test_a_py_pair_saved_later_is_what_is_read(course, tmp_path):
    """A student who edits the .py in a text editor: the newer .py's cells are read (as JupyterLab with jupytext
    would open them), with the .ipynb's metadata -- so progress and update see that work."""
    import os

    mine = tmp_path / "my-work"
    workbook.start(mine, root=course)
    py = mine / f"{SHEET}.py"
    text = py.read_text()
    stub = '    raise NotImplementedError("Exercise 1.3: replace this line with your code")'
    assert stub in text
    py.write_text(text.replace(stub, "    return float(((Yhat - Y) ** 2).sum())   # from my editor"))
    ipynb = mine / f"{SHEET}.ipynb"
    os.utime(py, (ipynb.stat().st_mtime + 10,) * 2)
    nb = workbook.read_worksheet(ipynb)
    assert "# from my editor" in workbook._answers(nb)[("1.3", 0)].source
    assert nb.metadata["course_lib"]["course_version"] == course_lib.__version__
