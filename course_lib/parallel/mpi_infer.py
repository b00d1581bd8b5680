"""MPI worker for data-parallel RNN inference (chapter 07). Run by :func:`course_lib.parallel.inference.run_mpi`::

    mpiexec -n P python -m course_lib.parallel.mpi_infer DIR [--repeat R] [--fail-rank r] [--hang-rank r]

``DIR/input.npz`` holds ``X (T, B, nx)``, ``counts (P,)`` and the parameters (``U0, W0, b0, ...,
V, c``). The message-passing pattern:

1. rank 0 reads the input; ``bcast`` the parameters to every rank;
2. ``Scatterv`` the batch: rank ``r`` receives ``counts[r]`` sequences (sent batch-major, so
   each rank's slice is one contiguous block of memory);
3. every rank runs batched inference on its slice (no communication at all);
4. ``Gatherv`` the probabilities back to rank 0, which writes ``DIR/output.npz`` with each
   rank's seconds per phase.

Every rank writes ``DIR/rank{r}.done`` when it finishes, or ``DIR/rank{r}.err`` (its traceback)
and calls ``Abort`` if anything raises, so the launcher can say which rank failed and nobody
waits forever in a collective. ``DIR/rank{r}.phase`` names the last phase each rank reached: after
a timeout it shows which rank is stuck. ``--fail-rank``/``--hang-rank`` inject a failure/a hang.
"""
from __future__ import annotations

import argparse
import traceback
from pathlib import Path

import numpy as np


def _mark(folder: Path, rank: int, phase: str) -> None:
    """Record the phase this rank has reached (the launcher reads it after a timeout)."""
    (folder / f"rank{rank}.phase").write_text(phase)


def _run(comm, folder: Path, repeat: int, fail_rank: int | None, hang_rank: int | None) -> None:
    from mpi4py import MPI  # noqa: PLC0415

    from .inference import Params, _batched_core  # noqa: PLC0415

    rank, P = comm.Get_rank(), comm.Get_size()
    _mark(folder, rank, "bcast")
    if rank == 0:
        with np.load(folder / "input.npz") as f:
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
    best = {k: np.inf for k in ("bcast", "scatter", "compute", "gather")}
    for _ in range(repeat):
        comm.Barrier()
        t0 = MPI.Wtime()
        meta_r = comm.bcast(meta, root=0)
        arrays = comm.bcast(data, root=0)
        t1 = MPI.Wtime()
        T, nx, counts, dtype = meta_r
        params = Params.from_arrays(arrays)
        mine = np.empty((counts[rank], T, nx), np.dtype(dtype))
        row = T * nx
        _mark(folder, rank, "scatter")
        sendbuf = [Xb, [c * row for c in counts]] if rank == 0 else None
        comm.Scatterv(sendbuf, mine, root=0)
        t2 = MPI.Wtime()
        _mark(folder, rank, "compute")
        if fail_rank == rank:
            raise RuntimeError(f"injected failure on rank {rank} (fail_rank={fail_rank})")
        if hang_rank == rank:
            import time  # noqa: PLC0415

            time.sleep(3600)  # a rank that never answers: the launcher's timeout must catch it
        probs = _batched_core(params, np.ascontiguousarray(mine.transpose(1, 0, 2)))
        out = np.ascontiguousarray(probs.transpose(1, 0, 2))  # (b_r, T, vocab)
        t3 = MPI.Wtime()
        _mark(folder, rank, "gather")
        V = out.shape[2]
        recv = np.empty((sum(counts), T, V), out.dtype) if rank == 0 else None
        comm.Gatherv(out, [recv, [c * T * V for c in counts]] if rank == 0 else None, root=0)
        t4 = MPI.Wtime()
        for k, v in zip(best, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            best[k] = min(best[k], v)
    times = comm.gather([best[k] for k in ("bcast", "scatter", "compute", "gather")], root=0)
    if rank == 0:
        times = np.asarray(times)
        np.savez(folder / "output.npz", probs=recv.transpose(1, 0, 2),
                 bcast=times[:, 0], scatter=times[:, 1], compute=times[:, 2], gather=times[:, 3])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--fail-rank", type=int, default=None)
    parser.add_argument("--hang-rank", type=int, default=None)
    args = parser.parse_args(argv)
    from mpi4py import MPI  # noqa: PLC0415

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    try:
        _run(comm, args.folder, max(1, args.repeat), args.fail_rank, args.hang_rank)
    except BaseException:  # noqa: BLE001 - report any failure, then take the job down
        (args.folder / f"rank{rank}.err").write_text(traceback.format_exc())
        comm.Abort(1)
        return 1
    (args.folder / f"rank{rank}.done").write_text("ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
