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


def test_export_nbgrader_command(tmp_path, capsys):
    course = tmp_path / "course"
    assert cli.main(["export", "--nbgrader", str(course), "--only", "00,01", "--points", "1.4=2"]) == 0
    out = capsys.readouterr().out
    assert "source/00_setup/00_setup.ipynb: 1 exercises, 1 points (0.1: 1)" in out
    assert "source/01_serial_rnn/01_serial_rnn.ipynb: 4 exercises, 5 points" in out and "1.4: 2" in out
    assert "nbgrader_config.py: written" in out
    assert (course / "source" / "01_serial_rnn" / "01_serial_rnn.ipynb").is_file()
    (course / "gradebook.db").write_bytes(b"grades")
    assert cli.main(["export", "--nbgrader", str(course), "--only", "00"]) == 2  # not empty: refused
    assert "not empty" in capsys.readouterr().err
    assert cli.main(["export", "--nbgrader", str(course), "--only", "00", "--force"]) == 0
    assert "nbgrader_config.py: kept" in capsys.readouterr().out
    assert (course / "gradebook.db").read_bytes() == b"grades"
    assert cli.main(["export", "--nbgrader", str(tmp_path / "new"), "--only", "77_nope"]) == 2
    assert "no chapter matches '77_nope'" in capsys.readouterr().err
    r = subprocess.run([sys.executable, "-m", "course_lib", "export", "--nbgrader", str(tmp_path / "x"),
                        "--points", "1.4"], capture_output=True, text=True)
    assert r.returncode == 2 and "expected EXERCISE=POINTS such as 1.2=3, got '1.4'" in r.stderr
