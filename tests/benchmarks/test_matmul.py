"""Smoke test: benchmarks/matmul.py --quick runs and prints its table (no timed assertions)."""
import os
import re
import subprocess
import sys

import pytest

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


def test_matmul_benchmark_providers_table_and_record(tmp_path):
    """Every GEMM provider here gets a row per course shape, beside the peak and the kernels; --record keeps it."""
    import json

    sys.path.insert(0, ROOT)
    from course_lib.algorithms import gemm

    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "matmul.py"), "--providers-only", "--quick",
                          "--record", str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "GEMM providers at the course's shapes" in out.stdout and "peak here" in out.stdout
    assert "best GEMM rate in this run: " in out.stdout
    for p in gemm.providers():
        assert f"{p} GF/s" in out.stdout and "kernels" in out.stdout
    for p in gemm.absent():
        assert re.search(rf"^  {p} +absent -- ", out.stdout, flags=re.M), out.stdout   # padded to the name column
    for name in ("input projection X W_ih^T", "recurrent step h W_hh^T", "chunked form", "square 96"):
        assert name in out.stdout
    rec = json.loads((tmp_path / "matmul_providers.json").read_text())
    assert set(rec["providers"]) == set(gemm.providers()) and len(rec["rows"]) == 8
    assert all(set(r["gflops_best"]) == set(gemm.providers()) for r in rec["rows"])
    best_row = max(max(r["gflops_best"].values()) for r in rec["rows"])
    assert rec["machine"]["best_gflops"] == pytest.approx(max(rec["machine"]["peak_gflops"], best_row))
