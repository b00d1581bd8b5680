"""Seed 001's GPU experiment: the serial kernel against the scan, and what the thread layout does (chapter 08).

``event_seconds(fn, repeat)``   median / min of a launch timed with CUDA events (wall time in the simulator)
``layouts(T, N, repeat)``       the serial kernel, the scan with threads along time (``scan_cuda``) and the
                                coalesced scan (``scan_cuda_coalesced``) on the same device-resident problem:
                                time, GB/s, % of a streaming kernel with the same traffic, speed-up over serial
``record(path)``                a stored run of ``benchmarks/gpu.py --json``: the rows of its first table, labelled
                                with the card and date it was measured on; by default the course's H200 run,
                                ``RECORD`` (shipped inside the package, ``experiments/recorded/``, so that an
                                installed course without a GPU still shows it)

The bandwidth counts the recurrence's 12 bytes per element (read a and x, write h; float32).
"""
from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

import numpy as np

from ..algorithms import scan, scan_cuda, scan_cuda_coalesced as coalesced
from ..core import backend
from ..core.validate import check_positive_int

from numba import cuda

__all__ = ["BYTES_PER_ELEMENT", "KERNELS", "RECORD", "event_seconds", "kernels", "layouts", "record", "stream_kernel"]

BYTES_PER_ELEMENT = 12
KERNELS = ("serial", "scan (threads along time)", "scan (coalesced)")
RECORD = Path(__file__).resolve().parent / "recorded" / "gpu-nvidia-h200.json"   # package data (pyproject)

# Host-side API, bound once (the simulator swaps the module global ``cuda`` while a kernel runs).
_to_device, _device_array, _synchronize, _event = cuda.to_device, cuda.device_array, cuda.synchronize, cuda.event


@cuda.jit
def stream_kernel(a, x, h):
    """The bandwidth reference: h = a + x over ``(T, N)``, grid-stride, no dependency between elements."""
    T, N = a.shape
    for i in range(cuda.grid(1), T * N, cuda.gridsize(1)):
        h[i // N, i % N] = a[i // N, i % N] + x[i // N, i % N]


def event_seconds(fn, repeat: int) -> dict:
    """``{"median_s", "min_s", "repeat"}`` of ``fn()`` (a launch that synchronises) after one warm-up call,
    timed with CUDA events on a GPU; in the simulator (no events) by the wall clock."""
    repeat = check_positive_int(repeat, "repeat")
    fn()
    times = []
    for _ in range(repeat):
        if backend.cuda_mode() != "gpu":
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
            continue
        start, stop = _event(), _event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return {"median_s": statistics.median(times), "min_s": min(times), "repeat": repeat}


def kernels(a, x, h0) -> dict:
    """The three kernels (and ``"stream"``) on the same device-resident ``a, x (T, N)``, ``h0 (N,)``:
    name -> ``(launch, result, launch_sizes)``; each launch synchronises and may be repeated."""
    d_a, d_x, d_h0 = _to_device(a), _to_device(x), _to_device(h0)
    d_h = _device_array(a.shape, a.dtype)
    N = a.shape[1]
    blocks = 4 * (cuda.get_current_device().MULTIPROCESSOR_COUNT if backend.cuda_mode() == "gpu" else 1)

    def serial():
        coalesced.serial_kernel[math.ceil(N / 128), 128](d_a, d_x, d_h0, d_h)
        _synchronize()

    def stream():
        stream_kernel[blocks, 256](d_a, d_x, d_h)
        _synchronize()

    def three(steps):
        def run():
            for phase in ("reduce", "scan", "expand"):
                steps[phase]()
        return run

    along = scan_cuda.phase_steps(a, x, h0)
    tiled = coalesced.tiled_phase_steps(a, x, h0)
    return {"serial": (serial, d_h.copy_to_host, {"block": 128}),
            "scan (threads along time)": (three(along), along["result"],
                                          {k: along[k] for k in ("block", "chunk", "grid")}),
            "scan (coalesced)": (three(tiled), tiled["result"], {k: tiled[k] for k in ("workers", "chunk", "grid")}),
            "stream": (stream, d_h.copy_to_host, {"blocks": blocks}),
            "phases": {"scan (threads along time)": along, "scan (coalesced)": tiled}}


def layouts(T: int, N: int, *, repeat: int = 10, seed: int = 0) -> list[dict]:
    """Time the serial kernel and both scans on one problem ``(T, N)`` (float32); every result is checked
    against the CPU loop. Rows: ``{"T", "N", "kernel", "launch", "median_s", "min_s", "gbs", "stream_gbs",
    "pct_stream", "speedup_over_serial", "max_abs_err"}``."""
    T, N = check_positive_int(T, "T"), check_positive_int(N, "N")
    a, x, h0 = scan.random_problem(T, N, seed=seed)
    ref = scan.linear_recurrence(a, x, h0, method="sequential")
    ks = kernels(a, x, h0)
    stream_gbs = BYTES_PER_ELEMENT * T * N / event_seconds(ks["stream"][0], repeat)["median_s"] / 1e9
    rows, serial_s = [], None
    for name in KERNELS:
        launch, result, sizes = ks[name]
        t = event_seconds(launch, repeat)
        serial_s = serial_s or t["median_s"]
        gbs = BYTES_PER_ELEMENT * T * N / t["median_s"] / 1e9
        rows.append({"T": T, "N": N, "kernel": name, "launch": sizes, **t, "gbs": gbs, "stream_gbs": stream_gbs,
                     "pct_stream": 100 * gbs / stream_gbs, "speedup_over_serial": serial_s / t["median_s"],
                     "max_abs_err": float(np.max(np.abs(result() - ref)))})
    return rows


def record(path=None) -> dict:
    """A stored run of ``benchmarks/gpu.py``: ``{"machine": {...}, "table": rows as :func:`layouts` returns,
    "phases", "sweep", ...}``. A missing file is a FileNotFoundError naming it."""
    path = Path(RECORD if path is None else path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no stored GPU run at {path} (benchmarks/gpu.py --json writes one)")
    return json.loads(path.read_text())
