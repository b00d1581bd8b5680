"""Plain helpers shared by the test files (``from helpers import ...``: pyproject's ``pythonpath = ["tests"]``
puts tests/ on sys.path, for every folder under it). Fixtures live in conftest.py."""
from __future__ import annotations

import ast
import os
import re
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st

import course_lib

REPO = Path(__file__).resolve().parent.parent
SEEDS_DIR = REPO.parent / "shared" / "seeds"  # the seed texts, beside the repository where the course is developed


def in_ci(environ=None) -> bool:
    """Whether the tests run under CI (``CI=true``, as GitHub Actions, GitLab and most runners set it)."""
    env = os.environ if environ is None else environ
    return str(env.get("CI", "")).strip().lower() in ("true", "1", "yes")


def seed_texts_decision(seeds_dir: Path = SEEDS_DIR, environ=None) -> tuple[str, str]:
    """``("run" | "skip" | "fail", message)`` for tests that read the seed texts in ``seeds_dir``.

    They run where the texts are; outside CI a missing folder (or one without ``NNN_*.txt`` files) skips;
    under CI it fails, naming the missing path, so a CI run can never pass with the quote checks unseen."""
    if seeds_dir.is_dir() and any(seeds_dir.glob("[0-9][0-9][0-9]_*.txt")):
        return "run", ""
    msg = (f"the seed texts are missing: {seeds_dir} (expected files NNN_*.txt there, beside the repository); "
           "the claims registry is checked against them")
    return ("fail", msg + " -- under CI=true this is an error") if in_ci(environ) else ("skip", msg)


def require_seed_texts(seeds_dir: Path = SEEDS_DIR) -> Path:
    """Call at the start of a test that reads the seed texts: skip or fail as :func:`seed_texts_decision` says."""
    what, msg = seed_texts_decision(seeds_dir)
    if what == "fail":
        pytest.fail(msg, pytrace=False)
    if what == "skip":
        pytest.skip(msg)
    return seeds_dir


#: anything that is not a usable size (>= 1): negatives, bools, floats, strings, None, numpy bools
BAD_SIZES = st.one_of(st.integers(max_value=-1), st.booleans(), st.floats(), st.text(max_size=3), st.none(),
                      st.just(np.bool_(True)), st.just(3.0), st.just("3"))
#: a few fixed non-sizes (0 and below, a float, a string, a bool, None), for sweeps too slow for many examples
BAD_SIZE = st.one_of(st.integers(-5, 0), st.just(2.5), st.just("3"), st.just(True), st.just(None))


def raises_naming(exc_types, name: str, fn, *args, **kw) -> str:
    """Call ``fn(*args, **kw)``, expect ``exc_types``, and check the message names the argument ``name``
    (it starts with it, or says ``name:`` / ``name,`` as in "a, x: ..."). Returns the message."""
    with pytest.raises(exc_types) as info:
        fn(*args, **kw)
    msg = str(info.value)
    assert msg.startswith(name) or f"{name}:" in msg or f"{name}," in msg, msg
    return msg


# ---- chapter markers (used by conftest.pytest_collection_modifyitems) ------------------------------------
_NOTEBOOK = re.compile(r"(?:^|[/\\\[-])(\d\d)_[a-z]")


def chapters_of_modules(dotted: set[str], table=None) -> set[str]:
    """The chapters (``"08"``, ...) whose modules appear among ``dotted`` (absolute module or name paths:
    ``course_lib.algorithms.scan`` or ``course_lib.algorithms.scan.linear_recurrence`` both count)."""
    table = course_lib.CHAPTERS if table is None else table
    out = set()
    for ch, mods in table.items():
        for m in mods:
            full = f"course_lib.{m}"
            if any(d == full or d.startswith(full + ".") for d in dotted):
                out.add(ch)
                break
    return out


def imported_names(source: str) -> set[str]:
    """Every absolute dotted name a test file imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``),
    and the attributes it reads from an imported package (``plots.scan.x`` after ``from ... import plots``)."""
    tree = ast.parse(source)
    out, alias = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
            alias.update({a.asname: a.name for a in node.names if a.asname})
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
            alias.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in alias:
            out.add(f"{alias[node.value.id]}.{node.attr}")
    return out


@lru_cache(maxsize=None)
def chapters_of_file(path: Path) -> frozenset[str]:
    """The chapters of one file: a notebook by its NN_ name, a Python test file by what it imports."""
    m = re.match(r"(\d\d)_", path.name)
    if path.suffix == ".ipynb":
        return frozenset({m.group(1)} if m and m.group(1) in course_lib.CHAPTERS else ())
    if path.suffix != ".py":
        return frozenset()
    source = path.read_text()
    names = imported_names(source)
    for script in scripts_run_by(source):  # a smoke test of benchmarks/x.py covers what x.py imports
        names |= imported_names(script.read_text())
    # core/ serves every chapter: it decides the chapter only for a test of core itself
    specific = chapters_of_modules({n for n in names if not n.startswith("course_lib.core")})
    return frozenset(specific or chapters_of_modules(names))


def scripts_run_by(source: str) -> list[Path]:
    """The ``benchmarks/*.py`` scripts a test file names (``ROOT / "benchmarks" / "scan.py"``)."""
    consts = {n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    if "benchmarks" not in consts and not any(c.startswith("benchmarks/") for c in consts):
        return []
    bench = REPO / "benchmarks"
    found = [bench / Path(c).name for c in consts if c.endswith(".py")]
    return [p for p in found if p.is_file()]


def chapters_of_item(item) -> set[str]:
    chs = set(chapters_of_file(Path(str(item.path))))
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        chs |= {c for c in _NOTEBOOK.findall(callspec.id) if c in course_lib.CHAPTERS}
    return chs


# ---- bad input (issue 29): "a clear error naming the argument, or a correct result", and fast ----------------
def _names_one_of(msg: str, names) -> bool:
    return any(msg.startswith(n) or f"{n}:" in msg or f"{n}," in msg for n in names)


def clear_error_or(names, call, check=None):
    """Call ``call()``: either it raises ValueError/TypeError (or FloatingPointError) whose message names one of
    ``names`` (returns ``None``), or it returns and ``check(result)`` holds (returns the result)."""
    names = (names,) if isinstance(names, str) else tuple(names)
    try:
        out = call()
    except (ValueError, TypeError, FloatingPointError) as exc:
        assert _names_one_of(str(exc), names), f"{type(exc).__name__} names none of {names}: {exc}"
        return None
    if check is not None:
        assert check(out), f"accepted, but the result fails the check: {out!r}"[:500]
    return out


def raises_fast(exc_types, name: str, fn, *args, seconds: float = 2.0, **kw) -> str:
    """:func:`raises_naming`, run in a thread that must finish within ``seconds`` (a hang fails the test
    instead of stalling it). Returns the message."""
    import threading

    box: dict = {}

    def target():
        try:
            box["msg"] = raises_naming(exc_types, name, fn, *args, **kw)
        except BaseException as exc:
            box["exc"] = exc

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(seconds)
    assert not th.is_alive(), f"{getattr(fn, '__name__', fn)} did not fail within {seconds} s"
    if "exc" in box:
        raise box["exc"]
    return box["msg"]


def bad_array(valid: np.ndarray):
    """A strategy of broken versions of ``valid``: ``(what, array)`` with what in ndim+ / ndim- / shape / empty /
    int / complex / object / nan / inf / none / str (NaN and inf at a drawn index)."""
    valid = np.asarray(valid)
    kinds = ["ndim+", "ndim-", "shape", "empty", "complex", "object", "nan", "inf", "none", "str"]
    if valid.dtype.kind == "f":
        kinds.append("int")

    @st.composite
    def draw(d):
        what = d(st.sampled_from(kinds))
        a = valid.copy()
        if what == "ndim+":
            return what, a[None]
        if what == "ndim-":
            return what, a[0]
        if what == "shape":
            ax = d(st.integers(0, a.ndim - 1))
            return what, np.concatenate([a, a.take([0], axis=ax)], axis=ax)
        if what == "empty":
            ax = d(st.integers(0, a.ndim - 1))
            return what, a.take([], axis=ax)
        if what in ("nan", "inf"):
            i = d(st.integers(0, a.size - 1))
            a.flat[i] = np.nan if what == "nan" else d(st.sampled_from([np.inf, -np.inf]))
            return what, a
        return what, {"int": lambda: np.round(a).astype(np.int64), "complex": lambda: a.astype(complex),
                      "object": lambda: a.astype(object), "none": lambda: None, "str": lambda: "abc"}[what]()
    return draw()


# ---- the worksheets' own solutions, as functions (graders' "a right solution passes" tests) ----------------------
def solution(notebook: str, name: str):
    """The function ``name`` of ``solutions/<notebook>.py``, compiled here with every import and function
    definition of the worksheet before it (a solution may call an earlier one)."""
    import ast
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "solutions" / f"{notebook}.py"
    tree = ast.parse(path.read_text())
    keep = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef))]
    for node in keep:   # no numba disk cache: code exec'd here has no importable module to reload it into
        for deco in getattr(node, "decorator_list", []):
            for kw in getattr(deco, "keywords", []):
                if kw.arg == "cache":
                    kw.value = ast.copy_location(ast.Constant(False), kw.value)
    ns: dict = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), f"solutions/{notebook}.py", "exec"), ns)
    return ns[name]


def bptt_best_of_3(bptt, params, X, Y, T) -> float:
    """Exercise 2.3's timing discipline, as a right answer does it: the smallest process time (CPU seconds:
    steadier than wall time on a shared machine) of 3 calls ``bptt(params, X[:T], Y[:T])``."""
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        bptt(params, X[:T], Y[:T])
        best = min(best, time.process_time() - t0)
    return best


def bptt_cpu_timer(bptt, params, X, Y, Ts) -> list[float]:
    """A right ``time_bptt`` for Exercise 2.3: :func:`bptt_best_of_3` for each T in ``Ts``."""
    return [bptt_best_of_3(bptt, params, X, Y, T) for T in Ts]
