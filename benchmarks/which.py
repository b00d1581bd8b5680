"""Chapter 12: the cost model's three tables, in one process.

    python benchmarks/which.py            # every configuration, small sizes, median of 3; 8 fresh problems
    python benchmarks/which.py --quick    # three configurations, median of 1, quick machine probe, 4 problems
    python benchmarks/which.py --record benchmarks/results/<machine>   # ... and keep this machine's run

1. **Calibration**: the machine's constants, each from a micro-benchmark (GEMM at the peak and at small
   shapes, GEMV, streaming, a numpy call, a thread hand-off, a numba region, MPI ping-pong) or from a tiny and
   a mid-sized run of the course's own code per model kind (the price of a counted call, the cell kernel's
   rate, the sequential and the lane scan's step). One-thread constants by CPU clock; the hand-off and the
   region as a low quantile of many single runs (a constant measured busy says so).
2. **Hold-out**: each chapter's benchmark configuration, predicted from those constants alone (none was
   fitted on them) and measured -- one-thread methods by CPU clock, the others by wall clock -- with the error
   factor and its direction (the advisor's error bars) and, per configuration, whether the advisor's first
   choice was the measured fastest (computed reasons).
3. **The advisor on fresh problems** (``--seed``): predicted vs measured for every runnable method and the
   hit rate (first trusted choice the measured fastest or within 1.25x of it).

Then the seeds' numbers beside the simulated schedules on the seeds' machines and the like-for-like
quantities measured here. Every seed number comes from the claims registry.

``--record DIR`` keeps the run: ``DIR/machine.json`` (the constants, ``Machine.load`` reads them back),
``DIR/record.json`` (the hold-out and fresh-problem tables, the load, the commit, notes) and ``DIR/which.txt``
(what was printed). ``tests/experiments/test_cost_model_records.py`` replays the model and the advisor on every
record under ``benchmarks/results/``.
"""
from __future__ import annotations

import argparse
import datetime
import io
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from course_lib.experiments import cost_model as cm
from course_lib.experiments.cost_model import fresh as cm_fresh
from course_lib.teaching.claims import claim


def _load() -> str:
    try:
        return "load average " + " / ".join(f"{v:.2f}" for v in os.getloadavg()) + f" on {os.cpu_count()} CPUs"
    except OSError:
        return "load average unknown"


class _Tee(io.StringIO):
    """Everything printed, also kept (for the record's which.txt)."""

    def __init__(self, out):
        super().__init__()
        self.out = out

    def write(self, text):
        self.out.write(text)
        return super().write(text)


def _facts() -> dict:
    """The run's circumstances, for a record: when, where, which commit, how loaded."""
    facts = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
             "cpus": os.cpu_count(), "command": " ".join(["python benchmarks/which.py", *sys.argv[1:]])}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            facts["cpu"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "unknown")
    except OSError:
        facts["cpu"] = "unknown"
    try:
        facts["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                         cwd=os.path.dirname(os.path.abspath(__file__)), timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        facts["commit"] = "unknown"
    return facts


def _load_notes(start, end, cpus) -> list[str]:
    """Sentences on the load, computed: whether other programs shared the cores while this ran."""
    if start is None or end is None:
        return ["the load average could not be read"]
    worst = max(start[0], end[0])
    if worst < 0.5:
        return [f"quiet: 1-minute load average {start[0]:.2f} at the start, {end[0]:.2f} at the end"]
    return [f"shared: 1-minute load average {start[0]:.2f} at the start and {end[0]:.2f} at the end on {cpus} CPUs "
            "-- other programs used the cores while this ran, so wall-clock rows may be slower than a quiet run's "
            "(one-thread rows are timed by CPU clock)"]


def _loadavg():
    try:
        return tuple(os.getloadavg())
    except OSError:
        return None


def run(quick: bool, seed: int = 0, record: str | None = None, notes=()) -> int:
    if record is None:
        return _run(quick, seed)[0]
    start = _loadavg()
    tee, real = _Tee(sys.stdout), sys.stdout
    sys.stdout = tee
    try:
        rc, machine, cal, chk = _run(quick, seed)
    finally:
        sys.stdout = real
    end = _loadavg()
    facts = _facts()
    path = cm_fresh.save_record(record, machine, cal, chk, notes=[*_load_notes(start, end, facts["cpus"]), *notes],
                                seed=seed, quick=quick, load_start=start, load_end=end, **facts)
    with open(os.path.join(record, "which.txt"), "w", encoding="utf-8") as f:
        f.write(tee.getvalue())
    print(f"recorded: {path}, {os.path.join(record, 'machine.json')}, {os.path.join(record, 'which.txt')}")
    return rc


def _run(quick: bool, seed: int = 0):
    print(f"start: {_load()}")
    machine = cm.Machine.measure(quick=quick)
    print("== 1. calibration: the machine's constants (micro-benchmarks; no chapter configuration used)")
    print(machine)
    if not machine.noise.ok:
        print(machine.noise.warning())
    configs = ("03 batching", "07 inference", "08 scan (H=1)") if quick else cm.CONFIG_NAMES
    cal = cm.calibrate(configs, machine=machine, repeat=1 if quick else 3)
    print()
    print("== 2. hold-out: the chapter configurations, predicted from the constants above and measured")
    print(cal.table())
    errs = [r.error for r in cal.rows]
    print(f"hold-out: {sum(e <= 2.0 for e in errs)} of {len(errs)} rows within 2x, "
          f"{sum(e <= 1.5 for e in errs)} within 1.5x; median error {sorted(errs)[len(errs) // 2]:.2f}x")
    for c in cal.configs():
        print(cal.explain(c))
    print()
    print(f"== 3. the advisor on {4 if quick else 8} fresh problems (seed {seed})")
    chk = cm.check_advisor(cm.fresh_problems(4 if quick else 8, seed=seed), machine, calibration=cal.errors(),
                           repeat=1 if quick else 3)
    print(chk)
    print()
    measured = cm.measured_speedups(cal)
    print(f"{'claim':<28} {'seed':>8} {'simulated':>10} {'measured here':>14}  setting")
    for cid, where in cm.SEED_ELSEWHERE.items():
        print(f"{cid}: {where}")
    for cid, s in cm.seed_schedules().items():
        here = measured.get(cid)
        print(f"{cid:<28} {claim(cid).formatted():>8} {s['simulated']:>9.3g}x "
              f"{(f'{here[0]:.3g}x' if here else 'not run'):>14}  {s['setting']}")
    print(f"end: {_load()}")
    return 0, machine, cal, chk


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="three configurations, one repeat, four fresh problems")
    ap.add_argument("--seed", type=int, default=0, help="which fresh problems (default 0)")
    ap.add_argument("--record", metavar="DIR", help="keep this run: DIR/machine.json, DIR/record.json, DIR/which.txt")
    ap.add_argument("--note", action="append", default=[], help="a sentence for the record's notes (repeatable)")
    args = ap.parse_args()
    sys.exit(run(args.quick, args.seed, args.record, args.note))
