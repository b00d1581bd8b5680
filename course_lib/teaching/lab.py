"""The JupyterLab server's save hook for the course (teaching folder).

The lecture notebooks (``notebooks/NN_slug.ipynb``) are committed with reference outputs. A
student's Run All changes every output (timings, widget ids, execution counts) and JupyterLab
autosaves, so without this hook every run would leave ``git status`` dirty. ``make lab`` and the
browser tests start the server with ``jupyter_server_config.json``, which names
:func:`keep_lecture_outputs` as the contents manager's ``pre_save_hook``:

* a lecture notebook whose cells (types and sources) are unchanged is saved exactly as it is on
  disk: the committed reference outputs stay, ``git status`` stays clean;
* a lecture notebook whose code or text the student changed is saved as it is in the browser
  (their change, shown by ``git status``); worksheets, solutions and any other file are saved as usual.

To keep the outputs of your own run of a lecture, save a copy (File -> Save Notebook As...).
nbformat is imported lazily (it is the server's, not the kernel's).
"""
from __future__ import annotations

import os
import re

__all__ = ["LECTURE_RE", "is_lecture", "same_cells", "keep_lecture_outputs"]

#: a lecture notebook's path relative to the server root (the course folder, or a folder above it)
LECTURE_RE = re.compile(r"(?:^|/)notebooks/[0-9][0-9]_[^/]+\.ipynb$")


def is_lecture(path: str) -> bool:
    """Whether ``path`` (relative to the server's root, ``/``-separated) is a lecture notebook."""
    if not isinstance(path, str):
        raise TypeError(f"path: expected a string, got {type(path).__name__}")
    return bool(LECTURE_RE.search(path.replace(os.sep, "/").strip("/")))


def _cells(nb) -> list[tuple[str, str]]:
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError("nb: expected a notebook (a mapping with a list of cells)")
    out = []
    for c in cells:
        src = c.get("source", "")
        out.append((c.get("cell_type", ""), "".join(src) if isinstance(src, list) else str(src)))
    return out


def same_cells(a, b) -> bool:
    """Whether two notebooks (dicts or NotebookNodes) have the same cells: types and sources, in
    order. Outputs, execution counts, cell and notebook metadata are not compared."""
    return _cells(a) == _cells(b)


def keep_lecture_outputs(model: dict, path: str, contents_manager, **kwargs) -> None:
    """``ContentsManager.pre_save_hook``: save an unchanged lecture notebook as it is on disk (see the
    module doc). Changes ``model`` in place; never refuses a save."""
    if not isinstance(model, dict) or model.get("type") != "notebook" or not is_lecture(path):
        return
    root = getattr(contents_manager, "root_dir", None)
    if not root:
        return
    os_path = os.path.join(root, *path.strip("/").split("/"))
    if not os.path.isfile(os_path):
        return
    import nbformat

    with open(os_path, encoding="utf-8") as fh:
        on_disk = nbformat.read(fh, as_version=nbformat.NO_CONVERT)
    if same_cells(on_disk, model.get("content") or {}):
        model["content"] = on_disk
