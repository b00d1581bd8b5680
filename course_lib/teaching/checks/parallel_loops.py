"""Is a numba ``prange`` loop placed right and free of races? (teaching folder; used by checks 4.2 and 5.1)

``parallel_structure(fn, *args)``   numba's parallel diagnostics: the loops made from a user ``prange``
``prange_loops(fn)``                from the source: each ``prange`` loop's depth, the loops around it and
                                    the array writes inside it whose index does not depend on its variable
``oversubscribed_run(fn, shapes)``  runs ``fn`` in a separate process on more threads than cores, on shapes
                                    built to expose races (:data:`RACE_SHAPES`), against a float64 reference
(:mod:`course_lib.teaching.checks.tiling_simd` re-exports them.)
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

from ...core import backend

__all__ = ["parallel_structure", "prange_loops", "oversubscribed_run", "RACE_SHAPES"]


# --------------------------------------------------------------------------- 4.2: which loop is parallel
def parallel_structure(fn, *args) -> dict:
    """What numba says about ``fn``'s parallelism after compiling it for ``args``.

    Returns ``{"numba": bool, "parallel_option": bool, "prange_loops": int, "other_parallel_loops":
    int, "problem": str or None}``. ``prange_loops`` counts loops numba turned into parallel loops
    *from a prange*; array expressions such as ``np.zeros`` are counted separately. The function is
    recompiled once without the on-disk cache, because cached code carries no diagnostics.
    """
    info = {"numba": False, "parallel_option": False, "prange_loops": 0, "other_parallel_loops": 0,
            "problem": None}
    py_func = getattr(fn, "py_func", None)
    options = getattr(fn, "targetoptions", None)
    if py_func is None or options is None:
        info["problem"] = ("this is a plain Python function: decorate it with @njit(parallel=True) "
                           "(from numba import njit, prange)")
        return info
    info["numba"] = True
    info["parallel_option"] = bool(options.get("parallel"))
    if not info["parallel_option"]:
        info["problem"] = ("the function is compiled without parallel=True, so prange runs like range "
                           "on one thread: use @njit(parallel=True)")
        return info
    from numba import njit

    fresh = njit(**{k: v for k, v in options.items() if k not in ("cache", "nopython")})(py_func)
    fresh(*args)
    diag = fresh.get_metadata(fresh.signatures[0]).get("parfor_diagnostics")
    parfors = list(getattr(diag, "initial_parfors", []) or [])
    for p in parfors:
        if any(pat and pat[0] == "prange" for pat in getattr(p, "patterns", [])):
            info["prange_loops"] += 1
        else:
            info["other_parallel_loops"] += 1
    if info["prange_loops"] == 0:
        info["problem"] = ("numba found no prange loop to run in parallel: write the outer loop over "
                           "rows (or row blocks) as `for i in prange(m):`")
    return info


def _names(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_prange(it) -> bool:
    if not isinstance(it, ast.Call):
        return False
    f = it.func
    return (isinstance(f, ast.Name) and f.id == "prange") or (isinstance(f, ast.Attribute) and f.attr == "prange")


def prange_loops(fn) -> list[dict]:
    """The ``for ... in prange(...)`` loops in the source of ``fn`` (a numba dispatcher or a function):
    ``{"line", "var", "depth" (enclosing loops), "outer" (names of the enclosing loops' variables),
    "races" [(array, index source)]}``. A *race* is a write ``X[idx] = / += ...`` to an array ``X`` made
    outside the loop whose index does not depend on the prange variable (directly or through names
    computed from it): different iterations -- different threads -- write the same element."""
    py = getattr(fn, "py_func", fn)
    try:
        src = textwrap.dedent(inspect.getsource(py))
    except (OSError, TypeError):
        return []
    tree = ast.parse(src)
    first = py.__code__.co_firstlineno - 1
    found = []

    def visit(node, loops):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.For, ast.While)):
                if isinstance(child, ast.For) and _is_prange(child.iter):
                    found.append(_analyse(child, loops))
                var = _names(child.target) if isinstance(child, ast.For) else set()
                visit(child, loops + [(child, var)])
            else:
                visit(child, loops)

    def _analyse(loop, loops):
        var = _names(loop.target)
        derived = set(var)
        assigned_inside = set()
        changed = True
        while changed:  # names computed (transitively) from the loop variable
            changed = False
            for n in ast.walk(loop):
                targets, value = [], None
                if isinstance(n, ast.Assign):
                    targets, value = n.targets, n.value
                elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                    targets, value = [n.target], n.value
                elif isinstance(n, ast.For) and n is not loop:
                    targets, value = [n.target], n.iter
                for t in targets:
                    for name in (_names(t) if isinstance(t, (ast.Name, ast.Tuple, ast.List)) else set()):
                        assigned_inside.add(name)
                        if _names(value) & derived and name not in derived:
                            derived.add(name)
                            changed = True
        races = []
        for n in ast.walk(loop):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
            for t in targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    base = t.value.id
                    if base in derived or base in assigned_inside:
                        continue  # a view of this iteration's rows, or a local array
                    if not (_names(t.slice) & derived):
                        idx = ast.unparse(t.slice)
                        if isinstance(t.slice, ast.Tuple) and idx.startswith("("):
                            idx = idx[1:-1]
                        races.append((base, idx))
        return {"line": first + loop.lineno, "var": ", ".join(sorted(var)), "depth": len(loops),
                "outer": [", ".join(sorted(v)) or "while" for _, v in loops], "races": races}

    visit(tree, [])
    return found


# --------------------------------------------------------------------------- 4.2: more threads than cores
RACE_SHAPES = ((1, 4_000_000, 1), (3, 200_000, 4))  # one or a few outputs, long reductions: races lose updates
_JIT_OPTIONS = ("parallel", "fastmath", "boundscheck", "error_model", "nogil", "cache")

_RUNNER = r'''
import json, sys
import numpy as np
import numba
from numba import njit
SHAPES = {shapes!r}
REPEATS = {repeats!r}
def _main():
    rng = np.random.default_rng(44)
    fn = globals()[{name!r}]
    for m, k, n in SHAPES:
        A = rng.standard_normal((m, k))
        B = rng.standard_normal((k, n))
        want = A @ B
        for r in range(REPEATS):
            got = np.asarray(fn(A, B))
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-8, atol=1e-8):
                return dict(ok=False, shape=[m, k, n], repeat=r, got=np.ravel(got)[:3].tolist(),
                            want=want.ravel()[:3].tolist())
    return dict(ok=True)
try:
    verdict = _main()
except Exception as exc:
    verdict = dict(ok=None, error=f"{{type(exc).__name__}}: {{exc}}")
verdict["threads"] = numba.config.NUMBA_NUM_THREADS
print("VERDICT " + json.dumps(verdict))
'''


class _NoSource(Exception):
    pass


def _importable(obj) -> bool:
    try:
        return getattr(importlib.import_module(obj.__module__), getattr(obj, "__name__", ""), None) is obj
    except Exception:
        return False


def _function_source(fn, seen: set, parts: list) -> None:
    """Append the source of ``fn`` (a numba dispatcher or function), with what it needs from its module's
    globals, to ``parts``: modules as imports, importable functions as ``from ... import``, numbers and
    strings as literals, helpers defined in a notebook recursively as source."""
    py = getattr(fn, "py_func", fn)
    if py in seen:
        return
    seen.add(py)
    try:
        src = textwrap.dedent(inspect.getsource(py))
    except (OSError, TypeError) as exc:
        raise _NoSource(f"the source of {getattr(py, '__name__', fn)!r} is not available") from exc
    tree = ast.parse(src)
    fdef = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if fdef is None or py.__code__.co_freevars:
        raise _NoSource(f"{py.__name__!r} is not a plain top-level function")
    fdef.decorator_list = []
    code = ast.unparse(fdef)
    head = []
    g = py.__globals__
    names = set()
    stack = [py.__code__]
    while stack:
        co = stack.pop()
        names.update(co.co_names)
        stack.extend(c for c in co.co_consts if inspect.iscode(c))
    for name in sorted(names):
        if name not in g:
            continue  # a builtin or an attribute name
        obj = g[name]
        if inspect.ismodule(obj):
            head.append(f"import {obj.__name__} as {name}")
        elif isinstance(obj, (bool, int, float, str)) or obj is None:
            head.append(f"{name} = {obj!r}")
        elif callable(obj) and getattr(obj, "__module__", None) not in (None, "__main__", py.__module__) \
                and _importable(obj):
            head.append(f"from {obj.__module__} import {obj.__name__} as {name}")
        elif hasattr(obj, "py_func") or inspect.isfunction(obj):
            _function_source(obj, seen, parts)
            if getattr(obj, "py_func", obj).__name__ != name:
                raise _NoSource(f"{name!r} is another name for {getattr(obj, '__name__', name)!r}")
        else:
            raise _NoSource(f"it uses the global {name!r} ({type(obj).__name__}), which cannot be copied")
    opts = {k: v for k, v in getattr(fn, "targetoptions", {}).items()
            if k in _JIT_OPTIONS and isinstance(v, (bool, str))}
    deco = f"@njit(**{opts!r})\n" if hasattr(fn, "py_func") else ""
    parts.append("\n".join(head) + "\n" + deco + code + "\n")


def oversubscribed_run(fn, shapes=RACE_SHAPES, *, threads: int | None = None, repeats: int = 5,
                       timeout: float = 120.0) -> dict:
    """Run ``fn(A, B)`` on the race-prone ``shapes`` (float64, each ``repeats`` times) in a fresh Python
    process whose numba uses ``threads`` threads (default: twice the cores) -- numba's thread count is
    fixed per process, so oversubscription needs one. The script is written to a temporary folder from
    ``inspect.getsource`` of ``fn`` (its decorator options kept) and of the notebook helpers it calls,
    with the imports and number constants it uses from its module; it compares with ``A @ B``.

    Returns ``{"ok": True}``, ``{"ok": False, "shape": [m, k, n], "got", "want", ...}`` on a wrong
    result, or ``{"ok": None, "skipped": reason}`` when the source cannot be obtained or copied
    (a function typed at an interactive prompt, a closure, a global array): then this step is
    skipped and the in-process race case stands alone. ``"threads"`` is the thread count used."""
    threads = int(threads or 2 * backend.cpu_count())
    parts: list = []
    try:
        _function_source(fn, set(), parts)
    except _NoSource as exc:
        return {"ok": None, "skipped": str(exc), "threads": threads}
    name = getattr(fn, "py_func", fn).__name__
    script = ("import course_lib  # noqa: F401  (before numba)\nfrom numba import njit\n\n" + "\n".join(parts)
              + _RUNNER.format(shapes=tuple(tuple(s) for s in shapes), repeats=int(repeats), name=name))
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads))
    root = str(pathlib.Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with tempfile.TemporaryDirectory(prefix="course_race_") as tmp:
        path = pathlib.Path(tmp) / "race_check.py"
        path.write_text(script)
        try:
            proc = subprocess.run([sys.executable, str(path)], env=env, cwd=tmp, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"ok": None, "skipped": f"the run took more than {timeout:g} s", "threads": threads}
    for ln in proc.stdout.splitlines()[::-1]:
        if ln.startswith("VERDICT "):
            out = json.loads(ln[len("VERDICT "):])
            if out.get("ok") is None:
                out["skipped"] = f"your function raised {out.get('error')} in the separate process"
            return out
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"ok": None, "skipped": f"the separate process failed ({tail[0]})", "threads": threads}
