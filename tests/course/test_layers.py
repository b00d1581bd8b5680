"""course_lib's folders are layers: each imports only from the folders above it, and nothing imports in a cycle.

core <- data <- algorithms <- models <- parallel <- experiments <- teaching  (<- __main__)
The order and the import graph are computed from the code (AST), not from a hand-kept list of modules.
The graph sees every import: top-level, inside functions, and modules loaded by name with
``importlib.import_module`` / ``__import__`` (a literal name, or an f-string whose known prefix --
``__name__``, ``__package__`` or literal text -- names a package: that counts as an edge to every module
under it). The checker is a pair of functions of a package folder (:func:`layer_violations`,
:func:`import_cycles`); the tests at the end build small fake packages and see it reject an upward
import, a cycle, and a cycle hidden behind an importlib load inside a function.
GUI libraries are imported only by teaching/, and only lazily, inside the functions that draw."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "course_lib"
ORDER = ["core", "data", "algorithms", "models", "parallel", "experiments", "teaching"]
GUI = {"matplotlib", "ipywidgets", "IPython"}
DATA_READERS = {"matplotlib.cbook", "matplotlib.image"}  # reading matplotlib's bundled sample image is data, not GUI
LOADERS = {"import_module", "__import__"}  # importlib.import_module(name), __import__(name)
ANY = ".*"  # suffix of an importlib name known only up to its prefix: every module under that package


def _files(pkg: Path) -> list[Path]:
    return sorted(p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts)


FILES = _files(PKG)


def _dotted(path: Path, pkg: Path = PKG) -> str:
    parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path, pkg: Path = PKG) -> str:
    d = _dotted(path, pkg)
    return d if path.name == "__init__.py" else d.rsplit(".", 1)[0]


def _walk(tree: ast.AST, top_level_only: bool):
    """Every node; with ``top_level_only``, none inside a function or lambda body (code that runs on import)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if top_level_only and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            todo.append(child)


def _loaded_name(call: ast.Call, path: Path, pkg: Path) -> str | None:
    """The module an ``importlib.import_module(...)`` / ``__import__(...)`` call loads, if the code says it:
    a literal, or an f-string whose leading part is literal text or ``__name__``/``__package__`` (then
    ``<prefix>.*``). Relative literals use ``package=__name__``/``__package__``."""
    f = call.func
    fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if fname not in LOADERS or not call.args:
        return None
    own = {"__name__": _dotted(path, pkg), "__package__": _package_of(path, pkg)}
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        name = arg.value
    elif isinstance(arg, ast.JoinedStr):
        name = ""
        for part in arg.values:
            if isinstance(part, ast.Constant):
                name += part.value
            elif isinstance(part.value, ast.Name) and part.value.id in own:
                name += own[part.value.id]
            else:
                name = name.rpartition(".")[0] + ANY if "." in name else None
                break
        if not name:
            return None
    else:
        return None
    if name.startswith("."):  # import_module(".x", package=__name__)
        anchor = next((own[k.value.id] for k in call.keywords if k.arg == "package"
                       and isinstance(k.value, ast.Name) and k.value.id in own), None)
        if anchor is None:
            return None
        level = len(name) - len(name.lstrip("."))
        base = anchor.split(".")
        name = ".".join(base[: len(base) - (level - 1)] + [name.lstrip(".")]).rstrip(".")
    return name


def _imports(path: Path, top_level_only: bool = False, pkg: Path = PKG):
    """(absolute dotted name, line) for every import in ``path``: statements (relative ones resolved,
    function-local ones included unless ``top_level_only``) and importlib / ``__import__`` loads."""
    tree = ast.parse(path.read_text())
    for node in _walk(tree, top_level_only):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(path, pkg).split(".")
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
        elif isinstance(node, ast.Call):
            name = _loaded_name(node, path, pkg)
            if name:
                yield name, node.lineno


def _folder(dotted: str, root: str = "course_lib") -> str | None:
    parts = dotted.split(".")
    if parts[0] != root or len(parts) < 2:
        return None
    return parts[1] if parts[1] in ORDER else "__main__" if parts[1] == "__main__" else None


def _modules(pkg: Path) -> dict[str, Path]:
    return {_dotted(p, pkg): p for p in _files(pkg)}


MODULES = _modules(PKG)


def _module_edges(pkg: Path = PKG):
    """Import graph between the package's modules: module -> set of modules it imports."""
    modules = _modules(pkg)
    edges = {}
    for name, path in modules.items():
        targets = set()
        for dotted, _ in _imports(path, pkg=pkg):
            if dotted.endswith(ANY):  # importlib with a computed tail: every module under the prefix
                prefix = dotted[: -len(ANY)]
                targets |= {m for m in modules if m.startswith(prefix + ".")}
                continue
            while dotted and dotted not in modules:  # `from course_lib.core.timing import measure` -> the module
                dotted = dotted.rpartition(".")[0]
            if dotted and dotted != name and dotted.startswith(pkg.name):
                targets.add(dotted)
        edges[name] = targets - {name}
    return edges


def layer_violations(path: Path, pkg: Path = PKG) -> list[str]:
    """Why ``path`` breaks the layering (an import from a later folder, or a GUI import outside teaching/)."""
    me = _folder(_dotted(path, pkg), pkg.name)
    if me is None or me == "__main__":
        return []
    out = []
    for name, line in _imports(path, pkg=pkg):
        other = _folder(name, pkg.name)
        if other in ORDER and ORDER.index(other) > ORDER.index(me):
            out.append(f"{path.relative_to(pkg)}:{line} ({me}/) imports {name} ({other}/): "
                       f"a folder imports only from folders before it in {ORDER}")
        if me != "teaching" and name not in DATA_READERS and name.split(".")[0] in GUI:
            out.append(f"{path.relative_to(pkg)}:{line}: {me}/ must not import {name}")
    return out


def import_cycles(pkg: Path = PKG) -> list[list[str]]:
    """Every cycle found by a depth-first walk of the import graph (each as a closed path of module names)."""
    edges, modules = _module_edges(pkg), _modules(pkg)
    state, stack, cycles = {}, [], []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if m in modules and modules[m].name == "__init__.py" and n.startswith(m + "."):
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
    return cycles


def test_every_module_is_in_a_layer():
    loose = [n for n in MODULES if n.count(".") == 1 and n.split(".")[1] not in ORDER + ["__main__"]]
    assert not loose, f"modules outside the layer folders: {loose} -- put each in one of {ORDER}"


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(PKG)) for p in FILES])
def test_imports_point_up_the_list(path):
    bad = layer_violations(path)
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    cycles = import_cycles()
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("path", [p for p in FILES if _folder(_dotted(p)) in ("teaching", "__main__")],
                         ids=lambda p: str(p.relative_to(PKG)))
def test_front_imports_gui_lazily(path):
    for name, line in _imports(path, top_level_only=True):
        assert name.split(".")[0] not in GUI, f"{path.name}:{line}: import {name} inside the function that needs it"


# ---- the checker itself, on fake packages built in tmp_path -------------------------------------------------

def _fake_package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package ``course_lib`` under ``tmp_path`` with the layer folders and the given ``{relpath: source}``."""
    pkg = tmp_path / "course_lib"
    for folder in ORDER:
        (pkg / folder).mkdir(parents=True, exist_ok=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    for rel, src in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(src)
    return pkg


def test_the_graph_is_computed_not_listed():
    """The real graph holds edges the code has, including function-local and importlib ones."""
    edges = _module_edges()
    assert "course_lib.core.validate" in edges["course_lib.models.rnn"]
    claims = "course_lib.teaching.claims"
    loaded = {m for m in MODULES if m.startswith(claims + ".")}
    assert loaded and loaded <= edges[claims], "the importlib loads in claims/__init__ are edges"


def test_an_upward_import_is_rejected(tmp_path):
    pkg = _fake_package(tmp_path, {
        "core/low.py": "from ..models import high\n",
        "models/high.py": "from ..core import low\n",
        "data/lazy.py": "def f():\n    from course_lib.teaching import front\n",
        "models/ok.py": "from ..core.low import x\nimport numpy\n"})
    assert layer_violations(pkg / "core/low.py", pkg)
    assert any("imports course_lib.teaching (teaching/)" in v for v in layer_violations(pkg / "data/lazy.py", pkg))
    assert layer_violations(pkg / "models/high.py", pkg) == []
    assert layer_violations(pkg / "models/ok.py", pkg) == []
    assert layer_violations(tmp_path / "course_lib/core/__init__.py", pkg) == []


def test_a_gui_import_outside_teaching_is_rejected(tmp_path):
    pkg = _fake_package(tmp_path, {"models/draw.py": "def f():\n    import matplotlib.pyplot\n"})
    assert any("must not import matplotlib" in v for v in layer_violations(pkg / "models/draw.py", pkg))


def test_a_cycle_is_rejected(tmp_path):
    pkg = _fake_package(tmp_path, {
        "core/a.py": "from . import b\n",
        "core/b.py": "from .c import thing\n",
        "core/c.py": "import course_lib.core.a\n"})
    cycles = import_cycles(pkg)
    assert [c for c in cycles if set(c) == {"course_lib.core.a", "course_lib.core.b", "course_lib.core.c"}]
    pkg = _fake_package(tmp_path / "acyclic", {"core/a.py": "from . import b\n", "core/b.py": "x = 1\n"})
    assert import_cycles(pkg) == []


def test_a_cycle_through_an_importlib_load_in_a_function_is_rejected(tmp_path):
    """The shape of the cycle the layer test once missed: a package __init__ loads its modules by name,
    one of them imports (inside a function) a sibling module, and that one imports the package."""
    pkg = _fake_package(tmp_path, {
        "teaching/reg/__init__.py": ("import importlib\n"
                                     "for n in ['one']:\n"
                                     "    importlib.import_module(f'{__name__}.{n}')\n"),
        "teaching/reg/one.py": "def f():\n    from ..judge import J\n",
        "teaching/judge.py": "from .reg import X\n"})
    edges = _module_edges(pkg)
    assert "course_lib.teaching.reg.one" in edges["course_lib.teaching.reg"]
    assert "course_lib.teaching.judge" in edges["course_lib.teaching.reg.one"]
    cycles = import_cycles(pkg)
    assert any({"course_lib.teaching.reg", "course_lib.teaching.reg.one", "course_lib.teaching.judge"} <= set(c)
               for c in cycles), cycles


@pytest.mark.parametrize("call, loaded", [
    ("importlib.import_module('course_lib.models.rnn')", "course_lib.models.rnn"),
    ("import_module('.x', package=__name__)", "course_lib.core.mod.x"),
    ("import_module('.x', package=__package__)", "course_lib.core.x"),
    ("importlib.import_module(f'course_lib.models.{n}')", "course_lib.models.*"),
    ("__import__('matplotlib')", "matplotlib"),
    ("importlib.import_module(name)", None),
])
def test_importlib_names_are_read(tmp_path, call, loaded):
    pkg = _fake_package(tmp_path, {"core/mod.py": f"def f(n, name):\n    {call}\n"})
    got = [n for n, _ in _imports(pkg / "core/mod.py", pkg=pkg)]
    assert got == ([loaded] if loaded else [])
