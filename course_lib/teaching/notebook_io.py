"""Notebook pairs on disk (teaching folder): the jupytext ``.py`` (py:percent) and ``.ipynb`` of each
chapter in ``notebooks/`` and ``solutions/`` -- finding, reading and writing them, checking a pair is in sync,
and executing a notebook (:func:`sync_notebook` rewrites the ``.ipynb`` inputs from the ``.py``, keeping or
re-making the outputs). :mod:`course_lib.teaching.authoring` builds the exercises on top and re-exports these.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import re
import tempfile
import time
from pathlib import Path

__all__ = ["COURSE_ROOT", "FOLDERS", "NeedsCheckout", "checkout", "as_path", "check_nb", "notebook_pairs", "read_py", "read_ipynb", "write_ipynb",
           "cell_tags", "normal_source", "pair_problems", "has_outputs", "execute_notebook", "sync_notebook",
           "error_outputs", "run_notebook_report"]

COURSE_ROOT = Path(__file__).resolve().parents[2]   # the checkout; site-packages when pip-installed
FOLDERS = ("notebooks", "solutions")


class NeedsCheckout(RuntimeError):
    """An instructor tool (authoring, the site, grading, nbgrader export) run from an installed course:
    it works on the course's git checkout, which a ``pip install`` does not bring."""


def checkout(what: str, root=None) -> Path:
    """``root`` (default :data:`COURSE_ROOT`) when ``root / what`` exists there, e.g. ``checkout("solutions")``;
    else :class:`NeedsCheckout` saying "needs the course's git checkout (<what> is missing ...)"."""
    base = COURSE_ROOT if root is None else as_path(root, "root")
    if (base / what).exists():
        return base
    from .links import REPOSITORY

    missing = (f"{what} is missing from {base}" if root is not None
               else f"no {what} beside course_lib in {base}: this course is pip-installed")
    raise NeedsCheckout(f"needs the course's git checkout ({missing}); clone {REPOSITORY} and run this from the "
                        "clone (make lab installs it there)")


# --------------------------------------------------------------------------- reading/writing
def as_path(path, name: str, *, must_exist: bool = False) -> Path:
    """A ``str``/``PathLike`` as a ``Path`` (TypeError naming ``name`` otherwise)."""
    if not isinstance(path, (str, Path)) or (isinstance(path, str) and not path.strip()):
        raise TypeError(f"{name}: expected a file path (str or pathlib.Path), got {type(path).__name__} {path!r}")
    path = Path(path)
    if must_exist and not path.is_file():
        raise FileNotFoundError(f"{name}: {path} does not exist")
    return path


def check_nb(nb, name: str = "nb") -> None:
    if not hasattr(nb, "cells") or not isinstance(nb.cells, list):
        raise TypeError(f"{name}: expected an nbformat notebook, got {type(nb).__name__} (it needs .cells)")


def notebook_pairs(folder: str | Path, root: Path | None = None) -> list[tuple[Path, Path]]:
    """``(NN_slug.py, NN_slug.ipynb)`` pairs in ``folder`` (relative to the course root), sorted."""
    if not isinstance(folder, (str, Path)):
        raise TypeError(f"folder: expected a folder name or path, got {type(folder).__name__}")
    root = COURSE_ROOT if root is None else as_path(root, "root")
    path = (root / folder) if not Path(folder).is_absolute() else Path(folder)
    if not path.is_dir() and path.parent == COURSE_ROOT:
        checkout(str(folder))    # an installed course: say that a checkout is needed
    if not path.is_dir():
        raise ValueError(f"folder: expected a directory, got {path} (which does not exist)")
    pyfiles = sorted(p for p in path.glob("[0-9][0-9]_*.py"))
    return [(p, p.with_suffix(".ipynb")) for p in pyfiles]


def read_py(path: Path):
    """A jupytext py:percent file as an nbformat notebook, with deterministic cell ids (derived
    from each cell's position, type and source) so that re-executing does not churn the files."""
    import jupytext

    path = as_path(path, "path", must_exist=True)
    nb = jupytext.read(str(path), fmt="py:percent")
    for i, cell in enumerate(nb.cells):
        key = f"{i}|{cell.cell_type}|{normal_source(cell)}".encode()
        cell.id = hashlib.sha1(key).hexdigest()[:12]
    return nb


def read_ipynb(path: Path):
    """An ``.ipynb`` file as an nbformat notebook (version 4)."""
    import nbformat

    path = as_path(path, "path", must_exist=True)
    return nbformat.read(str(path), as_version=4)


def write_ipynb(nb, path: Path) -> None:
    import nbformat

    check_nb(nb)
    path = as_path(path, "path")
    nb = copy.deepcopy(nb)
    nb.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"})
    nb.metadata.setdefault("jupytext", {})["formats"] = "ipynb,py:percent"
    for key in ("text_representation",):
        nb.metadata.get("jupytext", {}).pop(key, None)
    nbformat.validate(nb)
    Path(path).write_text(nbformat.writes(nb) + "\n", encoding="utf-8")


def cell_tags(cell) -> list[str]:
    """The tags in a notebook cell's metadata (a new list; empty when it has none)."""
    return list(cell.get("metadata", {}).get("tags", []))


def normal_source(cell) -> str:
    """A cell's source as one string, stripped (sources may be stored as a list of lines)."""
    src = cell.source if isinstance(cell.source, str) else "".join(cell.source)
    return src.strip()


def pair_problems(py: Path, ipynb: Path) -> list[str]:
    """Why a pair is out of sync (empty list when in sync): missing file, cell count, a cell's
    type, source or tags."""
    py = as_path(py, "py", must_exist=True)
    ipynb = as_path(ipynb, "ipynb")
    if not ipynb.exists():
        return [f"{ipynb.name} is missing (run: python -m course_lib notebooks --execute)"]
    a, b = read_py(py), read_ipynb(ipynb)
    problems = []
    if len(a.cells) != len(b.cells):
        problems.append(f"{py.name} has {len(a.cells)} cells, {ipynb.name} has {len(b.cells)}")
    for i, (ca, cb) in enumerate(zip(a.cells, b.cells)):
        if ca.cell_type != cb.cell_type:
            problems.append(f"cell {i}: {ca.cell_type} in .py, {cb.cell_type} in .ipynb")
        elif normal_source(ca) != normal_source(cb):
            first = normal_source(ca).splitlines()[:1]
            problems.append(f"cell {i} differs (starts {first!r})")
        elif sorted(cell_tags(ca)) != sorted(cell_tags(cb)):
            problems.append(f"cell {i}: tags {cell_tags(ca)} in .py, {cell_tags(cb)} in .ipynb")
        if len(problems) >= 5:
            break
    return problems


def has_outputs(nb) -> bool:
    """True when at least one code cell has an output (i.e. the notebook was executed)."""
    check_nb(nb)
    return any(c.cell_type == "code" and c.get("outputs") for c in nb.cells)


# --------------------------------------------------------------------------- executing
@contextlib.contextmanager
def _kernel_manager():
    """A ``python3`` kernel manager talking over Unix sockets in a temporary folder where there are
    Unix sockets (the kernel then has no reason to warn that TCP is unencrypted, once per notebook),
    else the default (TCP on localhost)."""
    from jupyter_client.manager import KernelManager

    with tempfile.TemporaryDirectory(prefix="course-kernel-") as folder:
        if os.name == "posix":
            km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(folder, "kernel"))
        else:  # pragma: no cover - no Unix sockets
            km = KernelManager(kernel_name="python3")
        try:
            yield km
        finally:  # nbclient leaves a kernel it did not create running
            if km.has_kernel:
                km.shutdown_kernel(now=True)


def execute_notebook(nb, cwd: Path, timeout: int = 600, allow_errors: bool = False, env: dict | None = None):
    """Run every cell with a ``python3`` kernel in ``cwd``; returns the executed notebook."""
    from nbclient import NotebookClient

    if not isinstance(cwd, (str, Path)) or not Path(cwd).is_dir():
        raise ValueError(f"cwd: expected an existing directory to run the notebook in, got {cwd}")
    check_nb(nb)
    from ..core.validate import check_bool, check_int

    timeout = check_int(timeout, "timeout", low=1, high=24 * 3600)
    allow_errors = check_bool(allow_errors, "allow_errors")
    if env is not None and (not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                                  for k, v in env.items())):
        raise TypeError(f"env: expected a dict of str -> str environment variables, got {env!r}")
    nb = copy.deepcopy(nb)
    old = {}
    for k, v in (env or {}).items():
        old[k] = os.environ.get(k)
        os.environ[k] = v
    try:
        with _kernel_manager() as km:
            client = NotebookClient(nb, km=km, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
                                    record_timing=False,  # no timestamps: re-running must not churn the files
                                    resources={"metadata": {"path": str(cwd)}})
            client.execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def sync_notebook(py: Path, ipynb: Path, *, execute: bool = False, timeout: int = 600) -> float:
    """Write ``ipynb`` from ``py``: executed afresh, or (without ``execute``) keeping the
    outputs of unchanged cells. Returns the seconds it took."""
    t0 = time.perf_counter()
    py, ipynb = as_path(py, "py"), as_path(ipynb, "ipynb")
    if not py.is_file():
        raise FileNotFoundError(f"py: expected a jupytext py:percent file, got {py} (missing)")
    if not isinstance(execute, bool):
        raise TypeError(f"execute: expected True or False, got {execute!r}")
    nb = read_py(py)
    if execute:
        from . import record

        name = f"{py.parent.name}/{py.stem}"       # the kernel's records go to COURSE_RECORD/<stem>.json
        env = {record.ENV_NOTEBOOK: name}
        if record.directory() is not None:         # absolute: the kernel runs in the notebook's folder
            env[record.ENV_DIR] = str(record.directory().resolve())
            record.forget(name)                    # this run's records only, whatever an earlier run left
        nb = execute_notebook(nb, py.parent, timeout=timeout, env=env)
        record.attach_cells(nb, name)
    elif ipynb.exists():
        from jupytext.combine import combine_inputs_with_outputs

        nb = combine_inputs_with_outputs(nb, read_ipynb(ipynb), fmt="py:percent")
    write_ipynb(nb, ipynb)
    return time.perf_counter() - t0


def error_outputs(nb) -> list[tuple[int, str, str]]:
    """``(cell index, exception name, message)`` for every error output in an executed notebook."""
    check_nb(nb)
    found = []
    for i, c in enumerate(nb.cells):
        for out in c.get("outputs", []):
            if out.get("output_type") == "error":
                found.append((i, out.get("ename", ""), out.get("evalue", "")))
    return found


def run_notebook_report(path: Path, timeout: int = 600) -> dict:
    """Execute a notebook headless (errors allowed) and summarise it for an instructor:
    seconds, checks passed, errors."""
    t0 = time.perf_counter()
    path = as_path(path, "path")
    if not path.is_file():
        raise FileNotFoundError(f"path: expected a notebook file, got {path} (missing)")
    nb = read_ipynb(path)
    try:
        nb = execute_notebook(nb, path.parent, timeout=timeout, allow_errors=True)
        crashed = ""
    except Exception as exc:  # timeouts, dead kernels
        crashed = f"{type(exc).__name__}: {exc}"
    passed = 0
    for c in nb.cells:
        for out in c.get("outputs", []):
            text = out.get("text", "") if out.get("output_type") == "stream" else ""
            passed += len(re.findall(r"^Exercise \S+ passed", text, flags=re.M))
    errors = error_outputs(nb)
    return {"notebook": str(path.relative_to(COURSE_ROOT)) if path.is_relative_to(COURSE_ROOT) else str(path),
            "seconds": time.perf_counter() - t0, "checks_passed": passed,
            "errors": [f"cell {i}: {e}" for i, e, _ in errors] + ([crashed] if crashed else [])}
