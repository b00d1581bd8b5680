"""The cells every lecture and worksheet shares, generated in one place (teaching layer).

Each ``notebooks/NN_slug.py`` and ``solutions/NN_slug.py`` (and so each ``exercises/`` worksheet, built from
the solutions) carries four generated cells, found by their tags and rewritten by :func:`apply_headers`
(``python -m course_lib notebooks`` runs it before syncing)::

    # # NN · title                              (the chapter's own title cell stays first)
    chapter-header   markdown: objectives, prerequisites, study time, measured run times, launch links
    colab-setup      code: installs the course where course_lib is missing (Colab, a bare kernel);
                     elsewhere prints one line. Starts this notebook's clock (started())
    ...              the chapter
    chapter-footer   code: "this notebook took N s here" (finished())
    chapter-footer   markdown: where to report a problem

The header's rows come from :data:`course_lib.teaching.chapter_table.CHAPTER_TABLE`; its run times from the
recordings: ``python -m course_lib notebooks --execute`` with ``COURSE_RECORD=<dir>`` writes each notebook's
seconds to ``<dir>/run_times/notebooks.json`` (:func:`record_time`), and :func:`run_times` reads every
``recordings/*/run_times/notebooks.json``. Every web address comes from :mod:`course_lib.teaching.links`.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

from . import links
from .chapter_table import CHAPTER_TABLE
from .notebook_io import COURSE_ROOT, FOLDERS, as_path

__all__ = ["TAG_HEADER", "TAG_SETUP", "TAG_FOOTER", "TIMES_FILE", "started", "finished", "record_time",
           "run_times", "machine_label", "header_markdown", "setup_source", "footer_cells", "generated_text",
           "apply_headers", "run_times_page"]

TAG_HEADER, TAG_SETUP, TAG_FOOTER = "chapter-header", "colab-setup", "chapter-footer"
TIMES_FILE = Path("run_times") / "notebooks.json"   # inside a recording folder; not a <notebook>.json
GENERATED_NOTE = ("*Generated from `course_lib/teaching/chapter_table.py` and `recordings/` by "
                  "`python -m course_lib notebooks`: edit those, not this cell.*")
_clock: list[float] = []                             # this kernel's start time, set by started()


# --------------------------------------------------------------------------- the clock (run in the notebook)
def started() -> None:
    """Start this notebook's clock and say the course is there (the ``colab-setup`` cell calls it)."""
    import course_lib

    _clock[:] = [time.perf_counter()]
    print(f"course_lib {course_lib.__version__} is installed: nothing more to set up (this notebook's clock "
          "starts now)")


def finished() -> None:
    """Print how long this notebook took since :func:`started` (the last code cell calls it)."""
    if not _clock:
        print("this notebook's start time is unknown (run the first code cell, the setup cell, then this one)")
        return
    print(f"this notebook took {time.perf_counter() - _clock[0]:.0f} s here")


# --------------------------------------------------------------------------- measured run times
def _notebook_name(name) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"(notebooks|solutions)/\d\d_[a-z0-9_]+", name):
        raise ValueError(f"name: expected a notebook such as 'notebooks/08_scan' or 'solutions/08_scan', got {name!r}")
    return name


def record_time(folder, name: str, seconds: float, cpu: str | None = None) -> Path:
    """Merge ``name``'s run time (``seconds``) into ``<folder>/run_times/notebooks.json``; returns that file.

    The file holds ``{"cpu": ..., "seconds": {"notebooks/08_scan": 71.3, ...}}``; ``cpu`` defaults to this
    machine's model name."""
    folder = as_path(folder, "folder")
    name = _notebook_name(name)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < float("inf"):
        raise ValueError(f"seconds: expected a finite number of seconds >= 0, got {seconds!r}")
    if cpu is None:
        from ..core import backend

        cpu = backend.cpu_model()
    path = folder / TIMES_FILE
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    data["cpu"] = str(cpu)
    data.setdefault("seconds", {})[name] = round(float(seconds), 1)
    data["seconds"] = dict(sorted(data["seconds"].items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def run_times(recordings=None) -> dict[str, dict]:
    """Recording folder name -> ``{"cpu": str, "seconds": {notebook name: seconds}}``, for every folder of
    ``recordings`` (default ``recordings/``) that holds run times; sorted by folder name."""
    recordings = COURSE_ROOT / "recordings" if recordings is None else as_path(recordings, "recordings")
    out = {}
    for path in sorted(recordings.glob(f"*/{TIMES_FILE.as_posix()}")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data.get("seconds"), dict):
            raise ValueError(f"{path}: expected {{'cpu': ..., 'seconds': {{notebook: seconds}}}}")
        out[path.parent.parent.name] = {"cpu": str(data.get("cpu", "unknown CPU")), "seconds": data["seconds"]}
    return out


def machine_label(recording: str, cpu: str) -> str:
    """"AMD EPYC (zen5-avx512-quiet)": the CPU, and the recording folder that says how it was run."""
    return f"{cpu} ({recording})"


def _times_text(name: str, times: dict) -> str:
    found = [f"{times[r]['seconds'][name]:.0f} s on {machine_label(r, times[r]['cpu'])}"
             for r in times if name in times[r]["seconds"]]
    if not found:
        return "not yet recorded on any machine"
    return "measured " + "; ".join(found)


# --------------------------------------------------------------------------- the generated cells
def _chapter(stem: str) -> str:
    ch = stem[:2]
    if ch not in CHAPTER_TABLE:
        raise ValueError(f"stem: {stem!r} is not a chapter of course_lib.teaching.chapter_table.CHAPTER_TABLE")
    return ch


def _lecture_stem(ch: str, root: Path) -> str:
    found = sorted((root / "notebooks").glob(f"{ch}_*.py"))
    if not found:
        raise FileNotFoundError(f"root: no notebooks/{ch}_*.py under {root}")
    return found[0].stem


def header_markdown(folder: str, stem: str, times: dict | None = None, root=None) -> str:
    """The ``chapter-header`` cell of ``<folder>/<stem>`` ("notebooks" or "solutions") as markdown."""
    import course_lib

    if folder not in FOLDERS:
        raise ValueError(f"folder: expected one of {FOLDERS}, got {folder!r}")
    root = COURSE_ROOT if root is None else as_path(root, "root")
    ch = _chapter(stem)
    row = CHAPTER_TABLE[ch]
    times = run_times(root / "recordings") if times is None else times

    def link(pre: str) -> str:
        target = f"{_lecture_stem(pre, root)}.ipynb"
        label = f"{pre} · {course_lib.CHAPTER_TITLES[pre]}"
        return f"[{label}]({target})" if folder == "notebooks" else f"[{label}]({links.file_url('notebooks/' + target)})"

    opened = f"{'notebooks' if folder == 'notebooks' else 'exercises'}/{stem}.ipynb"
    what = "chapter" if folder == "notebooks" else "worksheet"
    lines = [f"**Chapter {ch} at a glance** · {GENERATED_NOTE}", "", "After this chapter you can:", ""]
    lines += [f"{i}. {text}" for i, text in enumerate(row.objectives, 1)]
    lines += ["", f"* **Before this chapter:** {', '.join(link(p) for p in row.prerequisites) or 'nothing'}",
              f"* **Study time:** about {row.minutes} min for the lecture and its worksheet (an estimate)",
              f"* **Run time of this {what}:** {_times_text(f'{folder}/{stem}', times)}; its last code cell "
              "prints how long it took here",
              f"* **Not in this chapter:** {row.not_yet}",
              f"* **Open this {what}:** [in Colab]({links.colab_url(opened)}) · [on Binder]({links.binder_url(opened)})"
              f" · [download the .ipynb]({links.raw_url(opened)})"]
    return "\n".join(lines)


def setup_source() -> str:
    """The ``colab-setup`` cell: plain Python that runs pip only where ``course_lib`` cannot be imported."""
    return "\n".join([
        "# Generated (course_lib/teaching/chapters.py): where course_lib is missing (Colab, a bare kernel), install",
        "# the course into this kernel; where it is installed, print one line. Either way, start this notebook's clock.",
        "try:",
        "    from course_lib.teaching import chapters",
        "except ModuleNotFoundError:",
        "    import importlib",
        "    import subprocess",
        "    import sys",
        "",
        "    print(\"course_lib is not installed in this kernel: installing the course with pip (a few minutes) ...\")",
        f"    source = {json.dumps(links.pip_source())}",
        "    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"--quiet\", source], check=True)",
        "    importlib.invalidate_caches()",
        "    from course_lib.teaching import chapters",
        "chapters.started()",
    ])


def footer_cells() -> tuple[str, str]:
    """The two ``chapter-footer`` cells: (code printing the run time here, markdown for reporting a problem)."""
    code = "from course_lib.teaching import chapters\n\nchapters.finished()"
    markdown = (f"Found a problem in this notebook? [Report it]({links.issues_url()}) (say which cell, and paste "
                f"what it printed) · how to help: [CONTRIBUTING.md]({links.file_url('CONTRIBUTING.md')})")
    return code, markdown


# --------------------------------------------------------------------------- writing them into the .py files
def _markdown_chunk(text: str, tag: str) -> str:
    body = "\n".join(f"# {line}" if line else "#" for line in text.splitlines())
    return f'# %% [markdown] tags=["{tag}"]\n{body}\n\n'


def _code_chunk(text: str, tags: list[str]) -> str:
    return f"# %% tags={json.dumps(tags)}\n{text}\n\n"


def _tags(chunk: str) -> list[str]:
    found = re.search(r"tags=(\[[^\]]*\])", chunk.split("\n", 1)[0])
    return json.loads(found.group(1)) if found else []


def generated_text(py, text: str | None = None, times: dict | None = None, root=None) -> str:
    """The text of ``py`` (a notebooks/ or solutions/ py:percent file) with its generated cells as they should
    be: every cell tagged chapter-header, colab-setup or chapter-footer removed, then made afresh -- header and
    setup after the title cell, the footer at the end. Every other cell is kept byte for byte."""
    py = as_path(py, "py")
    folder, stem = py.parent.name, py.stem
    text = py.read_text(encoding="utf-8") if text is None else text
    starts = [m.start() for m in re.finditer(r"^# %%", text, flags=re.M)]
    if not starts:
        raise ValueError(f"py: {py} has no py:percent cells ('# %%' lines)")
    head = text[:starts[0]]
    chunks = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
    mine = {TAG_HEADER, TAG_SETUP, TAG_FOOTER}
    chunks = [c for c in chunks if not mine & set(_tags(c))]
    if not chunks or not chunks[0].startswith("# %% [markdown]") or "\n# # " not in chunks[0]:
        raise ValueError(f"py: {py}'s first cell must be the chapter's markdown title ('# # NN · ...')")
    code, markdown = footer_cells()
    chunks[-1] = chunks[-1].rstrip("\n") + "\n\n"
    new = ([chunks[0], _markdown_chunk(header_markdown(folder, stem, times, root), TAG_HEADER),
            _code_chunk(setup_source(), [TAG_SETUP, "nbval-ignore-output"])] + chunks[1:]
           + [_code_chunk(code, [TAG_FOOTER, "nbval-ignore-output"]), _markdown_chunk(markdown, TAG_FOOTER)])
    return head + "".join(new).rstrip("\n") + "\n"


def apply_headers(root=None, only: str | None = None) -> list[Path]:
    """Rewrite the generated cells of every ``notebooks/`` and ``solutions/`` .py under ``root`` whose name
    contains ``only``; returns the files changed (idempotent: a second call changes nothing). Each file is
    read right before it is written."""
    root = COURSE_ROOT if root is None else as_path(root, "root")
    if only is not None and not isinstance(only, str):
        raise TypeError(f"only: expected a part of a file name such as '08' or None, got {type(only).__name__}")
    times = run_times(root / "recordings")
    changed = []
    for folder in FOLDERS:
        for py in sorted((root / folder).glob("[0-9][0-9]_*.py")):
            if only and only not in py.name:
                continue
            text = py.read_text(encoding="utf-8")
            new = generated_text(py, text, times, root)
            if new != text:
                py.write_text(new, encoding="utf-8")
                changed.append(py)
    return changed


# --------------------------------------------------------------------------- the site's "Run times" page
def run_times_page(recordings=None) -> str:
    """The site's "Run times" page (MyST markdown): every notebook's measured seconds on every recording."""
    times = run_times(recordings)
    lines = ["---", "title: Run times", "---", "",
             "How long each notebook took to run top to bottom, measured when its outputs were recorded "
             "(`COURSE_RECORD=recordings/<machine> python -m course_lib notebooks --execute` writes "
             f"`recordings/<machine>/{TIMES_FILE.as_posix()}`). Each notebook's last cell prints how long it "
             "took on your machine.", ""]
    if not times:
        return "\n".join(lines + ["No recording holds run times yet: not yet recorded on any machine.", ""])
    names = sorted({n for t in times.values() for n in t["seconds"]})
    lines += ["| notebook | " + " | ".join(machine_label(r, t["cpu"]) for r, t in times.items()) + " |",
              "|---|" + "---|" * len(times)]
    for n in names:
        cells = [f"{t['seconds'][n]:.0f} s" if n in t["seconds"] else "not recorded" for t in times.values()]
        lines.append(f"| `{n}` | " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])
