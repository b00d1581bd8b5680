"""constraints.txt (the known-good versions the Makefile installs with) agrees with pyproject.toml: every
requirement pyproject names has exactly one pin, and the pin satisfies pyproject's specifier."""
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib import __main__ as cli
from course_lib.teaching import constraints

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = """[project]
name = "x"
dependencies = ["numpy>=1.26", "numba>=0.60"]
[project.optional-dependencies]
gpu = ["cupy-cuda12x>=13"]
bench = ["torch==2.13.0"]
dev = ["PyYAML>=6"]
"""


def _files(tmp_path, pins: str):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "constraints.txt").write_text("# header\n" + pins)
    return tmp_path / "pyproject.toml", tmp_path / "constraints.txt"


def test_the_repository_constraints_agree_with_pyproject():
    assert constraints.disagreements(ROOT / "pyproject.toml", ROOT / "constraints.txt") == []


def test_the_repository_constraints_leave_out_the_course_and_torch():
    pins = constraints.read_pins(ROOT / "constraints.txt")
    assert not {"parallel-rnns-course", "torch"} & set(pins)
    assert all(len(v) == 1 for v in pins.values())
    head = (ROOT / "constraints.txt").read_text().splitlines()[:6]
    assert any("python -m course_lib constraints --write" in line for line in head), head


def test_agreeing_files(tmp_path):
    assert constraints.disagreements(*_files(tmp_path, "numpy==2.4.6\nnumba==0.68.1\npyyaml==6.0.4\n")) == []


@pytest.mark.parametrize("pins, says", [
    ("numpy==2.4.6\npyyaml==6.0.4\n", "numba (dependencies: numba>=0.60) has no pin"),
    ("numpy==1.25.0\nnumba==0.68.1\nPyYAML==6.0.4\n", "numpy==1.25.0 does not satisfy pyproject's dependencies"),
    ("numpy==2.4.6\nnumba==0.68.1\nnumba==0.61.0\npyyaml==6.0.4\n", "numba is pinned 2 times"),
    ("numpy==2.4.6\nnumba==0.68.1\nPyYAML==5.4\n", "PyYAML==5.4 does not satisfy pyproject's dev requirement"),
    ("numpy==2.4.6\nnumba==0.68.1\npyyaml==6.0.4\ncupy-cuda12x==12.0\n", "cupy-cuda12x==12.0 does not satisfy"),
])
def test_each_disagreement_is_named(tmp_path, pins, says):
    found = constraints.disagreements(*_files(tmp_path, pins))
    assert len(found) == 1 and says in found[0], found


def test_a_line_that_is_not_an_exact_pin_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"path: line 3 .* not an exact pin"):
        constraints.disagreements(*_files(tmp_path, "numpy==2.4.6\nnumba>=0.60\n"))
    with pytest.raises(FileNotFoundError, match="path: no constraints file"):
        constraints.read_pins(tmp_path / "nothing.txt")


def test_freeze_pins_this_environment_without_the_course():
    lines = constraints.freeze(sys.executable)
    names = [line.split("==")[0].lower() for line in lines]
    assert len(set(names)) == len(names)
    assert "numpy" in names and "parallel-rnns-course" not in names and "torch" not in names
    import numpy

    assert f"numpy=={numpy.__version__}" in lines


def test_write_then_check_round_trip(tmp_path):
    path = constraints.write(tmp_path / "c.txt", sys.executable)
    pins = constraints.read_pins(path)
    import numba

    assert pins["numba"] == [numba.__version__]
    assert constraints.off_pins({"numba": numba.__version__}, path) == []
    assert constraints.off_pins({"numba": "0.1.0", "not-pinned": "1.0"}, path) == [f"numba 0.1.0 (pinned {numba.__version__})"]


def test_the_command_checks_the_repository(capsys):
    assert cli.main(["constraints"]) == 0
    assert "agrees with pyproject.toml" in capsys.readouterr().out


def test_every_make_install_uses_the_constraints_unless_latest():
    targets = ["install-lab", "install-test", f"{sys.prefix}/.book-installed"]
    dry = subprocess.run(["make", "-n", "-B", *targets, f"VENV={sys.prefix}"], cwd=ROOT, capture_output=True, text=True)
    installs = [line for line in dry.stdout.splitlines() if "pip" in line and " install " in line]
    assert len(installs) == 3 and all("-c constraints.txt" in line for line in installs), dry.stdout
    latest = subprocess.run(["make", "-n", "-B", *targets, "LATEST=1", f"VENV={sys.prefix}"], cwd=ROOT,
                            capture_output=True, text=True)
    installs = [line for line in latest.stdout.splitlines() if "pip" in line and " install " in line]
    assert len(installs) == 3 and not any("constraints.txt" in line for line in installs), latest.stdout
    assert all("--upgrade" in line for line in installs), latest.stdout
