"""Chapter 09 benchmark: LSTM forward+backward per time step, every method and torch.nn.LSTM.

    python benchmarks/lstm.py            # (B=64, H=512, nx=512, T=100) and two other shapes
    python benchmarks/lstm.py --quick    # tiny shapes, < 15 s
    python benchmarks/lstm.py --threads 1

Goal (issue 7): the autotuned method ("tuned") faster than torch.nn.LSTM (CPU, same weights) on every
shape and >= 2x faster than "naive". All columns are measured interleaved in one process; the GEMM peak is
measured in the same process. "tuned" is chosen first by experiments.autotune.best_method (forward
timings, cache in a temp folder), then timed like the others.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny shapes (smoke test)")
    ap.add_argument("--threads", type=int, default=None, help="BLAS/torch threads (default: all)")
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("COURSE_CACHE_DIR", tempfile.mkdtemp(prefix="bench_lstm_"))

    import numpy as np
    from threadpoolctl import threadpool_limits

    from course_lib.experiments import autotune
    from course_lib.models import lstm
    from course_lib.core import timing

    try:
        import torch
    except ImportError:
        torch = None

    if args.quick:
        shapes = [(8, 32, 32, 10), (16, 64, 64, 10)]
        repeat = args.repeat or 3  # >= 3 repeats: the noise guard can judge the spread
    else:
        shapes = [(64, 512, 512, 100), (16, 256, 256, 100), (128, 1024, 1024, 50)]
        repeat = args.repeat or 3

    limit = threadpool_limits(args.threads) if args.threads else None
    if torch is not None and args.threads:
        torch.set_num_threads(args.threads)
    peak = timing.peak_gflops()
    print(f"GEMM peak here: {peak:.0f} GFLOP/s (float32, {autotune.current_threads()} BLAS threads)"
          + ("" if torch is None else f"; torch {torch.__version__} with {torch.get_num_threads()} threads"))
    print("forward+backward, milliseconds per time step (median of interleaved repeats)")
    cols = list(lstm.METHODS) + ["tuned"] + (["torch"] if torch is not None else [])
    header = f"{'B':>4} {'H':>5} {'nx':>5} {'T':>4} | " + " ".join(f"{c:>10}" for c in cols) + \
        f" | {'tuned is':>10} {'naive/tuned':>11}" + (f" {'torch/tuned':>11}" if torch is not None else "") + \
        f" {'tuned %peak':>11}"
    print(header)
    print("-" * len(header))
    ok_naive, ok_torch, reliable = True, True, True
    for B, H, nx, T in shapes:
        p = lstm.init_params(nx, H, seed=0)
        X = np.random.default_rng(1).standard_normal((T, B, nx)).astype(np.float32)
        dH = np.random.default_rng(2).standard_normal((T, B, H)).astype(np.float32)
        picked = autotune.best_method(B, H, nx, T, "float32")

        def ours(m):
            def run():
                out = lstm.lstm_forward(p, X, method=m, return_cache=True)
                lstm.lstm_backward(p, out[2], dH)
            return run

        fns = {m: ours(m) for m in lstm.METHODS}
        fns["tuned"] = ours(picked)
        if torch is not None:
            m = p.to_torch()
            Xt = torch.from_numpy(X).requires_grad_()
            dHt = torch.from_numpy(dH)

            def run_torch():
                m.zero_grad()
                Xt.grad = None
                out, _ = m(Xt)
                out.backward(dHt)
            fns["torch"] = run_torch
        cmp = timing.compare(repeat=repeat, warmup=1, **fns)
        ms = {k: cmp.timings[k].median / T * 1e3 for k in fns}
        flops = 3 * timing.gemm_flops(B, 4 * H, nx + H)  # forward GEMMs (x and h parts) + 2x that backward
        pct = 100 * flops / (ms["tuned"] * 1e-3) / 1e9 / peak
        r_naive = ms["naive"] / ms["tuned"]
        line = f"{B:>4} {H:>5} {nx:>5} {T:>4} | " + " ".join(f"{ms[c]:>10.3f}" for c in cols) + \
            f" | {picked:>10} {r_naive:>10.2f}x"
        ok_naive &= r_naive >= 2.0
        if torch is not None:
            r_t = ms["torch"] / ms["tuned"]
            ok_torch &= r_t > 1.0
            line += f" {r_t:>10.2f}x"
        print(line + f" {pct:>10.0f}%")
        cmp.noise.add(pct > 100, "above the measured GEMM peak")
        if not cmp.noise.ok:
            reliable = False
            print("     " + cmp.noise.warning())
    print()
    def judged(ok):
        return ("met" if ok else "NOT met") if reliable else "not judged (unreliable rows above; re-run when quiet)"

    print(f"goal 'tuned' >= 2x faster than 'naive' on every shape: {judged(ok_naive)}")
    if torch is not None:
        print(f"goal 'tuned' faster than torch.nn.LSTM on every shape: {judged(ok_torch)}")
    else:
        print("torch is not installed: no torch.nn.LSTM column")
    from course_lib.teaching.claims import CLAIMS

    default, cudnn = CLAIMS["003.summary.vs_default"], CLAIMS["003.summary.vs_cudnn"]
    print(f"seed (EcoRNN, {default.conditions.split('; ')[-1]}): up to {default.formatted()} over MXNet's default "
          f"LSTM, up to {cudnn.formatted()} over cuDNN")
    if limit is not None:
        limit.restore_original_limits()
    return 0


if __name__ == "__main__":
    sys.exit(main())
