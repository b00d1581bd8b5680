"""Lectures teach without answering (issue 41): no lecture prints, ``getsource``-s or points at as
reading material a course function that a worksheet asks the student to write. The table of what
each exercise asks for is :mod:`course_lib.teaching.answers`; it is checked here against the
worksheets themselves, then every lecture (.py source and the executed .ipynb's outputs) is checked
against it."""
import inspect
import re
from pathlib import Path

import nbformat
import pytest

from course_lib.models import rnn
from course_lib.teaching import answers
from course_lib.teaching.notebook_io import read_py

ROOT = Path(__file__).resolve().parents[2]
LECTURES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
WORKSHEETS = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.py"))
EXERCISE = re.compile(r"Exercise\s+(\d+\.\d+[a-z]?)")
DEF = re.compile(r"^def (\w+)", re.M)
# Ways a notebook shows a function's source: inspect.getsource(f), getsourcelines(f), %psource f, f??
SHOW_SOURCE = re.compile(r"getsource(?:lines)?\(\s*([\w.]+)|%(?:psource|pfile)\s+([\w.]+)|^\s*([\w.]+)\?\?\s*$", re.M)


def _asked() -> dict[str, str]:
    """``{exercise: name}`` read from the worksheets: the function defined in each solution cell."""
    asked, current = {}, None
    for path in WORKSHEETS:
        for cell in read_py(path).cells:
            found = EXERCISE.findall(cell.source)
            current = found[0] if found else current
            if cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source:
                asked[current] = DEF.findall(cell.source)[0]
    return asked


def _outputs_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", "") if isinstance(out.get("text", ""), str) else "".join(out["text"]))
        for kind, value in out.get("data", {}).items():
            if kind.startswith("text/"):
                parts.append(value if isinstance(value, str) else "".join(value))
    return "\n".join(parts)


def test_the_table_matches_the_worksheets():
    table = {t.exercise: t.name for t in answers.TARGETS}
    assert table == _asked()


def test_every_answer_is_a_course_function_with_a_body():
    for answer in answers.answer_names():
        assert callable(answers.answer_object(answer)), answer
        assert answers.answer_lines(answer), f"{answer}: no code lines found"


def test_the_detector_finds_a_printed_answer_and_nothing_else():
    body = inspect.getsource(rnn.bptt_linear).split('"""')[-1]
    assert ("2.1", "models.rnn:bptt_linear") in answers.shown_answers(body)
    reindented = "\n".join("        " + line for line in body.splitlines())
    assert ("2.1", "models.rnn:bptt_linear") in answers.shown_answers(reindented)
    five = "\n".join(answers.answer_lines("models.rnn:bptt_linear")[3:3 + answers.MIN_LINES])
    assert answers.shown_answers(five) == [("2.1", "models.rnn:bptt_linear")]
    four = "\n".join(answers.answer_lines("models.rnn:bptt_linear")[3:3 + answers.MIN_LINES - 1])
    assert answers.shown_answers(four) == []
    assert answers.shown_answers(inspect.getsource(rnn.init_params)) == []


def test_unknown_exercise_is_named():
    with pytest.raises(KeyError, match="'99.9'"):
        answers.target("99.9")


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_no_lecture_asks_for_an_answers_source(path):
    names = {a.partition(":")[2].split(".")[-1] for a in answers.answer_names()} | {t.name for t in answers.TARGETS}
    for i, cell in enumerate(read_py(path).cells):
        if cell.cell_type != "code":
            continue
        for groups in SHOW_SOURCE.findall(cell.source):
            shown = next(g for g in groups if g).split(".")[-1]
            assert shown not in names, f"{path.name} cell {i} shows the source of {shown}, a worksheet's answer"


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_no_lecture_shows_an_answer(path):
    for i, cell in enumerate(read_py(path).cells):
        assert not answers.shown_answers(cell.source), f"{path.name} cell {i}"
    executed = path.with_suffix(".ipynb")
    for i, cell in enumerate(nbformat.read(executed, as_version=4).cells):
        hits = answers.shown_answers(_outputs_text(cell))
        assert not hits, f"{executed.name} cell {i} prints the answer of exercise(s) {hits}"


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_no_lecture_points_at_an_answer_as_reading(path):
    """A markdown cell that names an answer (`` `blelloch_block_kernel` ``) beside its file
    (``course_lib/algorithms/scan_cuda.py``) sends the student to read it."""
    for i, cell in enumerate(read_py(path).cells):
        if cell.cell_type != "markdown":
            continue
        for answer, exercises in answers.answer_names().items():
            module, _, qualname = answer.partition(":")
            name = qualname.split(".")[-1]
            named = re.search(rf"`(?:[\w.]+\.)?{re.escape(name)}(?:\(\))?`", cell.source)
            filed = f"{module.replace('.', '/')}.py" in cell.source
            assert not (named and filed), (f"{path.name} cell {i} points at {answer} (the answer of exercise "
                                           f"{', '.join(exercises)}) as reading")
