"""Alt text for the course's figures: what a figure shows, in words (teaching folder).

``describe_figure(fig)`` reads a matplotlib figure's suptitle and, per axes, its title, axis labels and
legend entries, and writes one sentence a screen reader can say in place of the picture.

``register_alt_text()`` makes every figure Jupyter shows as a PNG carry that sentence in its output's
metadata (``{"image/png": {"alt": ...}}``), where the course site (``make book``) reads it. It wraps
IPython's PNG printer for ``Figure`` (the one matplotlib's inline backend registers) and wraps it again
before and after each cell, because the inline backend re-registers its printer when pyplot is first
imported. Outside IPython it does nothing. ``course_lib.teaching.plots`` calls it on import.
"""
from __future__ import annotations

import re
import sys

__all__ = ["describe_figure", "register_alt_text", "MAX_ALT"]

#: longest alt text (characters); a longer description is cut at a word with "..."
MAX_ALT = 400
_MARK = "_course_alt_text"
_REGISTERED: set[int] = set()


def _clean(text) -> str:
    """Label text without mathtext markup: ``$\\tau$ (s)`` -> ``tau (s)``."""
    text = re.sub(r"\\(mathrm|mathbf|mathit|text)\{([^}]*)\}", r"\2", str(text or ""))
    text = text.replace("$", "").replace("\\", "").replace("{", "").replace("}", "")
    return " ".join(text.split())


def _axes_words(ax) -> str:
    """One axes in words: its title, "y against x", and its legend's labels."""
    titles = [_clean(ax.get_title(loc)) for loc in ("left", "center", "right")]
    words = "; ".join(t for t in titles if t) or "a plot"
    x, y = _clean(ax.get_xlabel()), _clean(ax.get_ylabel())
    if x or y:
        words += f" ({y or 'values'} against {x or 'position'})"
    legend = ax.get_legend()
    labels = [_clean(t.get_text()) for t in legend.get_texts()] if legend is not None else []
    labels = [lab for lab in labels if lab]
    if labels:
        words += "; legend: " + ", ".join(labels)
    return words


def describe_figure(fig, limit: int = MAX_ALT) -> str:
    """A sentence describing matplotlib figure ``fig``: its suptitle, then each visible axes' title,
    axis labels and legend (colour bars and hidden axes left out), at most ``limit`` characters."""
    if not hasattr(fig, "axes") or not hasattr(fig, "get_size_inches"):
        raise TypeError(f"fig: expected a matplotlib Figure, got {type(fig).__name__}")
    if not isinstance(limit, int) or limit < 20:
        raise ValueError(f"limit: expected an int >= 20 (characters), got {limit!r}")
    sup = getattr(fig, "_suptitle", None)
    head = _clean(sup.get_text()) if sup is not None else ""
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    parts = [_axes_words(ax) for ax in axes]
    if len(parts) > 1:
        parts = [f"panel {i + 1}: {p}" for i, p in enumerate(parts)]
    kind = "Figure" if len(parts) < 2 else f"Figure with {len(parts)} panels"
    text = f"{kind}: " + ". ".join(([head] if head else []) + parts) if parts or head else "Empty figure"
    if len(text) > limit:
        text = text[: limit - 3].rsplit(" ", 1)[0] + "..."
    return text


def _wrap_png_printer(shell) -> bool:
    """Wrap the shell's PNG printer for ``Figure`` (if matplotlib registered one) so that it returns
    ``(png, {"alt": description})``; True when a printer is (now) wrapped."""
    mod = sys.modules.get("matplotlib.figure")
    if mod is None:
        return False
    png = shell.display_formatter.formatters["image/png"]
    printer = png.type_printers.get(mod.Figure)
    if printer is None:
        return False
    if getattr(printer, _MARK, False):
        return True

    def with_alt(fig, _print=printer):
        out = _print(fig)
        data, md = out if isinstance(out, tuple) and len(out) == 2 else (out, None)
        if data is None:
            return out
        try:
            alt = describe_figure(fig)
        except Exception:  # a figure we cannot describe still shows; the site falls back to its cell
            return out
        return data, {**(md or {}), "alt": alt}

    setattr(with_alt, _MARK, True)
    png.for_type(mod.Figure, with_alt)
    return True


def register_alt_text(shell=None) -> bool:
    """Make every figure IPython shows as a PNG carry ``{"alt": describe_figure(fig)}`` as metadata.

    ``shell``: an IPython InteractiveShell (default: the running one). Returns False outside IPython
    (nothing to do), True once registered; calling it again does no harm."""
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
        if shell is None:
            return False
    if not hasattr(shell, "display_formatter") or not hasattr(shell, "events"):
        raise TypeError(f"shell: expected an IPython InteractiveShell, got {type(shell).__name__}")
    if id(shell) not in _REGISTERED:
        _REGISTERED.add(id(shell))

        def rewrap(*_args):
            _wrap_png_printer(shell)

        shell.events.register("pre_execute", rewrap)
        shell.events.register("post_execute", rewrap)
    _wrap_png_printer(shell)
    return True
