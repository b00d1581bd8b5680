"""Checks for worksheet 08 (linear recurrences and the scan).

* 8.1 ``combine(p, q)`` -- the associative (not commutative) operator on (a, b) pairs
* 8.2 ``chunked_scan(a, x, h0, chunks)`` -- reduce each chunk -> scan the carries -> expand
* 8.3 ``recurrence_backward(a, h, h0, grad_h)`` -- the reverse scan
* 8.4 a one-block Blelloch CUDA kernel ``kernel(a, x, h0, h)`` written by the student (T <= threads):
  :mod:`.scan_cuda` (re-exported here)
* 8.5 ``fast_scan(a, x, h0, chunks)`` -- a time-parallel scan for few channels that beats the loop

8.2 and 8.5 measure the *span* deterministically: the check runs the Python body of the function
(``.py_func`` for a numba function) on arrays of traced numbers that carry the length of the longest chain
of dependent multiplications and additions behind them (:func:`scan_span`). A sequential loop has span
``2T``; a chunked scan about ``4T/chunks + 2 chunks``, and more chunks must shorten it -- so carries found by
walking the sequence step by step fail 8.2 though they read every step twice (:func:`chunk_work`).

8.5 is a speed exercise. After the numbers (float32 and float64, inputs unchanged) and the span, the check
traces the float32 values on the speed test's kind of input (:func:`subnormal_trace`: ``a`` in [0.5, 1),
long chunks): running products that stick at subnormal numbers fail on every machine, naming the cause --
on CPUs that handle subnormals in microcode they made a correct scan run at 0.05x the loop (an Intel
Xeon), elsewhere they cost little, and the grade must not depend on the CPU. Then the speed (:func:`.speed.judge_speed`: a
fresh input for every timed call, every timed result compared), a ratio against the plain compiled loop
:func:`sequential_loop` measured alongside (H=1, T=2^18): at least :data:`MIN_SCAN_SPEEDUP` of its speed --
the course's ``method="sequential"`` is about 3x slower at H=1, so a chunked scan without chunks side by
side would beat that one but not this. The pass line prints the speed-up measured.

The CUDA check does more than compare outputs: in numba's CUDA simulator it replaces shared
memory with a *traced* array (poisoned with NaN) and counts each thread's ``cuda.syncthreads()``
calls. Any read of a shared slot this block never wrote, and any two threads touching the same
slot (one of them writing) between the same two barriers, is reported -- a kernel that is right
only because the simulator happened to run its threads in a lucky order fails. A barrier that not every
thread of a block reaches (inside an ``if``, after an early ``return``) is named a *divergent barrier*
(the barriers each thread passed are logged by line), not a race. It also counts, per
thread, the elements read and written in global memory (the kernel's arguments) and in shared memory
(:func:`counted_memory`, the GPU-Puzzles idea) and fails, naming the counter, the thread and the budget,
when the busiest thread exceeds :func:`memory_budget` (each input read once, the output written once,
O(log n) shared accesses). It runs on odd T, more threads than steps (T < n) and three blocks; the
simulator runs one Python thread per CUDA thread, so blocks stay at most 64 threads (about a second for
the whole check).

Graders 8.1, 8.2, 8.3, 8.5 reject a solution that calls the course's own answer (``scan.combine``,
``scan.linear_recurrence``, ...; :mod:`.shortcuts`) once its numbers are right.
"""
from __future__ import annotations

import warnings

import numpy as np
from numba import njit

from ...algorithms import scan
from .shortcuts import check_no_shortcut
from .core import Case, ExerciseFailed, check_function, compare_outputs
from .speed import judge_speed
from .scan_cuda import SharedMemoryHazard, check_block_kernel, counted_memory, memory_budget, traced_shared_memory

__all__ = ["check_combine", "check_chunked_scan", "check_backward", "check_block_kernel", "check_fast_scan",
           "scan_span", "sequential_loop", "dependency_traced", "dependency_depths", "TraceEscape",
           "traced_shared_memory", "counted_memory", "memory_budget", "SharedMemoryHazard",
           "subnormal_trace", "MIN_SCAN_SPEEDUP", "MAX_SUBNORMAL_SHARE", "TINY32"]

#: 8.5's bar: a ratio to the plain compiled loop (sequential_loop) at H=1 on the same inputs, measured alongside in
#: the same run on whatever machine runs the check -- never a time. A chunked scan does twice the loop's work
#: (reduce, then expand), so one chain at a time runs at about 0.4-0.45x the loop; four chunks side by side with
#: products flushed once per 64 steps (the worksheet's solution) measured 0.81-0.89x on a 2-vCPU AMD EPYC (Zen 5)
#: with its other core busy, where a flush after every multiply measured 0.56-0.72x (the compare and select sit on
#: each chain of multiplies) and one chain 0.40x; on a 2-core Intel
#: Xeon (AVX-512) the solution ran at 1.43x on inputs whose products stay normal, a student's flushed four-chain
#: version at 1.6x; a prange over chunks on two cores about 0.8-0.9x. The bar lies between one chain and four,
#: with room on both sides: only chunks advancing side by side clear it. Unflushed products run on subnormals
#: (:func:`subnormal_trace`): 0.05x on that Xeon, so the check rejects them before timing, on every machine.
MIN_SCAN_SPEEDUP = 0.6
MAX_SUBNORMAL_SHARE = 0.01   # of the traced float32 operations with a subnormal operand (subnormal_trace)
SCAN_SPEED_T = 1 << 18


# --------------------------------------------------------------------------- 8.1
def _pairs(rng, i):
    shape = [(3,), (2, 4), (5,), (1,), (3, 2)][i % 5]
    p = (rng.uniform(-1.5, 1.5, shape), rng.standard_normal(shape))
    q = (rng.uniform(-1.5, 1.5, shape), rng.standard_normal(shape))
    return dict(p=p, q=q)


def _pair_arrays(v) -> list:
    return [a for a in (v if isinstance(v, (tuple, list)) else ()) if isinstance(a, np.ndarray)]


def check_combine(student) -> str:
    """Exercise 8.1: ``combine((a1, b1), (a2, b2)) == (a2 a1, a2 b1 + b2)``. Any sequence of two
    arrays is accepted as the result (a tuple or a list); the input pairs must be left unchanged."""
    if not callable(student):
        raise ExerciseFailed(f"Exercise 8.1: expected a function, got {type(student).__name__}")

    def as_pair(p, q):
        snap = [a.copy() for a in _pair_arrays(p) + _pair_arrays(q)]
        out = student(p, q)
        for name, old, new in zip(("p[0]", "p[1]", "q[0]", "q[1]"), snap, _pair_arrays(p) + _pair_arrays(q)):
            if not np.array_equal(old, new):
                raise _InPlace(name)
        if isinstance(out, (tuple, list)):
            return tuple(out)
        if isinstance(out, np.ndarray) and out.ndim >= 1 and out.shape[0] == 2 and out.shape[1:] == np.shape(p[0]):
            return tuple(out)
        return out

    try:
        line = check_function("8.1", as_pair, scan.combine, _pairs, n_cases=5, output_names=["a", "b"],
                              time_axis=None, quiet=True,
                              hint="p is applied first: h -> a1 h + b1, then h -> a2 h + b2. Compose them; "
                                   "the operator is not commutative, so (p, q) and (q, p) differ.")
    except ExerciseFailed as exc:
        cause = exc.__cause__
        if isinstance(cause, _InPlace):
            raise ExerciseFailed(f"Exercise 8.1 failed:\n  your combine changed its input {cause} in place "
                                 "(a1 *= a2 and the like); the pairs belong to the caller -- a scan reuses them -- "
                                 "so return new arrays") from None
        raise
    # associativity on one more case, through the student's own function
    rng = np.random.default_rng(7)
    p, q, r = ((rng.uniform(-1, 1, 4), rng.standard_normal(4)) for _ in range(3))
    left = as_pair(as_pair(p, q), r)
    right = as_pair(p, as_pair(q, r))
    msg = compare_outputs(tuple(left), tuple(right), name="(p o q) o r vs p o (q o r)", time_axis=None)
    if msg:
        raise ExerciseFailed(f"Exercise 8.1 failed: your combine is not associative:\n  {msg}")
    check_no_shortcut("8.1", as_pair, {"scan.combine": scan.combine}, p, q)
    print(line)
    return line


class _InPlace(Exception):
    pass


# --------------------------------------------------------------------------- 8.2
def _chunk_cases(rng, i):
    T, H, chunks = [(12, 3, 3), (10, 2, 4), (7, 1, 7), (9, 4, 1), (33, 5, 5), (16, 2, 2)][i]
    a, x, h0 = scan.random_problem(T, H, seed=int(rng.integers(1 << 30)), dtype="float64")
    return dict(a=a, x=x, h0=h0, chunks=chunks)


def _chunk_reference(a, x, h0, chunks):
    return scan.linear_recurrence(a, x, h0, method="chunked", chunks=chunks)


#: the course's own scans: a solution to 8.2 or 8.5 that calls one of them is a shortcut
_SCAN_ANSWERS = {"scan.linear_recurrence": scan.linear_recurrence, "scan.recurrence_float64": scan.recurrence_float64,
                 "scan.hillis_steele": scan.hillis_steele, "scan.blelloch": scan.blelloch}


def chunk_work(student, T: int = 24, nh: int = 2, chunks: int = 4) -> dict:
    """Run ``student(a, x, h0, chunks)`` on a traced ``a`` and count how often each ``a_t`` enters the
    arithmetic: ``{"reads_per_step": float, "steps_read_twice": int, "T": T}``. A chunked scan reads
    every step twice (reduce, then expand; the last chunk's reduction may be skipped); the sequential
    loop reads each step once -- the extra work is the price of parallelism over time."""
    from .tiling_simd import ReadTrace, traced_array

    a, x, h0 = scan.random_problem(T, nh, seed=99, dtype="float64")
    ReadTrace.log = []
    try:
        student(traced_array(a), x.copy(), h0.copy(), chunks)
        reads = np.asarray(ReadTrace.log, dtype=np.int64)
    finally:
        ReadTrace.log = None
    per_step = np.bincount(reads // nh, minlength=T)[:T] / nh if reads.size else np.zeros(T)
    return {"reads_per_step": float(per_step.mean()), "steps_read_twice": int(np.sum(per_step >= 2)), "T": T,
            "chunks": chunks}


def check_chunked_scan(student) -> str:
    """Exercise 8.2: ``chunked_scan(a, x, h0, chunks)`` equals the sequential recurrence,
    for even and uneven splits (chunks = 1 and chunks = T included), leaves its inputs unchanged, and
    really works in chunks, checked two ways: counted on a traced ``a`` (:func:`chunk_work`), the steps outside
    the last chunk are read twice -- once to reduce their chunk, once to expand it; and measured on traced
    numbers (:func:`scan_span` at T=64 with 4 and with 8 chunks), the longest chain of dependent operations is
    at most half the loop's and shrinks with more chunks -- so carries found by walking the sequence step by
    step (a serial walk that also reads every step twice) fail. The pass line prints the measured span."""
    line = check_function("8.2", student, _chunk_reference, _chunk_cases, n_cases=6, output_names=["h"],
                          rtol=1e-9, atol=1e-10, quiet=True, inputs_unchanged=True,
                          hint="Chunk c must start from the carry h just before it: the carries come "
                               "from composing the earlier chunks' (A, B) pairs in order; the first "
                               "time step that differs shows which chunk starts from the wrong carry.")
    work = _chunked_work("8.2", student, T=24, chunks=4)
    s_few, s_many = _chunked_spans("8.2", student, T=64, few=4, many=8)
    check_no_shortcut("8.2", student, _SCAN_ANSWERS, *scan.random_problem(12, 2, seed=3, dtype="float64"), 3)
    print(line)
    print(f"  work: each a_t used {work['reads_per_step']:.2f} times on average (T={work['T']}, {work['chunks']} "
          f"chunks; the sequential loop: 1); span, measured: {s_many['span']} dependent operations at "
          f"T={s_many['T']} with {s_many['chunks']} chunks ({s_few['span']} with {s_few['chunks']}; the loop: "
          f"{2 * s_many['T']})")
    return line


def _chunked_work(ex: str, student, T: int, chunks: int) -> dict:
    """8.2's counted work (:func:`chunk_work`); fails a function that reads the steps outside the last chunk once."""
    try:
        work = chunk_work(student, T=T, chunks=chunks)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise ExerciseFailed(f"Exercise {ex} failed:\n  the check runs your function on a traced `a` (T={T}, "
                             f"chunks={chunks}) to count its work, and it raised {type(exc).__name__}: {exc}") from exc
    need = T - T // chunks
    if work["steps_read_twice"] < need:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your numbers are right, but your function does not work in chunks: for T={T} "
            f"and chunks={chunks} it used {work['steps_read_twice']} of the a_t twice (on average each "
            f"{work['reads_per_step']:.2f} times); a chunked scan reads every step of the first {chunks - 1} chunks "
            f"twice -- once to reduce its chunk to (A_c, B_c), once to expand it from its carry -- that is "
            f"{need} steps at least. A single sequential loop (ignoring `chunks`) reads each step once.\n  Hint: "
            "phase 1 reduces every chunk on its own (no h yet), phase 2 scans the short list of carries, phase 3 "
            "re-runs each chunk from its carry. Index a[t] or a[s:e] yourself (no course scan function).")
    return work


def _chunked_spans(ex: str, student, T: int, few: int, many: int) -> tuple[dict, dict]:
    """8.2's measured spans at ``few`` and ``many`` chunks; fails carries that walk the sequence step by step."""
    s_few = _traced(ex, scan_span, student, "measure its span", T=T, chunks=few)
    s_many = _traced(ex, scan_span, student, "measure its span", T=T, chunks=many)
    if s_many["span"] <= T and s_many["span"] < s_few["span"]:
        return s_few, s_many
    raise ExerciseFailed(
        f"Exercise {ex} failed:\n  your numbers are right and you read every step twice, but your chunks wait for "
        f"each other: measured on traced numbers, the longest chain of dependent operations behind any h_t (the "
        f"span) is {s_many['span']} for T={T} with {many} chunks and {s_few['span']} with {few} -- the loop "
        f"h = a h + x has {2 * T}, a chunked scan about 4T/chunks + 2 chunks = {4 * T // many + 2 * many} "
        f"({4 * T // few + 2 * few} with {few}), shorter with more chunks. A span near the loop's that does not "
        "shrink means each carry was found by walking the sequence step by step (h through every earlier "
        "step): that walk is the sequential loop again, however the work is split afterwards.\n  Hint: the carry "
        "of chunk c comes from the earlier chunks' reduced pairs -- carry_c = A_(c-1) carry_(c-1) + B_(c-1), "
        "chunks - 1 short steps, not T; reduce every chunk on its own first (no h yet).")


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
    line = check_function("8.3", student, _bwd_reference, _bwd_cases, n_cases=5, quiet=True, inputs_unchanged=True,
                          output_names=["grad_a", "grad_x", "grad_h0"], rtol=1e-9, atol=1e-10,
                          hint="g_t = a_{t+1} g_{t+1} + grad_h_t runs backwards from g_{T-1} = grad_h_{T-1}; "
                               "then grad_x = g, grad_a_t = h_{t-1} g_t (h_{-1} = h0), grad_h0 = a_0 g_0.")
    check_no_shortcut("8.3", student, {"scan.linear_recurrence_backward": scan.linear_recurrence_backward},
                      **_bwd_cases(np.random.default_rng(3), 0))
    print(line)
    return line



# --------------------------------------------------------------------------- 8.5: work and span, traced
class TraceEscape(TypeError):
    """A traced number was stored into an array of a fixed float type (the function under trace
    allocated with ``np.empty(shape)`` instead of the inputs' dtype)."""


TINY32 = float(np.finfo(np.float32).tiny)   # the smallest normal float32; nonzero values below it are subnormal


class _Dep:
    """A number that knows the longest chain of dependent arithmetic operations behind it (``d``).
    Every ``+ - * /`` counts one level: ``max(depth of the operands) + 1``; constants have depth 0.
    :data:`_Dep.work` counts the multiplications while :func:`scan_span` runs. With :data:`_Dep.f32` set
    (:func:`subnormal_trace`) every result is rounded to float32 and :data:`_Dep.sub` counts the
    operations, the subnormal results (and the depth of the first) and the operations on a subnormal operand."""

    __slots__ = ("v", "d")
    work = 0
    f32 = False
    sub = None   # with f32: {"ops", "made", "used", "first_depth"}

    def __init__(self, v, d=0):
        self.v, self.d = float(v), d

    @staticmethod
    def _split(o):
        if isinstance(o, _Dep):
            return o.v, o.d
        if isinstance(o, (int, float, np.integer, np.floating, bool)):
            return float(o), 0
        return None, None

    def _op(self, o, f, mul=False):
        v, d = self._split(o)
        if v is None:
            return NotImplemented
        if mul:
            _Dep.work += 1
        out = _Dep(f(self.v, v), max(self.d, d) + 1)
        if _Dep.f32:
            out.v = float(np.float32(out.v))
            _count_subnormal(_Dep.sub, (self.v, v), out)
        return out

    def __add__(self, o): return self._op(o, lambda p, q: p + q)
    def __radd__(self, o): return self._op(o, lambda p, q: q + p)
    def __sub__(self, o): return self._op(o, lambda p, q: p - q)
    def __rsub__(self, o): return self._op(o, lambda p, q: q - p)
    def __mul__(self, o): return self._op(o, lambda p, q: p * q, True)
    def __rmul__(self, o): return self._op(o, lambda p, q: q * p, True)
    def __truediv__(self, o): return self._op(o, lambda p, q: p / q)
    def __rtruediv__(self, o): return self._op(o, lambda p, q: q / p)
    def __neg__(self): return _Dep(-self.v, self.d)
    def __pos__(self): return self
    def __abs__(self): return _Dep(abs(self.v), self.d)
    def _cmp(self, o, f):
        v, _ = self._split(o)
        return NotImplemented if v is None else f(self.v, v)
    def __lt__(self, o): return self._cmp(o, lambda p, q: p < q)
    def __le__(self, o): return self._cmp(o, lambda p, q: p <= q)
    def __gt__(self, o): return self._cmp(o, lambda p, q: p > q)
    def __ge__(self, o): return self._cmp(o, lambda p, q: p >= q)
    def __eq__(self, o): return self._cmp(o, lambda p, q: p == q)
    def __ne__(self, o): return self._cmp(o, lambda p, q: p != q)
    __hash__ = None

    def __float__(self):
        raise TraceEscape("a traced number was stored into an array of a fixed float type")


def _is_subnormal(v: float) -> bool:
    return 0.0 < abs(v) < TINY32


def _count_subnormal(sub: dict, operands: tuple, out: "_Dep") -> None:
    """Tally one float32 operation: a subnormal result (the depth of the first), a subnormal operand."""
    sub["ops"] += 1
    if any(_is_subnormal(v) for v in operands):
        sub["used"] += 1
    if _is_subnormal(out.v):
        sub["made"] += 1
        if sub["first_depth"] is None:
            sub["first_depth"] = out.d


def _dep_array(arr) -> np.ndarray:
    out = np.empty(arr.shape, dtype=object)
    for idx in np.ndindex(arr.shape):
        out[idx] = _Dep(arr[idx])
    return out


def dependency_traced(arr) -> np.ndarray:
    """A copy of ``arr`` as an object array of traced numbers (depth 0): every ``+ - * /`` on them
    records the longest chain of dependent operations behind its result. Read the chains of a
    result with :func:`dependency_depths`. numpy's element-wise operations and slicing work on
    them; a store into a float array raises :class:`TraceEscape`."""
    return _dep_array(np.asarray(arr, dtype=np.float64))


def dependency_depths(out) -> tuple[np.ndarray, np.ndarray]:
    """``(depths, values)`` of an array of traced numbers (plain numbers count depth 0):
    ``depths.max()`` is the span of the computation that produced ``out``."""
    out = np.asarray(out, dtype=object)
    depth = np.zeros(out.shape, dtype=np.int64)
    values = np.zeros(out.shape, dtype=np.float64)
    for idx in np.ndindex(out.shape):
        e = out[idx]
        depth[idx], values[idx] = (e.d, e.v) if isinstance(e, _Dep) else (0, float(e))
    return depth, values


def scan_span(student, T: int = 256, nh: int = 2, chunks: int = 16) -> dict:
    """Work and span of ``student(a, x, h0, chunks)``, counted on traced numbers: runs the Python body
    (``.py_func`` of a numba function, where prange is range) on object arrays of :class:`_Dep`.
    Returns ``{"span": longest chain of dependent + - * / behind any h_t, "work": multiplications,
    "T", "H", "chunks", "values": the traced h as floats}``. The loop ``h = a h + x``: span ``2T``,
    work ``T H``."""
    fn = getattr(student, "py_func", student)
    a, x, h0 = scan.random_problem(T, nh, seed=85, dtype="float64")
    _Dep.work = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = fn(_dep_array(a), _dep_array(x), _dep_array(h0), chunks)
    work = _Dep.work
    h = np.asarray(h, dtype=object)
    if h.shape != (T, nh):
        raise ValueError(f"returned shape {h.shape} on the traced run, expected {(T, nh)}")
    depth, values = dependency_depths(h)
    return {"span": int(depth.max()), "work": int(work), "T": T, "nh": nh, "chunks": chunks, "values": values}


def subnormal_trace(student, T: int = 2048, nh: int = 1, chunks: int = 2, seed: int = 86) -> dict:
    """Run the Python body of ``student(a, x, h0, chunks)`` on traced numbers rounded to float32 at every
    operation, on the speed test's kind of input (``a`` uniform in [0.5, 1), float32), and count subnormal
    numbers: ``{"ops": float32 operations, "made": results that were nonzero subnormals (|v| < the smallest
    normal float32), "used": operations with a subnormal operand, "first_depth": the dependent operations
    behind the first subnormal result (None: none), "share": used / ops}``. A chunk's running product of
    factors in [0.5, 1) reaches the subnormal range after about 290 steps and -- rounded to nearest -- sticks
    at the smallest subnormal, so every later multiply takes its operand from there: deterministic, whatever
    the CPU (which only decides how much that costs)."""
    fn = getattr(student, "py_func", student)
    a, x, h0 = scan.random_problem(T, nh, seed=seed, dtype="float32")
    _Dep.f32, _Dep.sub = True, {"ops": 0, "made": 0, "used": 0, "first_depth": None}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(_dep_array(a), _dep_array(x), _dep_array(h0), chunks)
        sub = dict(_Dep.sub)
    finally:
        _Dep.f32, _Dep.sub = False, None
    sub["share"] = sub["used"] / max(1, sub["ops"])
    return {**sub, "T": T, "chunks": chunks}


def _fast_cases():
    out = []
    for k, (T, H, chunks, dt) in enumerate([(1, 1, 1, "float64"), (12, 3, 5, "float64"), (33, 2, 8, "float32"),
                                            (100, 4, 7, "float64"), (7, 1, 7, "float32"), (64, 1, 16, "float32"),
                                            (50, 2, 1, "float64"), (1000, 1, 12, "float32")]):
        a, x, h0 = scan.random_problem(T, H, seed=850 + k, dtype=dt)
        out.append(Case(dict(a=a, x=x, h0=h0, chunks=chunks), label=f"T={T}, H={H}, chunks={chunks}, {dt}"))
    return out


def _fast_reference(a, x, h0, chunks):
    return scan.recurrence_float64(a, x, h0).astype(x.dtype)


def _timed_reference(a, x, h0, chunks):
    """The float64 loop at the speed test's length (compiled: ``recurrence_float64`` takes seconds there)."""
    f64 = np.float64
    return sequential_loop(a.astype(f64), x.astype(f64), h0.astype(f64)).astype(x.dtype)


@njit(cache=True)
def sequential_loop(a, x, h0):
    """The fastest plain loop ``h_t = a_t h_{t-1} + x_t`` over ``(T, H)``: time outside, the whole row of ``H``
    channels inside, the carry in a local variable at ``H = 1`` (no store and reload per step). 8.5's baseline:
    about 3x faster than ``linear_recurrence(method="sequential")`` at ``H = 1``."""
    T, n = a.shape
    h = np.empty_like(x)
    if n == 1:
        p = h0[0]
        for t in range(T):
            p = a[t, 0] * p + x[t, 0]
            h[t, 0] = p
        return h
    prev = h0.copy()
    for t in range(T):
        for j in range(n):
            prev[j] = a[t, j] * prev[j] + x[t, j]
        h[t] = prev
    return h


def check_fast_scan(student, *, chunks: int = 16, min_speedup: float = MIN_SCAN_SPEEDUP, retries: int = 2) -> str:
    """Exercise 8.5: ``fast_scan(a, x, h0, chunks)`` equals the float64 loop (float32 and float64, uneven
    splits, 1 chunk and one chunk per step) and leaves its inputs unchanged; it is time-parallel -- its span,
    counted on traced numbers by :func:`scan_span`, is at most half the loop's and shrinks with more chunks;
    its running products never stick at subnormal numbers -- counted by :func:`subnormal_trace` (float32,
    ``a`` in [0.5, 1), T=2048, 2 chunks: at most :data:`MAX_SUBNORMAL_SHARE` of the operations on a subnormal
    operand; a solution above that fails on every machine, whatever its CPU's subnormal penalty); and it is
    at least ``min_speedup`` times as fast as the plain compiled loop :func:`sequential_loop` at H=1,
    T=2^18, float32, with ``chunks`` chunks, measured alongside by :func:`.speed.judge_speed` (fresh input per
    timed call, every timed result compared with the float64 loop; a measurement too noisy to decide raises
    :class:`.speed.SpeedNotJudged`). The pass line prints the span, the work and the speed-up measured."""
    ex = "8.5"
    if not isinstance(chunks, (int, np.integer)) or chunks < 2:
        raise ValueError(f"chunks: the speed test needs at least 2 chunks, got {chunks!r}")
    line = check_function(ex, student, _fast_reference, _fast_cases(), output_names=["h"], rtol=1e-4, atol=1e-5,
                          quiet=True, inputs_unchanged=True,
                          hint="chunk c must start from the carry just before it; the last chunk also takes "
                               "the steps left over when chunks does not divide T; allocate with the inputs' "
                               "dtype (np.empty_like(x)) so float32 stays float32.")
    Ts, few, many = 256, 4, 16
    s_few, s_many = _fast_spans(ex, student, Ts, few, many)
    _check_no_subnormals(ex, student)
    check_no_shortcut(ex, student, _SCAN_ANSWERS, *scan.random_problem(40, 2, seed=3, dtype="float64"), 4)
    judged = _fast_speed(ex, student, chunks, min_speedup, retries)
    print(line)
    print(f"  span: {s_many['span']} dependent operations for T={Ts} with {many} chunks ({s_few['span']} with {few}; "
          f"the loop: {2 * Ts}); work: {s_many['work']} multiplications (the loop: {Ts * s_many['nh']})")
    print(f"  speed: {judged.earned}")
    return line


def _traced(ex: str, tracer, student, what: str, **kw) -> dict:
    """``tracer(student, **kw)`` with its failures turned into the student's message (``what``: the run)."""
    try:
        return tracer(student, **kw)
    except NotImplementedError:
        raise
    except TraceEscape:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  the check runs the Python body of your function on arrays of traced numbers "
            f"(dtype object) to {what}, and your function stored one into an array of a fixed float type.\n  Hint: "
            "allocate work arrays with the inputs' dtype -- np.empty_like(x), np.empty((C, H), a.dtype), "
            "a.dtype.type(1) -- which also keeps float32 inputs float32.") from None
    except Exception as exc:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  the check runs the Python body of your function on arrays of traced numbers "
            f"({', '.join(f'{k}={v}' for k, v in kw.items())}) to {what}, and it raised {type(exc).__name__}: "
            f"{exc}\n  Hint: keep the scan's arithmetic in this one function (a helper compiled with @njit cannot "
            "take traced numbers) and index a, x, h0 with integers and slices.") from exc


def _fast_spans(ex: str, student, Ts: int, few: int, many: int) -> tuple[dict, dict]:
    """8.5's spans at ``few`` and ``many`` chunks; fails a sequential scan and one that ignores ``chunks``."""
    s_few = _traced(ex, scan_span, student, "count its span", T=Ts, chunks=few)
    s_many = _traced(ex, scan_span, student, "count its span", T=Ts, chunks=many)
    loop = 2 * Ts
    if s_many["span"] > Ts:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your numbers are right, but your scan is sequential in time: for T={Ts} and "
            f"chunks={many} its longest chain of dependent operations (the span) is {s_many['span']} -- the loop "
            f"h = a h + x has {loop}, a chunked scan about 4T/chunks + 2 chunks = {4 * Ts // many + 2 * many}. "
            f"Every h_t waits for the one before it, so no number of cores or SIMD lanes can speed it up.\n  Hint: "
            "reduce each chunk to (A_c, B_c) on its own (no h yet), scan the short list of carries, then expand every "
            "chunk from its carry; run several chunks side by side (threads, or interleaved in one loop).")
    if s_many["span"] >= s_few["span"]:
        raise ExerciseFailed(
            f"Exercise {ex} failed:\n  your numbers are right and your span is short, but your function ignores "
            f"`chunks`: for T={Ts} its span is {s_few['span']} with chunks={few} and {s_many['span']} with "
            f"chunks={many}; more chunks must mean shorter chains (about 4T/chunks + 2 chunks).\n  Hint: split "
            "time into exactly `chunks` pieces.")
    return s_few, s_many


def _check_no_subnormals(ex: str, student) -> dict:
    """Fail a solution whose running products stick at subnormal float32 numbers (:func:`subnormal_trace`)."""
    sub = _traced(ex, subnormal_trace, student, "follow its float32 values", T=2048, chunks=2)
    if sub["share"] <= MAX_SUBNORMAL_SHARE:
        return sub
    raise ExerciseFailed(
        f"Exercise {ex} failed:\n  your numbers are right and your scan is time-parallel, but your chunk products "
        f"went subnormal after about {sub['first_depth']} steps: traced in float32 on the speed test's kind of input "
        f"(a uniform in [0.5, 1), T={sub['T']}, {sub['chunks']} chunks), a running product fell below the smallest "
        f"normal float32 ({TINY32:.2g}), and {sub['used']} of your {sub['ops']} operations "
        f"({100 * sub['share']:.0f}%) then ran on subnormal numbers -- rounded to nearest, a product of factors in "
        "[0.5, 1) sticks at the smallest subnormal (1.4e-45) and never reaches 0. On CPUs that handle subnormals "
        "in microcode (chapter 08 measures the penalty: about 13x per operation on an Intel Xeon, little on others) "
        "such a scan runs many times slower than the loop, so this check rejects it on every machine.\n  Hint: flush "
        "every running product of the a_t -- set it to zero once it falls below a small normal threshold: it is "
        "already negligible beside the B terms. Once per block of 64 steps keeps the flush off the chains of "
        "multiplies: after each block, `if abs(A0) < tiny: A0 = zero` with tiny = a.dtype.type(1e-18), zero = "
        "a.dtype.type(0) (64 factors >= 0.5 cannot take a product from 1e-18 below the smallest normal).")


def _fast_speed(ex: str, student, chunks: int, min_speedup: float, retries: int):
    """8.5's speed: a ratio to the plain compiled loop (sequential_loop), measured now, on a fresh input per timed
    call, every timed result compared with the float64 loop. Returns the :class:`.speed.Judgement`."""
    N = SCAN_SPEED_T

    def make_input(rng):
        a, x, h0 = scan.random_problem(N, 1, seed=int(rng.integers(1 << 30)), dtype="float32")
        return {"a": a, "x": x, "h0": h0, "chunks": chunks}

    sequential_loop(*scan.random_problem(8, 1, dtype="float32"))   # compiled before it is timed
    return judge_speed(
        ex, student, _timed_reference, lambda a, x, h0, chunks: sequential_loop(a, x, h0), make_input,
        min_speedup=min_speedup, baseline_name="plain_loop",
        baseline_desc="the plain compiled loop over t (sequential_loop: one scalar chain at H=1)",
        rtol=1e-3, atol=1e-4, retries=retries, budget_s=0.2, seed=86, label=f"T={N}, H=1, chunks={chunks}, float32",
        context="your scan is right, time-parallel and its products stay normal",
        explain="Splitting time into chunks doubles the work (reduce, then expand): it only pays when "
                "several chunks advance at once.",
        hint="with one channel the loop waits for each multiply-add; give the core several independent "
             "chains at once -- a few chunks side by side in one loop, each carry in its own local variable "
             "-- or threads over chunks (numba prange); a compiled function (@njit), no Python loop.")
