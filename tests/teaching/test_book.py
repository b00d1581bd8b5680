"""The course site's sources and renderer (course_lib.teaching.book, book_render), without Node.js:
what ``make book`` feeds Jupyter Book 2 and how a page's MyST AST becomes HTML. The built site itself is
tested in a browser by tests/browser/test_book.py (``make test-book``)."""
import json
from pathlib import Path

import pytest

from course_lib.teaching import book, book_render
from course_lib.teaching.claims import CLAIMS

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _panel_notebook(with_output_model=True):
    state = {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_row", "IPY_MODEL_out"]}},
        "row": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_slider"]}},
        "slider": {"model_name": "IntSliderModel", "state": {"value": 256}},
        "out": {"model_name": "OutputModel", "state": {"outputs": [
            {"output_type": "stream", "name": "stdout", "text": "n = 256: 12.5 GFLOP/s\n"},
            {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}},
        ]}},
    }
    if not with_output_model:
        del state["out"]
        state["box"]["state"]["children"] = ["IPY_MODEL_row"]
    view = {"output_type": "execute_result", "execution_count": 3, "metadata": {},
            "data": {book.WIDGET_MIME: {"model_id": "box", "version_major": 2, "version_minor": 0},
                     "text/plain": "[interactive panel with controls n -- run this cell]"}}
    return {"cells": [{"cell_type": "code", "source": "panel", "metadata": {}, "outputs": [view]},
                      {"cell_type": "markdown", "source": "text", "metadata": {}}],
            "metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": state}}},
            "nbformat": 4, "nbformat_minor": 5}


def test_a_panel_becomes_its_stored_first_render_with_a_note():
    nb = _panel_notebook()
    before = json.dumps(nb, sort_keys=True)
    out, panels, missing = book.static_widget_outputs(nb)
    assert json.dumps(nb, sort_keys=True) == before  # the input is not changed
    assert (panels, missing) == (1, 0)
    outputs = out["cells"][0]["outputs"]
    assert "JupyterLab" in outputs[0]["data"]["text/html"] and "cannot move" in outputs[0]["data"]["text/html"]
    assert outputs[1]["text"] == "n = 256: 12.5 GFLOP/s\n"
    assert outputs[2]["data"]["image/png"] == "iVBOR" and outputs[2]["output_type"] == "display_data"
    assert not any(book.WIDGET_MIME in o.get("data", {}) for o in outputs)
    assert "widgets" not in out["metadata"]


def test_a_panel_without_a_stored_render_says_so_and_a_progress_bar_becomes_its_text():
    out, panels, missing = book.static_widget_outputs(_panel_notebook(with_output_model=False))
    assert (panels, missing) == (1, 1)
    assert "not stored" in out["cells"][0]["outputs"][0]["data"]["text/html"]
    nb = _panel_notebook()
    nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"] = {
        "box": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_a", "IPY_MODEL_p", "IPY_MODEL_b"]}},
        "a": {"model_name": "HTMLModel", "state": {"value": "training: 100%"}},
        "p": {"model_name": "FloatProgressModel", "state": {"value": 10.0, "max": 10.0}},
        "b": {"model_name": "HTMLModel", "state": {"value": "10/10 [00:01&lt;00:00]"}},
    }
    out, panels, missing = book.static_widget_outputs(nb)
    assert (panels, missing) == (0, 0)
    assert out["cells"][0]["outputs"] == [{"output_type": "stream", "name": "stderr",
                                           "text": "training: 100% [####################] 10/10 [00:01<00:00]\n"}]


def test_bad_notebooks_are_refused_by_name():
    with pytest.raises(TypeError, match="nb"):
        book.static_widget_outputs([1, 2])
    with pytest.raises(TypeError, match="nb"):
        book.machine_description({"cells": "no"})


def test_every_committed_panel_has_a_stored_first_render():
    for name in CHAPTERS:
        nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
        out, _, missing = book.static_widget_outputs(nb)
        assert missing == 0, name
        assert book.WIDGET_MIME not in json.dumps(out), name


def test_the_machine_description_is_the_setup_notebooks_report():
    nb = {"cells": [{"cell_type": "code", "source": ["x = 1\n", "print(backend.report())"], "outputs": [
        {"output_type": "stream", "name": "stdout", "text": ["CPU : Foo\n", "cores : 4\n"]},
        {"output_type": "stream", "name": "stderr", "text": "warning\n"}]}]}
    assert book.machine_description(nb) == "CPU : Foo\ncores : 4"
    assert book.machine_description({"cells": []}) == ""
    real = json.loads((ROOT / "notebooks" / "00_setup.ipynb").read_text(encoding="utf-8"))
    assert "cores" in book.machine_description(real)


def test_the_landing_page_links_every_chapter_and_worksheet():
    page = book.landing_page((ROOT / "README.md").read_text(encoding="utf-8"), CHAPTERS)
    for name in CHAPTERS:
        assert f"(chapters/{name}.ipynb)" in page and f"(worksheets/{name}_worksheet.ipynb)" in page
    assert "make lab" in page and "make test" in page and "(claims.md)" in page
    assert "## Layout" not in page  # only the introduction, the two commands and the chapters
    with pytest.raises(ValueError, match="readme"):
        book.landing_page("# Title\n\nno chapters here\n", CHAPTERS)


def test_claims_are_traced_to_the_chapters_that_show_them():
    chapters_of = book.claim_chapters(ROOT)
    assert set(chapters_of) == set(CLAIMS)
    assert "03" in chapters_of["000.ch03.fig9.batch_min"]  # written in notebook 03
    assert "05" in chapters_of["000.ch05.s410.loss"]       # built from a prefix in a loop
    assert sum(bool(v) for v in chapters_of.values()) > len(CLAIMS) // 2


def test_claims_compared_in_a_verdict_are_told_apart_from_those_only_shown():
    compared = book.compared_claims(ROOT)
    assert "000.bptt.quadratic" in compared   # verdict("000.bptt.quadratic", ...) in notebook 02
    assert "002.speedup.max" in compared      # SEED_SPEEDUP = claim("002.speedup.max"); verdict(SEED_SPEEDUP.id, ...)
    assert "000.task.features" not in compared  # only shown (a setting of the task)
    page = book.seed_page("000", book.claim_chapters(ROOT), {n[:2]: n for n in CHAPTERS}, compared)
    assert "reproduced (measured and compared) in chapter [02](chapters/02_bptt.ipynb)" in page
    assert "shown in chapter [01](chapters/01_serial_rnn.ipynb)" in page


def test_claims_index_and_seed_pages_quote_every_claim():
    chapters_of = book.claim_chapters(ROOT)
    files = {n[:2]: n for n in CHAPTERS}
    index = book.claims_index_page(chapters_of, files)
    for cid in CLAIMS:
        assert f"`{cid}`" in index
    page = book.seed_page("000", chapters_of, files)
    assert "reproduces 0" in page and "(chapters/03_batching.ipynb)" in page
    assert all(f"`{c.id}`" in page for c in CLAIMS.values() if c.seed == "000")
    with pytest.raises(ValueError, match="seed"):
        book.seed_page("999", chapters_of, files)


def test_prepare_writes_chapters_and_worksheets_and_no_solutions(tmp_path):
    meta = book.prepare(ROOT, tmp_path / "src")
    src = tmp_path / "src"
    assert sorted(p.stem for p in (src / "chapters").glob("*.ipynb")) == CHAPTERS
    assert sorted(p.stem for p in (src / "worksheets").glob("*.ipynb")) == [f"{n}_worksheet" for n in CHAPTERS]
    assert not (src / "solutions").exists()
    for p in (src / "worksheets").glob("*.ipynb"):
        assert "BEGIN SOLUTION" not in p.read_text(encoding="utf-8"), p.name
    toc = (src / "myst.yml").read_text(encoding="utf-8")
    assert all(f"chapters/{n}.ipynb" in toc and f"worksheets/{n}_worksheet.ipynb" in toc for n in CHAPTERS)
    assert "template:" in toc and "book/template" in toc
    assert meta["machine"] and meta["panels"] >= len(CHAPTERS) - 2
    with pytest.raises(FileNotFoundError, match="root"):
        book.prepare(tmp_path / "nowhere", tmp_path / "x")


def _ctx(kind="chapter"):
    return book_render.Context({"/chapters/03_batching.ipynb": "batching", "/index.md": "index"}, kind,
                               machine="cores : 2", note="measured on the machine that built this page")


def test_render_node_turns_myst_ast_into_html():
    ctx = _ctx()
    ast = {"type": "root", "children": [
        {"type": "heading", "depth": 2, "html_id": "h", "children": [{"type": "text", "value": "A <b>"}]},
        {"type": "paragraph", "children": [
            {"type": "inlineMath", "value": "x", "html": '<span class="katex">x</span>'},
            {"type": "link", "url": "/batching", "internal": True, "children": [{"type": "text", "value": "ch 03"}]},
            {"type": "link", "url": "03_batching.ipynb#fig", "children": [{"type": "text", "value": "fig"}]}]},
        {"type": "table", "children": [{"type": "tableRow", "children": [
            {"type": "tableCell", "header": True, "children": [{"type": "text", "value": "n"}]}]}]},
        {"type": "outputs", "children": [
            {"type": "output", "jupyter_data": {"output_type": "stream", "name": "stdout", "text": "1.5 GFLOP/s\n"}},
            {"type": "output", "jupyter_data": {"output_type": "display_data", "data": {
                "image/png": {"path": "/abc.png", "content_type": "image/png"}}}}]},
        {"type": "someNewNode", "children": [{"type": "text", "value": "kept"}]},
    ]}
    out = book_render.render_node(ast, ctx)
    assert '<h2 id="h">A &lt;b&gt;</h2>' in out
    assert '<span class="math"><span class="katex">x</span></span>' in out
    assert '<a href="batching.html">ch 03</a>' in out and '<a href="batching.html#fig">fig</a>' in out
    assert "<th>n</th>" in out
    assert '<pre class="output stdout">1.5 GFLOP/s\n</pre>' in out and 'src="_static/abc.png"' in out
    assert "measured on the machine that built this page" in out
    assert "kept" in out and ctx.unknown == {"someNewNode"}


def test_render_page_shows_the_machine_on_chapters_and_untypeset_math_is_reported():
    page = {"frontmatter": {"title": "03 · Batching"}, "location": "/chapters/03_batching.ipynb",
            "mdast": {"type": "root", "children": [{"type": "math", "value": "a^2"}]}}
    ctx = _ctx()
    html = book_render.render_page(page, ctx, "<nav></nav>", "Course")
    assert "cores : 2" in html and "make lab" in html and "notebooks/03_batching.ipynb" in html
    assert ctx.unknown == {"math (not typeset)"}
    ws = book_render.render_page(dict(page, location="/worksheets/03_batching_worksheet.ipynb"),
                                 _ctx("worksheet"), "", "Course")
    assert "exercises/03_batching.ipynb" in ws and "cores : 2" not in ws
    ctx = _ctx()
    book_render.render_node({"type": "link", "url": "nowhere.txt", "children": []}, ctx)
    assert ctx.unresolved == ["nowhere.txt"]
