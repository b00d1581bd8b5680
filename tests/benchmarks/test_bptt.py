"""Smoke test: benchmarks/bptt.py --quick runs and prints its table."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bptt_benchmark_quick():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bptt.py"), "--quick"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "linear" in out.stdout and "quadratic" in out.stdout and "FLOP ratio" in out.stdout
    assert len([line for line in out.stdout.splitlines() if line.strip().startswith(("10", "25", "50"))]) == 3
