"""Chapter 12: the cost model's predictions against what each chapter's benchmark configuration measures here.

    python benchmarks/which.py            # every configuration, small sizes, median of 3
    python benchmarks/which.py --quick    # three configurations, median of 1, quick machine probe (< 30 s)

Prints the machine (measured numbers and labelled assumptions), the predicted-vs-measured table with the
error factor (rows off by more than 2x are marked and not advised), for each configuration whether the
advisor's first choice was the measured fastest (and why not, computed), and the seeds' numbers beside the
simulated schedules on the seeds' machines. Every seed number comes from the claims registry.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from course_lib.experiments import cost_model as cm
from course_lib.teaching.claims import claim


def run(quick: bool) -> int:
    machine = cm.Machine.measure(quick=quick)
    print(machine)
    if not machine.noise.ok:
        print(machine.noise.warning())
    configs = ("03 batching", "07 inference", "08 scan (H=1)") if quick else cm.CONFIG_NAMES
    cal = cm.calibrate(configs, machine=machine, repeat=1 if quick else 3)
    print()
    print(cal.table())
    print()
    for c in cal.configs():
        print(cal.explain(c))
    print()
    measured = cm.measured_speedups(cal)
    print(f"{'claim':<28} {'seed':>8} {'simulated':>10} {'measured here':>14}  setting")
    for cid, s in cm.seed_schedules().items():
        here = measured.get(cid)
        print(f"{cid:<28} {claim(cid).formatted():>8} {s['simulated']:>9.3g}x "
              f"{(f'{here[0]:.3g}x' if here else 'not run'):>14}  {s['setting']}")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="three configurations, one repeat")
    sys.exit(run(ap.parse_args().quick))
