"""Smoke test: benchmarks/scan.py --quick runs and prints its tables (no timed assertions)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_scan_benchmark_quick():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scan.py"), "--quick"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env=dict(os.environ, COURSE_BUDGET="small"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "method" in out.stdout and "GB/s" in out.stdout and "% stream" in out.stdout and "x seq" in out.stdout
    for name in ("sequential (numba)", "chunked, 1 thread", "over channels", "stream h=a+x", "seed 001",
                 "Issue 13 goals", "The backward pass", "Crossover map", "like-for-like", "register loop",
                 "The scan as matmuls", "% peak", "GEMM peak measured here", "issue 25 goals", "chunk sweep",
                 "across MPI ranks", "Scans at the stream", "limit:", "of the limit that applies",
                 "threadpoolctl", "chunked_blocked", "% stream", "Seed 001", "matrix products",
                 "the products alone run at", "GEMM peak timed between them", "one thread (GEMM peak on one thread",
                 "[Qd|A] [S_in;V]"):
        assert name in out.stdout, name
