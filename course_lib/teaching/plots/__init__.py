"""Plots shared by all chapters (teaching folder).

Chapter-specific figures live in ``course_lib.teaching.plots.<topic>`` modules. Every function draws
on an axis it is given (or a new one) and returns the axis, so notebooks can compose them.
matplotlib is imported lazily.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from .describe import describe_figure, register_alt_text

__all__ = ["new_axes", "roofline_plot", "loglog_plot", "bar_compare", "check_ax", "check_data", "check_series",
           "check_keys", "describe_figure", "register_alt_text"]


def check_ax(ax, name: str = "ax") -> None:
    """``None`` or a matplotlib axis (anything with ``plot``)."""
    if ax is not None and not hasattr(ax, "plot"):
        raise TypeError(f"{name}: expected a matplotlib Axes or None, got {type(ax).__name__}")


def check_data(data, name: str, *, kind=None):
    """Non-empty plot data: a dict, list, tuple or array (``kind`` narrows it, e.g. ``dict``). Returns it."""
    kinds = kind or (dict, list, tuple, np.ndarray, range)
    if isinstance(data, (str, bytes)) or not isinstance(data, kinds):
        want = getattr(kind, "__name__", "a dict, list or array") if kind else "a dict, list or array"
        raise TypeError(f"{name}: expected {want} of values to plot, got {type(data).__name__}")
    if len(data) == 0:
        raise ValueError(f"{name}: nothing to plot (it is empty)")
    return data


def check_series(xs, xname: str, series: dict, sname: str) -> None:
    """``xs`` non-empty and every ``series[k]`` with one value per x (numbers, at least one finite)."""
    check_data(xs, xname)
    check_data(series, sname, kind=dict)
    for k, ys in series.items():
        if ys is None:
            continue
        try:
            n = len(ys)
        except TypeError:
            raise TypeError(f"{sname}[{k!r}]: expected a sequence of numbers, got {type(ys).__name__}") from None
        if n != len(xs):
            one = xname[:-1] if xname.endswith("s") and len(xname) > 1 else xname
            raise ValueError(f"{sname}[{k!r}]: expected {len(xs)} values (one per {one}), got {n}")


def check_keys(data, name: str, keys) -> None:
    """A dict holding ``keys``."""
    check_data(data, name, kind=dict)
    missing = [k for k in keys if k not in data]
    if missing:
        raise ValueError(f"{name}: missing key(s) {missing}; got {sorted(map(str, data))}")


def new_axes(ax=None, figsize=(6.0, 3.5)):
    """Return ``ax`` or a fresh axis."""
    check_ax(ax)
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize)
    return ax


def roofline_plot(peak_gflops: float, bandwidth_gbs: float,
                  points: Iterable[tuple[float, float, str]] = (), ax=None,
                  intensity_range: tuple[float, float] = (0.01, 1000.0)):
    """Log-log roofline: ``min(peak, AI * bandwidth)`` and measured ``(AI, GFLOP/s, label)`` points."""
    if not (peak_gflops > 0 and bandwidth_gbs > 0):
        raise ValueError(f"peak_gflops, bandwidth_gbs: expected positive numbers, got {peak_gflops}, {bandwidth_gbs}")
    lo, hi = intensity_range
    if not 0 < lo < hi:
        raise ValueError(f"intensity_range: expected 0 < low < high, got {intensity_range}")
    ax = new_axes(ax)
    ai = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 200)
    ax.loglog(ai, np.minimum(peak_gflops, ai * bandwidth_gbs), color="black", lw=2, label="roofline (measured)")
    ridge = peak_gflops / bandwidth_gbs
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    ax.annotate(f"ridge {ridge:.1f} FLOP/B", (ridge, peak_gflops), textcoords="offset points",
                xytext=(5, -15), fontsize=8, color="grey")
    for x, y, label in points:
        ax.loglog([x], [y], "o", ms=7, label=label)
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("GFLOP/s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return ax


def loglog_plot(sizes: Sequence[float], series: dict[str, Sequence[float]], ax=None,
                xlabel: str = "size", ylabel: str = "time (s)", fit: bool = True, fit_from: float | None = None):
    """Several series against ``sizes`` on log-log axes, each labelled with its fitted slope.

    ``fit_from``: fit each slope only over ``sizes >= fit_from`` (where the asymptote holds) and say so
    in the label, so the legend shows the same slope the notebook prints."""
    from ...core.timing import loglog_slope

    check_series(sizes, "sizes", series, "series")
    for name, ys in series.items():
        if len(ys) != len(sizes):
            raise ValueError(f"series[{name!r}]: expected {len(sizes)} values (one per size), got {len(ys)}")
    ax = new_axes(ax)
    keep = [i for i, s in enumerate(sizes) if fit_from is None or s >= fit_from]
    for name, ys in series.items():
        label = name
        if fit and len(keep) >= 2:
            slope = loglog_slope([sizes[i] for i in keep], [ys[i] for i in keep])
            where = "" if fit_from is None else f" for {xlabel.split()[-1]} ≥ {fit_from:g}"
            label = f"{name} (slope {slope:.2f}{where})"
        ax.loglog(sizes, ys, "o-", label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def bar_compare(values: dict[str, float], ax=None, ylabel: str = "", reference: float | None = None,
                reference_label: str = ""):
    """A labelled bar chart, optionally with a horizontal reference line (e.g. the measured peak)."""
    if not values:
        raise ValueError("values: expected a non-empty mapping of label -> number")
    ax = new_axes(ax)
    names = list(values)
    ax.bar(names, [values[n] for n in names], color="tab:blue")
    for i, n in enumerate(names):
        ax.annotate(f"{values[n]:.3g}", (i, values[n]), ha="center", va="bottom", fontsize=8)
    if reference is not None:
        ax.axhline(reference, color="tab:red", ls="--", label=reference_label or "reference")
        ax.legend(fontsize=8)
    ax.set_ylabel(ylabel)
    ax.tick_params(axis="x", rotation=20)
    return ax


# in Jupyter, every figure's PNG output carries describe_figure(fig) as its alt text (the site shows it)
register_alt_text()
