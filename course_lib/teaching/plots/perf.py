"""Figures for chapters 03 (batching) and 05 (threads, fusion, JIT vs AOT).

Each function draws on ``ax`` (or a new axis) and returns it; matplotlib is imported lazily.
"""
from __future__ import annotations

import numpy as np

from . import new_axes
from . import check_ax, check_data, check_keys, check_series  # noqa: F401
from ...core.validate import check_float, check_int, check_positive_int  # noqa: F401

__all__ = ["per_sample_plot", "phase_bars", "thread_scaling_plot", "jit_bars", "step_bars", "residency_plot",
           "framework_plot"]


def per_sample_plot(data: dict, ax=None, title: str | None = None, log_batch: bool = True):
    """Seed Fig. 9: training time per sequence against the batch size, with the GFLOP/s reached on a
    second axis. ``data`` from ``batching.time_per_sample``. ``log_batch=False`` for a linear sweep
    such as the seed's 100, 200, ..., 1000 (the times then on a linear axis from 0, so a flat curve
    looks flat)."""
    check_data(data, "data", kind=dict)
    ax = new_axes(ax, figsize=(6.5, 3.5))
    b = np.asarray(data["batch"])
    ms = 1e3 * np.asarray(data["per_sample_s"])
    ax.plot(b, ms, "o-", color="tab:blue", label="time per sequence")
    ax.set_xlabel("batch size B (sequences per step)")
    ax.set_ylabel("ms per sequence (one training step)", color="tab:blue")
    ax.grid(True, which="both", alpha=0.3)
    ax2 = ax.twinx()
    ax2.plot(b, data["gflops"], "s--", color="tab:orange", label="GFLOP/s reached")
    ax2.plot(b, data["bound_gflops"], ":", color="grey", lw=2, label="roofline bound (recurrent GEMM)")
    ax2.set_ylabel("GFLOP/s", color="tab:orange")
    if log_batch:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax2.set_yscale("log")
    else:
        ax.set_ylim(0, 1.15 * ms.max())
        ax2.set_ylim(0, 1.15 * max(np.max(data["gflops"]), np.max(data["bound_gflops"])))
    lines = ax.get_lines() + ax2.get_lines()
    ax.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="upper left", bbox_to_anchor=(1.15, 1.0))
    ax.set_title(title or f"Batching (width {data['width']}, T={data['T']}, {data.get('method', '')})")
    return ax


def phase_bars(profiles: dict, ax=None, seed: dict | None = None):
    """Horizontal grouped bars: % of a step per phase, one group per phase, one bar per profile.

    ``profiles``: ``{"label": profile_step(...)}``; ``seed``: ``{phase: the seed's %}`` for the same
    phases (from the claims registry; optional).
    """
    check_data(profiles, "profiles", kind=dict)
    ax = new_axes(ax, figsize=(7.0, 4.6))
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
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title("Where a training step spends its time")
    return ax


def thread_scaling_plot(data: dict, ax=None):
    """Seed Fig. 12: speedup over 1 thread against the thread count, one line per workload. The ideal
    (linear) line is a wide grey band drawn underneath, so it stays visible where a curve follows it;
    markers are offset slightly so equal points do not hide each other."""
    check_data(data, "data", kind=dict)
    ax = new_axes(ax, figsize=(6.5, 3.5))
    th = np.asarray(data["threads"], dtype=float)
    ax.plot(th, th / th[0], "-", color="lightgrey", lw=8, alpha=0.8, zorder=0, label="ideal (linear)")
    k = len(data["speedup"])
    for i, (v, s) in enumerate(data["speedup"].items()):
        dx = (i - (k - 1) / 2) * 0.03
        ax.plot(th + dx, s, "o-", label=v, zorder=2)
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("threads")
    ax.set_ylabel("speedup over the first thread count")
    ax.set_xticks(th)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"Thread scaling (n = {data['n']})")
    return ax


def jit_bars(result: dict, ax=None):
    """Stacked bars of a fresh process: import + first call, JIT (empty cache) vs cached."""
    check_data(result, "result", kind=dict)
    ax = new_axes(ax, figsize=(5.0, 3.2))
    names = ["JIT (empty cache)", "cached (cache=True)"]
    imp = [result["jit"]["import_s"], result["cached"]["import_s"]]
    first = [result["jit"]["first_call_s"], result["cached"]["first_call_s"]]
    ax.bar(names, imp, color="lightgrey", label="import")
    ax.bar(names, first, bottom=imp, color="tab:red", label="first call (compile or load + run)")
    ax.set_ylabel("seconds in a fresh process")
    ax.legend(fontsize=8)
    ax.set_title(f"numba JIT vs cached compile ({result['target']})")
    top = max(a + b for a, b in zip(imp, first))
    ax.set_ylim(0, 1.3 * top)
    return ax


def step_bars(rows: dict, peak: float, ax=None):
    """Bars of GFLOP/s per step variant with the measured GEMM peak as a line."""
    check_data(rows, "rows", kind=dict)
    peak = check_float(peak, "peak", low=0.0, low_inclusive=False)
    from . import bar_compare

    ax = bar_compare(rows, ax=ax, ylabel="GFLOP/s", reference=peak, reference_label="GEMM peak (measured)")
    ax.set_ylim(0, 1.2 * max(max(rows.values()), peak))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("One training step, GFLOP/s of its GEMM work")
    return ax


def residency_plot(data: dict, ax=None):
    """GEMV bandwidth (GB/s of the matrix read per second) against the working set, log-x (sizes span
    decades), with each cache's size as a vertical line and the DRAM streaming bandwidth as a
    horizontal one. ``data`` from ``batching.gemv_residency``."""
    check_data(data, "data", kind=dict)
    ax = new_axes(ax, figsize=(6.5, 3.5))
    ws = np.asarray(data["working_set"], dtype=float) / 2**20
    ax.plot(ws, data["gbps"], "o-", color="tab:blue", label="GEMV: bytes of W per second")
    for (name, size), ls in zip(sorted(data["caches"].items(), key=lambda kv: kv[1]), ("-", "--", "-.")):
        txt = f"{size / 2**10:g} KiB" if size < 2**20 else f"{size / 2**20:g} MiB"
        ax.axvline(size / 2**20, color="tab:green", ls=ls, lw=1, label=f"{name} = {txt}")
    ax.axhline(data["dram_gbps"], color="black", ls=":", lw=1.5, label="DRAM streaming (copy) bandwidth")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.15 * max(max(data["gbps"]), data["dram_gbps"]))
    ax.set_xlabel("working set (MiB, log scale)")
    ax.set_ylabel("GB/s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("A GEMV is as fast as the memory its matrix lives in")
    return ax


def framework_plot(data: dict, ax=None):
    """Seed Fig. 7: each compiled step's speed relative to hand-written numpy (numpy time / its time)
    against the size n (log-x), with 1 (= as fast as numpy) as a line. ``data`` from
    ``profile.framework_vs_numpy``."""
    check_data(data, "data", kind=dict)
    ax = new_axes(ax, figsize=(6.5, 3.5))
    n = np.asarray(data["sizes"], dtype=float)
    for m in data["methods"]:
        if m != "numpy":
            ax.plot(n, data["vs_numpy"][m], "o-", label=f"{m} step")
    ax.axhline(1.0, color="black", lw=1.5, label="numpy step (= 1)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("n = B = nx = nh = ny (log scale)")
    ax.set_ylabel("speed relative to numpy (log)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"A compiled step vs hand-written numpy (T = {data['T']})")
    return ax
