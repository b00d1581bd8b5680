"""`python -m course_lib export --nbgrader DIR`: the exported cells' nbgrader metadata (fast), the
refusals that protect an instructor's course folder (fast), and the real nbgrader cycle --
generate_assignment, autograde against the sqlite gradebook -- on chapter 01 (slow)."""
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_lib.teaching import authoring
from course_lib.teaching import nbgrader_export as ne

SOL = authoring.COURSE_ROOT / "solutions"
CHAPTER = "01_serial_rnn"


def _by_id(nb):
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells}


def test_cells_of_a_chapter_become_answer_test_and_locked_cells():
    solution = authoring.read_ipynb(SOL / f"{CHAPTER}.ipynb")
    nb, exercises, warnings = ne.nbgrader_notebook(solution, CHAPTER, {"1.2": 3})
    assert exercises == {"1.1": 1, "1.2": 3, "1.3": 1, "1.4": 1} and warnings == []
    assert len(nb.cells) == len(solution.cells)
    cells = _by_id(nb)
    assert len(cells) == len(nb.cells)  # grade ids are unique
    for k in ("1_1", "1_2", "1_3", "1_4"):
        answer, test = cells[f"exercise_{k}_answer"], cells[f"exercise_{k}"]
        assert answer.cell_type == "code" and ne.authoring.BEGIN in answer.source
        assert answer.metadata["nbgrader"] == {"grade": False, "grade_id": f"exercise_{k}_answer", "locked": False,
                                               "schema_version": 3, "solution": True}
        assert test.metadata["nbgrader"] == {"grade": True, "grade_id": f"exercise_{k}", "locked": True,
                                             "points": 3 if k == "1_2" else 1, "schema_version": 3,
                                             "solution": False}
        assert "serial_rnn_checks.check_" in test.source  # the grader call, unchanged
        assert nb.cells.index(test) == nb.cells.index(answer) + 1
    others = [c for c in nb.cells if not c.metadata["nbgrader"]["grade_id"].startswith("exercise_")]
    assert {c.cell_type for c in others} == {"markdown", "code"}
    assert all(c.metadata["nbgrader"]["locked"] and not c.metadata["nbgrader"]["grade"]
               and not c.metadata["nbgrader"]["solution"] for c in others)
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert "jupytext" not in nb.metadata and "course_lib" not in nb.metadata
    assert all("lines_to_next_cell" not in c.metadata for c in nb.cells)
    assert solution.cells[3].metadata.get("nbgrader") is None  # the input is not changed
    nbformat.validate(nb)
    pytest.importorskip("nbgrader")
    from nbgrader.nbgraderformat import MetadataValidator

    MetadataValidator().validate_nb(nb)


def test_only_the_first_grader_call_after_an_answer_is_graded():
    # 07: after 7.5's graded check come a demo calling check_data_parallel() and an MPI run tagged
    # "check": both stay ungraded, locked cells
    nb, exercises, _ = ne.nbgrader_notebook(authoring.read_ipynb(SOL / "07_parallel_inference.ipynb"), "07")
    assert exercises == {f"7.{k}": 1 for k in range(1, 6)}
    graded = [c for c in nb.cells if c.metadata["nbgrader"]["grade"]]
    assert [c.metadata["nbgrader"]["grade_id"] for c in graded] == [f"exercise_7_{k}" for k in range(1, 6)]
    mpi = [c for c in nb.cells if "run_split_under_mpi" in c.source]
    assert mpi and all(c.metadata["nbgrader"]["locked"] and not c.metadata["nbgrader"]["grade"] for c in mpi)


def test_points_from_a_tag_and_written_answers():
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[
        v4.new_markdown_cell("## Exercise 3.1 · f"),
        v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"),
        v4.new_code_cell("my_checks.check_f(f)", metadata={"tags": ["points:2.5", "nbval-ignore-output"]}),
        v4.new_markdown_cell("## Exercise 3.2 · why?"),
        v4.new_markdown_cell("### BEGIN SOLUTION\nBecause.\n### END SOLUTION"),
        v4.new_markdown_cell("## Exercise 3.3 · no check"),
        v4.new_code_cell("def g():\n    ### BEGIN SOLUTION\n    return 2\n    ### END SOLUTION"),
    ])
    out, exercises, warnings = ne.nbgrader_notebook(nb, "03_x")
    assert exercises == {"3.1": 2.5, "3.2": 1}
    assert warnings == ["03_x: exercise 3.3 has no check cell (no autograded points)"]
    assert out.cells[2].metadata["tags"] == ["nbval-ignore-output"]
    assert out.cells[4].metadata["nbgrader"] == {"grade": True, "grade_id": "exercise_3_2_answer", "locked": False,
                                                 "points": 1, "schema_version": 3, "solution": True}
    assert ne.nbgrader_notebook(nb, "03_x", {"3.1": 4})[1]["3.1"] == 4  # the argument beats the tag
    with pytest.raises(ValueError, match=r"points: no graded exercise 3\.9"):
        ne.nbgrader_notebook(nb, "03_x", {"3.9": 1})
    with pytest.raises(ValueError, match=r"points: expected a number >= 0 for exercise '3.1'"):
        ne.nbgrader_notebook(nb, "03_x", {"3.1": -1})
    with pytest.raises(TypeError, match="solution_nb"):
        ne.nbgrader_notebook("not a notebook")


def test_export_refuses_a_non_empty_folder_and_force_keeps_the_gradebook(tmp_path):
    course = tmp_path / "course"
    r = ne.export_nbgrader(course, only="00")
    assert r.config == "written" and r.assignments == {"00_setup": {"0.1": 1}}
    assert sorted(p.relative_to(course).as_posix() for p in course.rglob("*") if p.is_file()) == [
        "nbgrader_config.py", "source/00_setup/00_setup.ipynb"]
    config = (course / "nbgrader_config.py").read_text()
    assert "c.CourseDirectory.course_id = 'parallel-rnns'" in config and "c.CourseDirectory.root" in config
    with pytest.raises(FileExistsError, match="not empty.*--force.*gradebook.db and submitted/ are kept"):
        ne.export_nbgrader(course, only="00")
    # an instructor's course: gradebook, submissions, their own config and another assignment
    (course / "gradebook.db").write_bytes(b"sqlite gradebook")
    (course / "submitted" / "alice" / "00_setup").mkdir(parents=True)
    (course / "submitted" / "alice" / "00_setup" / "00_setup.ipynb").write_text("{}")
    (course / "nbgrader_config.py").write_text("c = get_config()  # mine\n")
    (course / "source" / "ps1").mkdir()
    (course / "source" / "ps1" / "ps1.ipynb").write_text("{}")
    (course / "source" / "00_setup" / "00_setup.ipynb").write_text("stale")
    (course / "source" / "00_setup" / "data.csv").write_text("1,2")
    r = ne.export_nbgrader(course, only="00", force=True)
    assert r.config == "kept"
    assert (course / "gradebook.db").read_bytes() == b"sqlite gradebook"
    assert (course / "submitted" / "alice" / "00_setup" / "00_setup.ipynb").read_text() == "{}"
    assert (course / "nbgrader_config.py").read_text() == "c = get_config()  # mine\n"
    assert (course / "source" / "ps1" / "ps1.ipynb").read_text() == "{}"
    assert nbformat.read(str(course / "source" / "00_setup" / "00_setup.ipynb"), 4).cells  # rewritten
    assert (course / "source" / "00_setup" / "data.csv").read_text() == "1,2"


def test_export_bad_input(tmp_path):
    with pytest.raises(ValueError, match=r"only: no chapter matches '99_nope'; chapters are 00_setup, 01_serial_rnn"):
        ne.export_nbgrader(tmp_path / "c", only="01,99_nope")
    assert not (tmp_path / "c").exists()  # nothing written on a bad selection
    with pytest.raises(ValueError, match=r"points: no exported exercise 2\.1"):
        ne.export_nbgrader(tmp_path / "c", only="01", points={"2.1": 2})
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="dest: .* is not a directory"):
        ne.export_nbgrader(tmp_path / "file", force=True)
    with pytest.raises(TypeError, match="only"):
        ne.chapters(only=3)
    assert [p.stem for p in ne.chapters("01,02")] == ["01_serial_rnn", "02_bptt"]


# --------------------------------------------------------------------------- the real nbgrader
def _nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    bindir = Path(sys.executable).parent  # nbgrader runs `alembic` from PATH; the kernel is this venv's
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    r = subprocess.run([str(bindir / "nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def _submit(course: Path, student: str, wrong: dict[str, tuple[str, str]] | None = None) -> None:
    """The released notebook with every answer cell filled in from the source (a perfect
    student), except ``wrong``: grade id -> (text, replacement) in that answer."""
    released = nbformat.read(str(course / "release" / CHAPTER / f"{CHAPTER}.ipynb"), 4)
    source = nbformat.read(str(course / "source" / CHAPTER / f"{CHAPTER}.ipynb"), 4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
               if c.metadata["nbgrader"]["solution"]}
    for cell in released.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            assert "raise NotImplementedError" in cell.source  # the student version has no solution
            cell.source = answers[meta["grade_id"]]
            old, new = (wrong or {}).get(meta["grade_id"], ("", ""))
            if old:
                assert old in cell.source
                cell.source = cell.source.replace(old, new)
    folder = course / "submitted" / student / CHAPTER
    folder.mkdir(parents=True)
    nbformat.write(released, str(folder / f"{CHAPTER}.ipynb"))


@pytest.mark.slow
def test_real_nbgrader_autogrades_a_chapter(tmp_path):
    pytest.importorskip("nbgrader", reason="nbgrader is in the dev extra: pip install -e '.[dev]'")
    from nbgrader.api import Gradebook

    course = tmp_path / "course"
    r = subprocess.run([sys.executable, "-m", "course_lib", "export", "--nbgrader", str(course),
                        "--only", CHAPTER, "--points", "1.2=3"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"source/{CHAPTER}/{CHAPTER}.ipynb: 4 exercises, 6 points" in r.stdout
    _nbgrader(course, "generate_assignment", CHAPTER)
    assert (course / "release" / CHAPTER / f"{CHAPTER}.ipynb").is_file()
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        assert [a.name for a in gb.assignments] == [CHAPTER]
        for student in ("alice", "bob"):
            gb.add_student(student)
    _submit(course, "alice")
    # bob forgets the output nonlinearity: only exercise 1.2 (3 points) is wrong
    _submit(course, "bob", {"exercise_1_2_answer": ("Yhat = np.tanh(H @ params.Why)", "Yhat = H @ params.Why")})
    _nbgrader(course, "autograde", CHAPTER)

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = {}
        for student in ("alice", "bob"):
            nb = gb.find_submission_notebook(CHAPTER, CHAPTER, student)
            scores[student] = {g.name: (g.score, g.max_score) for g in nb.grades}
            assert gb.find_submission(CHAPTER, student).max_score == 6
        assert gb.find_submission(CHAPTER, "alice").score == 6
        assert gb.find_submission(CHAPTER, "bob").score == 3
    assert scores["alice"] == {"exercise_1_1": (1, 1), "exercise_1_2": (3, 3), "exercise_1_3": (1, 1),
                               "exercise_1_4": (1, 1)}
    assert scores["bob"] == {"exercise_1_1": (1, 1), "exercise_1_2": (0, 3), "exercise_1_3": (1, 1),
                             "exercise_1_4": (1, 1)}
    # what bob gets back: the grader's message, not a traceback into course_lib's hidden cases
    graded = nbformat.read(str(course / "autograded" / "bob" / CHAPTER / f"{CHAPTER}.ipynb"), 4)
    test = _by_id(graded)["exercise_1_2"]
    (error,) = [o for o in test.outputs if o.output_type == "error"]
    assert error.ename == "ExerciseFailed" and error.evalue.startswith("Exercise 1.2 failed")
    assert "Yhat" in error.evalue
    shown = "\n".join(error.traceback)
    assert "course_lib" not in shown and ".py" not in shown and "_cases" not in shown
