"""What an instructor sees from `make grade` (python -m course_lib grade --exercises): the statuses
explained, a summary line at the end, and no kernel warning per notebook on stderr."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_grade_explains_its_statuses_sums_up_and_is_quiet():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "course_lib", "grade", "--exercises", "--only", "00_setup"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout.splitlines()
    assert out[0].startswith("PASS: ") and "RUNS: an unsolved worksheet ran to the end" in r.stdout, out[:2]
    assert any(line.startswith("PASS  solutions/00_setup.ipynb") for line in out), out
    assert any(line.startswith("RUNS  exercises/00_setup.ipynb") for line in out), out
    assert re.fullmatch(r"2 notebooks in \d+ s: 1 PASS, 1 RUNS, 0 FAIL -- all good", out[-1]), out[-1]
    assert "without encryption" not in r.stderr and "WARNING" not in r.stderr, r.stderr[-500:]
    assert not list(ROOT.glob("**/kernel-ipc*")), "kernel sockets left in the course folder"
