import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_benchmark_quick_prints_table():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "deer.py"), "--quick"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "meas.deer" in out.stdout and "P=1024" in out.stdout and "68.189×" in out.stdout


def test_benchmark_quick_prints_the_family_table():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "deer.py"), "--quick"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    fam = out.stdout.split("the fixed-point family")[1]
    assert "picard" in fam and "jacobi" in fam and "diag_gru" in fam
    assert fam.count(" it ") >= 8  # newton, quasi and jacobi converge on both cells at both T
