"""Figures for chapters 03 (batching) and 05 (threads, fusion, JIT vs AOT).

Each function draws on ``ax`` (or a new axis) and returns it; matplotlib is imported lazily.
"""
from __future__ import annotations

import numpy as np

from . import new_axes

__all__ = ["per_sample_plot", "phase_bars", "thread_scaling_plot", "jit_bars", "step_bars"]


def per_sample_plot(data: dict, ax=None):
    """Seed Fig. 9: training time per sequence against the batch size (log-log), with the
    GFLOP/s reached on a second axis. ``data`` from ``batching.time_per_sample``."""
    ax = new_axes(ax)
    b = np.asarray(data["batch"])
    ax.loglog(b, 1e3 * np.asarray(data["per_sample_s"]), "o-", color="tab:blue", label="time per sequence")
    ax.set_xlabel("batch size B (sequences per step)")
    ax.set_ylabel("ms per sequence (one training step)", color="tab:blue")
    ax.grid(True, which="both", alpha=0.3)
    ax2 = ax.twinx()
    ax2.semilogx(b, data["gflops"], "s--", color="tab:orange", label="GFLOP/s reached")
    ax2.semilogx(b, data["bound_gflops"], ":", color="grey", label="roofline bound (recurrent GEMM)")
    ax2.set_ylabel("GFLOP/s", color="tab:orange")
    ax2.set_yscale("log")
    lines = ax.get_lines() + ax2.get_lines()
    ax.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="upper center")
    ax.set_title(f"Batching (width {data['width']}, T={data['T']}): cost per sequence falls with B")
    return ax


def phase_bars(profiles: dict, ax=None, seed: dict | None = None):
    """Horizontal grouped bars: % of a step per phase, one group per phase, one bar per profile.

    ``profiles``: ``{"label": profile_step(...)}``; ``seed``: the seed's percentages (optional).
    """
    ax = new_axes(ax, figsize=(7.0, 4.0))
    series = {}
    if seed is not None:
        series["seed §4.10 (Halide, Xeon Phi)"] = seed
    series.update({label: p["percent"] for label, p in profiles.items()})
    phases = list(next(iter(series.values())).keys())
    y = np.arange(len(phases))
    h = 0.8 / len(series)
    for i, (label, pct) in enumerate(series.items()):
        ax.barh(y + (i - (len(series) - 1) / 2) * h, [pct[p] for p in phases], height=h, label=label)
    ax.set_yticks(y, phases)
    ax.invert_yaxis()
    ax.set_xlabel("% of one training step")
    ax.legend(fontsize=8, loc="center right")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title("Where a training step spends its time")
    return ax


def thread_scaling_plot(data: dict, ax=None):
    """Seed Fig. 12: speedup over 1 thread against the thread count, one line per variant."""
    ax = new_axes(ax)
    th = data["threads"]
    for v, s in data["speedup"].items():
        ax.plot(th, s, "o-", label=v)
    ax.plot(th, th, ":", color="grey", label="ideal (linear)")
    ax.set_xlabel("threads")
    ax.set_ylabel("speedup over the first thread count")
    ax.set_xticks(th)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"Thread scaling (n = {data['n']})")
    return ax


def jit_bars(result: dict, ax=None):
    """Stacked bars of a fresh process: import + first call, JIT (empty cache) vs cached."""
    ax = new_axes(ax, figsize=(5.0, 3.2))
    names = ["JIT (empty cache)", "cached (cache=True)"]
    imp = [result["jit"]["import_s"], result["cached"]["import_s"]]
    first = [result["jit"]["first_call_s"], result["cached"]["first_call_s"]]
    ax.bar(names, imp, color="lightgrey", label="import")
    ax.bar(names, first, bottom=imp, color="tab:red", label="first call (compile or load + run)")
    ax.set_ylabel("seconds in a fresh process")
    ax.legend(fontsize=8)
    ax.set_title(f"numba JIT vs cached compile ({result['target']})")
    return ax


def step_bars(rows: dict, peak: float, ax=None):
    """Bars of GFLOP/s per step variant with the measured GEMM peak as a line."""
    from . import bar_compare  # noqa: PLC0415

    ax = bar_compare(rows, ax=ax, ylabel="GFLOP/s", reference=peak, reference_label="GEMM peak (measured)")
    ax.set_title("One training step, GFLOP/s of its GEMM work")
    return ax
