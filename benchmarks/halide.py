"""The seed's RNN training step in Halide under every schedule, measured in one run.

    python benchmarks/halide.py            # seed configuration: B=1000, nx=nh=ny=1000, T=10, float32
    python benchmarks/halide.py --quick    # tiny sizes (smoke test, a few seconds)
    python benchmarks/halide.py --batch 64 # the seed's n and T with a smaller batch

Rows: every schedule of ``course_lib.models.halide_rnn.SCHEDULES`` (the eight tiling x SIMD x
parallel combinations of seed Fig. 10, the specialised element-wise schedule of Fig. 13, the
single-expression definitions of §4.9, and JIT-per-call of Fig. 14), then the numpy reference step
(``rnn.bptt_linear`` + ``sgd_step``, BLAS) and ``fast_rnn.train_step``. All are timed interleaved
with a plain 1000^3 GEMM, whose best rate is the peak "% of peak" refers to. GFLOP/s counts the
products' FLOPs of one step (``halide_rnn.step_flops``). "compile s" is the time to build and
JIT-compile the schedule's five pipelines (paid once, except by jit_per_call, which pays it on
every step and so includes it in its step time).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
# this file is named halide.py: keep its folder off the path so `import halide` finds the package
sys.path[:] = [q for q in sys.path if os.path.abspath(q or ".") != _HERE]
sys.path.insert(0, os.path.join(_HERE, ".."))

import course_lib  # noqa: E402,F401  (first: backend decisions)
from course_lib.models import halide_rnn as H  # noqa: E402
from course_lib.core import backend, timing  # noqa: E402
from course_lib.models import fast_rnn, rnn  # noqa: E402

HEADER = (f"{'step':<22} {'median':>10} {'best':>10} {'GFLOP/s':>8} {'% of peak':>9} {'x numpy':>8} "
          f"{'x fast_rnn':>10} {'compile s':>9}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test in a few seconds")
    ap.add_argument("--batch", type=int, default=None, help="batch size B (default: the seed's 1000)")
    ap.add_argument("--repeat", type=int, default=None, help="timed repeats per row (default 2)")
    ap.add_argument("--threads", type=int, default=None, help="threads for BLAS and numba (default: all cores)")
    args = ap.parse_args(argv)
    ok, why = H.available()
    if not ok:
        print(f"Halide is not available: {why}")
        print("benchmark skipped")
        return 0
    if args.quick:
        T, B, n, repeat = 3, 4, 64, 2
    else:
        T, B, n, repeat = 10, 1000, 1000, 2
    B = args.batch or B
    repeat = args.repeat or repeat
    threads = backend.set_threads(args.threads or backend.max_threads())
    p = rnn.init_params(n, n, n, seed=0)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (T, B, n)).astype(np.float32)
    Y = rng.uniform(-1, 1, (T, B, n)).astype(np.float32)
    flops = H.step_flops(T, B, n, n, n)
    print(f"RNN training step in Halide, {'quick' if args.quick else 'seed'} configuration: T={T}, B={B}, "
          f"nx=nh=ny={n}, float32, {flops / 1e9:.2f} GFLOP of products per step; {threads} thread(s); {why}")
    print(backend.report()["CPU"], "|", backend.report()["BLAS"])

    compile_s = {}
    H.clear_cache()
    for name in H.SCHEDULES:  # the first compile of each schedule is the one the timed rows reuse
        t0 = time.perf_counter()
        H.compiled_step(name)
        compile_s[name] = time.perf_counter() - t0
    ref_loss = rnn.loss(rnn.forward(p, X).Yhat, Y)
    worst = max(abs(H.train_step(p, X, Y, 0.0, schedule=name)[1] - ref_loss) / abs(ref_loss)
                for name in H.SCHEDULES if name != "jit_per_call")

    ws = fast_rnn.make_workspace(T, B, n, n, n)
    fns = {name: (lambda name=name: H.train_step(p, X, Y, 0.0, schedule=name)) for name in H.SCHEDULES}
    fns["numpy (rnn reference)"] = lambda: rnn.sgd_step(p, rnn.bptt_linear(p, X, Y), 0.0)
    fns["fast_rnn.train_step"] = lambda: fast_rnn.train_step(p, X, Y, 0.0, workspace=ws)
    A = rng.standard_normal((1000, 1000)).astype(np.float32)
    Bm = rng.standard_normal((1000, 1000)).astype(np.float32)
    C = np.empty_like(A)
    single: list[float] = []

    def gemm():
        for _ in range(3):
            t = time.perf_counter()
            np.matmul(A, Bm, out=C)
            single.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    cmp = timing.compare(repeat=repeat, warmup=1 if args.quick else 0, **fns, gemm_peak=gemm)
    wall = time.perf_counter() - t0
    peak = timing.gemm_flops(1000, 1000, 1000) / min(single) / 1e9
    print(f"GEMM peak measured in this run (1000^3 float32, best single product of {len(single)}): {peak:.1f} GFLOP/s")
    print()
    print(HEADER)
    t_np = cmp.timings["numpy (rnn reference)"].min
    t_fast = cmp.timings["fast_rnn.train_step"].min
    for name in fns:
        t = cmp.timings[name]
        rate = flops / t.min / 1e9
        c = f"{compile_s[name]:>9.2f}" if name in compile_s else f"{'-':>9}"
        print(f"{name:<22} {t.median * 1e3:>8.1f}ms {t.min * 1e3:>8.1f}ms {rate:>8.1f} {100 * rate / peak:>8.1f}% "
              f"{t.min / t_np:>7.2f}x {t.min / t_fast:>9.2f}x {c}")
    print()
    hal = [k for k in H.SCHEDULES]
    best = min(hal, key=lambda k: cmp.timings[k].min)
    print(f"losses of every schedule agree with the reference (max relative difference {worst:.1e} <= 1e-5: "
          f"{'yes' if worst <= 1e-5 else 'NO'})")
    print(f"best schedule: {best}, {cmp.timings['serial'].min / cmp.timings[best].min:.1f}x over serial Halide on "
          f"{backend.cpu_count()} core(s) (seed: ~39x on a 61-core Xeon Phi); "
          f"{cmp.timings[best].min / t_np:.2f}x the numpy step's time (seed Fig. 8: ~3x slower than NumPy)")
    print(f"compile once vs JIT per call: {cmp.timings['jit_per_call'].min / cmp.timings['tiled+simd+parallel'].min:.2f}x "
          f"(seed Fig. 14: AOT ~3x faster than JIT)")
    print(f"(measured in {wall:.1f} s; on a shared or busy machine rerun before trusting a ratio)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
