"""Slider panels: thin ipywidgets shells over plain functions (teaching folder).

The pattern used in every chapter::

    def gemm_rate(n):                      # a plain function: returns data, tested directly
        ...
        return {"n": n, "gflops": ...}

    panel = widgets.sweep_panel(
        gemm_rate,
        controls={"n": (64, 2048, 64, 512)},          # (min, max, step, value) -> IntSlider
        render=lambda data, ax: ax.bar(...) and f"{data['gflops']:.1f} GFLOP/s",
        cost=lambda n: 2 * n**3, max_cost=2 * 2048**3,  # refuse settings that would take too long
    )
    panel                                   # shows the sliders, a text line and a plot

``render(data, ax)`` draws on a fresh matplotlib axis (``axes=(rows, cols)``: on a tuple of
fresh axes) and may return a line of text (printed above the plot); without ``render`` the data
itself is printed. ``cost(**values)`` estimates the work a setting asks for; above ``max_cost``
the panel says so instead of computing.

Each redraw is self-contained: the figure is a ``matplotlib.figure.Figure`` of the panel's own,
never registered with pyplot, rendered to a PNG and put into the panel's Output widget together
with the text in one update of its ``outputs``. Nothing global is shared with the notebook's other
cells or panels: no ``plt.show()`` (which, in the inline backend, displays *and closes every open
figure*), no ``plt.gcf()``, no output captured by message id. Why: JupyterLab 4.6 sends widget
comm messages over a kernel *subshell* (its ``commsOverSubshells`` setting, default
``perCommTarget``) and ipykernel 7 runs a subshell in a thread of its own, so a redraw runs off the
main thread, at the same time as other pyplot users. A redraw built on pyplot's process-wide state
came out blank, title-only or half-drawn, or raised inside ``tight_layout`` (chapters 00, 10, 11,
12); with ``commsOverSubshells`` disabled the same code drew every plot. See
tests/test_panel_threads.py and tests/browser/test_panels.py.

The controls sit in a grid that wraps (``CONTROL_WIDTH`` px per column), so six sliders do not
share one row.

ipywidgets and matplotlib are imported lazily, inside the functions.
"""
from __future__ import annotations

import base64
import io
import math
import numbers
import traceback
from functools import lru_cache
from typing import Any, Callable, Mapping

import numpy as np

from ..core.validate import check_callable, check_float, check_str
from .plots.describe import describe_figure

__all__ = ["make_control", "sweep_panel", "within_budget", "placeholder_text", "render_png", "PANEL_CLASS",
           "CONTROL_WIDTH"]

#: the CSS class of every panel's box (the browser test finds panels by it)
PANEL_CLASS = "course-panel"
#: the width of one control's column in a panel's grid (px): a slider keeps a usable track
CONTROL_WIDTH = 330


def placeholder_text(names) -> str:
    """What a panel shows where its widgets cannot be drawn (a notebook opened but not yet run)."""
    if isinstance(names, str) or not hasattr(names, "__iter__"):
        raise TypeError(f"names: expected a sequence of control names, got {type(names).__name__} {names!r}")
    names = [check_str(n, "names") for n in names]
    return (f"[interactive panel with controls {', '.join(names)} -- run this cell (or Run All) "
            "to move the sliders; they recompute live on your machine]")


@lru_cache(maxsize=1)
def _panel_class():
    import ipywidgets as W

    class Panel(W.VBox):
        """A VBox whose plain-text form is a readable placeholder instead of ``VBox(children=...)``."""

        def _repr_mimebundle_(self, **kwargs):
            bundle = super()._repr_mimebundle_(**kwargs)
            if bundle is not None:
                bundle["text/plain"] = placeholder_text(getattr(self, "controls", {}))
            return bundle

    return Panel


def within_budget(values: Mapping[str, Any], cost: Callable[..., float] | None,
                  max_cost: float | None) -> tuple[bool, float | None]:
    """(allowed, estimated cost) for a setting of the controls. Plain function, no widgets."""
    if not isinstance(values, Mapping):
        raise TypeError(f"values: expected a mapping control name -> value, got {type(values).__name__}")
    if cost is not None:
        check_callable(cost, "cost")
    if max_cost is not None:
        max_cost = check_float(max_cost, "max_cost", low=0.0)
    if cost is None or max_cost is None:
        return True, None
    estimate = cost(**values)
    if isinstance(estimate, (bool, np.bool_)) or not isinstance(estimate, numbers.Real) or math.isnan(estimate):
        raise ValueError(f"cost: expected it to return a number (the estimated cost), got {estimate!r}")
    estimate = float(estimate)
    return estimate <= max_cost, estimate


def make_control(name: str, spec: Any):
    """A widget from a short spec.

    * an ipywidgets widget -> used as is
    * ``(min, max, step, value)`` or ``(min, max, step)`` of ints -> ``IntSlider``; floats -> ``FloatSlider``
      (disabled where ``min == max``: a range of one value, such as threads on a one-core machine, is shown fixed)
    * a list/tuple of strings or a dict -> ``Dropdown``
    * a bool -> ``Checkbox``
    """
    import ipywidgets as W

    style = {"description_width": "initial"}
    if isinstance(spec, W.Widget):
        if not getattr(spec, "description", ""):
            spec.description = name
        return spec
    if isinstance(spec, bool):
        return W.Checkbox(value=spec, description=name)
    if isinstance(spec, dict):
        return W.Dropdown(options=spec, description=name, style=style)
    if isinstance(spec, (list, tuple)) and spec and all(isinstance(s, str) for s in spec):
        return W.Dropdown(options=list(spec), value=spec[0], description=name, style=style)
    if isinstance(spec, tuple) and len(spec) in (3, 4):
        lo, hi, step = spec[:3]
        value = spec[3] if len(spec) == 4 else lo
        kind = W.IntSlider if all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi, step, value)) \
            else W.FloatSlider
        return kind(min=lo, max=hi, step=step, value=value, description=name, continuous_update=False, style=style,
                    disabled=lo == hi)
    raise ValueError(
        f"controls[{name!r}]: expected a widget, (min, max, step[, value]), a list of strings, "
        f"a dict or a bool, got {spec!r}")


def render_png(render: Callable, data: Any, *, axes: tuple[int, int] = (1, 1),
               figsize: tuple[float, float] = (6.0, 3.2), title: str | None = None) -> tuple[bytes, str | None, str]:
    """(PNG bytes, text, alt text) of ``render(data, ax)`` drawn on a Figure of its own (not pyplot's):
    the same picture whenever and wherever it is called. ``axes=(rows, cols)`` passes a tuple of axes;
    the alt text is ``plots.describe_figure`` of the figure (the course site shows it)."""
    check_callable(render, "render")
    if (not isinstance(axes, tuple) or len(axes) != 2
            or not all(isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= 6 for k in axes)):
        raise ValueError(f"axes: expected (rows, cols) with 1..6 each, got {axes!r}")
    from matplotlib import rcParams
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=rcParams["figure.dpi"])
    FigureCanvasAgg(fig)
    grid = fig.subplots(*axes, squeeze=False)
    ax = grid[0, 0] if axes == (1, 1) else tuple(grid.ravel())
    text = render(data, ax)
    if title:
        (ax if axes == (1, 1) else ax[0]).set_title(title)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", facecolor="white")
    return buf.getvalue(), (str(text) if text else None), describe_figure(fig)


def _stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text if text.endswith("\n") else text + "\n"}


def _error(exc: BaseException) -> dict:
    return {"output_type": "error", "ename": type(exc).__name__, "evalue": str(exc),
            "traceback": traceback.format_exception(type(exc), exc, exc.__traceback__)}


def sweep_panel(compute: Callable[..., Any], controls: Mapping[str, Any], *,
                render: Callable[[Any, Any], str | None] | None = None,
                cost: Callable[..., float] | None = None, max_cost: float | None = None,
                figsize: tuple[float, float] = (6.0, 3.2), title: str | None = None,
                axes: tuple[int, int] = (1, 1)):
    """Sliders/dropdowns that call ``compute(**values)`` and show its result (see module doc).

    Returns an ``ipywidgets.VBox`` whose plain-text form (what a notebook shows before it is run) is a
    readable placeholder, not the widget's repr; ``panel.controls`` maps names to widgets,
    ``panel.output`` is the Output area and ``panel.refresh()`` recomputes. ``axes=(rows, cols)``
    gives ``render`` a tuple of that many axes instead of one.
    """
    if not callable(compute):
        raise TypeError(f"compute: expected a callable, got {type(compute).__name__}")
    if not isinstance(controls, Mapping) or not controls:
        raise ValueError("controls: expected a non-empty mapping of name -> widget spec")
    if (cost is None) != (max_cost is None):
        raise ValueError("cost, max_cost: give both or neither")
    if render is not None:
        check_callable(render, "render")
    import ipywidgets as W

    widgets = {name: make_control(name, spec) for name, spec in controls.items()}
    out = W.Output()

    def outputs_for(values) -> tuple:
        ok, estimate = within_budget(values, cost, max_cost)
        if not ok:
            return (_stream(f"This setting asks for about {estimate:.3g} units of work; the cap is "
                            f"{max_cost:.3g}. Choose smaller values."),)
        data = compute(**values)
        if render is None:
            return (_stream(str(data)),)
        png, text, alt = render_png(render, data, axes=axes, figsize=figsize, title=title)
        image = {"output_type": "display_data", "metadata": {"image/png": {"alt": alt}},
                 "data": {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": "<the panel's plot>"}}
        return ((_stream(text),) if text else ()) + (image,)

    def refresh(*_):
        values = {name: w.value for name, w in widgets.items()}
        try:
            new = outputs_for(values)
        except Exception as exc:  # shown in the panel, as a cell shows it
            new = (_error(exc),)
        out.outputs = new  # one state update: text and image arrive together

    for w in widgets.values():
        w.observe(refresh, names="value")
        if isinstance(w, (W.IntSlider, W.FloatSlider)):
            w.layout.width = "95%"
    grid = W.GridBox(list(widgets.values()), layout=W.Layout(
        grid_template_columns=f"repeat(auto-fill, minmax({CONTROL_WIDTH}px, 1fr))", width="100%"))
    box = _panel_class()([grid, out])
    box.add_class(PANEL_CLASS)
    box.controls = widgets
    box.output = out
    box.refresh = refresh
    refresh()
    return box
