"""Chapter 09 benchmark: the LSTM against torch.nn.LSTM on every shape (issues 7, 13 and 30).

    python benchmarks/lstm.py            # (64, 512, 512, 100), (16, 256, 256, 100), (128, 1024, 1024, 50)
    python benchmarks/lstm.py --quick    # tiny shapes, a smoke test
    python benchmarks/lstm.py --threads 1

Everything is measured in this one process, interleaved (course_lib.core.timing.compare, pair ratios with
95% intervals); shapes are (B, H, nx, T):

0. the machine: CPU, the BLAS and its kernels' vector width against the CPU's (core.backend.blas_vector_bits),
   its measured GEMM peak, torch and oneDNN versions;
1. where the milliseconds go (experiments.lstm_profile.profile_pass): the tuned pass (method="workspace"),
   forward and forward+backward, by phase -- each GEMM against the peak of its own shape, element-wise
   kernels, copies, allocations, the Python loop ("other") -- beside torch.nn.LSTM and torch's BLAS running
   the same GEMMs; the largest phase and the gap to torch in ms;
2. the table: the autotuned method against torch.nn.LSTM, forward and forward+backward, torch/ours with
   its interval; the per-gate textbook loop ("naive") at the seed's shape;
3. the goals, each "met", "not met" or "held for the non-GEMM part because ..." -- where this BLAS runs
   narrower vectors than the CPU has, the torch goals are judged on what our pass would take with torch's
   GEMMs (section 1), and said so. The autotuner picks among METHODS (repeat-until-decided).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CANDIDATES = ("fused_pre", "transposed", "gemv", "workspace")


def _onednn(torch) -> str:
    for line in torch.__config__.show().splitlines():
        if "DNN v" in line:
            return "oneDNN " + line.split("DNN ", 1)[1].split(" (")[0]
    return "oneDNN ?"


def _machine(torch, autotune, backend, timing):
    bits = backend.blas_vector_bits()
    peak = timing.peak_gflops()
    print(f"machine: {backend.cpu_model()} ({platform.machine()}), {os.cpu_count()} CPUs; "
          f"BLAS {bits['blas']}, kernels {bits['kernel'] or '?'} ({bits['kernel_bits'] or '?'}-bit vectors; "
          f"the CPU has {bits['cpu_bits'] or '?'}-bit), {autotune.current_threads()} BLAS threads")
    print(f"GEMM peak here: {peak:.0f} GFLOP/s (float32, 1024^3)" +
          ("" if torch is None else f"; torch {torch.__version__} ({_onednn(torch)}), {torch.get_num_threads()} threads"))
    pinned = bool(bits["kernel_bits"] and bits["cpu_bits"] and bits["kernel_bits"] < bits["cpu_bits"])
    if pinned:
        forced = f" (OPENBLAS_CORETYPE={bits['coretype_env']})" if bits["coretype_env"] else ""
        print(f"note: the BLAS is pinned below the CPU's vector width{forced}: {bits['kernel_bits']}-bit kernels on "
              f"{bits['cpu_bits']}-bit hardware -- the torch goals are held for the non-GEMM part (section 3)")
    return pinned


def _profile(shapes, repeat, xprof, has_torch):
    """Section 1; returns {(shape, backward): profile}."""
    print("\n## 1. Where the milliseconds go: method='workspace', ms per time step (profile T = min(T, 20))")
    out = {}
    for shape in shapes:
        B, H, nx, T = shape
        for backward in (False, True):
            r = xprof.profile_pass(B, H, nx, min(T, 20), backward=backward, repeat=repeat, torch=has_torch)
            out[(shape, backward)] = r
            what = "forward+backward" if backward else "forward"
            print(f"B={B} H={H} nx={nx}, {what}: {r['total_ms']:.3f} ms end to end")
            for row in r["rows"]:
                rate = "" if row["gflops"] is None else \
                    f" {row['gflops']:>5.0f} GFLOP/s = {row['pct_shape_peak']:>3.0f}% of this shape's {row['shape_peak']:.0f}"
                print(f"  {row['phase']:<50} {row['ms']:>8.3f} ms {100 * row['share']:>5.1f}%{rate}")
            print(f"  {'other (Python per step, call overheads)':<50} {r['other_ms']:>8.3f} ms "
                  f"{100 * r['other_ms'] / r['total_ms']:>5.1f}%  ({r['other_us_per_step']:.1f} us per step)")
            print(f"  -> GEMMs take {100 * r['gemm_ms'] / r['total_ms']:.0f}% of the pass; non-GEMM "
                  f"{r['non_gemm_ms']:.3f} ms; largest phase: {r['largest']}")
            if r["torch_ms"] is not None:
                print(f"  torch.nn.LSTM {r['torch_ms']:.3f} ms: gap {r['gap_ms']:+.3f} ms per step; torch's BLAS runs "
                      f"our GEMMs in {r['torch_gemm_ms']:.3f} ms (ours {r['gemm_ms']:.3f}); with them our pass would "
                      f"take {r['with_torch_gemms_ms']:.3f} ms")
            if not r["noise"].ok:
                print(f"  noise guard: unreliable profile ({r['noise'].reasons[0][:160]})")
    return out


def _runs(p, X, dH, method, torch, m, backward):
    from course_lib.models import lstm

    def ours():
        out = lstm.lstm_forward(p, X, method=method, return_cache=backward)
        if backward:
            lstm.lstm_backward(p, out[2], dH)
    fns = {"ours": ours}
    if m is not None:
        from course_lib.experiments.lstm_profile import torch_pass

        fns["torch"] = torch_pass(torch, m, X, dH, backward)
    return fns


def _table(shapes, repeat, torch, autotune, timing, seed_shape):
    """Section 2; returns {(shape, backward): row}."""
    import numpy as np

    from course_lib.models import lstm
    print("\n## 2. The autotuned method against torch.nn.LSTM, ms per time step (torch/ours > 1: ours faster)")
    print(f"{'B':>4} {'H':>5} {'nx':>5} {'T':>4} {'pass':>9} | {'tuned is':>10} {'ours':>9} {'torch':>9} | "
          f"{'torch/ours':>10} {'interval':>13} | {'naive/tuned':>11}")
    rows = {}
    for shape in shapes:
        B, H, nx, T = shape
        p = lstm.init_params(nx, H, seed=0)
        X = np.random.default_rng(1).standard_normal((T, B, nx)).astype(np.float32)
        dH = np.random.default_rng(2).standard_normal((T, B, H)).astype(np.float32)
        methods = tuple(m for m in CANDIDATES if m != "gemv" or B <= 16)
        d = autotune.tune(B, H, nx, T, "float32", methods=methods, repeat=repeat)
        m = None if torch is None else p.to_torch()
        for backward in (False, True):
            fns = _runs(p, X, dH, d.best, torch, m, backward)
            if shape == seed_shape:
                fns["naive"] = _runs(p, X, dH, "naive", None, None, backward)["ours"]
            cmp = timing.compare(repeat=repeat, warmup=1, baseline="ours", **fns)
            ms = {k: 1e3 * cmp.timings[k].median / T for k in fns}
            row = {"ms": ms, "tuned": d.best, "tied": d.tied, "cmp": cmp}
            line = f"{B:>4} {H:>5} {nx:>5} {T:>4} {'fwd+bwd' if backward else 'forward':>9} | {d.best:>10} " \
                   f"{ms['ours']:>9.3f} " + (f"{ms['torch']:>9.3f} | " if "torch" in ms else f"{'-':>9} | ")
            if "torch" in ms:
                row["ratio"], row["interval"] = cmp.ratio("torch"), cmp.ratio_interval("torch")
                line += f"{row['ratio']:>9.2f}x {row['interval'][0]:>5.2f}..{row['interval'][1]:<5.2f}x | "
            else:
                line += f"{'':>10} {'':>13} | "
            if "naive" in ms:
                row["naive"], row["naive_interval"] = cmp.ratio("naive"), cmp.ratio_interval("naive")
                line += f"{row['naive']:>10.2f}x ({row['naive_interval'][0]:.2f}..{row['naive_interval'][1]:.2f})"
            print(line)
            rows[(shape, backward)] = row
    return rows


def _goals(shapes, rows, prof, pinned, seed_shape):
    """Section 3: one line per goal, "met", "not met" or "held for the non-GEMM part because ..."."""
    print("\n## 3. Goals (issue 30)")
    naive = rows[(seed_shape, True)]
    lo = naive["naive_interval"][0]
    state = "met" if lo >= 2.0 else "not met" if naive["naive_interval"][1] < 2.0 else "cannot tell (interval straddles 2x)"
    print(f"goal 'tuned' >= 2x faster than the per-gate 'naive' loop at {seed_shape} (forward+backward): {state} -- "
          f"{naive['naive']:.2f}x, interval {lo:.2f}..{naive['naive_interval'][1]:.2f}x")
    for shape in shapes:
        for backward in (False, True):
            row, r = rows[(shape, backward)], prof[(shape, backward)]
            what = f"{'forward+backward' if backward else 'forward'} at least as fast as torch.nn.LSTM at {shape}"
            if "ratio" not in row:
                print(f"goal {what}: not judged (torch is not installed: pip install '.[bench]')")
                continue
            lo, hi = row["interval"]
            verdict = "met" if lo >= 1.0 else "not met" if hi < 1.0 else "cannot tell"
            text = f"torch/ours {row['ratio']:.2f}x ({lo:.2f}..{hi:.2f})"
            if verdict != "met" and pinned and r["with_torch_gemms_ms"] is not None and \
                    (not r["noise"].ok or r["non_gemm_ms"] < 0):
                verdict += " (the BLAS is pinned below the CPU's vector width, but the profile that would judge the " \
                    "non-GEMM part was disturbed by other programs: re-run when quiet)"
            elif verdict != "met" and pinned and r["with_torch_gemms_ms"] is not None:
                held = r["with_torch_gemms_ms"] <= r["torch_ms"]
                verdict = ("held for the non-GEMM part" if held else "not met, not even for the non-GEMM part") + \
                    f" because the BLAS is pinned below the CPU's vector width: our non-GEMM part is " \
                    f"{r['non_gemm_ms']:.3f} ms and torch's BLAS runs our GEMMs in {r['torch_gemm_ms']:.3f} ms " \
                    f"(ours {r['gemm_ms']:.3f}), so with its GEMMs our pass would take {r['with_torch_gemms_ms']:.3f} ms " \
                    f"against torch's {r['torch_ms']:.3f} (profile, T = {min(shape[3], 20)})"
            print(f"goal {what}: {verdict} -- {text}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny shapes (smoke test)")
    ap.add_argument("--threads", type=int, default=None, help="BLAS/torch threads (default: all)")
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("COURSE_CACHE_DIR", tempfile.mkdtemp(prefix="bench_lstm_"))
    from threadpoolctl import threadpool_limits

    from course_lib.core import backend, timing
    from course_lib.experiments import autotune
    from course_lib.experiments import lstm_profile as xprof

    try:
        import torch
    except ImportError:
        torch = None
    shapes = [(8, 32, 32, 10), (16, 64, 64, 10)] if args.quick else \
        [(64, 512, 512, 100), (16, 256, 256, 100), (128, 1024, 1024, 50)]
    repeat = args.repeat or 3          # >= 3 rounds: the intervals mean something
    limit = threadpool_limits(args.threads) if args.threads else None
    if torch is not None and args.threads:
        torch.set_num_threads(args.threads)
    pinned = _machine(torch, autotune, backend, timing)
    prof = _profile(shapes, repeat, xprof, torch is not None)
    rows = _table(shapes, repeat, torch, autotune, timing, shapes[0])
    _goals(shapes, rows, prof, pinned, shapes[0])
    largest = {s: prof[(s, True)]["largest"] for s in shapes}
    print("largest phase of forward+backward: " + "; ".join(f"{s}: {p}" for s, p in largest.items()))
    from course_lib.teaching.claims import CLAIMS

    default, cudnn = CLAIMS["003.summary.vs_default"], CLAIMS["003.summary.vs_cudnn"]
    print(f"seed (EcoRNN, {default.conditions.split('; ')[-1]}): up to {default.formatted()} over MXNet's default "
          f"LSTM, up to {cudnn.formatted()} over cuDNN")
    if limit is not None:
        limit.restore_original_limits()
    return 0


if __name__ == "__main__":
    sys.exit(main())
