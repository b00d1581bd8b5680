"""The site's reader features in the renderer (course_lib.teaching.book_render), without Node.js: launch
links per chapter and worksheet, the shipped download, and alt text per plot."""
from __future__ import annotations

import json
import re

from course_lib.teaching import book_render, links
from course_lib.teaching.notebook_io import COURSE_ROOT


def _ctx(kind="chapter", root=None, static=None):
    return book_render.Context({"/chapters/03_batching.ipynb": "batching", "/index.md": "index"}, kind,
                               "CPU: test", "measured on the machine that built this page", root, static)


def _image(alt=None, path="/abc.png"):
    meta = {"image/png": {"alt": alt}} if alt is not None else {}
    return {"type": "output", "jupyter_data": {"output_type": "display_data", "metadata": meta,
                                                "data": {"image/png": {"path": path}}}}


def _cell(source, n_images, alts=()):
    outputs = [_image(alts[i] if i < len(alts) else None) for i in range(n_images)]
    return {"type": "block", "kind": "notebook-code",
            "children": [{"type": "code", "executable": True, "value": source},
                         {"type": "outputs", "children": outputs}]}


def _alts(html: str) -> list[str]:
    return re.findall(r'<img class="output" src="[^"]*" alt="([^"]*)"', html)


def test_a_chapter_page_links_its_notebook_shipped_with_the_site(tmp_path):
    static = tmp_path / "_static"
    page = {"frontmatter": {"title": "03 · Batching"}, "location": "/chapters/03_batching.ipynb",
            "mdast": {"type": "root", "children": []}}
    html = book_render.render_page(page, _ctx(root=COURSE_ROOT, static=static), "<nav></nav>", "Course")
    path = "notebooks/03_batching.ipynb"
    assert f'href="_static/download/{path}" download="03_batching.ipynb"' in html
    assert (static / "download" / path).read_bytes() == (COURSE_ROOT / path).read_bytes()
    for url in (links.colab_url(path), links.binder_url(path), links.file_url(path)):
        assert f'href="{url.replace("&", "&amp;")}"' in html, url
    worksheet = book_render.render_page(dict(page, location="/worksheets/03_batching_worksheet.ipynb"),
                                        _ctx("worksheet", COURSE_ROOT, static), "<nav></nav>", "Course")
    assert links.colab_url("exercises/03_batching.ipynb") in worksheet and "solutions/" not in worksheet
    assert json.loads((static / "download" / "exercises" / "03_batching.ipynb").read_text())["cells"]


def test_without_the_course_files_the_download_is_the_repositorys_file():
    html = book_render.launch_links("notebooks/08_scan.ipynb", _ctx().download("notebooks/08_scan.ipynb"))
    assert links.raw_url("notebooks/08_scan.ipynb") in html
    assert book_render.render_page({"location": "/index.md", "mdast": {"type": "root"}}, _ctx("page"),
                                   "", "C").count('class="launch"') == 0


def test_a_plot_takes_its_stored_description_else_one_from_its_cell():
    ctx = _ctx()
    ast = {"type": "root", "children": [
        {"type": "heading", "depth": 2, "children": [{"type": "text", "value": "Cache cliff"}]},
        _cell("ax.set_title('stored wins')", 1, alts=["Figure: GEMV bandwidth (GB/s against working set)"]),
        _cell('ax.set_title(f"GEMV bandwidth up to {x:.2g} MiB")\nax.set_xlabel("working set (bytes)")', 1),
        _cell("for t in ts:\n    plots.loglog_plot(sizes, t)", 2),
        _cell("x = 1", 1)]}
    alts = _alts(book_render.render_node(ast, ctx))
    assert alts[0] == "Figure: GEMV bandwidth (GB/s against working set)"
    assert alts[1].startswith("Plot: GEMV bandwidth up to ... MiB (along working set (bytes))")
    assert "drawn by plots.loglog_plot" in alts[2] and "(figure 1 of 2 in this cell)" in alts[2]
    assert "(figure 2 of 2 in this cell)" in alts[3]
    assert alts[4] == "Plot, in the section “Cache cliff”"
    assert len(set(alts)) == len(alts) and "a plot the notebook drew" not in alts


def test_one_title_per_figure_names_each_and_a_repeated_alt_is_told_apart():
    assert book_render.source_alt('a.set_title("one")\nb.set_title("two")', "", 1, 2) == "Plot: two"
    ctx = _ctx()
    ast = {"type": "root", "children": [_cell("x", 1, alts=["same"]), _cell("y", 1, alts=["same"])]}
    assert _alts(book_render.render_node(ast, ctx)) == ["same", "same (figure 2 on this page)"]
