"""The course as a website: the sources Jupyter Book 2 (MyST) renders, and the build (teaching folder).

``prepare(root, src)`` writes a MyST project into ``src`` (a build folder, never committed):

    index.md                 the landing page, cut from README.md (what the course is, the two
                             commands, the chapter table with links to the pages)
    chapters/NN_slug.ipynb   copies of notebooks/*.ipynb with their stored outputs; a slider panel's
                             widget view is replaced by its stored first render (the Output widget's
                             text and plot, kept in the notebook's widget state) and a line saying the
                             sliders work in JupyterLab
    worksheets/NN_slug_worksheet.ipynb  copies of exercises/*.ipynb (the student versions: never solutions/)
    claims.md, seed-NNN.md   the claims registry rendered: every claim, and one page per seed
    run-times.md             every notebook's run time on every recorded machine (recordings/, chapters.py)
    myst.yml, book_meta.json the table of contents; the machine description from notebook 00's
                             stored ``backend.report()`` output, which every chapter page shows

``build(root, out)`` runs ``prepare`` and ``jupyter-book build --html`` with the static template in
``book/template`` (its render step is :mod:`course_lib.teaching.book_render`); nothing is executed,
nothing is fetched. ``python -m course_lib.teaching.book [--out DIR]`` is what ``make book`` calls.
"""
from __future__ import annotations

import copy
import html as html_lib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import chapters as chapters_mod
from . import claims as claims_mod
from .claims import CLAIMS, SEED_TITLES
from .notebook_io import COURSE_ROOT, NeedsCheckout, as_path, checkout

__all__ = ["static_widget_outputs", "machine_description", "landing_page", "claim_chapters",
           "compared_claims", "claims_index_page", "seed_page", "prepare", "build", "WIDGET_MIME", "PANEL_NOTE"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
PANEL_NOTE = ("Interactive panel: below is its first render, stored when the notebook ran. On this static "
              "page the sliders cannot move; open the notebook in JupyterLab (<code>make lab</code>) and "
              "they recompute live on your machine.")
TEMPLATE = Path("book") / "template"
MEASURED_NOTE = "measured on the machine that built this page"


def _check_nb(nb, name: str = "nb") -> None:
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise TypeError(f"{name}: expected a notebook as a dict with a 'cells' list (json.load of an .ipynb), "
                        f"got {type(nb).__name__}")


def _folder(path, name: str) -> Path:
    path = as_path(path, name)
    if not path.is_dir():
        raise FileNotFoundError(f"{name}: {path} is not a folder")
    return path


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _panel_outputs(model_id: str, state: dict, seen: set | None = None) -> list[dict] | None:
    """The outputs stored in the Output widget(s) under widget ``model_id`` (depth first), or None."""
    seen = set() if seen is None else seen
    if model_id in seen or model_id not in state:
        return None
    seen.add(model_id)
    model = state[model_id]
    if model.get("model_name") == "OutputModel":
        return list(model.get("state", {}).get("outputs", []))
    found = None
    for child in model.get("state", {}).get("children", []) or []:
        if isinstance(child, str) and child.startswith("IPY_MODEL_"):
            got = _panel_outputs(child[len("IPY_MODEL_"):], state, seen)
            if got is not None:
                found = (found or []) + got
    return found


def _widget_texts(model_id: str, state: dict, seen: set | None = None) -> list[str]:
    """The text a widget tree finally showed: HTML/Label values, a progress bar as value/max."""
    seen = set() if seen is None else seen
    if model_id in seen or model_id not in state:
        return []
    seen.add(model_id)
    model = state[model_id]
    st, name = model.get("state", {}), model.get("model_name", "")
    if name in ("HTMLModel", "LabelModel", "HTMLMathModel") and st.get("value"):
        return [html_lib.unescape(re.sub(r"<[^>]+>", "", str(st["value"])))]
    if name.endswith("ProgressModel") and st.get("max"):
        return [f"[{'#' * int(20 * (st.get('value') or 0) / st['max'])}{'.' * (20 - int(20 * (st.get('value') or 0) / st['max']))}]"]
    out: list[str] = []
    for child in st.get("children", []) or []:
        if isinstance(child, str) and child.startswith("IPY_MODEL_"):
            out += _widget_texts(child[len("IPY_MODEL_"):], state, seen)
    return out


def _note_output(extra: str = "") -> dict:
    html = f'<p class="static-panel-note">{PANEL_NOTE}{extra}</p>'
    return {"output_type": "display_data", "metadata": {}, "data": {"text/html": html}}


def static_widget_outputs(nb: dict) -> tuple[dict, int, int]:
    """A copy of notebook ``nb`` (a dict) whose widget views are replaced by their stored first render.

    Returns ``(new_nb, panels, missing)``: how many slider panels were replaced, and how many of those
    had no stored render (they keep only the note). A progress bar (tqdm) becomes the line of text it
    last showed. The widget state is dropped from the copy.
    """
    _check_nb(nb, "nb")
    state = (nb.get("metadata", {}).get("widgets", {})
             .get("application/vnd.jupyter.widget-state+json", {}).get("state", {}))
    out = copy.deepcopy(nb)
    out.get("metadata", {}).pop("widgets", None)
    panels = missing = 0
    for cell in out["cells"]:
        new_outputs = []
        for o in cell.get("outputs", []):
            view = o.get("data", {}).get(WIDGET_MIME) if isinstance(o, dict) else None
            if view is None:
                new_outputs.append(o)
                continue
            panels += 1
            stored = _panel_outputs(view.get("model_id", ""), state)
            texts = [] if stored else _widget_texts(view.get("model_id", ""), state)
            if texts:  # a progress bar (tqdm): its last state as a line of text
                panels -= 1
                new_outputs.append({"output_type": "stream", "name": "stderr",
                                    "text": " ".join(t.strip() for t in texts if t.strip()) + "\n"})
                continue
            if not stored:
                missing += 1
                new_outputs.append(_note_output(" (Its first render was not stored in this notebook.)"))
                continue
            new_outputs.append(_note_output())
            for s in stored:
                s = dict(s)
                if s.get("output_type") in ("display_data", "execute_result"):
                    s = {"output_type": "display_data", "metadata": s.get("metadata", {}), "data": s["data"]}
                new_outputs.append(s)
        if "outputs" in cell:
            cell["outputs"] = new_outputs
    return out, panels, missing


def machine_description(nb: dict) -> str:
    """The stored output of the setup notebook's ``print(backend.report())`` cell ("" if not run)."""
    _check_nb(nb, "nb")
    for cell in nb["cells"]:
        if cell.get("cell_type") == "code" and "backend.report()" in _text(cell.get("source", "")):
            return "".join(_text(o.get("text", "")) for o in cell.get("outputs", [])
                           if o.get("output_type") == "stream" and o.get("name") == "stdout").strip()
    return ""


def _sections(markdown: str) -> list[tuple[str, str]]:
    """(heading, body) of each ``## `` section; the text before the first one has heading ""."""
    parts, head, lines = [], "", []
    for line in markdown.splitlines():
        if line.startswith("## "):
            parts.append((head, "\n".join(lines)))
            head, lines = line[3:].strip(), []
        else:
            lines.append(line)
    parts.append((head, "\n".join(lines)))
    return parts


def landing_page(readme: str, chapters: list[str]) -> str:
    """The landing page (MyST markdown) from the README: its introduction, "Two commands" and the
    chapter table, whose notebook names become links to the chapter and worksheet pages."""
    if not isinstance(readme, str) or not readme.strip():
        raise ValueError("readme: expected the README's markdown text")
    sections = dict(_sections(readme))
    if "Chapters" not in sections:
        raise ValueError("readme: no '## Chapters' section with the chapter table")
    intro = re.sub(r"^# .*\n", "", sections[""].lstrip(), count=1).strip()
    table = [line for line in sections["Chapters"].splitlines() if line.startswith("|")]
    names = set(chapters)

    def link(m):
        name = m.group(1)
        if name not in names:
            return m.group(0)
        return f"[`{name}`](chapters/{name}.ipynb) · [worksheet](worksheets/{name}_worksheet.ipynb)"

    table = [re.sub(r"`(\d\d_[a-z0-9_]+)`", link, row) for row in table]
    parts = ["---", "title: Parallel RNNs, hands-on", "---", "", intro, "",
             "## Two commands", "", sections.get("Two commands", "").strip(), "",
             "## Chapters", "", "\n".join(table), "",
             "Every chapter is a lecture notebook (its page shows the plots and tables it printed when it ran) "
             "and a worksheet (its page shows the questions; the worked solutions are not on this site). "
             f"Every number a chapter measured was {MEASURED_NOTE}; run `make lab` to measure your own.", "",
             "The seed papers' numbers the course compares with: [the claims index](claims.md).", "",
             "## This site", "",
             "Built by `make book` with Jupyter Book 2 from the notebooks' stored outputs (nothing is executed). "
             "The same build publishes wherever the folder `build/book/html` is served.", ""]
    return "\n".join(parts)


def _source_texts(root: Path) -> dict[str, str]:
    """Chapter number -> the text of its lecture notebook and worksheet sources (.py)."""
    texts: dict[str, str] = {}
    for folder in ("notebooks", "solutions"):
        for py in sorted((root / folder).glob("[0-9][0-9]_*.py")):
            texts[py.name[:2]] = texts.get(py.name[:2], "") + py.read_text(encoding="utf-8")
    return texts


def _module_texts(root: Path) -> dict[str, str]:
    """Chapter number -> the text of the course_lib modules that chapter teaches with."""
    import course_lib

    out: dict[str, str] = {}
    for ch, modules in course_lib.CHAPTERS.items():
        for mod in modules:
            base = root / "course_lib" / Path(*mod.split("."))
            for path in (base.with_suffix(".py"), base / "__init__.py"):
                if path.is_file():
                    out[ch] = out.get(ch, "") + path.read_text(encoding="utf-8")
    return out


def claim_chapters(root=None) -> dict[str, list[str]]:
    """Claim id -> the chapters ("03", ...) whose notebooks or modules show it.

    A claim counts for a chapter when its id is written in the chapter's notebook or worksheet source;
    else when a dotted prefix of it (``"000.ch05.s410."``, ids built in a loop) is; else when a module
    the chapter teaches with (``course_lib.CHAPTERS``) names it.
    """
    root = COURSE_ROOT if root is None else _folder(root, "root")
    sources, modules = _source_texts(root), _module_texts(root)
    out: dict[str, list[str]] = {}
    for cid in CLAIMS:
        quoted = (f'"{cid}"', f"'{cid}'")
        chs = [ch for ch, t in sources.items() if any(q in t for q in quoted)]
        if not chs:
            parts = cid.split(".")
            prefixes = [".".join(parts[:k]) + "." for k in range(len(parts) - 1, 1, -1)]
            chs = [ch for ch, t in sources.items()
                   if any(f'"{p}' in t or f"'{p}" in t for p in prefixes)]
        if not chs:
            chs = [ch for ch, t in modules.items() if any(q in t for q in quoted)]
        out[cid] = sorted(set(chs))
    return out


_CLAIM_VAR = re.compile(r"(\w+)\s*=\s*(?:claims\.)?(?:claim\(|CLAIMS\[)\s*[\"']([^\"']+)[\"']")


def compared_claims(root=None) -> set[str]:
    """Claim ids that a chapter compares with a measurement: named in a ``verdict(`` call, directly
    (``verdict("002.speedup.max", ...``) or through a name bound to the claim
    (``S = claim("002.speedup.max")`` ... ``verdict(S.id, ...``), in the notebooks, worksheets or
    course_lib; the others are only shown."""
    root = COURSE_ROOT if root is None else _folder(root, "root")
    found: set[str] = set()
    for text in list(_source_texts(root).values()) + list(_module_texts(root).values()):
        names = {m.group(1): m.group(2) for m in _CLAIM_VAR.finditer(text)}
        calls = [m.group(1) for m in re.finditer(r"verdict\(\s*([^,)]+)", text)]
        for arg in calls:
            arg = arg.strip()
            cid = arg.strip("\"'") if arg[:1] in "\"'" else names.get(arg.split(".")[0])
            if cid in CLAIMS:
                found.add(cid)
    return found


def _chapter_links(chs: list[str], chapter_files: dict[str, str]) -> str:
    links = [f"[{ch}](chapters/{chapter_files[ch]}.ipynb)" for ch in chs if ch in chapter_files]
    return ", ".join(links) if links else "not shown in a chapter"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _seed_label(seed: str) -> str:
    return SEED_TITLES.get(seed, "beyond the seeds (papers cited by the course)")


def claims_index_page(chapters_of: dict[str, list[str]], chapter_files: dict[str, str],
                      compared: set[str] = frozenset()) -> str:
    """The claims index (MyST markdown): one table row per claim, grouped by seed; ``compared``: the ids
    a chapter compares with a measurement in a verdict line."""
    lines = ["---", "title: The seed claims", "---", "",
             "Every number from a seed paper that the course prints comes from one registry, "
             "`course_lib.teaching.claims`; each quote below is the seed's own words, checked against the "
             "seed text by a test. The chapter column says which chapter shows the number; *verdict* marks "
             "the ones it compares with a measurement on the reader's machine (on this site, "
             f"{MEASURED_NOTE}).", ""]
    for seed in claims_mod.SEEDS:
        rows = [c for c in CLAIMS.values() if c.seed == seed]
        if not rows:
            continue
        lines += [f"## {_seed_label(seed)}", "", f"[What the course reproduces of it](seed-{seed}.md)", "",
                  "| id | value | where | quote | chapter |", "|---|---|---|---|---|"]
        for c in sorted(rows, key=lambda c: c.id):
            lines.append(f"| `{c.id}` | {_cell(c.formatted())} | {_cell(c.where)} | "
                         f"“{_cell(c.quote)}” | {_chapter_links(chapters_of.get(c.id, []), chapter_files)}"
                         f"{' (*verdict*)' if c.id in compared else ''} |")
        lines.append("")
    return "\n".join(lines)


def seed_page(seed: str, chapters_of: dict[str, list[str]], chapter_files: dict[str, str],
              compared: set[str] = frozenset()) -> str:
    """One seed's page (MyST markdown): its figures/sections, the numbers, where the course shows each
    and which it reproduces (compares with a measurement in a verdict line)."""
    if seed not in claims_mod.SEEDS:
        raise ValueError(f"seed: expected one of {claims_mod.SEEDS}, got {seed!r}")
    rows = sorted((c for c in CLAIMS.values() if c.seed == seed), key=lambda c: (c.where, c.id))
    shown = [c for c in rows if chapters_of.get(c.id)]
    measured = [c for c in shown if c.id in compared]
    lines = ["---", f"title: {_seed_label(seed)}", "---", "",
             f"The course quotes {len(rows)} numbers from this paper and shows {len(shown)} of them in its "
             f"chapters. It reproduces {len(measured)}: the chapter named below measures the same thing and "
             f"a verdict line compares the two (on this site, {MEASURED_NOTE}; run `make lab` to measure "
             "your own). The others set up a task or a condition and are shown where they are used. "
             "Back to [the claims index](claims.md).", ""]
    by_where: dict[str, list] = {}
    for c in rows:
        by_where.setdefault(c.where, []).append(c)
    for where, cs in by_where.items():
        lines += [f"## {where}", ""]
        for c in cs:
            chs = chapters_of.get(c.id, [])
            how = ("reproduced (measured and compared) in chapter " if c.id in compared else "shown in chapter ")
            lines += [f"* **{_cell(c.formatted())}** (`{c.id}`; {_cell(c.conditions)}) -- "
                      f"{how + _chapter_links(chs, chapter_files) if chs else 'quoted, not shown in a chapter'}",
                      f"  > “{_cell(c.quote)}”" + (f" ({_cell(c.source)})" if c.source else ""), ""]
    return "\n".join(lines)


def _read_json(path: Path) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _myst_yml(chapters: list[str], seeds: list[str], template: Path) -> str:
    toc = ["    - file: index.md",
           "    - title: Chapters", "      children:"]
    toc += [f"        - file: chapters/{n}.ipynb" for n in chapters]
    toc += ["    - title: Worksheets", "      children:"]
    toc += [f"        - file: worksheets/{n}_worksheet.ipynb" for n in chapters]
    toc += ["    - file: claims.md", "      children:"]
    toc += [f"        - file: seed-{s}.md" for s in seeds]
    toc += ["    - file: run-times.md"]
    return "\n".join(["version: 1", "project:", "  title: Parallel RNNs, hands-on",
                      "  exclude: ['_build/**']", "  toc:", *toc,
                      "site:", f"  template: {template.as_posix()}", ""])


def prepare(root=None, src=None) -> dict:
    """Write the book's MyST project into ``src`` (default ``build/book/src``); returns its summary
    (pages, widget panels replaced, panels without a stored render)."""
    root = checkout("notebooks") if root is None else _folder(root, "root")
    src = root / "build" / "book" / "src" if src is None else as_path(src, "src")
    if src.exists():
        shutil.rmtree(src)
    lectures = sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    worksheets = sorted((root / "exercises").glob("[0-9][0-9]_*.ipynb"))
    if not lectures:
        raise FileNotFoundError(f"root: no notebooks/NN_*.ipynb under {root}")
    chapters = [p.stem for p in lectures]
    missing_ws = sorted(set(chapters) - {p.stem for p in worksheets})
    if missing_ws:
        raise FileNotFoundError(f"root: exercises/ lacks the worksheets {missing_ws}")
    panels = no_render = 0
    for p in lectures:
        nb, n, m = static_widget_outputs(_read_json(p))
        panels, no_render = panels + n, no_render + m
        _write(src / "chapters" / p.name, json.dumps(nb, indent=1))
    for p in worksheets:
        nb, _, _ = static_widget_outputs(_read_json(p))
        _write(src / "worksheets" / f"{p.stem}_worksheet.ipynb", json.dumps(nb, indent=1))
    chapter_files = {name[:2]: name for name in chapters}
    chapters_of, compared = claim_chapters(root), compared_claims(root)
    seeds = [s for s in claims_mod.SEEDS if any(c.seed == s for c in CLAIMS.values())]
    _write(src / "index.md", landing_page((root / "README.md").read_text(encoding="utf-8"), chapters))
    _write(src / "claims.md", claims_index_page(chapters_of, chapter_files, compared))
    for s in seeds:
        _write(src / f"seed-{s}.md", seed_page(s, chapters_of, chapter_files, compared))
    _write(src / "run-times.md", chapters_mod.run_times_page(root / "recordings"))
    _write(src / "myst.yml", _myst_yml(chapters, seeds, root / TEMPLATE))
    machine = machine_description(_read_json(lectures[0]))
    meta = {"root": str(root), "machine": machine, "chapters": chapters, "seeds": seeds, "panels": panels,
            "panels_without_render": no_render, "measured_note": MEASURED_NOTE}
    _write(src / "book_meta.json", json.dumps(meta, indent=1))
    return meta


def _jupyter_book() -> str:
    exe = Path(sys.executable).parent / "jupyter-book"
    found = str(exe) if exe.exists() else shutil.which("jupyter-book")
    if not found:
        raise FileNotFoundError("jupyter-book is not installed: run `make book` (it installs the 'book' extra)")
    return found


def build(root=None, out=None) -> dict:
    """Prepare the sources and render the static site into ``out`` (default ``build/book``):
    ``out/src`` (MyST project) and ``out/html`` (the site). Returns the summary with seconds and pages."""
    root = checkout("notebooks") if root is None else _folder(root, "root")
    out = root / "build" / "book" if out is None else as_path(out, "out")
    template = root / TEMPLATE
    if not (template / "node_modules" / "katex").is_dir():
        raise FileNotFoundError(f"{template}/node_modules: the site's web libraries are missing; "
                                "`make book` installs them (npm ci)")
    t0 = time.perf_counter()
    meta = prepare(root, out / "src")
    env = dict(os.environ, JB_ALLOW_NODEENV="0", HOST="127.0.0.1", BOOK_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join([str(root)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.pop("BASE_URL", None)
    proc = subprocess.run([_jupyter_book(), "build", "--html", "--ci"], cwd=out / "src", env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = out / "build.log"
    _write(log, proc.stdout)
    html = out / "src" / "_build" / "html"
    if proc.returncode != 0 or not (html / "index.html").is_file():
        raise RuntimeError(f"jupyter-book build --html failed (exit {proc.returncode}); see {log}:\n"
                           + proc.stdout[-3000:])
    if (out / "html").exists():
        shutil.rmtree(out / "html")
    shutil.copytree(html, out / "html")
    meta["pages"] = len(list((out / "html").glob("*.html")))
    rendered = out / "src" / "render_report.json"
    meta["render"] = _read_json(rendered) if rendered.is_file() else {}
    meta["seconds"] = round(time.perf_counter() - t0, 1)
    return meta


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m course_lib.teaching.book", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="build folder (default build/book)")
    ap.add_argument("--prepare-only", action="store_true", help="write the MyST sources only")
    args = ap.parse_args(argv)
    try:
        checkout("notebooks")
    except NeedsCheckout as exc:   # an installed course: the site is built from the checkout
        print(f"book: {exc}", file=sys.stderr)
        return 2
    if args.prepare_only:
        meta = prepare(src=None if args.out is None else Path(args.out) / "src")
    else:
        meta = build(out=args.out)
    print(f"book: {meta.get('pages', '?')} pages ({len(meta['chapters'])} chapters, {len(meta['chapters'])} "
          f"worksheets, claims index + {len(meta['seeds'])} seed pages); {meta['panels']} slider panels shown "
          f"as their stored first render ({meta['panels_without_render']} without one)"
          + (f"; built in {meta['seconds']} s -> {Path(args.out or 'build/book') / 'html'}" if "seconds" in meta else ""))
    render = meta.get("render", {})
    if render.get("unknown"):
        print("book: MyST nodes shown as plain content: " + ", ".join(render["unknown"]))
    for u in render.get("unresolved", []):
        print(f"book: link not resolved to a page: {u}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
