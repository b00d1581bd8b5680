"""One vocabulary, computed from the code (AST), like test_layers.py.

Over every course_lib module, notebooks/*.py, solutions/*.py and benchmarks/*.py:
(a) every value ``method`` takes -- in a ``*METHODS`` table (or matmul's ``MATMUL_KERNELS``), a
    ``method=``/``methods=`` keyword or default, a ``check_choice(..., "method", ...)``, a comparison with
    ``method``, a ``{"method": [...]}`` control --
    is a key of ``course_lib.core.vocabulary.METHOD_MEANINGS`` (one value per meaning);
(b) no parameter, keyword or field named ``H``/``B`` is a size (``H`` is the state array, ``B`` a dimension
    in shapes), and ``batch_size``/``hidden``/``hidden_size`` do not appear as names of sizes at all;
(c) every public grader in ``course_lib.teaching.checks`` (a function whose docstring starts "Exercise")
    is named ``check_*``, and no public function there is ``exercise_*``;
(d) notebooks and worksheets import course modules under :func:`~course_lib.core.vocabulary.import_alias`.
Each rule has a negative test: a small snippet that breaks it is reported.
"""
import ast
from pathlib import Path

import pytest

from course_lib.core.vocabulary import GRADER_PREFIX, METHOD_MEANINGS, NOT_SIZE_NAMES, import_alias

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "course_lib"
CODE = sorted([p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts]
              + list((ROOT / "notebooks").glob("*.py")) + list((ROOT / "solutions").glob("*.py"))
              + list((ROOT / "benchmarks").glob("*.py")))
NOTEBOOKS = sorted(list((ROOT / "notebooks").glob("*.py")) + list((ROOT / "solutions").glob("*.py")))
CHECKS = sorted(p for p in (PKG / "teaching" / "checks").glob("*.py"))
INT_CHECKS = {"check_positive_int", "check_int", "check_power_of_two", "int"}
SIZE_ONLY = {"batch_size", "hidden", "hidden_size"}  # never a name, whatever it holds
METHOD_KEYWORDS = {"method", "methods"}
TABLES = ("METHODS", "MATMUL_KERNELS")  # module-level tables of method values (a tuple, or a dict's keys)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_absolute() and ROOT in path.parents else str(path)


def _strings(node) -> list[str]:
    """The string constants of a literal: a str, or a tuple/list/set of them (dict: its keys)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e)]
    if isinstance(node, ast.Dict):
        return [s for k in node.keys if k is not None for s in _strings(k)]
    return []


def _call_name(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _is_method_ref(node) -> bool:
    if isinstance(node, ast.Name):
        return node.id in METHOD_KEYWORDS or node.id.endswith("_method")
    return isinstance(node, ast.Attribute) and (node.attr == "method" or node.attr.endswith("_method"))


def _defaults(fn) -> list[tuple[ast.arg, ast.AST | None]]:
    a = fn.args
    pos = a.posonlyargs + a.args
    return (list(zip(pos, [None] * (len(pos) - len(a.defaults)) + list(a.defaults)))
            + list(zip(a.kwonlyargs, a.kw_defaults)))


# --------------------------------------------------------------------------- (a) method values
def method_values(tree: ast.AST) -> list[tuple[str, int, str]]:
    """``(value, line, where)`` for every string the code gives ``method`` (see the module docstring)."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if n.value is not None and any(isinstance(t, ast.Name) and t.id.endswith(TABLES) for t in targets):
                out += [(s, n.lineno, "a METHODS table") for s in _strings(n.value)]
        elif isinstance(n, ast.Call):
            for k in n.keywords:
                if k.arg in METHOD_KEYWORDS:
                    out += [(s, n.lineno, f"keyword {k.arg}=") for s in _strings(k.value)]
            if (_call_name(n) == "check_choice" and len(n.args) >= 3 and _strings(n.args[1])
                    and "method" in _strings(n.args[1])[0]):
                out += [(s, n.lineno, "check_choice") for s in _strings(n.args[2])]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg, d in _defaults(n):
                if arg.arg in METHOD_KEYWORDS and d is not None:
                    out += [(s, n.lineno, f"default of {n.name}({arg.arg}=)") for s in _strings(d)]
        elif isinstance(n, ast.Compare):
            parts = [n.left, *n.comparators]
            if any(_is_method_ref(p) for p in parts):
                out += [(s, n.lineno, "a comparison with method") for p in parts for s in _strings(p)]
        elif isinstance(n, ast.Dict):
            for k, v in zip(n.keys, n.values):
                if isinstance(k, ast.Constant) and k.value in METHOD_KEYWORDS:
                    out += [(s, n.lineno, "a {'method': ...} control") for s in _strings(v)]
    return out


def method_violations(source: str, name: str = "<snippet>") -> list[str]:
    return [f"{name}:{line}: method value {v!r} ({where}) is not in vocabulary.METHOD_MEANINGS"
            for v, line, where in method_values(ast.parse(source)) if v not in METHOD_MEANINGS]


# --------------------------------------------------------------------------- (b) size names
def _is_int_annotation(a) -> bool:
    return a is not None and ast.unparse(a).replace(" ", "") in {"int", "int|None", "None|int", "Optional[int]"}


def _is_int_literal(node) -> bool:
    if isinstance(node, ast.UnaryOp):
        return _is_int_literal(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_int_literal(node.left) and _is_int_literal(node.right)
    return isinstance(node, ast.Constant) and type(node.value) is int


def _checked_as_int(fn) -> set[str]:
    """Names the function passes to an integer check (``check_positive_int(H, ...)``, ``int(B)``)."""
    return {n.args[0].id for n in ast.walk(fn)
            if isinstance(n, ast.Call) and _call_name(n) in INT_CHECKS and n.args and isinstance(n.args[0], ast.Name)}


def size_violations(source: str, name: str = "<snippet>") -> list[str]:
    out = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            checked = _checked_as_int(n)
            for arg, d in _defaults(n):
                if arg.arg in SIZE_ONLY:
                    out.append(f"{name}:{n.lineno}: parameter {n.name}({arg.arg}): {NOT_SIZE_NAMES[arg.arg]}")
                elif arg.arg in ("H", "B") and (_is_int_annotation(arg.annotation) or _is_int_literal(d)
                                                 or arg.arg in checked):
                    out.append(f"{name}:{n.lineno}: parameter {n.name}({arg.arg}) is a size: "
                               f"{arg.arg} is {NOT_SIZE_NAMES[arg.arg]} (use {'nh' if arg.arg == 'H' else 'batch'})")
        elif isinstance(n, ast.Call):
            for k in n.keywords:
                if k.arg in SIZE_ONLY or (k.arg in ("H", "B") and _is_int_literal(k.value)):
                    out.append(f"{name}:{k.lineno}: keyword {k.arg}={ast.unparse(k.value)} names a size: "
                               f"{NOT_SIZE_NAMES[k.arg]}")
        elif isinstance(n, ast.ClassDef):
            for b in n.body:
                if isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name) and (
                        b.target.id in SIZE_ONLY or (b.target.id in ("H", "B") and _is_int_annotation(b.annotation))):
                    out.append(f"{name}:{b.lineno}: field {n.name}.{b.target.id} names a size: "
                               f"{NOT_SIZE_NAMES[b.target.id]}")
    return out


# --------------------------------------------------------------------------- (c) graders
def grader_violations(source: str, name: str = "<snippet>") -> list[str]:
    out = []
    for n in ast.parse(source).body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_"):
            grader = (ast.get_docstring(n) or "").startswith("Exercise")
            if n.name.startswith("exercise") or (grader and not n.name.startswith(GRADER_PREFIX)):
                out.append(f"{name}:{n.lineno}: grader {n.name} is not named {GRADER_PREFIX}<what it checks>")
    return out


# --------------------------------------------------------------------------- (d) notebook aliases
def _is_module(package: str, name: str, root: Path = ROOT) -> bool:
    p = root.joinpath(*package.split("."), name)
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def alias_violations(source: str, name: str = "<snippet>", is_module=_is_module) -> list[str]:
    out = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.name.startswith("course_lib."):
                    out.append(f"{name}:{n.lineno}: `import {a.name}`: write `from {a.name.rpartition('.')[0]} "
                               f"import {a.name.rpartition('.')[2]}`")
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module and (
                n.module == "course_lib" or n.module.startswith("course_lib.")):
            for a in n.names:
                want = import_alias(n.module, a.name) if is_module(n.module, a.name) else a.name
                if (a.asname or a.name) != want:
                    out.append(f"{name}:{n.lineno}: `from {n.module} import {a.name}"
                               f"{' as ' + a.asname if a.asname else ''}`: import it as {want}")
    return out


# --------------------------------------------------------------------------- the course
@pytest.mark.parametrize("path", CODE, ids=_rel)
def test_method_values_are_in_the_table(path):
    assert method_violations(path.read_text(), _rel(path)) == []


def test_every_value_in_the_table_is_used_and_means_one_thing():
    used = {v for p in CODE for v, _, _ in method_values(ast.parse(p.read_text()))}
    assert sorted(set(METHOD_MEANINGS) - used) == [], "values in METHOD_MEANINGS that no code uses"
    meanings = list(METHOD_MEANINGS.values())
    assert len(set(meanings)) == len(meanings), "two values share a meaning"


@pytest.mark.parametrize("path", CODE, ids=_rel)
def test_sizes_are_named_nh_and_batch(path):
    assert size_violations(path.read_text(), _rel(path)) == []


@pytest.mark.parametrize("path", CHECKS, ids=_rel)
def test_graders_are_named_check(path):
    assert grader_violations(path.read_text(), _rel(path)) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_rel)
def test_notebook_imports_follow_the_alias_rule(path):
    assert alias_violations(path.read_text(), _rel(path)) == []


def test_the_readme_states_the_alias_rule():
    readme = (ROOT / "README.md").read_text()
    for example in ("scan as scan_exp", "scan as scan_plots", "scan as scan_checks", "core/vocabulary.py"):
        assert example in readme


def test_the_checks_see_the_whole_course():
    assert len(CODE) > 100 and len(NOTEBOOKS) >= 24 and len(CHECKS) >= 10
    assert sum(len(method_values(ast.parse(p.read_text()))) for p in CODE) > 200


# --------------------------------------------------------------------------- each rule can fail
@pytest.mark.parametrize("snippet, bad", [
    ('METHODS = ("sequential", "serial")', "serial"),
    ('def f(x, *, method="scanned"): ...', "scanned"),
    ('f(x, method="quasi_deer")', "quasi_deer"),
    ('f(x, methods=("sequential", "gpu_scan"))', "gpu_scan"),
    ('def f(method):\n    if method == "log_scan": ...', "log_scan"),
    ('def f(m):\n    check_choice(m, "method", ("deer", "newton"))', "deer"),
    ('panel(f, controls={"method": ["cuda"]})', "cuda"),
])
def test_a_method_value_outside_the_table_is_reported(snippet, bad):
    found = method_violations(snippet)
    assert len(found) == 1 and repr(bad) in found[0]


def test_method_values_in_the_table_pass():
    assert method_violations('METHODS = ("sequential", "chunked")\ndef f(method="newton"):\n'
                             '    return method in ("quasi", "damped")') == []


@pytest.mark.parametrize("snippet, what", [
    ("def f(T, H: int): ...", "parameter f(H)"),
    ("def f(T, H=8): ...", "parameter f(H)"),
    ("def f(T, B):\n    B = check_positive_int(B, 'B')", "parameter f(B)"),
    ("def f(data, batch_size=32): ...", "parameter f(batch_size)"),
    ("def f(hidden_size): ...", "parameter f(hidden_size)"),
    ("g(x, H=64)", "keyword H=64"),
    ("g(x, B=-3)", "keyword B=-3"),
    ("g(x, batch_size=n)", "keyword batch_size=n"),
    ("class P:\n    H: int = 128", "field P.H"),
])
def test_a_size_named_H_B_or_batch_size_is_reported(snippet, what):
    found = size_violations(snippet)
    assert len(found) == 1 and what in found[0]


def test_H_as_an_array_passes():
    assert size_violations("def f(params, X, H, dH):\n    return H.sum()\ng(p, X, H=Hs)\n"
                           "class C:\n    H: np.ndarray\ndef k(A, B, C): ...") == []


def test_a_grader_not_named_check_is_reported():
    src = ('def exercise_1(f):\n    """Exercise 11.1: f"""\n'
           'def grade(f):\n    """Exercise 11.2: f"""\n'
           'def check_ok(f):\n    """Exercise 11.3: f"""\n'
           'def toy_system(H=3):\n    """A helper."""\n')
    found = grader_violations(src)
    assert [f.split(": grader ")[1].split()[0] for f in found] == ["exercise_1", "grade"]


def test_a_notebook_import_off_the_rule_is_reported():
    src = ("from course_lib.experiments import scan as xscan\n"
           "from course_lib.experiments import lstm\n"
           "from course_lib.teaching.plots import newton as nplots\n"
           "from course_lib.teaching.checks import which as checks\n"
           "from course_lib.algorithms import scan as sc\n"
           "from course_lib.experiments.batching import cache_level as level\n"
           "import course_lib.models.rnn as rnn\n"
           "from course_lib.experiments import scan as scan_exp\n"
           "from course_lib.algorithms import scan\n"
           "from course_lib.teaching.verdict import verdict\n"
           "import course_lib\n")
    found = alias_violations(src)
    assert [int(f.split(":")[1]) for f in found] == [1, 2, 3, 4, 5, 6, 7]
    assert "import it as scan_exp" in found[0] and "import it as lstm_exp" in found[1]
    assert "import it as newton_plots" in found[2] and "import it as which_checks" in found[3]
    assert "import it as scan" in found[4] and "import it as cache_level" in found[5]


def test_import_alias_rule_and_errors():
    assert import_alias("course_lib.experiments", "scan") == "scan_exp"
    assert import_alias("course_lib.experiments.cost_model", "cluster") == "cluster_exp"
    assert import_alias("course_lib.teaching.plots", "scan") == "scan_plots"
    assert import_alias("course_lib.teaching", "widgets") == "widgets"
    assert import_alias("course_lib.algorithms", "scan") == "scan"
    with pytest.raises(TypeError, match="module"):
        import_alias("course_lib.experiments", "not a name")
    with pytest.raises(TypeError, match="package"):
        import_alias(None, "scan")
