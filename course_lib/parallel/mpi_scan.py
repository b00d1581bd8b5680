"""The scan across MPI ranks (parallel layer): the worker program and the functions that launch it.

The sequence is split in contiguous blocks of time, one per rank (context parallelism in
flash-linear-attention, LASP). Every step is an affine map ``h -> a h + x``, so a block of steps is one too::

    1. reduce   each rank runs its block from zero (rank 0: from h0) and keeps one pair
                (a_prod, b) = (product of its a's, its last state)            -- no communication
    2. exscan   comm.Exscan with a NON-commutative user operator (MPI.Op.Create(fn, commute=False)),
                (a1, b1) o (a2, b2) = (a2 a1, a2 b1 + b2), gives rank r the composition of ranks 0..r-1:
                the state just before its block, its *carry*                   -- log2(P) messages
    3. expand   each rank corrects its block for its carry                    -- no communication
                (the matrix state: one matrix product per head; element-wise and DEER: the block again)

Three kinds of recurrence, one program (``KINDS``):

* ``"elementwise"``  chapter 08's ``h_t = a_t * h_{t-1} + x_t`` (:func:`linear_recurrence_mpi`);
* ``"gated"``        the matrix state of gated linear attention, run by the chunked matmul form
  (:func:`gated_linear_recurrence_mpi`): the pair is (decay product, the block's final state ``S``);
* ``"matrix"``       DEER's inner linear recurrence ``h_t = A_t h_{t-1} + b_t`` with full Jacobians
  (chapter 11; :func:`matrix_recurrence_mpi`): the pair is (``A`` product, ``b``), composed by matrix products.

The message is one pair per rank -- the size of one state (plus its ``a``), whatever T is -- so splitting
pays once a block's compute time is well above the exscan's ``ceil(log2 P)`` message latencies
(:mod:`course_lib.parallel.mpi_pingpong` measures them). Launched through :func:`course_lib.core.mpi.launch`
(``mpiexec -n P python -m course_lib.parallel.mpi_scan WORKDIR KIND [options]``); on a cluster the same
program runs unchanged under ``srun -n P python -m course_lib.parallel.mpi_scan ...`` (WORKDIR on a shared
file system). Each rank reads only its block of the inputs (memory-mapped ``.npy`` files) and writes its block
of the output.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from ..algorithms import linear_attention, matrix_scan, scan, scan_kernels
from ..core.mpi import launch, worker_main
from ..core.validate import check_array, check_bool, check_choice, check_float, check_int, check_nonempty, check_positive_int
from .mgrit_mpi import block_range

__all__ = ["KINDS", "PHASES", "MODULE", "linear_recurrence_mpi", "gated_linear_recurrence_mpi",
           "matrix_recurrence_mpi", "run", "body", "check_job", "main"]

MODULE = "course_lib.parallel.mpi_scan"
KINDS = ("elementwise", "gated", "matrix")
PHASES = ("reduce", "exscan", "expand")
INPUTS = {"elementwise": ("a", "x"), "gated": ("q", "k", "v", "decay"), "matrix": ("A", "b")}


# --------------------------------------------------------------------------- the worker
def _parse(rest):
    parser = argparse.ArgumentParser(prog=MODULE, exit_on_error=False, add_help=False)
    parser.add_argument("kind")
    parser.add_argument("--chunk", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--fail-rank", type=int, default=None)
    parser.add_argument("--hang-rank", type=int, default=None)
    try:
        args, extra = parser.parse_known_args(list(rest))
    except (argparse.ArgumentError, SystemExit) as exc:
        raise ValueError(f"args: {exc}; expected KIND [--chunk c] [--fail-rank r] [--hang-rank r]") from None
    if extra:
        raise ValueError(f"args: unknown argument(s) {extra}; expected KIND [--chunk c] [--fail-rank r] [--hang-rank r]")
    check_choice(args.kind, "KIND", KINDS)
    check_int(args.repeat, "--repeat", low=1, high=1000)
    if args.chunk is not None:
        check_int(args.chunk, "--chunk", low=1)
    for name in ("fail_rank", "hang_rank"):
        if getattr(args, name) is not None:
            check_int(getattr(args, name), "--" + name.replace("_", "-"), low=0)
    return args


def check_job(work, rest) -> None:
    """Validate the options and that ``WORKDIR`` holds the kind's inputs (``NAME.npy``) before MPI starts."""
    args = _parse(rest)
    for name in INPUTS[args.kind]:
        f = Path(work) / f"{name}.npy"
        if not f.is_file():
            raise FileNotFoundError(f"WORKDIR: {f} does not exist (course_lib.parallel.mpi_scan.run writes it)")


def _local(kind, arrays, init, chunk):
    """Run one rank's block from ``init`` (None: zeros) on one thread (the ranks are the parallelism);
    returns ``(outputs, final state)``."""
    if kind == "elementwise":
        h = scan.linear_recurrence(arrays["a"], arrays["x"], init)
        return h, h[-1]
    if kind == "gated":
        return linear_attention.gated_linear_recurrence(*(arrays[n] for n in INPUTS["gated"]), method="chunked",
                                                        chunk=chunk, S0=init, return_state=True, threads=1)
    h = matrix_scan.linear_recurrence(arrays["A"], arrays["b"], init, structure="full")
    return h, h[-1]


def _expand(kind, arrays, out, carry, chunk):
    """The block's outputs given the state before it (``carry``), from its outputs from zero (``out``).

    The matrix state needs no second pass: ``S_t = S_t(from 0) + (a_1 ... a_t) * carry``, so
    ``o_t += carry^T (q_t * exp(G_t))`` with ``G_t`` the cumulative log decay from the block's start -- one
    matrix product per head, ``2 d_k d_v`` flops per step against the chunked form's ``2c(d_k + d_v) + 4 d_k d_v``.
    The element-wise and DEER recurrences run their block again from the carry (as chapter 08's expand)."""
    if kind != "gated":
        return _local(kind, arrays, carry, chunk)[0]
    q, decay = arrays["q"], arrays["decay"]
    with np.errstate(divide="ignore"):
        G = np.cumsum(np.maximum(np.log(decay.astype(np.float64)), -1e4), axis=0)   # (T, B, heads[, d_k])
    w = np.exp(G)
    w[w < scan_kernels.TINY] = 0.0        # flushed, as the products: never a subnormal factor in the matmul
    w = w.astype(q.dtype)
    qd = q * (w if decay.ndim == 4 else w[..., None])                               # (T, B, heads, d_k)
    corr = np.matmul(np.moveaxis(qd, 0, 2), carry)                                  # (B, heads, T, d_v)
    out += np.moveaxis(corr, 2, 0)
    return out


def _product(kind, arrays, state_shape):
    """The block's ``a`` product, float64, in the shape the operator needs.

    Flushed, never on subnormals: a block is 10^5 factors per rank, and a plain ``np.prod`` of factors in
    [0.5, 1) sticks at float64's smallest subnormal after ~2,300 of them, so nearly every multiply takes the
    CPU's subnormal assist (13x on an Intel Xeon: "3.43x one rank" on 2 ranks there). Products below
    :data:`~course_lib.algorithms.scan_kernels.TINY` (1e-30) become 0 (:func:`~course_lib.algorithms.scan_kernels.product`;
    the matrix product chain entry by entry, :func:`~course_lib.algorithms.matrix_scan.product`): for factors with
    ``|a| <= 1`` the carry term ``a_prod * h`` they multiply is then off by less than ``1e-30 |h|``, far below the
    float32 (and float64) round-off of the block's own last state ``b``."""
    if kind == "matrix":
        A = arrays["A"]
        P = matrix_scan.product(A.reshape(A.shape[0], -1, *A.shape[-2:]).astype(np.float64, copy=False))
        return P.reshape(A.shape[1:])
    a = arrays["a"] if kind == "elementwise" else arrays["decay"]   # (T, *state) or (T, B, heads[, d_k])
    d = np.empty(a.shape[1:], np.float64)
    scan_kernels.product(a.reshape(a.shape[0], -1), d.reshape(-1))
    if kind == "elementwise":
        return d
    d = d[..., None, None] if d.ndim == 2 else d[..., None]          # (B, heads[, d_k], 1[, 1])
    return np.broadcast_to(d, state_shape)


def _operator(kind, a_shape, b_shape):
    """The pair composition on packed float64 buffers ``[a.ravel(), b.ravel()]``: ``inout <- in o inout``
    (MPI passes the earlier ranks' value as ``in``: the operator is not commutative)."""
    na = int(np.prod(a_shape))

    def fn(inbuf, inoutbuf, datatype):
        p = np.frombuffer(inbuf, dtype=np.float64)
        q = np.frombuffer(inoutbuf, dtype=np.float64)
        a1, b1 = p[:na].reshape(a_shape), p[na:].reshape(b_shape)
        a2, b2 = q[:na].reshape(a_shape), q[na:].reshape(b_shape)
        if kind == "matrix":
            a, b = a2 @ a1, (a2 @ b1[..., None])[..., 0] + b2
        else:
            a, b = a2 * a1, a2 * b1 + b2
        q[:na] = a.ravel()
        q[na:] = b.ravel()

    return fn


def body(comm, work, status, rest) -> None:
    """One rank's part: reduce, exscan, expand (module docstring); writes ``out{rank}.npy`` and, on rank 0,
    ``times.json`` (each rank's seconds per phase, MPI.Wtime) and the bytes of one exscan message."""
    from mpi4py import MPI

    args = _parse(rest)
    rank, P = comm.Get_rank(), comm.Get_size()
    status("reduce")
    maps = {n: np.load(work / f"{n}.npy", mmap_mode="r") for n in INPUTS[args.kind]}
    T = maps[INPUTS[args.kind][0]].shape[0]
    if P > T:
        raise ValueError(f"ranks: {P} ranks for T = {T} steps; use at most T ranks")
    lo, hi = block_range(T, P, rank)
    arrays = {n: np.ascontiguousarray(m[lo:hi]) for n, m in maps.items()}
    init = np.load(work / "h0.npy") if rank == 0 and (work / "h0.npy").is_file() else None
    if args.fail_rank == rank:
        raise RuntimeError(f"injected failure on rank {rank} (fail_rank={args.fail_rank})")
    if args.hang_rank == rank:
        time.sleep(3600)  # a rank that never answers: the launcher's timeout must catch it
    _local(args.kind, {n: x[:2] for n, x in arrays.items()}, init, args.chunk)  # compile/load the kernels first
    dtype, op, best = None, None, [np.inf] * 3
    for _ in range(args.repeat):    # the fastest of ``repeat`` rounds per phase (first touch, a busy moment)
        comm.Barrier()
        t0 = MPI.Wtime()
        out, last = _local(args.kind, arrays, init, args.chunk)
        a_prod = _product(args.kind, arrays, last.shape)
        t1 = MPI.Wtime()
        status("exscan")
        send = np.concatenate([a_prod.ravel(), last.astype(np.float64).ravel()])
        recv = np.zeros_like(send)
        if op is None:
            dtype = MPI.DOUBLE.Create_contiguous(send.size).Commit()   # one pair = one element: never split
            op = MPI.Op.Create(_operator(args.kind, a_prod.shape, last.shape), commute=False)
        comm.Exscan([send, 1, dtype], [recv, 1, dtype], op=op)
        t2 = MPI.Wtime()
        status("expand")
        if rank > 0:
            carry = recv[a_prod.size:].reshape(last.shape).astype(last.dtype)
            out = _expand(args.kind, arrays, out, carry, args.chunk)
        t3 = MPI.Wtime()
        best = [min(b, t) for b, t in zip(best, (t1 - t0, t2 - t1, t3 - t2))]
        status("reduce")
    op.Free()
    dtype.Free()
    np.save(work / f"out{rank}.npy", out)
    status("write")
    times = comm.gather(best, root=0)
    if rank == 0:
        (work / "times.json").write_text(json.dumps({"times": times, "message_bytes": int(send.nbytes)}))


def main(argv=None) -> int:
    """``mpiexec -n P python -m course_lib.parallel.mpi_scan WORKDIR KIND [options]``."""
    return worker_main(body, argv, check=check_job)


# --------------------------------------------------------------------------- the launcher side
def run(kind: str, arrays: dict, h0=None, *, ranks: int = 2, chunk: int | None = None, timeout: float = 60.0,
        repeat: int = 1, fail_rank: int | None = None, hang_rank: int | None = None):
    """Launch the worker on ``arrays`` (the kind's inputs, validated by the caller) with ``ranks`` ranks.
    Returns ``(outputs concatenated over the ranks, info)``; ``info``: ``ranks``, ``wall`` (seconds, MPI
    start-up included), ``times`` (``{phase: per-rank seconds}``, the fastest of ``repeat`` rounds),
    ``message_bytes`` (one exscan message)."""
    check_choice(kind, "kind", KINDS)
    if not isinstance(arrays, dict) or not arrays:
        raise TypeError(f"arrays: expected a non-empty dict name -> array (the kind's inputs), got {type(arrays).__name__}")
    if sorted(arrays) != sorted(INPUTS[kind]):
        raise KeyError(f"arrays: kind {kind!r} takes the inputs {INPUTS[kind]}, got {tuple(arrays)}")
    dtype = None
    for name, arr in arrays.items():   # every check here, before mpiexec starts: a rank failing on it is slow to report
        arr = check_nonempty(check_array(arr, f"arrays[{name!r}]", ndim=range(1, 8)), f"arrays[{name!r}]")
        if dtype is not None and arr.dtype != dtype:
            raise TypeError(f"arrays[{name!r}]: expected one dtype for all inputs ({dtype}), got {arr.dtype}")
        dtype = arr.dtype
    T = next(iter(arrays.values())).shape[0]
    ranks = check_positive_int(ranks, "ranks", high=256)
    if ranks > T:
        raise ValueError(f"ranks: expected at most T = {T} ranks (one step each at least), got {ranks}")
    timeout = check_float(timeout, "timeout", low=0.0, high=86400.0, low_inclusive=False)
    repeat = check_positive_int(repeat, "repeat", high=1000)  # None too: there is no default round count but 1
    opts = []
    for name, val in (("chunk", chunk), ("repeat", repeat), ("fail-rank", fail_rank), ("hang-rank", hang_rank)):
        if val is not None:
            check_int(val, name.replace("-", "_"), low=0 if "rank" in name else 1,
                      high=ranks - 1 if "rank" in name else (1000 if name == "repeat" else None))
            opts += [f"--{name}", str(val)]

    def prepare(work):
        for name, arr in arrays.items():
            np.save(work / f"{name}.npy", np.ascontiguousarray(arr))
        if h0 is not None:
            np.save(work / "h0.npy", h0)

    def collect(work):
        out = np.concatenate([np.load(work / f"out{r}.npy") for r in range(ranks)])
        return out, json.loads((work / "times.json").read_text())

    (out, meta), job = launch(MODULE, ranks=ranks, prepare=prepare, collect=collect, args=[kind, *opts],
                              timeout=timeout)
    times = np.asarray(meta["times"])
    info = {"ranks": ranks, "wall": job.wall, "times": {p: times[:, i] for i, p in enumerate(PHASES)},
            "message_bytes": meta["message_bytes"]}
    return out, info


def linear_recurrence_mpi(a, x, h0=None, *, ranks: int = 2, timeout: float = 60.0, return_info: bool = False, **kw):
    """``h = linear_recurrence(a, x, h0)`` (chapter 08) computed by ``ranks`` MPI ranks, each on a block of time.
    ``a, x (T, H)`` or ``(T, B, H)``; returns ``h`` (and the run's ``info`` with ``return_info``, see :func:`run`).
    ``fail_rank=``/``hang_rank=`` inject a failure or a hang (tests); errors are
    :class:`course_lib.core.mpi.MPIFailed` naming the rank."""
    return_info = check_bool(return_info, "return_info")
    dims: dict = {}
    a = check_array(a, "a", ndim=(2, 3), finite=False)
    pattern = ("T",) + tuple(f"d{i}" for i in range(1, a.ndim))
    check_nonempty(check_array(a, "a", shape=pattern, dims=dims, min_size={"T": 1}), "a")
    x = check_array(x, "x", shape=pattern, dims=dims)
    if a.dtype != x.dtype:
        raise TypeError(f"x: expected the dtype of a ({a.dtype}), got {x.dtype}")
    if h0 is not None:
        h0 = check_array(h0, "h0", shape=a.shape[1:]).astype(a.dtype, copy=False)
    h, info = run("elementwise", {"a": a, "x": x}, h0, ranks=ranks, timeout=timeout, **kw)
    if not np.isfinite(h[-1]).all():
        raise ValueError("a, x: the recurrence became non-finite (|a| > 1 made h grow without bound)")
    return (h, info) if return_info else h


def gated_linear_recurrence_mpi(q, k, v, decay, *, S0=None, ranks: int = 2, chunk: int | None = None,
                                timeout: float = 60.0, return_info: bool = False, **kw):
    """``o = gated_linear_recurrence(q, k, v, decay, method="chunked", S0=S0)`` on ``ranks`` MPI ranks
    (:mod:`course_lib.algorithms.linear_attention` for the shapes); each rank runs the chunked matmul form on
    its block and exchanges one state-sized pair."""
    return_info = check_bool(return_info, "return_info")
    q, k, v, decay, _, S0 = linear_attention.check_inputs(q, k, v, decay, S0)
    check_nonempty(q, "q"), check_nonempty(v, "v")
    o, info = run("gated", {"q": q, "k": k, "v": v, "decay": decay}, S0, ranks=ranks, chunk=chunk,
                  timeout=timeout, **kw)
    return (o, info) if return_info else o


def matrix_recurrence_mpi(A, b, h0=None, *, ranks: int = 2, timeout: float = 60.0, return_info: bool = False, **kw):
    """``h = matrix_scan.linear_recurrence(A, b, h0, structure="full")`` -- DEER's inner linear recurrence
    (chapter 11) -- on ``ranks`` MPI ranks. ``A (T, *batch, H, H)``, ``b (T, *batch, H)``, ``h0 (*batch, H)``."""
    return_info = check_bool(return_info, "return_info")
    A = check_array(A, "A", ndim=None)
    if A.ndim < 3 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A: expected square matrices (T, *batch, H, H), got shape {A.shape}")
    check_nonempty(A, "A")
    b = check_array(b, "b", shape=A.shape[:-1])
    if b.dtype != A.dtype:   # here, before mpiexec starts: the ranks would each fail on it
        raise TypeError(f"b: expected the dtype of A ({A.dtype}), got {b.dtype}")
    if h0 is not None:
        h0 = check_array(h0, "h0", shape=A.shape[1:-1]).astype(A.dtype, copy=False)
    h, info = run("matrix", {"A": A, "b": b}, h0, ranks=ranks, timeout=timeout, **kw)
    return (h, info) if return_info else h


if __name__ == "__main__":
    raise SystemExit(main())
