"""A real JupyterLab in a real browser: open chapter 00, Run All, move the slider, and see the
printed line and the plot change.

The server gets a free loopback port, a token and config/runtime/data dirs in a temp folder; the
notebook is a *copy* in that folder (JupyterLab autosaves, and the committed notebook must not
change). Debian's /usr/bin/chromium is driven by Playwright's Python API (no browser download).
Screenshots land in test-artifacts/browser/.
"""
from __future__ import annotations

import os
import shutil

import pytest

from . import labdriver as L

ROOT = L.ROOT
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (make test installs Debian's chromium when apt-get is usable)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
    tmp = tmp_path_factory.mktemp("lab")
    served = tmp / "course"
    (served / "notebooks").mkdir(parents=True)
    for name in ("00_setup.ipynb", "00_setup.py", "02_bptt.ipynb", "02_bptt.py"):
        shutil.copy(ROOT / "notebooks" / name, served / "notebooks" / name)
    with L.lab_server(served, tmp) as server:   # the same server the panel walk uses
        yield server


def _widget_text(page) -> str:
    texts = page.locator(".jp-OutputArea-output pre").all_inner_texts()
    hits = [t for t in texts if t.startswith("n = ") and "GFLOP/s" in t]
    return hits[-1] if hits else ""


def _widget_plot_src(page) -> str:
    imgs = page.locator(".widget-output img, .jupyter-widgets-output-area img")
    return imgs.last.get_attribute("src") if imgs.count() else ""


def test_unrun_notebook_is_readable_and_each_chapter_listed_once(lab_server):
    """Opened without running: no raw ``VBox(children=...`` text where a slider panel will be, and the
    file browser shows one entry per chapter (the jupytext ``.py`` twin is hidden)."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    base, token = lab_server["base"], lab_server["token"]
    listing = L.get_json(f"{base}/api/contents/notebooks?token={token}")
    names = sorted(item["name"] for item in listing["content"])
    assert names == ["00_setup.ipynb", "02_bptt.ipynb"], names
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(lab_server["tmp"] / "chromium-profile-unrun"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000})
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/tree/notebooks/02_bptt.ipynb?token={token}&reset")
            page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=120_000)
            L.wait(lambda: page.locator(".jp-OutputArea-output").count() > 3, 60, "the stored outputs to render")
            cells = page.locator(".jp-Notebook .jp-Cell")

            def outputs_text():  # JupyterLab renders cells lazily: visit each one, then read them all
                texts = []
                for i in range(cells.count()):
                    cells.nth(i).scroll_into_view_if_needed()
                    texts += cells.nth(i).locator(".jp-OutputArea-output").all_inner_texts()
                joined = " ".join(texts)
                return joined if "run this cell" in joined else ""

            text = L.wait(outputs_text, 90, "the slider panel's placeholder to be shown")
            page.screenshot(path=str(ARTIFACTS / "02_bptt_unrun.png"), full_page=False)
            assert "VBox(children=" not in text and "IntSlider(value=" not in text, text[-400:]
        finally:
            context.close()


def test_setup_notebook_runs_and_slider_updates(lab_server):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    base, token = lab_server["base"], lab_server["token"]
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(lab_server["tmp"] / "chromium-profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000})
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{base}/lab/tree/notebooks/00_setup.ipynb?token={token}&reset")
            page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=120_000)
            # A Run All clicked before the kernel is connected is silently dropped: wait for it.
            L.wait(lambda: L.kernel_ready(base, token), 120, "an idle kernel with a connection")
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()

            L.wait(lambda: _widget_text(page), 180, "the slider panel's printed line after Run All")
            L.wait(lambda: not page.locator(".jp-InputPrompt", has_text="[*]").count()
                  and L.kernel_ready(base, token), 180, "all cells to finish")
            before_text, before_img = _widget_text(page), _widget_plot_src(page)
            page.locator(".widget-slider").first.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "00_setup_after_run_all.png"), full_page=False)
            assert before_text.startswith("n = 256:"), before_text
            assert before_img, "the slider panel shows no plot"
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
            tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
            assert not tracebacks, tracebacks[:1]

            # Move the slider: focus its handle and press the arrow key (continuous_update=False
            # sends the new value when the key is released).
            handle = page.locator(".widget-slider .noUi-handle").first
            handle.scroll_into_view_if_needed()
            handle.click()
            page.keyboard.press("ArrowRight")
            page.keyboard.press("ArrowRight")

            def settled():
                readout = page.locator(".widget-readout").first.inner_text().strip()
                text = _widget_text(page)
                return readout != "256" and text.startswith(f"n = {readout}:") and text

            after_text = L.wait(settled, 120, "the printed line to follow the slider")
            L.wait(lambda: _widget_plot_src(page) not in ("", before_img), 60, "the plot to change")
            readout = page.locator(".widget-readout").first.inner_text().strip()
            assert after_text.startswith(f"n = {readout}:"), (after_text, readout)
            assert readout != "256"
            page.locator(".widget-slider").first.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "00_setup_after_slider.png"), full_page=False)
        finally:
            context.close()
