"""Figures for chapter 04 (tiling & SIMD): the kernel ladder, tile heat map, Fig. 10 combinations,
1000 vs 1024.

Each function draws on the axis it is given (or a new one) and returns it. matplotlib is imported
lazily (through :func:`course_lib.teaching.plots.new_axes`). Rates that span decades are drawn as
points on a log axis (a bar's length means nothing on a log axis); ratios near 1 as bars on a linear
axis. Legends sit outside the data.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from . import new_axes
from . import check_ax, check_data, check_keys, check_series  # noqa: F401
from ...core.validate import check_float, check_int, check_positive_int  # noqa: F401

__all__ = ["ladder_plot", "tile_heatmap", "combination_plot", "size_pair_plot"]


def ladder_plot(rows: Sequence[dict], peak: float | None = None, ax=None, title: str | None = None):
    """GFLOP/s per kernel (rows from ``experiments.matmul.ladder``, optionally with an ``"n"`` key) as
    points on a log axis, each labelled with its % of BLAS; the measured GEMM peak as a dashed line."""
    check_data(rows, "rows", kind=(list, tuple))
    ax = new_axes(ax, figsize=(7.5, 0.45 * len(rows) + 1.4))
    names = [r["name"] + (f" (n={r['n']})" if "n" in r else "") for r in rows]
    rates = [r["gflops"] for r in rows]
    colors = ["tab:grey" if r["name"] == "numpy" else "tab:blue" for r in rows]
    y = np.arange(len(rows))
    ax.hlines(y, min(rates) / 2, rates, color="lightgrey", lw=1, zorder=1)
    ax.scatter(rates, y, color=colors, zorder=3, s=40)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    for yi, r in zip(y, rows):
        ax.annotate(f" {r['gflops']:.1f} ({r['pct_of_blas']:.0f}% of BLAS)", (r["gflops"], yi),
                    va="center", fontsize=8, xytext=(4, 0), textcoords="offset points")
    top = max(max(rates), peak or 0)
    if peak:
        ax.axvline(peak, color="black", ls="--", lw=1)
        ax.annotate(f"measured peak\n{peak:.0f} GFLOP/s", (peak, -0.6), fontsize=8, ha="center", va="bottom",
                    annotation_clip=False)
    ax.set_xlim(min(rates) / 2, top * 12)
    ax.set_ylim(len(rows) - 0.5, -1.2)
    ax.set_xlabel("GFLOP/s (log scale)")
    ax.set_title(title or "The matmul ladder")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    return ax


def tile_heatmap(grid: np.ndarray, tiles_i: Sequence[int], tiles_j: Sequence[int], ax=None,
                 title: str | None = None, mark: tuple[int, int] | None = None, mark_label: str = "seed"):
    """Heat map of GFLOP/s over (tile_i rows, tile_j columns); NaN cells (tile > n) are blank.
    ``mark=(rows, cols)`` outlines one cell (e.g. the seed's 64 x 16) and the best cell is starred."""
    check_data(tiles_i, "tiles_i")
    check_data(tiles_j, "tiles_j")
    if np.shape(grid) != (len(tiles_i), len(tiles_j)):
        raise ValueError(f"grid: expected shape (len(tiles_i), len(tiles_j)) = ({len(tiles_i)}, {len(tiles_j)}), "
                         f"got {np.shape(grid)}")
    ax = new_axes(ax, figsize=(5.6, 4.0))
    grid = np.asarray(grid, dtype=float)
    im = ax.imshow(grid, cmap="viridis", origin="lower", aspect="auto")
    ax.set_xticks(range(len(tiles_j)), [str(t) for t in tiles_j])
    ax.set_yticks(range(len(tiles_i)), [str(t) for t in tiles_i])
    ax.set_xlabel("tile_j (columns of C per tile)")
    ax.set_ylabel("tile_i (rows of C per tile)")
    finite = grid[np.isfinite(grid)]
    mid = (finite.max() + finite.min()) / 2 if finite.size else 0
    best = np.unravel_index(np.nanargmax(grid), grid.shape) if finite.size else None
    for a in range(grid.shape[0]):
        for b in range(grid.shape[1]):
            if np.isfinite(grid[a, b]):
                star = " ★" if best == (a, b) else ""
                ax.text(b, a, f"{grid[a, b]:.1f}{star}", ha="center", va="center", fontsize=8,
                        color="white" if grid[a, b] < mid else "black")
    if mark is not None and mark[0] in tiles_i and mark[1] in tiles_j:
        from matplotlib.patches import Rectangle

        a, b = list(tiles_i).index(mark[0]), list(tiles_j).index(mark[1])
        ax.add_patch(Rectangle((b - 0.5, a - 0.5), 1, 1, fill=False, ec="red", lw=2))
        ax.annotate(mark_label, (b, a + 0.5), color="red", fontsize=8, ha="center", va="bottom")
    ax.figure.colorbar(im, ax=ax, label="GFLOP/s")
    ax.set_title(title or "GFLOP/s against tile size (★ best here)")
    return ax


def combination_plot(rows: Sequence[dict], ax=None, title: str | None = None):
    """Speedup over the all-off serial kernel for the 8 combinations of seed Fig. 10, as points on a
    log axis (1 thread blue, prange orange), each labelled; the serial level as a grey line."""
    check_data(rows, "rows", kind=(list, tuple))
    ax = new_axes(ax, figsize=(7.5, 3.8))
    names = [r["name"] for r in rows]
    sp = [r["speedup"] for r in rows]
    colors = ["tab:orange" if r["parallel"] else "tab:blue" for r in rows]
    y = np.arange(len(rows))
    lo = min(min(sp), 1.0) / 1.5
    ax.hlines(y, lo, sp, color="lightgrey", lw=1, zorder=1)
    ax.scatter(sp, y, color=colors, zorder=3, s=40)
    ax.axvline(1.0, color="grey", lw=1, ls=":")
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    for yi, s, r in zip(y, sp, rows):
        ax.annotate(f" {s:.1f}x  ({r['gflops']:.1f} GFLOP/s)", (s, yi), va="center", fontsize=8,
                    xytext=(4, 0), textcoords="offset points")
    ax.set_xlim(lo, max(sp) * 12)
    ax.set_xlabel("speedup over serial (log scale)")
    ax.set_title(title or "Tiling x SIMD x parallel (seed Fig. 10)")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    from matplotlib.lines import Line2D

    ax.legend(handles=[Line2D([], [], marker="o", ls="", color="tab:blue", label="1 thread"),
                       Line2D([], [], marker="o", ls="", color="tab:orange", label="prange")],
              fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def size_pair_plot(rates: dict, sizes: tuple[int, int], ax=None, title: str | None = None):
    """Bars of ``rate at sizes[1] / rate at sizes[0]`` per kernel on a linear axis around 1
    (below 1: slower per FLOP at the second size). ``rates`` maps kernel -> (rate, rate)."""
    check_data(rates, "rates", kind=dict)
    if not isinstance(sizes, (tuple, list)) or len(sizes) != 2:
        raise ValueError(f"sizes: expected a pair (small, large), got {sizes!r}")
    ax = new_axes(ax, figsize=(6.0, 3.2))
    names = list(rates)
    ratio = [rates[k][1] / rates[k][0] for k in names]
    x = np.arange(len(names))
    ax.bar(x, [r - 1 for r in ratio], bottom=1, color=["tab:red" if r < 1 else "tab:green" for r in ratio])
    ax.axhline(1, color="black", lw=1)
    ax.set_xticks(x, names)
    for xi, r in zip(x, ratio):
        ax.annotate(f"{r:.2f}", (xi, r), ha="center", va="bottom" if r >= 1 else "top", fontsize=8,
                    xytext=(0, 2 if r >= 1 else -2), textcoords="offset points")
    lo, hi = min(ratio + [1.0]), max(ratio + [1.0])
    pad = 0.15 * max(hi - lo, 0.1)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_ylabel(f"GFLOP/s at n={sizes[1]} / at n={sizes[0]}")
    ax.set_title(title or f"Power of two or not: n = {sizes[0]} vs {sizes[1]}")
    ax.grid(True, axis="y", alpha=0.3)
    return ax
