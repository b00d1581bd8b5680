"""The exercise generator and the notebook-pair tools, on small synthetic notebooks."""
import os
import stat

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
    assert ex.cells[4].metadata["tags"] == ["solution", "raises-exception", "answer:9.1"]
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


# --------------------------------------------------------------------------- exercise builder
# a missing or corrupt half is reported as such (not as "edited"); read-only folders and corrupt solutions give a
# status per notebook and the rest is built
@pytest.fixture
def course_of_two(tmp_path):
    (tmp_path / "solutions").mkdir()
    for name in ("09_demo", "10_other"):
        (tmp_path / "solutions" / f"{name}.py").write_text("# placeholder pair\n")
        nbformat.write(make_solution_nb(), tmp_path / "solutions" / f"{name}.ipynb")
    return tmp_path


def statuses(course_of_two, **kw):
    return {r.path.name: r.status for r in authoring.build_exercises(root=course_of_two, **kw)}


@pytest.mark.timeout(60)
def test_deleted_half_is_restored_not_called_edited(course_of_two):
    assert set(statuses(course_of_two).values()) == {"written"}
    (course_of_two / "exercises" / "09_demo.py").unlink()
    s = statuses(course_of_two)["09_demo.ipynb"]
    assert s.startswith("written") and "restored the missing 09_demo.py" in s
    (course_of_two / "exercises" / "09_demo.ipynb").unlink()
    s = statuses(course_of_two)["09_demo.ipynb"]
    assert s.startswith("written") and "restored the missing 09_demo.ipynb" in s


@pytest.mark.timeout(60)
def test_missing_ipynb_with_edited_py_is_refused_with_the_reason(course_of_two):
    statuses(course_of_two)
    py = course_of_two / "exercises" / "09_demo.py"
    py.write_text(py.read_text().replace("# YOUR CODE HERE", "return x + h  # mine"))
    (course_of_two / "exercises" / "09_demo.ipynb").unlink()
    s = statuses(course_of_two)["09_demo.ipynb"]
    assert s.startswith("refused") and "is missing" in s and "edited" not in s.split(";")[0].split("(")[0]
    assert "return x + h  # mine" in py.read_text()


@pytest.mark.timeout(60)
def test_corrupt_half_is_reported_as_corrupt(course_of_two):
    statuses(course_of_two)
    (course_of_two / "exercises" / "09_demo.ipynb").write_text("{ not json")
    s = statuses(course_of_two)["09_demo.ipynb"]
    assert s.startswith("refused") and "not a readable notebook" in s
    forced = authoring.build_exercises(root=course_of_two, force=True, only="09")[0]
    assert forced.status.startswith("overwritten") and forced.backup.read_text() == "{ not json"


@pytest.mark.timeout(60)
def test_one_corrupt_solution_does_not_abort_the_build(course_of_two):
    (course_of_two / "solutions" / "09_demo.ipynb").write_text("{ broken")
    s = statuses(course_of_two)
    assert s["09_demo.ipynb"].startswith("failed") and "solutions/09_demo.ipynb" in s["09_demo.ipynb"]
    assert s["10_other.ipynb"] == "written"
    nb = make_solution_nb()
    nb.cells[3].source = "### BEGIN SOLUTION\nx = 1\n"           # malformed markers
    nbformat.write(nb, course_of_two / "solutions" / "09_demo.ipynb")
    assert "without '### END SOLUTION'" in statuses(course_of_two)["09_demo.ipynb"]


@pytest.mark.timeout(60)
@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_folders_give_a_status_not_a_traceback(course_of_two):
    os.chmod(course_of_two, stat.S_IRUSR | stat.S_IXUSR)
    try:
        s = statuses(course_of_two)
    finally:
        os.chmod(course_of_two, stat.S_IRWXU)
    assert all(v.startswith("failed (cannot create") for v in s.values())
    statuses(course_of_two)
    ex = course_of_two / "exercises"
    (ex / "09_demo.py").unlink()
    os.chmod(ex, stat.S_IRUSR | stat.S_IXUSR)
    try:
        s = statuses(course_of_two)
    finally:
        os.chmod(ex, stat.S_IRWXU)
    assert s["09_demo.ipynb"].startswith("failed (cannot write")


@pytest.mark.timeout(60)
def test_read_only_files_give_a_status(course_of_two, monkeypatch):
    statuses(course_of_two)
    (course_of_two / "exercises" / "09_demo.py").unlink()
    real = type(course_of_two).write_text

    def deny(self, *a, **k):
        if self.parent.name == "exercises":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *a, **k)

    monkeypatch.setattr(type(course_of_two), "write_text", deny)
    s = statuses(course_of_two)
    assert s["09_demo.ipynb"].startswith("failed (cannot write") and "Permission denied" in s["09_demo.ipynb"]


@pytest.mark.parametrize("call, name", [
    (lambda c: authoring.build_exercises(root=c, force="yes"), "force"),
    (lambda c: authoring.build_exercises(root=c, only=7), "only"),
    (lambda c: authoring.build_exercises(root=c / "nope"), "root"),
    (lambda c: authoring.read_ipynb(c / "missing.ipynb"), "path"),
    (lambda c: authoring.read_py(None), "path"),
    (lambda c: authoring.cells_checksum({}), "nb"),
    (lambda c: authoring.has_outputs(None), "nb"),
    (lambda c: authoring.error_outputs("x"), "nb"),
    (lambda c: authoring.exercise_path(None), "solution_ipynb"),
    (lambda c: authoring.build_exercise(None), "solution_nb"),
    (lambda c: authoring.pair_problems(c / "no.py", c / "no.ipynb"), "py"),
    (lambda c: authoring.execute_notebook(nbformat.v4.new_notebook(), c, timeout=0), "timeout"),
])
def test_public_helpers_name_bad_arguments(course_of_two, call, name):
    with pytest.raises((TypeError, ValueError, FileNotFoundError)) as info:
        call(course_of_two)
    assert str(info.value).startswith(name), str(info.value)
