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

``render(data, ax)`` draws on a fresh matplotlib axis and may return a line of text (printed
above the plot); without ``render`` the data itself is printed. ``cost(**values)`` estimates the
work a setting asks for; above ``max_cost`` the panel says so instead of computing.

ipywidgets and matplotlib are imported lazily, inside the functions.
"""
from __future__ import annotations

import math
import numbers
from functools import lru_cache
from typing import Any, Callable, Mapping

import numpy as np

from ..core.validate import check_callable, check_float, check_str

__all__ = ["make_control", "sweep_panel", "within_budget", "placeholder_text", "PANEL_CLASS"]

#: the CSS class of every panel's box (the browser test finds panels by it)
PANEL_CLASS = "course-panel"


def placeholder_text(names) -> str:
    """What a panel shows where its widgets cannot be drawn (a notebook opened but not yet run)."""
    if isinstance(names, str) or not hasattr(names, "__iter__"):
        raise TypeError(f"names: expected a sequence of control names, got {type(names).__name__} {names!r}")
    names = [check_str(n, "names") for n in names]
    return (f"[interactive panel with controls {', '.join(names)} -- run this cell (or Run All) "
            "to move the sliders; they recompute live on your machine]")


@lru_cache(maxsize=1)
def _panel_class():
    import ipywidgets as W  # noqa: PLC0415

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
    * a list/tuple of strings or a dict -> ``Dropdown``
    * a bool -> ``Checkbox``
    """
    import ipywidgets as W  # noqa: PLC0415

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
        if all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi, step, value)):
            return W.IntSlider(min=lo, max=hi, step=step, value=value, description=name,
                               continuous_update=False, style=style)
        return W.FloatSlider(min=lo, max=hi, step=step, value=value, description=name,
                             continuous_update=False, style=style)
    raise ValueError(
        f"controls[{name!r}]: expected a widget, (min, max, step[, value]), a list of strings, "
        f"a dict or a bool, got {spec!r}")


def sweep_panel(compute: Callable[..., Any], controls: Mapping[str, Any], *,
                render: Callable[[Any, Any], str | None] | None = None,
                cost: Callable[..., float] | None = None, max_cost: float | None = None,
                figsize: tuple[float, float] = (6.0, 3.2), title: str | None = None):
    """Sliders/dropdowns that call ``compute(**values)`` and show its result (see module doc).

    Returns an ``ipywidgets.VBox`` whose plain-text form (what a notebook shows before it is run) is a
    readable placeholder, not the widget's repr; ``panel.controls`` maps names to widgets,
    ``panel.output`` is the Output area and ``panel.refresh()`` recomputes.
    """
    if not callable(compute):
        raise TypeError(f"compute: expected a callable, got {type(compute).__name__}")
    if not isinstance(controls, Mapping) or not controls:
        raise ValueError("controls: expected a non-empty mapping of name -> widget spec")
    if (cost is None) != (max_cost is None):
        raise ValueError("cost, max_cost: give both or neither")
    import ipywidgets as W  # noqa: PLC0415

    widgets = {name: make_control(name, spec) for name, spec in controls.items()}
    out = W.Output()

    def refresh(*_):
        values = {name: w.value for name, w in widgets.items()}
        ok, estimate = within_budget(values, cost, max_cost)
        with out:
            out.clear_output(wait=True)
            if not ok:
                print(f"This setting asks for about {estimate:.3g} units of work; the cap is "
                      f"{max_cost:.3g}. Choose smaller values.")
                return
            data = compute(**values)
            if render is None:
                print(data)
                return
            import matplotlib.pyplot as plt  # noqa: PLC0415

            fig, ax = plt.subplots(figsize=figsize)
            text = render(data, ax)
            if title:
                ax.set_title(title)
            if text:
                print(text)
            fig.tight_layout()
            plt.show()

    for w in widgets.values():
        w.observe(refresh, names="value")
    box = _panel_class()([W.HBox(list(widgets.values())), out])
    box.add_class(PANEL_CLASS)
    box.controls = widgets
    box.output = out
    box.refresh = refresh
    refresh()
    return box
