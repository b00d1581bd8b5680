"""The browser walk (part of ``make test``; alone: ``make test-browser``; about 10 minutes): in a real JupyterLab
with the kernel ``make lab`` registers, open every lecture notebook of a fresh copy of the course (a
git repository of the tracked files), Run All, move every control of every slider panel once, and
decode the PNG each panel shows after the move: it must hold as many axes as the panel's first
plot and be drawn (not blank). Every panel control must have a usable width. At the end, saving
the run notebooks must have left ``git status`` clean for tracked files.

A table per notebook (controls moved, complete plots, seconds) is written to
test-artifacts/browser/panels.md. COURSE_BROWSER_WALK=0 skips it (``-m "not browser"`` skips every browser test).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from . import labdriver as L

pytestmark = [pytest.mark.browser, pytest.mark.skipif(os.environ.get("COURSE_BROWSER_WALK") == "0",
                                                      reason="COURSE_BROWSER_WALK=0")]
ROOT = L.ROOT
ARTIFACTS = ROOT / "test-artifacts" / "browser"
LECTURES = L.notebook_names()
#: every panel control keeps at least this much usable width (slider track / select / checkbox box)
MIN_TRACK_PX = {"slider": 100, "dropdown": 60, "checkbox": 10}
ROWS: dict[str, dict] = {}


def _git(cwd: Path, *args: str) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"git {' '.join(args)}: {r.stderr}"
    return r.stdout


def _register_kernel(prefix: Path) -> str:
    """Install the kernelspec exactly as ``make kernel`` does (name and display name read from the
    Makefile) into ``prefix``; returns its display name."""
    m = re.search(r'ipykernel install .*--name (\S+) --display-name "([^"]+)"', (ROOT / "Makefile").read_text())
    assert m, "the Makefile's kernel target is not found"
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", m.group(1),
                    "--display-name", m.group(2)], check=True, capture_output=True, timeout=120)
    return m.group(2)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    if not os.path.exists(L.CHROMIUM):
        pytest.skip(f"{L.CHROMIUM} is missing (make test installs Debian's chromium when apt-get is usable)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
    tmp = tmp_path_factory.mktemp("walk")
    served = tmp / "course"
    for rel in _git(ROOT, "ls-files", "-z").split("\0"):
        if rel and (ROOT / rel).is_file():
            (served / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, served / rel)
    _git(served, "init", "-q")
    _git(served, "add", "-A")
    _git(served, "-c", "user.name=walk", "-c", "user.email=walk@localhost", "commit", "-qm", "fresh clone")
    display = _register_kernel(tmp / "kernel-prefix")
    env = {"JUPYTER_PATH": str(tmp / "kernel-prefix" / "share" / "jupyter"), "PYTHONPATH": str(ROOT)}
    with L.lab_server(served, tmp, env_extra=env) as server, L.browser(tmp) as page:
        yield {"served": served, "server": server, "page": page, "display": display}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    lines = ["| notebook | controls moved | complete plots after moves | narrowest control (px) | Run All (s) | moves (s) |",
             "|---|---|---|---|---|---|"]
    for name, r in ROWS.items():
        lines.append(f"| {name} | {r['moved']} | {r['complete']} | {r['narrowest']:.0f} | {r['run_all']:.0f} | "
                     f"{r['moves']:.0f} |")
    (ARTIFACTS / "panels.md").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("name", LECTURES)
def test_every_control_redraws_a_complete_plot(course, name):
    page, server = course["page"], course["server"]
    try:
        run_all = L.run_all(page, server, f"notebooks/{name}")
        assert not L.error_texts(page), L.error_texts(page)[:1]
        t0 = time.monotonic()
        moves = L.walk_panels(page, log=lambda s: print(s, flush=True))
        ROWS[name] = {"moved": len(moves), "complete": sum(L.complete(m) for m in moves),
                      "narrowest": min((m["width"] for m in moves), default=0.0), "run_all": run_all,
                      "moves": time.monotonic() - t0}
        page.keyboard.press("Control+s")  # what a student's save (or autosave) does
        time.sleep(2)
    except AssertionError:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{name}_walk_failed.png"))
        raise
    finally:
        L.shutdown_kernels(server["base"], server["token"])
    has_panel = name[:2] != "01"  # chapter 01 has no slider panel
    assert bool(moves) == has_panel, (name, len(moves))
    bad = [m for m in moves if not L.complete(m)]
    assert not bad, [(m["control"], m["value"], m["image"], m["reference"]) for m in bad]
    narrow = [(m["control"], round(m["width"])) for m in moves if m["width"] < MIN_TRACK_PX[m["kind"]]]
    assert not narrow, f"{name}: controls too narrow to use: {narrow}"
    for p in {m["panel"] for m in moves}:
        assert any(m["text"] != m["text_before"] for m in moves if m["panel"] == p), \
            f"{name} panel {p}: no move changed the printed line"


def test_running_and_saving_every_lecture_leaves_git_clean(course):
    """After Run All + save of every lecture notebook with the kernel ``make lab`` registers, the
    tracked files are as committed (the server's save hook keeps unchanged lectures as they are)."""
    assert set(ROWS) == set(LECTURES), f"the walk did not run every lecture: {sorted(set(LECTURES) - set(ROWS))}"
    status = _git(course["served"], "status", "--porcelain", "--untracked-files=no")
    assert status == "", f"tracked files changed by running the lectures:\n{status}"
