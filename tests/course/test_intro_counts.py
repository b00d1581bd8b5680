"""A worksheet's introduction that counts its exercises ('you write the six pieces') counts them right
(issue 41: worksheet 08 announced four pieces for six exercises)."""
import re
from pathlib import Path

import pytest

from course_lib.teaching.notebook_io import read_py

ROOT = Path(__file__).resolve().parents[2]
WORKSHEETS = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.py"))
NUMBERS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}
COUNTED = re.compile(r"\b(" + "|".join(NUMBERS) + r"|\d+)\s+(?:pieces|exercises|functions)\b", re.I)


def announced(intro: str) -> list[int]:
    return [int(w) if w.isdigit() else NUMBERS[w.lower()] for w in COUNTED.findall(intro)]


def test_the_pattern():
    assert announced("you write the six pieces the chapter is built from") == [6]
    assert announced("Four exercises, then 2 functions") == [4, 2]
    assert announced("the pieces of two-level MGRIT") == []


@pytest.mark.parametrize("path", WORKSHEETS, ids=lambda p: p.stem)
def test_the_intro_counts_the_exercises(path):
    cells = read_py(path).cells
    intro = next(c.source for c in cells if c.cell_type == "markdown")
    exercises = sum(len(re.findall(r"^#{2,3} Exercise \d+\.\d+", c.source, re.M)) for c in cells
                    if c.cell_type == "markdown")
    for n in announced(intro):
        assert n == exercises, f"{path.name}: the introduction announces {n}, the worksheet has {exercises} exercises"
