"""The course site (``make book``) in a real browser: serve ``build/book/html`` on loopback, open every
page in headless Chromium and check what a reader sees.

Every page answers (no 404), every image loads (natural width > 0), no raw widget text, every link
inside the site resolves, math is typeset (KaTeX, no raw ``$$``), the landing page shows the chapter
table, every chapter and worksheet is there and no solution is. Each chapter and worksheet page offers
its notebook (a download shipped with the site, Colab, Binder, the repository); every plot has its own
alt text; the site turns dark when the reader's system asks (prefers-color-scheme: dark), fits a phone's
width (375 px) without sideways scrolling, and prints without its navigation. Screenshots of the
landing page, one chapter page and its dark, phone and print views land in test-artifacts/book/.

``make test-book`` builds the site and runs this file with BOOK_REQUIRED=1 (a missing site then fails);
in a plain ``make test`` the file is skipped when the site was not built.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("BOOK_HTML", ROOT / "build" / "book" / "html"))
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts" / "book"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RAW_WIDGET_TEXT = ("Loading widget", "VBox(children=", "HBox(children=", "IntSlider(value=",
                   "application/vnd.jupyter.widget-view+json", "[interactive panel with controls")
CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

pytestmark = pytest.mark.browser


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site():
    if not (SITE / "index.html").is_file():
        if os.environ.get("BOOK_REQUIRED"):
            pytest.fail(f"no built site at {SITE}: `make book` did not produce it")
        pytest.skip(f"the course site is not built ({SITE}); `make test-book` builds and tests it")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (make chromium)")
    pytest.importorskip("playwright.sync_api")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _crawl(page, base: str) -> dict:
    """Visit every page reachable from the landing page; per page: title, links, images, text."""
    seen, queue, pages = set(), [f"{base}/index.html"], {}
    while queue:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        response = page.goto(url)
        page.wait_for_load_state("load")
        info = {
            "status": response.status if response else 0,
            "text": page.locator("main").inner_text().replace("\u200b", ""),  # MyST's soft breaks
            "images": page.eval_on_selector_all(
                "img", "els => els.map(e => [e.getAttribute('src'), e.complete, e.naturalWidth])"),
            "links": page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"),
            "katex": page.locator(".katex").count(),
            "tables": page.locator("main table").count(),
            "launch": page.eval_on_selector_all("nav.launch a", "els => els.map(e => [e.className, e.href])"),
            "alts": page.eval_on_selector_all("img.output", "els => els.map(e => e.getAttribute('alt'))"),
        }
        pages[url] = info
        for href in info["links"]:
            target = href.split("#")[0]
            if target.startswith(base) and target.endswith(".html") and target not in seen:
                queue.append(target)
    return pages


@pytest.fixture(scope="module")
def crawled(site):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            blocked = []
            page.route("**/*", lambda route: (route.continue_() if route.request.url.startswith(site)
                                              else (blocked.append(route.request.url), route.abort())))
            pages = _crawl(page, site)
            page.goto(f"{site}/index.html")
            page.screenshot(path=str(ARTIFACTS / "landing.png"), full_page=True)  # down to the chapter table
            page.goto(f"{site}/batching.html")
            page.locator("img.output").first.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "chapter_03_batching.png"), full_page=False)
        finally:
            browser.close()
    return {"base": site, "pages": pages, "blocked": blocked}


def test_every_page_loads_and_nothing_is_fetched_from_outside(crawled):
    pages = crawled["pages"]
    assert len(pages) >= 2 * len(CHAPTERS) + 2, sorted(pages)
    bad = {u: i["status"] for u, i in pages.items() if i["status"] != 200}
    assert not bad, bad
    assert not crawled["blocked"], f"the site asked for outside addresses: {crawled['blocked'][:5]}"


def test_every_internal_link_resolves(crawled):
    base, broken = crawled["base"], {}
    targets = {href for info in crawled["pages"].values() for href in info["links"] if href.startswith(base)}
    for href in sorted(targets):
        path = href.split("#")[0]
        if _status(path) != 200:
            broken[href] = _status(path)
    assert not broken, broken
    outside = {h for info in crawled["pages"].values() for h in info["links"]
               if not h.startswith((base, "http://", "https://", "mailto:"))}
    assert not outside, f"links that point nowhere on this site: {sorted(outside)[:10]}"


def test_every_image_loads(crawled):
    broken = [(u, src) for u, info in crawled["pages"].items() for src, done, width in info["images"]
              if not (done and width > 0)]
    assert not broken, broken[:10]
    assert sum(len(i["images"]) for i in crawled["pages"].values()) > 20


def test_no_raw_widget_text_and_panels_show_their_first_render(crawled):
    for url, info in crawled["pages"].items():
        for raw in RAW_WIDGET_TEXT:
            assert raw not in info["text"], (url, raw)
    setup = crawled["pages"][f"{crawled['base']}/setup.html"]
    assert "the sliders cannot move" in setup["text"] and "JupyterLab" in setup["text"]
    assert "GFLOP/s" in setup["text"]  # the panel's stored printed line


def test_math_is_typeset(crawled):
    for url, info in crawled["pages"].items():
        assert "$$" not in info["text"], url
    assert sum(i["katex"] for i in crawled["pages"].values()) > 10


def test_landing_page_shows_the_chapter_table_and_every_chapter_and_worksheet_is_there(crawled):
    base, pages = crawled["base"], crawled["pages"]
    landing = pages[f"{base}/index.html"]
    assert landing["tables"] >= 1 and "make lab" in landing["text"] and "make test" in landing["text"]
    for name in CHAPTERS:
        assert name in landing["text"], name
    slugs = {urllib.parse.urlparse(u).path.strip("/")[:-5] for u in pages}
    assert len({s for s in slugs if s.endswith("-worksheet")}) == len(CHAPTERS), sorted(slugs)
    chapters = [i for i in pages.values() if "measured on the machine that built this page" in i["text"]
                and "make lab" in i["text"]]
    assert len(chapters) >= len(CHAPTERS)


def test_no_solution_is_on_the_site(crawled):
    """The worksheet pages come from exercises/: their functions still raise NotImplementedError, and
    no page has the solution markers nor the text of a solution region."""
    for url, info in crawled["pages"].items():
        assert "### BEGIN SOLUTION" not in info["text"], url
    worksheets = [i for u, i in crawled["pages"].items() if u.endswith("-worksheet.html")]
    assert worksheets and all("NotImplementedError" in i["text"] for i in worksheets[1:])
    # a solution line that the exercise version does not contain is nowhere on the site
    sol = (ROOT / "solutions" / "01_serial_rnn.py").read_text(encoding="utf-8")
    region = sol.split("### BEGIN SOLUTION", 1)[1].split("### END SOLUTION", 1)[0]
    line = max((ln.strip() for ln in region.splitlines()), key=len)
    assert len(line) > 10
    assert all(line not in i["text"] for i in crawled["pages"].values()), line


def test_claims_index_and_seed_pages(crawled):
    base, pages = crawled["base"], crawled["pages"]
    from course_lib.teaching.claims import CLAIMS

    index = pages[f"{base}/claims.html"]
    for cid, _c in CLAIMS.items():
        assert cid in index["text"], cid
    seed000 = pages[f"{base}/seed-000.html"]
    assert "reproduces" in seed000["text"] and "Fig. 9" in seed000["text"]


LAUNCH = {"download", "colab", "binder", "repository"}


def _sources(nb: dict) -> list[str]:
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in nb["cells"]]


def test_every_chapter_and_worksheet_page_offers_its_notebook(crawled):
    """Download (a copy shipped with the site, the very file in the repository), Colab, Binder and the
    repository, each pointing at the page's own notebook: notebooks/ for a chapter, exercises/ for a
    worksheet, never solutions/."""
    from course_lib.teaching import links

    base, offered = crawled["base"], {}
    for url, info in crawled["pages"].items():
        if not info["launch"]:
            continue
        by_kind = {cls: href for cls, href in info["launch"]}
        assert set(by_kind) == LAUNCH, (url, info["launch"])
        m = re.fullmatch(re.escape(base) + r"/_static/download/((notebooks|exercises)/\d\d_\w+\.ipynb)",
                         by_kind["download"])
        assert m, (url, by_kind["download"])
        path = m.group(1)
        assert (m.group(2) == "exercises") == url.endswith("-worksheet.html"), (url, path)
        assert by_kind["colab"] == links.colab_url(path)
        assert by_kind["binder"] == links.binder_url(path)
        assert by_kind["repository"] == links.file_url(path)
        offered[path] = by_kind["download"]
    want = {f"{folder}/{name}.ipynb" for folder in ("notebooks", "exercises") for name in CHAPTERS}
    assert set(offered) == want, sorted(set(offered) ^ want)
    built = (SITE / "index.html").stat().st_mtime
    for path, href in offered.items():
        with urllib.request.urlopen(href, timeout=10) as r:
            shipped = r.read()
        nb = json.loads(shipped)
        heading = re.search(rf"^# (Worksheet )?{Path(path).name[:2]} ", "\n".join(_sources(nb)[:3]), re.M)
        assert nb["nbformat"] == 4 and heading, f"{path}: the download is not that chapter's notebook"
        if (ROOT / path).stat().st_mtime <= built:  # unchanged since the site was built: the very file
            assert shipped == (ROOT / path).read_bytes(), path
    every_href = [h for info in crawled["pages"].values() for h in info["links"]]
    assert not [h for h in every_href if "solutions/" in h]


def test_every_plot_has_its_own_alt_text(crawled):
    total = 0
    for url, info in crawled["pages"].items():
        alts = info["alts"]
        total += len(alts)
        assert all(a and a.strip() for a in alts), (url, alts)
        if len(alts) > 1:
            assert len(set(alts)) >= 0.9 * len(alts), (url, alts)
    assert total > 20
    plots = [a for info in crawled["pages"].values() for a in info["alts"]]
    assert len(set(plots)) >= 0.9 * len(plots)


def _luminance(css_colour: str) -> float:
    """Relative luminance (0 black .. 1 white) of a computed ``rgb(...)``/``rgba(...)`` colour."""
    r, g, b = (int(v) / 255 for v in re.findall(r"[\d.]+", css_colour)[:3])
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


_STYLE = """sel => { const e = document.querySelector(sel); if (!e) return null;
  const s = getComputedStyle(e); return [s.backgroundColor, s.color, s.display]; }"""


@pytest.fixture(scope="module")
def views(site):
    """The site as a reader's browser shows it in dark mode, on a phone (375 x 740) and in print."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    chapter = f"{site}/batching.html"
    out = {"narrow": {}}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for scheme in ("light", "dark"):
                page = browser.new_page(viewport={"width": 1200, "height": 900}, color_scheme=scheme)
                page.goto(chapter)
                out[scheme] = {sel: page.evaluate(_STYLE, sel) for sel in ("body", "pre.source", "img.output")}
                if scheme == "dark":
                    page.locator("img.output").first.scroll_into_view_if_needed()
                    page.screenshot(path=str(ARTIFACTS / "chapter_03_dark.png"))
                    page.emulate_media(media="print")
                    out["print"] = {sel: page.evaluate(_STYLE, sel)
                                    for sel in ("body", "header", "nav.toc", "nav.launch", "main", "footer")}
                    page.screenshot(path=str(ARTIFACTS / "chapter_03_print.png"))
                page.close()
            phone = browser.new_page(viewport={"width": 375, "height": 740})
            for name in sorted(q.name for q in SITE.glob("*.html")):
                phone.goto(f"{site}/{name}")
                out["narrow"][name] = phone.evaluate("[document.documentElement.scrollWidth, innerWidth]")
            phone.goto(chapter)
            phone.screenshot(path=str(ARTIFACTS / "chapter_03_phone.png"))
        finally:
            browser.close()
    return out


def test_dark_mode_follows_the_readers_system(views):
    light, dark = views["light"], views["dark"]
    assert _luminance(light["body"][0]) > 0.8 and _luminance(light["body"][1]) < 0.1, light
    assert _luminance(dark["body"][0]) < 0.05 and _luminance(dark["body"][1]) > 0.6, dark
    assert _luminance(dark["pre.source"][0]) < 0.05 and _luminance(dark["pre.source"][1]) > 0.6, dark
    assert _luminance(dark["img.output"][0]) > 0.8, "a plot (a PNG drawn on white) keeps a light backdrop"


def test_a_phone_sized_screen_never_scrolls_sideways(views):
    assert len(views["narrow"]) >= 2 * len(CHAPTERS) + 2
    wide = {name: sw for name, sw in views["narrow"].items() if sw[0] > sw[1]}
    assert not wide, f"pages wider than a 375 px screen ([scrollWidth, innerWidth]): {wide}"


def test_print_shows_the_content_only_black_on_white(views):
    shown = views["print"]
    for sel in ("header", "nav.toc", "nav.launch", "footer"):
        assert shown[sel][2] == "none", (sel, shown[sel])
    assert shown["main"][2] != "none"
    assert _luminance(shown["body"][0]) > 0.95 and _luminance(shown["body"][1]) < 0.01, shown["body"]
