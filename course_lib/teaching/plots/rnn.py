"""Figures for chapters 01-02: image strips, the unrolled RNN, the work of the two BPTT algorithms.

Every function draws on axes it is given (or new ones) and returns them; matplotlib is imported
inside the functions.
"""
from __future__ import annotations

import numpy as np
from . import check_ax, check_data, check_keys, check_series  # noqa: F401
from ...core.validate import check_float, check_int, check_positive_int  # noqa: F401

__all__ = ["image_strips", "unrolled_rnn", "bptt_work", "loss_curve"]


def image_strips(rows: dict, shape: tuple[int, int], *, max_frames: int = 10, title: str | None = None,
                 vmin: float = 0.0, vmax: float = 1.0):
    """One row of images per entry of ``rows`` (``name -> (T, H*W)`` frames), labelled t = 0, 1, ..."""
    check_data(rows, "rows", kind=dict)
    if not isinstance(shape, (tuple, list)) or len(shape) != 2:
        raise ValueError(f"shape: expected (height, width), got {shape!r}")
    max_frames = check_positive_int(max_frames, "max_frames", high=1000)
    import matplotlib.pyplot as plt

    names = list(rows)
    T = min(max_frames, min(len(np.asarray(v)) for v in rows.values()))
    fig, axes = plt.subplots(len(names), T, figsize=(1.1 * T, 1.25 * len(names)), squeeze=False)
    for r, name in enumerate(names):
        frames = np.asarray(rows[name])
        for t in range(T):
            ax = axes[r, t]
            ax.imshow(frames[t].reshape(shape), cmap="gray", vmin=vmin, vmax=vmax)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(f"t = {t}", fontsize=8)
        axes[r, 0].set_ylabel(name, fontsize=8, rotation=0, ha="right", va="center")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return axes


def unrolled_rnn(X: np.ndarray, H: np.ndarray, Yhat: np.ndarray, ax=None, decimals: int = 2):
    """The unrolled network of one sequence (``X (T, nx)``, ``H (T, nh)``, ``Yhat (T, ny)``), with
    the numbers of each vector written in its box and the arrows of the forward pass."""
    X, H, Yhat = (np.asarray(v) for v in (X, H, Yhat))
    for name, v in (("X", X), ("H", H), ("Yhat", Yhat)):
        if v.ndim != 2 or v.shape[0] < 1:
            raise ValueError(f"{name}: expected a (T, n) array of one sequence, got shape {v.shape}")
        if v.shape[0] != X.shape[0]:
            raise ValueError(f"{name}: expected T = {X.shape[0]} rows like X, got shape {v.shape}")
    if X.shape[0] > 32:
        raise ValueError(f"X: expected at most 32 steps to draw, got T = {X.shape[0]}")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    T = X.shape[0]
    if ax is None:
        _, ax = plt.subplots(figsize=(2.4 * T + 1.2, 3.4))

    def box(x, y, text, color):
        ax.add_patch(FancyBboxPatch((x - 0.9, y - 0.3), 1.8, 0.6, boxstyle="round,pad=0.05", fc=color, ec="black"))
        ax.text(x, y, text, ha="center", va="center", fontsize=7, family="monospace")

    def vec(v):
        return "[" + " ".join(f"{a:+.{decimals}f}" for a in v) + "]"

    arrow = dict(arrowstyle="->", color="black", lw=1)
    box(-1.4, 1.5, "h0\n" + "0", "#eeeeee")
    for t in range(T):
        x = 2.4 * t + 1.2
        box(x, 0.0, f"x_{t + 1}\n{vec(X[t])}", "#d6e9f8")  # steps counted 1..T as in the seed
        box(x, 1.5, f"h_{t + 1}\n{vec(H[t])}", "#fde7c8")
        box(x, 3.0, f"ŷ_{t + 1}\n{vec(Yhat[t])}", "#d9f2d9")
        ax.annotate("", (x, 1.15), (x, 0.35), arrowprops=arrow)
        ax.annotate("", (x, 2.65), (x, 1.85), arrowprops=arrow)
        ax.annotate("", (x - 0.95, 1.5), (x - 1.45, 1.5), arrowprops=arrow)
        ax.text(x - 1.2, 1.62, "Whh", fontsize=6, ha="center")
        ax.text(x + 0.08, 0.72, "Wxh", fontsize=6)
        ax.text(x + 0.08, 2.22, "Why", fontsize=6)
    ax.set_xlim(-2.5, 2.4 * T + 0.4)
    ax.set_ylim(-0.6, 3.6)
    ax.axis("off")
    ax.set_title("forward pass, left to right: h_t = tanh(x_t Wxh + h_(t-1) Whh),  ŷ_t = tanh(h_t Why)", fontsize=9)
    return ax


def bptt_work(T: int = 8, axes=None):
    """Which (output step t, walk step s) terms each algorithm computes.

    Left, the WildML double loop: for every output step t it walks back over s = t, t-1, ..., 0,
    so the lower triangle (T(T+1)/2 cells) is computed. Right, the O(T) sweep: one visit per step,
    carrying the summed error of all later outputs in ``dh_next``.
    """
    T = check_positive_int(T, "T", high=64)
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(8.5, 3.8))
    quad = np.tril(np.ones((T, T)))
    lin = np.zeros((T, T))
    lin[np.arange(T), np.arange(T)] = 1
    for ax, grid, title in ((axes[0], quad, f"O(T²): {T * (T + 1) // 2} walk steps"),
                            (axes[1], lin, f"O(T): {T} steps, dh_next carries the summed error")):
        ax.imshow(grid, cmap="Oranges", vmin=0, vmax=1.6, origin="upper")
        ax.set_xlabel("step s whose weights get a term (s ≤ t)")
        ax.set_ylabel("output step t whose error is sent back")
        ax.set_xticks(range(T))
        ax.set_yticks(range(T))
        ax.set_title(title, fontsize=10)
        for t in range(T):
            for s in range(T):
                if grid[t, s]:
                    ax.text(s, t, "δ" if s < t else "●", ha="center", va="center", fontsize=7)
    for s in range(T - 1):
        axes[1].annotate("", (s, s), (s + 1, s + 1), arrowprops=dict(arrowstyle="->", color="tab:blue"))
    return axes


def loss_curve(history, ax=None, baseline: float | None = None, baseline_label: str = "baseline"):
    """Loss per epoch on a log y axis, with an optional horizontal reference line."""
    check_data(history, "history")
    from . import new_axes

    ax = new_axes(ax)
    ax.semilogy(np.arange(len(history)), history, "o-", ms=3, label="training loss")
    if baseline is not None:
        ax.axhline(baseline, color="tab:red", ls="--", label=baseline_label)
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss per sequence (E / B)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return ax
