"""Figures for chapter 04 (tiling & SIMD): the kernel ladder, tile heat map, Fig. 10 combinations.

Each function draws on the axis it is given (or a new one) and returns it. matplotlib is
imported lazily (through :func:`course_lib.teaching.plots.new_axes`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from . import new_axes

__all__ = ["ladder_bars", "tile_heatmap", "combination_bars", "size_pair_bars"]


def ladder_bars(rows: Sequence[dict], peak: float | None = None, ax=None, title: str | None = None):
    """Horizontal bars of GFLOP/s per kernel (rows from ``kernels.ladder``), with the measured
    GEMM peak as a dashed line; each bar is labelled with its % of BLAS."""
    ax = new_axes(ax, figsize=(7.0, 3.4))
    names = [r["name"] + (f" (n={r['n']})" if "n" in r else "") for r in rows]
    rates = [r["gflops"] for r in rows]
    colors = ["tab:grey" if r["name"] == "numpy" else "tab:blue" for r in rows]
    y = np.arange(len(rows))
    ax.barh(y, rates, color=colors)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    for yi, r in zip(y, rows):
        ax.annotate(f" {r['gflops']:.1f} ({r['pct_of_blas']:.0f}% of BLAS)", (r["gflops"], yi),
                    va="center", fontsize=8)
    if peak:
        ax.axvline(peak, color="black", ls="--", lw=1, label=f"measured peak {peak:.0f} GFLOP/s")
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xlim(min(rates) / 2, max(max(rates), peak or 0) * 8)
    ax.set_xlabel("GFLOP/s (log scale)")
    ax.set_title(title or "The matmul ladder")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    return ax


def tile_heatmap(grid: np.ndarray, tiles_i: Sequence[int], tiles_j: Sequence[int], ax=None,
                 title: str | None = None):
    """Heat map of GFLOP/s over (tile_i rows, tile_j columns); NaN cells (tile > n) are blank."""
    ax = new_axes(ax, figsize=(5.2, 4.0))
    grid = np.asarray(grid, dtype=float)
    im = ax.imshow(grid, cmap="viridis", origin="lower", aspect="auto")
    ax.set_xticks(range(len(tiles_j)), [str(t) for t in tiles_j])
    ax.set_yticks(range(len(tiles_i)), [str(t) for t in tiles_i])
    ax.set_xlabel("tile_j (columns of C per tile)")
    ax.set_ylabel("tile_i (rows of C per tile)")
    finite = grid[np.isfinite(grid)]
    mid = (finite.max() + finite.min()) / 2 if finite.size else 0
    for a in range(grid.shape[0]):
        for b in range(grid.shape[1]):
            if np.isfinite(grid[a, b]):
                ax.text(b, a, f"{grid[a, b]:.1f}", ha="center", va="center", fontsize=8,
                        color="white" if grid[a, b] < mid else "black")
    ax.figure.colorbar(im, ax=ax, label="GFLOP/s")
    ax.set_title(title or "GFLOP/s against tile size")
    return ax


def combination_bars(rows: Sequence[dict], ax=None, title: str | None = None):
    """Speedup over the all-off serial kernel for the 8 combinations of seed Fig. 10."""
    ax = new_axes(ax, figsize=(7.0, 3.4))
    names = [r["name"] for r in rows]
    sp = [r["speedup"] for r in rows]
    colors = ["tab:orange" if r["parallel"] else "tab:blue" for r in rows]
    y = np.arange(len(rows))
    ax.barh(y, sp, color=colors)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    for yi, s, r in zip(y, sp, rows):
        ax.annotate(f" {s:.1f}x  ({r['gflops']:.1f} GFLOP/s)", (s, yi), va="center", fontsize=8)
    ax.set_xlim(min(sp) / 1.5, max(sp) * 6)
    ax.set_xlabel("speedup over serial (log scale)")
    ax.set_title(title or "Tiling x SIMD x parallel (seed Fig. 10)")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    from matplotlib.patches import Patch  # noqa: PLC0415

    ax.legend(handles=[Patch(color="tab:blue", label="1 thread"), Patch(color="tab:orange", label="prange")],
              fontsize=8, loc="lower right")
    return ax


def size_pair_bars(results: dict, sizes: tuple[int, int], ax=None, title: str | None = None):
    """Grouped bars: GFLOP/s of each kernel at two sizes (e.g. 1000 and 1024).

    ``results`` maps kernel name -> (rate at sizes[0], rate at sizes[1]).
    """
    ax = new_axes(ax, figsize=(7.0, 3.2))
    names = list(results)
    x = np.arange(len(names))
    w = 0.38
    a = [results[k][0] for k in names]
    b = [results[k][1] for k in names]
    ax.bar(x - w / 2, a, w, label=f"n = {sizes[0]}")
    ax.bar(x + w / 2, b, w, label=f"n = {sizes[1]}")
    ax.set_xticks(x, names)
    ax.set_yscale("log")
    ax.set_ylabel("GFLOP/s (log scale)")
    for xi, ra, rb in zip(x, a, b):
        ax.annotate(f"{rb / ra:.2f}x", (xi + w / 2, rb), ha="center", va="bottom", fontsize=8)
    ax.legend(fontsize=8)
    ax.set_title(title or f"Power of two or not: n = {sizes[0]} vs {sizes[1]}")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    return ax
