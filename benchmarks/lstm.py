"""Chapter 09 benchmark: the LSTM against torch.nn.LSTM on every shape (issues 7, 13 and 30).

    python benchmarks/lstm.py            # (64, 512, 512, 100), (16, 256, 256, 100), (128, 1024, 1024, 50)
    python benchmarks/lstm.py --quick    # tiny shapes, a smoke test
    python benchmarks/lstm.py --threads 1
    python benchmarks/lstm.py --record course_lib/experiments/recorded/<machine>   # ... and keep the run (lstm_providers.json)
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/lstm.py   # where the machine pins OpenBLAS

Shapes are (B, H, nx, T); one run of this script prints:

0. the machine: CPU, the BLAS and its kernels' vector width against the CPU's (core.backend.blas_vector_bits),
   its measured GEMM peak, torch and oneDNN versions;
1. where the milliseconds go, in this process: the BLAS-per-step pass (method="workspace") by phase
   (experiments.lstm_profile.profile_pass) -- each GEMM against the peak of its own shape, element-wise
   kernels, allocations, the rest ("other") -- and one step's recurrent product three ways, interleaved:
   the BLAS on B rows, the BLAS on 2 rows (what a call costs before it multiplies much: packing W_hh, waking
   threads) and the persistent method's dot products (models.lstm_persistent);
2. the table: the autotuned method (picked among CANDIDATES for each pass, repeat-until-decided) against torch.nn.LSTM,
   forward and forward+backward, torch/ours with its interval; the per-gate textbook loop ("naive") at the
   seed's shape. Each rival runs in a process of its own and they take turns (experiments.lstm_rivals): two
   thread pools in one process spin on each other's cores. Where OPENBLAS_CORETYPE pins the BLAS below the
   CPU's vector width, a third process runs our BLAS path (workspace) without that variable ("full w.");
GEMM providers (course_lib.algorithms.gemm: numpy's BLAS; oneMKL and BLIS with `pip install -e '.[fast]'`):
section 0 lists them and the kernels each picked; section 1b times each pass's products on every provider
(experiments.gemm_providers) and gives each provider's floor under the pass; section 2's autotuner races every
method on every provider ("workspace@mkl"), so "tuned is" names the library that won; section 3 prints a bound
line per provider.

3. the goals, each "met", "not met", "cannot tell" or "held for the non-GEMM part" -- where the BLAS is
   pinned, a torch goal our pinned run misses is judged on the full-width run, and said so -- and under each the
   bound section 1 puts on it: the rival's time over the pass's products alone at the peak of their shapes (the
   most any pass that runs its products through this BLAS can gain).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CANDIDATES = ("fused_pre", "transposed", "gemv", "workspace", "persistent")
_START_LOAD = os.getloadavg()[0]     # kept in a --record beside the load at the end


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
              f"{bits['cpu_bits']}-bit hardware -- a third process runs our code with the CPU's own kernels (sections 2 and 3)")
    from course_lib.algorithms import gemm

    for p in gemm.providers():
        i = gemm.provider_info(p)
        print(f"GEMM provider {p}: {i['version']}, kernels {i['kernel']}, {i['threads']} thread(s)")
    for p, why in gemm.absent().items():
        print(f"GEMM provider {p}: absent -- {why}")
    return pinned


def _provider_floors(shapes, repeat):
    """Section 1b: {(shape, backward): {provider: floor ms per step}} -- each pass's products (T = min(T, 20)) on
    every provider, each at the best rate that provider reached at its shape."""
    from course_lib.experiments import gemm_providers as gp

    print("\n## 1b. The pass's products on every GEMM provider: the floor each puts under the pass (ms per step)")
    out = {}
    for shape in shapes:
        B, H, nx, T = shape
        for backward in (False, True):
            rows = gp.rates(gp.lstm_products(B, H, nx, min(T, 20), backward), repeat=repeat)
            floors = out[(shape, backward)] = gp.pass_floor_ms(rows, min(T, 20))
            rates = "; ".join(f"{r['product']['name']}: " + ", ".join(f"{v} {g:.0f}" for v, g in r["best"].items())
                              for r in rows)
            print(f"B={B} H={H} nx={nx}, {'forward+backward' if backward else 'forward'}: floor " +
                  ", ".join(f"{v} {ms:.3f}" for v, ms in floors.items()) + f"  (GFLOP/s: {rates})" +
                  ("" if all(r["noise"].ok for r in rows) else "  [noisy]"))
    return out


def _profile(shapes, repeat, xprof, timing):
    """Section 1; returns {(shape, backward): profile}."""
    print("\n## 1. Where the milliseconds go: method='workspace', ms per time step (profile T = min(T, 20))")
    out = {}
    for shape in shapes:
        B, H, nx, T = shape
        for backward in (False, True):
            r = xprof.profile_pass(B, H, nx, min(T, 20), backward=backward, repeat=repeat)
            out[(shape, backward)] = r
            what = "forward+backward" if backward else "forward"
            print(f"B={B} H={H} nx={nx}, {what}: {r['total_ms']:.3f} ms end to end")
            for row in r["rows"]:
                rate = "" if row["gflops"] is None else \
                    f" {row['gflops']:>5.0f} GFLOP/s = {row['pct_shape_peak']:>3.0f}% of this shape's {row['shape_peak']:.0f}"
                print(f"  {row['phase']:<50} {row['ms']:>8.3f} ms {100 * row['share']:>5.1f}%{rate}")
            print(f"  {xprof.OTHER:<50} {r['other_ms']:>8.3f} ms "
                  f"{100 * r['other_ms'] / r['total_ms']:>5.1f}%")
            print(f"  -> GEMMs take {100 * r['gemm_ms'] / r['total_ms']:.0f}% of the pass; non-GEMM "
                  f"{r['non_gemm_ms']:.3f} ms; largest phase: {r['largest']}")
            if not r["noise"].ok:
                print(f"  noise guard: unreliable profile ({r['noise'].reasons[0][:160]})")
        _recurrent(B, H, repeat, timing)
    return out


def _recurrent(B, H, repeat, timing):
    """One step's recurrent product h W_hh^T three ways, interleaved in this process."""
    import numpy as np

    from course_lib.models import lstm_persistent

    rng = np.random.default_rng(0)
    W = rng.standard_normal((4 * H, H)).astype(np.float32)
    h, h2 = rng.standard_normal((B, H)).astype(np.float32), rng.standard_normal((2, H)).astype(np.float32)
    z, z2 = np.empty((B, 4 * H), np.float32), np.empty((2, 4 * H), np.float32)
    cmp = timing.compare(repeat=max(repeat, 5), warmup=2, baseline="blas", settle=True,   # two thread pools
                         blas=lambda: np.matmul(h, W.T, out=z), blas_2_rows=lambda: np.matmul(h2, W.T, out=z2),
                         persistent=lambda: lstm_persistent.step_products(W, h, z))
    us = {k: 1e6 * t.median for k, t in cmp.timings.items()}
    flops = timing.gemm_flops(B, 4 * H, H)
    print(f"  one step's recurrent product ({B}, {H}) x ({H}, {4 * H}): BLAS {us['blas']:.1f} us "
          f"({flops / us['blas'] / 1e3:.0f} GFLOP/s); the BLAS on 2 rows {us['blas_2_rows']:.1f} us "
          f"(= {100 * us['blas_2_rows'] / us['blas']:.0f}% of it, for 1/{B // 2 if B > 2 else 1} of the work); "
          f"persistent dot products {us['persistent']:.1f} us ({flops / us['persistent'] / 1e3:.0f} GFLOP/s)" +
          ("" if cmp.noise.ok else f"  [unreliable: {cmp.noise.reasons[0][:100]}]"))


def _judge(lo, hi, goal=1.0):
    return "met" if lo >= goal else "not met" if hi < goal else "cannot tell"


def _table(shapes, repeat, autotune, rivals, seed_shape):
    """Section 2; returns {(shape, backward): row}."""
    from course_lib.experiments.lstm_rivals import FULL_WIDTH, TORCH
    print("\n## 2. The autotuned method against torch.nn.LSTM, ms per time step (torch/ours > 1: ours faster);")
    print("   each rival in a process of its own, taking turns (blocks of about 0.2 s, 7 rounds)")
    print(f"{'B':>4} {'H':>5} {'nx':>5} {'T':>4} {'pass':>8} | {'tuned is':>16} {'ours':>8} {'full w.':>8} {'torch':>8} | "
          f"{'torch/ours':>10} {'interval':>12} | {'torch/full w.':>20} | naive/tuned")
    rows = {}
    for shape in shapes:
        B, H, nx, T = shape
        methods = tuple(m for m in CANDIDATES if m != "gemv" or B <= 16)
        for backward in (False, True):    # tuned for the pass it runs: forward, or forward + backward
            d = autotune.tune(B, H, nx, T, "float32", methods=methods, repeat=repeat, training=backward,
                              providers=None)      # every method on every GEMM provider here
            cmp = rivals.compare(shape, backward, d.best, extra=("naive",) if shape == seed_shape else (),
                                 rounds=max(repeat, 7))
            ms = {k: 1e3 * t.median / T for k, t in cmp.timings.items()}
            row = {"ms": ms, "tuned": d.best, "cmp": cmp, "table_ms": d.table_ms}
            cells = " ".join(f"{ms[k]:>8.3f}" if k in ms else f"{'-':>8}" for k in ("ours", FULL_WIDTH, TORCH))
            line = f"{B:>4} {H:>5} {nx:>5} {T:>4} {'fwd+bwd' if backward else 'forward':>8} | {d.best:>16} {cells} | "
            if TORCH in ms:
                row["ratio"], row["interval"] = cmp.ratio(TORCH), cmp.ratio_interval(TORCH)
                line += f"{row['ratio']:>9.2f}x {row['interval'][0]:>5.2f}..{row['interval'][1]:<5.2f}x | "
            else:
                line += f"{'':>10} {'':>12} | "
            if TORCH in ms and FULL_WIDTH in ms:
                row["full"] = cmp.pairs(TORCH, FULL_WIDTH)
                lo, hi = row["full"].interval
                line += f"{row['full'].median:>6.2f}x ({lo:.2f}..{hi:.2f}) | "
            else:
                line += f"{'':>20} | "
            if "naive" in ms:
                row["naive"], row["naive_interval"] = cmp.ratio("naive"), cmp.ratio_interval("naive")
                line += f"{row['naive']:.2f}x ({row['naive_interval'][0]:.2f}..{row['naive_interval'][1]:.2f})"
            print(line)
            row["disturbed"] = cmp.noise.busy or cmp.noise.biased   # wide intervals are the verdicts' business
            if row["disturbed"]:
                print(f"      disturbed: {cmp.noise.reasons[-1][:150]}")
            rows[(shape, backward)] = row
    if rivals.idle_timeouts:
        print(f"note: {rivals.idle_timeouts} block(s) started while a process still ran after 2 s of waiting")
    return rows


def _bound(what, rival_ms, floor_ms, goal):
    """The most any pass whose products run through this BLAS can gain over a rival taking ``rival_ms`` per step: its
    products alone take ``floor_ms`` per step at the peak of their shapes (section 1, T = min(T, 20))."""
    best = rival_ms / floor_ms
    return (f"  bound: {what} {rival_ms:.3f} ms per step; the pass's products alone, each at the peak of its shape "
            f"with this BLAS, take {floor_ms:.3f} ms, so no pass that runs them through this BLAS can exceed "
            f"{best:.2f}x -- the goal ({goal:g}x) is {'within reach' if best >= goal else 'out of reach'} here")


def _provider_bounds(what, rival_ms, floors, goal):
    """One bound line per GEMM provider: the rival's time over the pass's products alone on that library."""
    return "\n".join(f"  bound with {v}: {what} {rival_ms:.3f} ms; the products alone on {v} take {f:.3f} ms, so "
                     f"no pass running them through {v} can exceed {rival_ms / f:.2f}x -- the goal ({goal:g}x) is "
                     f"{'within reach' if rival_ms / f >= goal else 'out of reach'} with {v}"
                     for v, f in floors.items())


def _goals(shapes, rows, pinned, seed_shape, prof, floors):
    """Section 3: one line per goal, and under it the bound section 1's GEMM floor puts on it."""
    from course_lib.experiments.lstm_rivals import FULL_WIDTH_METHOD, TORCH
    print("\n## 3. Goals (issue 30)")
    naive = rows[(seed_shape, True)]
    lo, hi = naive["naive_interval"]
    print(f"goal 'tuned' >= 2x faster than the per-gate 'naive' loop at {seed_shape} (forward+backward): "
          f"{_judge(lo, hi, 2.0)} -- {naive['naive']:.2f}x, interval {lo:.2f}..{hi:.2f}x")
    print(_bound("the per-gate loop takes", naive["ms"]["naive"], prof[(seed_shape, True)]["gemm_floor_ms"], 2.0))
    best_floor = min(floors[(seed_shape, True)].items(), key=lambda kv: kv[1])
    print(f"  judged against the best provider's bound ({best_floor[0]}):")
    print(_provider_bounds("the per-gate loop takes", naive["ms"]["naive"], dict([best_floor]), 2.0))
    for shape in shapes:
        for backward in (False, True):
            row = rows[(shape, backward)]
            what = f"{'forward+backward' if backward else 'forward'} at least as fast as torch.nn.LSTM at {shape}"
            if "ratio" not in row:
                print(f"goal {what}: not judged (torch is not installed: pip install '.[bench]')")
                continue
            lo, hi = row["interval"]
            verdict = _judge(lo, hi)
            if verdict != "met" and pinned and "full" in row:
                flo, fhi = row["full"].interval
                verdict = {"met": "held for the non-GEMM part", "not met": "not met, not even at full width",
                           "cannot tell": "cannot tell, even at full width"}[_judge(flo, fhi)] + \
                    f" (the BLAS is pinned below the CPU's vector width; our BLAS path, {FULL_WIDTH_METHOD}, with the " \
                    f"CPU's own kernels: torch/ours {row['full'].median:.2f}x, {flo:.2f}..{fhi:.2f})"
            if row["disturbed"]:
                verdict += " [unreliable run: re-run when the machine is quiet]"
            print(f"goal {what}: {verdict} -- torch/ours {row['ratio']:.2f}x ({lo:.2f}..{hi:.2f})")
            print(_bound("torch.nn.LSTM takes", row["ms"][TORCH], prof[(shape, backward)]["gemm_floor_ms"], 1.0))
            print(_provider_bounds("torch.nn.LSTM takes", row["ms"][TORCH], floors[(shape, backward)], 1.0))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny shapes (smoke test)")
    ap.add_argument("--threads", type=int, default=None, help="BLAS/torch/numba threads (default: all)")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--record", metavar="DIR", help="keep the run's tables: DIR/lstm_providers.json")
    args = ap.parse_args(argv)
    os.environ.setdefault("COURSE_CACHE_DIR", tempfile.mkdtemp(prefix="bench_lstm_"))
    if args.threads:
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)     # before numba starts its pool (and in the workers)
    from threadpoolctl import threadpool_limits

    from course_lib.core import backend, timing
    from course_lib.experiments import autotune
    from course_lib.experiments import lstm_profile as xprof
    from course_lib.experiments.lstm_rivals import Rivals, torch_installed

    torch = None
    if torch_installed():
        import torch                       # its versions only: torch runs in a process of its own (section 2)
    shapes = [(8, 32, 32, 10), (16, 64, 64, 10)] if args.quick else \
        [(64, 512, 512, 100), (16, 256, 256, 100), (128, 1024, 1024, 50)]
    repeat = args.repeat or 3          # >= 3 rounds: the intervals mean something
    limit = threadpool_limits(args.threads) if args.threads else None
    pinned = _machine(torch, autotune, backend, timing)
    prof = _profile(shapes, repeat, xprof, timing)
    floors = _provider_floors(shapes, repeat)
    with Rivals(full_width=pinned, torch=torch is not None, threads=args.threads) as rivals:
        rows = _table(shapes, repeat, autotune, rivals, shapes[0])
    _goals(shapes, rows, pinned, shapes[0], prof, floors)
    if args.record:
        _record(args.record, shapes, rows, floors, backend)
    largest = {s: prof[(s, True)]["largest"] for s in shapes}
    print("largest phase of forward+backward (workspace): " + "; ".join(f"{s}: {p}" for s, p in largest.items()))
    from course_lib.teaching.claims import CLAIMS

    default, cudnn = CLAIMS["003.summary.vs_default"], CLAIMS["003.summary.vs_cudnn"]
    print(f"seed (EcoRNN, {default.conditions.split('; ')[-1]}): up to {default.formatted()} over MXNet's default "
          f"LSTM, up to {cudnn.formatted()} over cuDNN")
    if limit is not None:
        limit.restore_original_limits()
    return 0


def _record(folder, shapes, rows, floors, backend):
    """``folder/lstm_providers.json``: per shape and pass, the autotuner's table (ms per step of every
    method@provider), what won, torch's ratio where measured, and each provider's floor."""
    import time

    from course_lib.algorithms import gemm

    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "lstm_providers.json")
    data = {"format": "benchmarks/lstm.py providers/1", "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "machine": {"cpu": backend.cpu_model(), "cpus": os.cpu_count(), "load_1min": os.getloadavg()[0],
                        "load_1min_start": _START_LOAD},
            "providers": {p: gemm.provider_info(p) for p in gemm.providers()}, "absent": gemm.absent(),
            "passes": [{"shape": list(s), "backward": b, "tuned": rows[(s, b)]["tuned"],
                        "table_ms": rows[(s, b)]["table_ms"], "torch_over_ours": rows[(s, b)].get("ratio"),
                        "interval": rows[(s, b)].get("interval"), "floor_ms": floors[(s, b)],
                        "disturbed": bool(rows[(s, b)]["disturbed"])} for s in shapes for b in (False, True)]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, default=float)
    print(f"recorded: {path}")


if __name__ == "__main__":
    sys.exit(main())
