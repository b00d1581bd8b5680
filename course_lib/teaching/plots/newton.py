"""Figures for chapter 11 (Newton in time): DEER's iterates, residual histories, iterations vs
predictability, the work/span model, the float32 drift of the minGRU scans."""
from __future__ import annotations

import numpy as np

from . import new_axes
from . import check_ax, check_data, check_keys, check_series  # noqa: F401
from ...core.validate import check_float, check_int, check_positive_int  # noqa: F401

__all__ = ["plot_iterates", "plot_histories", "plot_predictability", "plot_model_speedups", "plot_drift"]


def plot_iterates(iterates, serial, *, channel: int = 0, batch: int = 0, ax=None):
    """One hidden unit over time after each Newton iteration, with the serial trajectory: the
    correct prefix grows from the left."""
    check_data(iterates, "iterates", kind=(list, tuple))
    if np.ndim(serial) != 3:
        raise ValueError(f"serial: expected a (T, B, H) trajectory, got shape {np.shape(serial)}")
    ax = new_axes(ax, figsize=(7.0, 3.2))
    t = np.arange(1, serial.shape[0] + 1)
    ax.plot(t, serial[:, batch, channel], color="black", lw=3, alpha=0.3, label="serial")
    cmap = __import__("matplotlib").colormaps["viridis"]
    n = len(iterates)
    for k, H in enumerate(iterates):
        ax.plot(t, H[:, batch, channel], color=cmap(k / max(n - 1, 1)), lw=1, label=f"iter {k}")
    ax.set_xlabel("time step t")
    ax.set_ylabel(f"h[t, {channel}]")
    ax.legend(fontsize=7, ncol=2)
    return ax


def plot_histories(histories: dict, *, ax=None, tol: float | None = None):
    """Max-abs residual per iteration, one line per method."""
    check_data(histories, "histories", kind=dict)
    ax = new_axes(ax)
    for name, h in histories.items():
        ax.semilogy(range(len(h)), np.maximum(h, 1e-17), marker="o", ms=3, label=name)
    if tol:
        ax.axhline(tol, color="grey", ls=":", lw=1)
    ax.set_xlabel("iteration")
    ax.set_ylabel("max |residual|")
    ax.legend(fontsize=8)
    return ax


def plot_predictability(rows, *, ax=None):
    """Iterations of each method vs the Lyapunov exponent (diverged points are marked with x)."""
    check_data(rows, "rows", kind=(list, tuple))
    ax = new_axes(ax)
    lyap = [r["lyapunov"] for r in rows]
    for m in ("newton", "quasi", "damped", "picard", "jacobi", "mgrit"):
        if m not in rows[0]:
            continue
        y = [r[m] for r in rows]
        ok = [(l, v) for l, v in zip(lyap, y) if v is not None]
        if ok:
            ax.plot(*zip(*ok), marker="o", label=m)
        bad = [l for l, v in zip(lyap, y) if v is None]
        if bad:
            ax.plot(bad, [1] * len(bad), "x", color="red", ms=9)
    ax.set_yscale("log")
    ax.set_xlabel("largest Lyapunov exponent (per step)")
    ax.set_ylabel("iterations to tolerance")
    ax.legend(fontsize=8)
    return ax


def plot_model_speedups(Ps, Hs, speedups: dict, *, ax=None, measured=None):
    """Modelled speedup vs P for each hidden size (solid: Newton, dashed: quasi)."""
    check_data(Ps, "Ps")
    check_data(Hs, "Hs")
    check_data(speedups, "speedups", kind=dict)
    for k, S in speedups.items():
        if np.shape(S) != (len(Hs), len(Ps)):
            raise ValueError(f"speedups[{k!r}]: expected shape (len(Hs), len(Ps)) = ({len(Hs)}, {len(Ps)}), got {np.shape(S)}")
    ax = new_axes(ax, figsize=(6.5, 3.5))
    styles = {"newton": "-", "quasi": "--"}
    for m, S in speedups.items():
        for i, H in enumerate(Hs):
            ax.loglog(Ps, S[i], styles.get(m, ":"), color=f"C{i}", label=f"{m}, H={H}")
    ax.axhline(1.0, color="grey", lw=1)
    if measured is not None:
        ax.plot(*measured, "*", color="red", ms=12, label="measured here")
    ax.set_xlabel("processors P")
    ax.set_ylabel("speedup over serial (model)")
    ax.legend(fontsize=7, ncol=2)
    return ax


def plot_drift(drift: dict, *, ax=None):
    """float32 error vs T of the three minGRU evaluations."""
    check_keys(drift, "drift", ("T",))
    ax = new_axes(ax)
    for m in ("sequential", "chunked", "log_space"):
        ax.loglog(drift["T"], np.maximum(drift[m], 1e-12), marker="o", label=m)
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("max relative error vs float64")
    ax.legend(fontsize=8)
    return ax
