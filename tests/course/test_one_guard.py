"""One guard, everywhere (issue 23, item 3): every printed conclusion goes through the verdict machinery.

A *conclusion* is a printed sentence that judges a measurement: "faster", "slower", "wins", "beats",
"above the roof", "as in the seed", "agrees with the seed", ... On a busy machine such a sentence is only
true when something checked the measurement first. So a ``print`` whose text holds a conclusion word must
either

- call the machinery itself (``verdict`` / ``goal_verdict``, a Comparison's or Noise's ``faster`` / ``said``,
  a Noise's ``warning``), or
- sit under an ``if`` / conditional expression whose test consults it (a ``noise``, ``.ok``, ``faster(...)``,
  ``said``, ``verdict``, ``reliable`` ...): ``if not noise.ok: print(noise.warning()) else: print("faster")``.

Sentences about correctness, not speed ("agree to 1e-5", "round-off", "max abs diff", a loss) are
deterministic and exempt. The scan is an AST walk over notebooks/*.py, solutions/*.py and
course_lib/experiments/ (where such sentences are built).

Markdown may not point at a line that may not print: "the verdict lines above say ...", "the reason is
printed above", "the line above says which won" -- a verdict that abstains prints no such line, so the
cell itself must say what can be concluded.

``ALLOWED`` is empty: a hit may only be waived here with a reason (a deterministic statement, not a measurement).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted([*ROOT.glob("notebooks/[0-9][0-9]_*.py"), *ROOT.glob("solutions/[0-9][0-9]_*.py"),
                *ROOT.glob("course_lib/experiments/**/*.py")])

CONCLUSION = re.compile(r"\b(faster|slower|wins?|beats?|beat|outperforms?|above the roof|below the roof|"
                        r"as in the seed|agrees? with the seed|matches the seed|confirms? the seed|"
                        r"reproduces the seed|helps|hurts)\b", re.I)
#: the course's one ratio convention, printed as a column or line label: "speed-up (> 1 = faster)"
LABEL = re.compile(r"\(?\s*[<>]\s*1\s*=\s*(faster|slower)\s*\)?")
CORRECTNESS = re.compile(r"1e-\d|round-off|max abs|abs diff|relative error|\bloss\b|allclose|same numbers", re.I)
GUARD_CALLS = {"verdict", "goal_verdict", "faster", "said", "warning", "verdict_line"}
GUARD_WORDS = re.compile(r"noise|^ok$|^reliable$|^concluded$|^busy$", re.I)  # names/attributes/keys read as facts

# Markdown that points at a line that may not print (a verdict, a reason, a conclusion).
DANGLING = re.compile(r"\b(verdicts?|reasons?|lines?|printout|conclusions?)\b(\s+printed)?\s+above\b|"
                      r"\b(reasons?|verdicts?)\s+(is|are)\s+printed\s+above\b|\bprinted\s+(verdicts?|reasons?)\b", re.I)

# Waived hits, 'path:print|md:word' -> why the sentence is not a conclusion from a measurement. Empty.
ALLOWED: dict[str, str] = {}


def _name(node) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _text(node) -> str:
    """All string constants in ``node`` (f-string parts included), joined."""
    return " ".join(n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def _guard_names(tree) -> set[str]:
    """Names assigned from the machinery: ``won = cmp.faster("gemm")`` makes ``won`` a guarded fact."""
    return {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign)
            and any(isinstance(c, ast.Call) and _name(c.func) in GUARD_CALLS for c in ast.walk(n.value))
            for t in n.targets if isinstance(t, ast.Name)}


def _consults_guard(node, guarded_names: frozenset = frozenset()) -> bool:
    """Does ``node`` call the machinery or read a noise / ok / verdict fact (or a name assigned from one)?"""
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and _name(n.func) in GUARD_CALLS:
            return True
        if isinstance(n, (ast.Name, ast.Attribute)) and GUARD_WORDS.search(_name(n)):
            return True
        if isinstance(n, ast.Name) and n.id in guarded_names:
            return True
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and \
                isinstance(n.slice.value, str) and GUARD_WORDS.search(n.slice.value):
            return True
    return False


def _parents(tree) -> dict:
    out = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[child] = node
    return out


def _guarded(call, parents, names: frozenset) -> bool:
    """The print consults the guard, or an enclosing ``if``/``while``/conditional expression does."""
    if _consults_guard(call, names):
        return True
    node = call
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.If, ast.IfExp, ast.While)) and _consults_guard(node.test, names):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            return False
    return False


def print_problems(source: str, where: str = "<string>") -> list[tuple[str, str]]:
    """(key, message) for each ``print`` of a conclusion that no guard decides."""
    tree = ast.parse(source)
    parents = _parents(tree)
    names = frozenset(_guard_names(tree))
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _name(node.func) == "print"):
            continue
        text = LABEL.sub("", _text(node))   # the ratio convention's label judges nothing
        found = CONCLUSION.search(text)
        if found and not CORRECTNESS.search(text) and not _guarded(node, parents, names):
            out.append((f"{where}:print:{found.group(0).lower()}",
                        f"{where}:{node.lineno}: prints {found.group(0)!r} without verdict()/faster()/said()/"
                        f"the noise check: {ast.unparse(node)[:100]}"))
    return out


def _markdown_cells(source: str) -> list[tuple[int, str]]:
    """(first line, text with the comment marks and line breaks folded) of each jupytext markdown cell."""
    cells, start, lines = [], None, []
    for i, line in enumerate(source.splitlines() + ["# %%"], 1):
        if line.startswith("# %%"):
            if start is not None:
                cells.append((start, " ".join(l.removeprefix("#").strip() for l in lines)))
            start, lines = (i + 1, []) if "[markdown]" in line else (None, [])
        elif start is not None:
            lines.append(line)
    return cells


def markdown_problems(source: str, where: str = "<string>") -> list[tuple[str, str]]:
    """(key, message) for markdown (jupytext ``# %% [markdown]`` cells) pointing at a line that may not print.
    A phrase split over two lines ("The reason is printed / above") is found too."""
    out = []
    for start, text in _markdown_cells(source):
        for found in DANGLING.finditer(text):
            phrase = " ".join(found.group(0).split())
            out.append((f"{where}:md:{phrase.lower()}",
                        f"{where}: markdown cell at line {start} refers to '{phrase}', a line that may not print"))
    return out


def _all_problems() -> list[tuple[str, str]]:
    out = []
    for path in FILES:
        rel = path.relative_to(ROOT).as_posix()
        source = path.read_text()
        out += print_problems(source, rel)
        if rel.startswith(("notebooks/", "solutions/")):
            out += markdown_problems(source, rel)
    return out


def test_every_printed_conclusion_goes_through_a_guard():
    bad = [msg for key, msg in _all_problems() if key not in ALLOWED]
    assert not bad, "conclusions printed without the verdict machinery:\n" + "\n".join(bad)


def test_allowed_entries_are_still_needed():
    """An ALLOWED entry whose hit is gone must be removed (so the list only shrinks)."""
    keys = {key for key, _ in _all_problems()}
    stale = sorted(set(ALLOWED) - keys)
    assert not stale, f"remove from ALLOWED (fixed): {stale}"


@pytest.mark.parametrize("snippet", [
    'print(f"tiled is {r:.1f}x faster")',
    'print("points above the roof:", above)',
    'print("as in the seed" if ratio > 1 else "unlike the seed")',
    'def report(r):\n    print(f"{r.name} wins")',
    'if r > 1:\n    print("threads win here")',
    'won = r > 1\nif won:\n    print("GEMM faster")',
])
def test_planted_unguarded_conclusion_is_caught(snippet):
    assert print_problems(snippet), snippet


@pytest.mark.parametrize("snippet", [
    'if not noise.ok:\n    print(noise.warning())\nelse:\n    print(f"{r:.1f}x faster")',
    'print(noise.warning() or f"{r:.1f}x faster")',
    'print(cmp.faster("tiled", by=1.2), "faster by 1.2x?")',
    'print(verdict("c", r, noise=n), "-- as in the seed?")',
    'won = cmp.faster("gemm")\nif won == "yes":\n    print("GEMM faster")',
    'print("GEMV loop and GEMM agree to 1e-3:", d < 1e-3)',
    'print(f"measured {r:.1f} GFLOP/s")',
])
def test_guarded_or_neutral_prints_pass(snippet):
    assert not print_problems(snippet), snippet


def test_planted_dangling_markdown_is_caught():
    src = '# %% [markdown]\n# The verdict lines above say which won.\n\n# %%\nx = 1\n# the line above says it\n'
    found = markdown_problems(src)
    assert len(found) == 1 and "lines above" in found[0][1]
    assert markdown_problems("# %% [markdown]\n# The reason is printed above.\n")
    assert markdown_problems("# %% [markdown]\n# ours may be flat. The reason is printed\n# above, computed from\n")
    assert markdown_problems("# %% [markdown]\n# The printed verdicts\n# say what this machine does.\n")
    assert not markdown_problems("# %% [markdown]\n# The table above says where it fits.\n")
