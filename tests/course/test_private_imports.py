"""No module reaches inside another: a ``_private`` name of one course_lib module is used only there.

Computed from the AST of every course_lib module and of benchmarks/, notebooks/*.py and solutions/*.py:
``from course_lib.x import _y`` (or the relative form) and ``m._y`` where ``m`` names a course_lib module
are reported unless they stay inside the module that defines ``_y``."""
import ast
import os
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "course_lib"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and name != "_"


def _module_name(path: Path, root: Path, package: str) -> str | None:
    """``course_lib.a.b`` for root/course_lib/a/b.py (or .../b/__init__.py); None outside the package."""
    rel = path.relative_to(root)
    if rel.parts[0] != package:
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str, root: Path) -> bool:
    base = root.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _resolve(node: ast.ImportFrom, here: str | None, is_pkg: bool) -> str | None:
    """The absolute module a ``from ... import`` names (None for relative imports outside the package)."""
    if not node.level:
        return node.module
    if here is None:
        return None
    parts = here.split(".") if is_pkg else here.split(".")[:-1]
    if node.level > 1:
        parts = parts[:len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def private_uses(root: Path, files, package: str = PACKAGE) -> list[tuple[str, str, str]]:
    """``(importer file, exporter module, name)`` for every cross-module use of a ``_private`` name."""
    found = []
    for path in files:
        path = Path(path)
        here = _module_name(path, root, package)
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        modules = {}  # local name -> course_lib module it is bound to
        rel = os.path.relpath(path, root)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == package and a.asname:
                        modules[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom):
                src = _resolve(node, here, is_pkg)
                if not src or src.split(".")[0] != package:
                    continue
                for a in node.names:
                    if _is_module(f"{src}.{a.name}", root):
                        modules[a.asname or a.name] = f"{src}.{a.name}"
                    elif _is_private(a.name) and src != here:
                        found.append((rel, src, a.name))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _is_private(node.attr):
                src = modules.get(node.value.id)
                if src is not None and src != here:
                    found.append((rel, src, node.attr))
    return sorted(set(found))


def _course_files(root: Path):
    yield from sorted((root / PACKAGE).rglob("*.py"))
    yield from sorted((root / "benchmarks").rglob("*.py"))
    for folder in ("notebooks", "solutions"):
        yield from sorted((root / folder).glob("*.py"))


def test_no_module_uses_another_modules_private_names():
    uses = set(private_uses(ROOT, _course_files(ROOT)))
    found = sorted(uses)
    assert not found, "cross-module _private uses (make the name public or move the code):\n" + "\n".join(
        f"  {f}: {m}.{n}" for f, m, n in found)


def test_the_scan_reports_a_planted_private_import(tmp_path):
    pkg = tmp_path / PACKAGE
    (pkg / "core").mkdir(parents=True)
    (pkg / "algorithms").mkdir()
    for d in (pkg, pkg / "core", pkg / "algorithms"):
        (d / "__init__.py").write_text("")
    (pkg / "core" / "util.py").write_text("def _helper():\n    return 1\n\n\ndef public():\n    return _helper()\n")
    (pkg / "algorithms" / "a.py").write_text(textwrap.dedent("""\
        from ..core.util import _helper, public
        from ..core import util
        from course_lib.core import util as u2
        import course_lib.core.util as u3


        def f():
            return _helper() + util._helper() + u2._helper() + u3._helper() + public() + util.__name__.count("x")
        """))
    (pkg / "algorithms" / "b.py").write_text("def _own():\n    return 2\n\n\ndef g():\n    return _own()\n")
    nb = tmp_path / "notebooks"
    nb.mkdir()
    (nb / "01_x.py").write_text("from course_lib.algorithms import b\nprint(b._own())\n")
    files = list(pkg.rglob("*.py")) + [nb / "01_x.py"]
    uses = private_uses(tmp_path, files)
    assert uses == [(os.path.join(PACKAGE, "algorithms", "a.py"), "course_lib.core.util", "_helper"),
                    (os.path.join("notebooks", "01_x.py"), "course_lib.algorithms.b", "_own")]
    # the same names used inside their own module are fine
    assert private_uses(tmp_path, [pkg / "core" / "util.py", pkg / "algorithms" / "b.py"]) == []
