"""A slider panel redraws completely even while other code uses pyplot in another thread.

JupyterLab 4.6 sends widget comm messages over a kernel *subshell* (setting ``commsOverSubshells``,
default ``perCommTarget``), and ipykernel 7 runs each subshell in its own thread: a panel's redraw
runs while the notebook's cells run in the main thread. A redraw built on pyplot's global state
(``plt.subplots`` / ``plt.gcf`` / ``plt.show``, which closes every open figure) then drew into, showed
or closed the other thread's figures: blank, title-only or half-drawn plots. Here the main thread
opens, draws and closes pyplot figures in a loop while another thread moves the panel's control;
every image the panel holds must equal the one drawn with nothing else going on.
"""
from __future__ import annotations

import base64
import io
import threading

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
matplotlib = pytest.importorskip("matplotlib")

from course_lib.teaching import widgets  # noqa: E402


def _compute(k):
    return {"k": k, "y": np.sin(np.linspace(0, k, 200))}


def _render(d, axes):
    left, right = axes
    left.plot(d["y"])
    left.set_title(f"k = {d['k']}")
    right.bar(["a", "b", "c"], [d["k"], 2 * d["k"], 3])
    return f"k = {d['k']}"


def _pixels(png_b64: str) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(base64.b64decode(png_b64))).convert("L"))


def _image_and_text(panel):
    outs = panel.output.outputs
    text = "".join(o["text"] for o in outs if o["output_type"] == "stream")
    imgs = [o["data"]["image/png"] for o in outs if o["output_type"] == "display_data"]
    assert len(imgs) == 1, outs
    return imgs[0], text


def test_each_redraw_replaces_text_and_image_together():
    panel = widgets.sweep_panel(_compute, {"k": (1, 9, 1, 3)}, render=_render, axes=(1, 2), figsize=(6, 2.5))
    img, text = _image_and_text(panel)
    assert text == "k = 3\n"
    panel.controls["k"].value = 5
    img5, text5 = _image_and_text(panel)
    assert text5 == "k = 5\n" and img5 != img


def test_redraws_in_a_thread_are_complete_while_the_main_thread_uses_pyplot():
    import matplotlib.pyplot as plt

    panel = widgets.sweep_panel(_compute, {"k": (1, 9, 1, 1)}, render=_render, axes=(1, 2), figsize=(6, 2.5))
    alone = {}
    for k in range(1, 10):  # the reference pictures, drawn with nothing else going on
        panel.controls["k"].value = k
        alone[k] = _pixels(_image_and_text(panel)[0])
    seen, errors, stop = [], [], threading.Event()

    def mover():  # the subshell thread: a student moving the slider
        try:
            for _rep in range(2):
                for k in range(1, 10):
                    panel.controls["k"].value = k
                    img, text = _image_and_text(panel)
                    seen.append((k, text, _pixels(img)))
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            stop.set()

    t = threading.Thread(target=mover)
    t.start()
    while not stop.is_set():  # the main thread: cells drawing figures and closing them all
        fig, ax = plt.subplots()
        ax.plot(np.random.default_rng(0).standard_normal(50))
        plt.gca().set_title("a cell's figure")
        plt.close("all")
    t.join(60)
    assert not errors, errors
    assert len(seen) == 18
    for k, text, px in seen:
        assert text == f"k = {k}\n"
        assert px.shape == alone[k].shape and np.array_equal(px, alone[k]), f"redraw for k = {k} differs from its picture"


def test_render_png_bad_input():
    with pytest.raises(ValueError, match="axes"):
        widgets.render_png(_render, _compute(2), axes=(1, 0))
    with pytest.raises(TypeError, match="render"):
        widgets.render_png(3, _compute(2))
