"""Smoke test: benchmarks/inference.py --quick runs and prints its side-by-side table."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_inference_benchmark_quick():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "inference.py"), "--quick"],
                         capture_output=True, text=True, timeout=180, cwd=ROOT,
                         env=dict(os.environ, COURSE_BUDGET="small"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "method" in out.stdout and "seq/s" in out.stdout and "x batched" in out.stdout
    for name in ("sequential", "batched", "threads", "wavefront"):
        assert name in out.stdout
