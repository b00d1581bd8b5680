"""Benchmark: seed 001's experiment on a real GPU -- the linear-recurrence scan against the serial kernel.

    python benchmarks/gpu.py --json benchmarks/results/gpu-<card>.json   # a CUDA GPU: about 2 minutes
    python benchmarks/gpu.py --quick                                       # tiny sizes; runs in the simulator too

Seed 001 (a Tesla K80, hidden size 128) reports its parallel kernel "around 50X" faster than a serial kernel that
"is parallelized over the hidden dimensions", "fairly constant across many sequence lengths ranging from tens of
thousands of time steps to millions"; at T = 524,288 the reduce / scan / expand kernels took 35.8% / 0.4% / 63.8%;
and at T = 65,536 the kernel moved 104 GB/s, 43% of the card's 240 GB/s. This script repeats those three
measurements on the GPU it finds, for three kernels (numba CUDA, float32, ``(T, N)`` layout, N = 128):

- ``serial``: one CUDA thread per channel walks all T steps (the seed's baseline);
- ``scan (threads along time)``: chapter 08's three kernels, ``course_lib.algorithms.scan_cuda`` -- the one to
  learn from; a warp reads 32 addresses ``chunk * N`` floats apart;
- ``scan (coalesced)``: ``course_lib.algorithms.scan_cuda_coalesced`` -- a warp reads 32 neighbouring channels.

Every kernel is timed with CUDA events on data already on the device (median of ``--repeat`` launches after a
warm-up), checked against the CPU loop (numba, float32), and its bandwidth is the recurrence's 12 bytes per
element (read a and x, write h) as a % of a streaming kernel with the same traffic, measured in the same run.
Then a launch-size sweep at T = 2^20, and chapter 07's batched inference on the GPU beside the CPU.
``--json PATH`` writes every number (and the card, driver and versions) for the repository's record.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import course_lib  # noqa: F401  (first: it decides GPU vs CUDA simulator before numba loads)
import numba
import numpy as np

from course_lib.algorithms import scan, scan_cuda, scan_cuda_coalesced as coalesced
from course_lib.core import backend
from course_lib.experiments import scan_gpu
from course_lib.teaching import claims
from numba import cuda

SEED_CLAIMS = ("001.summary.kernel_speedup", "001.phases.reduce", "001.phases.scan", "001.phases.expand",
               "001.bandwidth.gbs", "001.bandwidth.fraction")

def table(sizes, N, repeat) -> list[dict]:
    print(f"\n1. serial kernel vs the scan, N = {N} channels, float32 (CUDA events, median of {repeat})")
    print(claims.show("001.summary.kernel_speedup", "001.bandwidth.gbs", "001.bandwidth.fraction"))
    print(f"{'T':>9}  {'kernel':<27} {'time':>10} {'GB/s':>8} {'% stream':>9} {'x serial':>9} {'max |err|':>10}")
    rows = []
    for T in sizes:
        for r in scan_gpu.layouts(T, N, repeat=repeat, seed=T):
            rows.append(r)
            print(f"{T:>9}  {r['kernel']:<27} {r['median_s'] * 1e3:>8.3f}ms {r['gbs']:>8.1f} {r['pct_stream']:>8.1f}% "
                  f"{r['speedup_over_serial']:>8.2f}x {r['max_abs_err']:>10.1e}")
        print(f"{T:>9}  {'stream (h = a + x)':<27} {'':>10} {rows[-1]['stream_gbs']:>8.1f}")
    return rows


def phases(T, N, repeat) -> dict:
    print(f"\n2. seed 001's phase split at T = {T}, N = {N}")
    print(claims.show("001.phases.reduce", "001.phases.scan", "001.phases.expand"))
    a, x, h0 = scan.random_problem(T, N, seed=3)
    out = {}
    for name, steps in scan_gpu.kernels(a, x, h0)["phases"].items():
        times = {p: scan_gpu.event_seconds(steps[p], repeat)["median_s"] for p in ("reduce", "scan", "expand")}
        total = sum(times.values())
        out[name] = {p: {"s": s, "frac": s / total} for p, s in times.items()}
        print(f"  {name:<27} " + "  ".join(f"{p} {s * 1e3:.3f} ms ({100 * s / total:.1f}%)" for p, s in times.items()))
    return out


def sweep(T, N, repeat) -> list[dict]:
    print(f"\n3. launch sizes at T = {T}, N = {N}: time (ms) of each kernel pair")
    a, x, h0 = scan.random_problem(T, N, seed=5)
    ref = scan.linear_recurrence(a, x, h0, method="sequential")
    rows = []
    for block in (64, 256, 1024):
        for chunk in (16, 64, 256):
            steps = scan_cuda.phase_steps(a, x, h0, block=block, chunk=chunk)
            rows.append(_sweep_row("scan (threads along time)", {"block": block, "chunk": chunk}, steps, ref, repeat))
    for workers in (4, 8, 16, 32):
        for chunk in (16, 64, 256):
            steps = coalesced.tiled_phase_steps(a, x, h0, workers=workers, chunk=chunk)
            rows.append(_sweep_row("scan (coalesced)", {"workers": workers, "chunk": chunk}, steps, ref, repeat))
    for r in sorted(rows, key=lambda r: r["median_s"]):
        print(f"  {r['kernel']:<27} {str(r['launch']):<32} {r['median_s'] * 1e3:8.3f} ms  err {r['max_abs_err']:.1e}")
    return rows


def _sweep_row(kernel, launch, steps, ref, repeat):
    def go():
        steps["reduce"]()
        steps["scan"]()
        steps["expand"]()
    t = scan_gpu.event_seconds(go, repeat)
    return {"kernel": kernel, "launch": launch, **t, "max_abs_err": float(np.max(np.abs(steps["result"]() - ref)))}


def inference_rows(quick, repeat) -> list[dict]:
    """Chapter 07's batched inference (softmax RNN) on the GPU beside the CPU's batched BLAS pass."""
    from course_lib.models import softmax_rnn
    from course_lib.parallel import inference
    B, L, H, T, nx, vocab = (4, 1, 8, 4, 8, 8) if quick else (1024, 2, 512, 100, 128, 256)
    print(f"\n4. chapter 07: batched inference, B={B} L={L} H={H} T={T} nx={nx} vocab={vocab}")
    params = softmax_rnn.init_params(nx, H, vocab, layers=L, seed=0)
    X = np.random.default_rng(1).standard_normal((T, B, nx)).astype(np.float32)
    ref = softmax_rnn.forward(params, X)
    rows = []
    for name, fn in (("cpu batched (numpy + BLAS)", lambda: softmax_rnn.forward(params, X)),
                     ("cuda_batched (one launch per cell, host copies included)",
                      lambda: inference.predict_cuda(params, X))):
        fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
        err = float(np.max(np.abs(out - ref)))
        rows.append({"method": name, "median_s": statistics.median(times), "min_s": min(times), "max_abs_err": err})
        print(f"  {name:<58} {statistics.median(times) * 1e3:9.2f} ms  err {err:.1e}")
    return rows


def machine() -> dict:
    info = {"cuda_mode": backend.cuda_mode(), "numba": numba.__version__, "numpy": np.__version__,
            "python": platform.python_version(), "cpu": backend.cpu_name() if hasattr(backend, "cpu_name") else
            platform.processor(), "cpu_count": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    try:
        import numba_cuda
        info["numba_cuda"] = getattr(numba_cuda, "__version__", "?")
    except ImportError:
        info["numba_cuda"] = "not installed"
    if backend.cuda_mode() == "gpu":
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        info.update(gpu=name, compute_capability=list(dev.compute_capability), sm_count=dev.MULTIPROCESSOR_COUNT,
                    driver=".".join(map(str, cuda.cudadrv.driver.driver.get_version())))
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test; also in the simulator)")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--json", default=None, help="write every number to this file")
    args = ap.parse_args(argv)
    info = machine()
    print("machine:", json.dumps(info))
    if info["cuda_mode"] != "gpu" and not args.quick:
        print("no CUDA GPU here (numba runs its simulator): run with --quick for a smoke test, or on a GPU")
        return 0
    repeat = args.repeat or (1 if args.quick else 20)
    if args.quick:
        sizes, N, pT, sT = [16], 2, 16, 16
    else:
        sizes, N, pT, sT = [1 << 14, 1 << 16, 1 << 18, 524_288, 1 << 20, 1 << 22], 128, 524_288, 1 << 20
    result = {"machine": info, "table": table(sizes, N, repeat), "phases": phases(pT, N, repeat)}
    if not args.quick:
        result["sweep"] = sweep(sT, N, max(5, repeat // 2))
    result["inference"] = inference_rows(args.quick, max(2, repeat // 4))
    result["seed001"] = {cid: claims.claim(cid).value for cid in SEED_CLAIMS}
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
