"""Issue 18, teaching.authoring: the exercise builder reports a missing or corrupt half as such (not as
"edited"), survives read-only folders and corrupt solutions with a status per notebook, and builds the rest."""
import os
import stat

import nbformat
import pytest

from course_lib.teaching import authoring
from test_authoring import make_solution_nb

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def course(tmp_path):
    (tmp_path / "solutions").mkdir()
    for name in ("09_demo", "10_other"):
        (tmp_path / "solutions" / f"{name}.py").write_text("# placeholder pair\n")
        nbformat.write(make_solution_nb(), tmp_path / "solutions" / f"{name}.ipynb")
    return tmp_path


def statuses(course, **kw):
    return {r.path.name: r.status for r in authoring.build_exercises(root=course, **kw)}


def test_deleted_half_is_restored_not_called_edited(course):
    assert set(statuses(course).values()) == {"written"}
    (course / "exercises" / "09_demo.py").unlink()
    s = statuses(course)["09_demo.ipynb"]
    assert s.startswith("written") and "restored the missing 09_demo.py" in s
    (course / "exercises" / "09_demo.ipynb").unlink()
    s = statuses(course)["09_demo.ipynb"]
    assert s.startswith("written") and "restored the missing 09_demo.ipynb" in s


def test_missing_ipynb_with_edited_py_is_refused_with_the_reason(course):
    statuses(course)
    py = course / "exercises" / "09_demo.py"
    py.write_text(py.read_text().replace("# YOUR CODE HERE", "return x + h  # mine"))
    (course / "exercises" / "09_demo.ipynb").unlink()
    s = statuses(course)["09_demo.ipynb"]
    assert s.startswith("refused") and "is missing" in s and "edited" not in s.split(";")[0].split("(")[0]
    assert "return x + h  # mine" in py.read_text()


def test_corrupt_half_is_reported_as_corrupt(course):
    statuses(course)
    (course / "exercises" / "09_demo.ipynb").write_text("{ not json")
    s = statuses(course)["09_demo.ipynb"]
    assert s.startswith("refused") and "not a readable notebook" in s
    forced = authoring.build_exercises(root=course, force=True, only="09")[0]
    assert forced.status.startswith("overwritten") and forced.backup.read_text() == "{ not json"


def test_one_corrupt_solution_does_not_abort_the_build(course):
    (course / "solutions" / "09_demo.ipynb").write_text("{ broken")
    s = statuses(course)
    assert s["09_demo.ipynb"].startswith("failed") and "solutions/09_demo.ipynb" in s["09_demo.ipynb"]
    assert s["10_other.ipynb"] == "written"
    nb = make_solution_nb()
    nb.cells[3].source = "### BEGIN SOLUTION\nx = 1\n"           # malformed markers
    nbformat.write(nb, course / "solutions" / "09_demo.ipynb")
    assert "without '### END SOLUTION'" in statuses(course)["09_demo.ipynb"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_folders_give_a_status_not_a_traceback(course):
    os.chmod(course, stat.S_IRUSR | stat.S_IXUSR)
    try:
        s = statuses(course)
    finally:
        os.chmod(course, stat.S_IRWXU)
    assert all(v.startswith("failed (cannot create") for v in s.values())
    statuses(course)
    ex = course / "exercises"
    (ex / "09_demo.py").unlink()
    os.chmod(ex, stat.S_IRUSR | stat.S_IXUSR)
    try:
        s = statuses(course)
    finally:
        os.chmod(ex, stat.S_IRWXU)
    assert s["09_demo.ipynb"].startswith("failed (cannot write")


def test_read_only_files_give_a_status(course, monkeypatch):
    statuses(course)
    (course / "exercises" / "09_demo.py").unlink()
    real = type(course).write_text

    def deny(self, *a, **k):
        if self.parent.name == "exercises":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *a, **k)

    monkeypatch.setattr(type(course), "write_text", deny)
    s = statuses(course)
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
def test_public_helpers_name_bad_arguments(course, call, name):
    with pytest.raises((TypeError, ValueError, FileNotFoundError)) as info:
        call(course)
    assert str(info.value).startswith(name), str(info.value)
