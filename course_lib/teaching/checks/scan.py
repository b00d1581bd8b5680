"""Checks for worksheet 08 (linear recurrences and the scan).

* 8.1 ``combine(p, q)`` -- the associative (not commutative) operator on (a, b) pairs
* 8.2 ``chunked_scan(a, x, h0, chunks)`` -- reduce each chunk -> scan the carries -> expand
* 8.3 ``recurrence_backward(a, h, h0, grad_h)`` -- the reverse scan
* 8.4 a one-block Blelloch CUDA kernel ``kernel(a, x, h0, h)`` written by the student

The CUDA check does more than compare outputs: in numba's CUDA simulator it replaces shared
memory with a *traced* array (poisoned with NaN) and counts each thread's ``cuda.syncthreads()``
calls. Any read of a shared slot this block never wrote, and any two threads touching the same
slot (one of them writing) between the same two barriers, is reported -- a kernel that is right
only because the simulator happened to run its threads in a lucky order fails.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import traceback

import numpy as np

from ...core import backend
from ...algorithms import scan
from .core import ExerciseFailed, check_function, compare_outputs, passed

__all__ = ["check_combine", "check_chunked_scan", "check_backward", "check_block_kernel",
           "traced_shared_memory", "SharedMemoryHazard"]


# --------------------------------------------------------------------------- 8.1
def _pairs(rng, i):
    shape = [(3,), (2, 4), (5,), (1,), (3, 2)][i % 5]
    p = (rng.uniform(-1.5, 1.5, shape), rng.standard_normal(shape))
    q = (rng.uniform(-1.5, 1.5, shape), rng.standard_normal(shape))
    return dict(p=p, q=q)


def check_combine(student) -> str:
    """Exercise 8.1: ``combine((a1, b1), (a2, b2)) == (a2 a1, a2 b1 + b2)``."""
    line = check_function("8.1", student, scan.combine, _pairs, n_cases=5, output_names=["a", "b"], time_axis=None,
                          hint="p is applied first: h -> a1 h + b1, then h -> a2 h + b2. Compose them; "
                               "the operator is not commutative, so (p, q) and (q, p) differ.")
    # associativity on one more case, through the student's own function
    rng = np.random.default_rng(7)
    p, q, r = ((rng.uniform(-1, 1, 4), rng.standard_normal(4)) for _ in range(3))
    left = student(student(p, q), r)
    right = student(p, student(q, r))
    msg = compare_outputs(tuple(left), tuple(right), name="(p o q) o r vs p o (q o r)", time_axis=None)
    if msg:
        raise ExerciseFailed(f"Exercise 8.1 failed: your combine is not associative:\n  {msg}")
    return line


# --------------------------------------------------------------------------- 8.2
def _chunk_cases(rng, i):
    T, H, chunks = [(12, 3, 3), (10, 2, 4), (7, 1, 7), (9, 4, 1), (33, 5, 5), (16, 2, 2)][i]
    a, x, h0 = scan.random_problem(T, H, seed=int(rng.integers(1 << 30)), dtype="float64")
    return dict(a=a, x=x, h0=h0, chunks=chunks)


def _chunk_reference(a, x, h0, chunks):
    return scan.linear_recurrence(a, x, h0, method="chunked", chunks=chunks)


def check_chunked_scan(student) -> str:
    """Exercise 8.2: ``chunked_scan(a, x, h0, chunks)`` equals the sequential recurrence,
    for even and uneven splits (chunks = 1 and chunks = T included)."""
    return check_function("8.2", student, _chunk_reference, _chunk_cases, n_cases=6, output_names=["h"],
                          rtol=1e-9, atol=1e-10,
                          hint="Chunk c must start from the carry h just before it: the carries come "
                               "from composing the earlier chunks' (A, B) pairs in order; the first "
                               "time step that differs shows which chunk starts from the wrong carry.")


# --------------------------------------------------------------------------- 8.3
def _bwd_cases(rng, i):
    T, shape = [(6, (3,)), (1, (2,)), (9, (2, 3)), (4, (1,)), (12, (4,))][i]
    a, x, h0 = scan.random_problem(T, shape[-1], None if len(shape) == 1 else shape[0],
                                   seed=int(rng.integers(1 << 30)), dtype="float64")
    h = scan.linear_recurrence(a, x, h0)
    return dict(a=a, h=h, h0=h0, grad_h=rng.standard_normal(h.shape))


def _bwd_reference(a, h, h0, grad_h):
    return scan.linear_recurrence_backward(a, h, h0, grad_h)


def check_backward(student) -> str:
    """Exercise 8.3: ``(grad_a, grad_x, grad_h0)`` of the recurrence, via the reverse scan."""
    return check_function("8.3", student, _bwd_reference, _bwd_cases, n_cases=5,
                          output_names=["grad_a", "grad_x", "grad_h0"], rtol=1e-9, atol=1e-10,
                          hint="g_t = a_{t+1} g_{t+1} + grad_h_t runs backwards from g_{T-1} = grad_h_{T-1}; "
                               "then grad_x = g, grad_a_t = h_{t-1} g_t (h_{-1} = h0), grad_h0 = a_0 g_0.")


# --------------------------------------------------------------------------- 8.4: traced shared memory
_ALLOC_LOCK = threading.Lock()


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
            for f in self._flat(idx):
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
            for f in self._flat(idx):
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
    from numba.core import types  # noqa: PLC0415
    from numba.cuda.simulator import kernel as sim_kernel  # noqa: PLC0415
    from numba.cuda.simulator import kernelapi  # noqa: PLC0415
    from numba.np import numpy_support  # noqa: PLC0415

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

    def syncthreads(self):
        self._course_epoch = getattr(self, "_course_epoch", 0) + 1
        return orig_sync(self)

    kernelapi.FakeCUDAShared.array = array
    sim_kernel.BlockThread.syncthreads = syncthreads
    try:
        yield
    finally:
        _join_simulator_threads()
        kernelapi.FakeCUDAShared.array = orig_array
        sim_kernel.BlockThread.syncthreads = orig_sync


def _join_simulator_threads(timeout: float = 10.0) -> None:
    """After a launch that raised, the simulator leaves the block's other threads running until
    their next barrier; wait for them so they cannot disturb the next launch."""
    try:
        from numba.cuda.simulator.kernel import BlockThread  # noqa: PLC0415
    except ImportError:  # pragma: no cover - not in simulator mode
        return
    for t in threading.enumerate():
        if isinstance(t, BlockThread) and t is not threading.current_thread():
            t.join(timeout)


def _kernel_cases():
    out = []
    for i, (T, C) in enumerate([(1, 1), (2, 2), (4, 1), (8, 2), (16, 1), (32, 1)]):
        a, x, h0 = scan.random_problem(T, C, seed=100 + i, dtype="float64", low=-1.0, high=1.0)
        out.append((T, C, a, x, h0))
    return out


def check_block_kernel(kernel) -> str:
    """Exercise 8.4: a one-block Blelloch scan kernel ``kernel[C, T](a, x, h0, h)`` (one block per
    channel, one thread per step, T a power of two). Runs it on block sizes 1..32 in the
    simulator with traced, poisoned shared memory (see module docstring) and compares ``h``."""
    from ...algorithms import scan_cuda  # noqa: PLC0415

    if kernel is None or not (hasattr(kernel, "py_func") or callable(kernel)):
        raise ExerciseFailed(f"Exercise 8.4: expected a @cuda.jit kernel, got {type(kernel).__name__}")
    cases = _kernel_cases()
    traced = backend.cuda_mode() == "simulator"
    for n, (T, C, a, x, h0) in enumerate(cases, start=1):
        label = f"block size {T}, {C} channel(s)"
        try:
            with traced_shared_memory() if traced else contextlib.nullcontext():
                h = scan_cuda.run_block_kernel(kernel, a, x, h0)
        except NotImplementedError:
            if traced:
                _join_simulator_threads()
            raise
        except Exception as exc:
            if traced:
                _join_simulator_threads()
            text = str(exc)
            if "SharedMemoryHazard" in type(exc).__name__ or isinstance(exc, SharedMemoryHazard):
                raise ExerciseFailed(
                    f"Exercise 8.4 failed on case {n}/{len(cases)} ({label}):\n  {text}\n"
                    "  Hint: every thread must finish writing a level before any thread reads it -- "
                    "put cuda.syncthreads() after the loads and after every level of both sweeps, "
                    "and only read slots 0..T-1 that this block wrote.") from None
            raise ExerciseFailed(f"Exercise 8.4 failed on case {n}/{len(cases)} ({label}):\n"
                                 f"  your kernel raised {type(exc).__name__}: {text}") from None
        msg = compare_outputs(h, scan.recurrence_float64(a, x, h0), name="h", rtol=1e-9, atol=1e-10)
        if msg:
            raise ExerciseFailed(
                f"Exercise 8.4 failed on case {n}/{len(cases)} ({label}):\n  {msg}\n"
                "  Hint: after the down-sweep slot t holds the composition (A, B) of steps 0..t-1; "
                "then h_t = a_t (A h0 + B) + x_t. Check the order inside combine: left first.")
    suffix = "" if traced else " (on a GPU: outputs only, races are not traced)"
    return passed("8.4" + suffix, len(cases), len(cases))
