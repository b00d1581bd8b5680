"""Serial GRU forward vs MGRIT forward (1 thread, threads, MPI ranks) and the work/span model.

    python benchmarks/mgrit.py            # T in {256, 1024, 4096}, H in {64, 128}
    python benchmarks/mgrit.py --quick    # tiny sizes, < 15 s

Implicit GRU (the seed's parallel variant), float64, B = 16, m = 4, levels = 2, FCF relaxation,
iterated until the C-point residual is below 1e-6. The "work" column is the number of time steps
MGRIT took per serial step (counted); the model columns are the work/span model's speedup
(course_lib.algorithms.mgrit.span_model: sequential steps on the critical path) for P = 16, 64, 256.
'mpi n=2' is the solve inside the MPI job (start-up excluded). Every time is the median of
core.timing.measure; a row whose measurement was unreliable is marked with '!' and the reasons
are printed under the table. The seed's number comes from the claims registry.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np

from course_lib.algorithms import mgrit
from course_lib.core import backend, timing
from course_lib.models import gru
from course_lib.teaching.claims import claim


def run(quick: bool) -> int:
    # Per-step GEMMs are tiny (B x H x 3H): a multi-threaded BLAS only adds synchronisation (and on a
    # shared machine, oversubscription). One BLAS thread everywhere; the parallelism measured here is
    # over time intervals (threads / MPI ranks), as in the seed.
    with backend.blas_threads(1):
        return _run(quick)


def _run(quick: bool) -> int:
    Ts = [256] if quick else [256, 1024, 4096]
    Hs = [32] if quick else [64, 128]
    B, nx, m, levels, tol = 16, 8, 4, 2, 1e-6
    repeat = 1 if quick else 3
    mpi_ok, why = backend.mpi_available()
    if not mpi_ok:
        print(f"(MPI column skipped: {why})")
    print(f"implicit GRU forward, B={B}, nx={nx}, float64, m={m}, levels={levels}, FCF, tol={tol:g}; "
          f"{backend.cpu_count()} cores; median of {repeat}; 1 BLAS thread")
    header = (f"{'T':>5} {'H':>4} {'iters':>5} {'work':>5} {'serial':>9} {'mgrit x1':>9} {'mgrit thr2':>10} "
              f"{'mpi n=2':>9} {'meas. speedup':>13} {'model P=16':>10} {'P=64':>6} {'P=256':>6} {'max|dH|':>8}")
    print(header)
    print("-" * len(header))
    warnings = []
    for T in Ts:
        for H in Hs:
            rng = np.random.default_rng(0)
            p = gru.init_params(nx, H, seed=0, dtype=np.float64)
            X = rng.standard_normal((T, B, nx))
            h0 = np.zeros((B, H))
            opts = dict(m=m, levels=levels, relax="FCF", max_iter=30, tol=tol)
            H_ser = gru.gru_forward(p, X, h0, implicit=True)
            H_mg, hist = gru.gru_forward(p, X, h0, implicit=True, method="mgrit", return_history=True, **opts)
            assert np.array_equal(gru.gru_forward(p, X, h0, implicit=True, method="mgrit", threads=2, **opts), H_mg), \
                "threads must equal one-thread MGRIT"
            cmp = timing.compare(
                serial=lambda: gru.gru_forward(p, X, h0, implicit=True),
                mgrit_1=lambda: gru.gru_forward(p, X, h0, implicit=True, method="mgrit", **opts),
                mgrit_thr2=lambda: gru.gru_forward(p, X, h0, implicit=True, method="mgrit", threads=2, **opts),
                repeat=repeat)
            noise = cmp.noise
            iters = len(hist)
            err = float(np.max(np.abs(H_mg - H_ser)))
            t_ser, t_mg, t_thr = (cmp.timings[k].median for k in ("serial", "mgrit_1", "mgrit_thr2"))
            t_mpi = float("nan")
            if mpi_ok:
                from course_lib.parallel import mgrit_mpi

                U, _, info = mgrit_mpi.solve({"kind": "gru", "params": p, "X": X, "h0": h0, "implicit": True,
                                              "dt": 1.0}, T, ranks=2, repeat=repeat, timeout=300, **opts)
                t_mpi = float(np.median(info["solve_times"]))
                assert np.array_equal(U[1:], H_mg), "MPI must equal one-process MGRIT"
            best_par = min(t_thr, t_mpi) if mpi_ok else t_thr
            work = mgrit.span_model(T, m=m, levels=levels, iters=iters, relax="FCF")["work"] / T
            model = [mgrit.span_model(T, m=m, levels=levels, iters=iters, P=P, relax="FCF")["speedup"]
                     for P in (16, 64, 256)]
            flag = " " if noise.ok else "!"
            if not noise.ok:
                warnings.append(f"T={T}, H={H}: " + "; ".join(noise.reasons))
            print(f"{T:>5} {H:>4} {iters:>5} {work:>5.2f} {t_ser * 1e3:>7.1f}ms {t_mg * 1e3:>7.0f}ms "
                  f"{t_thr * 1e3:>8.0f}ms {t_mpi * 1e3:>7.0f}ms {t_ser / best_par:>11.3f}x{flag} {model[0]:>9.2f}x "
                  f"{model[1]:>5.2f}x {model[2]:>5.2f}x {err:>8.1e}", flush=True)
    for w in warnings:
        print("unreliable (!):", w)
    print("\nmodel with the seed's inexact budget (m=4, 3 levels, FCF, 2 iterations): " + "; ".join(
        f"T={T}: " + ", ".join(f"P={P} {mgrit.span_model(T, m=4, levels=3, iters=2, P=P)['speedup']:.2f}x"
                               for P in (16, 64, 256)) for T in Ts))
    c = claim("002.speedup.max")
    print(f"\nseed: up to {c.formatted()} ({c.conditions}); the model columns count sequential steps on "
          "MGRIT's critical path (no communication or cache effects).")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (< 15 s)")
    args = ap.parse_args(argv)
    return run(args.quick)


if __name__ == "__main__":
    sys.exit(main())
