"""python -m course_lib lab: make lab's three steps without make (the server start mocked; --dry-run for real)."""
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib import __main__ as cli
from course_lib.teaching import launch

ROOT = Path(__file__).resolve().parents[2]


def test_dry_run_prints_the_commands_and_starts_nothing():
    r = subprocess.run([sys.executable, "-m", "course_lib", "lab", "--dry-run", "--port", "8899"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line[:5] for line in lines] == ["[1/3]", "[2/3]", "[3/3]"], r.stdout
    assert "ipykernel install --sys-prefix --name python3 --display-name \"Python 3\"" in lines[1]
    assert f"{sys.executable} -m jupyterlab --ip=127.0.0.1 --port=8899 --no-browser" in lines[2]
    assert f"--ServerApp.root_dir={ROOT}" in lines[2] and f"--config={ROOT / 'jupyter_server_config.json'}" in lines[2]


def test_lab_registers_the_kernel_then_serves_the_course(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(launch.subprocess, "call", lambda cmd, **kw: calls.append(cmd) or 0)
    assert cli.main(["lab", "--port", "8890"]) == 0
    kernel, lab = calls
    assert kernel == launch.kernel_command() and kernel[:3] == [sys.executable, "-m", "ipykernel"]
    assert lab == launch.lab_command(8890) and "--ip=127.0.0.1" in lab and "--port=8890" in lab
    out = capsys.readouterr().out
    assert "registered kernel 'python3'" in out and "http://127.0.0.1:8890/lab" in out


def test_a_failed_kernel_registration_stops_before_the_server(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(launch.subprocess, "call", lambda cmd, **kw: calls.append(cmd) or 1)
    assert launch.main(port=8890) == 1
    assert len(calls) == 1 and "registering the kernel failed" in capsys.readouterr().err


def test_without_the_course_installed_it_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setattr(launch, "missing_modules", lambda names=launch.NEEDED: ["jupyterlab"])
    monkeypatch.setattr(launch.subprocess, "call", lambda *a, **k: pytest.fail("nothing may run"))
    assert launch.main() == 1
    err = capsys.readouterr().err
    assert "lacks jupyterlab" in err and "pip install -c constraints.txt -e ." in err


def test_a_config_is_passed_only_where_there_is_one(tmp_path):
    assert not any(c.startswith("--config") for c in launch.lab_command(8888, tmp_path))
    assert f"--ServerApp.root_dir={tmp_path}" in launch.lab_command(8888, tmp_path)


@pytest.mark.parametrize("port", [0, 70000, "8888", True, 8.5])
def test_a_bad_port_is_named(port):
    with pytest.raises(ValueError, match="port: expected a whole number"):
        launch.lab_command(port)


def test_a_missing_root_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="root: .* is not a folder"):
        launch.lab_command(8888, tmp_path / "nowhere")
