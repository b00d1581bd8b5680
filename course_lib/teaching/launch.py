"""``python -m course_lib lab``: what ``make lab`` does, for machines without ``make`` (Windows without WSL,
macOS without the Xcode command-line tools).

Run it with the Python the course is installed in (``pip install -c constraints.txt -e .`` in a checkout)::

    python -m course_lib lab              # register the kernel, start JupyterLab on http://127.0.0.1:8888/lab
    python -m course_lib lab --dry-run    # print the steps and the commands, start nothing

Like ``make lab`` it registers the kernel ``python3`` ("Python 3") in the running environment and serves the
course folder with the course's ``jupyter_server_config.json`` (lecture outputs kept on save, helper files
hidden), on 127.0.0.1 only.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from .notebook_io import COURSE_ROOT

__all__ = ["NEEDED", "kernel_command", "lab_command", "missing_modules", "main"]

NEEDED = ("course_lib", "jupyterlab", "ipywidgets", "numba", "ipykernel")


def missing_modules(names=NEEDED) -> list[str]:
    """The modules of ``names`` this interpreter cannot import."""
    return [n for n in names if importlib.util.find_spec(n) is None]


def kernel_command(python: str = sys.executable) -> list[str]:
    """The command that registers the course's kernel in ``python``'s environment (as ``make kernel``)."""
    return [python, "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3", "--display-name", "Python 3"]


def lab_command(port: int = 8888, root: Path = COURSE_ROOT, python: str = sys.executable) -> list[str]:
    """The command that starts JupyterLab on 127.0.0.1:``port`` serving ``root`` (as ``make lab``)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port: expected a whole number from 1 to 65535, got {port!r}")
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"root: {root} is not a folder")
    cmd = [python, "-m", "jupyterlab", "--ip=127.0.0.1", f"--port={port}", "--no-browser",
           f"--ServerApp.root_dir={root}"]
    config = root / "jupyter_server_config.json"
    if config.is_file():
        cmd.append(f"--config={config}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd


def _show(cmd: list[str]) -> str:
    return " ".join(f'"{c}"' if " " in c else c for c in cmd)


def _run(cmd: list[str]) -> int:
    """Run ``cmd`` in the foreground; Ctrl-C stops it (the server's own shutdown) without a traceback."""
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 0


def main(port: int = 8888, dry_run: bool = False, root: Path = COURSE_ROOT) -> int:
    """Print and run the three steps of ``make lab``; 1 when the course is not installed here."""
    lab = lab_command(port, root)
    missing = missing_modules()
    if missing:
        print(f"[1/3] this Python ({sys.executable}) lacks {', '.join(missing)}. Install the course first, from "
              f"the course folder:\n      {_show([sys.executable, '-m', 'pip', 'install', '-c', 'constraints.txt', '-e', '.'])}",
              file=sys.stderr)
        return 1
    print(f"[1/3] the course and JupyterLab are installed in {sys.prefix}")
    kernel = kernel_command()
    if dry_run:
        print(f"[2/3] would register the kernel: {_show(kernel)}")
        print(f"[3/3] would start JupyterLab: {_show(lab)}")
        return 0
    if subprocess.call(kernel, stdout=subprocess.DEVNULL) != 0:
        print(f"[2/3] registering the kernel failed: {_show(kernel)}", file=sys.stderr)
        return 1
    print(f"[2/3] registered kernel 'python3' (Python 3) in {sys.prefix}")
    print(f"\n[3/3] starting JupyterLab (a few seconds) on http://127.0.0.1:{port}/lab -- open the URL with the "
          "token printed below.\nStart with notebooks/00_setup.ipynb. Stop with Ctrl-C.\n")
    return _run(lab)
