"""Smoke test: benchmarks/matmul.py --quick runs and prints its table (no timed assertions)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_matmul_benchmark_quick_prints_table():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "matmul.py"), "--quick"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "kernel           threads     median       best   GFLOP/s  % of BLAS  x numpy" in out.stdout
    for name in ("naive", "ikj", "tiled_simd", "parallel_tiled", "numpy"):
        assert f"\n{name} " in out.stdout
    assert "best numba kernel on 1 thread(s)" in out.stdout
    assert "!!" not in out.stdout  # every kernel's result matched numpy


def test_matmul_benchmark_rejects_bad_size():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "matmul.py"), "--n", "0"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 2 and "--n and --repeat must be >= 1" in out.stderr
