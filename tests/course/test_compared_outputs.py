"""No output that nbval compares may depend on the machine that executed the notebook.

nbval compares every code cell's stored output with a fresh run, except cells tagged
``nbval-ignore-output`` (timings, widgets). A compared cell that prints a cache size, a lane or
core count, the CPU's name, a time or a rate passes on the machine that stored it and fails on a
student's or an instructor's CI machine. This test scans every compared cell's *stored* output for
such facts -- by pattern, and by the facts this machine actually reports -- so the next one is found
by the suite, not by a student.

Seed quotes (lines starting with "seed"/"Seed", printed from the claims registry) are constants of
the seed's machine, not of this one, and are allowed.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from course_lib.core import backend

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p for d in ("notebooks", "solutions") for p in (ROOT / d).glob("[0-9][0-9]_*.ipynb"))

# Facts of *a* machine, whatever machine: sizes of caches, rates, wall times, lane / core counts
# detected from the hardware, the CPU's vendor and vector extensions.
MACHINE_FACT = re.compile(
    r"\d+(?:\.\d+)?\s*(?:KiB|MiB|GiB|KB|MB)\b"             # a cache or memory size
    r"|\d+(?:\.\d+)?\s*(?:GB/s|GFLOP/s|GFLOPS)"             # a rate
    r"|\d+(?:\.\d+)?\s*(?:ms|µs|us|ns)\b"                   # a time
    r"|\b\d+(?:\.\d+)?\s*s\b(?!\w)"                          # a time in seconds ("1.3 s")
    r"|\b\d+\s*(?:SIMD\s+)?lanes?\b"                         # a vector width in lanes
    r"|\b\d+\s*(?:logical\s+|physical\s+)?(?:cores?|CPUs?)\b"  # a core count
    r"|\b(?:AVX\S*|SSE\d\S*|EPYC|Xeon|Ryzen|Intel|AMD)\b"    # the CPU itself
    r"|\d+(?:\.\d+)?\s*(?:×|x)\s*(?:faster|slower)"          # a measured speed-up
)


def _is_seed_quote(line: str) -> bool:
    return line.lstrip().lower().startswith("seed")


def machine_facts(text: str) -> list[str]:
    """The machine-dependent facts printed in ``text`` (seed quotes excepted)."""
    hits = []
    for line in text.splitlines():
        if not _is_seed_quote(line):
            hits += [m.group(0) for m in MACHINE_FACT.finditer(line)]
    return hits


def _this_machine_facts() -> list[str]:
    """Strings that name *this* machine and cannot be constants of a notebook."""
    facts = []
    model = backend.cpu_model()
    if model and len(model) > 6:
        facts.append(model)
    return facts


def _output_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif "data" in out and "text/plain" in out["data"]:
            parts.append(out["data"]["text/plain"])
        elif out.get("output_type") == "error":
            parts.append("\n".join(out.get("traceback", [])))
    return "\n".join(parts)


def compared_cells(path: Path):
    """``(index, output text)`` of every code cell nbval compares in ``path``."""
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        tags = set(cell.metadata.get("tags", []))
        if cell.cell_type != "code" or tags & {"nbval-ignore-output", "nbval-skip"}:
            continue
        yield i, _output_text(cell)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_compared_output_depends_on_the_machine(path):
    bad = []
    named = _this_machine_facts()
    for i, text in compared_cells(path):
        hits = machine_facts(text) + [f for f in named if f in text]
        if hits:
            bad.append(f"cell {i}: {', '.join(sorted(set(hits))[:4])}")
    assert not bad, (f"{path.name}: nbval compares outputs that depend on the machine (tag the cell "
                     f"nbval-ignore-output, or print something machine-independent): " + "; ".join(bad))


@pytest.mark.parametrize("text", [
    "{'L1d': '32 KiB', 'L2': '512 KiB'}",
    "copy bandwidth 14.2 GB/s",
    "one step took 3.1 ms",
    "this CPU has 8 SIMD lanes",
    "numba sees 2 cores",
    "AMD EPYC 7B13, AVX2",
    "chunked is 3.2x faster",
    "the run took 1.7 s",
])
def test_the_scanner_finds_machine_facts(text):
    assert machine_facts(text), text


@pytest.mark.parametrize("text", [
    "seed 000, §4.4 (Intel Xeon Phi (61 cores, 512-bit SIMD)): 39×",
    "max error < 1e-12: True",
    "shapes: X (10, 4, 8), H (10, 4, 16)",
    "loss at step 100: 0.6931",
])
def test_the_scanner_leaves_constants_alone(text):
    assert not machine_facts(text), text


def test_a_planted_cell_is_reported(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(caches)", outputs=[
                    nbformat.v4.new_output("stream", name="stdout", text="{'L1d': '48 KiB'}\n")]),
                nbformat.v4.new_code_cell("print(t)", metadata={"tags": ["nbval-ignore-output"]}, outputs=[
                    nbformat.v4.new_output("stream", name="stdout", text="2.5 ms\n")])]
    path = tmp_path / "99_planted.ipynb"
    nbformat.write(nb, path)
    found = {i: machine_facts(t) for i, t in compared_cells(path)}
    assert found == {0: ["48 KiB"]}
