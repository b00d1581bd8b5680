"""Alt text for the course's figures: what a figure shows, in words (teaching folder).

``describe_figure(fig)`` reads a matplotlib figure's suptitle and, per axes, its title, axis labels and
legend entries, and writes one sentence a screen reader can say in place of the picture.

``register_alt_text()`` makes every figure Jupyter shows as a PNG carry that sentence in its output's
metadata (``{"image/png": {"alt": ...}}``), where the course site (``make book``) reads it. Two hooks,
because matplotlib's inline backend replaces every per-format printer for ``Figure`` when it starts
(at the first figure, possibly in the middle of a cell): IPython's mime-bundle formatter, which the
backend leaves alone, contributes the metadata; and the backend's own PNG printer is wrapped (again
before and after each cell), so a printer that returns metadata of its own (retina) keeps the alt text.
Outside IPython it does nothing. ``course_lib.teaching.plots`` calls it on import.
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
    """One axes in words: its title, "y against x", and its legend's labels ("" when it has none)."""
    titles = [_clean(ax.get_title(loc)) for loc in ("left", "center", "right")]
    words = "; ".join(t for t in titles if t) or ("an image" if ax.get_images() else "a plot")
    x, y = _clean(ax.get_xlabel()), _clean(ax.get_ylabel())
    if x or y:
        words += f" ({y} against {x})" if x and y else f" ({y})" if y else f" (along {x})"
    legend = ax.get_legend()
    labels = [_clean(t.get_text()) for t in legend.get_texts()] if legend is not None else []
    labels = [lab for lab in labels if lab]
    if labels:
        words += "; legend: " + ", ".join(labels)
    return words if (any(titles) or x or y or labels) else ""


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
    words = [_axes_words(ax) for ax in axes]
    if len(axes) > 1:  # a grid of small panels: name those that say something
        parts = [f"panel {i + 1}: {w}" for i, w in enumerate(words) if w]
    else:
        parts = [w or ("an image" if axes[0].get_images() else "a plot") for w in words]
    kind = "Figure" if len(axes) < 2 else f"Figure with {len(axes)} panels"
    text = f"{kind}: " + ". ".join(([head] if head else []) + parts) if parts or head else (
        "Empty figure" if not axes else f"{kind} without titles or labels")
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


def _alt_bundle(fig):
    """IPython mime-bundle printer for a Figure: no data of its own, the PNG's alt text as metadata."""
    try:
        return {}, {"image/png": {"alt": describe_figure(fig)}}
    except Exception:  # a figure we cannot describe still shows; the site falls back to its cell
        return None


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

        shell.display_formatter.mimebundle_formatter.for_type_by_name("matplotlib.figure", "Figure", _alt_bundle)
        shell.events.register("pre_execute", rewrap)
        shell.events.register("post_execute", rewrap)
    _wrap_png_printer(shell)
    return True
