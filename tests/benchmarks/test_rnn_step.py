"""Smoke test: benchmarks/rnn_step.py --quick runs and prints its table."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_rnn_step_benchmark_quick():
    env = dict(os.environ, COURSE_BUDGET="small")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "rnn_step.py"), "--quick", "--repeat", "2"],
                          capture_output=True, text=True, timeout=300, cwd=str(ROOT), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "step" in out and "GFLOP/s" in out and "% of peak" in out and "x fast" in out
    for column in ("fast_rnn.train_step", "rnn (bptt_linear+sgd)", "careful numpy"):
        assert column in out
    assert "first-step losses agree" in out and "GEMM rates measured in this run" in out
    # issue 42: the peak is the best of several square sizes, the share comes with its pairs' interval,
    # and the BLAS that ran is named
    assert "gemm 128^3" in out and "gemm 256^3" in out and "GEMM peak = the best of them" in out
    assert "pair by pair" in out and "interval" in out and "threadpoolctl" in out


def test_rnn_step_benchmark_quick_with_row_groups():
    # the step with its batch split into row groups beside the same step on one group, pair by pair
    env = dict(os.environ, COURSE_BUDGET="small")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "rnn_step.py"), "--quick", "--repeat", "2",
                           "--groups", "2"], capture_output=True, text=True, timeout=300, cwd=str(ROOT), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "the split column has 2 row group(s) here (--groups)" in out
    assert "fast, row groups" in out and "the same step on 2 row groups / best GEMM rate, pair by pair" in out
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "rnn_step.py"), "--quick", "--groups", "0"],
                         capture_output=True, text=True, timeout=300, cwd=str(ROOT), env=env)
    assert bad.returncode != 0 and "--groups" in bad.stderr
