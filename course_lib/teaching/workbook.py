"""A student's own copy of the worksheets (teaching folder): ``start``, ``progress`` and ``update``.

``exercises/`` is generated and tracked by git; a student works in a copy git does not track
(``my-work/``, listed in ``.gitignore``), so ``git pull`` never conflicts with their answers:

* :func:`start` copies ``exercises/NN_slug.ipynb`` (and its ``.py`` pair) into the student's folder,
  never over a file that is already there;
* :func:`progress` runs each of the student's worksheets in a fresh kernel (in memory: nothing is
  written back) and reads, per exercise, whether its check printed ``Exercise N.k passed`` (and the
  speed-up it measured), failed (the first line of its message), could not judge a speed, or was not
  started (the ``NotImplementedError`` placeholder is still there);
* :func:`update`, after a ``git pull`` brought a new version of ``exercises/``, rebuilds each worksheet
  whose generated cells changed from the new ``exercises/`` version and carries the student's answer
  cells into it by exercise id (tag ``answer:N.k``, in order), and every cell they added or changed next
  to the cell it followed. A backup of the old file goes to ``<folder>/.backup/<time>/`` first; an answer
  that has no place any more (its exercise was removed) goes to a section "Carried over from your
  previous version" at the end. Nothing the student wrote is dropped.

A worksheet knows what it was generated from: :func:`.authoring.exercise_fingerprints` writes the course
version, each exercise's statement/check/answer fingerprints and every generated cell's fingerprint into
the notebook's metadata (``course_lib``).
"""
from __future__ import annotations

import copy
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .authoring import EXERCISE_RE, answer_exercise, fingerprint, heading_exercise
from .notebook_io import (COURSE_ROOT, as_path, cell_tags, checkout, execute_notebook, normal_source, read_ipynb,
                          read_py)

__all__ = ["DEFAULT_DIR", "start", "worksheets", "read_worksheet", "exercise_cells", "ExerciseStatus",
           "worksheet_progress", "progress", "format_progress", "UpdateResult", "update_worksheet", "update",
           "changelog_mentions", "CARRIED_HEADING"]

DEFAULT_DIR = "my-work"
CARRIED_HEADING = "## Carried over from your previous version"
PASS_RE = re.compile(r"^Exercise (\d+\.\d+[a-z]?) passed[^\n]*", re.M)
SPEED_RE = re.compile(r"^\s+speed: ([0-9.]+x as fast as [^:\n]*)[^\n]*?(, at least [0-9.]+x needed)?$", re.M)
WORKSHEET_GLOB = "[0-9][0-9]_*.ipynb"


def _folder(folder, must_exist: bool = True) -> Path:
    path = as_path(folder, "folder")
    if not path.is_absolute():
        path = Path.cwd() / path
    if must_exist and not path.is_dir():
        raise FileNotFoundError(f"--dir: {path} does not exist; run `python -m course_lib start` first (it copies the "
                                f"worksheets there), or pass --dir with the folder you work in")
    return path


def worksheets(folder, only: str | None = None) -> list[Path]:
    """The worksheets (``NN_slug.ipynb``) in ``folder`` whose name contains ``only``, sorted."""
    if only is not None and not isinstance(only, str):
        raise TypeError(f"only: expected a part of a file name such as '08', got {type(only).__name__}")
    return [p for p in sorted(_folder(folder).glob(WORKSHEET_GLOB)) if not only or only in p.name]


# --------------------------------------------------------------------------- start
def start(folder=DEFAULT_DIR, root: Path | None = None) -> list[tuple[str, str]]:
    """Copy every ``exercises/NN_slug.ipynb`` (and ``.py``) into ``folder``; a worksheet already there is kept.
    Returns ``(name, "copied" | "kept (...)")`` per worksheet; :class:`.notebook_io.NeedsCheckout` where the course
    has no ``exercises/`` (a pip-installed course: the worksheets come with its git checkout)."""
    source = checkout("exercises", root) / "exercises"
    dest = _folder(folder, must_exist=False)
    dest.mkdir(parents=True, exist_ok=True)
    done = []
    for ipynb in sorted(source.glob(WORKSHEET_GLOB)):
        pair = [ipynb, ipynb.with_suffix(".py")]
        there = [dest / p.name for p in pair if (dest / p.name).exists()]
        if there:
            done.append((ipynb.name, f"kept (you have {', '.join(p.name for p in there)}; never overwritten)"))
            continue
        for p in pair:
            if p.exists():
                shutil.copy2(p, dest / p.name)
        done.append((ipynb.name, "copied"))
    return done


# --------------------------------------------------------------------------- reading a worksheet
def read_worksheet(ipynb: Path):
    """The student's worksheet as a notebook: the ``.ipynb``, or -- where its ``.py`` pair was saved later (edited in
    a text editor) -- the ``.py``'s cells with the ``.ipynb``'s metadata and outputs, as JupyterLab would open it."""
    ipynb = as_path(ipynb, "ipynb", must_exist=True)
    nb = read_ipynb(ipynb)
    py = ipynb.with_suffix(".py")
    if py.exists() and py.stat().st_mtime > ipynb.stat().st_mtime:
        from jupytext.combine import combine_inputs_with_outputs

        meta = copy.deepcopy(nb.metadata)
        nb = combine_inputs_with_outputs(read_py(py), nb, fmt="py:percent")
        nb.metadata = meta
    return nb


def exercise_cells(nb) -> list[tuple[str, str]]:
    """``(role, exercise)`` for every cell: role ``"answer"`` (tag ``answer:N.k``, or ``solution`` under an
    ``Exercise N.k`` heading), ``"check"`` (a ``raises-exception`` cell under a heading), ``"text"`` (markdown under
    a heading) or ``"other"``; exercise "" before the first heading."""
    out, current = [], ""
    for cell in nb.cells:
        src = normal_source(cell)
        if cell.cell_type == "markdown":
            current = heading_exercise(src) or current
            out.append(("text" if current else "other", current))
            continue
        tags = cell_tags(cell)
        if answer_exercise(cell) or "solution" in tags:
            found = EXERCISE_RE.findall(src) if "solution" in tags and not answer_exercise(cell) else []
            out.append(("answer", answer_exercise(cell) or current or (found[0] if found else "")))
        elif "raises-exception" in tags and current:
            out.append(("check", current))
        else:
            out.append(("other", current))
    return out


# --------------------------------------------------------------------------- progress
@dataclass
class ExerciseStatus:
    exercise: str
    status: str        # "passed", "failing", "not judged", "not started", "not run"
    detail: str = ""   # the pass line, the first line of the failure, why not judged
    speed: str = ""    # a passed speed exercise: "2.31x as fast as ..."


def _errors(cell) -> list[tuple[str, str]]:
    return [(o.get("ename", ""), o.get("evalue", "")) for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def _first_line(ename: str, evalue: str) -> str:
    """The message's first line that says something: a grader's "Exercise N.k failed:" header is skipped."""
    lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", evalue).splitlines() if ln.strip()]
    while lines and re.fullmatch(r"Exercise \S+ failed[^:]*:?", lines[0]):
        lines.pop(0)
    line = lines[0] if lines else ename
    line = re.sub(r"^Exercise \S+ (failed|not judged)[^:]*:\s*", "", line)
    return (line if len(line) <= 160 else line[:157] + "...") if ename in ("ExerciseFailed", "SpeedNotJudged") \
        else f"{ename}: {line}"[:160]


def worksheet_progress(ipynb: Path, *, timeout: int = 600) -> tuple[list[ExerciseStatus], str]:
    """Run one worksheet afresh in its own folder (errors allowed, nothing written back) and read each exercise's
    status. Returns ``(statuses in worksheet order, problem)``; ``problem`` says why the run stopped early ("")."""
    nb = read_worksheet(ipynb)
    roles = exercise_cells(nb)
    problem = ""
    try:   # COURSE_NOT_JUDGED is the course's own CI mode: for a student an undecided speed stays open
        nb = execute_notebook(nb, ipynb.parent, timeout=timeout, allow_errors=True, env={"COURSE_NOT_JUDGED": ""})
    except Exception as exc:   # a timeout, a kernel that died: the cells run so far have their outputs
        problem = f"the run stopped: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    order = list(dict.fromkeys(ex for role, ex in roles if ex and role in ("answer", "check")))
    passed = {}
    for cell in nb.cells:
        text = _text(cell)
        for m in PASS_RE.finditer(text):
            speed = SPEED_RE.search(text, m.end())
            passed[m.group(1)] = (m.group(0).strip(), "".join(speed.groups("")).strip() if speed else "")
    out = []
    for ex in order:
        if ex in passed:
            out.append(ExerciseStatus(ex, "passed", *passed[ex]))
            continue
        cells = [(role, c) for (role, e), c in zip(roles, nb.cells) if e == ex and role in ("answer", "check")]
        out.append(_status(ex, cells))
    return out, problem


def _status(ex: str, cells) -> ExerciseStatus:
    ran = any(c.get("execution_count") is not None or c.get("outputs") for _, c in cells)
    if not ran:
        return ExerciseStatus(ex, "not run", "the run stopped before this exercise")
    for role, c in cells:
        for ename, evalue in _errors(c):
            if ename == "NotImplementedError":
                return ExerciseStatus(ex, "not started")
            if ename == "SpeedNotJudged":
                return ExerciseStatus(ex, "not judged", "run again on a quieter machine: " + _first_line(ename, evalue))
            prefix = "your answer cell raised " if role == "answer" else ""
            return ExerciseStatus(ex, "failing", prefix + _first_line(ename, evalue))
    return ExerciseStatus(ex, "failing", "the check printed no pass line")


def progress(folder=DEFAULT_DIR, only: str | None = None, *, timeout: int = 600, report=None) -> dict:
    """:func:`worksheet_progress` for every worksheet in ``folder``; ``report(name, statuses, problem)`` is called
    as each finishes. Returns ``{worksheet name: (statuses, problem)}``."""
    results = {}
    for path in worksheets(folder, only):
        results[path.name] = worksheet_progress(path, timeout=timeout)
        if report:
            report(path.name, *results[path.name])
    return results


def format_progress(name: str, statuses: list[ExerciseStatus], problem: str = "") -> str:
    """One worksheet's table, e.g. ``  2.1  passed       Exercise 2.1 passed: 6/6 cases``."""
    lines = [name + (f"  ({problem})" if problem else "")]
    for s in statuses:
        detail = s.detail + (f"; speed: {s.speed}" if s.speed else "")
        lines.append(f"  {s.exercise:<5} {s.status:<12} {detail}".rstrip())
    return "\n".join(lines)


# --------------------------------------------------------------------------- update
@dataclass
class UpdateResult:
    path: Path
    status: str                                   # "up to date", "updated [from course version A to B]", "added"
    backup: Path | None = None
    carried: int = 0                              # answer cells carried into their exercise
    kept: int = 0                                 # cells the student added or changed, kept beside their neighbour
    leftover: list[str] = field(default_factory=list)   # exercises whose answers went to the carried-over section
    changed: dict[str, str] = field(default_factory=dict)  # exercise -> "statement changed" / "check changed" / ...


def _meta(nb) -> dict:
    return dict(nb.metadata.get("course_lib", {}) or {})


def _cell_sha(cell) -> str:
    return fingerprint(f"{cell.cell_type}|{normal_source(cell)}")


def _answers(nb) -> dict[tuple[str, int], object]:
    """``{(exercise, k): cell}``: the k-th answer cell of each exercise."""
    out, seen = {}, {}
    for (role, ex), cell in zip(exercise_cells(nb), nb.cells):
        if role == "answer":
            k = seen[ex] = seen.get(ex, -1) + 1
            out[(ex, k)] = cell
    return out


def _fresh(cell):
    cell = copy.deepcopy(cell)
    if cell.cell_type == "code":
        cell.outputs, cell.execution_count = [], None
    return cell


def merge(old, new):
    """The new worksheet ``new`` (a generated template) with the student's work from ``old`` carried in. Returns
    ``(notebook, carried, kept, leftover exercises)``; see the module docstring."""
    import nbformat

    old_meta = _meta(old)
    stubs = {ex: set(v.get("answers", [])) for ex, v in old_meta.get("exercises", {}).items()}
    generated = set(old_meta.get("cells", [])) | set(_meta(new).get("cells", []))
    new_answers = _answers(new)
    old_answers = _answers(old)
    nb = copy.deepcopy(new)
    after: dict[int, list] = {}          # new cell index -> student cells to insert after it (-1: before the first)
    leftover, carried, kept, anchor = [], 0, 0, -1
    old_key = {id(c): key for key, c in old_answers.items()}
    new_index = {id(c): i for i, c in enumerate(new.cells)}
    by_sha = {}
    for i, c in enumerate(new.cells):
        by_sha.setdefault(_cell_sha(c), i)
    for cell in old.cells:
        key = old_key.get(id(cell))
        if key is not None:
            target = new_answers.get(key)
            written = fingerprint(normal_source(cell)) not in stubs.get(key[0], set()) and (
                target is None or normal_source(cell) != normal_source(target))
            if target is not None:
                anchor = new_index[id(target)]
                if written:
                    nb.cells[anchor].source = cell.source
                    carried += 1
            elif written:
                leftover.append((key[0], _fresh(cell)))
            continue
        sha = _cell_sha(cell)
        if sha in by_sha:
            anchor = by_sha[sha]
        elif sha not in generated and normal_source(cell):   # the student's own cell, or one they changed
            after.setdefault(anchor, []).append(_fresh(cell))
            kept += 1
    cells = after.get(-1, [])
    for i, c in enumerate(nb.cells):
        cells += [c] + after.get(i, [])
    if leftover:
        cells.append(nbformat.v4.new_markdown_cell(
            f"{CARRIED_HEADING}\n\nThese answers have no exercise in this version of the worksheet (it was removed "
            "or renumbered: see CHANGELOG.md). They are kept here, as you wrote them."))
        for ex, c in leftover:
            cells.append(nbformat.v4.new_markdown_cell(f"Your answer to Exercise {ex}:"))
            c.metadata.pop("tags", None)
            cells.append(c)
    from nbformat.corpus.words import generate_corpus_id

    ids = set()
    for c in cells:                       # a carried cell may share an id with the new version's cells
        if not c.get("id") or c.id in ids:
            c.id = generate_corpus_id()
        ids.add(c.id)
    nb.cells = cells
    return nb, carried, kept, sorted({ex for ex, _ in leftover})


def _changes(old_meta: dict, new_meta: dict) -> dict[str, str]:
    old_ex, new_ex = old_meta.get("exercises", {}), new_meta.get("exercises", {})
    out = {}
    for ex, v in new_ex.items():
        if ex not in old_ex:
            out[ex] = "new exercise"
            continue
        what = [k for k in ("statement", "check") if old_ex[ex].get(k) != v.get(k)]
        if what:
            out[ex] = " and ".join(what) + " changed"
    out.update({ex: "removed" for ex in old_ex if ex not in new_ex})
    return out


def _write(nb, ipynb: Path) -> None:
    import jupytext

    from .notebook_io import write_ipynb

    write_ipynb(nb, ipynb)
    py = jupytext.writes(nb, fmt="py:percent")
    ipynb.with_suffix(".py").write_text(re.sub(r"^#\s+jupytext_version: .*\n", "", py, flags=re.M), encoding="utf-8")


def update_worksheet(ipynb: Path, template: Path, backup_dir: Path) -> UpdateResult:
    """Bring one student worksheet to the version of ``template`` (``exercises/NN_slug.ipynb``)."""
    old, new = read_worksheet(ipynb), read_ipynb(template)
    old_meta, new_meta = _meta(old), _meta(new)
    if old_meta.get("cells_sha256") == new_meta.get("cells_sha256"):
        return UpdateResult(ipynb, "up to date")
    merged, carried, kept, leftover = merge(old, new)
    backup_dir.mkdir(parents=True, exist_ok=True)
    for p in (ipynb, ipynb.with_suffix(".py")):
        if p.exists():
            shutil.copy2(p, backup_dir / p.name)
    _write(merged, ipynb)
    versions = (old_meta.get("course_version", "unknown"), new_meta.get("course_version", "unknown"))
    status = "updated" + (f" from course version {versions[0]} to {versions[1]}" if versions[0] != versions[1] else "")
    return UpdateResult(ipynb, status, backup_dir / ipynb.name, carried, kept, leftover, _changes(old_meta, new_meta))


def update(folder=DEFAULT_DIR, root: Path | None = None, only: str | None = None) -> list[UpdateResult]:
    """:func:`update_worksheet` for every worksheet of ``root/exercises/`` (a new one is copied in); the backups
    of one run share ``<folder>/.backup/<YYYYmmdd-HHMMSS>/``."""
    root = checkout("exercises", root)
    folder = _folder(folder)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup_dir = folder / ".backup" / stamp
    k = 0
    while backup_dir.exists():
        k += 1
        backup_dir = folder / ".backup" / f"{stamp}-{k}"
    out = []
    for template in sorted((root / "exercises").glob(WORKSHEET_GLOB)):
        if only and only not in template.name:
            continue
        mine = folder / template.name
        if not mine.exists():
            if not mine.with_suffix(".py").exists():
                start_one = [template, template.with_suffix(".py")]
                for p in start_one:
                    if p.exists():
                        shutil.copy2(p, folder / p.name)
                out.append(UpdateResult(mine, "added"))
            else:
                out.append(UpdateResult(mine, f"not updated ({mine.with_suffix('.py').name} has no .ipynb beside it: "
                                              "open it in JupyterLab once, save, and run update again)"))
            continue
        out.append(update_worksheet(mine, template, backup_dir))
    return out


def changelog_mentions(exercise: str, root: Path | None = None, limit: int = 3) -> list[str]:
    """The first ``limit`` bullets of CHANGELOG.md's newest section that name ``exercise`` (e.g. "8.5"), one line
    each, shortened."""
    path = (COURSE_ROOT if root is None else as_path(root, "root")) / "CHANGELOG.md"
    if not path.exists():
        return []
    sections = re.split(r"^## ", path.read_text(encoding="utf-8"), flags=re.M)
    newest = sections[1] if len(sections) > 1 else ""
    bullets, inside = [], False           # a bullet: its "- " line and the indented lines that continue it
    for line in newest.splitlines():
        if line.startswith("- "):
            bullets.append(line[2:])
            inside = True
        elif inside and line.startswith(" ") and line.strip():
            bullets[-1] += " " + line.strip()
        else:
            inside = False
    pattern = re.compile(rf"(?<![\w.]){re.escape(exercise)}(?![\d])")
    found = [" ".join(b.split()) for b in bullets if pattern.search(b)]
    return [b if len(b) <= 200 else b[:197] + "..." for b in found[:limit]]
