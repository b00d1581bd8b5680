"""Smoke test: benchmarks/halide.py --quick runs and prints its table."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib.models import halide_rnn as H

ROOT = Path(__file__).resolve().parents[2]


def test_halide_benchmark_quick():
    env = dict(os.environ, COURSE_BUDGET="small")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "halide.py"), "--quick", "--repeat", "1"],
                          capture_output=True, text=True, timeout=300, cwd=str(ROOT), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    if not H.available()[0]:
        pytest.skip("halide unavailable: " + out)
    assert "GFLOP/s" in out and "% of peak" in out and "x numpy" in out and "x fast_rnn" in out and "compile s" in out
    for row in list(H.SCHEDULES) + ["numpy (rnn reference)", "fast_rnn.train_step"]:
        assert row in out
    assert "agree with the reference" in out and ": yes)" in out
    assert "GEMM peak measured in this run" in out and "best schedule:" in out
