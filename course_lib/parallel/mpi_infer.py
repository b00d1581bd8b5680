"""MPI worker for data-parallel RNN inference (chapter 07). Run by :func:`course_lib.parallel.inference.run_mpi`
through :func:`course_lib.core.mpi.launch`::

    mpiexec -n P python -m course_lib.parallel.mpi_infer WORKDIR [--repeat R] [--fail-rank r] [--hang-rank r]

``WORKDIR/input.npz`` holds ``X (T, B, nx)``, ``counts (P,)`` and the parameters (``U0, W0, b0, ...,
V, c``). The message-passing pattern:

1. rank 0 reads the input; ``bcast`` the parameters to every rank;
2. ``Scatterv`` the batch: rank ``r`` receives ``counts[r]`` sequences (sent batch-major, so
   each rank's slice is one contiguous block of memory);
3. every rank runs batched inference on its slice (no communication at all);
4. ``Gatherv`` the probabilities back to rank 0, which writes ``WORKDIR/output.npz`` with each
   rank's seconds per phase (the fastest of ``R`` rounds).

Each rank records the phase it has reached (``status``); a rank that raises aborts the job, so nobody
waits forever in a collective, and the launcher's :class:`~course_lib.core.mpi.MPIFailed` names it
(:func:`course_lib.core.mpi.worker_main` does both). ``--fail-rank``/``--hang-rank`` inject a failure/a hang.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from ..core.mpi import worker_main
from ..core.validate import check_array, check_int
from ..models.softmax_rnn import SoftmaxRNNParams, batched_core, check_inputs

PHASES = ("bcast", "scatter", "compute", "gather")


def _parse(rest):
    """The options after WORKDIR; a bad one is a ValueError naming it (argparse would ``sys.exit``)."""
    parser = argparse.ArgumentParser(prog="course_lib.parallel.mpi_infer", exit_on_error=False, add_help=False)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--fail-rank", type=int, default=None)
    parser.add_argument("--hang-rank", type=int, default=None)
    try:
        args, extra = parser.parse_known_args(list(rest))
    except (argparse.ArgumentError, SystemExit) as exc:
        raise ValueError(f"args: {exc}") from None
    if extra:
        raise ValueError(f"args: unknown argument(s) {extra}; expected --repeat R, --fail-rank r, --hang-rank r")
    check_int(args.repeat, "--repeat", low=1, high=10_000)
    for name in ("fail_rank", "hang_rank"):
        if getattr(args, name) is not None:
            check_int(getattr(args, name), "--" + name.replace("_", "-"), low=0)
    return args


def check_job(work, rest) -> None:
    """Validate ``WORKDIR/input.npz`` and the options before MPI starts (see :func:`course_lib.core.mpi.worker_main`):
    ``X (T, B, nx)`` float, ``counts (P,)`` positive and summing to ``B``, parameters that fit ``X``,
    ``--fail-rank``/``--hang-rank`` below ``P``. Raises ValueError/TypeError/FileNotFoundError naming what is wrong."""
    args = _parse(rest)
    file = Path(work) / "input.npz"
    if not file.is_file():
        raise FileNotFoundError(f"WORKDIR: {file} does not exist (course_lib.parallel.inference.run_mpi writes it)")
    try:
        with np.load(file, allow_pickle=False) as f:
            data = {k: f[k] for k in f.files}
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"input.npz: not a readable .npz file ({type(exc).__name__}: {exc})") from None
    if "X" not in data or "counts" not in data:
        raise ValueError(f"input.npz: expected the arrays X and counts, got {sorted(data)}")
    X, counts = data.pop("X"), data.pop("counts")
    params = SoftmaxRNNParams.from_arrays(data)
    X = check_inputs(params, X, "input.npz X")
    counts = check_array(counts, "input.npz counts", ndim=1, dtype="int", finite=False)
    if counts.size < 1 or counts.min() < 1 or int(counts.sum()) != X.shape[1]:
        raise ValueError(f"input.npz counts: expected positive counts summing to B = {X.shape[1]}, got {counts.tolist()}")
    for name in ("fail_rank", "hang_rank"):
        v = getattr(args, name)
        if v is not None and v >= counts.size:
            raise ValueError(f"--{name.replace('_', '-')}: expected a rank below {counts.size}, got {v}")


def body(comm, work, status, rest) -> None:
    """One rank's part (see the module docstring); ``status(phase)`` records how far it got."""
    from mpi4py import MPI

    args = _parse(rest)
    rank, P = comm.Get_rank(), comm.Get_size()
    status("bcast")
    if rank == 0:
        with np.load(work / "input.npz") as f:
            data = {k: f[k] for k in f.files}
        X = data.pop("X")
        counts = [int(c) for c in data.pop("counts")]
        if len(counts) != P:
            raise ValueError(f"counts: the input was prepared for {len(counts)} ranks, mpiexec started {P}")
        T, B, nx = X.shape
        meta = (T, nx, counts, X.dtype.str)
        Xb = np.ascontiguousarray(X.transpose(1, 0, 2))  # batch-major: one rank's slice is contiguous
    else:
        data, meta, Xb = None, None, None
    best = {k: np.inf for k in PHASES}
    for _ in range(max(1, args.repeat)):
        comm.Barrier()
        t0 = MPI.Wtime()
        meta_r = comm.bcast(meta, root=0)
        arrays = comm.bcast(data, root=0)
        t1 = MPI.Wtime()
        T, nx, counts, dtype = meta_r
        params = SoftmaxRNNParams.from_arrays(arrays)
        mine = np.empty((counts[rank], T, nx), np.dtype(dtype))
        row = T * nx
        status("scatter")
        sendbuf = [Xb, [c * row for c in counts]] if rank == 0 else None
        comm.Scatterv(sendbuf, mine, root=0)
        t2 = MPI.Wtime()
        status("compute")
        if args.fail_rank == rank:
            raise RuntimeError(f"injected failure on rank {rank} (fail_rank={args.fail_rank})")
        if args.hang_rank == rank:
            time.sleep(3600)  # a rank that never answers: the launcher's timeout must catch it
        probs = batched_core(params, np.ascontiguousarray(mine.transpose(1, 0, 2)))
        out = np.ascontiguousarray(probs.transpose(1, 0, 2))  # (b_r, T, vocab)
        t3 = MPI.Wtime()
        status("gather")
        V = out.shape[2]
        recv = np.empty((sum(counts), T, V), out.dtype) if rank == 0 else None
        comm.Gatherv(out, [recv, [c * T * V for c in counts]] if rank == 0 else None, root=0)
        t4 = MPI.Wtime()
        for k, v in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            best[k] = min(best[k], v)
    times = comm.gather([best[k] for k in PHASES], root=0)
    if rank == 0:
        times = np.asarray(times)
        np.savez(work / "output.npz", probs=recv.transpose(1, 0, 2), **{k: times[:, i] for i, k in enumerate(PHASES)})


def main(argv=None) -> int:
    """``mpiexec -n P python -m course_lib.parallel.mpi_infer WORKDIR [options]``; called directly with a
    bad folder, input or option it prints why and returns 2 (never ``MPI_Abort``s the calling Python)."""
    return worker_main(body, argv, check=check_job)


if __name__ == "__main__":
    raise SystemExit(main())
