"""Checks for worksheet 04 (tiling & SIMD): a tiled matmul that vectorises and a ``prange`` parallel matmul.

``check_tiled_matmul(tiled_matmul)``      Exercise 4.1: ``tiled_matmul(A, B, tile) -> C``
``check_parallel_matmul(parallel_matmul)`` Exercise 4.2: ``parallel_matmul(A, B) -> C``, compiled
                                           with ``@njit(parallel=True)`` and a ``prange`` loop.

Both are speed exercises. After the numbers, each check proves the structure with deterministic
counts, then measures the speed against the course's baseline in the same run with
:func:`course_lib.teaching.checks.speed.judge_speed` (fresh matrices for every timed call, every timed
result compared with ``A @ B``, the inputs checked for changes, BLAS on one thread; a ratio judged from
its interval -- never an absolute time):

* 4.1: the function is a numba function that calls none of the course's kernels; it is *tiled by its
  argument* -- the check runs its Python body on a traced ``B`` at two tile sizes and counts how many
  times over it fetches ``B`` through a cache holding half of it (about ``m / tile`` for a tiled loop
  nest, whether the tile of B waits in the cache or each element is reused from a register across a
  tile of rows; ``m`` for an untiled one, see :func:`b_streams`), and the count must follow ``tile``;
  its compiled code contains packed SIMD instructions
  (:func:`course_lib.experiments.matmul.simd_ops`); and it is at least :data:`MIN_TILED_SPEEDUP`
  times as fast as the course's naive ijk loop (``matmul.matmul_naive``).
* 4.2: numba's parallel diagnostics list a loop made from a user ``prange``; the source shows that
  this ``prange`` is the *outer* loop and that every array element written inside it is indexed by
  the prange variable (else two threads write the same ``C[i, j]``: a race, :func:`prange_loops`);
  a case built to expose races (one output element, a long reduction) must come out right; and
  it reaches at least :data:`MIN_PARALLEL_SPEEDUP` of the speed of the course's parallel loop
  (``matmul.matmul_parallel``) on the same threads in the same run (both sides suffer alike when other
  programs take the cores, which on a shared 2-core machine can make *any* parallel loop slower than
  a serial one).
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ...algorithms import matmul
from ...core import backend
from .core import Case, ExerciseFailed, check_function
from .parallel_loops import oversubscribed_run, parallel_structure, prange_loops
from .speed import judge_speed

__all__ = ["check_tiled_matmul", "check_parallel_matmul", "parallel_structure", "reference_matmul",
           "prange_loops", "reuse_distance", "b_streams", "oversubscribed_run", "MIN_TILED_SPEEDUP", "MIN_PARALLEL_SPEEDUP", "ReadTrace",
           "traced_array", "course_kernels_called", "BASELINES", "TRACE_TILES"]

_RTOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10}
MIN_TILED_SPEEDUP = 2.0      # 4.1: vs the course's naive ijk loop (matmul.matmul_naive), same run
MIN_PARALLEL_SPEEDUP = 0.5   # 4.2: fraction of the course's prange loop's speed, same threads, same run
TILED_SPEED_N = 192
#: the course function each speed exercise is timed against, as its statement names it
BASELINES = {"4.1": "matmul.matmul_naive", "4.2": "matmul.matmul_parallel"}
PARALLEL_SPEED_N = 256


def reference_matmul(A, B, tile=None):
    """numpy's product, computed in float64 and returned in A's dtype (``tile`` is ignored)."""
    return (np.asarray(A, np.float64) @ np.asarray(B, np.float64)).astype(np.asarray(A).dtype)


def _matrices(rng, m, k, n, dtype):
    A = rng.standard_normal((m, k)).astype(dtype)
    B = rng.standard_normal((k, n)).astype(dtype)
    return A, B


def _fail(ex: str, message: str, hint: str = "", where: str = "") -> ExerciseFailed:
    return ExerciseFailed(f"Exercise {ex} failed{(' on ' + where) if where else ''}:\n  {message}"
                          + (f"\n  Hint: {hint}" if hint else ""))


# --------------------------------------------------------------------------- tracing reads (4.1)
class ReadTrace(np.ndarray):
    """An array that logs the flat index of every element read from it (scalar reads, and every
    element of a view that enters arithmetic), in order, into ``ReadTrace.log``."""

    log: list | None = None

    def _record(self, idx) -> None:
        if ReadTrace.log is not None:
            ReadTrace.log.extend(np.asarray(idx).ravel().tolist())

    def __getitem__(self, key):
        out = np.ndarray.__getitem__(self.view(np.ndarray), key)
        flat = getattr(self, "_flat", None)
        if flat is None:
            return out
        sub = flat[key]
        if isinstance(out, np.ndarray):
            v = out.view(ReadTrace)
            v._flat = np.asarray(sub)
            return v
        self._record(sub)
        return out

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        for x in inputs:
            if isinstance(x, ReadTrace) and getattr(x, "_flat", None) is not None:
                x._record(x._flat)
        if "out" in kwargs:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, np.ndarray) else o for o in kwargs["out"])
        inputs = tuple(x.view(np.ndarray) if isinstance(x, ReadTrace) else x for x in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        def strip(v):
            if isinstance(v, ReadTrace):
                if getattr(v, "_flat", None) is not None:
                    v._record(v._flat)
                return v.view(np.ndarray)
            if isinstance(v, (list, tuple)):
                return type(v)(strip(u) for u in v)
            return v
        return func(*strip(args), **{k: strip(v) for k, v in kwargs.items()})


def traced_array(a) -> ReadTrace:
    """A copy of ``a`` as a :class:`ReadTrace` (every read of an element is logged by its flat index)."""
    t = np.array(a, copy=True).view(ReadTrace)
    t._flat = np.arange(t.size).reshape(t.shape)
    return t


def reuse_distance(reads) -> tuple[float, float]:
    """``(median reuse distance, fraction of reads that re-read an element)`` of a sequence of
    element indices: the reuse distance of a read is the number of reads since the previous read of
    the same element. A tiled matmul re-reads a ``tile x tile`` block of B after about ``tile**2``
    reads; an untiled one re-reads all of B (``k * n`` reads) in between."""
    last: dict = {}
    dists = []
    for pos, f in enumerate(reads):
        p = last.get(f)
        if p is not None:
            dists.append(pos - p)
        last[f] = pos
    if not dists:
        return float("inf"), 0.0
    return float(np.median(dists)), len(dists) / max(len(reads), 1)


def b_streams(reads, capacity: int) -> float:
    """How many times over the elements of B are fetched by a loop nest whose reads of B are ``reads``
    (flat indices, in order), through an LRU cache holding ``capacity`` elements: misses / distinct elements.

    An untiled loop nest streams all of B once per row of A (``m`` times). A tiled one fetches it about
    ``m / tile`` times -- whether the tile of B stays in the cache while the rows of a tile of A pass
    (inner order i, p, j: short reuse distances) or each element of B is loaded once and reused from a
    register across a tile of rows (inner order p, j, i: every reuse is a full sweep of B, yet only
    ``m / tile`` of them). The median reuse distance (:func:`reuse_distance`) cannot tell the second
    kind from an untiled loop; this count can."""
    capacity = int(capacity)
    if capacity < 1:
        raise ValueError(f"capacity: expected at least 1 element, got {capacity}")
    cache: OrderedDict = OrderedDict()
    misses = 0
    for f in reads:
        if f in cache:
            cache.move_to_end(f)
            continue
        misses += 1
        cache[f] = None
        if len(cache) > capacity:
            cache.popitem(last=False)
    distinct = len(set(reads))
    return misses / distinct if distinct else 0.0


def _trace_b_reads(py_func, A, B, tile) -> list:
    ReadTrace.log = []
    try:
        py_func(A, traced_array(B), tile)
        return ReadTrace.log
    finally:
        ReadTrace.log = None


# --------------------------------------------------------------------------- 4.1

#: 4.1's tiling probe: A and B (TRACE_N, TRACE_N), traced at two tile sizes whose fetch counts differ 4x
TRACE_N = 32
TRACE_TILES = (4, 16)
#: the course's matmul kernels: 4.1 and 4.2 ask for the loop nest, so a function that calls one is rejected
COURSE_KERNEL_MODULE = matmul.__name__


def course_kernels_called(fn) -> list[str]:
    """Names (``matmul._tiled_simd`` ...) of the functions of :data:`COURSE_KERNEL_MODULE` that ``fn``'s body
    refers to -- by a global or enclosing name or an attribute of the module, in ``fn`` or the functions
    nested in it. Read from the code objects, because a numba function's calls into another compiled function never run
    as Python calls that :func:`.shortcuts.check_no_shortcut` could watch."""
    py = getattr(fn, "py_func", fn)
    code = getattr(py, "__code__", None)
    if code is None:
        return []
    glb = dict(getattr(py, "__globals__", {}))
    for name, cell in zip(code.co_freevars, getattr(py, "__closure__", None) or ()):
        try:
            glb[name] = cell.cell_contents          # names from an enclosing function
        except ValueError:                          # a cell not yet filled
            pass
    names, todo = set(), [code]
    while todo:
        c = todo.pop()
        names.update(c.co_names + c.co_freevars)
        todo += [k for k in c.co_consts if hasattr(k, "co_names")]
    found = []
    for name in sorted(names):
        obj = glb.get(name)
        pool = [obj]
        if getattr(obj, "__name__", None) == COURSE_KERNEL_MODULE:   # the module itself: its attributes used
            pool = [getattr(obj, a) for a in sorted(names) if hasattr(obj, a)]
        for f in pool:
            target = getattr(f, "py_func", f)
            label = f"matmul.{getattr(target, '__name__', '?')}"
            if callable(target) and getattr(target, "__module__", None) == COURSE_KERNEL_MODULE and label not in found:
                found.append(label)
    return found


def _no_course_kernel(ex: str, fn) -> None:
    """Fail when ``fn`` calls one of the course's matmul kernels (:func:`course_kernels_called`)."""
    used = course_kernels_called(fn)
    if used:
        raise _fail(ex, f"your numbers are right, but your function calls {used[0]}, one of the course's own matmul "
                        "kernels: the loop nest is the exercise",
                    "write the loops yourself (the worksheet gives the order); the course's kernels are for "
                    "comparing afterwards.")


def _traced_streams(ex: str, fn, A, B, tile) -> tuple[float, float]:
    """``(fetches of B through a cache of half of B, per element; fraction of reads that re-read)``."""
    try:
        reads = _trace_b_reads(fn.py_func, A, B, tile)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise _fail(ex, f"the check runs your function's Python body on a traced B to see its loop nest, and it raised "
                        f"{type(exc).__name__}: {exc}", "index arrays with integers and slices (B[p, j], "
                        "B[p, j0:j1]); no numba-only features in the body.") from exc
    n = B.shape[0]
    if reuse_distance(reads)[1] < 0.5:
        raise _fail(ex, f"for A and B ({n}, {n}) and tile {tile} your function read each element of B about once "
                        f"({len(reads)} reads of {n * n} elements): that is a library product (A @ B, np.dot), not a "
                        "loop nest over tiles", "write the six loops: three over tiles, three inside a tile.")
    return b_streams(reads, capacity=n * n // 2)


def _tiling_follows_tile(ex: str, fn) -> dict:
    """``{tile: fetches of B}`` at :data:`TRACE_TILES`; fail when B is streamed once per row of A (untiled) or
    when the count does not follow ``tile`` (a fixed tile inside the function)."""
    n = TRACE_N
    A, B = _matrices(np.random.default_rng(5), n, n, n, np.float64)
    streams = {tile: _traced_streams(ex, fn, A, B, tile) for tile in TRACE_TILES}
    (t_small, s_small), (t_large, s_large) = streams.items()
    if s_small > n / 2:
        raise _fail(ex, f"your function is not tiled: for A and B ({n}, {n}) and tile {t_small} it fetches all of B "
                        f"{s_small:.0f} times over through a cache that holds half of B -- once per row of A, as an "
                        f"untiled loop does ({n}); a tiled loop nest fetches it about {n} / tile = {n // t_small} times "
                        "(does your function use its argument `tile`?)",
                    "loop over blocks: for i0 in range(0, m, tile), for p0 in range(0, k, tile), for j0 in "
                    "range(0, n, tile); then i, p, j inside the block.")
    if s_small < 0.5 * (t_large / t_small) * s_large:
        raise _fail(ex, f"your function ignores its argument `tile`: through a cache that holds half of B it fetches B "
                        f"{s_small:.0f} times over with tile {t_small} and {s_large:.0f} times with tile {t_large} "
                        f"(A and B ({n}, {n})); a loop nest tiled by `tile` fetches it about {n} / tile times -- "
                        f"{n // t_small} and {n // t_large}",
                    "use the argument everywhere: range(0, m, tile), min(i0 + tile, m), ... -- no fixed block size "
                    "inside the function.")
    return streams

def _tiled_cases(dtype):
    rng = np.random.default_rng(4)
    # (m, k, n, tile): a tile that divides, tiles that leave ragged edges, tile 1, tile = matrix
    shapes = [(8, 8, 8, 4), (13, 7, 10, 4), (33, 17, 65, 16), (5, 9, 3, 1), (24, 24, 24, 24)]
    cases = []
    for m, k, n, tile in shapes:
        A, B = _matrices(rng, m, k, n, dtype)
        cases.append(Case(kwargs=dict(A=A, B=B, tile=tile), label=f"A {A.shape}, B {B.shape}, tile {tile}"))
    return cases


_TILED_HINT = ("when the size is not a multiple of the tile, the last tile is smaller: stop each "
               "tile loop at min(start + tile, size); and start from C = 0 before accumulating.")
_SIMD_HINT = ("inside a block take row views that start at 0 -- c_row = C[i, j0:j1], b_row = B[p, j0:j1] -- "
              "and run the innermost loop `for j in range(j1 - j0): c_row[j] += a * b_row[j]`. A loop "
              "`for j in range(j0, j1)` with a start known only at run time makes numba handle negative "
              "indices, and that blocks vectorisation; so does a dot-product (ijk) inner loop without fastmath.")


def _require_numba(ex: str, fn, what: str) -> None:
    if not (hasattr(fn, "py_func") and hasattr(fn, "targetoptions")):
        raise _fail(ex, f"the results are right, but {what} is a plain Python/numpy function, not a numba function: "
                        "the exercise is about the loops numba compiles",
                    "decorate it with @njit" + ("(parallel=True) and use prange" if ex == "4.2" else "")
                    + " (from numba import njit, prange) and write the loops yourself.")


def check_tiled_matmul(student, dtype=np.float32, *, min_speedup: float = MIN_TILED_SPEEDUP,
                       retries: int = 3) -> str:
    """Exercise 4.1: ``tiled_matmul(A, B, tile)`` equals ``A @ B`` (tiles that divide the matrix and
    tiles that leave ragged edges), leaves A and B alone, is a numba function that calls none of the
    course's kernels (:func:`course_kernels_called`), whose loop nest is tiled *by its argument* --
    its Python body runs on a traced B at :data:`TRACE_TILES` and the fetches of B through a cache of
    half of B (:func:`b_streams`, about m / tile) must follow ``tile``: a fixed block size inside the
    function fetches the same count at both -- and vectorised (packed SIMD instructions in the compiled
    code), and beats the course's naive loop by :data:`MIN_TILED_SPEEDUP`x (``BASELINES["4.1"]``)."""
    ex = "4.1"
    dtype = np.dtype(dtype)
    line = check_function(ex, student, reference_matmul, _tiled_cases(dtype), rtol=_RTOL[dtype],
                          atol=_RTOL[dtype], time_axis=0, time_name="row", hint=_TILED_HINT, quiet=True,
                          inputs_unchanged=True)
    _require_numba(ex, student, "tiled_matmul")
    _no_course_kernel(ex, student)
    streams = _tiling_follows_tile(ex, student)
    # vectorised? packed SIMD instructions in the compiled code
    from numba import typeof

    from ...experiments.matmul import simd_ops

    probe = np.zeros((4, 4), np.float32)
    ops = simd_ops(student, (typeof(probe), typeof(probe), typeof(1)))
    if ops["vector"] == 0:
        raise _fail(ex, f"your function is tiled, but numba compiled it to scalar code only: the machine code "
                        f"(float32) has {ops['scalar']} scalar and no packed (SIMD) multiply/add instructions",
                    _SIMD_HINT)
    # faster: a ratio to the course's naive loop, measured now on fresh matrices, every result compared
    N, tile_s = TILED_SPEED_N, 64
    judged = judge_speed(ex, student, reference_matmul, _naive, _timed_matrices(N, tile_s), min_speedup=min_speedup,
                         baseline_name="course_naive",
                         baseline_desc=f"the course's naive ijk loop ({BASELINES[ex]})", rtol=1e-4, atol=1e-3,
                         retries=retries, blas_threads=1, context="your function is tiled and vectorised",
                         hint="keep the innermost loop contiguous (over j, the columns of B and C) and the block "
                              "loops outside.")
    print(line)
    (t_small, s_small), (t_large, s_large) = streams.items()
    print(f"  tiled: B is fetched about {s_small:.0f} times over with tile {t_small} and {s_large:.0f} with tile "
          f"{t_large} (untiled: {TRACE_N}); the compiled loop uses SIMD instructions; at least {min_speedup:g}x as "
          "fast as the naive loop")
    print(f"  speed: {judged.earned}")
    return line


def _naive(A, B, tile=None):
    """The course's naive ijk loop (``tile`` is ignored): 4.1's baseline."""
    return matmul.matmul_naive(A, B)


_naive.__wrapped__ = matmul.matmul_naive   # what the statement names (inspect.unwrap finds it)


def _timed_matrices(n: int, tile: int | None, dtype=np.float32):
    """``make_input(rng)`` for the speed tests: fresh (n, n) matrices every call (and ``tile`` if given)."""
    def make(rng):
        A, B = _matrices(rng, n, n, n, dtype)
        kwargs = dict(A=A, B=B) if tile is None else dict(A=A, B=B, tile=tile)
        return Case(kwargs=kwargs, label=f"n={n}" + (f", tile {tile}" if tile else "") + f", {np.dtype(dtype).name}")
    return make


def _parallel_cases(dtype):
    rng = np.random.default_rng(42)
    shapes = [(1, 1, 1), (8, 8, 8), (13, 7, 10), (64, 32, 48), (3, 50, 70)]
    cases = []
    for m, k, n in shapes:
        A, B = _matrices(rng, m, k, n, dtype)
        cases.append(Case(kwargs=dict(A=A, B=B), label=f"A {A.shape}, B {B.shape}"))
    return cases


def check_prange_placement(ex: str, fn, *, what: str = "rows") -> dict:
    """Fail unless ``fn``'s first ``prange`` is its outer loop and writes only elements indexed by its
    variable; returns that loop's :func:`prange_loops` entry (``{}`` when the source is unavailable)."""
    loops = prange_loops(fn)
    if not loops:
        return {}
    top = [lp for lp in loops if lp["depth"] == 0]
    if not top:
        lp = loops[0]
        raise _fail(ex, f"the prange loop (line {lp['line']}, over {lp['var']}) sits inside the loop over "
                        f"{' and '.join(lp['outer'])}: numba starts and joins the threads once per outer "
                        "iteration, and only the innermost work is shared -- that does not scale",
                    f"make the outermost loop the prange loop (over the {what}) and keep the inner loops as range.")
    lp = top[0]
    if lp["races"]:
        arr, idx = lp["races"][0]
        raise _fail(ex, f"a race: inside the prange loop over {lp['var']} (line {lp['line']}) you write "
                        f"{arr}[{idx}], whose index does not depend on {lp['var']} -- different iterations, run by "
                        f"different threads, add into the same element at once and updates are lost (it passes "
                        "only when the threads happen not to collide, e.g. on one thread)",
                    f"parallelise the loop over the {what} of the output, so each thread owns whole {what}; "
                    "keep the reduction loop (over k) serial inside it.")
    return lp


def check_parallel_matmul(student, dtype=np.float32, *, min_speedup: float = MIN_PARALLEL_SPEEDUP,
                          retries: int = 3) -> str:
    """Exercise 4.2: ``parallel_matmul(A, B)`` equals ``A @ B`` on 5 cases, leaves A and B alone, **and**
    is a numba function compiled with ``parallel=True`` whose outer loop over rows is a ``prange``
    without races (read from the source, then tested on race-prone shapes here and, oversubscribed with
    twice as many threads as cores, in a separate process: :func:`oversubscribed_run`; that step is
    skipped, with a note in the pass output, when the function's source cannot be obtained or copied,
    e.g. a function defined at an interactive prompt); calls none of the course's kernels; at least half as
    fast as the course's parallel loop (``BASELINES["4.2"]``) on the same threads."""
    ex = "4.2"
    dtype = np.dtype(dtype)
    cases = _parallel_cases(dtype)
    if hasattr(student, "py_func"):
        check_prange_placement(ex, student, what="rows")  # a race may or may not spoil the numbers: name it first
    line = check_function(
        ex, student, reference_matmul, cases, rtol=_RTOL[dtype], atol=_RTOL[dtype],
        time_axis=0, time_name="row", quiet=True, inputs_unchanged=True,
        hint=("each prange iteration must write its own rows of C only (no two iterations may "
              "add into the same element), and C must start at zero."),
    )
    probe = cases[3].kwargs
    try:
        info = parallel_structure(student, probe["A"], probe["B"])
    except NotImplementedError:
        raise
    except Exception as exc:  # pragma: no cover - numba internals changed
        raise ExerciseFailed(
            f"Exercise 4.2 failed:\n  the results are right, but numba's parallel diagnostics could not "
            f"be read ({type(exc).__name__}: {exc}).\n  Hint: time it with 1 and 2 threads "
            f"(backend.set_threads) to see the speedup yourself.") from exc
    if info["problem"]:
        raise ExerciseFailed(
            "Exercise 4.2 failed:\n  the results are right, but it does not run in parallel: "
            f"{info['problem']}.")
    lp = check_prange_placement(ex, student, what="rows")
    _no_course_kernel(ex, student)
    # a case made for races: one output element, a long reduction, many threads adding into it
    rng = np.random.default_rng(43)
    for m, k, n in ((1, 20000, 1), (2, 5000, 3)):
        A, B = _matrices(rng, m, k, n, np.float64)
        got = np.asarray(student(A, B))
        if got.shape != (m, n) or not np.allclose(got, A @ B, rtol=1e-8, atol=1e-8):
            raise _fail(ex, f"with A ({m}, {k}) and B ({k}, {n}) on {backend.get_threads()} threads your result is "
                            f"wrong (got {got.ravel()[:3]}, expected {(A @ B).ravel()[:3]}): threads write the same "
                            "elements of C at once (a race)",
                        "prange over the rows i of C only; never over the reduction index p.")
    # the same, oversubscribed: twice as many threads as cores, in a fresh process (numba fixes its thread
    # count per process), so threads are preempted mid-update and a race shows even on a 2-core machine
    over = oversubscribed_run(student)
    if over["ok"] is False:
        m, k, n = over["shape"]
        raise _fail(ex, f"with A ({m}, {k}) and B ({k}, {n}) on {over['threads']} threads (twice the cores, run in a "
                        f"separate process) your result is wrong (got {over['got']}, expected {over['want']}): threads "
                        "write the same elements of C at once (a race) -- on fewer threads they rarely collide",
                    "prange over the rows i of C only; never over the reduction index p.")
    raced = ("; right with twice as many threads as cores (separate process)" if over["ok"]
             else f"; the oversubscribed run was skipped: {over['skipped']}")
    judged = judge_speed(ex, student, reference_matmul, matmul.matmul_parallel,
                         _timed_matrices(PARALLEL_SPEED_N, None), min_speedup=min_speedup,
                         baseline_name="course_parallel",
                         baseline_desc=f"the course's prange loop ({BASELINES[ex]}) on the same "
                                       f"{backend.get_threads()} thread(s)", rtol=1e-4, atol=1e-3, retries=retries,
                         blas_threads=1, context="your prange loop is the outer one and race-free",
                         hint="inside the prange loop use the ikj order (contiguous innermost loop over j); no "
                              "allocation inside the loop.")
    print(line)
    where = f" (line {lp['line']}, over {lp['var']})" if lp else ""
    print(f"  numba parallel=True, {info['prange_loops']} prange loop(s) turned into parallel loops; "
          f"the prange is the outer loop{where} and writes only its own rows{raced}")
    print(f"  speed: {judged.earned}")
    return line
