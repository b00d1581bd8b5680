"""Benchmark: the linear recurrence h_t = a_t h_{t-1} + x_t, float32 (chapter 08, seed 001; issue 13).

    .venv/bin/python benchmarks/scan.py            # full: H = 128 table, the issue-13 goals, the crossover map
    .venv/bin/python benchmarks/scan.py --quick    # tiny sizes, < 30 s (a smoke test: goals not judged)
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/scan.py --skip map,mpi   # issue 42's tables

Everything is measured in this one process with course_lib.core.timing.compare (interleaved repeats;
medians), and every table ends with the run's noise verdict -- on a shared machine the numbers move.

0. Scans at the stream (issue 42): at H = 128, T = 2^20 and at H = 1, T = 2^22, interleaved in one run, the
   streaming rate (scan_kernels.stream: h = a + x, the same bytes without the dependency, all threads and one),
   the one-thread loop, the chunked and channels scans (and chunked at other chunk lengths), each as % of the
   stream with the pairs' interval and the kernel that ran; which limit applies here (the stream, or the
   dependent loop: lanes x threads x the one-thread loop's rate); the goal (>= 85% of the stream) and a verdict.
1. H = 128 table, for each T: sequential numba loop, chunked on 1 thread and on all threads, parallel
   over channels, the numpy references (Blelloch / Hillis-Steele) where feasible, a torch loop when
   torch imports, and the CUDA kernels when a GPU is present. Each row: time, GB/s (12 bytes per
   element: read a and x, write h), % of the streaming bandwidth measured here by a numba kernel
   with the same traffic (h = a + x; the faster of its 1- and all-thread runs), x sequential.
2. Issue 13's goals, each printed with "met" / "not met":
   H = 1, T = 2^22: chunked >= 4x the sequential loop on 2 threads and >= 2.5x on 1 thread;
   H <= 8 (T * H = 2^22): chunked never slower than the sequential loop;
   H = 128, T = 2^20: chunked >= 90% of the 2-thread streaming bandwidth.
2b. The backward pass (the reverse scan): sequential vs chunked at H = 1 and H = 128.
3. The crossover map: for T and H from 1 to 512 (T * H <= 2^24), which of sequential / over channels /
   over time wins, with its speed-up over the sequential loop.
4. The scan as matmuls (issue 25): the gated linear recurrence S_t = a_t S_{t-1} + k_t v_t^T, o_t = S_t^T q_t
   (one head, d_k = d_v = d = 64 and 128) at T = 2^10 ... 2^16: the numba loop, chapter 08's element-wise scan
   over the flattened state and the chunked matmul form, time per token; the chunked form's GFLOP/s as a % of
   the GEMM peak measured in this process; a chunk-size sweep at the longest T; at the best chunk, the call with its
   products on each GEMM library this machine has (numpy's BLAS; oneMKL and BLIS with the [fast] extra), the share of
   the time spent in matrix products (the whole call timed beside its products alone) vs the rest, and the same
   call on one thread stage by stage (each product's shape and GFLOP/s, each fused element-wise pass, the input
   checks); issue 25's goals (>= 60% of the GEMM peak at the best chunk with the fastest library, >= 3x the element-wise scan at the longest T).
5. The scan across MPI ranks (ranks 1, 2): per-rank compute, the exscan, wall time with MPI start-up, the
   message bytes, and the ping-pong's latency/bandwidth, for the element-wise scan and the chunked form.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import course_lib  # noqa: F401  (first: it decides GPU vs CUDA simulator before numba loads)
import numba
import numpy as np

from course_lib.algorithms import scan, scan_kernels
from course_lib.core import backend, timing
from course_lib.experiments import linear_attention as linear_attention_exp
from course_lib.experiments import scan as xscan
from numba import njit


@njit(cache=True)
def _register_loop(a, x, h0, h):
    """The serial loop for one channel with its carry in a register (no array in the chain): the
    fastest a one-lane loop can be, shown beside ``method="sequential"`` for honesty."""
    c = h0[0]
    for t in range(a.shape[0]):
        c = a[t, 0] * c + x[t, 0]
        h[t, 0] = c


def _stream_gbs(a, x, h, repeat):
    p = int(numba.config.NUMBA_NUM_THREADS)
    c = timing.compare(repeat=repeat, **{f"{n}": backend.on_threads(n, lambda: scan_kernels.stream(a, x, h)) for n in (1, p)})
    nbytes = 3 * a.nbytes
    return {int(k): nbytes / t.median / 1e9 for k, t in c.timings.items()}, c.noise


def stream_table(quick, repeat):
    """Issue 42 item 5: the scans as a share of the stream measured in the same run, and the limit that applies."""
    from course_lib.teaching.verdict import verdict

    p = int(numba.config.NUMBA_NUM_THREADS)
    cases = ((128, 2 ** 14 if quick else 2 ** 20), (1, 2 ** 14 if quick else 2 ** 22))
    print(f"\n## 0. Scans at the stream: float32, {p} numba threads (goal: >= 85% of the stream)")
    for H, T in cases:
        L = scan.chunk_steps(H, 4)
        sweep = () if H < 16 else tuple(c for c in (L // 4, 4 * L) if c <= T)
        r = xscan.stream_share(T, H, chunks=sweep, repeat=repeat)
        cmp = r["comparison"]
        print(f"H = {H}, T = {T} ({3 * 4 * T * H / 1e6:.1f} MB moved per call), lanes per channel {r['lanes']}, "
              f"default chunk {L} steps")
        print(f"  {'':<26} {'median':>9} {'GB/s':>7} {'% stream':>9} {'interval':>15}  kernel")
        for name, t in cmp.timings.items():
            share = r["share"].get(name)
            lo_hi = r["share_interval"].get(name)
            cell = f"{100 * share:>8.0f}% [{100 * lo_hi[0]:>5.0f}, {100 * lo_hi[1]:>5.0f}]%" if share else f"{'':>25}"
            print(f"  {name:<26} {1e3 * t.median:>7.2f}ms {r['gbs'][name]:>7.1f} {cell}  {r['kernel'].get(name, '')}")
        best = max(r["share"], key=r["share"].get)
        print(f"  limit: {xscan.limit_reason(r)}")
        print(f"  best scan {best!r}: {100 * r['share'][best]:.0f}% of the stream, {100 * r['of_limit'][best]:.0f}% of the "
              f"limit that applies -- goal >= 85% of the stream: "
              f"{'met' if r['share'][best] >= 0.85 else 'not met'}{' (quick sizes: not judged)' if quick else ''}")
        lo, hi = r["share_interval"][best]
        print("  " + str(verdict("001.bandwidth.fraction", 100 * r["share"][best], pivot=None, unit="%",
                                 here=f"{best}, {p} CPU threads, H = {H}, T = {T}, % of the stream measured here",
                                 noise=cmp.noise, interval=(100 * lo, 100 * hi),
                                 reasons=[(r["limit"] == "dependent loop", xscan.limit_reason(r)),
                                          (r["limit"] == "stream", xscan.limit_reason(r))])))
        if not cmp.noise.ok:
            print("  # " + cmp.noise.warning())


def table_h128(sizes, nh, repeat, torch):
    p = int(numba.config.NUMBA_NUM_THREADS)
    print(f"\n## 1. H = {nh}, float32")
    print(f"{'T':>8}  {'method':<30} {'time':>10} {'GB/s':>7} {'% stream':>9} {'x seq':>7} {'max err':>9}")
    for T in sizes:
        a, x, h0 = scan.random_problem(T, nh, seed=0)
        nbytes = 3 * a.nbytes
        h = np.empty_like(a)
        stream, s_noise = _stream_gbs(a, x, h, repeat)
        best_stream = max(stream.values())
        ref = scan.recurrence_float64(a, x, h0)
        fns = {"sequential (numba)": lambda: scan.linear_recurrence(a, x, h0, out=h),
               "sequential, new h each call": lambda: scan.linear_recurrence(a, x, h0),
               "chunked, 1 thread": backend.on_threads(1, lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=h)),
               f"chunked, {p} threads": lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=h),
               f"over channels, {p} threads": lambda: scan.linear_recurrence(a, x, h0, method="channels", out=h)}
        if T <= 2 ** 16:
            fns["blelloch (numpy ref.)"] = lambda: scan.linear_recurrence(a, x, h0, method="blelloch")
            fns["hillis-steele (numpy ref.)"] = lambda: scan.linear_recurrence(a, x, h0, method="hillis_steele")
        if torch is not None and T <= 2 ** 16:
            ta, tx = torch.from_numpy(a), torch.from_numpy(x)

            def torch_loop():
                out = torch.empty_like(tx)
                prev = torch.from_numpy(h0)
                for t in range(T):
                    prev = ta[t] * prev + tx[t]
                    out[t] = prev
                return out.numpy()

            fns["torch loop"] = torch_loop
        if backend.gpu_available():
            fns["cuda reduce/scan/expand"] = lambda: scan.linear_recurrence(a, x, h0, method="cuda_chunked")
        errs = {}
        for name, fn in fns.items():
            out = fn()
            out = h if out is None else out
            errs[name] = float(np.max(np.abs(out - ref)) / max(1.0, float(np.max(np.abs(ref)))))
        c = timing.compare(repeat=repeat, **fns)
        for n, gbs in stream.items():
            print(f"{T:>8}  {f'stream h=a+x, {n} thread(s)':<30} {1e3 * nbytes / gbs / 1e9:>8.2f}ms {gbs:>7.1f} "
                  f"{100 * gbs / best_stream:>8.0f}%")
        for name, t in c.timings.items():
            gbs = nbytes / t.median / 1e9
            print(f"{T:>8}  {name:<30} {1e3 * t.median:>8.2f}ms {gbs:>7.1f} {100 * gbs / best_stream:>8.0f}% "
                  f"{c.speedup(name):>6.2f}x {errs[name]:>9.1e}")
        like = c.timings[f"over channels, {p} threads"].median / c.timings[f"chunked, {p} threads"].median
        print(f"# T={T}: like-for-like with seed 001 (its serial kernel is parallel over channels): "
              f"chunked / channels = {like:.2f}x")
        noise = c.noise | s_noise
        if not noise.ok:
            print("# " + noise.warning())


def goals(quick, repeat):
    p = int(numba.config.NUMBA_NUM_THREADS)
    T1 = 2 ** 14 if quick else 2 ** 22
    print(f"\n## 2. Issue 13 goals (measured in this process; {p} numba threads available)")
    a, x, h0 = scan.random_problem(T1, 1, seed=0)
    h = np.empty_like(a)
    fns = {"sequential": lambda: scan.linear_recurrence(a, x, h0, out=h),
           "register loop (1 channel)": lambda: _register_loop(a, x, h0, h),
           "chunked, 1 thread": backend.on_threads(1, lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=h))}
    for n in range(2, p + 1):
        fns[f"chunked, {n} threads"] = backend.on_threads(n, lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=h))
    c = timing.compare(repeat=repeat, **fns)
    nbytes = 3 * a.nbytes
    print(f"H = 1, T = {T1}, lanes per channel {scan.choose_lanes(1, 4)}:")
    for name, t in c.timings.items():
        print(f"  {name:<28} {1e3 * t.median:>8.2f} ms {nbytes / t.median / 1e9:>6.1f} GB/s {c.speedup(name):>6.2f}x sequential")
    verdicts = []
    if p >= 2:
        verdicts.append(("H=1: chunked on 2 threads >= 4x sequential", c.speedup("chunked, 2 threads") >= 4.0))
    verdicts.append(("H=1: chunked on 1 thread >= 2.5x sequential", c.speedup("chunked, 1 thread") >= 2.5))
    noise = c.noise
    for H in (1, 2, 4, 8):
        T = max(16, T1 // H)
        a, x, h0 = scan.random_problem(T, H, seed=1)
        h = np.empty_like(a)
        cc = timing.compare(repeat=repeat, sequential=lambda: scan.linear_recurrence(a, x, h0, out=h),
                            chunked=lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=h))
        noise = noise | cc.noise
        # "never slower": judged on the best repeat of each (medians of two runs of the *same* loop --
        # chunked runs the sequential loop for 5..16 channels -- differ by the machine's noise)
        best = cc.timings["sequential"].min / cc.timings["chunked"].min
        print(f"H = {H}, T = {T}: chunked {cc.speedup('chunked'):.2f}x sequential (best repeats {best:.2f}x; "
              f"lanes {scan.choose_lanes(H, 4)}, time chunks {scan.choose_chunks(T, H)})")
        verdicts.append((f"H={H}: chunked not slower than sequential", best >= 0.95))
    T = 2 ** 14 if quick else 2 ** 20
    a, x, h0 = scan.random_problem(T, 128, seed=2)
    h = np.empty_like(a)
    stream, s_noise = _stream_gbs(a, x, h, repeat)
    cc = timing.compare(repeat=repeat, chunked=lambda: scan.linear_recurrence(a, x, h0, method="chunked", out=h))
    gbs = 3 * a.nbytes / cc.timings["chunked"].median / 1e9
    ref = stream[p]
    print(f"H = 128, T = {T}: chunked {gbs:.1f} GB/s = {100 * gbs / ref:.0f}% of the {p}-thread stream ({ref:.1f} GB/s)")
    verdicts.append((f"H=128: chunked >= 90% of the {p}-thread streaming bandwidth", gbs >= 0.9 * ref))
    noise = noise | cc.noise | s_noise
    for text, ok in verdicts:
        print(f"  [{'met' if ok else 'NOT met'}{'' if not quick else ', quick sizes: not judged'}] {text}")
    if not noise.ok:
        print("# " + noise.warning())


def backward(quick, repeat):
    """The backward pass is the reverse scan (scan.linear_recurrence_backward): the same methods.
    Measured twice (experiments.scan.backward_speedup): the reverse scan alone (the forward code on
    the time-reversed inputs, what the methods parallelise) and the whole backward call (plus
    reversing the inputs and forming dL/da, element-wise work that no scan method changes)."""
    p = int(numba.config.NUMBA_NUM_THREADS)
    print(f"\n## 2b. The backward pass: the reverse scan (linear_recurrence_backward), {p} numba threads")
    print(f"{'H':>4} {'T':>8} | {'reverse scan: seq':>17} {'chunked':>9} {'x seq':>6} | "
          f"{'whole backward: seq':>19} {'chunked':>9} {'x seq':>6} | {'scan share':>10}")
    noise = None
    for H, T in ((1, 2 ** 14 if quick else 2 ** 22), (128, 2 ** 12 if quick else 2 ** 20)):
        r = xscan.backward_speedup(T, H, repeat=repeat)
        ms = r["ms"]
        print(f"{H:>4} {T:>8} | {ms['scan_seq']:>15.2f}ms {ms['scan_par']:>7.2f}ms {r['scan_speedup']:>5.2f}x | "
              f"{ms['whole_seq']:>17.2f}ms {ms['whole_par']:>7.2f}ms {r['whole_speedup']:>5.2f}x | "
              f"{100 * r['scan_share']:>9.0f}%   (max rel. diff {r['max_rel_diff']:.1e})")
        noise = r["noise"] if noise is None else (noise | r["noise"])
    print("# scan share: the serial reverse scan's part of the serial backward -- the most any scan method can remove")
    if not noise.ok:
        print("# " + noise.warning())


def crossover_map(quick, repeat):
    Ts = [2 ** k for k in ((6, 10, 14) if quick else (4, 7, 10, 13, 16, 19, 22))]
    Hs = [1, 8, 64] if quick else [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    data = xscan.crossover(Ts, Hs, repeat=repeat, max_elements=1 << (16 if quick else 24))
    print("\n## 3. Crossover map: the fastest of S = sequential, C = over channels, T = over time (x sequential)")
    corner = "H / T"
    print(f"{corner:>6} " + " ".join(f"{'2^' + str(int(np.log2(T))):>8}" for T in Ts))
    for H in Hs:
        cells = []
        for T in Ts:
            cell = data["cells"].get((T, H))
            if cell is None:
                cells.append(f"{'.':>8}")
            else:
                w = cell["winner"]
                cells.append(f"{ {'sequential': 'S', 'channels': 'C', 'chunked': 'T'}[w] } {cell['speedup'][w]:>5.2f}")
        print(f"{H:>6} " + " ".join(f"{c:>8}" for c in cells))
    if not data["noise"].ok:
        print("# " + data["noise"].warning())


def matmuls(quick, repeat):
    Ts = [2 ** k for k in ((8, 10) if quick else (10, 12, 14, 16))]
    ds = (16, 32) if quick else (64, 128)
    peak = linear_attention_exp.gemm_peak()
    print(f"\n## 4. The scan as matmuls: gated linear recurrence, one head, float32, {backend.cpu_count()} cores")
    print(f"# GEMM peak measured here (1024^3 float32, all cores): {peak:.1f} GFLOP/s")
    print(f"{'d':>4} {'T':>6} {'chunk':>5} | {'loop ns/tok':>11} {'scan ns/tok':>11} {'chunked ns/tok':>14} | "
          f"{'GFLOP/s':>7} {'% peak':>6} {'x scan':>7} {'x loop':>7}")
    longest = {}
    for d in ds:
        res = linear_attention_exp.methods_vs_T(Ts, d, repeat=repeat, peak=peak, max_scan_elements=1 << (20 if quick else 28))
        for r in res["rows"]:
            pt = r["per_token"]
            cell = lambda m: f"{1e9 * pt[m]:>11.0f}" if m in pt else f"{'(skipped)':>11}"  # noqa: E731
            xs = f"{r['x_scan']:>6.1f}x" if "x_scan" in r else f"{'-':>7}"
            print(f"{d:>4} {r['T']:>6} {r['chunk']:>5} | {cell('sequential')} {cell('scan')} {1e9 * pt['chunked']:>14.0f} | "
                  f"{r['gflops']:>7.1f} {r['pct_peak']:>5.0f}% {xs} {r['x_sequential']:>6.2f}x")
            if "x_scan" in r:
                longest[d] = r
        if not res["noise"].ok:
            print("# " + res["noise"].warning())
    print("# chunk sweep at the longest T (time per token, % of the GEMM peak timed interleaved with the sweep)")
    goals = []
    for d in ds:
        sw = linear_attention_exp.chunk_sweep(Ts[-1], d, (16, 32, 64, 128, 256) if not quick else (16, 32, 64), repeat=repeat)
        print(f"d = {d:>3}, T = {Ts[-1]} (GEMM peak timed between them: {sw['peak']:.1f} GFLOP/s): "
              + ", ".join(f"c={r['chunk']}: {1e9 * r['per_token']:.0f} ns ({r['pct_peak']:.0f}%)" for r in sw["rows"]))
        b = sw["best"]
        if not sw["noise"].ok:
            print("# " + sw["noise"].warning())
        race = linear_attention_exp.provider_race(Ts[-1], d, chunk=b["chunk"], repeat=repeat)
        print(f"d = {d:>3}, T = {Ts[-1]}, c = {b['chunk']}, the products on each GEMM library (GEMM peak timed between "
              f"them: {race['peak']:.1f} GFLOP/s): " + "; ".join(
                  f"{r['provider']}: whole call {1e9 * r['per_token']:.0f} ns ({r['pct_peak']:.0f}%), products alone "
                  f"{1e9 * r['products_per_token']:.0f} ns ({r['products_pct_peak']:.0f}%)" for r in race["rows"])
              + "".join(f"; {why}" for why in race["absent"].values()))
        if not race["noise"].ok:
            print("# " + race["noise"].warning())
        top = race["best"]
        goals.append((f"d = {d}: chunked >= 60% of the GEMM peak at its best chunk (c = {b['chunk']}, products on "
                      f"{top['provider']}, the fastest library here)", top["pct_peak"] >= 60,
                      f"{top['pct_peak']:.0f}% (its products alone: {top['products_pct_peak']:.0f}%, a bound on the call)"))
        ps = linear_attention_exp.product_share(Ts[-1], d, chunk=b["chunk"], repeat=repeat)
        lo, hi = ps["products_interval"]
        print(f"d = {d:>3}, T = {Ts[-1]}, c = {ps['chunk']}: matrix products {100 * ps['products_share']:.0f}% of the time "
              f"(interval {100 * lo:.0f}..{100 * hi:.0f}%), the rest (element-wise passes, state scan, bookkeeping) "
              f"{100 * (1 - ps['products_share']):.0f}%; the products alone run at {ps['products_pct_peak']:.0f}% of the "
              f"GEMM peak timed between them ({ps['peak']:.1f} GFLOP/s), the whole call at {ps['pct_peak']:.0f}%")
        if not ps["noise"].ok:
            print("# " + ps["noise"].warning())
        _stage_table(Ts[-1], d, b["chunk"], repeat)
    for d, r in longest.items():
        goals.append((f"d = {d}: chunked >= 3x the element-wise scan at T = {r['T']} (longest T with the scan)",
                      r["x_scan"] >= 3, f"{r['x_scan']:.1f}x"))
    print("# issue 25 goals" + (" (quick run: sizes too small to judge)" if quick else ""))
    for text, ok, val in goals:
        print(f"{text}: {val} -- {'met' if ok else 'not met'}")


def _stage_table(T, d, chunk, repeat):
    """The chunked form at its best chunk on ONE thread, stage by stage: what each product and each fused pass costs."""
    st = linear_attention_exp.stage_times(T, d, chunk=chunk, repeat=repeat)
    print(f"d = {d:>3}, T = {T}, c = {chunk}, one thread (GEMM peak on one thread {st['peak']:.1f} GFLOP/s): whole call "
          f"{1e9 * st['whole'] / T:.0f} ns/token; products {100 * st['products_share']:.0f}% of it")
    for r in st["rows"]:
        what = (f"{r['shape'][3]} x ({r['shape'][0]}x{r['shape'][1]})({r['shape'][1]}x{r['shape'][2]}): "
                f"{r['gflops']:.1f} GFLOP/s ({r['pct_peak']:.0f}% of the one-thread peak)") if "shape" in r else r["kind"]
        print(f"    {r['stage']:<16} {1e9 * r['seconds'] / T:>6.0f} ns/token {100 * r['share']:>4.0f}%  {what}")
    rest = 1 - sum(r["share"] for r in st["rows"])
    print(f"    {'(not in a stage)':<16} {1e9 * rest * st['whole'] / T:>6.0f} ns/token {100 * rest:>4.0f}%  "
          f"bookkeeping between the stages, thread hand-offs, the output's layout")
    if not st["noise"].ok:
        print("# " + st["noise"].warning())


def mpi_table(quick, repeat):
    ok, why = backend.mpi_available()
    print("\n## 5. The scan across MPI ranks (one node; processes, not threads)")
    if not ok:
        print(f"# skipped: MPI is not available ({why})")
        return
    T = 2 ** 12 if quick else 2 ** 18
    res = linear_attention_exp.mpi_split(T, nh=128, d=64, ranks=(1, 2), repeat=repeat)
    print(f"# ping-pong: latency {1e6 * res['alpha_s']:.1f} us, bandwidth {res['beta_gbs']:.1f} GB/s (measured on one node, shared memory)")
    print(f"{'kind':<12} {'T':>7} {'ranks':>5} {'compute ms':>10} {'x 1 rank':>8} {'exscan ms':>9} {'msg bytes':>9} "
          f"{'wall s':>7} {'max err':>8}")
    one = {r["kind"]: r["compute"] for r in res["rows"] if r["ranks"] == 1}
    for r in res["rows"]:
        print(f"{r['kind']:<12} {T:>7} {r['ranks']:>5} {1e3 * r['compute']:>10.2f} {one[r['kind']] / r['compute']:>7.2f}x "
              f"{1e3 * r['exscan']:>9.3f} {r['message_bytes']:>9} {r['wall']:>7.2f} {r['max_rel_error']:>8.1e}")
    print("# compute = reduce + expand on the slowest rank (fastest of the rounds); wall includes MPI start-up")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke test, < 30 s)")
    ap.add_argument("--H", type=int, default=128)
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: stream,table,goals,backward,map,matmuls,mpi")
    args = ap.parse_args(argv)
    sizes = [2 ** 11, 2 ** 13] if args.quick else [2 ** 16, 2 ** 20]
    repeat = 2 if args.quick else 5
    skip = set(filter(None, args.skip.split(",")))
    try:
        import torch
    except Exception:  # torch is optional
        torch = None
    p = int(numba.config.NUMBA_NUM_THREADS)
    print(f"# linear recurrence, float32, {backend.cpu_count()} cores ({backend.cpu_model()}), numba threads {p}, "
          f"CUDA: {backend.cuda_mode()}, torch: {'yes' if torch is not None else 'no'}")
    print(f"# BLAS: {backend.report()['BLAS']} (threadpoolctl); OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE', '(unset)')}")
    print(f"# np.copyto bandwidth: {timing.copy_bandwidth():.1f} GB/s (one read + one write per byte)")
    if "stream" not in skip:
        stream_table(args.quick, repeat)
    if "table" not in skip:
        table_h128(sizes, args.H, repeat, torch)
    if "goals" not in skip:
        goals(args.quick, repeat)
    if "backward" not in skip:
        backward(args.quick, repeat)
    if "map" not in skip:
        crossover_map(args.quick, 3 if not args.quick else 2)
    if "matmuls" not in skip:
        matmuls(args.quick, repeat if not args.quick else 2)
    if "mpi" not in skip:
        mpi_table(args.quick, 3 if not args.quick else 1)
    from course_lib.teaching.claims import claim

    k = claim("001.summary.kernel_speedup")
    b = claim("001.bandwidth.fraction")
    print(f"# seed 001 ({k.conditions}): {k.formatted()} kernel speed-up; bandwidth {b.formatted()} of peak")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
