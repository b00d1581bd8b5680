"""The numba matmul ladder (course_lib.algorithms.matmul) against BLAS (numpy), measured in one run.

    python benchmarks/matmul.py                 # 1000^3 float32, 1 thread and all threads
    python benchmarks/matmul.py --n 1024        # the power-of-two size (conflict misses?)
    python benchmarks/matmul.py --quick         # tiny sizes (smoke test, < 15 s)
    python benchmarks/matmul.py --skip-slow     # leave out naive and tiled (seconds each at 1000)
    python benchmarks/matmul.py --providers-only                       # only the GEMM providers' table
    python benchmarks/matmul.py --providers-only --record benchmarks/results/<machine>   # ... and keep it

The GEMM providers (course_lib.algorithms.gemm: numpy's BLAS; oneMKL and BLIS with `pip install -e '.[fast]'`)
are then timed interleaved at the course's shapes (experiments.gemm_providers.course_products: an LSTM training
pass at (B, H, nx, T) = (64, 512, 512, 100), the chunked form's 64 x 64 tiles, squares 1000 and 4000): GFLOP/s
of each, the speed-up over numpy with its 95% interval, beside the machine's measured peak (timing.peak_gflops,
numpy at 1024^3) and the best rate any provider reached in the run (a larger square can beat 1024^3) and the kernel family each library picked (threadpoolctl, the libraries' own queries).
Where OPENBLAS_CORETYPE pins OpenBLAS below the CPU's vectors, run it without:
`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/matmul.py --providers-only`.

For each thread count (set with course_lib.core.backend.set_threads, which sets numba's and the BLAS
library's threads together) every kernel and numpy are timed *interleaved* (a, b, c, a, b, c...),
so a noisy machine slows all columns alike. "% of BLAS" is the kernel's best rate over numpy's
best rate at the same thread count, measured in the same loop.

Goal (issue 4): the best numba kernel reaches >= 50% of BLAS at 1000^3 float32 (the seed's best
Halide kernel was about 3x slower than NumPy on the whole training step).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import course_lib  # noqa: F401  (first: backend decisions)
from course_lib.core import backend, timing
from course_lib.algorithms import gemm, matmul
from course_lib.experiments import gemm_providers

_START_LOAD = os.getloadavg()[0]     # kept in a --record beside the load at the end
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


def providers_table(repeat: int, squares, record: str | None, lstm_shape=(64, 512, 512, 100)) -> list[dict]:
    """The providers at the course's shapes: one interleaved comparison per product; printed, and kept as
    ``record/matmul_providers.json`` when asked."""
    provs = gemm.providers()
    peak = timing.peak_gflops("float32")
    print(f"\nGEMM providers at the course's shapes, float32, {backend.get_threads()} thread(s); "
          f"peak here {peak:.0f} GFLOP/s (numpy, 1024^3); machine: {backend.cpu_model()}, {backend.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    info = {p: gemm.provider_info(p) for p in provs}
    for p in provs:
        print(f"  {p:<6} {info[p]['version']}, kernels {info[p]['kernel']}, {info[p]['threads']} thread(s): "
              f"{info[p]['library']}")
    for p, why in gemm.absent().items():
        print(f"  {p:<6} absent -- {why}")
    head = f"{'product':<36} {'M x K x N':>18} " + " ".join(f"{p + ' GF/s':>11}" for p in provs) + \
        "  " + " ".join(f"{p + ' / numpy':>22}" for p in provs if p != "numpy")
    print(head)
    print("-" * len(head))
    rows = gemm_providers.rates(gemm_providers.course_products(*lstm_shape, squares=squares), provs, repeat=repeat)
    for r in rows:
        p = r["product"]
        line = f"{p['name']:<36} {p['M']:>6}x{p['K']}x{p['N']:<6} " + \
            " ".join(f"{r['best'][v]:>11.1f}" for v in provs) + "  "
        line += " ".join(f"{r['speedup'][v]:>6.2f}x ({r['interval'][v][0]:.2f}..{r['interval'][v][1]:.2f})"
                         for v in provs if v != "numpy")
        print(line + ("" if r["noise"].ok else "  [noisy]"))
    won = {r["product"]["name"]: max(provs, key=lambda v: r["best"][v]) for r in rows}
    print("fastest (best rate): " + "; ".join(f"{k}: {v}" for k, v in won.items()))
    top = max(rows, key=lambda r: r["best"][won[r["product"]["name"]]], default=None)
    best = max(peak, top["best"][won[top["product"]["name"]]] if top else peak)
    where = "numpy at 1024^3" if best == peak else f"{won[top['product']['name']]}, {top['product']['name']}"
    print(f"best GEMM rate in this run: {best:.0f} GFLOP/s ({where}); the peak line above is numpy at 1024^3 "
          f"({100 * peak / best:.0f}% of it)")
    if record:
        os.makedirs(record, exist_ok=True)
        path = os.path.join(record, "matmul_providers.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"format": "benchmarks/matmul.py providers/1", "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
                       "machine": {"cpu": backend.cpu_model(), "cpus": os.cpu_count(), "threads": backend.get_threads(),
                                   "peak_gflops": peak, "best_gflops": best, "load_1min": os.getloadavg()[0], "load_1min_start": _START_LOAD},
                       "providers": info, "absent": gemm.absent(),
                       "rows": [{"product": r["product"], "gflops_best": r["best"], "gflops_median": r["median"],
                                 "speedup": r["speedup"], "interval": r["interval"], "reliable": r["noise"].ok}
                                for r in rows]}, f, indent=1)
        print(f"recorded: {path}")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="square size (default 1000, the seed's)")
    ap.add_argument("--repeat", type=int, default=5, help="timed repeats per kernel (default 5)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--threads", type=int, nargs="*", default=None,
                    help="thread counts to run (default: 1 and all cores)")
    ap.add_argument("--skip-slow", action="store_true", help="leave out the naive and tiled (scalar) kernels")
    ap.add_argument("--quick", action="store_true", help="tiny sizes for a smoke test (< 15 s)")
    ap.add_argument("--providers-only", action="store_true", help="only the GEMM providers' table")
    ap.add_argument("--record", metavar="DIR", help="keep the providers' table: DIR/matmul_providers.json")
    args = ap.parse_args(argv)
    squares, lstm_shape = ((96,), (8, 32, 32, 10)) if args.quick else ((1000, 4000), (64, 512, 512, 100))
    if args.providers_only:
        providers_table(args.repeat if not args.quick else 2, squares, args.record, lstm_shape)
        return 0
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
    providers_table(repeat if not args.quick else 2, squares, args.record, lstm_shape)
    return 0


if __name__ == "__main__":
    sys.exit(main())
