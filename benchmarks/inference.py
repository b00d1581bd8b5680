"""Softmax-RNN inference, every method of course_lib.parallel.inference side by side, in one run.

    python benchmarks/inference.py            # three (B, L, H, T) configurations
    python benchmarks/inference.py --quick    # tiny sizes (smoke test, < 15 s)

For each configuration: sequences per second of serial (one sequence at a time, measured on a
few sequences), batched (BLAS with all its threads, and with one thread: the one-core baseline), threads (P workers over the batch), wavefront (threads over the cells
of each anti-diagonal), MPI (``mpiexec -n P``: the slowest rank's scatter + compute + gather, and
separately the whole launch with process start-up), CUDA (only on a real GPU: the simulator is
far too slow to time), and ``torch.nn.RNN`` + linear + softmax when torch imports (same weights,
``SoftmaxRNNParams.to_torch``: torch's ``weight_ih``/``weight_hh`` use the seed's column-vector layout).
GFLOP/s counts the GEMM FLOPs of the pass (``softmax_rnn.flops``); "% of peak" refers to
a 1024^3 sgemm measured in the same process. Every column is checked against batched.

Goal (issue 5): batched >= 10x serial per sequence at B >= 64; threads/MPI reach >= 1.3x
batched at large B on 2 idle cores; torch is the yardstick for batched.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import course_lib  # noqa: F401  (first: backend decisions)
from course_lib.core import backend, timing
from course_lib.core.mpi import MPIFailed
from course_lib.models import softmax_rnn
from course_lib.parallel import inference

HEADER = (f"{'B':>5} {'L':>2} {'H':>4} {'T':>4}  {'method':<25} {'best':>10} {'seq/s':>10} {'GFLOP/s':>8} "
          f"{'% peak':>7} {'x batched':>9} {'max |dp|':>9}")


def torch_predict(params, X, threads):
    """A zero-argument torch inference with the same weights, or None without torch."""
    try:
        import torch
    except Exception:
        return None
    torch.set_num_threads(threads)
    rnn, linear = params.to_torch()
    Xt = torch.from_numpy(X)

    @torch.inference_mode()
    def run():
        hs, _ = rnn(Xt)
        return torch.softmax(linear(hs), dim=-1).numpy()

    return run


def _one_thread(fn, *args):
    with backend.blas_threads(1):
        return fn(*args)


def bench_config(batch, L, nh, T, *, nx, vocab, P, repeat, serial_seqs, peak):
    params = softmax_rnn.init_params(nx, nh, vocab, layers=L, seed=0)
    X = np.random.default_rng(1).standard_normal((T, batch, nx)).astype(np.float32)
    flops = softmax_rnn.flops(T, batch, nx, nh, vocab, L)
    ref = softmax_rnn.forward(params, X)
    Xs = np.ascontiguousarray(X[:, :serial_seqs])
    fns = {
        f"sequential ({serial_seqs} seqs)": (lambda: softmax_rnn.forward(params, Xs, method="sequential"),
                                             serial_seqs, None),
        "batched": (lambda: softmax_rnn.forward(params, X), batch, ref),
        "batched (1 BLAS thread)": (lambda: _one_thread(softmax_rnn.forward, params, X), batch, ref),
        f"threads (P={P})": (lambda: inference.predict_threads(params, X, threads=P), batch, ref),
        f"wavefront (P={P})": (lambda: inference.predict_wavefront(params, X, threads=P), batch, ref),
    }
    tp = torch_predict(params, X, backend.cpu_count())
    if tp is not None:
        fns["torch.nn.RNN"] = (tp, batch, ref)
    if backend.gpu_available():
        fns["cuda (numba kernel)"] = (lambda: inference.predict_cuda(params, X), batch, ref)
    cmp = timing.compare(**{k: v[0] for k, v in fns.items()}, repeat=repeat, warmup=1, baseline="batched")
    rows = []
    t_batched = cmp.timings["batched"].min
    for name, (fn, nseq, want) in fns.items():
        t = cmp.timings[name].min
        diff = float(np.max(np.abs(fn() - (want if want is not None else ref[:, :serial_seqs]))))
        rate = flops * nseq / batch / t / 1e9
        rows.append((name, t, nseq / t, rate, 100 * rate / peak, (nseq / t) / (batch / t_batched), diff))
    ok, why = backend.mpi_available()
    if ok and P <= batch:
        try:
            res = inference.run_mpi(params, X, ranks=P, repeat=repeat)
            t = res.in_job
            diff = float(np.max(np.abs(res.probs - ref)))
            rate = flops / t / 1e9
            rows.append((f"mpi (P={P}, in-job)", t, batch / t, rate, 100 * rate / peak, t_batched / t, diff))
            rows.append((f"mpi (P={P}, whole launch)", res.wall, batch / res.wall, flops / res.wall / 1e9,
                         100 * flops / res.wall / 1e9 / peak, t_batched / res.wall, diff))
        except MPIFailed as exc:
            print(f"  mpi failed: {exc}")
    elif not ok:
        rows.append((f"mpi (skipped: {why[:30]})", float("nan"), float("nan"), float("nan"), float("nan"),
                     float("nan"), float("nan")))
    if not cmp.noise.ok:
        print("  " + cmp.noise.warning())
    for name, t, sps, rate, pct, x, diff in rows:
        print(f"{batch:>5} {L:>2} {nh:>4} {T:>4}  {name:<25} {timing.fmt_seconds(t) if t == t else '-':>10} "
              f"{sps:>10.4g} {rate:>8.2f} {pct:>6.1f}% {x:>8.2f}x {diff:>9.1e}")
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--P", type=int, default=max(2, min(4, backend.cpu_count())), help="workers / MPI ranks")
    args = parser.parse_args(argv)
    if args.quick:
        configs = [(8, 2, 32, 8), (32, 1, 64, 8)]
        repeat, serial_seqs, vocab, nx = 2, 2, 32, 32
    else:
        configs = [(64, 2, 128, 50), (256, 4, 256, 50), (1024, 2, 512, 20)]
        repeat, serial_seqs, vocab, nx = 5, 4, 96, 96
    peak = timing.peak_gflops("float32", n=256 if args.quick else 1024)
    print(f"# softmax-RNN inference, float32; {backend.cpu_count()} cores; sgemm peak {peak:.1f} GFLOP/s; "
          f"CUDA: {backend.cuda_mode()}; MPI: {backend.mpi_available()[0]}")
    print(HEADER)
    for B, L, H, T in configs:
        bench_config(B, L, H, T, nx=nx, vocab=vocab, P=args.P, repeat=repeat, serial_seqs=serial_seqs, peak=peak)
    if not backend.gpu_available():
        print("# cuda: no GPU here -- the numba kernel runs only in the simulator (see the notebook), not timed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
