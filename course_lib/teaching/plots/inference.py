"""Figures for chapter 07 (parallel inference): the dependency graph of a stacked RNN, the
layer-wavefront schedule, speedup curves and the work/span model. matplotlib is imported lazily;
every function draws on a given axis (or a new one) and returns it."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from . import new_axes
from . import check_ax, check_data, check_keys, check_series  # noqa: F401
from ...core.validate import check_float, check_int, check_positive_int  # noqa: F401

__all__ = ["dependency_graph", "wavefront_plot", "speedup_plot", "phase_bars"]


def _cell_colors(n):
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("viridis")
    return [cmap(0.15 + 0.7 * k / max(1, n - 1)) for k in range(n)]


def dependency_graph(T: int, L: int, ax=None, color_diagonals: bool = False):
    """Nodes ``x[t]`` (bottom), cells ``h[l, t]`` and outputs ``y[t]`` (top); arrows for the two
    dependencies of a cell: the layer below at the same step, the same layer at the step before."""
    check_positive_int(T, "T", high=64)
    check_positive_int(L, "L", high=32)
    check_ax(ax)
    ax = new_axes(ax, figsize=(1.1 * T + 1.5, 0.9 * (L + 2) + 0.6))
    colors = _cell_colors(T + L - 1)
    arrow = dict(arrowstyle="->", color="0.35", lw=1.2, shrinkA=11, shrinkB=11)
    for t in range(T):
        ax.annotate("", (t, 0), (t, -1), arrowprops=arrow)
        ax.annotate("", (t, L), (t, L - 1), arrowprops=arrow)
        ax.text(t, -1, f"x[{t}]", ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round", fc="white", ec="0.5"))
        ax.text(t, L, f"y[{t}]", ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round", fc="#fde0c5", ec="0.5"))
        for l in range(L):
            if l > 0:
                ax.annotate("", (t, l), (t, l - 1), arrowprops=arrow)
            if t > 0:
                ax.annotate("", (t, l), (t - 1, l), arrowprops=dict(arrow, color="tab:red"))
            fc = colors[l + t] if color_diagonals else "#cfe3f7"
            ax.text(t, l, f"h{l},{t}", ha="center", va="center", fontsize=8,
                    color="white" if color_diagonals else "black",
                    bbox=dict(boxstyle="circle", fc=fc, ec="0.3"))
    ax.set_xlim(-0.7, T - 0.3)
    ax.set_ylim(-1.6, L + 0.6)
    ax.set_xticks(range(T))
    ax.set_xlabel("time step t")
    ax.set_yticks(range(-1, L + 1), ["input"] + [f"layer {l}" for l in range(L)] + ["softmax"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"Dependencies of a {L}-layer RNN: black = layer below, red = previous step")
    return ax


def wavefront_plot(schedule: Sequence[Sequence[tuple[int, int]]], ax=None):
    """Each cell ``(l, t)`` drawn at its grid position, coloured and numbered by the wavefront step
    (anti-diagonal) it runs in; cells with the same number run at the same time."""
    cells = [(d, l, t) for d, diag in enumerate(schedule) for (l, t) in diag]
    if not cells:
        raise ValueError("schedule: expected at least one diagonal with cells, got none")
    T = 1 + max(t for _, _, t in cells)
    L = 1 + max(l for _, l, _ in cells)
    ax = new_axes(ax, figsize=(0.8 * T + 1.5, 0.7 * L + 1.2))
    colors = _cell_colors(len(schedule))
    import matplotlib.patches as mpatches

    for d, l, t in cells:
        ax.add_patch(mpatches.Rectangle((t - 0.45, l - 0.45), 0.9, 0.9, fc=colors[d], ec="white"))
        ax.text(t, l, str(d), ha="center", va="center", color="white", fontsize=9, fontweight="bold")
    ax.set_xlim(-0.6, T - 0.4)
    ax.set_ylim(-0.6, L - 0.4)
    ax.set_aspect("equal")
    ax.set_xticks(range(T))
    ax.set_yticks(range(L), [f"layer {l}" for l in range(L)])
    ax.set_xlabel("time step t")
    ax.set_title(f"Wavefront: {len(schedule)} parallel steps instead of {len(cells)} (number = step)")
    return ax


def speedup_plot(xs: Sequence[float], series: dict, ax=None, xlabel: str = "", title: str = "",
                 ideal: Sequence[float] | None = None, logx: bool = True, logy: bool = False,
                 model: dict | None = None):
    """Speedup curves (measured: solid with markers) against ``xs``; optional ideal line (dotted) and
    model curves (``{name: (xs, ys)}``, dashed). The legend sits outside the axes, so it hides no point;
    the y axis always shows 1 (no speedup) and every point. ``logy`` (base 2) suits ratios that span
    several powers of two (a 2x gain and a 2x loss lie equally far from 1)."""
    check_series(xs, "xs", series, "series")
    if ideal is not None and len(ideal) != len(xs):
        raise ValueError(f"ideal: expected {len(xs)} values (one per x), got {len(ideal)}")
    ax = new_axes(ax, figsize=(7.5, 3.8))
    ys_all = [1.0]
    for name, ys in series.items():
        ax.plot(xs, ys, "o-", label=name, zorder=3)
        ys_all += [float(y) for y in ys]
    for name, (mx, my) in (model or {}).items():
        ax.plot(mx, my, "--", label=name, zorder=2)
        ys_all += [float(y) for y in my]
    if ideal is not None:
        ax.plot(xs, ideal, ":", color="grey", label="ideal", zorder=1)
        ys_all += [float(y) for y in ideal]
    ax.axhline(1.0, color="black", lw=0.8)
    if logx:
        ax.set_xscale("log", base=2)
    lo, hi = min(ys_all), max(ys_all)
    if logy:
        ax.set_yscale("log", base=2)
        ax.set_ylim(lo / 1.3, hi * 1.3)
    else:
        ax.set_ylim(min(0.0, lo), hi * 1.1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("speedup (x)")
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def phase_bars(phases: dict, ax=None, title: str = "", unit: float = 1e-3, unit_label: str = "ms"):
    """A stacked horizontal bar per label: ``{label: {phase: seconds}}``, its total written at its end.
    The axis extends past the longest bar and the legend sits outside, so no bar is cut or covered."""
    ax = new_axes(ax, figsize=(7.5, 0.6 * len(phases) + 1.4))
    labels = list(phases)
    if not labels:
        raise ValueError("phases: expected at least one {label: {phase: seconds}} entry, got none")
    names = []
    for d in phases.values():
        for k in d:
            if k not in names:
                names.append(k)
    left = np.zeros(len(labels))
    for k in names:
        w = np.array([phases[lab].get(k, 0.0) / unit for lab in labels])
        ax.barh(labels, w, left=left, label=k)
        left += w
    for i, total in enumerate(left):
        ax.text(total, i, f" {total:.3g} {unit_label}", va="center", fontsize=8)
    ax.set_xlim(0, 1.25 * float(left.max()) if left.max() > 0 else 1.0)
    ax.set_xlabel(f"time ({unit_label})")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax
