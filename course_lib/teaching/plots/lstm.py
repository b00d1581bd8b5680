"""Figures for chapter 09 (LSTM, data layout, autotuner). matplotlib is imported lazily."""
from __future__ import annotations

import numpy as np

from . import new_axes
from . import check_ax, check_data, check_keys, check_series  # noqa: F401
from ...core.validate import check_float, check_int, check_positive_int  # noqa: F401

__all__ = ["draw_cell", "ratio_heatmap", "profile_bars", "overhead_plot", "latency_plot", "method_bars", "hit_rate_bars"]


def draw_cell(ax=None):
    """The LSTM cell: the four gate blocks fed by [x_t, h_{t-1}] (one stacked GEMM), the cell
    line c_{t-1} -> c_t on top and h_t leaving at the right."""
    check_ax(ax)
    import matplotlib.patches as mp

    ax = new_axes(ax, figsize=(8.0, 4.2))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 6)
    ax.axis("off")

    def box(x, y, w, h, text, color):
        ax.add_patch(mp.FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", fc=color, ec="black"))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=10)

    def op(x, y, text):
        ax.add_patch(mp.Circle((x, y), 0.28, fc="white", ec="black"))
        ax.text(x, y, text, ha="center", va="center", fontsize=11)

    def arrow(x0, y0, x1, y1, **kw):
        ax.annotate("", (x1, y1), (x0, y0), arrowprops=dict(arrowstyle="->", lw=1.3, **kw))

    ax.add_patch(mp.FancyBboxPatch((1.2, 0.9), 7.2, 4.3, boxstyle="round,pad=0.1", fc="#f4f4f4", ec="grey"))
    # one GEMM for the four gates
    box(1.5, 1.2, 6.6, 0.7, r"one GEMM: $z = [x_t\,|\,h_{t-1}]\,[W_{ih}\,|\,W_{hh}]^T + b$   (B, 4H)", "#dbe9f6")
    gates = [("i", r"$\sigma$", 2.0), ("f", r"$\sigma$", 3.6), ("g", r"$\tanh$", 5.2), ("o", r"$\sigma$", 6.8)]
    for name, fn, x in gates:
        box(x, 2.4, 0.9, 0.6, f"{fn}  {name}", "#fde7c8")
        arrow(x + 0.45, 1.95, x + 0.45, 2.38)
    # cell line
    ax.plot([0.3, 9.7], [4.6, 4.6], color="black", lw=1.5)
    ax.text(0.3, 4.8, r"$c_{t-1}$", fontsize=11)
    ax.text(9.3, 4.8, r"$c_t$", fontsize=11)
    op(4.05, 4.6, r"$\times$")    # f * c
    op(5.65, 4.6, "+")            # + i*g
    op(5.65, 3.7, r"$\times$")    # i * g
    arrow(4.05, 3.02, 4.05, 4.32)
    arrow(2.45, 3.02, 5.37, 3.7)
    arrow(5.65, 3.02, 5.65, 3.42)
    arrow(5.65, 3.98, 5.65, 4.32)
    # output
    box(7.9, 3.8, 0.9, 0.45, r"$\tanh$", "#fde7c8")
    arrow(7.3, 4.6, 8.35, 4.27)
    op(8.35, 3.3, r"$\times$")
    arrow(7.25, 3.02, 8.07, 3.3)
    arrow(8.35, 3.78, 8.35, 3.58)
    arrow(8.63, 3.3, 9.7, 3.3)
    ax.text(9.3, 3.45, r"$h_t$", fontsize=11)
    # inputs
    ax.text(0.2, 1.45, r"$x_t,\ h_{t-1}$", fontsize=11)
    arrow(1.0, 1.55, 1.45, 1.55)
    ax.text(5.0, 0.35, "element-wise part: one fused kernel over the (B, 4H) gates", ha="center", fontsize=9,
            color="dimgrey")
    ax.set_title("LSTM cell, gate order i, f, g, o (PyTorch layout)")
    return ax


def ratio_heatmap(Bs, Hs, ratio, ax=None, seed_point=(64, 512)):
    """Heat map of ``ratio[iH, iB] = t(XW^T) / t(WX^T)`` (> 1: the transposed layout is faster)."""
    check_data(Bs, "Bs")
    check_data(Hs, "Hs")
    if np.shape(ratio) != (len(Hs), len(Bs)):
        raise ValueError(f"ratio: expected shape (len(Hs), len(Bs)) = ({len(Hs)}, {len(Bs)}), got {np.shape(ratio)}")
    ax = new_axes(ax, figsize=(6.0, 4.0))
    r = np.asarray(ratio, dtype=float)
    lim = max(float(np.max(np.abs(np.log2(r)))), 0.15)
    im = ax.imshow(np.log2(r), cmap="RdBu", vmin=-lim, vmax=lim, origin="lower", aspect="auto")
    ax.set_xticks(range(len(Bs)), [str(b) for b in Bs])
    ax.set_yticks(range(len(Hs)), [str(h) for h in Hs])
    for i in range(len(Hs)):
        for j in range(len(Bs)):
            dark = abs(np.log2(r[i, j])) > 0.6 * lim
            ax.text(j, i, f"{r[i, j]:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if dark else "black")
    if seed_point and seed_point[0] in Bs and seed_point[1] in Hs:
        ax.add_patch(__import__("matplotlib.patches", fromlist=["Rectangle"]).Rectangle(
            (list(Bs).index(seed_point[0]) - 0.5, list(Hs).index(seed_point[1]) - 0.5), 1, 1, fill=False,
            ec="black", lw=2))
    ax.set_xlabel("batch B  (X is B x H)")
    ax.set_ylabel("hidden H  (W is 4H x H)")
    ax.set_title("t(Y = X Wᵀ) / t(Yᵀ = W Xᵀ)\n> 1: transposed layout faster; box: the seed's 64 x 512", fontsize=10)
    ax.figure.colorbar(im, ax=ax, label="log2 ratio")
    return ax


def profile_bars(profiles, ax=None, seed_share: float | None = None):
    """100%-stacked bars: the share of one step's time in GEMMs vs element-wise work, one bar
    per profiled method, labelled with the step time and the library calls per step; ``seed_share``
    (a fraction, from the claims registry) is drawn as a dashed line."""
    check_data(profiles, "profiles")
    ax = new_axes(ax, figsize=(7.0, 3.5))
    names = [p["method"] for p in profiles]
    gemm = np.array([100 * p["gemm_share"] for p in profiles])
    ax.bar(names, gemm, label="GEMM", color="tab:blue")
    ax.bar(names, 100 - gemm, bottom=gemm, label="element-wise", color="tab:orange")
    for i, p in enumerate(profiles):
        total = (p["gemm_s"] + p["elementwise_s"]) * 1e3
        ax.annotate(f"{gemm[i]:.0f}% GEMM\n{total:.3g} ms, {p['calls_per_step']} calls", (i, 101),
                    ha="center", va="bottom", fontsize=8)
    if seed_share is not None:
        ax.axhline(100 * seed_share, color="black", ls="--", lw=1, label=f"seed: {100 * seed_share:.0f}% (cuDNN)")
    ax.set_ylabel("% of one time step")
    ax.set_ylim(0, 125)
    ax.set_title("where one step spends its time")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: hides no bar
    ax.figure.tight_layout()
    return ax


def _batch_lines(data, ax, ylabel, title):
    """One line per method against batch size, both axes log with plain-number ticks; ``title`` may
    name ``{nh}``."""
    check_data(data, "data")
    ax = new_axes(ax)
    for key, values in data.items():
        if key in ("B", "nh", "noise", "comparisons"):
            continue
        ax.loglog(data["B"], values, "o-", label=key)
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_locator(FixedLocator(data["B"]))  # the measured batch sizes, nothing between
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # 1-2-5 steps, plain numbers
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("batch size B")
    ax.set_ylabel(ylabel)
    ax.set_title(title.format(nh=data["nh"]))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def overhead_plot(data, ax=None):
    """Microseconds per step per sample against batch size, one line per method."""
    return _batch_lines(data, ax, "µs per step per sample",
                        "time per step per sample against batch size (nh = {nh})")


def latency_plot(data, ax=None):
    """Milliseconds per step against batch size (``experiments.lstm.latency_vs_batch``), one line per method."""
    return _batch_lines(data, ax, "ms per step", "latency of one step against batch size (nh = {nh})")


def method_bars(values: dict, ax=None, title: str = "", ylabel: str = "ms per time step",
                higher_is_better: bool = False):
    """Bars of one number per method (default: ms per step, lower is better), the best in green,
    each annotated with its value and its ratio to the best."""
    check_data(values, "values", kind=dict)
    ax = new_axes(ax)
    names = list(values)
    vals = [values[n] for n in names]
    best = max(vals) if higher_is_better else min(vals)
    colors = ["tab:green" if v == best else "tab:blue" for v in vals]
    ax.bar(names, vals, color=colors)
    for i, v in enumerate(vals):
        rel = best / v if higher_is_better else v / best
        ax.annotate(f"{v:.3g}\n{rel:.2f}x{' slower' if rel > 1.005 else ''}", (i, v), ha="center",
                    va="bottom", fontsize=8)
    ax.set_ylim(0, 1.35 * max(vals))  # room for the labels: no bar or label cut at the top
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.tick_params(axis="x", rotation=15)
    return ax


def hit_rate_bars(model, ax=None, seed: dict | None = None, source: str = "modelled"):
    """Fig. 3's utilisation half: modelled hit rate of ``Y = X W^T`` and ``Y^T = W X^T`` in each cache
    level (``model`` from :func:`course_lib.experiments.lstm.layout_traffic_model`), with the seed's
    measured GPU hit rates (``seed = {"XWt": %, "WXt": %}``, from the claims registry) as a separate group."""
    check_data(model, "model")
    ax = new_axes(ax, figsize=(7.0, 3.5))
    groups = [f"{lvl}\n{model['levels'][lvl]['size'] // 1024} KiB" for lvl in model["levels"]]
    xwt = [100 * model["levels"][lvl]["XWt"]["hit_rate"] for lvl in model["levels"]]
    wxt = [100 * model["levels"][lvl]["WXt"]["hit_rate"] for lvl in model["levels"]]
    if seed:
        groups.append("seed\n(GPU, measured)")
        xwt.append(seed["XWt"])
        wxt.append(seed["WXt"])
    x = np.arange(len(groups))
    for off, vals, label, color in ((-0.2, xwt, "Y = X Wᵀ", "tab:orange"), (0.2, wxt, "Yᵀ = W Xᵀ", "tab:blue")):
        ax.bar(x + off, vals, 0.38, label=label, color=color)
        for xi, v in zip(x + off, vals):
            ax.annotate(f"{v:.0f}%", (xi, v), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, groups)
    ax.set_ylim(0, 118)
    ax.set_ylabel("cache hit rate (%)")
    ax.set_title(f"X {model['B']}x{model['nx']}, W {4 * model['nh']}x{model['nx']}: "
                 f"hit rate per cache level (this machine: {source})", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.figure.tight_layout()
    return ax
