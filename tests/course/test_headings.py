"""A section heading is a markdown cell, never a comment in a code cell (issue 41: chapter 04's
'## 7 · Tile sizes' sat at the end of a code cell, missing from the outline and the website).
Checked on every lecture and worksheet source."""
import re
from pathlib import Path

import pytest

from course_lib.teaching.notebook_io import read_py

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for d in ("notebooks", "solutions") for p in (ROOT / d).glob("[0-9][0-9]_*.py"))
HEADING = re.compile(r"^\s*#\s+#{1,6}\s+\S")   # '# ## 7 · Tile sizes', '# # Title' (not '### BEGIN SOLUTION')


def headings_in_code(source: str) -> list[str]:
    return [line for line in source.splitlines() if HEADING.match(line)]


def test_the_pattern():
    assert headings_in_code("x = 1\n# ## 7 · Tile sizes\n")
    assert headings_in_code("# # Title")
    assert not headings_in_code("    ### BEGIN SOLUTION\n# a comment\n#: doc\nx = 1  # ## not at the start")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_heading_in_a_code_cell(path):
    for i, cell in enumerate(read_py(path).cells):
        if cell.cell_type == "code":
            assert not headings_in_code(cell.source), f"{path.parent.name}/{path.name} cell {i}: a heading in code"
