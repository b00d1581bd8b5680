"""Serial GRU forward vs MGRIT forward (1 thread, threads, MPI ranks) and the work/span model.

    python benchmarks/mgrit.py            # T in {256, 1024, 4096}, H in {64, 128}
    python benchmarks/mgrit.py --quick    # tiny sizes, < 15 s

Implicit GRU (the seed's parallel variant), float64, B = 16, m = 4, levels = 2, FCF relaxation,
iterated until the C-point residual is below 1e-6. On a 2-core machine MGRIT is a *slowdown*:
it does ~ (2-3) x iterations as many steps as the serial march and only 2 cores can share them.
The modelled speedup (course_lib.algorithms.mgrit.span_model: sequential steps on the critical path) is
printed beside the measurement for P = 16, 64, 256; the seed reports up to 6.6x (Moon & Cyr).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from course_lib.core import backend  # noqa: E402
from course_lib.models import gru
from course_lib.algorithms import mgrit

SEED_SPEEDUP = 6.6  # seed 002 (slides): "up to 6.6x speedup over the Classic GRU"


def _time(fn, repeat):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run(quick: bool) -> int:
    # Per-step GEMMs are tiny (B x H x 3H): a multi-threaded BLAS only adds synchronisation (and on a
    # shared machine, oversubscription -- we saw 50x slowdowns). One BLAS thread everywhere; the
    # parallelism measured here is over time intervals (threads / MPI ranks), as in the seed.
    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    with threadpool_limits(limits=1, user_api="blas"):
        return _run(quick)


def _run(quick: bool) -> int:
    Ts = [256] if quick else [256, 1024, 4096]
    Hs = [32] if quick else [64, 128]
    B, nx, m, levels, tol = 16, 8, 4, 2, 1e-6
    repeat = 1 if quick else 2
    mpi_ok, why = backend.mpi_available()
    if not mpi_ok:
        print(f"(MPI column skipped: {why})")
    try:
        import torch  # noqa: F401, PLC0415
        has_torch = True
    except ImportError:
        has_torch = False
    print(f"implicit GRU forward, B={B}, nx={nx}, float64, m={m}, levels={levels}, FCF, tol={tol:g}; "
          f"{backend.cpu_count()} cores; best of {repeat} (1 for T >= 4096); 1 BLAS thread")
    header = (f"{'T':>5} {'H':>4} {'iters':>5} {'serial':>9} {'mgrit x1':>9} {'mgrit thr2':>10} "
              f"{'mpi n=2':>9} {'meas. speedup':>13} {'model P=16':>10} {'P=64':>6} {'P=256':>6} {'max|dH|':>8}"
              + (f" {'torch GRU':>9}" if has_torch else ""))
    print(header)
    print("-" * len(header))
    for T in Ts:
        for H in Hs:
            repeat = 1 if T >= 4096 else repeat
            rng = np.random.default_rng(0)
            p = gru.init_params(nx, H, seed=0, dtype=np.float64)
            X = rng.standard_normal((T, B, nx))
            h0 = np.zeros((B, H))
            t_ser, H_ser = _time(lambda: gru.gru_forward(p, X, h0, implicit=True), repeat)
            opts = dict(m=m, levels=levels, relax="FCF", max_iter=30, tol=tol)
            t_mg, (H_mg, hist) = _time(lambda: gru.gru_forward(p, X, h0, implicit=True, solver="mgrit",
                                                                return_history=True, **opts), repeat)
            t_thr, H_thr = _time(lambda: gru.gru_forward(p, X, h0, implicit=True, solver="mgrit", workers=2,
                                                         **opts), repeat)
            iters = len(hist)
            err = float(np.max(np.abs(H_mg - H_ser)))
            assert np.array_equal(H_thr, H_mg), "threads must equal serial MGRIT"
            t_mpi = float("nan")
            if mpi_ok:
                from course_lib.parallel import mgrit_mpi  # noqa: PLC0415

                U, _, info = mgrit_mpi.launch({"kind": "gru", "params": p, "X": X, "h0": h0, "implicit": True,
                                               "dt": 1.0}, T, ranks=2, timeout=300, **opts)
                t_mpi = info["wall_s"]
                assert np.allclose(U[1:], H_mg, rtol=0, atol=1e-12), "MPI must equal serial MGRIT"
            best_par = min(t_thr, t_mpi) if mpi_ok else t_thr
            model = [mgrit.span_model(T, m=m, levels=levels, iters=iters, P=P, relax="FCF")["speedup"]
                     for P in (16, 64, 256)]
            row = (f"{T:>5} {H:>4} {iters:>5} {t_ser * 1e3:>7.1f}ms {t_mg * 1e3:>7.0f}ms {t_thr * 1e3:>8.0f}ms "
                   f"{t_mpi * 1e3:>7.0f}ms {t_ser / best_par:>12.3f}x {model[0]:>9.2f}x {model[1]:>5.2f}x "
                   f"{model[2]:>5.2f}x {err:>8.1e}")
            if has_torch:
                import torch  # noqa: PLC0415

                g = torch.nn.GRU(nx, H).double()
                Xt = torch.tensor(X)
                with torch.no_grad():
                    t_torch, _ = _time(lambda: g(Xt), repeat)
                row += f" {t_torch * 1e3:>7.1f}ms"
            print(row, flush=True)
    print("\nmodel with the paper's budget (m=4, 3 levels, FCF, 2 iterations, inexact): " + "; ".join(
        f"T={T}: " + ", ".join(f"P={P} {mgrit.span_model(T, m=4, levels=3, iters=2, P=P)['speedup']:.2f}x"
                               for P in (16, 64, 256)) for T in Ts))
    print(f"\nseed: up to {SEED_SPEEDUP}x over the classic GRU (HMDB51, 128 frames, many cores); the model "
          "columns count sequential steps on MGRIT's critical path (no communication or cache effects). "
          "'mpi n=2' includes MPI start-up. torch GRU is the classic (explicit) cell, for scale only.")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes (< 15 s)")
    args = ap.parse_args(argv)
    return run(args.quick)


if __name__ == "__main__":
    sys.exit(main())
