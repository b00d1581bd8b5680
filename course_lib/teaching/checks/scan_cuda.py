"""Check 8.4 of worksheet 08 (teaching folder): a one-block Blelloch CUDA kernel ``kernel(a, x, h0, h)``
written by the student (T <= threads), run in numba's CUDA simulator with traced shared memory and counted
memory accesses (see :mod:`course_lib.teaching.checks.scan`, which re-exports these names).
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import traceback

import numpy as np

from ...core import backend
from ...algorithms import scan
from .core import ExerciseFailed, compare_outputs, passed

__all__ = ["check_block_kernel", "traced_shared_memory", "counted_memory", "memory_budget", "SharedMemoryHazard",
           "COUNTER_NAMES"]


# --------------------------------------------------------------------------- 8.4: traced shared memory
_ALLOC_LOCK = threading.Lock()
_SIM_PREFIX = re.compile(r"^tid=\[[^\]]*\] ctaid=\[[^\]]*\]: ")


class SharedMemoryHazard(RuntimeError):
    """A race or a read of unwritten shared memory, found by :func:`traced_shared_memory`."""


def _block_key(th) -> int:
    b = th.blockIdx
    return 1 + b.x + 65536 * (b.y + 65536 * b.z)


class _Traced(np.ndarray):
    """A shared array that records, per slot, the block, thread and barrier epoch of the last
    write and of the last read(s), and raises :class:`SharedMemoryHazard` on a conflict."""

    def _setup(self, label):
        self._label = label
        n = self.size
        self._w_blk = np.zeros(n, np.int64)
        self._w_tid = np.full(n, -1, np.int64)
        self._w_ep = np.full(n, -1, np.int64)
        self._r_blk = np.zeros(n, np.int64)
        self._r_tid = np.full(n, -1, np.int64)  # -2: several threads read in this epoch
        self._r_ep = np.full(n, -1, np.int64)
        return self

    def _flat(self, idx):
        if isinstance(idx, (int, np.integer)) and self.ndim == 1:
            i = int(idx)
            return np.array([i + self.size if i < 0 else i])
        return np.arange(self.size).reshape(self.shape)[idx].ravel()

    def _who(self):
        th = threading.current_thread()
        if not hasattr(th, "thread_id"):
            return None
        return _block_key(th), int(th.thread_id), getattr(th, "_course_epoch", 0), list(th.threadIdx)

    def __getitem__(self, idx):
        who = self._who()
        if who is not None:
            blk, tid, ep, tidx = who
            flat = self._flat(idx)
            _count(2, flat.size)
            for f in flat:
                if self._w_blk[f] != blk:
                    raise SharedMemoryHazard(
                        f"read slot {f} of {self._label}, which no thread of this block has written yet "
                        f"(uninitialised shared memory: its value is garbage)")
                if self._w_tid[f] != tid and self._w_ep[f] == ep:
                    raise SharedMemoryHazard(
                        f"read slot {f} of {self._label}, written by thread {self._w_tid[f]} with no "
                        f"cuda.syncthreads() in between (a race: the result depends on thread order)")
                if self._r_blk[f] == blk and self._r_ep[f] == ep and self._r_tid[f] != tid:
                    self._r_tid[f] = -2
                else:
                    self._r_blk[f], self._r_ep[f], self._r_tid[f] = blk, ep, tid
        return self.view(np.ndarray)[idx]

    def __setitem__(self, idx, value):
        who = self._who()
        if who is not None:
            blk, tid, ep, tidx = who
            flat = self._flat(idx)
            _count(3, flat.size)
            for f in flat:
                if self._w_blk[f] == blk and self._w_ep[f] == ep and self._w_tid[f] != tid:
                    raise SharedMemoryHazard(
                        f"wrote slot {f} of {self._label}, which thread {self._w_tid[f]} also wrote with no "
                        f"cuda.syncthreads() in between (a race)")
                if self._r_blk[f] == blk and self._r_ep[f] == ep and self._r_tid[f] not in (tid, -1):
                    other = "several threads" if self._r_tid[f] == -2 else f"thread {self._r_tid[f]}"
                    raise SharedMemoryHazard(
                        f"wrote slot {f} of {self._label}, which {other} read with no cuda.syncthreads() in "
                        f"between (a race: the reader may see the old or the new value)")
                self._w_blk[f], self._w_ep[f], self._w_tid[f] = blk, ep, tid
        self.view(np.ndarray)[idx] = value


@contextlib.contextmanager
def traced_shared_memory():
    """Inside this block, kernels launched in numba's CUDA simulator get traced, NaN-poisoned
    shared arrays (``cuda.shared.array(n, dtype)``) and counted barriers; hazards raise
    :class:`SharedMemoryHazard` (re-raised by the simulator with the thread's index).
    Raises RuntimeError when kernels run on a real GPU (nothing to trace there)."""
    if backend.cuda_mode() != "simulator":
        raise RuntimeError("traced_shared_memory needs numba's CUDA simulator (kernels run on a GPU here)")
    from numba.core import types
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    orig_array = kernelapi.FakeCUDAShared.array
    orig_sync = sim_kernel.BlockThread.syncthreads

    def array(self, shape, dtype):
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        if shape == 0:
            return orig_array(self, shape, dtype)
        caller = traceback.extract_stack(sys._getframe())[-2][0:2]
        with _ALLOC_LOCK:  # threads of a block allocate concurrently: create the array once
            return _allocate(self, caller, shape, dtype)

    def _allocate(self, caller, shape, dtype):
        res = self._allocations.get(caller)
        if res is None:
            base = np.empty(shape, dtype)
            if base.dtype.kind == "f":
                base.fill(np.nan)  # poison
            else:
                base.fill(-123456789)
            res = base.view(_Traced)._setup(f"the shared array allocated on line {caller[1]} of {caller[0].split('/')[-1]}")
            self._allocations[caller] = res
        return res

    kernelapi.FakeCUDAShared.array = array
    sim_kernel.BlockThread.syncthreads = _logged_sync(orig_sync)
    _BARRIERS.clear()
    _CRASHED.clear()
    try:
        yield
    finally:
        _join_simulator_threads()
        kernelapi.FakeCUDAShared.array = orig_array
        sim_kernel.BlockThread.syncthreads = orig_sync


#: (block, thread) -> the source lines of the cuda.syncthreads() calls it made, in order (the last traced launch)
_BARRIERS: dict = {}
_CRASHED: set = set()   # (block, thread) that raised in the last logged_barriers() launch


def _kernel_line(frame) -> int:
    """The line of the first frame outside numba (the kernel's ``cuda.syncthreads()`` call)."""
    while frame is not None and f"{os.sep}numba{os.sep}" in frame.f_code.co_filename:
        frame = frame.f_back
    return frame.f_lineno if frame is not None else -1


def _plain_run_error(kernel, a, x, h0, threads):
    """The exception an untraced launch raises (None if it runs): when a traced thread crashed, another thread's
    read of the slot it never wrote is only the consequence -- which of the two the simulator reports first
    depends on thread timing."""
    try:
        _launch(kernel, a, x, h0, threads)
    except Exception as exc:  # the student's kernel: anything it raises is the answer
        return exc
    return None


def _logged_sync(orig_sync):
    """The simulator's ``syncthreads`` that also counts the thread's barrier epoch and logs the line it was
    called from in :data:`_BARRIERS`."""
    def syncthreads(self):
        self._course_epoch = getattr(self, "_course_epoch", 0) + 1
        line = _kernel_line(sys._getframe(1))
        with _ALLOC_LOCK:
            _BARRIERS.setdefault((_block_key(self) - 1, int(self.thread_id)), []).append(line)
        return orig_sync(self)
    return syncthreads


@contextlib.contextmanager
def logged_barriers():
    """Inside this block (numba's CUDA simulator), every ``cuda.syncthreads()`` call is logged per block and
    thread (nothing else is traced): :func:`divergent_barrier` then reads the log."""
    from numba.cuda.simulator import kernel as sim_kernel

    orig_sync, orig_run = sim_kernel.BlockThread.syncthreads, sim_kernel.BlockThread.run

    def run(self):
        orig_run(self)
        if self.exception is not None:  # a thread that raised stopped short of its barriers: not a divergence
            with _ALLOC_LOCK:
                _CRASHED.add((_block_key(self) - 1, int(self.thread_id)))

    sim_kernel.BlockThread.syncthreads = _logged_sync(orig_sync)
    sim_kernel.BlockThread.run = run
    _BARRIERS.clear()
    _CRASHED.clear()
    try:
        yield _BARRIERS
    finally:
        _join_simulator_threads()
        sim_kernel.BlockThread.syncthreads = orig_sync
        sim_kernel.BlockThread.run = orig_run


def divergent_barrier(threads: int, blocks: int) -> str | None:
    """After a traced launch of ``blocks`` blocks of ``threads`` threads: ``None`` when every thread of each
    block reached the same barriers (the same ``cuda.syncthreads()`` lines, in the same order), else a
    sentence naming two threads that did not -- a *divergent barrier*: on a GPU the block hangs or the
    barrier does not hold (undefined behaviour), in the simulator the threads' levels get out of step."""
    for blk in range(blocks):
        seqs = {tid: _BARRIERS.get((blk, tid), []) for tid in range(threads)}
        whole = [tid for tid in range(threads) if (blk, tid) not in _CRASHED]
        if not whole:
            continue
        first = seqs[whole[0]]
        for tid, seq in seqs.items():
            crashed = (blk, tid) in _CRASHED
            if seq != first and not (crashed and first[:len(seq)] == seq):
                k = next((j for j, (u, v) in enumerate(zip(first, seq)) if u != v), min(len(first), len(seq)))
                def said(t, q):
                    if k < len(q):
                        return f"thread {t} reached its barrier no. {k + 1} on line {q[k]} ({len(q)} barriers in all)"
                    return f"thread {t} passed only {len(q)} barrier(s)"
                return (f"a divergent barrier in block {blk}: {said(whole[0], first)}, but {said(tid, seq)}. Every "
                        f"thread of a block must reach the same cuda.syncthreads() calls: on a GPU a barrier that "
                        f"some threads skip (inside an `if`, or after an early `return`) hangs the block or does not "
                        f"hold")
    return None


def _join_simulator_threads(timeout: float = 10.0) -> None:
    """After a launch that raised, the simulator leaves the block's other threads running until
    their next barrier; wait for them so they cannot disturb the next launch."""
    try:
        from numba.cuda.simulator.kernel import BlockThread
    except ImportError:  # pragma: no cover - not in simulator mode
        return
    for t in threading.enumerate():
        if isinstance(t, BlockThread) and t is not threading.current_thread():
            t.join(timeout)


# --------------------------------------------------------------------------- 8.4: memory accesses per thread
# The GPU-Puzzles idea (srush/GPU-Puzzles, lib.py): count, per thread, how often it touches global and
# shared memory, and hold the maximum over threads against a budget that follows from the algorithm.
COUNTER_NAMES = ("global reads", "global writes", "shared reads", "shared writes")
_COUNTS: dict | None = None  # (channel, thread) -> [global reads, global writes, shared reads, shared writes]


def _count(which: int, n: int) -> None:
    counts = _COUNTS
    if counts is None:
        return
    th = threading.current_thread()
    if not hasattr(th, "thread_id"):
        return
    key = (int(th.blockIdx.x) + 65536 * (int(th.blockIdx.y) + 65536 * int(th.blockIdx.z)), int(th.thread_id))
    row = counts.get(key)
    if row is None:
        row = counts.setdefault(key, [0, 0, 0, 0])
    row[which] += int(n)


def _n_elems(item, idx) -> int:
    try:
        v = np.asarray(item._ary)[idx]
    except Exception:  # an out-of-range index: the real access raises right after
        return 1
    return int(getattr(v, "size", 1))


@contextlib.contextmanager
def counted_memory():
    """Inside this block (numba's CUDA simulator), every element a kernel thread reads or writes in a
    global array (a kernel argument) or in a shared array from :func:`traced_shared_memory` is
    counted for that thread. Yields the dict ``{(block, thread): [global reads, global writes,
    shared reads, shared writes]}``; ``block`` is ``blockIdx.x`` for a 1-D grid."""
    global _COUNTS
    if backend.cuda_mode() != "simulator":
        raise RuntimeError("counted_memory needs numba's CUDA simulator (kernels run on a GPU here)")
    from numba.cuda.simulator.cudadrv import devicearray

    cls = devicearray.FakeWithinKernelCUDAArray
    orig_get, orig_set = cls.__getitem__, cls.__setitem__

    def getitem(self, idx):
        _count(0, _n_elems(self.__dict__["_item"], idx))
        return orig_get(self, idx)

    def setitem(self, idx, val):
        _count(1, _n_elems(self.__dict__["_item"], idx))
        return orig_set(self, idx, val)

    counts: dict = {}
    cls.__getitem__, cls.__setitem__ = getitem, setitem
    _COUNTS = counts
    try:
        yield counts
    finally:
        _join_simulator_threads()
        _COUNTS = None
        cls.__getitem__, cls.__setitem__ = orig_get, orig_set


def memory_budget(threads: int) -> tuple[int, int, int, int]:
    """The 8.4 budget per thread for a block of ``threads`` (a power of two) threads, L = log2(threads)
    levels: global reads 3 (a[i, c], x[i, c], h0[c], each once), global writes 1 (h[i, c]);
    shared reads 12 L + 4 and shared writes 8 L + 4 -- each level of the up- and the down-sweep
    combines two (a, b) pairs (at most 6 reads and 4 writes per level and sweep, re-reads
    included), plus the loads, the identity at the root and the final read."""
    levels = int(threads).bit_length() - 1
    return 3, 1, 12 * levels + 4, 8 * levels + 4


_BUDGET_HINTS = (
    "read a[i, c], x[i, c] and h0[c] once each into local variables (registers) and use those; a thread never "
    "needs another thread's inputs from global memory -- they reach it through shared memory",
    "write h[i, c] once, at the end, and only from threads with i < T",
    "each level of the up- and down-sweep combines two (a, b) pairs: a few reads per level, O(log T) in all; a "
    "thread that loops over many slots (a serial prefix in shared memory) does O(T) work, which the tree avoids",
    "each level writes at most the two pairs it combines; load your pair once, and do not copy shared arrays "
    "around",
)


#: shared-memory writes a block may make in all, per thread of the block (judged on the 64-thread case): the
#: Blelloch tree writes 8n - 4 (the loads 2n, the up-sweep 2(n - 1), the root 2, the down-sweep 4(n - 1); the
#: worksheet's solution: 508 at n = 64), a Hillis-Steele scan 2n(log2 n + 1) - ... (770 at n = 64): O(n log n)
WORK_PER_THREAD = 10


def _work_over(counts: dict, threads: int, where: str) -> str | None:
    """The total work of each block, counted: its threads' shared writes summed. The Blelloch tree is
    work-efficient (O(n) writes); a scan that is parallel but not work-efficient (Hillis-Steele: every thread
    combines at every level) is named, though each thread stays within its O(log n) budget."""
    totals: dict = {}
    for (blk, _tid), row in counts.items():
        totals[blk] = totals.get(blk, 0) + row[3]
    if not totals:
        return None
    blk, total = max(totals.items(), key=lambda kv: kv[1])
    if total <= WORK_PER_THREAD * threads:
        return None
    return (f"{where}:\n  your numbers are right and every thread stays within its budget, but block {blk} made "
            f"{total} shared writes in all ({total / threads:.1f} per thread): the Blelloch tree makes about 8 per "
            f"thread (8n - 4: loads, up-sweep, root, down-sweep), at most {WORK_PER_THREAD} allowed -- yours does "
            f"O(n log n) work, like a Hillis-Steele scan where every thread combines at every level.\n  Hint: in "
            "the up-sweep only the thread with k = (i + 1) * 2 * step - 1 < n combines, so each level halves the "
            "threads at work; the down-sweep mirrors it.")


def _kernel_cases():
    """(T, threads per block, channels): powers of two first, then odd T, then more threads than steps."""
    shapes = [(1, 1, 1), (2, 2, 3), (8, 8, 3), (32, 32, 1), (5, 8, 3), (13, 16, 2), (3, 16, 1), (64, 64, 1)]
    out = []
    for i, (T, n, C) in enumerate(shapes):
        a, x, h0 = scan.random_problem(T, C, seed=100 + i, dtype="float64", low=-1.0, high=1.0)
        out.append((T, n, C, a, x, h0))
    return out


def _launch(kernel, a, x, h0, threads: int) -> np.ndarray:
    from numba import cuda

    T, C = a.shape
    h = np.full((T, C), np.nan)  # rows a thread forgets to write stay NaN
    d_h = cuda.to_device(h)
    kernel[C, threads](cuda.to_device(np.ascontiguousarray(a, np.float64)),
                       cuda.to_device(np.ascontiguousarray(x, np.float64)),
                       cuda.to_device(np.ascontiguousarray(h0, np.float64)), d_h)
    cuda.synchronize()
    return d_h.copy_to_host()


def _divergent_in_plain_run(kernel, a, x, h0, threads: int, blocks: int) -> str | None:
    """After a traced launch stopped on a hazard (its threads' barrier logs cut short): run the kernel again
    with only the barriers logged, to the end, and say whether a barrier diverged -- the cause to name
    first, since diverged threads also touch shared memory out of step."""
    try:
        with logged_barriers():
            _launch(kernel, a, x, h0, threads)
    except Exception:  # the first error stands; only the barriers are asked about here
        pass
    return divergent_barrier(threads, blocks)


_DIVERGENT_HINT = ("put cuda.syncthreads() where every thread passes it: after the `if k < n:` block of a "
                   "level, not inside it; threads with i >= T do not return early but load the identity (1, 0) "
                   "and take part in every level.")


def check_block_kernel(kernel) -> str:
    """Exercise 8.4: a one-block Blelloch scan kernel ``kernel[C, n](a, x, h0, h)``: one block per
    channel, ``n`` threads (a power of two) for ``T = a.shape[0] <= n`` steps; threads ``i >= T`` take
    the identity (1, 0) and write nothing. Runs it in the simulator with traced, poisoned shared
    memory (see module docstring) on 1..64 threads, odd T, T < n and up to 3 blocks, compares ``h``,
    and holds every thread's global and shared reads and writes to :func:`memory_budget` (the
    GPU-Puzzles idea); the pass prints the maxima on the largest block.

    Property: a race-free, work-efficient tree scan. Races and reads of unwritten slots are traced; the span is
    bounded per thread (O(log n) shared accesses: a serial prefix in shared memory is named), and the work per
    block is counted on the 64-thread case (:func:`_work_over`: a Hillis-Steele scan, O(n log n) writes, is
    named)."""
    if kernel is None or not (hasattr(kernel, "py_func") or callable(kernel)):
        raise ExerciseFailed(f"Exercise 8.4: expected a @cuda.jit kernel, got {type(kernel).__name__}")
    cases = _kernel_cases()
    traced = backend.cuda_mode() == "simulator"
    report = over = None
    for n, (T, threads, C, a, x, h0) in enumerate(cases, start=1):
        label = f"T={T}, {threads} threads per block, {C} block(s)"
        where = f"Exercise 8.4 failed on case {n}/{len(cases)} ({label})"
        counts: dict = {}
        try:
            if traced:
                with traced_shared_memory(), counted_memory() as counts:
                    h = _launch(kernel, a, x, h0, threads)
            else:
                h = _launch(kernel, a, x, h0, threads)
        except NotImplementedError as exc:
            if traced:
                _join_simulator_threads()
            # numba's simulator prefixes the message with the thread ("tid=[0, 0, 0] ctaid=[0, 0, 0]: ");
            # without it the worksheet shows the placeholder as its one line, not a traceback through
            # the simulator's threads
            raise NotImplementedError(_SIM_PREFIX.sub("", str(exc))) from None
        except Exception as exc:
            if traced:
                _join_simulator_threads()
            text = str(exc)
            diverged = _divergent_in_plain_run(kernel, a, x, h0, threads, C) if traced else None
            if diverged:
                raise ExerciseFailed(f"{where}:\n  {diverged}.\n  Hint: {_DIVERGENT_HINT}") from None
            hazard = "SharedMemoryHazard" in type(exc).__name__ or isinstance(exc, SharedMemoryHazard)
            if hazard and _CRASHED:  # a thread crashed first and left its slots unwritten: report the cause
                exc = _plain_run_error(kernel, a, x, h0, threads) or exc
                text = str(exc)
                hazard = isinstance(exc, SharedMemoryHazard)
            if hazard:
                raise ExerciseFailed(
                    f"{where}:\n  {text}\n"
                    "  Hint: every thread must finish writing a level before any thread reads it -- "
                    "put cuda.syncthreads() after the loads and after every level of both sweeps, "
                    "and only read slots 0..n-1 that this block wrote.") from None
            hint = ""
            if T < threads or isinstance(exc, IndexError) or "index" in text.lower():
                hint = ("\n  Hint: T = a.shape[0] may be smaller than the block (n = cuda.blockDim.x); threads with "
                        "i >= T must not read a or x nor write h -- they put the identity (1, 0) in shared memory.")
            raise ExerciseFailed(f"{where}:\n  your kernel raised {type(exc).__name__}: {text}{hint}") from None
        diverged = divergent_barrier(threads, C) if traced else None
        if diverged:
            raise ExerciseFailed(f"{where}:\n  {diverged}.\n  Hint: {_DIVERGENT_HINT}")
        msg = compare_outputs(h, scan.recurrence_float64(a, x, h0), name="h", rtol=1e-9, atol=1e-10)
        if msg:
            raise ExerciseFailed(
                f"{where}:\n  {msg}\n"
                "  Hint: after the down-sweep slot t holds the composition (A, B) of steps 0..t-1; "
                "then h_t = a_t (A h0 + B) + x_t. Check the order inside combine: left first"
                + ("; threads i >= T load the identity (1, 0)." if T < threads else "."))
        if traced:  # budgets are judged after every case is right and race-free
            budget = memory_budget(threads)
            for k, name in enumerate(COUNTER_NAMES):
                worst = max(counts.items(), key=lambda kv: (kv[1][k], -kv[0][0], -kv[0][1]), default=None)
                if over is None and worst is not None and worst[1][k] > budget[k]:
                    (blk, tid), row = worst
                    over = (f"{where}:\n  your numbers are right, but thread {tid} of block {blk} made {row[k]} "
                            f"{name}; the budget is {budget[k]} per thread for a block of {threads} threads "
                            f"({', '.join(f'{nm} {b}' for nm, b in zip(COUNTER_NAMES, budget))}).\n"
                            f"  Hint: {_BUDGET_HINTS[k]}.")
            if n == len(cases):
                work = _work_over(counts, threads, where)
                if over is None and work:
                    over = work
                most = [max((row[k] for row in counts.values()), default=0) for k in range(4)]
                report = (f"  most per thread (T={T}, {threads} threads): " + ", ".join(
                    f"{nm} {m} (budget {b})" for nm, m, b in zip(COUNTER_NAMES, most, budget)))
    if over is not None:
        raise ExerciseFailed(over)
    suffix = "" if traced else " (on a GPU: outputs only, races and memory accesses are not traced)"
    line = passed("8.4" + suffix, len(cases), len(cases))
    if report:
        print(report)
    return line
