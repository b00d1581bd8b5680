"""Drive a real JupyterLab in headless Chromium: start a server on copies of the notebooks, Run All,
find every slider panel, move each of its controls once and read back the text and the PNG the
panel's Output widget shows. Used by test_panels.py; runnable by hand for the per-notebook table::

    PYTHONPATH=$PWD COURSE_BUDGET=small .venv/bin/python tests/browser/labdriver.py 10 12

The server gets a free loopback port, a token and config/runtime/data dirs in a temp folder; the
notebooks are *copies* there (JupyterLab autosaves; the committed files must not change). Debian's
/usr/bin/chromium is driven by Playwright's Python API (no browser download).
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: a slider panel: the VBox holding the Output widget (sweep_panel also gives it the CSS class
#: course_lib.teaching.widgets.PANEL_CLASS, "course-panel")
PANEL = ".widget-vbox:has(> .widget-output)"
#: notebooks to walk (another checkout's, to measure it: LABDRIVER_NOTEBOOKS=/path/to/notebooks)
NOTEBOOKS = Path(os.environ.get("LABDRIVER_NOTEBOOKS", ROOT / "notebooks"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read().decode())


def wait(predicate, timeout: float, what: str, interval: float = 0.25):
    """Poll ``predicate`` until it returns a truthy value (returned) or ``timeout`` s pass (AssertionError)."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except RunAllStopped:
            raise
        except Exception as exc:  # server not up yet, element not there yet
            last_exc = exc
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last error: {last_exc})")


@contextlib.contextmanager
def lab_server(served: Path, tmp: Path, *, env_extra: dict | None = None):
    """A JupyterLab serving ``served`` (with the repo's jupyter_server_config.json), private dirs in ``tmp``.
    Yields ``{"base", "token", "tmp", "proc"}``."""
    # as `make lab` (the config of the checkout whose notebooks are walked)
    shutil.copy(NOTEBOOKS.parent / "jupyter_server_config.json", served / "jupyter_server_config.json")
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(ROOT))
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("JUPYTER_DATA_DIR", "data"), ("IPYTHONDIR", "ipython"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("JUPYTERLAB_SETTINGS_DIR", "settings")):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(tmp / sub)
    notify = tmp / "settings" / "@jupyterlab" / "apputils-extension"  # no "Jupyter news?" pop-up
    notify.mkdir(parents=True, exist_ok=True)
    (notify / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    subshells = os.environ.get("LABDRIVER_COMMS_OVER_SUBSHELLS")  # JupyterLab's default: perCommTarget
    if subshells:
        (notify / "kernels-settings.jupyterlab-settings").write_text(json.dumps({"commsOverSubshells": subshells}))
    # every cell in the DOM (no lazy "windowing"), so a Run All's progress can be read off the prompts
    tracker = tmp / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env.update(env_extra or {})
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--ServerApp.token={token}", f"--ServerApp.root_dir={served}", "--ServerApp.open_browser=False",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           f"--config={served / 'jupyter_server_config.json'}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp / "server.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=served)
    base = f"http://127.0.0.1:{port}"
    try:
        wait(lambda: proc.poll() is None and get_json(f"{base}/api/status?token={token}"), 90,
             "the Jupyter server to answer /api/status")
        yield {"base": base, "token": token, "tmp": tmp, "proc": proc}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def kernel_ready(base: str, token: str) -> bool:
    kernels = get_json(f"{base}/api/kernels?token={token}")
    return any(k.get("execution_state") == "idle" and k.get("connections", 0) >= 1 for k in kernels)


def shutdown_kernels(base: str, token: str) -> None:
    for k in get_json(f"{base}/api/kernels?token={token}"):
        req = urllib.request.Request(f"{base}/api/kernels/{k['id']}?token={token}", method="DELETE")
        with contextlib.suppress(Exception):
            urllib.request.urlopen(req, timeout=10).close()


def _prompts(page) -> list[str]:
    return [t.strip() for t in page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()]


def run_all(page, server, path: str, timeout: float = 900) -> float:
    """Open ``path`` (relative to the server root), Run All, wait until every code cell shows an
    execution count and the kernel is idle. Returns the seconds Run All took."""
    base, token = server["base"], server["token"]
    page.goto(f"{base}/lab/tree/{path}?token={token}&reset")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=120_000)
    # A Run All clicked before the kernel is connected is silently dropped: wait for it.
    wait(lambda: kernel_ready(base, token), 120, "an idle kernel with a connection")
    before = _prompts(page)
    t0 = time.monotonic()
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    wait(lambda: _prompts(page) != before, 60, "Run All to start")

    stalled, seen = [], {}

    def done():
        prompts = _prompts(page)
        seen["prompts"] = prompts
        if not prompts or any("*" in p for p in prompts) or not kernel_ready(base, token):
            stalled.clear()
            return False
        if all(p.strip("[]: ").isdigit() for p in prompts):
            return True
        stalled.append(time.monotonic())  # idle with cells left unrun: Run All stopped at an error?
        if stalled[-1] - stalled[0] > 15:
            raise RunAllStopped(f"{path}: Run All stopped with cells unrun (prompts {prompts});\n"
                                + "\n".join(error_texts(page))[-3000:])
        return False

    try:
        wait(done, timeout, f"all cells of {path} to finish", interval=1.0)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; prompts {seen.get('prompts')}") from None
    return time.monotonic() - t0


class RunAllStopped(AssertionError):
    """Run All ended with cells unrun (an error, or a dropped request)."""


def error_texts(page) -> list[str]:
    """The text of every error output on the page."""
    errs = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    return [t for t in errs.all_inner_texts() if "Error" in t or "Traceback" in t]


def png_of(src: str) -> bytes:
    prefix = "data:image/png;base64,"
    if not src or not src.startswith(prefix):
        raise AssertionError(f"the panel shows no PNG (img src starts {src[:40]!r})")
    return base64.b64decode(src[len(prefix):])


def image_facts(png: bytes) -> dict:
    """What is drawn in a panel's PNG: ``ink`` (fraction of non-white pixels) and ``axes`` (boxes
    framed by axes spines: dark vertical lines at least a third of the image tall, paired left/right)."""
    import numpy as np
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.int16)
    h, w = img.shape
    ink = float((img < 245).mean())
    dark = img < 90
    longest = np.zeros(w, dtype=int)  # longest vertical run of dark pixels in each column
    run = np.zeros(w, dtype=int)
    for row in dark:
        run = np.where(row, run + 1, 0)
        longest = np.maximum(longest, run)
    cols = np.flatnonzero(longest >= max(30, h // 3))
    groups = 0 if cols.size == 0 else 1 + int(np.count_nonzero(np.diff(cols) > 2))
    return {"ink": ink, "axes": (groups + 1) // 2, "size": (w, h)}


# --------------------------------------------------------------------------- panels
_JS_MARK = """(panel) => {
  const out = panel.querySelector('.widget-output');
  if (!out) return 0;
  out.querySelectorAll('img, pre').forEach(e => e.setAttribute('data-seen', '1'));
  return 1;
}"""


def panels(page):
    return page.locator(PANEL)


def panel_state(panel) -> dict:
    """The text lines, the newest image's src and whether each was drawn since the last mark."""
    out = panel.locator(".widget-output")
    texts = out.locator("pre").all_inner_texts()
    imgs = out.locator("img")
    src = imgs.last.get_attribute("src") if imgs.count() else ""
    fresh_img = out.locator("img:not([data-seen])").count() > 0
    fresh_text = out.locator("pre:not([data-seen])").count() > 0
    return {"text": "\n".join(t.strip() for t in texts), "src": src, "fresh_img": fresh_img,
            "fresh_text": fresh_text}


def controls(panel):
    """(kind, locator) for every control of a panel that can move, in order (a slider whose range holds one
    value -- threads on a one-core machine -- is shown disabled and has nowhere to go)."""
    found = []
    boxes = panel.locator(".widget-slider, .widget-dropdown, .widget-checkbox")
    for i in range(boxes.count()):
        box = boxes.nth(i)
        cls = box.get_attribute("class") or ""
        kind = "slider" if "widget-slider" in cls else "dropdown" if "widget-dropdown" in cls else "checkbox"
        if kind == "slider":
            handle = box.locator(".noUi-handle").first
            if handle.get_attribute("aria-valuemin") == handle.get_attribute("aria-valuemax"):
                continue
        found.append((kind, box))
    return found


def control_name(box) -> str:
    label = box.locator(".widget-label")
    return label.first.inner_text().strip() if label.count() else "?"


def move(page, kind: str, box) -> str:
    """Move one control one step (towards the middle of its range); returns its new value as shown."""
    box.scroll_into_view_if_needed()
    if kind == "slider":
        handle = box.locator(".noUi-handle").first
        readout = box.locator(".widget-readout").first
        before = readout.inner_text().strip()
        now = float(handle.get_attribute("aria-valuenow"))
        lo, hi = float(handle.get_attribute("aria-valuemin")), float(handle.get_attribute("aria-valuemax"))
        handle.focus()
        page.keyboard.press("ArrowLeft" if now >= (lo + hi) / 2 else "ArrowRight")
        return wait(lambda: (r := readout.inner_text().strip()) != before and r, 10, "the readout to move")
    if kind == "dropdown":
        select = box.locator("select").first
        n = select.locator("option").count()
        idx = select.evaluate("s => s.selectedIndex")
        select.select_option(index=(idx + 1) % n)
        return select.evaluate("s => s.value")
    checkbox = box.locator("input[type=checkbox]").first
    checkbox.click()
    return str(checkbox.is_checked())


def control_width(box) -> float:
    """Pixels of usable track (slider) or of the select / checkbox itself."""
    inner = box.locator(".slider-container, .noUi-target, select, input[type=checkbox]").first
    bb = inner.bounding_box()
    return bb["width"] if bb else 0.0


def walk_panels(page, *, settle: float = 240.0, after: float = 1.0, log=print) -> list[dict]:
    """Move every control of every panel on the page once. For each move: the control, the panel's
    text before/after, and the facts of the image the panel shows ``after`` s after it was redrawn
    (so a late redraw would be seen)."""
    moves = []
    for p in range(panels(page).count()):
        panel = panels(page).nth(p)
        panel.scroll_into_view_if_needed()
        first = panel_state(panel)
        reference = image_facts(png_of(first["src"])) if first["src"] else None
        for kind, box in controls(panel):
            name = control_name(box)
            before = panel_state(panel)
            panel.evaluate(_JS_MARK)
            t0 = time.monotonic()
            value = move(page, kind, box)
            state = wait(lambda: (s := panel_state(panel))["fresh_img"] and s["fresh_text"] and s, settle,
                         f"panel {p} to redraw after {name} -> {value}")
            time.sleep(after)
            state = panel_state(panel)
            facts = image_facts(png_of(state["src"])) if state["src"] else None
            rec = {"panel": p, "control": name, "kind": kind, "value": value, "width": control_width(box),
                   "seconds": time.monotonic() - t0, "text_before": before["text"], "text": state["text"],
                   "reference": reference, "image": facts}
            log(f"  panel {p} {name:>8} -> {value:<8} {rec['seconds']:5.1f} s  image {facts}  "
                f"(after Run All {reference})  text {state['text'][:70]!r}")
            moves.append(rec)
    return moves


def complete(rec: dict) -> bool:
    """A redrawn image holds as many axes as the one after Run All and at least half its ink."""
    ref, img = rec["reference"], rec["image"]
    return bool(img and ref and img["axes"] == ref["axes"] and img["ink"] >= 0.5 * ref["ink"] and img["ink"] > 0.01)


@contextlib.contextmanager
def browser(tmp: Path, width: int = 1280, height: int = 1000):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": width, "height": height})
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(60_000)
            yield page
        finally:
            context.close()


def notebook_names(only=()) -> list[str]:
    names = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    return [n for n in names if not only or n[:2] in only]


def main(argv) -> int:
    only = set(argv)
    tmp = Path(tempfile.mkdtemp(prefix="labwalk-"))
    served = tmp / "course"
    (served / "notebooks").mkdir(parents=True)
    rows = []
    with lab_server(served, tmp) as server, browser(tmp) as page:
        for name in notebook_names(only):
            shutil.copy(NOTEBOOKS / name, served / "notebooks" / name)
            print(name, flush=True)
            try:
                secs = run_all(page, server, f"notebooks/{name}")
                t0 = time.monotonic()
                moves = walk_panels(page, log=lambda s: print(s, flush=True))
            except AssertionError as exc:
                page.screenshot(path=str(tmp / f"{name}.png"))
                print(f"  FAILED: {exc} (screenshot {tmp / name}.png)", flush=True)
                shutdown_kernels(server["base"], server["token"])
                continue
            ok = sum(complete(m) for m in moves)
            rows.append((name, len(moves), ok, secs, time.monotonic() - t0,
                         min((m["width"] for m in moves), default=0)))
            shutdown_kernels(server["base"], server["token"])
    print(f"{'notebook':<28} {'moved':>5} {'complete':>8} {'run all s':>9} {'moves s':>7} {'min px':>6}")
    for r in rows:
        print(f"{r[0]:<28} {r[1]:>5} {r[2]:>8} {r[3]:>9.0f} {r[4]:>7.0f} {r[5]:>6.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
