"""benchmarks/gpu.py --quick runs (in the simulator here), and the stored H200 run agrees with the registry."""
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib.experiments import scan_gpu
from course_lib.teaching import claims

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_benchmark_quick(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--quick", "--json",
                          str(tmp_path / "g.json")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "scan (coalesced)" in out.stdout and "seed 001" in out.stdout
    rec = scan_gpu.record(tmp_path / "g.json")
    assert {r["kernel"] for r in rec["table"]} == set(scan_gpu.KERNELS)
    assert all(r["max_abs_err"] < 1e-4 for r in rec["table"])


def test_stored_gpu_run_is_a_real_gpu_run_checked_against_the_cpu():
    rec = scan_gpu.record()
    assert rec["machine"]["cuda_mode"] == "gpu" and "H200" in rec["machine"]["gpu"]
    assert rec["seed001"] == {cid: claims.claim(cid).value for cid in rec["seed001"]}
    assert len(rec["table"]) == 3 * 6 and all(r["max_abs_err"] < 1e-4 for r in rec["table"] + rec["sweep"])
    for r in rec["table"]:  # the derived columns follow from the measured times
        assert r["gbs"] == pytest.approx(scan_gpu.BYTES_PER_ELEMENT * r["T"] * r["N"] / r["median_s"] / 1e9)


def test_missing_record_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="path: no stored GPU run"):
        scan_gpu.record(tmp_path / "none.json")
