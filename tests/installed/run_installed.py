"""The course as an installed package: every lecture notebook and worksheet run outside the checkout.

    python tests/installed/run_installed.py [--only NN] [--folders notebooks,solutions,exercises] [--keep DIR]

(``make test-installed``.) What a student on Colab, Binder or a JupyterHub has: a wheel of this checkout
(``pip wheel --no-deps .``, NOT an editable install) in a fresh virtual environment, with
``-c constraints.txt`` when the checkout has one, plus nbclient/nbformat/ipykernel; the .ipynb files of
notebooks/, solutions/ and exercises/ copied into a folder outside the checkout. Each is executed there
(``COURSE_BUDGET=small``, ``COURSE_NOT_JUDGED=continue`` as in ``make test``, 600 s per cell) by that
environment's kernel; its seconds are printed.

The rule for each folder is the one tests/course/test_notebooks.py applies in the checkout: a lecture
notebook or a solution worksheet must run with no error; an exercise worksheet must run to the end with
NotImplementedError (its unsolved placeholders) as its only errors. A failure names the notebook, the cell
and the error; the exit status is 1 when anything failed.

The same file is the driver inside the fresh environment (``--execute-folder``): it imports nothing from
the checkout, and first checks that ``course_lib`` is the installed one.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("notebooks", "solutions", "exercises")
EXTRA = ["nbclient>=0.10", "nbformat>=5.9", "ipykernel>=6.25"]
CELL_TIMEOUT = 600


ANSI = re.compile(r"\x1b\[[0-9;]*m")
NOISE = ("is neither a file nor a directory", "Requirement already satisfied")   # pip's lines of no interest


def _run(cmd: list) -> None:
    """Run ``cmd``, printing it and its output less pip's noise; CalledProcessError when it fails."""
    print("$ " + " ".join(str(c) for c in cmd), flush=True)
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    out = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip() and not any(n in ln for n in NOISE)]
    if out:
        print("\n".join(out), flush=True)
    proc.check_returncode()


def build_wheel(dest: Path) -> Path:
    """``pip wheel --no-deps`` of the checkout into ``dest``; returns the wheel's path. It is built from a copy
    of what the wheel is made of (pyproject.toml, README.md, LICENSE, course_lib/), so that no stale
    ``build/`` folder of the checkout slips a deleted module in, and nothing is written into the checkout."""
    src = dest.parent / "source"
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(ROOT / "course_lib", src / "course_lib",
                    ignore=shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.nbi", "*.nbc"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, src / name)
    if dest.exists():
        shutil.rmtree(dest)
    _run([sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "--no-deps",
          "-q", str(src), "-w", str(dest)])
    wheels = sorted(dest.glob("parallel_rnns_course-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one course wheel in {dest}, found {[w.name for w in wheels]}")
    return wheels[0]


def make_env(where: Path, wheel: Path, reuse: bool = False) -> Path:
    """A fresh virtual environment in ``where`` with the wheel installed; returns its python. ``reuse``: keep
    an environment already there and reinstall only the course's wheel (a quicker second run)."""
    python = where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    constraints = ROOT / "constraints.txt"
    extra = ["-c", str(constraints)] if constraints.is_file() else []
    pip = [python, "-m", "pip", "--disable-pip-version-check", "install", "-q"]
    if reuse and python.is_file():
        _run([*pip, "--force-reinstall", "--no-deps", str(wheel)])
        return python
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    _run([*pip, str(wheel), *EXTRA, *extra])
    return python


def copy_worksheets(dest: Path, folders) -> list[Path]:
    """The committed .ipynb files of ``folders``, copied to ``dest/<folder>/``; returns the copies in order."""
    copies = []
    for folder in folders:
        (dest / folder).mkdir(parents=True, exist_ok=True)
        for nb in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")):
            copies.append(Path(shutil.copy2(nb, dest / folder / nb.name)))
    return copies


def clean_env() -> dict:
    """The environment the kernels get: no PYTHONPATH (nothing of the checkout may leak in), a small budget, and
    ``COURSE_NOT_JUDGED=continue`` as ``make test`` sets it: a reference solution whose speed the machine's load
    leaves undecided prints "speed not judged" and runs on (a miss still fails)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COURSE_RECORD")}
    env.update(COURSE_BUDGET="small", COURSE_NOT_JUDGED="continue")
    return env


# -- inside the fresh environment ---------------------------------------------------------------------------

def _errors(nb) -> list[tuple[int, str, str]]:
    return [(i, o.get("ename", ""), o.get("evalue", "")) for i, c in enumerate(nb.cells)
            for o in c.get("outputs", []) if o.get("output_type") == "error"]


def execute_one(path: Path, timeout: int) -> str:
    """Run one notebook in its own folder with the installed course's executor (a ``python3`` kernel of this
    environment, errors recorded and the run carried on); returns "" when it obeys its folder's rule, else why not."""
    import nbformat
    from course_lib.teaching.notebook_io import execute_notebook

    try:
        nb = execute_notebook(nbformat.read(path, as_version=4), path.parent, timeout=timeout, allow_errors=True)
    except Exception as exc:  # a timeout, a dead kernel
        return f"{type(exc).__name__}: {ANSI.sub('', str(exc))[:500]}"
    errors = _errors(nb)
    if path.parent.name != "exercises":
        return "; ".join(f"cell {i}: {e}: {v[:300]}" for i, e, v in errors)
    others = [(i, e, v) for i, e, v in errors if e != "NotImplementedError"]
    if others:
        return "errors other than NotImplementedError: " + "; ".join(f"cell {i}: {e}: {v[:300]}" for i, e, v in others)
    return "" if errors else "expected NotImplementedError from the unsolved exercises, the worksheet raised none"


def execute_folder(folder: Path, timeout: int) -> int:
    import course_lib

    where = Path(course_lib.__file__).resolve()
    if where.is_relative_to(ROOT):
        print(f"FAILED: course_lib was imported from the checkout ({where}), not from the installed wheel")
        return 1
    print(f"course_lib {course_lib.__version__} from {where.parent}", flush=True)
    failed, total = [], 0.0
    for path in sorted(folder.glob("*/[0-9][0-9]_*.ipynb"), key=lambda p: (FOLDERS.index(p.parent.name), p.name)):
        name = f"{path.parent.name}/{path.name}"
        t0 = time.perf_counter()
        why = execute_one(path, timeout)
        secs = time.perf_counter() - t0
        total += secs
        print(f"{'ok    ' if not why else 'FAILED'} {name:<42} {secs:7.1f} s" + (f"  {why}" if why else ""), flush=True)
        if why:
            failed.append(name)
    print(f"{total:.0f} s of notebooks; " + (f"{len(failed)} FAILED: {', '.join(failed)}" if failed else "all ran"))
    return 1 if failed else 0


# -- the route ----------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folders", default=",".join(FOLDERS), help="comma-separated, of " + ", ".join(FOLDERS))
    parser.add_argument("--only", help="only notebooks whose name starts with this (e.g. 08)")
    parser.add_argument("--keep", help="build everything in this folder (outside the checkout) and keep it")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: reuse the environment there, reinstalling only the course's wheel")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT, help="seconds per cell")
    parser.add_argument("--execute-folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.execute_folder:
        return execute_folder(Path(args.execute_folder), args.timeout)
    folders = [f.strip() for f in args.folders.split(",") if f.strip()]
    if not folders or any(f not in FOLDERS for f in folders):
        parser.error(f"--folders: expected a comma-separated list of {', '.join(FOLDERS)}, got {args.folders!r}")
    base = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="course_installed_"))
    if base.is_relative_to(ROOT):
        parser.error(f"--keep: must be outside the checkout ({ROOT}), got {base}")
    base.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        wheel = build_wheel(base / "wheel")
        python = make_env(base / "venv", wheel, reuse=args.reuse and bool(args.keep))
        print(f"built and installed {wheel.name} in {time.perf_counter() - t0:.0f} s", flush=True)
        work = base / "course"
        if work.exists():
            shutil.rmtree(work)
        copies = copy_worksheets(work, folders)
        for path in copies:
            if args.only and not path.name.startswith(args.only):
                path.unlink()
        return subprocess.run([str(python), str(Path(__file__).resolve()), "--execute-folder", str(work),
                               "--timeout", str(args.timeout)], cwd=work, env=clean_env()).returncode
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
