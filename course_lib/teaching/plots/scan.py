"""Figures for chapter 08 (linear recurrences and the scan). matplotlib is imported lazily."""
from __future__ import annotations

import math

import numpy as np

from . import new_axes
from . import check_ax, check_data, check_keys, check_series  # noqa: F401
from ...core.validate import check_float, check_int, check_positive_int  # noqa: F401

__all__ = ["draw_scan_tree", "draw_scan_trees", "phase_split_bars", "render_sweep", "seed_phases",
           "time_vs_H", "crossover_map", "accuracy_curves", "METHOD_COLORS"]

METHOD_COLORS = {"sequential": "tab:gray", "channels": "tab:blue", "chunked": "tab:orange"}


def seed_phases() -> dict:
    """Seed 001's reduce / scan / expand split (fractions), read from the claims registry."""
    from ..claims import claim

    return {p: claim(f"001.phases.{p}").value / 100 for p in ("reduce", "scan", "expand")}


def _tree_edges(method: str, T: int):
    """(levels, edges) of a scan's dependency graph: edges ((level, i) -> (level+1, j)); a node
    at level+1 with two incoming edges is one combine."""
    edges = []
    if method == "sequential":
        for t in range(1, T):
            edges.append(((t - 1, t - 1), (t, t)))
            edges.append(((0, t), (t, t)))
        return T, edges, [f"step {t}" for t in range(T)]
    if method == "hillis_steele":
        levels = math.ceil(math.log2(T)) if T > 1 else 0
        for d in range(levels):
            s = 2 ** d
            for i in range(T):
                edges.append(((d, i), (d + 1, i)))
                if i >= s:
                    edges.append(((d, i - s), (d + 1, i)))
        return levels + 1, edges, ["input"] + [f"offset {2 ** d}" for d in range(levels)]
    # blelloch
    levels = math.ceil(math.log2(T)) if T > 1 else 0
    n = 2 ** levels
    lev = 0
    names = ["input"]
    step = 1
    while step < n:
        for i in range(n):
            edges.append(((lev, i), (lev + 1, i)))
        for k in range(2 * step - 1, n, 2 * step):
            edges.append(((lev, k - step), (lev + 1, k)))
        names.append(f"up {step}")
        lev += 1
        step *= 2
    step = n // 2
    while step >= 1:
        for i in range(n):
            if not any(i == k - step for k in range(2 * step - 1, n, 2 * step)):
                edges.append(((lev, i), (lev + 1, i)))
        for k in range(2 * step - 1, n, 2 * step):
            edges.append(((lev, k), (lev + 1, k - step)))   # left <- parent
            edges.append(((lev, k - step), (lev + 1, k)))   # right <- parent o left
        names.append(f"down {step}")
        lev += 1
        step //= 2
    return lev + 1, edges, names


def draw_scan_tree(method: str = "blelloch", T: int = 8, ax=None):
    """Draw the dependency graph of a scan of length T (columns: elements, rows: parallel steps,
    top to bottom); nodes with two inputs are combines (filled). Title: work and span."""
    from ...algorithms.scan import scan_counts
    from ...core.validate import check_choice

    check_choice(method, "method", ("sequential", "hillis_steele", "blelloch"))
    check_int(T, "T", low=1, high=64)
    ax = new_axes(ax, figsize=(4.5, 4.0))
    n_levels, edges, names = _tree_edges(method, T)
    incoming: dict = {}
    for (l0, i0), (l1, i1) in edges:
        ax.plot([i0, i1], [-l0, -l1], color="tab:gray", lw=0.8, zorder=1)
        incoming[(l1, i1)] = incoming.get((l1, i1), 0) + 1
    width = T if method != "blelloch" else 2 ** (math.ceil(math.log2(T)) if T > 1 else 0)
    for lev in range(n_levels):
        for i in range(width):
            if method == "sequential" and lev > 0 and i != lev:
                continue
            combine = incoming.get((lev, i), 0) >= 2
            ax.scatter([i], [-lev], s=60, zorder=2, color="tab:orange" if combine else "white",
                       edgecolors="black", linewidths=0.8)
    c = scan_counts(method, T)
    ax.set_title(f"{method.replace('_', '-')}: T={T}, work {c.work} combines, span {c.span} steps", fontsize=9)
    ax.set_yticks([-lev for lev in range(n_levels)])
    ax.set_yticklabels(names, fontsize=7)
    ax.set_xticks(range(width))
    ax.set_xlabel("element (time step)")
    ax.set_ylabel("parallel step")
    return ax


def draw_scan_trees(T: int = 8):
    """The three scans side by side (sequential, Hillis-Steele, Blelloch); returns the figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    for ax, m in zip(axes, ("sequential", "hillis_steele", "blelloch")):
        draw_scan_tree(m, T, ax=ax)
    fig.tight_layout()
    return fig


def phase_split_bars(splits: dict, ax=None):
    """Stacked horizontal bars of reduce / scan / expand fractions. ``splits`` maps a label to a
    dict with ``reduce``, ``scan``, ``expand`` fractions (the seed's split: :func:`seed_phases`)."""
    check_data(splits, "splits", kind=dict)
    ax = new_axes(ax, figsize=(7, 0.6 + 0.5 * len(splits)))
    colors = {"reduce": "tab:blue", "scan": "tab:orange", "expand": "tab:green"}
    for row, (_label, fr) in enumerate(splits.items()):
        left = 0.0
        for phase in ("reduce", "scan", "expand"):
            v = fr[phase]
            ax.barh(row, v, left=left, color=colors[phase], label=phase if row == 0 else None)
            if v > 0.06:
                ax.text(left + v / 2, row, f"{100 * v:.0f}%", ha="center", va="center", fontsize=8, color="white")
            left += v
    ax.set_yticks(range(len(splits)))
    ax.set_yticklabels(list(splits), fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("fraction of the scan's time")
    ax.set_title("reduce / scan-of-carries / expand")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return ax


def render_sweep(data: dict, ax) -> str:
    """Widget renderer for :func:`course_lib.experiments.scan.scan_sweep`: bars of GB/s, method vs sequential, on a
    log scale -- a method 40x slower than the loop (a thread pool starved by other programs) still shows its bar."""
    check_keys(data, "data", ("method",))
    check_ax(ax)
    names = ["sequential", data["method"]]
    vals = [data["sequential_gbs"], data["gbs"]]
    low = min(vals) / 3
    ax.bar(names, [v - low for v in vals], bottom=low, color=["tab:gray", "tab:blue"])
    ax.set_yscale("log")
    ax.set_ylabel("GB/s (12 bytes per element, log scale)")
    ax.set_title(f"T={data['T']}, nh={data['nh']}")
    extra = f", chunks={data['chunks']}" if data.get("chunks") else ""
    ax.set_ylim(low, 1.5 * max(vals))
    text = (f"{data['method']}: {1e3 * data['seconds']:.2f} ms ({data['gbs']:.1f} GB/s), sequential "
            f"{1e3 * data['sequential_seconds']:.2f} ms -> speedup {data['speedup']:.2f}x{extra}; "
            f"max rel. error {data['max_rel_error']:.1e}")
    noise = data.get("noise")
    if noise is not None and not noise.ok:
        text += "\n" + noise.warning()
    return text


def time_vs_H(data: dict, T: int, ax=None):
    """Time per element against H at one T for the three methods of
    :func:`course_lib.experiments.scan.crossover`; the H where the winner changes is marked."""
    ax = new_axes(ax, figsize=(6.0, 3.6))
    Hs = [H for H in data["Hs"] if (T, H) in data["cells"]]
    if not Hs:
        raise ValueError(f"T: no measured cells at T = {T}; measured T: {sorted({k[0] for k in data['cells']})}")
    for m, color in METHOD_COLORS.items():
        ns = [1e9 * data["cells"][(T, H)]["seconds"][m] / (T * H) for H in Hs]
        ax.plot(Hs, ns, "o-", color=color, label=m if m != "chunked" else "chunked (over time)")
    winners = [data["cells"][(T, H)]["winner"] for H in Hs]
    for i in range(1, len(Hs)):
        if winners[i] != winners[i - 1]:
            x = (Hs[i - 1] * Hs[i]) ** 0.5
            ax.axvline(x, color="black", ls=":", lw=1)
            ax.annotate(f"{winners[i - 1]} -> {winners[i]}", (x, 0.98), xycoords=("data", "axes fraction"),
                        rotation=90, va="top", ha="right", fontsize=7)
    ax.set_xscale("log", base=2)  # H spans decades: equal steps per doubling
    ax.set_yscale("log")
    ax.set_xlabel("H (channels)")
    ax.set_ylabel("ns per element")
    ax.set_title(f"T = {T}: who wins, by H", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def crossover_map(data: dict, ax=None):
    """The crossover map of :func:`course_lib.experiments.scan.crossover`: one cell per measured (T, H),
    coloured by the winner, labelled with its speed-up over the sequential loop."""
    check_keys(data, "data", ("Hs",))
    ax = new_axes(ax, figsize=(6.5, 0.8 + 0.45 * len(data["Hs"])))
    Ts, Hs = data["Ts"], data["Hs"]
    letters = {"sequential": "S", "channels": "C", "chunked": "T"}
    import matplotlib.patches as mpatches

    for i, H in enumerate(Hs):
        for j, T in enumerate(Ts):
            cell = data["cells"].get((T, H))
            if cell is None:
                ax.add_patch(mpatches.Rectangle((j - 0.5, i - 0.5), 1, 1, color="white", ec="lightgray"))
                continue
            w = cell["winner"]
            ax.add_patch(mpatches.Rectangle((j - 0.5, i - 0.5), 1, 1, color=METHOD_COLORS[w], alpha=0.6))
            ax.text(j, i, f"{letters[w]} {cell['speedup'][w]:.1f}", ha="center", va="center", fontsize=9)
    ax.set_xlim(-0.5, len(Ts) - 0.5)
    ax.set_ylim(-0.5, len(Hs) - 0.5)
    ax.set_xticks(range(len(Ts)))
    ax.set_xticklabels([f"2^{int(np.log2(T))}" if T & (T - 1) == 0 else str(T) for T in Ts], fontsize=9)
    ax.set_yticks(range(len(Hs)))
    ax.set_yticklabels([str(H) for H in Hs], fontsize=9)
    ax.set_xlabel("T (time steps)")
    ax.set_ylabel("H (channels)")
    ax.set_title("fastest: S sequential, C over channels, T over time (x the sequential loop)", fontsize=10)
    handles = [mpatches.Patch(color=c, alpha=0.6, label=m) for m, c in METHOD_COLORS.items()]
    ax.legend(handles=handles, fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def accuracy_curves(results: dict, ax=None):
    """Held-out accuracy per epoch of :func:`course_lib.experiments.scan.remember_first`'s runs; a
    run that reached 100% ends with a filled marker."""
    check_data(results, "results", kind=dict)
    ax = new_axes(ax, figsize=(6.0, 3.2))
    for layer, res in results.items():
        ep, acc = res.history["epoch"], res.history["val_accuracy"]
        line, = ax.plot(ep, acc, "-", label=f"{layer} ({'100%' if res.info['converged'] else 'not 100%'})")
        ax.plot(ep[-1:], acc[-1:], "o", color=line.get_color(),
                fillstyle="full" if res.info["converged"] else "none")
    ax.set_ylim(0.4, 1.02)
    ax.set_xlabel("epoch")
    ax.set_ylabel("held-out accuracy")
    ax.legend(fontsize=8, loc="lower right")
    return ax
