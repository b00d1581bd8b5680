import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_benchmark_quick_prints_table_and_records_it(tmp_path):
    rec = tmp_path / "this-machine"
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "which.py"), "--quick", "--record", str(rec),
                          "--note", "a test run"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "predicted" in out.stdout and "measured" in out.stdout and "error" in out.stdout
    assert "03 batching" in out.stdout and "GEMM peak" in out.stdout
    for head in ("== 1. calibration", "== 2. hold-out", "== 3. the advisor on 4 fresh problems"):
        assert head in out.stdout
    assert "hold-out:" in out.stdout and "fresh problems; advised something on" in out.stdout
    assert "39×" in out.stdout and "50×" in out.stdout and "6.6×" in out.stdout  # from the claims registry
    # the record: the constants, the tables, the printout -- and the replay reads them back
    from course_lib.experiments.cost_model import fresh
    machine, record = fresh.load_record(rec)
    assert (rec / "which.txt").read_text() in out.stdout and "a test run" in record["notes"]
    assert len(record["fresh"]) == 4 and {r["config"] for r in record["holdout"]["rows"]} == \
        {"03 batching", "07 inference", "08 scan (H=1)"}
    assert any(n.startswith(("quiet:", "shared:")) for n in record["notes"])
    cal, check = fresh.replay(rec)
    assert len(check.results) == 4 and [r.measured for r in check.results] == [f["measured"] for f in record["fresh"]]
