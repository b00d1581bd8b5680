"""Figures for chapter 06 (Halide): the seed's Fig. 10 bars and the side-by-side rates.

Each function draws on ``ax`` (or a new axis) and returns it; matplotlib is imported lazily.
"""
from __future__ import annotations

import numpy as np

from . import new_axes
from . import check_ax, check_data, check_keys, check_series  # noqa: F401
from ...core.validate import check_float, check_int, check_positive_int  # noqa: F401

__all__ = ["schedule_bars", "rate_bars"]


def schedule_bars(table: dict, ax=None):
    """Seed Fig. 10: seconds per training step for each schedule (``experiments.halide.fig10_table``),
    with the speed-up over serial written on each bar."""
    check_data(table, "table", kind=dict)
    ax = new_axes(ax, figsize=(7.0, 3.6))
    rows = table["rows"]
    names = [r["name"] for r in rows]
    secs = np.array([r["seconds"] for r in rows])
    y = np.arange(len(rows))
    colors = ["tab:orange" if "tiled" in n else "tab:blue" for n in names]
    ax.barh(y, secs * 1e3, color=colors)
    for k, r in enumerate(rows):
        ax.text(secs[k] * 1e3, k, f" {r['speedup']:.1f}x", va="center", fontsize=8)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlabel("ms per training step (median)")
    ax.set_title(f"Halide schedules, n={table['n']}, T={table['T']}, B={table['B']} (orange: tiled)")
    ax.grid(True, axis="x", alpha=0.3)
    return ax


def rate_bars(gflops: dict, ax=None, title: str = "GFLOP/s reached", peak: float | None = None):
    """Bars of GFLOP/s per implementation (``{"label": rate}``), with an optional peak line."""
    check_data(gflops, "gflops", kind=dict)
    ax = new_axes(ax, figsize=(6.0, 3.0))
    labels = list(gflops)
    ax.bar(labels, [gflops[k] for k in labels], color="tab:green")
    if peak is not None:
        ax.axhline(peak, color="grey", ls=":", label="GEMM peak measured alongside")
        ax.legend(fontsize=8)
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    return ax
