"""Progress bars whose saved form is honest (core folder).

In a notebook, tqdm's widget bar is displayed once; the text form stored with it (what a notebook
opened without its widgets shows, and what nbval compares) is the bar *at display time*: 0%. A
committed notebook then shows "training: 0%" beside a finished result. :func:`progress_bar` shows
the same live widget bar, but its stored text says what the bar counts, without a percentage or a
timing (``training: 320 steps (a live progress bar while it runs)``): true before, during and after
the run, and the same from run to run. Outside a notebook it is tqdm's terminal bar. tqdm and
ipywidgets are imported lazily.
"""
from __future__ import annotations

from typing import Iterable

from .validate import check_str

__all__ = ["progress_bar", "stored_text"]


def stored_text(desc: str, total: int | None, unit: str = "it") -> str:
    """The text form of a notebook bar, e.g. ``"training: 320 steps (a live progress bar while it runs)"``."""
    desc = check_str(desc, "desc", nonempty=False) or "progress"
    unit = check_str(unit, "unit")
    if total is None:
        return f"{desc} (a live progress bar while it runs)"
    units = unit if unit.endswith("s") or total == 1 else unit + "s"
    return f"{desc}: {total:g} {units} (a live progress bar while it runs)"


def _notebook_frontend() -> bool:
    """Whether tqdm itself would draw a widget bar here (tqdm.auto's choice: an IPython kernel with
    ipywidgets). core/ imports no GUI library itself; tqdm's notebook module does."""
    from tqdm import auto, notebook

    return issubclass(auto.tqdm, notebook.tqdm) and getattr(notebook, "IProgress", None) is not None


def progress_bar(iterable: Iterable | None = None, *, total: int | None = None, desc: str = "", unit: str = "it",
                 disable: bool = False, mininterval: float = 0.1):
    """A tqdm bar over ``iterable`` (or a manual one with ``total``). In a Jupyter kernel: the widget
    bar, stored with the text :func:`stored_text` instead of "0%"; elsewhere: the terminal bar."""
    desc = check_str(desc, "desc", nonempty=False)
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)
    if disable or not _notebook_frontend():
        from tqdm.std import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, disable=disable, mininterval=mininterval)
    return _notebook_bar()(iterable, total=total, desc=desc, unit=unit, mininterval=mininterval)


_NOTEBOOK_BAR = None


def _notebook_bar():
    global _NOTEBOOK_BAR
    if _NOTEBOOK_BAR is not None:
        return _NOTEBOOK_BAR
    from tqdm import notebook

    notebook_tqdm, display = notebook.tqdm, notebook.display

    class HonestBar(notebook_tqdm):
        """tqdm's widget bar, displayed with a text form that states the work instead of "0%"."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, display=False, **kwargs)
            if not self.disable:
                bundle = {"text/plain": stored_text(self.desc.rstrip(": "), self.total, self.unit)}
                model_id = getattr(self.container, "model_id", None)
                if model_id:
                    bundle["application/vnd.jupyter.widget-view+json"] = {
                        "version_major": 2, "version_minor": 0, "model_id": model_id}
                display(bundle, raw=True)
                self.displayed = True

    _NOTEBOOK_BAR = HonestBar
    return HonestBar
