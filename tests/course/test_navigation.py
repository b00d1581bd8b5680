"""Every lecture notebook ends with a link to its worksheet and (all but the last) a "Next" link to
the following chapter; every relative notebook link in the lectures' markdown points to a file that
exists; worksheets are named by links, not by code spans."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LECTURES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+\.ipynb)\)")


def _markdown(nb_path: Path) -> list[str]:
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"], nb["cells"]


def test_there_are_lecture_notebooks():
    assert len(LECTURES) >= 13, [p.name for p in LECTURES]


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_last_cell_links_the_worksheet_and_the_next_chapter(path):
    _, cells = _markdown(path)
    # the generated footer (course_lib.teaching.chapters, tag chapter-footer) follows the chapter's own last cell
    cells = [c for c in cells if "chapter-footer" not in c.get("metadata", {}).get("tags", [])]
    assert cells[-1]["cell_type"] == "markdown", f"{path.name}: the last cell is not markdown"
    last = "".join(cells[-1]["source"])
    links = dict((target, text) for text, target in LINK.findall(last))
    worksheet = f"../exercises/{path.name}"
    assert worksheet in links, f"{path.name}: the last cell does not link its worksheet {worksheet}: {last[-300:]!r}"
    assert (path.parent / worksheet).resolve().exists(), worksheet
    i = LECTURES.index(path)
    nexts = re.findall(r"Next:\s*\[[^\]]+\]\(([^)]+)\)", last)
    if i + 1 < len(LECTURES):
        assert nexts == [LECTURES[i + 1].name], (path.name, nexts, last[-300:])
    else:
        assert not nexts, f"{path.name} is the last chapter but links a next one: {nexts}"


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_every_notebook_link_exists_and_worksheets_are_links(path):
    texts, _ = _markdown(path)
    for text in texts:
        for _, target in LINK.findall(text):
            if "://" in target:
                continue
            assert (path.parent / target).resolve().exists(), f"{path.name}: broken link {target}"
        spans = re.findall(r"`(exercises/[0-9][0-9]_[^`]*\.ipynb)`", text)
        unlinked = [s for s in spans if f"`{s}`](" not in text]
        assert not unlinked, f"{path.name}: worksheet named as a code span, not a link: {unlinked}"
