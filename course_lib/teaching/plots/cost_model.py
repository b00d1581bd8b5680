"""Figures for chapter 12 (which parallelism when): Gantt charts of simulated schedules, the seeds'
numbers beside simulated and measured ones, predicted vs measured, the advisor's ranking and maps of
the winning method. matplotlib is imported lazily; every function returns its axis."""
from __future__ import annotations

import numpy as np

from . import new_axes
from . import check_ax, check_data, check_keys, check_series  # noqa: F401
from ...core.validate import check_float, check_int, check_positive_int  # noqa: F401

__all__ = ["gantt", "seed_chart", "predicted_vs_measured", "ranking", "winner_map", "KIND_COLORS"]

KIND_COLORS = {"compute": "tab:blue", "serial": "tab:red", "comm": "tab:orange", "barrier": "tab:grey",
               "launch": "tab:purple"}


def gantt(schedule, ax=None, *, max_procs: int = 16, unit: str = "s"):
    """One row per virtual processor (the first ``max_procs``), one bar per task, coloured by kind."""
    if not hasattr(schedule, "rows") or not hasattr(schedule, "P"):
        raise TypeError(f"schedule: expected a cluster.Schedule (TaskGraph.simulate), got {type(schedule).__name__}")
    check_data(schedule.rows, "schedule.rows")
    ax = new_axes(ax, figsize=(7.0, 3.0))
    seen = set()
    for _name, p, start, end, kind in schedule.rows:
        if p >= max_procs or end <= start:
            continue
        lab = kind if kind not in seen else None
        seen.add(kind)
        ax.barh(p, end - start, left=start, color=KIND_COLORS.get(kind, "k"), edgecolor="white", lw=0.3,
                height=0.8, label=lab)
    shown = min(schedule.P, max_procs)
    ax.set_ylim(shown - 0.5, -0.5)
    ax.set_ylabel("processor" + (f" (first {shown} of {schedule.P})" if schedule.P > shown else ""))
    ax.set_xlabel(f"virtual clock ({unit})")
    ax.set_title(f"{schedule.label}: makespan {schedule.makespan:.3g} {unit}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def seed_chart(seeds: dict, measured: dict, ax=None):
    """Per seed claim three bars: the seed's number (registry), the simulated schedule on the seed's
    machine (assumptions), and what was measured here of the *same* quantity (``measured``: claim id ->
    (ratio, what, noise), from ``cost_model.measured_speedups``; a claim no run here measures has no bar)
    -- each labelled."""
    check_data(seeds, "seeds", kind=dict)
    check_ax(ax)
    if not isinstance(measured, dict):
        raise TypeError(f"measured: expected a dict, got {type(measured).__name__}")
    from ..claims import claim

    ax = new_axes(ax, figsize=(7.0, 3.2))
    ids = list(seeds)
    y = np.arange(len(ids))
    vals = {"seed": [claim(i).value for i in ids], "simulated": [seeds[i]["simulated"] for i in ids],
            "measured here": [measured.get(i, (np.nan,))[0] for i in ids]}
    colors = {"seed": "tab:green", "simulated": "tab:blue", "measured here": "tab:orange"}
    for k, (name, v) in enumerate(vals.items()):
        ax.barh(y + (k - 1) * 0.27, v, height=0.25, color=colors[name], label=name)
        for yi, vi in zip(y + (k - 1) * 0.27, v):
            if np.isfinite(vi):
                ax.text(vi, yi, f" {vi:.3g}×", va="center", fontsize=7)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{i}\n({claim(i).conditions[:40]}...)" for i in ids], fontsize=6)
    ax.set_xscale("log")
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("speed-up, each seed's own quantity: its parallel method over its own baseline (log)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def predicted_vs_measured(cal, ax=None):
    """Every row of a calibration: predicted against measured seconds, the 2x band shaded."""
    if not hasattr(cal, "rows"):
        raise TypeError(f"cal: expected a cost_model.Calibration, got {type(cal).__name__}")
    check_data(cal.rows, "cal.rows")
    ax = new_axes(ax, figsize=(5.0, 4.0))
    pred = np.array([r.predicted for r in cal.rows])
    meas = np.array([r.measured for r in cal.rows])
    lo, hi = min(pred.min(), meas.min()) / 2, max(pred.max(), meas.max()) * 2
    xs = np.array([lo, hi])
    ax.fill_between(xs, xs / 2, xs * 2, color="0.9", label="within 2x")
    ax.plot(xs, xs, color="grey", lw=0.8)
    for cfg in cal.configs():
        rows = [r for r in cal.rows if r.config == cfg]
        ax.scatter([r.measured for r in rows], [r.predicted for r in rows], s=18, label=cfg)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured (s)")
    ax.set_ylabel("predicted (s)")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def ranking(advice, ax=None):
    """The advisor's ranking as horizontal bars (predicted seconds, log); untrusted methods hatched."""
    check_data(advice, "advice", kind=(list, tuple))
    ax = new_axes(ax, figsize=(6.0, 3.0))
    names = [a.method for a in advice][::-1]
    secs = [a.seconds for a in advice][::-1]
    trusted = [a.trusted for a in advice][::-1]
    bars = ax.barh(names, secs, color=["tab:blue" if t else "0.8" for t in trusted])
    for b, t in zip(bars, trusted):
        if not t:
            b.set_hatch("//")
    ax.set_xscale("log")
    ax.set_xlabel("predicted seconds (log)")
    ax.set_title("the advisor's ranking (hatched: not trusted here)", fontsize=9)
    return ax


def winner_map(grid: dict, ax=None):
    """``grid = {"x": [...], "y": [...], "winner": 2-D list of method names, "xlabel", "ylabel"}``."""
    check_data(grid, "grid", kind=dict)
    ax = new_axes(ax, figsize=(5.0, 3.5))
    names = sorted({w for row in grid["winner"] for w in row})
    idx = {n: i for i, n in enumerate(names)}
    Z = np.array([[idx[w] for w in row] for row in grid["winner"]])
    cmap = __import__("matplotlib").colormaps["tab10"]
    ax.imshow(Z, origin="lower", aspect="auto", cmap=cmap, vmin=0, vmax=9, interpolation="nearest")
    ax.set_xticks(range(len(grid["x"])))
    ax.set_xticklabels([str(v) for v in grid["x"]], fontsize=7, rotation=45)
    ax.set_yticks(range(len(grid["y"])))
    ax.set_yticklabels([str(v) for v in grid["y"]], fontsize=7)
    ax.set_xlabel(grid.get("xlabel", ""))
    ax.set_ylabel(grid.get("ylabel", ""))
    if grid.get("xlabel") and grid.get("ylabel"):
        ax.set_title(f"fastest method over ({grid['xlabel']}, {grid['ylabel']})", fontsize=9)
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=cmap(idx[n]), label=n) for n in names], fontsize=7, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))
    return ax
