"""What an installed course needs at run time travels inside the wheel: every data file under course_lib/ is
named by pyproject's [tool.setuptools.package-data], and the notebooks' stored records are read from there.
The route that runs every notebook from a real wheel is tests/installed/run_installed.py (make test-installed);
its rule for each folder is tested here on small notebooks."""
import shutil
import tomllib
from pathlib import Path

import nbformat
import pytest

from course_lib.experiments import scan_gpu
from tests.installed import run_installed

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "course_lib"
CODE = ("*.py", "*.pyc", "*.nbi", "*.nbc")


def _globs() -> list[str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"].get("package-data", {}).get("course_lib", [])


def _shipped(rel: str, globs: list[str], package: Path = PACKAGE) -> bool:
    """Whether setuptools' package-data ``globs`` (pathlib glob rules: ``*`` stays inside one folder, ``**``
    crosses folders) take the file ``rel`` under ``package``."""
    return any(package / rel in set(package.glob(g)) for g in globs)


def test_every_data_file_of_the_package_is_package_data():
    files = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and not any(p.match(c) for c in CODE)]
    assert files, "expected the course's stored records under course_lib/"
    missing = [f for f in files if not _shipped(f, _globs())]
    assert not missing, f"data files a wheel would leave out (add them to [tool.setuptools.package-data]): {missing}"


def test_the_glob_check_sees_a_file_left_out(tmp_path):
    (tmp_path / "recorded" / "machine").mkdir(parents=True)
    for rel in ("recorded/a.json", "recorded/machine/b.json", "recorded/c.csv"):
        (tmp_path / rel).write_text("{}")
    assert _shipped("recorded/a.json", ["recorded/*.json"], tmp_path)
    assert not _shipped("recorded/c.csv", ["recorded/*.json"], tmp_path)
    assert not _shipped("recorded/machine/b.json", ["recorded/*.json"], tmp_path)   # * stays in its folder
    assert _shipped("recorded/machine/b.json", ["recorded/**/*.json"], tmp_path)


def test_chapter_08s_stored_gpu_run_is_inside_the_package():
    assert scan_gpu.RECORD.is_relative_to(PACKAGE) and scan_gpu.RECORD.is_file()
    assert _shipped(scan_gpu.RECORD.relative_to(PACKAGE).as_posix(), _globs())
    assert {r["kernel"] for r in scan_gpu.record()["table"]} == set(scan_gpu.KERNELS)


def _notebook(folder: Path, name: str, *sources: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / name
    nbformat.write(nb, path)
    return path


def test_each_folders_rule(tmp_path):
    ok = _notebook(tmp_path / "notebooks", "01_ok.ipynb", "x = 1", "print(x + 1)")
    bad = _notebook(tmp_path / "solutions", "02_bad.ipynb", "x = 1", "raise ValueError('x: expected a vector')")
    todo = _notebook(tmp_path / "exercises", "03_todo.ipynb", "raise NotImplementedError('Exercise 3.1')", "y = 2")
    wrong = _notebook(tmp_path / "exercises", "04_wrong.ipynb", "raise NotImplementedError('Exercise 4.1')", "1 / 0")
    done = _notebook(tmp_path / "exercises", "05_done.ipynb", "y = 2")
    assert run_installed.execute_one(ok, 60) == ""
    assert run_installed.execute_one(bad, 60) == "cell 1: ValueError: x: expected a vector"
    assert run_installed.execute_one(todo, 60) == ""
    assert run_installed.execute_one(wrong, 60).startswith("errors other than NotImplementedError: cell 1: "
                                                            "ZeroDivisionError")
    assert "raised none" in run_installed.execute_one(done, 60)


def test_copies_are_the_committed_worksheets_only(tmp_path):
    copies = run_installed.copy_worksheets(tmp_path, ["notebooks", "exercises"])
    names = {f"{p.parent.name}/{p.name}" for p in copies}
    assert names == {f"{f}/{p.name}" for f in ("notebooks", "exercises") for p in (ROOT / f).glob("[0-9][0-9]_*.ipynb")}
    assert all(not p.is_relative_to(ROOT) for p in copies)
    shutil.rmtree(tmp_path / "notebooks")


def test_the_route_refuses_a_folder_inside_the_checkout(capsys):
    with pytest.raises(SystemExit):
        run_installed.main(["--keep", str(ROOT / "build" / "installed")])
    assert "must be outside the checkout" in capsys.readouterr().err
