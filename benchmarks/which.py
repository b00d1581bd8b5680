"""Chapter 12: the cost model's three tables, in one process.

    python benchmarks/which.py            # every configuration, small sizes, median of 3; 8 fresh problems
    python benchmarks/which.py --quick    # three configurations, median of 1, quick machine probe, 4 problems

1. **Calibration**: the machine's constants, each from a micro-benchmark (GEMM at the peak and at small
   shapes, GEMV, streaming, a numpy call, a thread hand-off, a numba region, MPI ping-pong) or from a tiny and
   a mid-sized run of the course's own code per model kind (the price of a counted call, the cell kernel's
   rate, the sequential and the lane scan's step). One-thread constants by CPU clock; the hand-off and the
   region as a low quantile of many single runs (a constant measured busy says so).
2. **Hold-out**: each chapter's benchmark configuration, predicted from those constants alone (none was
   fitted on them) and measured -- one-thread methods by CPU clock, the others by wall clock -- with the error factor (rows off by more than 2x are not advised) and, per
   configuration, whether the advisor's first choice was the measured fastest (computed reasons).
3. **The advisor on fresh problems** (``--seed``): predicted vs measured for every runnable method and the
   hit rate (first trusted choice the measured fastest or within 1.25x of it).

Then the seeds' numbers beside the simulated schedules on the seeds' machines and the like-for-like
quantities measured here. Every seed number comes from the claims registry.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from course_lib.experiments import cost_model as cm
from course_lib.teaching.claims import claim


def _load() -> str:
    try:
        return "load average " + " / ".join(f"{v:.2f}" for v in os.getloadavg()) + f" on {os.cpu_count()} CPUs"
    except OSError:
        return "load average unknown"


def run(quick: bool, seed: int = 0) -> int:
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
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="three configurations, one repeat, four fresh problems")
    ap.add_argument("--seed", type=int, default=0, help="which fresh problems (default 0)")
    args = ap.parse_args()
    sys.exit(run(args.quick, args.seed))
