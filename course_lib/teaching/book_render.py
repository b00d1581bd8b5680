"""The book's static template: MyST's page JSON -> plain HTML pages (teaching folder).

``jupyter-book build --html`` parses the notebooks and markdown into MyST's AST (``_build/site``) and
then, because ``book/template/template.yml`` names a ``render`` step, runs this module in the
template folder with ``BUILD_DIRECTORY`` set to the html folder. It writes one ``<slug>.html`` per
page, with a table of contents, the math MyST already typeset with KaTeX (the KaTeX style sheet and
fonts come from the npm package in ``book/template/node_modules``), code cells and their stored
outputs, and the machine banner on chapter pages. No JavaScript, nothing from the network.

A chapter or worksheet page opens with its launch links (:func:`launch_links`: a download of the
notebook shipped in ``_static/download/``, Colab, Binder, the repository; addresses from
:mod:`course_lib.teaching.links`). Every plot's alt text is the description stored with the output
(``course_lib.teaching.plots.describe``), else one made from its cell's source (:func:`source_alt`).
Dark mode, print and narrow screens are the style sheet's (``book/template/site.css``).

``render_page(page, ctx)`` is a pure function of a page's JSON; ``main()`` renders a whole site.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import sys
from pathlib import Path

from . import links

__all__ = ["render_node", "render_page", "render_site", "Context", "source_alt", "launch_links"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
_INLINE = {"emphasis": "em", "strong": "strong", "subscript": "sub", "superscript": "sup",
           "delete": "del", "underline": "u", "smallcaps": "span", "abbreviation": "abbr"}


class Context:
    """What rendering a page needs: slug of each source file, the page kind, and what went missing."""

    def __init__(self, slugs: dict[str, str], kind: str = "page", machine: str = "", note: str = "",
                 root: Path | None = None, static: Path | None = None, location: str = ""):
        self.slugs = slugs          # "/chapters/03_batching.ipynb" -> "batching"
        self.kind = kind            # "chapter" | "worksheet" | "page"
        self.machine = machine
        self.note = note
        self.root, self.static, self.location = root, static, location
        self.unknown: set[str] = set()
        self.unresolved: list[str] = []
        self.heading = ""           # the last heading rendered (a plot's fallback alt text names it)
        self.cell_source = ""       # the code of the cell whose outputs are being rendered
        self.cell_images = [0, 0]   # [images rendered so far, images] in that cell
        self.alts: list[str] = []   # every image's alt text on this page, in order

    def href(self, url: str, node: dict) -> str:
        """A link target in the static site: internal pages become ``slug.html``."""
        if url.startswith(("http://", "https://", "mailto:")):
            return url
        target, _, anchor = url.partition("#")
        if node.get("internal") or target.startswith("/"):
            slug = target.strip("/") or "index"
            if slug not in self.slugs.values():
                slug = self.slugs.get(target, self.slugs.get("/" + target.lstrip("/"), slug))
            if slug in self.slugs.values():
                return f"{slug}.html" + (f"#{anchor}" if anchor else "")
        if not target and anchor:
            return url
        for loc, slug in self.slugs.items():
            if target and loc.endswith("/" + Path(target).name):
                return f"{slug}.html" + (f"#{anchor}" if anchor else "")
        source = self._source_file(target)
        if source:
            return source + (f"#{anchor}" if anchor else "")
        self.unresolved.append(url)
        return url

    def _source_file(self, target: str) -> str:
        """A relative link from a notebook to a course file (``../course_lib/models/rnn.py``): the file
        is copied into ``_static/source/`` and linked there; "" when it is not a course file."""
        if not (self.root and self.static and target) or "://" in target:
            return ""
        folder = "notebooks" if self.kind == "chapter" else "exercises"
        path = (self.root / folder / target).resolve()
        try:
            rel = path.relative_to(self.root.resolve())
        except ValueError:
            return ""
        if not path.is_file() or rel.parts[0] not in ("course_lib", "benchmarks", "tests"):
            return ""
        dest = self.static / "source" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest)
        return "_static/source/" + rel.as_posix()

    def download(self, repo_path: str) -> str:
        """Where the site's "Download .ipynb" link points: a copy of the course file ``repo_path``
        (``notebooks/03_batching.ipynb``) shipped in ``_static/download/``, so the download works from
        the site alone; the repository's raw file when the site is rendered without the course."""
        path = self.root / repo_path if self.root else None
        if not (path and self.static and path.is_file()):
            return links.raw_url(repo_path)
        dest = self.static / "download" / repo_path
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, dest)
        return "_static/download/" + repo_path


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def _children(node: dict, ctx: Context) -> str:
    return "".join(render_node(c, ctx) for c in node.get("children", []) or [])


def _asset(path: str) -> str:
    return "_static/" + path.lstrip("/")


def _mime_content(data: dict, mime: str) -> str:
    value = data.get(mime, {})
    return value.get("content", "") if isinstance(value, dict) else "".join(value) if isinstance(value, list) else str(value)


_STRING = r"""f?(["'])(.*?)(?<!\\)\1"""
_TITLE = re.compile(r"(?:set_title|suptitle|\btitle\s*=)\s*\(?\s*" + _STRING)
_XLABEL = re.compile(r"(?:set_xlabel\(|\bxlabel\s*=)\s*" + _STRING)
_YLABEL = re.compile(r"(?:set_ylabel\(|\bylabel\s*=)\s*" + _STRING)
_DRAWER = re.compile(r"\b(\w*plots|widgets)\.(\w+)\(")


def _literal(text: str) -> str:
    """A string literal's text as a reader would see it: ``{...}`` fields of an f-string become "...",
    mathtext markup is dropped."""
    text = re.sub(r"\{[^{}]*\}", "...", text).replace("$", "").replace("\\", "")
    return " ".join(text.split()).rstrip(" ,;:")


def source_alt(source: str, heading: str = "", index: int = 0, count: int = 1) -> str:
    """Alt text for image ``index`` of ``count`` that a code cell drew, from the cell's ``source``: the
    title(s) and axis labels it sets and the course function that draws, else the section ``heading``.
    (Figures shown since the course registers ``plots.describe`` carry their own; this is the fallback.)"""
    titles = [_literal(m.group(2)) for m in _TITLE.finditer(source or "")]
    titles = [s for s in titles if s]
    xs = [_literal(m.group(2)) for m in _XLABEL.finditer(source or "")]
    ys = [_literal(m.group(2)) for m in _YLABEL.finditer(source or "")]
    drawers = [f"{m.group(1)}.{m.group(2)}" for m in _DRAWER.finditer(source or "")
               if m.group(1) != "widgets" or m.group(2).endswith("panel")]
    per_figure = count > 1 and len(titles) == count  # one title per figure the cell drew
    if per_figure:
        titles = [titles[index]]
    text = "Plot" + (f": {'; '.join(titles)}" if titles else "")
    if xs and ys:
        text += f" ({ys[0]} against {xs[0]})"
    elif xs or ys:
        text += f" ({ys[0]})" if ys else f" (along {xs[0]})"
    if drawers:
        text += f", drawn by {', '.join(dict.fromkeys(drawers))}"
    if heading:
        text += f", in the section “{heading}”"
    if count > 1 and not per_figure:
        text += f" (figure {index + 1} of {count} in this cell)"
    return text


def _image_alt(jd: dict, mime: str, ctx: Context) -> str:
    """An output image's alt text: the description stored with it (``plots.describe``), else one made
    from its cell's source; never the same as an earlier image on the page."""
    index, count = ctx.cell_images
    ctx.cell_images[0] += 1
    meta = (jd.get("metadata") or {}).get(mime) or {}
    alt = meta.get("alt") if isinstance(meta, dict) else None
    if not isinstance(alt, str) or not alt.strip():
        alt = source_alt(ctx.cell_source, ctx.heading, index, max(count, 1))
    if alt in ctx.alts:
        alt += f" (figure {len(ctx.alts) + 1} on this page)"
    ctx.alts.append(alt)
    return alt


def _render_output(node: dict, ctx: Context) -> str:
    jd = node.get("jupyter_data", {}) or {}
    kind = jd.get("output_type")
    if kind == "stream":
        cls = "stderr" if jd.get("name") == "stderr" else "stdout"
        return f'<pre class="output {cls}">{_esc(_ANSI.sub("", "".join(jd.get("text", ""))))}</pre>'
    if kind == "error":
        tb = _ANSI.sub("", "\n".join(jd.get("traceback", []) or [f"{jd.get('ename')}: {jd.get('evalue')}"]))
        return f'<pre class="output error">{_esc(tb)}</pre>'
    data = jd.get("data", {}) or {}
    for mime in _IMAGE_MIMES:
        if mime in data:
            value = data[mime]
            path = value.get("path") if isinstance(value, dict) else None
            if path:
                return f'<img class="output" src="{_esc(_asset(path))}" alt="{_esc(_image_alt(jd, mime, ctx))}">'
            if mime == "image/svg+xml":
                return f'<div class="output">{_mime_content(data, mime)}</div>'
    if "text/html" in data:
        return f'<div class="output html">{_mime_content(data, "text/html")}</div>'
    if node.get("children"):
        return f'<div class="output">{_children(node, ctx)}</div>'
    if "text/plain" in data and "application/vnd.jupyter.widget-view+json" not in data:
        return f'<pre class="output">{_esc(_mime_content(data, "text/plain"))}</pre>'
    if data:
        return '<p class="static-panel-note">(an interactive output: open the notebook in JupyterLab)</p>'
    return ""


def _render_outputs(node: dict, ctx: Context) -> str:
    body = _children(node, ctx)
    if not body:
        return ""
    label = ""
    if ctx.kind == "chapter" and re.search(r"\d", re.sub(r"<[^>]+>", "", body)):
        label = f'<div class="measured">{_esc(ctx.note)}</div>'
    return f'<div class="outputs">{body}{label}</div>'


def _render_math(node: dict, ctx: Context, display: bool) -> str:
    if node.get("html"):
        tag = "div" if display else "span"
        return f'<{tag} class="math{" display" if display else ""}">{node["html"]}</{tag}>'
    ctx.unknown.add(f"{node['type']} (not typeset)")
    return f'<code class="math">{_esc(node.get("value", ""))}</code>'


def _render_list(node: dict, ctx: Context) -> str:
    if node.get("ordered"):
        start = node.get("start")
        return f'<ol{f" start={int(start)}" if start not in (None, 1) else ""}>{_children(node, ctx)}</ol>'
    return f"<ul>{_children(node, ctx)}</ul>"


def _render_table(node: dict, ctx: Context) -> str:
    rows = []
    for row in node.get("children", []):
        if row.get("type") != "tableRow":
            rows.append(render_node(row, ctx))
            continue
        cells = "".join(
            f'<{"th" if c.get("header") else "td"}>{_children(c, ctx)}</{"th" if c.get("header") else "td"}>'
            for c in row.get("children", []))
        rows.append(f"<tr>{cells}</tr>")
    return f'<div class="table-wrap"><table>{"".join(rows)}</table></div>'


def _images_in(node: dict) -> int:
    jd = node.get("jupyter_data") or {}
    own = int(node.get("type") == "output" and any(m in (jd.get("data") or {}) for m in _IMAGE_MIMES))
    return own + sum(_images_in(c) for c in node.get("children", []) or [])


def _enter_cell(node: dict, ctx: Context) -> None:
    """Remember the code of the cell about to be rendered and how many images it shows."""
    ctx.cell_source = "\n".join(c.get("value", "") for c in node.get("children", []) or [] if c.get("type") == "code")
    ctx.cell_images = [0, _images_in(node)]


def render_node(node: dict, ctx: Context) -> str:
    """HTML for one MyST AST node (and its children)."""
    t = node.get("type")
    if t == "text":
        return _esc(node.get("value", ""))
    if t in ("root", "mystDirective", "mystRole", "span", "listItem_"):
        return _children(node, ctx)
    if t == "block":
        kind = node.get("kind", "")
        cls = "cell code" if kind == "notebook-code" else "cell"
        if kind == "notebook-code":
            _enter_cell(node, ctx)
        return f'<section class="{cls}" id="{_esc(node.get("html_id", ""))}">{_children(node, ctx)}</section>'
    if t == "paragraph":
        return f"<p>{_children(node, ctx)}</p>"
    if t == "heading":
        d = max(1, min(6, int(node.get("depth", 2))))
        ctx.heading = _plain(node).replace("\u200b", "").strip()
        return f'<h{d} id="{_esc(node.get("html_id", node.get("identifier", "")))}">{_children(node, ctx)}</h{d}>'
    if t in _INLINE:
        return f"<{_INLINE[t]}>{_children(node, ctx)}</{_INLINE[t]}>"
    if t == "inlineCode":
        return f"<code>{_esc(node.get('value', ''))}</code>"
    if t == "code":
        lang = _esc(node.get("lang", "") or "")
        cls = "source" if node.get("executable") else "listing"
        return f'<pre class="{cls}" data-lang="{lang}"><code>{_esc(node.get("value", ""))}</code></pre>'
    if t in ("inlineMath", "math"):
        return _render_math(node, ctx, display=(t == "math"))
    if t in ("link", "crossReference"):
        url = node.get("url") or ("#" + node.get("html_id", node.get("identifier", "")))
        return f'<a href="{_esc(ctx.href(url, node))}">{_children(node, ctx) or _esc(url)}</a>'
    if t == "list":
        return _render_list(node, ctx)
    if t == "listItem":
        return f"<li>{_children(node, ctx)}</li>"
    if t == "table":
        return _render_table(node, ctx)
    if t == "blockquote":
        return f"<blockquote>{_children(node, ctx)}</blockquote>"
    if t == "thematicBreak":
        return "<hr>"
    if t == "break":
        return "<br>"
    if t == "image":
        return f'<img src="{_esc(_asset(node.get("url", "")) if node.get("url", "").startswith("/") else node.get("url", ""))}" alt="{_esc(node.get("alt", ""))}">'
    if t == "html":
        return node.get("value", "")
    if t == "outputs":
        return _render_outputs(node, ctx)
    if t == "output":
        return _render_output(node, ctx)
    if t in ("container", "admonition", "aside", "div", "definitionList"):
        return f'<div class="{_esc(t)} {_esc(node.get("kind", ""))}">{_children(node, ctx)}</div>'
    if t in ("caption", "legend", "admonitionTitle", "definitionTerm", "definitionDescription"):
        return f'<div class="{_esc(t)}">{_children(node, ctx)}</div>'
    if t in ("comment", "mystComment", "footnoteDefinition"):
        return ""
    if t == "mystTarget":
        return f'<span id="{_esc(node.get("label", ""))}"></span>'
    ctx.unknown.add(str(t))
    return _children(node, ctx)


def _nav(pages: list[dict], index_title: str, current: str) -> str:
    items = [f'<li class="{"current" if current == "index" else ""}"><a href="index.html">{_esc(index_title)}</a></li>']
    for p in pages:
        if "slug" not in p:
            items.append(f'<li class="group">{_esc(p.get("title", ""))}</li>')
            continue
        cls = "current" if p["slug"] == current else ""
        items.append(f'<li class="level{int(p.get("level", 1))} {cls}"><a href="{_esc(p["slug"])}.html">'
                     f'{_esc(p.get("title", p["slug"]))}</a></li>')
    return '<nav class="toc"><ul>' + "".join(items) + "</ul></nav>"


def launch_links(repo_path: str, download_href: str) -> str:
    """The links a chapter or worksheet page opens with: download the notebook, open it in Colab or on
    Binder, see it in the repository (every address from :mod:`course_lib.teaching.links`)."""
    items = [(download_href, "Download .ipynb", "download", f' download="{_esc(Path(repo_path).name)}"'),
             (links.colab_url(repo_path), "Open in Colab", "colab", ""),
             (links.binder_url(repo_path), "Launch Binder", "binder", ""),
             (links.file_url(repo_path), "View in the repository", "repository", "")]
    return ('<nav class="launch" aria-label="Get this notebook">'
            + "".join(f'<a class="{cls}" href="{_esc(href)}"{extra}>{_esc(label)}</a>'
                      for href, label, cls, extra in items) + "</nav>")


def _banner(ctx: Context, location: str) -> str:
    name = Path(location).stem.removesuffix("_worksheet")
    if ctx.kind in ("chapter", "worksheet"):
        repo_path = f"{'notebooks' if ctx.kind == 'chapter' else 'exercises'}/{name}.ipynb"
        return launch_links(repo_path, ctx.download(repo_path)) + _notice(ctx, name)
    return ""


def _notice(ctx: Context, name: str) -> str:
    if ctx.kind == "chapter":
        return (f'<div class="banner machine"><p>Every number on this page was <strong>{_esc(ctx.note)}</strong> '
                f'when it ran <code>notebooks/{_esc(name)}.ipynb</code>; to measure your own, run '
                f'<code>make lab</code> and run the notebook. That machine, as its setup notebook described it:</p>'
                f'<pre>{_esc(ctx.machine or "(the setup notebook has no stored description)")}</pre></div>')
    if ctx.kind == "worksheet":
        return (f'<div class="banner worksheet"><p>Worksheet: the questions only (the worked solutions are not on '
                f'this site). Work on it in JupyterLab: <code>make lab</code>, then open '
                f'<code>exercises/{_esc(name)}.ipynb</code>; each check cell says what is right or wrong.</p></div>')
    return ""


def _plain(node: dict) -> str:
    return node.get("value", "") + "".join(_plain(c) for c in node.get("children", []) or [])


def _without_title(node: dict, title: str) -> dict:
    """The AST without its first depth-1 heading when that heading is the page title (shown once)."""
    children = node.get("children", []) or []
    for i, child in enumerate(children):
        if child.get("type") == "heading" and child.get("depth") == 1:
            if _plain(child).replace("\u200b", "").strip() == title.strip():
                return dict(node, children=children[:i] + children[i + 1:])
            return node
        if child.get("type") in ("root", "block"):
            pruned = _without_title(child, title)
            if pruned is not child:
                return dict(node, children=children[:i] + [pruned] + children[i + 1:])
            if any(g.get("type") == "heading" and g.get("depth") == 1 for g in child.get("children", [])):
                return node
    return node


def render_page(page: dict, ctx: Context, nav: str, site_title: str) -> str:
    """A whole HTML document for one page's JSON."""
    title = page.get("frontmatter", {}).get("title") or page.get("slug", "")
    body = render_node(_without_title(page.get("mdast", {}), title), ctx)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_esc(title)} · {_esc(site_title)}</title>"
            "<link rel=\"stylesheet\" href=\"_static/katex/katex.min.css\">"
            "<link rel=\"stylesheet\" href=\"_static/site.css\"></head><body>"
            "<a class=\"skip\" href=\"#content\">Skip to the content</a>"
            f"<header><a href=\"index.html\">{_esc(site_title)}</a></header><div class=\"layout\">{nav}"
            f"<main id=\"content\"><h1>{_esc(title)}</h1>{_banner(ctx, page.get('location', ''))}{body}</main></div>"
            "<footer>Built by <code>make book</code> (Jupyter Book 2 / MyST) from the notebooks' stored outputs. "
            "Run <code>make lab</code> to measure on your machine.</footer></body></html>\n")


def _kind(location: str) -> str:
    if location.startswith("/chapters/"):
        return "chapter"
    if location.startswith("/worksheets/"):
        return "worksheet"
    return "page"


def render_site(site: Path, html_dir: Path, template: Path, meta: dict) -> dict:
    """Render every page under ``site`` (MyST's ``_build/site``) into ``html_dir``; returns a report."""
    config = json.loads((site / "config.json").read_text(encoding="utf-8"))
    project = config["projects"][0]
    pages = project.get("pages", [])
    slugs = [project.get("index", "index")] + [p["slug"] for p in pages if "slug" in p]
    data = {s: json.loads((site / "content" / f"{s}.json").read_text(encoding="utf-8")) for s in slugs}
    locations = {d.get("location", ""): s for s, d in data.items()}
    html_dir.mkdir(parents=True, exist_ok=True)
    static = html_dir / "_static"
    if (site / "public").is_dir():
        shutil.copytree(site / "public", static, dirs_exist_ok=True)
    shutil.copytree(template / "node_modules" / "katex" / "dist", static / "katex", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("*.js", "*.mjs", "contrib", "*.map"))
    shutil.copy(template / "site.css", static / "site.css")
    site_title = project.get("title", "")
    report = {"pages": 0, "unknown": set(), "unresolved": []}
    for slug, page in data.items():
        ctx = Context(locations, _kind(page.get("location", "")), meta.get("machine", ""),
                      meta.get("measured_note", "measured on the machine that built this page"),
                      Path(meta["root"]) if meta.get("root") else None, static, page.get("location", ""))
        nav = _nav(pages, data[slugs[0]].get("frontmatter", {}).get("title", "Home"), slug)
        (html_dir / f"{slug}.html").write_text(render_page(page, ctx, nav, site_title), encoding="utf-8")
        report["pages"] += 1
        report["unknown"] |= ctx.unknown
        report["unresolved"] += [f"{slug}: {u}" for u in ctx.unresolved]
    return report


def main() -> int:
    html_dir = Path(os.environ.get("BUILD_DIRECTORY", ""))
    if not os.environ.get("BUILD_DIRECTORY"):
        raise SystemExit("BUILD_DIRECTORY: not set (this is the render step of `jupyter-book build --html`)")
    site = html_dir.parent / "site"
    src = html_dir.parent.parent
    meta_path = src / "book_meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    report = render_site(site, html_dir, Path.cwd(), meta)
    (src / "render_report.json").write_text(json.dumps(
        {"pages": report["pages"], "unknown": sorted(report["unknown"]), "unresolved": report["unresolved"]},
        indent=1), encoding="utf-8")
    print(f"rendered {report['pages']} pages into {html_dir}")
    if report["unknown"]:
        print("MyST node types rendered as their children only: " + ", ".join(sorted(report["unknown"])))
    for u in report["unresolved"]:
        print(f"link not resolved to a page: {u}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
