"""Smoke test: benchmarks/lstm.py --quick runs and prints its side-by-side table (no timed assertions)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_lstm_benchmark_quick(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "lstm.py"), "--quick"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env=dict(os.environ, COURSE_BUDGET="small", COURSE_CACHE_DIR=str(tmp_path)))
    assert out.returncode == 0, out.stderr[-2000:]
    for text in ("naive", "fused_pre", "transposed", "tuned is", "naive/tuned", "GEMM peak here",
                 "goal 'tuned' >= 2x faster than 'naive'", "seed (EcoRNN", "Where the milliseconds go", "GEMMs take", "Forward only", "Small batches"):
        assert text in out.stdout, text
