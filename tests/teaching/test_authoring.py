"""The exercise generator and the notebook-pair tools, on small synthetic notebooks."""
import json
from pathlib import Path

import nbformat
import pytest

from course_lib.teaching import authoring

SOLUTION_CELL = '''def forward_step(x, h):
    """one step"""
    ### BEGIN SOLUTION
    return x + h
    ### END SOLUTION
'''


def make_solution_nb():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Worksheet 9"),
        nbformat.v4.new_code_cell("import numpy as np"),
        nbformat.v4.new_markdown_cell("## Exercise 9.1 · A step"),
        nbformat.v4.new_code_cell(SOLUTION_CELL),
        nbformat.v4.new_code_cell("from course_lib.teaching.checks import setup_checks\nch00.check_intensity(forward_step)"),
        nbformat.v4.new_markdown_cell("Explain:\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION"),
        nbformat.v4.new_code_cell("# Exercise 9.2 in the cell itself\nanswer = 1\n### BEGIN SOLUTION\nanswer = 2\n### END SOLUTION"),
    ]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="hello")]
    for i, c in enumerate(nb.cells):
        c.id = f"cell-{i}"
    return nb


def test_build_exercise_replaces_regions_and_tags_cells():
    sol = make_solution_nb()
    ex = authoring.build_exercise(sol, "09_demo.ipynb")
    assert ex.cells[0].id == "worksheet-banner" and "Your worksheet" in ex.cells[0].source
    body = ex.cells[4].source
    assert "return x + h" not in body and '"""one step"""' in body
    assert '    # YOUR CODE HERE\n    raise NotImplementedError("Exercise 9.1: replace this line with your code")' in body
    assert ex.cells[4].metadata["tags"] == ["solution", "raises-exception"]
    assert ex.cells[5].metadata["tags"] == ["raises-exception"]  # the check cell
    assert "YOUR ANSWER HERE" in ex.cells[6].source and "Because" not in ex.cells[6].source
    assert 'NotImplementedError("Exercise 9.2:' in ex.cells[7].source and "answer = 2" not in ex.cells[7].source
    assert all(c.get("outputs", []) == [] for c in ex.cells if c.cell_type == "code")
    assert ex.metadata["course_lib"]["generated_from"] == "solutions/09_demo.ipynb"
    assert ex.metadata["course_lib"]["cells_sha256"] == authoring.cells_checksum(ex)
    assert "return x + h" in sol.cells[3].source, "the solution notebook itself is untouched"
    nbformat.validate(ex)


@pytest.mark.parametrize("source, message", [
    ("### BEGIN SOLUTION\nx = 1\n", "without '### END SOLUTION'"),
    ("x = 1\n### END SOLUTION\n", "without '### BEGIN SOLUTION'"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n", "nested"),
])
def test_malformed_markers_are_errors(source, message):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source)]
    with pytest.raises(ValueError, match=message):
        authoring.build_exercise(nb, "x.ipynb")


@pytest.fixture
def course(tmp_path):
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "09_demo.py").write_text("# placeholder pair\n")
    nbformat.write(make_solution_nb(), tmp_path / "solutions" / "09_demo.ipynb")
    return tmp_path


def test_build_writes_a_jupytext_pair(course):
    assert [r.status for r in authoring.build_exercises(root=course)] == ["written"]
    ipynb = course / "exercises" / "09_demo.ipynb"
    py = ipynb.with_suffix(".py")
    assert authoring.pair_problems(py, ipynb) == []
    assert "jupytext_version" not in py.read_text(), "the .py must not depend on the jupytext version"
    assert nbformat.read(ipynb, as_version=4).metadata["jupytext"] == {"formats": "ipynb,py:percent"}
    assert [r.status for r in authoring.build_exercises(root=course)] == ["unchanged"]


def test_build_never_destroys_student_work(course):
    authoring.build_exercises(root=course)
    target = course / "exercises" / "09_demo.ipynb"
    py = target.with_suffix(".py")

    # running the notebook (outputs only) does not count as an edit
    nb = nbformat.read(target, as_version=4)
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", text="ran")]
    nbformat.write(nb, target)
    assert authoring.build_exercises(root=course)[0].status == "written"

    # a student edit in the .ipynb is detected: refused without --force
    nb = nbformat.read(target, as_version=4)
    nb.cells[4].source = nb.cells[4].source.replace("# YOUR CODE HERE", "return x + h  # my answer")
    nbformat.write(nb, target)
    edited = target.read_text()
    refused = authoring.build_exercises(root=course)
    assert refused[0].status.startswith("refused")
    assert target.read_text() == edited

    # --force keeps a backup of exactly what the student had, both halves of the pair
    py_before = py.read_text()
    forced = authoring.build_exercises(root=course, force=True)
    assert forced[0].status.startswith("overwritten") and forced[0].backup.exists()
    assert forced[0].backup.read_text() == edited
    assert forced[0].backup.with_suffix(".py").read_text() == py_before
    assert "my answer" not in target.read_text()


def test_an_edit_in_the_py_half_is_detected_too(course):
    authoring.build_exercises(root=course)
    py = course / "exercises" / "09_demo.py"
    py.write_text(py.read_text().replace("# YOUR CODE HERE", "return x + h  # edited in an editor"))
    edited = py.read_text()
    assert authoring.build_exercises(root=course)[0].status.startswith("refused")
    assert py.read_text() == edited


def test_foreign_or_corrupt_worksheet_counts_as_edited(course):
    (course / "exercises").mkdir()
    target = course / "exercises" / "09_demo.ipynb"
    target.write_text("{ not json")
    assert authoring.build_exercises(root=course)[0].status.startswith("refused")
    assert target.read_text() == "{ not json"


def test_pair_problems_and_outputs(tmp_path):
    py = tmp_path / "09_demo.py"
    py.write_text('# %% [markdown]\n# Title\n\n# %% tags=["nbval-ignore-output"]\nx = 1\n')
    ipynb = tmp_path / "09_demo.ipynb"
    assert "missing" in authoring.pair_problems(py, ipynb)[0]
    authoring.sync_notebook(py, ipynb, execute=False)
    assert authoring.pair_problems(py, ipynb) == []
    assert not authoring.has_outputs(authoring.read_ipynb(ipynb))
    py.write_text('# %% [markdown]\n# Title\n\n# %%\nx = 2\n')
    problems = authoring.pair_problems(py, ipynb)
    assert problems and "cell 1 differs" in problems[0]


def test_notebook_pairs_bad_folder(tmp_path):
    with pytest.raises(ValueError, match="folder: expected a directory"):
        authoring.notebook_pairs(tmp_path / "nope")


def test_error_outputs():
    nb = nbformat.v4.new_notebook()
    c = nbformat.v4.new_code_cell("x")
    c.outputs = [nbformat.v4.new_output("error", ename="NotImplementedError", evalue="Exercise 1.1", traceback=[])]
    nb.cells = [c]
    assert authoring.error_outputs(nb) == [(0, "NotImplementedError", "Exercise 1.1")]


def test_execution_helpers_bad_input(tmp_path):
    nb = nbformat.v4.new_notebook()
    with pytest.raises(ValueError, match="cwd: expected an existing directory"):
        authoring.execute_notebook(nb, tmp_path / "nope")
    with pytest.raises(TypeError, match="nb: expected an nbformat notebook, got dict"):
        authoring.execute_notebook({}, tmp_path)
    with pytest.raises(FileNotFoundError, match="py: expected a jupytext py:percent file"):
        authoring.sync_notebook(tmp_path / "01_x.py", tmp_path / "01_x.ipynb")
    with pytest.raises(FileNotFoundError, match="path: expected a notebook file"):
        authoring.run_notebook_report(tmp_path / "01_x.ipynb")


def test_execute_and_report_on_a_tiny_notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("print('Exercise 9.1 passed: 1/1 cases')"),
                nbformat.v4.new_code_cell("raise NotImplementedError('Exercise 9.2')")]
    nb.cells[1].metadata["tags"] = ["raises-exception"]
    path = tmp_path / "09_tiny.ipynb"
    nbformat.write(nb, path)
    report = authoring.run_notebook_report(path, timeout=120)
    assert report["checks_passed"] == 1
    assert report["errors"] == ["cell 1: NotImplementedError"]
