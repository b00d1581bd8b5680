"""Known-good versions: ``constraints.txt``, the exact releases the course last passed its tests with.

``make lab`` / ``make test`` / ``make book`` install with ``pip install -c constraints.txt`` so that a student
gets the versions CI ran, not whatever is newest today (``make lab LATEST=1`` lifts the pins). The file is
``pip freeze`` of a venv that passed ``.ci/run``, minus the course itself, editable or local installs, and
torch (the ``bench`` extra pins torch exactly; some machines' pip caps it). Regenerate it with::

    python -m course_lib constraints --write            # from this interpreter's environment
    python -m course_lib constraints --write --python .venv/bin/python

:func:`disagreements` is what ``tests/course/test_constraints.py`` checks: every requirement named in
pyproject.toml has exactly one pin here, and the pin satisfies pyproject's specifier.
"""
from __future__ import annotations

import datetime
import platform
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

__all__ = ["ROOT", "PATH", "LEFT_OUT", "freeze", "render", "write", "read_pins", "requirements", "disagreements",
           "off_pins"]

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "constraints.txt"
# never pinned here: the course itself, and torch (the 'bench' extra pins it; pip caps it on some machines)
LEFT_OUT = {"parallel-rnns-course", "torch", "torchvision"}
# extras whose packages need not be pinned: 'bench' (torch, pinned in pyproject), 'gpu' where its CuPy is absent
UNPINNED_EXTRAS = {"bench"}
OPTIONAL_PINS = {"cupy-cuda12x"}


def freeze(python: str | Path = sys.executable) -> list[str]:
    """``name==version`` lines of ``python``'s environment (``pip freeze``), sorted by name, without the course,
    torch, editable installs or local / URL requirements (``name @ file://...``)."""
    out = subprocess.run([str(python), "-m", "pip", "freeze", "--exclude-editable", "--disable-pip-version-check"],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"`{python} -m pip freeze` failed (exit {out.returncode}): {out.stderr.strip()[:500]}")
    pins = {}
    for line in out.stdout.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-")) or "==" not in line or " @ " in line:
            continue
        name, version = line.split("==", 1)
        if canonicalize_name(name) not in LEFT_OUT:
            pins[canonicalize_name(name)] = f"{name}=={version.strip()}"
    return [pins[k] for k in sorted(pins)]


def render(lines: list[str], python_version: str, when: datetime.date | None = None) -> str:
    """The text of constraints.txt: a header saying when and how it was made, then one pin a line."""
    when = when or datetime.datetime.now(datetime.timezone.utc).date()
    header = [
        "# Known-good versions: the environment the course's tests last passed with (.ci/run).",
        f"# Made {when.isoformat()} from Python {python_version} ({platform.system()} {platform.machine()}) by",
        "#   python -m course_lib constraints --write --python .venv/bin/python",
        "# (pip freeze minus the course, editable/local installs and torch). The Makefile installs with",
        "# `pip install -c constraints.txt`; `make lab LATEST=1` installs the newest releases instead.",
        "# tests/course/test_constraints.py checks every requirement of pyproject.toml has one pin that satisfies it.",
    ]
    return "\n".join(header + list(lines)) + "\n"


def write(path: str | Path = PATH, python: str | Path = sys.executable) -> Path:
    """Regenerate ``path`` from ``python``'s environment; returns the path."""
    version = subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=True).stdout.strip()
    path = Path(path)
    path.write_text(render(freeze(python), version))
    return path


def read_pins(path: str | Path = PATH) -> dict[str, list[str]]:
    """``{canonical name: [pinned versions]}`` of a constraints file (a name pinned twice lists both)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no constraints file at {path}")
    pins: dict[str, list[str]] = {}
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        spec = list(req.specifier)
        if len(spec) != 1 or spec[0].operator != "==":
            raise ValueError(f"path: line {n} of {path.name} is not an exact pin (name==version): {raw!r}")
        pins.setdefault(canonicalize_name(req.name), []).append(spec[0].version)
    return pins


def requirements(pyproject: str | Path = ROOT / "pyproject.toml") -> list[tuple[str, Requirement]]:
    """``(where, requirement)`` for every dependency and every extra's requirement (``where``: ``"dependencies"``
    or the extra's name), the extras in :data:`UNPINNED_EXTRAS` left out."""
    project = tomllib.loads(Path(pyproject).read_text())["project"]
    out = [("dependencies", Requirement(r)) for r in project.get("dependencies", [])]
    for extra, reqs in project.get("optional-dependencies", {}).items():
        if extra not in UNPINNED_EXTRAS:
            out += [(extra, Requirement(r)) for r in reqs]
    return out


def disagreements(pyproject: str | Path = ROOT / "pyproject.toml", path: str | Path = PATH) -> list[str]:
    """Every way pyproject.toml and the constraints file disagree, in words (empty: they agree)."""
    pins = read_pins(path)
    out = []
    for where, req in requirements(pyproject):
        name = canonicalize_name(req.name)
        versions = pins.get(name, [])
        if not versions:
            if name not in OPTIONAL_PINS:
                out.append(f"{req.name} ({where}: {req}) has no pin in {Path(path).name}")
        elif len(versions) > 1:
            out.append(f"{req.name} is pinned {len(versions)} times: {', '.join(versions)}")
        elif not req.specifier.contains(versions[0], prereleases=True):
            out.append(f"{req.name}=={versions[0]} does not satisfy pyproject's {where} requirement {req}")
    return out


def off_pins(installed: dict[str, str], path: str | Path = PATH) -> list[str]:
    """``name installed (pinned p)`` for each package of ``installed`` (``{name: version}``) whose version is not its
    pin; names without a pin and unparsable versions are skipped."""
    pins = read_pins(path)
    out = []
    for name, version in installed.items():
        pinned = pins.get(canonicalize_name(name))
        if not pinned:
            continue
        try:
            differs = Version(version) != Version(pinned[0])
        except InvalidVersion:
            continue
        if differs:
            out.append(f"{name} {version} (pinned {pinned[0]})")
    return out
