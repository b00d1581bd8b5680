"""Markdown cells: tables render with consistent columns, no empty list items, and no measured
quantity typed into prose (numbers of this machine are printed by code; seed numbers come from the
claims registry). Checked on every lecture notebook and worksheet."""
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p for d in ("notebooks", "solutions") for p in (ROOT / d).glob("[0-9][0-9]_*.ipynb"))

# A measured quantity: a number followed by a speed-up, a rate, a time or a percentage.
MEASURED = re.compile(r"(?<![\w.^/])(\d+(?:\.\d+)?)\s*(?:×|x(?=\s+(?:faster|slower|speed|the|over|more|less))"
                      r"|GB/s|GFLOP/s|ms\b|%)")
# Numbers that are definitions, targets or sizes -- not measurements of any machine.
ALLOWED = [
    re.compile(p) for p in (
        r"100\s*%",                      # "100% accuracy" is a target, "100% of the peak" a definition
        r"\b(?:2|4|8|16|32)\s*×\s*(?=\d)",  # a shape such as 16×64 tiles
        r"\d+\s*×\s*\d+",                # a matrix or tile shape: 1000 × 1000, 64×16
        r"sleeps? \d+ ms",               # a test step defined to sleep a fixed time
    )
]


def _markdown_cells(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            yield i, cell.source


def _strip_code_and_math(text: str) -> str:
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\$[^$]*\$", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)           # link targets
    return text


def _table_cells(line: str) -> int:
    """Cells in a GFM table row: split on pipes that are not escaped (a pipe inside `code` splits too)."""
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return len(re.split(r"(?<!\\)\|", s))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_tables_have_consistent_columns(path):
    for i, src in _markdown_cells(path):
        rows = []
        for line in src.splitlines() + [""]:
            if line.strip().startswith("|"):
                rows.append(line)
                continue
            if len(rows) >= 2:
                counts = [_table_cells(r) for r in rows]
                assert len(set(counts)) == 1, (
                    f"{path.name} cell {i}: table rows have {counts} cells (a '|' inside code must be escaped as "
                    f"\\\\|):\n" + "\n".join(rows))
            rows = []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_empty_or_stray_list_items(path):
    for i, src in _markdown_cells(path):
        for line in src.splitlines():
            assert not re.fullmatch(r"\s*(?:[*+-]|\d+\.)\s*", line), f"{path.name} cell {i}: an empty list item"
            assert not re.match(r"\s*\|.*\|\s*$", line) or not re.match(r"\s*\|\s*[*-]\s+\w", line), (
                f"{path.name} cell {i}: a list marker inside a table row: {line!r}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_measured_numbers_typed_into_prose(path):
    hits = []
    for i, src in _markdown_cells(path):
        text = _strip_code_and_math(src)
        for m in MEASURED.finditer(text):
            around = text[max(0, m.start() - 12):m.end() + 12]
            if any(a.search(around) for a in ALLOWED):
                continue
            hits.append(f"cell {i}: ...{around.strip()}...")
    assert not hits, (f"{path.name}: measured quantities typed into markdown (print them from code, or quote the "
                      "seed from the claims registry):\n  " + "\n  ".join(hits))
