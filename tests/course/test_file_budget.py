"""File budget: one idea per module, about 500 lines; no course_lib module may pass 600 (computed over the tree)."""
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "course_lib"
MAX_LINES = 600


def _line_counts(root: Path) -> dict:
    return {str(p.relative_to(root.parent)): len(p.read_text(encoding="utf-8").splitlines())
            for p in sorted(root.rglob("*.py"))}


def test_every_module_fits_the_budget():
    counts = _line_counts(PACKAGE)
    assert len(counts) > 50, f"expected the whole package under {PACKAGE}, found {len(counts)} modules"
    over = {f: n for f, n in counts.items() if n > MAX_LINES}
    assert not over, (f"modules over {MAX_LINES} lines (split them by idea): "
                      + ", ".join(f"{f} ({n})" for f, n in sorted(over.items(), key=lambda kv: -kv[1])))


def test_the_count_sees_a_long_module(tmp_path):
    pkg = tmp_path / "course_lib" / "core"
    pkg.mkdir(parents=True)
    (pkg / "short.py").write_text("x = 1\n")
    (pkg / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    counts = _line_counts(tmp_path / "course_lib")
    assert counts == {"course_lib/core/long.py": MAX_LINES + 1, "course_lib/core/short.py": 1}
