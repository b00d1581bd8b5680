"""The numba matmul ladder (course_lib.algorithms.matmul) against BLAS (numpy), measured in one run.

    python benchmarks/matmul.py                 # 1000^3 float32, 1 thread and all threads
    python benchmarks/matmul.py --n 1024        # the power-of-two size (conflict misses?)
    python benchmarks/matmul.py --quick         # tiny sizes (smoke test, < 15 s)
    python benchmarks/matmul.py --skip-slow     # leave out naive and tiled (seconds each at 1000)

For each thread count (set with course_lib.core.backend.set_threads, which sets numba's and the BLAS
library's threads together) every kernel and numpy are timed *interleaved* (a, b, c, a, b, c...),
so a noisy machine slows all columns alike. "% of BLAS" is the kernel's best rate over numpy's
best rate at the same thread count, measured in the same loop.

Goal (issue 4): the best numba kernel reaches >= 50% of BLAS at 1000^3 float32 (the seed's best
Halide kernel was about 3x slower than NumPy on the whole training step).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import course_lib  # noqa: F401  (first: backend decisions)
from course_lib.core import backend, timing
from course_lib.algorithms import matmul

HEADER = (f"{'kernel':<16} {'threads':>7} {'median':>10} {'best':>10} {'GFLOP/s':>9} "
          f"{'% of BLAS':>10} {'x numpy':>8}")
SLOW = ("naive", "tiled")


def run(n: int, threads: int, names: list[str], repeat: int, slow_repeat: int, dtype: str) -> list[dict]:
    """Time every kernel in ``names`` plus numpy at one thread count; rows with times and rates."""
    backend.set_threads(threads)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)).astype(dtype)
    B = rng.standard_normal((n, n)).astype(dtype)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    fns = {name: matmul.MATMUL_KERNELS[name] for name in names}
    fns["numpy"] = lambda A, B, out: np.matmul(A, B, out=out)
    outs = {name: np.empty((n, n), dtype) for name in fns}
    calls = {name: (lambda f=f, C=outs[name]: f(A, B, out=C)) for name, f in fns.items()}
    # the fast kernels and numpy interleaved; the slow scalar ones (seconds each at 1000) fewer times
    cmp = timing.compare(repeat=repeat, warmup=1, **{k: c for k, c in calls.items() if k not in SLOW})
    times = {k: t.times for k, t in cmp.timings.items()}
    noise = cmp.noise
    for k in SLOW:
        if k in calls:
            t = timing.measure(calls[k], repeat=slow_repeat, warmup=1, number=1)
            times[k] = t.times
            noise = noise | t.noise
    if not noise.ok:
        print(noise.warning())
    flops = timing.gemm_flops(n, n, n)
    best_blas = min(times["numpy"])
    rows = []
    for name in fns:
        ts = times[name]
        err = float(np.max(np.abs(outs[name] - ref)) / np.max(np.abs(ref)))
        rows.append({"kernel": name, "threads": threads, "median": float(np.median(ts)), "best": min(ts),
                     "gflops": flops / min(ts) / 1e9, "pct_blas": 100 * best_blas / min(ts),
                     "x_numpy": min(ts) / best_blas, "rel_err": err, "reliable": noise.ok})
    return rows


def fmt(row: dict) -> str:
    return (f"{row['kernel']:<16} {row['threads']:>7} {row['median'] * 1e3:>8.1f}ms {row['best'] * 1e3:>8.1f}ms "
            f"{row['gflops']:>9.1f} {row['pct_blas']:>9.1f}% {row['x_numpy']:>7.1f}x")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="square size (default 1000, the seed's)")
    ap.add_argument("--repeat", type=int, default=5, help="timed repeats per kernel (default 5)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--threads", type=int, nargs="*", default=None,
                    help="thread counts to run (default: 1 and all cores)")
    ap.add_argument("--skip-slow", action="store_true", help="leave out the naive and tiled (scalar) kernels")
    ap.add_argument("--quick", action="store_true", help="tiny sizes for a smoke test (< 15 s)")
    args = ap.parse_args(argv)
    n, repeat = (96, 2) if args.quick else (args.n, args.repeat)
    if n < 1 or repeat < 1:
        ap.error("--n and --repeat must be >= 1")
    max_threads = backend.get_threads()
    threads = args.threads or sorted({1, max_threads})
    names = [k for k in matmul.MATMUL_KERNELS if not (args.skip_slow and k in SLOW)]
    slow_repeat = repeat if args.quick else 1
    print(f"matmul ladder: ({n}, {n}) @ ({n}, {n}) {args.dtype}, {timing.gemm_flops(n, n, n) / 1e9:.2f} GFLOP "
          f"per product; {repeat} interleaved repeats ({'naive/tiled: ' + str(slow_repeat) if 'naive' in names else 'slow kernels skipped'})")
    print(f"machine: {backend.report()['CPU']}, {backend.cpu_count()} cores, BLAS {backend.report()['BLAS']}")
    print()
    print(HEADER)
    print("-" * len(HEADER))
    best_overall = []
    for t in threads:
        rows = run(n, t, names, repeat, slow_repeat, args.dtype)
        for row in rows:
            print(fmt(row))
            if row["rel_err"] > (1e-4 if args.dtype == "float32" else 1e-10):
                print(f"   !! {row['kernel']}: relative error {row['rel_err']:.1e}")
        numba_rows = [r for r in rows if r["kernel"] != "numpy"]
        best = max(numba_rows, key=lambda r: r["gflops"])
        best_overall.append(best)
        print("-" * len(HEADER))
    print()
    for best in best_overall:
        verdict = "meets" if best["pct_blas"] >= 50 else "misses"
        if not best["reliable"]:
            verdict = "UNRELIABLE run (see the warning above), no verdict on"
        print(f"best numba kernel on {best['threads']} thread(s): {best['kernel']} at "
              f"{best['pct_blas']:.0f}% of BLAS ({best['gflops']:.1f} GFLOP/s) -- {verdict} the goal (>= 50%)")
    print("seed: the best Halide RNN step was about 3x slower than NumPy (Fig. 8, 61-core Xeon Phi)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
