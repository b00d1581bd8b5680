"""Seed 001's baseline and a coalesced three-kernel scan (algorithms layer), numba's CUDA target.

:mod:`course_lib.algorithms.scan_cuda` lays its threads along time: thread k of a block owns a chunk of
one channel, so the 32 threads of a warp read 32 addresses ``chunk * N`` elements apart -- 32 memory
transactions where one would do. That is the picture to learn the scan from; this module is the one a
GPU wants. Both keep seed 001's structure (reduce, scan of the block carries, expand).

``serial_kernel``   seed 001's "serial kernel", which "actually does run in parallel as it is parallelized
                    over the hidden dimensions": one CUDA thread per channel walks all T steps. A warp reads
                    32 neighbouring channels of one step: coalesced, but only N threads in flight.
``tiled``           the scan with a 2-D block ``(TILE_C channels, workers)``: thread ``(c, w)`` of block
                    ``(b, j)`` owns steps ``[(b*workers + w)*chunk, ... + chunk)`` of channel ``j*TILE_C + c``,
                    so a warp (32 channels, one worker) reads 32 neighbouring floats of one step: coalesced.
                    The block phase composes the ``workers`` pairs of each channel (a few steps, so serially).

Layout as in ``scan_cuda``: ``a, x, h`` are ``(T, N)`` (time-major, N channels), ``h0`` is ``(N,)``.
In the simulator keep ``T * N`` to a few thousand.
"""
from __future__ import annotations

import math

import numpy as np

from ..core import backend
from ..core.validate import check_int, check_positive_int
from .scan_cuda import carry_kernel, check_inputs

from numba import cuda

__all__ = ["TILE_C", "serial_kernel", "linear_recurrence_cuda_serial", "tiled_plan", "tiled_phase_steps",
           "linear_recurrence_cuda_tiled"]

TILE_C = 32  # channels per block: one warp's worth, so one step's loads are one transaction

_to_device = cuda.to_device
_device_array = cuda.device_array
_synchronize = cuda.synchronize


@cuda.jit
def serial_kernel(a, x, h0, h):
    """One thread per channel c: ``h[t, c] = a[t, c] * h[t-1, c] + x[t, c]`` for t = 0 .. T-1."""
    c = cuda.grid(1)
    if c < h0.shape[0]:
        prev = h0[c]
        for t in range(a.shape[0]):
            prev = a[t, c] * prev + x[t, c]
            h[t, c] = prev


def linear_recurrence_cuda_serial(a, x, h0=None, *, block: int = 128):
    """Seed 001's serial kernel: ``h (T, N)``, one CUDA thread per channel, ``block`` threads per block."""
    a, x, h0 = check_inputs(a, x, h0)
    block = check_int(block, "block", low=1, high=1024)
    d_h = _device_array(a.shape, a.dtype)
    serial_kernel[math.ceil(a.shape[1] / block), block](_to_device(a), _to_device(x), _to_device(h0), d_h)
    _synchronize()
    return d_h.copy_to_host()


@cuda.jit
def tiled_reduce_kernel(a, x, chunk, thr_a, thr_b, blk_a, blk_b):
    """Launched ``[(grid, ceil(N/TILE_C)), (TILE_C, workers)]``. Thread phase: compose this thread's chunk
    into ``thr_*[g, c]``. Block phase: worker 0 composes the block's ``workers`` pairs into ``blk_*[b, c]``."""
    T, N = a.shape
    c = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    w = cuda.threadIdx.y
    nw = cuda.blockDim.y
    g = cuda.blockIdx.x * nw + w
    if c < N:
        pa = 1.0
        pb = 0.0
        for t in range(g * chunk, min(g * chunk + chunk, T)):
            pb = a[t, c] * pb + x[t, c]
            pa = pa * a[t, c]
            if abs(pa) < 1e-30:
                pa = 0.0  # flush: subnormal products are slow (NaN stays NaN)
        thr_a[g, c] = pa
        thr_b[g, c] = pb
    cuda.syncthreads()  # the block's global writes are visible to the block after the barrier
    if c < N and w == 0:
        pa = 1.0
        pb = 0.0
        g0 = cuda.blockIdx.x * nw
        for k in range(nw):
            pb = thr_a[g0 + k, c] * pb + thr_b[g0 + k, c]
            pa = pa * thr_a[g0 + k, c]
        blk_a[cuda.blockIdx.x, c] = pa
        blk_b[cuda.blockIdx.x, c] = pb


@cuda.jit
def tiled_expand_kernel(a, x, chunk, thr_a, thr_b, carry, h):
    """Same grid as :func:`tiled_reduce_kernel`: each thread starts from its block's carry, applies the
    pairs of the workers before it (fewer than ``workers``), then runs its chunk writing ``h``."""
    T, N = a.shape
    c = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    w = cuda.threadIdx.y
    g0 = cuda.blockIdx.x * cuda.blockDim.y
    if c < N:
        prev = carry[cuda.blockIdx.x, c]
        for k in range(w):
            prev = thr_a[g0 + k, c] * prev + thr_b[g0 + k, c]
        g = g0 + w
        for t in range(g * chunk, min(g * chunk + chunk, T)):
            prev = a[t, c] * prev + x[t, c]
            h[t, c] = prev


def tiled_plan(T: int, workers: int | None = None, chunk: int | None = None, *, N: int = 1) -> tuple[int, int, int]:
    """``(workers, chunk, grid)`` for ``T`` steps of ``N`` channels: ``workers`` time-workers per block
    (block = ``TILE_C x workers`` threads; default 16, or 2 in the simulator), ``chunk`` steps per thread and
    ``grid`` blocks along time. The default chunk is the longest of 256, 128, ... 16 that still gives every
    multiprocessor two blocks (on an H200 at N = 128, 256 steps for T = 2^20 -- the fastest of the sweep in
    ``course_lib/experiments/recorded/gpu-nvidia-h200.json`` -- and 32 for T = 2^16); the simulator uses 4."""
    T = check_positive_int(T, "T")
    N = check_positive_int(N, "N")
    sim = not backend.gpu_available()
    workers = (2 if sim else 16) if workers is None else check_int(workers, "workers", low=1, high=1024 // TILE_C)
    if chunk is None:
        if sim:
            chunk = 4
        else:
            want = 2 * cuda.get_current_device().MULTIPROCESSOR_COUNT
            tiles = math.ceil(N / TILE_C)
            chunk = next((c for c in (256, 128, 64, 32) if math.ceil(T / (workers * c)) * tiles >= want), 16)
        chunk = max(1, min(chunk, math.ceil(T / workers)))
    chunk = check_positive_int(chunk, "chunk")
    return workers, chunk, math.ceil(T / (workers * chunk))


def tiled_phase_steps(a, x, h0=None, *, workers: int | None = None, chunk: int | None = None) -> dict:
    """Copy the inputs to the device and return ``"reduce"``, ``"scan"``, ``"expand"`` (zero-argument
    launches that synchronise; each may run again), ``"result"`` (copies ``h (T, N)`` back) and the
    launch sizes ``"workers"``, ``"chunk"``, ``"grid"``."""
    a, x, h0 = check_inputs(a, x, h0)
    T, N = a.shape
    workers, chunk, grid = tiled_plan(T, workers, chunk, N=N)
    d_a, d_x, d_h0 = _to_device(a), _to_device(x), _to_device(h0)
    thr_a = _device_array((grid * workers, N), a.dtype)
    thr_b = _device_array((grid * workers, N), a.dtype)
    blk_a = _device_array((grid, N), a.dtype)
    blk_b = _device_array((grid, N), a.dtype)
    carry = _device_array((grid, N), a.dtype)
    d_h = _device_array((T, N), a.dtype)
    launch = ((grid, math.ceil(N / TILE_C)), (TILE_C, workers))

    def reduce():
        tiled_reduce_kernel[launch](d_a, d_x, chunk, thr_a, thr_b, blk_a, blk_b)
        _synchronize()

    def scan():
        carry_kernel[max(1, math.ceil(N / 128)), 128](blk_a, blk_b, d_h0, carry)  # scan_cuda's, unchanged
        _synchronize()

    def expand():
        tiled_expand_kernel[launch](d_a, d_x, chunk, thr_a, thr_b, carry, d_h)
        _synchronize()

    return {"workers": workers, "chunk": chunk, "grid": grid, "reduce": reduce, "scan": scan, "expand": expand,
            "result": d_h.copy_to_host}


def linear_recurrence_cuda_tiled(a, x, h0=None, *, workers: int | None = None, chunk: int | None = None):
    """``h_t = a_t h_{t-1} + x_t`` by the coalesced reduce / carry-scan / expand kernels. ``a, x``: ``(T, N)``,
    ``h0``: ``(N,)`` or None. Returns ``h (T, N)`` (dtype of ``a``)."""
    steps = tiled_phase_steps(a, x, h0, workers=workers, chunk=chunk)
    for phase in ("reduce", "scan", "expand"):
        steps[phase]()
    return np.asarray(steps["result"]())
