"""course_lib's folders are layers: each imports only from the folders above it, and nothing imports in a cycle.

core <- data <- algorithms <- models <- parallel <- experiments <- teaching  (<- __main__)
The order and the import graph are computed from the code (AST), not from a hand-kept list of modules.
GUI libraries are imported only by teaching/, and only lazily, inside the functions that draw."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "course_lib"
ORDER = ["core", "data", "algorithms", "models", "parallel", "experiments", "teaching"]
GUI = {"matplotlib", "ipywidgets", "IPython"}
DATA_READERS = {"matplotlib.cbook", "matplotlib.image"}  # reading matplotlib's bundled sample image is data, not GUI
FILES = sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    d = _dotted(path)
    return d if path.name == "__init__.py" else d.rsplit(".", 1)[0]


def _imports(path: Path, top_level_only: bool = False):
    """(absolute dotted name, line) for every import in ``path``; relative imports resolved."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(path).split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
                if node.module:
                    yield mod, node.lineno
                for a in node.names:  # from . import x  -> course_lib.pkg.x (a module or a name in it)
                    yield f"{mod}.{a.name}", node.lineno
            elif node.module:
                yield node.module, node.lineno
                for a in node.names:
                    yield f"{node.module}.{a.name}", node.lineno


def _folder(dotted: str) -> str | None:
    parts = dotted.split(".")
    if parts[0] != "course_lib" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in ORDER else "__main__" if parts[1] == "__main__" else None


MODULES = {_dotted(p): p for p in FILES}


def _module_edges():
    """Import graph between course_lib modules: module -> set of modules it imports."""
    edges = {}
    for name, path in MODULES.items():
        targets = set()
        for dotted, _ in _imports(path):
            while dotted and dotted not in MODULES:  # `from course_lib.core.timing import measure` -> the module
                dotted = dotted.rpartition(".")[0]
            if dotted and dotted != name and dotted.startswith("course_lib"):
                targets.add(dotted)
        edges[name] = targets
    return edges


def test_every_module_is_in_a_layer():
    loose = [n for n in MODULES if n.count(".") == 1 and n.split(".")[1] not in ORDER + ["__main__"]]
    assert not loose, f"modules outside the layer folders: {loose} -- put each in one of {ORDER}"


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(PKG)) for p in FILES])
def test_imports_point_up_the_list(path):
    me = _folder(_dotted(path))
    if me is None or me == "__main__":
        return
    mine = ORDER.index(me)
    for name, line in _imports(path):
        other = _folder(name)
        if other in ORDER:
            assert ORDER.index(other) <= mine, (
                f"{path.relative_to(PKG)}:{line} ({me}/) imports {name} ({other}/): "
                f"a folder imports only from folders before it in {ORDER}")
        if me != "teaching" and name not in DATA_READERS:
            assert name.split(".")[0] not in GUI, f"{path.relative_to(PKG)}:{line}: {me}/ must not import {name}"


def test_no_import_cycles():
    edges = _module_edges()
    state, stack, cycles = {}, [], []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if m in MODULES and MODULES[m].name == "__init__.py" and n.startswith(m + "."):
                continue  # a module importing its own package's __init__ is how Python loads it
            if state.get(m) == "open":
                cycles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = "done"

    for n in sorted(edges):
        if n not in state:
            visit(n)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_graph_is_computed_not_listed():
    """The checker itself: a known downward edge is found, and an upward edge would be rejected."""
    edges = _module_edges()
    assert "course_lib.core.timing" in edges["course_lib.algorithms.scan"] | edges["course_lib.models.rnn"] or \
        "course_lib.core.validate" in edges["course_lib.models.rnn"]
    assert _folder("course_lib.teaching.checks.core") == "teaching"
    assert ORDER.index("teaching") > ORDER.index("models")


@pytest.mark.parametrize("path", [p for p in FILES if _folder(_dotted(p)) in ("teaching", "__main__")],
                         ids=lambda p: str(p.relative_to(PKG)))
def test_front_imports_gui_lazily(path):
    for name, line in _imports(path, top_level_only=True):
        assert name.split(".")[0] not in GUI, f"{path.name}:{line}: import {name} inside the function that needs it"
