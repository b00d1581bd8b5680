import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_benchmark_quick_prints_table():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "which.py"), "--quick"], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "predicted" in out.stdout and "measured" in out.stdout and "error" in out.stdout
    assert "03 batching" in out.stdout and "GEMM peak" in out.stdout
    for head in ("== 1. calibration", "== 2. hold-out", "== 3. the advisor on 4 fresh problems"):
        assert head in out.stdout
    assert "hold-out:" in out.stdout and "fresh problems; advised something on" in out.stdout
    assert "39×" in out.stdout and "50×" in out.stdout and "6.6×" in out.stdout  # from the claims registry
