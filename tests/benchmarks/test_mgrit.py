import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_benchmark_quick_prints_table():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mgrit.py"), "--quick"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "iters" in out.stdout and "model P=16" in out.stdout and "work" in out.stdout
    assert "seed: up to 6.6×" in out.stdout  # from the claims registry
