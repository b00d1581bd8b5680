import subprocess
import sys

from course_lib import __main__ as cli
from course_lib.teaching import authoring


def test_report_command(capsys):
    assert cli.main(["report"]) == 0
    out = capsys.readouterr().out
    assert "cores" in out and "CUDA" in out and "BLAS" in out


def test_exercises_build_leaves_committed_worksheets_unchanged(capsys):
    before = {p: p.read_bytes() for p in (authoring.COURSE_ROOT / "exercises").glob("*.*")}
    assert cli.main(["exercises", "build"]) == 0
    out = capsys.readouterr().out
    assert "exercises/00_setup.ipynb: unchanged" in out
    assert before == {p: p.read_bytes() for p in (authoring.COURSE_ROOT / "exercises").glob("*.*")}


def test_grade_runs_a_worksheet_headless(capsys):
    assert cli.main(["grade", "--exercises", "--only", "00_setup"]) == 0
    out = capsys.readouterr().out
    assert "PASS  solutions/00_setup.ipynb" in out and "checks passed:  1" in out
    assert "RUNS  exercises/00_setup.ipynb" in out


def test_bad_command_line():
    r = subprocess.run([sys.executable, "-m", "course_lib", "exercises", "destroy"], capture_output=True, text=True)
    assert r.returncode == 2 and "invalid choice: 'destroy'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "course_lib"], capture_output=True, text=True)
    assert r.returncode == 2 and "required" in r.stderr
