"""Smoke test: benchmarks/lstm.py --quick runs and prints its sections and goal lines (no timed assertions)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_lstm_benchmark_quick(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "lstm.py"), "--quick", "--record", str(tmp_path / "rec")],
                         capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env=dict(os.environ, COURSE_BUDGET="small", COURSE_CACHE_DIR=str(tmp_path)))
    assert out.returncode == 0, out.stderr[-2000:]
    rec = __import__("json").loads((tmp_path / "rec" / "lstm_providers.json").read_text())
    assert len(rec["passes"]) == 4 and all(p["tuned"].split("@")[0] in p["table_ms"] or p["tuned"] in p["table_ms"]
                                           for p in rec["passes"])
    for text in ("machine:", "GEMM peak here", "Where the milliseconds go", "recurrent GEMMs", "of this shape's",
                 "GEMMs take", "largest phase", "one step's recurrent product", "persistent dot products", "tuned is",
                 "torch/ours", "naive/tuned",
                 "goal 'tuned' >= 2x faster than the per-gate 'naive' loop", "bound: the per-gate loop takes",
                 "largest phase of forward+backward",
                 "GEMM provider numpy:", "1b. The pass's products on every GEMM provider", "floor numpy",
                 "judged against the best provider's bound", "bound with numpy: the per-gate loop takes",
                 "seed (EcoRNN"):
        assert text in out.stdout, text
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    for text in ("oneDNN", "torch.nn.LSTM", "in a process of its own", "goal forward at least as fast as torch.nn.LSTM",
                 "bound: torch.nn.LSTM takes", "bound with numpy: torch.nn.LSTM takes",
                 "goal forward+backward at least as fast as torch.nn.LSTM"):
        assert text in out.stdout, text
