"""course_lib's three layers: imports only point down (COURSE_DESIGN.md).

foundation  <- methods <- teaching front (checks, plots, widgets, authoring, __main__)
The front imports matplotlib/ipywidgets lazily, inside functions; nothing below imports it at all."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "course_lib"
FOUNDATION = {"backend", "timing", "validate", "corpus", "data", "activity"}
FRONT = {"checks", "plots", "widgets", "authoring", "__main__"}
GUI = {"matplotlib", "ipywidgets", "IPython"}
DATA_READERS = {"matplotlib.cbook", "matplotlib.image"}  # reading matplotlib's bundled sample image is data, not GUI


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    return rel.parts[0] if rel.parts[0] != "__init__" else "__init__"


def _imports(path: Path, top_level_only: bool = False):
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x / from .x import y / from ..timing import z
                base = (node.module or "").split(".")[0]
                if base:
                    yield f"course_lib.{base}", node.lineno
                else:
                    for a in node.names:
                        yield f"course_lib.{a.name}", node.lineno
            elif node.module:
                yield node.module, node.lineno


FILES = sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(PKG)) for p in FILES])
def test_imports_point_down(path):
    layer_of = lambda m: "foundation" if m in FOUNDATION else "front" if m in FRONT else "methods"  # noqa: E731
    me = _module_name(path)
    if me == "__init__":
        return
    mine = layer_of(me)
    allowed = {"foundation": {"foundation"}, "methods": {"foundation", "methods"},
               "front": {"foundation", "methods", "front"}}[mine]
    for name, line in _imports(path):
        parts = name.split(".")
        if parts[0] == "course_lib" and len(parts) > 1:
            other = layer_of(parts[1])
            assert other in allowed, f"{path.name}:{line} ({mine}) imports {name} ({other} layer)"
        if mine != "front" and name not in DATA_READERS:
            assert parts[0] not in GUI, f"{path.name}:{line}: the {mine} layer must not import {parts[0]}"


@pytest.mark.parametrize("path", [p for p in FILES if _module_name(p) in FRONT], ids=lambda p: p.name)
def test_front_imports_gui_lazily(path):
    for name, line in _imports(path, top_level_only=True):
        assert name.split(".")[0] not in GUI, f"{path.name}:{line}: import {name} inside the function that needs it"
