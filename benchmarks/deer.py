"""Sequential GRU vs DEER, quasi-DEER and MGRIT: iterations and time vs T and H, and the model.

    python benchmarks/deer.py            # T in {256, 1024, 4096}, H in {4, 16, 64}
    python benchmarks/deer.py --quick    # tiny sizes, < 20 s

A second table: the one fixed-point family (newton, quasi, picard, jacobi) on the dense GRU and the
diagonal-Jacobian GRU (models.diag_gru, where quasi is Newton), iterations and time vs T, one process.

Classic GRU (implicit for MGRIT, which needs it), float64, B = 4, tolerance 1e-8 on the max-abs
residual. The baseline is the compiled (numba) sequential loop. On a 2-core machine DEER is a
*slowdown*: every iteration does the serial march's work several times over (Jacobians, an O(H^3)
scan for the full Newton step). The model columns (course_lib.algorithms.newton.span_model: flops
on the critical path) say what P processors could give with the measured iteration counts.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np

from course_lib.algorithms import newton
from course_lib.core import backend
from course_lib.experiments import newton as ex
from course_lib.experiments import newton_kstar
from course_lib.models import jacobians
from course_lib.parallel import deer
from course_lib.teaching.claims import CLAIMS

PS = (16, 64, 256, 1024)


def _best(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run(quick: bool) -> int:
    Ts = [128] if quick else [256, 1024, 4096]
    Hs = [4, 16] if quick else [4, 16, 64]
    B, tol, repeat = 4, 1e-8, 1 if quick else 2
    print(f"classic GRU forward, B={B}, nx=3, float64, tol={tol:g}; {backend.cpu_count()} cores; best of {repeat}")
    header = (f"{'T':>5} {'H':>3} {'serial':>9} {'deer':>9} {'it':>3} {'quasi':>9} {'it':>3} {'mgrit':>9} {'it':>3} "
              f"{'meas.deer':>9} " + " ".join(f"{'P=' + str(P):>7}" for P in PS) + f" {'quasi P=1024':>12} {'max|dH|':>8}")
    print(header)
    print("-" * len(header))
    p0, X0 = ex.scaled_gru(4, 1.0), np.zeros((8, B, 3))  # compile the numba kernels outside the timings
    jacobians.gru_serial_numba(p0, X0)
    deer.gru_forward(p0, X0 + 1.0)
    for T in Ts:
        for H in Hs:
            p = ex.scaled_gru(H, 1.0)
            X = np.random.default_rng(1).standard_normal((T, B, 3))
            t_ser, ref = _best(lambda: jacobians.gru_serial_numba(p, X), repeat)
            t_d, (Hd, hd) = _best(lambda: deer.gru_forward(p, X, method="newton", tol=tol, return_history=True), repeat)
            t_q, (_, hq) = _best(lambda: deer.gru_forward(p, X, method="quasi", tol=tol, return_history=True), repeat)
            t_m, (_, hm) = _best(lambda: ex.mgrit_forward(p, X, implicit=True, m=4, levels=2, relax="FCF",
                                                          max_iter=T // 4 + 1, tol=tol), repeat)
            it_d, it_q = len(hd) - 1, len(hq) - 1
            model = [newton.span_model(T, H, iters=max(it_d, 1), P=P)["speedup"] for P in PS]
            mq = newton.span_model(T, H, iters=max(it_q, 1), P=1024, method="quasi")["speedup"]
            print(f"{T:>5} {H:>3} {t_ser * 1e3:>7.2f}ms {t_d * 1e3:>7.1f}ms {it_d:>3} {t_q * 1e3:>7.1f}ms {it_q:>3} "
                  f"{t_m * 1e3:>7.1f}ms {len(hm):>3} {t_ser / t_d:>8.3f}x "
                  + " ".join(f"{s:>6.2f}x" for s in model) + f" {mq:>11.2f}x {np.abs(Hd - ref).max():>8.1e}", flush=True)
    c = CLAIMS["beyond.deer.readme.gru_speedup"]
    print(f"\nDEER's README: {c.formatted()} over the sequential GRU ({c.conditions}). The paper reports the "
          "speedup falling steeply as the hidden size grows (a full Jacobian costs O(H^3) per step in the scan); "
          "the model columns show the same trend. 'it' = iterations; mgrit = two-level FCF MGRIT on the implicit GRU.")
    return 0


def run_family(quick: bool) -> int:
    """Iterations to 1e-8 and seconds (best of 2, wall clock) of each family member vs T, one process."""
    Ts = [128, 512] if quick else [256, 1024, 4096]
    print("\nthe fixed-point family, float64, nh=8, batch=2, tol=1e-8 (residual), one process")
    print(f"{'cell':>9} {'T':>5} " + " ".join(f"{m:>16}" for m in ("newton", "quasi", "picard", "jacobi")))
    for cell in ("gru", "diag_gru"):
        for T in Ts:
            s = newton_kstar.cell_system(cell, T)
            row = []
            for m in ("newton", "quasi", "picard", "jacobi"):
                try:
                    t, (_, h) = _best(lambda: newton.solve(s["f"], s["jac"], s["h0"], s["inputs"], method=m,
                                                           jac_diag=s["jac_diag"], tol=1e-8), 2)
                    row.append(f"{len(h) - 1:>4} it {t * 1e3:>7.1f}ms")
                except newton.NewtonDivergence:
                    row.append(f"{'diverged':>16}")
            print(f"{cell:>9} {T:>5} " + " ".join(row), flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (< 20 s)")
    args = ap.parse_args(argv)
    return run(args.quick) or run_family(args.quick)


if __name__ == "__main__":
    sys.exit(main())
