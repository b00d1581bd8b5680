"""Chapter 09 benchmark: LSTM forward+backward per time step, every variant and torch.nn.LSTM.

    python benchmarks/lstm.py            # (B=64, H=512, nx=512, T=100) and two other shapes
    python benchmarks/lstm.py --quick    # tiny shapes, < 15 s
    python benchmarks/lstm.py --threads 1

Goal (issue 7): "auto" faster than torch.nn.LSTM (CPU, same weights) on every shape and >= 2x
faster than "naive". All columns are measured interleaved in one process; the GEMM peak is
measured in the same process. "auto" is tuned first (forward timings, cache in a temp folder).
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
        repeat = args.repeat or 2
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
    cols = list(lstm.VARIANTS) + ["auto"] + (["torch"] if torch is not None else [])
    header = f"{'B':>4} {'H':>5} {'nx':>5} {'T':>4} | " + " ".join(f"{c:>10}" for c in cols) + \
        f" | {'auto picks':>10} {'naive/auto':>10}" + (f" {'torch/auto':>10}" if torch is not None else "") + \
        f" {'auto %peak':>10}"
    print(header)
    print("-" * len(header))
    ok_naive, ok_torch = True, True
    for B, H, nx, T in shapes:
        p = lstm.init_params(nx, H, seed=0)
        X = np.random.default_rng(1).standard_normal((T, B, nx)).astype(np.float32)
        dH = np.random.default_rng(2).standard_normal((T, B, H)).astype(np.float32)
        picked = autotune.decide(B, H, nx, T, "float32")

        def ours(v):
            def run():
                out = lstm.lstm_forward(p, X, variant=v, return_cache=True)
                lstm.lstm_backward(p, out[2], dH)
            return run

        fns = {v: ours(v) for v in lstm.VARIANTS}
        fns["auto"] = ours("auto")
        if torch is not None:
            m = torch.nn.LSTM(nx, H)
            with torch.no_grad():
                for name, arr in (("weight_ih_l0", p.W_ih), ("weight_hh_l0", p.W_hh),
                                  ("bias_ih_l0", p.b_ih), ("bias_hh_l0", p.b_hh)):
                    getattr(m, name).copy_(torch.from_numpy(arr))
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
        pct = 100 * flops / (ms["auto"] * 1e-3) / 1e9 / peak
        r_naive = ms["naive"] / ms["auto"]
        line = f"{B:>4} {H:>5} {nx:>5} {T:>4} | " + " ".join(f"{ms[c]:>10.3f}" for c in cols) + \
            f" | {picked:>10} {r_naive:>9.2f}x"
        ok_naive &= r_naive >= 2.0
        if torch is not None:
            r_t = ms["torch"] / ms["auto"]
            ok_torch &= r_t > 1.0
            line += f" {r_t:>9.2f}x"
        print(line + f" {pct:>9.0f}%")
    print()
    print(f"goal 'auto' >= 2x faster than 'naive' on every shape: {'met' if ok_naive else 'NOT met'}")
    if torch is not None:
        print(f"goal 'auto' faster than torch.nn.LSTM on every shape: {'met' if ok_torch else 'NOT met'}")
    else:
        print("torch is not installed: no torch.nn.LSTM column")
    print("seed (EcoRNN, GPU): up to 3x over MXNet's default LSTM, up to 1.5x over cuDNN")
    if limit is not None:
        limit.restore_original_limits()
    return 0


if __name__ == "__main__":
    sys.exit(main())
