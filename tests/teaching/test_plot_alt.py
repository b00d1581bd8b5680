"""Alt text for figures (course_lib.teaching.plots.describe): the description says the figure's titles,
axes and legends, and a figure shown in a real Jupyter kernel carries it as its PNG output's metadata."""
from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from course_lib.teaching.plots import describe


def test_a_figure_is_described_by_its_titles_axes_and_legend():
    fig, (a, b) = plt.subplots(1, 2)
    fig.suptitle("Scan against serial")
    a.plot([1, 2], label="serial")
    a.plot([2, 1], label="$\\tau$ scan")
    a.legend()
    a.set_title("time per step")
    a.set_xlabel("sequence length $T$")
    a.set_ylabel("time (s)")
    b.set_title("speed-up")
    text = describe.describe_figure(fig)
    plt.close(fig)
    assert text.startswith("Figure with 2 panels: Scan against serial.")
    assert "panel 1: time per step (time (s) against sequence length T); legend: serial, tau scan" in text
    assert "panel 2: speed-up" in text and "$" not in text


def test_figures_differ_and_a_long_description_is_cut_at_a_word():
    one, ax1 = plt.subplots()
    ax1.set_title("GEMV bandwidth")
    two, ax2 = plt.subplots()
    ax2.set_title("GEMM bandwidth")
    ax2.set_xlabel("x " * 400)
    assert describe.describe_figure(one) != describe.describe_figure(two)
    cut = describe.describe_figure(two, limit=60)
    assert len(cut) <= 60 and cut.endswith("...")
    assert describe.describe_figure(plt.figure()) == "Empty figure"
    plt.close("all")


def test_bad_input_is_refused_by_name():
    with pytest.raises(TypeError, match="fig"):
        describe.describe_figure("a plot")
    fig = plt.figure()
    with pytest.raises(ValueError, match="limit"):
        describe.describe_figure(fig, limit=5)
    plt.close(fig)
    with pytest.raises(TypeError, match="shell"):
        describe.register_alt_text(shell=object())


def test_outside_ipython_registering_does_nothing():
    assert describe.register_alt_text() is False


CELLS_PLOTS_FIRST = [
    "from course_lib.teaching import plots",
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.set_title('first')\nax.set_xlabel('T')",
    "fig, ax = plt.subplots()\nax.set_title('second')\nplt.show()\nfig, ax = plt.subplots()\nax.set_title('third')",
]
CELLS_PYPLOT_FIRST = [
    "import matplotlib.pyplot as plt",
    "from course_lib.teaching import plots",
    "fig, ax = plt.subplots()\nax.set_title('fourth')",
]
CELLS_FIRST_FIGURE_SHOWN_MID_CELL = [  # the inline backend starts at the first figure, inside this cell
    "from course_lib.teaching import plots\nimport matplotlib.pyplot as plt",
    "fig, ax = plt.subplots()\nax.set_title('fifth')\nplt.show()\nprint('after')",
    "%config InlineBackend.figure_formats = ['retina']",
    "fig, ax = plt.subplots()\nax.set_title('sixth')",
]
CELLS_WITHOUT_THE_COURSE = ["import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.set_title('plain')"]


@pytest.mark.parametrize("cells, titles", [(CELLS_PLOTS_FIRST, ["first", "second", "third"]),
                                           (CELLS_PYPLOT_FIRST, ["fourth"]),
                                           (CELLS_FIRST_FIGURE_SHOWN_MID_CELL, ["fifth", "sixth"]),
                                           (CELLS_WITHOUT_THE_COURSE, [None])])
def test_in_a_jupyter_kernel_every_png_carries_its_alt_text(cells, titles):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpecManager

    if "python3" not in KernelSpecManager().find_kernel_specs():
        pytest.skip("no python3 Jupyter kernel")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    alts = [o["metadata"].get("image/png", {}).get("alt") for cell in nb.cells for o in cell.outputs
            if "image/png" in o.get("data", {})]
    assert len(alts) == len(titles), [cell.outputs for cell in nb.cells]
    for alt, title in zip(alts, titles):
        if title is None:  # the control: without the course's plots module a figure has no alt text
            assert alt is None, alts
        else:
            assert alt is not None and alt.startswith(f"Figure: {title}"), alts


def test_a_slider_panels_plot_carries_its_alt_text():
    pytest.importorskip("ipywidgets")
    from course_lib.teaching import widgets

    def render(data, ax):
        ax.plot(data)
        ax.set_xlabel("step")
        ax.set_ylabel("loss")

    panel = widgets.sweep_panel(lambda n: list(range(n)), {"n": (2, 10, 1)}, render=render, title="a loss curve")
    panel.refresh()
    images = [o for o in panel.output.outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1
    assert images[0]["metadata"]["image/png"]["alt"] == "Figure: a loss curve (loss against step)"


def test_a_grid_of_small_panels_names_only_those_that_say_something():
    fig, axes = plt.subplots(2, 3)
    axes[0, 0].set_title("t = 0")
    axes[1, 0].imshow([[0, 1], [1, 0]])
    axes[1, 0].set_ylabel("target")
    text = describe.describe_figure(fig)
    assert text == "Figure with 6 panels: panel 1: t = 0. panel 4: an image (target)"
    bare, ax = plt.subplots()
    ax.imshow([[0, 1]])
    assert describe.describe_figure(bare) == "Figure: an image"
    plt.close("all")
