"""One RNN training step at the seed's size, five ways, measured in one run.

    python benchmarks/rnn_step.py            # seed configuration: B=1000, nx=nh=ny=1000, T=10, float32
    python benchmarks/rnn_step.py --quick    # tiny sizes (smoke test, < 15 s)

Columns: course_lib.models.fast_rnn.train_step; course_lib.models.rnn (bptt_linear + sgd_step, the reference);
a careful plain-numpy step (one GEMM per phase, preallocated buffers, numpy ufuncs with out=);
and, when torch imports, a torch step with explicit ops and a torch.nn.RNN step (autograd).
Every step does the same maths (checked below: same loss). Timings are interleaved (a, b, c, a,
b, c, ...) together with a plain 1000^3 GEMM, whose best rate is the peak the table's
"% of peak" refers to. GFLOP/s counts the GEMM FLOPs of one step (fast_rnn.step_flops).

Goal (issue 4): the fast step beats every other column and reaches >= 88% of the GEMM peak.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import course_lib  # noqa: F401  (first: backend decisions)
from course_lib.core import backend, timing
from course_lib.models import fast_rnn, rnn
from course_lib.experiments.profile import torch_steps

HEADER = f"{'step':<26} {'median':>10} {'best':>10} {'GFLOP/s':>9} {'% of peak':>10} {'x fast':>8}"


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test in a few seconds")
    ap.add_argument("--threads", type=int, default=None, help="threads for BLAS, numba and torch (default: all cores)")
    ap.add_argument("--repeat", type=int, default=None, help="timed repeats per column (default 5; 3 with --quick)")
    args = ap.parse_args(argv)
    if args.quick:
        T, B, n, repeat = 4, 64, 128, 3
    else:
        T, B, n, repeat = 10, 1000, 1000, 5
    repeat = args.repeat or repeat
    threads = backend.set_threads(args.threads or min(backend.cpu_count(), backend.get_threads() or 1,
                                                      backend.cpu_count()))
    lr = 1e-6
    p0 = rnn.init_params(n, n, n, seed=0)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (T, B, n)).astype(np.float32)
    Y = rng.uniform(-1, 1, (T, B, n)).astype(np.float32)
    flops = fast_rnn.step_flops(T, B, n, n, n)

    print(f"RNN training step, {'quick' if args.quick else 'seed'} configuration: T={T}, B={B}, nx=nh=ny={n}, float32, "
          f"{flops / 1e9:.1f} GFLOP of GEMMs per step; {threads} thread(s)")
    print(backend.report()["CPU"], "|", backend.report()["BLAS"])

    # losses of the first step must agree (same maths)
    losses = {"fast": fast_rnn.train_step(p0, X, Y, lr)[1],
              "reference": rnn.loss(rnn.forward(p0, X).Yhat, Y),
              "numpy": fast_rnn.NumpyStep(T, B, n, n, n)(p0.copy(), X, Y, lr)[1]}

    ws = fast_rnn.make_workspace(T, B, n, n, n)
    ws_par = fast_rnn.make_workspace(T, B, n, n, n, method="prange")
    pf, pp, pn, pr = p0.copy(), p0.copy(), p0.copy(), [p0.copy()]
    np_step = fast_rnn.NumpyStep(T, B, n, n, n)

    def ref_step():
        pr[0] = rnn.sgd_step(pr[0], rnn.bptt_linear(pr[0], X, Y), lr)

    fns = {
        "fast_rnn.train_step": lambda: fast_rnn.train_step(pf, X, Y, lr, workspace=ws, inplace=True),
        "fast, prange elementwise": lambda: fast_rnn.train_step(pp, X, Y, lr, workspace=ws_par, inplace=True),
        "rnn (bptt_linear+sgd)": ref_step,
        "careful numpy": lambda: np_step(pn, X, Y, lr),
    }
    ts = torch_steps(p0, X, Y, lr, threads)
    if ts is not None:
        fns.update(ts)
        losses["torch explicit ops"] = None
    else:
        print("(torch is not installed: torch columns skipped; pip install -e '.[bench]')")
    A = rng.standard_normal((1000, 1000)).astype(np.float32)
    Bm = rng.standard_normal((1000, 1000)).astype(np.float32)
    C = np.empty_like(A)
    gemm_reps = max(1, int(0.2 * flops / timing.gemm_flops(1000, 1000, 1000)))

    def gemm():
        for _ in range(gemm_reps):
            np.matmul(A, Bm, out=C)

    keys = list(fns)
    t0 = time.perf_counter()
    cmp = timing.compare(repeat=repeat, warmup=1, **{k: fns[k] for k in keys}, gemm_peak=gemm)
    wall = time.perf_counter() - t0
    block = gemm_reps * timing.gemm_flops(1000, 1000, 1000)
    peak = block / cmp.timings["gemm_peak"].min / 1e9
    typical = block / cmp.timings["gemm_peak"].median / 1e9

    print(f"GEMM peak measured in this run (1000^3 float32, best block of {gemm_reps} products): {peak:.1f} GFLOP/s "
          f"(median block: {typical:.1f})")
    if not cmp.noise.ok:
        print(cmp.noise.warning())
    print()
    print(HEADER)
    fast_best = cmp.timings["fast_rnn.train_step"].min
    rows = {}
    for k in keys:
        t = cmp.timings[k]
        rate = flops / t.min / 1e9
        rows[k] = rate
        print(f"{k:<26} {t.median * 1e3:>8.1f}ms {t.min * 1e3:>8.1f}ms {rate:>9.1f} {100 * rate / peak:>9.1f}% "
              f"{t.min / fast_best:>7.2f}x")
    print()
    fastest = min((k for k in keys if not k.startswith("fast,")), key=lambda k: cmp.timings[k].min)
    share = 100 * rows["fast_rnn.train_step"] / peak
    print("first-step losses agree: " + ", ".join(f"{k} {v:.6g}" for k, v in losses.items() if v is not None))
    print(f"fastest column: {fastest}; fast step at {share:.1f}% of the GEMM peak "
          f"(goal: fastest and >= 88%: {'MET' if fastest == 'fast_rnn.train_step' and share >= 88 else 'NOT MET'})")
    if share > 100:
        print("(more than 100% of the peak: the machine's load changed during the run -- the peak is unreliable)")
    print(f"(measured in {wall:.1f} s; on a shared or busy machine rerun before trusting a ratio)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
