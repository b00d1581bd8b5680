"""Benchmark: do compare()'s verdicts survive a busy machine? (issue 23, "True on every machine")

    .venv/bin/python benchmarks/timing_under_load.py            # 3 tries of each comparison, quiet then loaded
    .venv/bin/python benchmarks/timing_under_load.py --quick    # 1 try each, COURSE_BUDGET=small (< 1 minute)

Not a unit test: it measures real time. Each comparison below has a speed-up whose *size* the course
would judge against a seed's number. It runs every comparison first as the machine is, then again while
this script keeps one extra busy process (``yes > /dev/null``) per 2 cores, and for each run asks the
verdict's question -- which of "smaller", "agrees", "larger" than a seed value is the speed-up? -- from
the comparison's interval (``judge`` at both ends, as :func:`course_lib.teaching.verdict.verdict` does).

The goal (issue 23): under that load >= 90% of verdicts conclude, and each concluded verdict is the one
the unloaded run gives. Run it on a machine nothing else is using; on a shared one the "quiet" column
is not quiet.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import course_lib  # noqa: F401  (first: it decides GPU vs CUDA simulator before numba loads)
import numpy as np

from course_lib.core import backend, timing
from course_lib.teaching.verdict import judge


def comparisons() -> dict:
    """name -> (kwargs for compare: baseline first, then the faster one)."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((300, 300))
    x = rng.standard_normal(200_000)
    out = np.empty_like(x)
    M = rng.standard_normal((256, 256)).astype(np.float32)
    V = rng.standard_normal((256, 64)).astype(np.float32)

    def gemv_loop():
        for j in range(64):
            M @ V[:, j]

    return {
        "python loop vs builtin (1 thread)": {"loop": lambda: sum(i for i in range(20_000)),
                                              "builtin": lambda: sum(range(20_000))},
        "three GEMMs vs two (BLAS threads)": {"three": lambda: A @ A @ A, "two": lambda: A @ A},
        "numpy passes vs one out= pass": {"passes": lambda: np.tanh(x * 2.0 + 1.0) * 0.5,
                                          "out": lambda: np.tanh(x, out=out)},
        "64 GEMVs vs one GEMM": {"gemv": gemv_loop, "gemm": lambda: M @ V},
    }


def decide(cmp, name: str, seed: float) -> str:
    """The verdict's outcome for the speed-up of ``name`` against ``seed``, or "no verdict"."""
    lo, hi = cmp.speedup_interval(name)
    ends = {judge(seed, lo), judge(seed, hi)}
    if cmp.noise.ok:
        return judge(seed, cmp.speedup(name))
    return ends.pop() if len(ends) == 1 else "no verdict"


def run_all(tries: int) -> dict:
    out = {}
    for label, fns in comparisons().items():
        name = list(fns)[1]
        for t in range(tries):
            cmp = timing.compare(repeat=5, warmup=1, **fns)
            out[(label, t)] = cmp, name
    return out


def busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(n)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 try each, COURSE_BUDGET=small")
    args = ap.parse_args(argv)
    if args.quick:
        os.environ["COURSE_BUDGET"] = "small"
    tries = 1 if args.quick else 3
    cores = backend.cpu_count()
    quiet = run_all(tries)
    procs = busy(max(1, cores // 2))
    try:
        loaded = run_all(tries)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    print(f"{cores} cores; loaded = {len(procs)} extra busy process(es)")
    print(f"{'comparison':<36} {'try':>3} {'quiet x (interval)':>22} {'loaded x (interval)':>22}  verdicts vs seed")
    concluded = agreed = total = 0
    for key, (qc, name) in quiet.items():
        lc, _ = loaded[key]
        q, lq = qc.speedup(name), qc.speedup_interval(name)
        seeds = (q / 3, q, q * 3)              # the quiet run should read larger / agrees / smaller
        words = []
        for seed in seeds:
            a, b = decide(qc, name, seed), decide(lc, name, seed)
            total += 1
            concluded += b != "no verdict"
            agreed += b == a or b == "no verdict"
            words.append(f"{a}->{b}")
        ll = lc.speedup_interval(name)
        print(f"{key[0]:<36} {key[1]:>3} {q:7.2f} ({lq[0]:.2f}..{lq[1]:.2f}) {lc.speedup(name):7.2f} "
              f"({ll[0]:.2f}..{ll[1]:.2f})  " + ", ".join(words))
    print(f"under load: {concluded}/{total} verdicts concluded ({100 * concluded / total:.0f}%, goal >= 90%); "
          f"{agreed}/{total} concluded as the quiet run did or abstained (goal: all)")


if __name__ == "__main__":
    main()
