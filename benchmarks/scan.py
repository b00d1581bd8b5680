"""Benchmark: the linear recurrence h_t = a_t h_{t-1} + x_t, H = 128, float32 (chapter 08, seed 001).

    .venv/bin/python benchmarks/scan.py            # T = 2^16 and 2^20
    .venv/bin/python benchmarks/scan.py --quick    # tiny sizes, < 15 s

For each T: sequential numba, chunked on 1 thread and on all threads, parallel over channels,
the numpy references (Blelloch / Hillis-Steele) where feasible, a torch loop when torch imports,
and the CUDA kernels on a GPU when present. Each row: time, GB/s (12 bytes per element: read a
and x, write h) and % of the streaming bandwidth measured in this process by a numba kernel that
does the same traffic (h = a + x), the faster of its 1-thread and all-thread runs.
Goal (issue 6): chunked on all cores >= 70% of that streaming bandwidth and >= 1.6x the
sequential scan on 2 cores.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

import course_lib  # noqa: E402,F401  (before numba)
from course_lib.core import backend, timing  # noqa: E402
from course_lib.algorithms import scan
from numba import njit, prange  # noqa: E402


@njit(parallel=True, cache=True)
def _stream(a, x, h):
    T = a.shape[0]
    for t in prange(T):
        at = a[t]
        xt = x[t]
        ht = h[t]
        for j in range(at.shape[0]):
            ht[j] = at[j] + xt[j]


def _best(fn, repeat):
    fn()
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke test, < 15 s)")
    ap.add_argument("--H", type=int, default=128)
    args = ap.parse_args(argv)
    sizes = [2 ** 11, 2 ** 13] if args.quick else [2 ** 16, 2 ** 20]
    repeat = 2 if args.quick else 5
    H = args.H
    p = backend.cpu_count()
    try:
        import torch  # noqa: PLC0415
    except Exception:  # torch is optional
        torch = None
    print(f"# linear recurrence, H={H}, float32, {p} cores, numba threads {backend.get_threads()}, "
          f"CUDA: {backend.cuda_mode()}, torch: {'yes' if torch is not None else 'no'}")
    print(f"# np.copyto bandwidth: {timing.copy_bandwidth():.1f} GB/s (one read + one write per byte)")
    header = f"{'T':>8}  {'method':<28} {'time':>10} {'GB/s':>7} {'% stream':>9} {'x seq':>7} {'max err':>9}"
    print(header)
    for T in sizes:
        a, x, h0 = scan.random_problem(T, H, seed=0)
        nbytes = 3 * a.nbytes
        h = np.empty_like(a)
        stream_s = _best(lambda: _stream(a, x, h), repeat)
        backend.set_threads(1)
        stream1_s = _best(lambda: _stream(a, x, h), repeat)
        backend.set_threads(p)
        stream_gbs = nbytes / min(stream_s, stream1_s) / 1e9  # the reference: the faster of the two
        ref = scan.linear_recurrence(a, x, h0)
        rows = []

        def add(name, fn, threads=p):
            backend.set_threads(threads)
            try:
                sec = _best(fn, repeat)
                err = float(np.max(np.abs(fn() - ref)) / max(1.0, float(np.max(np.abs(ref)))))
            finally:
                backend.set_threads(p)
            rows.append((name, sec, err))

        # the numba methods write into a preallocated h, like the stream kernel (a fresh result
        # array costs page faults, which threads cannot share out); the references allocate
        add("sequential (numba)", lambda: scan.linear_recurrence(a, x, h0, out=h), threads=1)
        add("sequential, new h each call", lambda: scan.linear_recurrence(a, x, h0), threads=1)
        add("chunked, 1 thread", lambda: scan.linear_recurrence(a, x, h0, method="chunked", chunks=p + 1, out=h),
            threads=1)
        add(f"chunked, {p} threads", lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=h))
        add(f"over channels, {p} threads", lambda: scan.linear_recurrence_channels(a, x, h0, out=h))
        if T <= 2 ** 16:
            add("blelloch (numpy ref.)", lambda: scan.linear_recurrence(a, x, h0, method="blelloch"))
            add("hillis-steele (numpy ref.)", lambda: scan.linear_recurrence(a, x, h0, method="hillis_steele"))
        if torch is not None and T <= 2 ** 16:
            ta, tx = torch.from_numpy(a), torch.from_numpy(x)

            def torch_loop():
                out = torch.empty_like(tx)
                prev = torch.from_numpy(h0)
                for t in range(T):
                    prev = ta[t] * prev + tx[t]
                    out[t] = prev
                return out.numpy()

            add("torch loop", torch_loop)
        if backend.gpu_available():
            from course_lib.algorithms import scan_cuda  # noqa: PLC0415

            add("cuda reduce/scan/expand", lambda: scan_cuda.linear_recurrence_cuda(a, x, h0))
        seq = rows[0][1]
        for name, sec in ((f"stream h=a+x, {p} threads", stream_s), ("stream h=a+x, 1 thread", stream1_s)):
            print(f"{T:>8}  {name:<28} {1e3 * sec:>8.2f}ms {nbytes / sec / 1e9:>7.1f} "
                  f"{100 * nbytes / sec / 1e9 / stream_gbs:>8.0f}% {'':>7} {'':>9}")
        for name, sec, err in rows:
            gbs = nbytes / sec / 1e9
            print(f"{T:>8}  {name:<28} {1e3 * sec:>8.2f}ms {gbs:>7.1f} {100 * gbs / stream_gbs:>8.0f}% "
                  f"{seq / sec:>6.2f}x {err:>9.1e}")
        chunk_row = rows[3]
        gbs = nbytes / chunk_row[1] / 1e9
        print(f"# T={T}: chunked on {p} threads reaches {100 * gbs / stream_gbs:.0f}% of streaming "
              f"(goal >= 70%) and {seq / chunk_row[1]:.2f}x sequential (goal >= 1.6x on 2 cores)")
    print("# seed 001 (K80 GPU): ~50x kernel speedup over a serial-over-time kernel; 104 GB/s = 43% of 240 GB/s at T=65536")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
