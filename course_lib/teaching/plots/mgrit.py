"""Figures for chapter 10 (MGRIT): the two-level cycle, convergence histories, the work/span model,
speedup vs sequence length, and the time axis that data parallelism leaves alone. Legends sit
outside the data (right of the axes) so nothing is hidden under them."""
from __future__ import annotations

import numpy as np

from . import new_axes
from . import check_ax, check_data, check_keys, check_series  # noqa: F401
from ...core.validate import check_float, check_int, check_positive_int  # noqa: F401

__all__ = ["draw_two_level_cycle", "plot_histories", "plot_speedup_model", "plot_coarse_blowup",
           "plot_speedup_vs_length", "plot_time_axis"]


def _legend_outside(ax, fontsize=7):
    ax.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def draw_two_level_cycle(nt: int = 16, m: int = 4, ax=None):
    """The fine grid (C- and F-points), the coarse grid, and the three phases of one iteration."""
    nt = check_positive_int(nt, "nt", high=256)
    m = check_int(m, "m", low=2, high=nt)
    check_ax(ax)
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8.0, 3.2))
    t = np.arange(nt + 1)
    fine_y, coarse_y = 1.0, 0.0
    c = t[::m]
    f = np.setdiff1d(t, c)
    ax.plot([0, nt], [fine_y, fine_y], color="grey", lw=1)
    ax.plot([0, nt], [coarse_y, coarse_y], color="grey", lw=1)
    ax.plot(f, np.full(f.size, fine_y), "o", color="tab:blue", ms=6, label="F-points (fine)")
    ax.plot(c, np.full(c.size, fine_y), "s", color="tab:red", ms=9, label="C-points (every m steps)")
    ax.plot(c, np.full(c.size, coarse_y), "s", color="tab:red", ms=9, mfc="white")
    for j in range(nt // m):  # F-relaxation arrows, one independent march per interval
        ax.annotate("", xy=(j * m + m - 1, fine_y + 0.12), xytext=(j * m, fine_y + 0.12),
                    arrowprops=dict(arrowstyle="->", color="tab:blue"))
        ax.annotate("", xy=((j + 1) * m, coarse_y - 0.12), xytext=(j * m, coarse_y - 0.12),
                    arrowprops=dict(arrowstyle="->", color="tab:green"))
    for x in c:
        ax.annotate("", xy=(x, coarse_y + 0.1), xytext=(x, fine_y - 0.1),
                    arrowprops=dict(arrowstyle="<->", color="tab:purple", lw=0.8, ls="--"))
    ax.text(nt + 0.5, fine_y, "level 0: fine grid\n1) F-relax, parallel per interval", va="center", fontsize=8)
    ax.text(nt + 0.5, coarse_y, "level 1: coarse grid (dt*m)\n3) sequential coarse solve", va="center", fontsize=8)
    ax.text(nt / 2, 0.5, "2) restrict residual (inject)   4) correct C-points, F-relax", ha="center",
            fontsize=8, color="tab:purple", bbox=dict(fc="white", ec="none"))
    ax.set_xlim(-0.5, nt + 8)
    ax.set_xticks(list(range(0, nt + 1, m)))
    ax.set_ylim(-0.5, 1.5)
    ax.set_yticks([])
    ax.set_xlabel(f"time point (nt = {nt}, m = {m})")
    ax.set_title("one two-level MGRIT iteration (F-relaxation = Parareal)")
    ax.legend(loc="upper left", fontsize=8, ncol=2)
    return ax


def plot_histories(histories: dict, ax=None, title: str = "", label_fmt: str = "m = {}"):
    """Residual norm per iteration (log scale), one line per key of ``histories``."""
    check_data(histories, "histories", kind=dict)
    ax = new_axes(ax)
    for key, hist in histories.items():
        h = np.maximum(np.asarray(hist, dtype=float), 1e-17)
        ax.semilogy(np.arange(1, len(h) + 1), h, "o-", label=label_fmt.format(key))
    ax.set_xlabel("iteration")
    ax.set_ylabel("residual norm at C-points")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return ax


def plot_speedup_model(Ps, curves: dict, *, seed_speedup: float | None = None, seed_label: str = "seed",
                       measured: dict | None = None, ax=None,
                       title: str = "MGRIT work/span model (a model, not a measurement)"):
    """Modelled speedup vs processors (log-log: both span decades), the seed's number as a dashed
    line labelled ``seed_label``, measured points as stars. Legend right of the axes."""
    check_series(Ps, "Ps", curves, "curves")
    ax = new_axes(ax, figsize=(8.0, 4.0))
    for label, sp in curves.items():
        ax.loglog(Ps, sp, "-", label=f"model: {label}")
    ax.loglog(Ps, Ps, ":", color="grey", label="ideal (P)")
    if seed_speedup is not None:
        ax.axhline(seed_speedup, color="tab:red", ls="--", label=seed_label)
    for label, (P, s) in (measured or {}).items():
        ax.loglog([P], [s], "k*", ms=12, label=f"measured here: {label}")
    ax.set_xlabel("processors P")
    ax.set_ylabel("speedup over the serial forward")
    lo = min([0.5] + [float(np.min(v)) for v in curves.values()] + [s for _, s in (measured or {}).values()])
    ax.set_ylim(lo / 1.5, max(Ps) * 1.5)
    ax.grid(True, which="both", alpha=0.3)
    _legend_outside(ax)
    ax.set_title(title, fontsize=10)
    return ax


def plot_speedup_vs_length(Ts, curves: dict, *, measured: dict | None = None, seed_speedup: float | None = None,
                           seed_label: str = "seed", ax=None,
                           title: str = "speedup of MGRIT over the serial march vs sequence length"):
    """Speedup vs sequence length T (log-log): model ``curves`` ({label: speedups at Ts}), measured
    points ({label: (Ts, speedups)}), the seed's number as a dashed line; 1 = break-even."""
    check_series(Ts, "Ts", curves, "curves")
    ax = new_axes(ax, figsize=(8.0, 4.0))
    for label, sp in curves.items():
        ax.loglog(Ts, sp, "-", label=f"model: {label}")
    for label, (ts, sp) in (measured or {}).items():
        ax.loglog(ts, sp, "k*-", ms=10, lw=0.8, label=f"measured here: {label}")
    ax.axhline(1.0, color="grey", ls=":", lw=1, label="break-even (1)")
    if seed_speedup is not None:
        ax.axhline(seed_speedup, color="tab:red", ls="--", label=seed_label)
    vals = [float(np.min(v)) for v in curves.values()] + [float(np.min(s)) for _, s in (measured or {}).values()]
    tops = [float(np.max(v)) for v in curves.values()] + [float(np.max(s)) for _, s in (measured or {}).values()]
    ax.set_ylim(min(vals + [1.0]) / 1.5, max(tops + [seed_speedup or 1.0]) * 1.5)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length T (time steps)")
    ax.set_ylabel("speedup (serial time / parallel time)")
    ax.grid(True, which="both", alpha=0.3)
    _legend_outside(ax)
    ax.set_title(title, fontsize=10)
    return ax


def plot_time_axis(Ts, series: dict, ax=None, title: str = "serial GRU forward: time vs sequence length"):
    """Measured seconds vs T for each ``series`` ({label: seconds}), log-log (T spans a decade)."""
    check_series(Ts, "Ts", series, "series")
    ax = new_axes(ax, figsize=(8.0, 3.5))
    for label, secs in series.items():
        ax.loglog(Ts, secs, "o-", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length T (time steps)")
    ax.set_ylabel("seconds")
    ax.grid(True, which="both", alpha=0.3)
    _legend_outside(ax)
    ax.set_title(title, fontsize=10)
    return ax


def plot_coarse_blowup(explicit, implicit, *, M: int, ax=None):
    """max |h| along the coarse grid for the explicit and the implicit coarse step (log scale)."""
    check_data(explicit, "explicit")
    check_data(implicit, "implicit")
    M = check_positive_int(M, "M")
    ax = new_axes(ax)
    for name, traj in (("explicit (classic) GRU step", explicit), ("implicit GRU step", implicit)):
        mag = np.abs(np.asarray(traj, dtype=float)).reshape(len(traj), -1).max(axis=1)
        mag = np.where(np.isfinite(mag) & (mag > 0), mag, np.nan)  # h0 = 0 and overflow are not drawn
        ax.semilogy(np.arange(len(mag)), mag, "o-", ms=3, label=name)
    ax.set_xlabel(f"coarse time point (every M = {M} fine steps, gamma = {M})")
    ax.set_ylabel("max |h|")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("a coarse GRU step with gamma = m**level")
    return ax
