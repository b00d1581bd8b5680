"""BPTT: the O(T²) WildML double loop vs the O(T) reverse sweep, measured in one run.

    python benchmarks/bptt.py            # T in {10, 25, 50, 100}, B = 64, n = 256
    python benchmarks/bptt.py --quick    # tiny sizes, a few seconds
    python benchmarks/bptt.py --threads 0   # let BLAS use all its threads (default: 1 thread)

Prints, per T, the time of one gradient (forward pass included) with each algorithm, the
measured ratio, and the ratio of their GEMM FLOPs (``rnn.bptt_flops``); plus the GFLOP/s of
the sweep against this machine's measured GEMM peak. Goal: the measured ratio grows like T and
tracks the FLOP ratio (seed 000 §3.1: O(N²) -> O(N)).
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from course_lib.models import rnn
from course_lib.core import backend, timing


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (< 15 s)")
    ap.add_argument("--B", type=int, default=None, help="batch size (default 64; 4 with --quick)")
    ap.add_argument("--n", type=int, default=None, help="nx = nh = ny (default 256; 16 with --quick)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS threads (default 1: compares the algorithms, not the threading; 0 = BLAS's default)")
    args = ap.parse_args(argv)
    if args.threads:
        with backend.blas_threads(args.threads):
            return run(args)
    return run(args)


def run(args) -> int:
    B = args.B or (4 if args.quick else 64)
    n = args.n or (16 if args.quick else 256)
    Ts = (10, 25, 50) if args.quick else (10, 25, 50, 100)
    peak = timing.peak_gflops("float32")
    threads = "all BLAS threads" if not args.threads else f"BLAS limited to {args.threads} thread(s)"
    print(f"BPTT benchmark: B={B}, nx=nh=ny={n}, float32, {threads}; GEMM peak measured now: {peak:.1f} GFLOP/s")
    print("seed 000 §3.1: WildML's BPTT is O(N^2) in the time steps, theirs O(N) (no timings given)")
    header = f"{'T':>5} {'linear':>11} {'quadratic':>11} {'ratio':>8} {'FLOP ratio':>11} {'linear GFLOP/s':>15} {'% peak':>7}"
    print(header)
    rng = np.random.default_rng(0)
    params = rnn.init_params(n, n, n, seed=0)
    X = rng.uniform(-1, 1, (max(Ts), B, n)).astype(np.float32)
    Y = rng.uniform(-1, 1, (max(Ts), B, n)).astype(np.float32)
    for T in Ts:
        c = timing.compare(linear=lambda: rnn.bptt_linear(params, X[:T], Y[:T]),
                           quadratic=lambda: rnn.bptt_quadratic(params, X[:T], Y[:T]),
                           repeat=args.repeat, warmup=1)
        lin, quad = c.timings["linear"].min, c.timings["quadratic"].min
        fl = rnn.bptt_flops(T, B, n, n, n, "linear")
        fq = rnn.bptt_flops(T, B, n, n, n, "quadratic")
        rate = fl / lin / 1e9
        print(f"{T:>5} {lin * 1e3:>9.2f}ms {quad * 1e3:>9.2f}ms {quad / lin:>7.1f}x {fq / fl:>10.1f}x "
              f"{rate:>15.1f} {100 * rate / peak:>6.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
