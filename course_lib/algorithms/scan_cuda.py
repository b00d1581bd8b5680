"""The linear-recurrence scan as CUDA kernels (algorithms layer), numba's CUDA target.

Without a GPU these kernels run in numba's CUDA simulator (``import course_lib`` switches it on
before numba is imported): the same code, one Python thread per CUDA thread -- correct but slow,
so keep sizes tiny there (a 256-thread block with barriers takes about a second).

Two things live here, structured like seed 001's kernels:

1. **The teaching kernel** :func:`blelloch_block_kernel` -- one block per channel, one thread per
   time step, Blelloch's up-sweep / down-sweep in shared memory. ``run_block_kernel`` launches it
   (or a student's kernel with the same signature).
2. **The three-kernel scan** for long sequences: ``reduce_kernel`` (each CUDA thread composes its
   chunk of ``chunk`` steps serially -- the seed's "warp phase" -- then the block composes its
   threads' pairs with a shared-memory tree -- the "block phase"), ``carry_kernel`` (scan of the
   block carries; tiny) and ``expand_kernel`` (each block scans its threads' pairs from its carry,
   then each thread re-runs its chunk writing ``h``). :func:`linear_recurrence_cuda` runs all
   three; :func:`phase_steps` hands them out one by one (``course_lib.experiments.scan.cuda_phases``
   times them); :func:`phase_counts` returns the elements each phase worked on, counted by the kernels.

Launch sizes use the course's CUDA vocabulary: ``block`` = CUDA threads per block, ``grid`` =
blocks (here ``(grid, N)``: blocks along time, one row of blocks per channel); ``chunk`` = time
steps per CUDA thread. Layout: ``a, x, h`` are ``(T, N)`` (time-major, N channels); ``h0`` is ``(N,)``.
"""
from __future__ import annotations

import math

import numpy as np

from ..core import backend
from ..core.validate import check_array, check_int, check_positive_int, check_power_of_two

from numba import cuda, float64

__all__ = [
    "BLOCK_MAX",
    "blelloch_block_kernel",
    "run_block_kernel",
    "reduce_kernel",
    "carry_kernel",
    "expand_kernel",
    "linear_recurrence_cuda",
    "phase_steps",
    "phase_counts",
    "plan",
    "check_inputs",
]

BLOCK_MAX = 1024  # shared arrays are sized at compile time: the largest block we allow

# Host-side API, bound once: the simulator temporarily swaps this module's global ``cuda`` for a
# fake per-kernel module while kernels run, so host code must not look it up through ``cuda.``.
_to_device = cuda.to_device
_device_array = cuda.device_array
_synchronize = cuda.synchronize


# --------------------------------------------------------------------------- shared-memory scan (device)
@cuda.jit(device=True)
def block_exclusive_scan(sa, sb, i, n):
    """Blelloch exclusive scan of the pairs ``(sa[k], sb[k])``, ``k < n`` (n a power of two),
    in place in shared memory, by the n threads of a block (``i`` = this thread). Afterwards
    slot k holds the composition of slots 0..k-1 (the identity (1, 0) for k = 0).
    Returns the composition of all n slots (the block total)."""
    step = 1
    while step < n:  # up-sweep: right child <- left o right
        k = (i + 1) * 2 * step - 1
        if k < n:
            left = k - step
            sb[k] = sa[k] * sb[left] + sb[k]
            sa[k] = sa[k] * sa[left]
        step *= 2
        cuda.syncthreads()
    tot_a = sa[n - 1]
    tot_b = sb[n - 1]
    cuda.syncthreads()
    if i == n - 1:
        sa[i] = 1.0
        sb[i] = 0.0
    cuda.syncthreads()
    step = n // 2
    while step >= 1:  # down-sweep: left <- parent, right <- parent o (old left)
        k = (i + 1) * 2 * step - 1
        if k < n:
            left = k - step
            ta = sa[left]
            tb = sb[left]
            sa[left] = sa[k]
            sb[left] = sb[k]
            sb[k] = ta * sb[k] + tb
            sa[k] = ta * sa[k]
        step //= 2
        cuda.syncthreads()
    return tot_a, tot_b


# --------------------------------------------------------------------------- 1. the teaching kernel
@cuda.jit
def blelloch_block_kernel(a, x, h0, h):
    """One block per channel c (``blockIdx.x``), one thread per time step (``blockDim.x`` = T, a
    power of two): load (a_t, x_t) into shared memory, exclusive Blelloch scan, then
    ``h_t = a_t (A_t h0 + B_t) + x_t`` with (A_t, B_t) the composition of steps before t."""
    sa = cuda.shared.array(BLOCK_MAX, float64)
    sb = cuda.shared.array(BLOCK_MAX, float64)
    c = cuda.blockIdx.x
    i = cuda.threadIdx.x
    n = cuda.blockDim.x
    sa[i] = a[i, c]
    sb[i] = x[i, c]
    cuda.syncthreads()
    block_exclusive_scan(sa, sb, i, n)
    h[i, c] = a[i, c] * (sa[i] * h0[c] + sb[i]) + x[i, c]


def run_block_kernel(kernel, a, x, h0=None):
    """Launch a one-block-per-channel scan kernel ``kernel[C, T](a, x, h0, h)`` and return ``h``.

    ``a, x``: ``(T, C)`` with T a power of two <= :data:`BLOCK_MAX` (T threads per block);
    ``h0``: ``(C,)`` or None (zeros). Works for :func:`blelloch_block_kernel` and for a
    student's kernel with the same signature."""
    dims: dict = {}
    a = check_array(a, "a", shape=("T", "C"), dims=dims)
    x = check_array(x, "x", shape=("T", "C"), dims=dims)
    T, C = a.shape
    check_power_of_two(T, "block size (T)")
    check_int(T, "block size (T)", high=BLOCK_MAX)
    h0 = np.zeros(C) if h0 is None else check_array(h0, "h0", shape=(C,))
    a64 = np.ascontiguousarray(a, np.float64)
    x64 = np.ascontiguousarray(x, np.float64)
    h = np.zeros((T, C), np.float64)
    d_h = _to_device(h)
    kernel[C, T](_to_device(a64), _to_device(x64), _to_device(np.asarray(h0, np.float64)), d_h)
    _synchronize()
    return d_h.copy_to_host().astype(a.dtype)


# --------------------------------------------------------------------------- 2. reduce / carries / expand
@cuda.jit
def reduce_kernel(a, x, chunk, thr_a, thr_b, blk_a, blk_b, counts):
    """Launched ``[(grid, N), block]``. Thread k of block b owns steps
    ``[(b*block + k)*chunk, ... + chunk)`` of channel ``blockIdx.y``: it composes them serially
    (thread phase), stores its pair in ``thr_*``, then the block composes its threads' pairs
    in shared memory (block phase) into ``blk_*[b]``. ``counts`` (int64, 4) counts the elements each
    phase works on: ``counts[0]`` += this thread's steps, ``counts[1]`` += its one shared-memory slot."""
    sa = cuda.shared.array(BLOCK_MAX, float64)
    sb = cuda.shared.array(BLOCK_MAX, float64)
    T = a.shape[0]
    c = cuda.blockIdx.y
    i = cuda.threadIdx.x
    n = cuda.blockDim.x
    g = cuda.blockIdx.x * n + i
    s = g * chunk
    pa = 1.0
    pb = 0.0
    e = s
    for t in range(s, min(s + chunk, T)):
        pb = a[t, c] * pb + x[t, c]
        pa = pa * a[t, c]
        if abs(pa) < 1e-30:
            pa = 0.0  # flush: subnormal products are slow on CPUs and GPUs alike (NaN stays NaN)
        e += 1
    cuda.atomic.add(counts, 0, e - s)  # one atomic per thread per phase: the counts cost (almost) nothing
    cuda.atomic.add(counts, 1, 1)
    thr_a[g, c] = pa
    thr_b[g, c] = pb
    sa[i] = pa
    sb[i] = pb
    cuda.syncthreads()
    step = 1
    while step < n:  # tree reduce, left o right
        k = (i + 1) * 2 * step - 1
        if k < n:
            left = k - step
            sb[k] = sa[k] * sb[left] + sb[k]
            sa[k] = sa[k] * sa[left]
        step *= 2
        cuda.syncthreads()
    if i == 0:
        blk_a[cuda.blockIdx.x, c] = sa[n - 1]
        blk_b[cuda.blockIdx.x, c] = sb[n - 1]


@cuda.jit
def carry_kernel(blk_a, blk_b, h0, carry):
    """One thread per channel: ``carry[b] = h`` just before block b (a short serial scan)."""
    c = cuda.grid(1)
    if c < h0.shape[0]:
        prev = h0[c]
        for b in range(blk_a.shape[0]):
            carry[b, c] = prev
            prev = blk_a[b, c] * prev + blk_b[b, c]


@cuda.jit
def expand_kernel(a, x, chunk, thr_a, thr_b, carry, h, counts):
    """Same grid as :func:`reduce_kernel`: the block scans its threads' pairs (exclusive Blelloch
    in shared memory) to find each thread's starting h from the block carry, then every thread
    runs the recurrence over its chunk writing ``h``. ``counts[2]`` += the thread's shared-memory slot
    (block phase), ``counts[3]`` += its steps (thread phase)."""
    sa = cuda.shared.array(BLOCK_MAX, float64)
    sb = cuda.shared.array(BLOCK_MAX, float64)
    T = a.shape[0]
    c = cuda.blockIdx.y
    i = cuda.threadIdx.x
    n = cuda.blockDim.x
    g = cuda.blockIdx.x * n + i
    sa[i] = thr_a[g, c]
    sb[i] = thr_b[g, c]
    cuda.syncthreads()
    block_exclusive_scan(sa, sb, i, n)
    prev = sa[i] * carry[cuda.blockIdx.x, c] + sb[i]
    cuda.atomic.add(counts, 2, 1)
    s = g * chunk
    e = s
    for t in range(s, min(s + chunk, T)):
        prev = a[t, c] * prev + x[t, c]
        h[t, c] = prev
        e += 1
    cuda.atomic.add(counts, 3, e - s)


def plan(T: int, block: int | None = None, chunk: int | None = None) -> tuple[int, int, int]:
    """``(block, chunk, grid)`` for the three-kernel scan: ``block`` CUDA threads per block (a power
    of two; default 32 in the simulator, 256 on a GPU, never more than needed), ``chunk`` steps per
    CUDA thread (default: 4 in the simulator, 64 on a GPU), ``grid`` blocks along time to cover T."""
    T = check_positive_int(T, "T")
    sim = not backend.gpu_available()
    if block is None:
        block = min(32 if sim else 256, 1 << max(0, math.ceil(math.log2(T))))
    block = check_power_of_two(block, "block")
    check_int(block, "block", high=BLOCK_MAX)
    if chunk is None:
        chunk = max(1, min(4 if sim else 64, math.ceil(T / block)))
    chunk = check_positive_int(chunk, "chunk")
    grid = math.ceil(T / (block * chunk))
    return block, chunk, grid


def check_inputs(a, x, h0):
    dims: dict = {}
    a = check_array(a, "a", shape=("T", "N"), dims=dims, min_size={"T": 1})
    x = check_array(x, "x", shape=("T", "N"), dims=dims)
    if a.dtype != x.dtype:
        raise TypeError(f"x: expected the dtype of a ({a.dtype}), got {x.dtype}")
    h0 = np.zeros(a.shape[1], a.dtype) if h0 is None else check_array(h0, "h0", shape=(a.shape[1],))
    return np.ascontiguousarray(a), np.ascontiguousarray(x), np.ascontiguousarray(h0, a.dtype)


def phase_steps(a, x, h0=None, *, block: int | None = None, chunk: int | None = None) -> dict:
    """Copy ``a, x, h0`` to the device, allocate the work arrays, and return the three kernels as
    zero-argument callables that launch and synchronise: ``"reduce"``, ``"scan"`` (the carries),
    ``"expand"``; ``"result"`` copies ``h (T, N)`` back (valid after the three ran in order).
    Also ``"block"``, ``"chunk"``, ``"grid"``: the launch sizes of :func:`plan`. Each kernel may be
    launched again (it recomputes the same numbers), so each can be timed on its own."""
    a, x, h0 = check_inputs(a, x, h0)
    T, N = a.shape
    block, chunk, grid = plan(T, block, chunk)
    d_a, d_x = _to_device(a), _to_device(x)
    d_h0 = _to_device(h0)
    thr_a = _device_array((grid * block, N), a.dtype)
    thr_b = _device_array((grid * block, N), a.dtype)
    blk_a = _device_array((grid, N), a.dtype)
    blk_b = _device_array((grid, N), a.dtype)
    carry = _device_array((grid, N), a.dtype)
    d_h = _device_array((T, N), a.dtype)
    d_counts = _to_device(np.zeros(4, np.int64))

    def reduce():
        reduce_kernel[(grid, N), block](d_a, d_x, chunk, thr_a, thr_b, blk_a, blk_b, d_counts)
        _synchronize()

    def scan():
        carry_kernel[max(1, math.ceil(N / 32)), 32](blk_a, blk_b, d_h0, carry)
        _synchronize()

    def expand():
        expand_kernel[(grid, N), block](d_a, d_x, chunk, thr_a, thr_b, carry, d_h, d_counts)
        _synchronize()

    def counts() -> dict:
        c = d_counts.copy_to_host()
        return {"reduce_thread": int(c[0]), "reduce_block": int(c[1]), "expand_block": int(c[2]),
                "expand_thread": int(c[3])}

    return {"block": block, "chunk": chunk, "grid": grid, "reduce": reduce, "scan": scan, "expand": expand,
            "result": d_h.copy_to_host, "counts": counts}


def phase_counts(a, x, h0=None, *, block: int | None = None, chunk: int | None = None) -> dict:
    """Seed 001's per-phase picture, counted by the kernels themselves: run reduce / carries / expand once
    and return the elements each phase of reduce and expand worked on -- ``"reduce_thread"`` /
    ``"expand_thread"`` (the serial chunk each CUDA thread composes: the seed's within-warp phase) and
    ``"reduce_block"`` / ``"expand_block"`` (the shared-memory tree over the block's threads) -- with
    ``"block"``, ``"chunk"``, ``"grid"``. Valid on a GPU and in the simulator alike (counts, not times)."""
    steps = phase_steps(a, x, h0, block=block, chunk=chunk)
    for p in ("reduce", "scan", "expand"):
        steps[p]()
    return {**steps["counts"](), "block": steps["block"], "chunk": steps["chunk"], "grid": steps["grid"]}


def linear_recurrence_cuda(a, x, h0=None, *, block: int | None = None, chunk: int | None = None):
    """``h_t = a_t h_{t-1} + x_t`` with the reduce / carry-scan / expand kernels. ``a, x``: ``(T, N)``;
    ``block``: CUDA threads per block, ``chunk``: steps per CUDA thread (defaults: :func:`plan`).
    On the simulator keep ``T * N`` to a few thousand. Returns ``h`` ``(T, N)`` (dtype of ``a``)."""
    steps = phase_steps(a, x, h0, block=block, chunk=chunk)
    steps["reduce"]()
    steps["scan"]()
    steps["expand"]()
    return steps["result"]()
