"""MPI ping-pong: this machine's message latency (alpha) and bandwidth (beta) (parallel layer).

Rank 0 sends ``n`` bytes to rank 1, which sends them straight back; half the fastest round trip of many is
the one-way time ``t(n)``. The textbook model of one message is ``t(n) = alpha + n / beta``: ``alpha`` is the
time of a tiny message (software, the wake-up of the other process), ``beta`` the rate of a large one. On
one node MPI passes messages through shared memory, so these are *one node's* numbers -- a cluster's
network has its own (several µs and 10-25 GB/s on InfiniBand, by its vendor's figures).

    res = pingpong(sizes=(8, 1 << 10, 1 << 16, 1 << 20, 1 << 22), repeat=50)
    res["alpha_s"], res["beta_gbs"], res["seconds"]      # fit, and t(n) per size

The worker is ``mpiexec -n 2 python -m course_lib.parallel.mpi_pingpong WORKDIR SIZE... [--repeat R]``,
launched by :func:`course_lib.core.mpi.launch`.
"""
from __future__ import annotations

import argparse
import json

import numpy as np

from ..core.mpi import launch, worker_main
from ..core.validate import check_float, check_int, check_numbers, check_sizes

__all__ = ["MODULE", "DEFAULT_SIZES", "pingpong", "fit", "body", "main"]

MODULE = "course_lib.parallel.mpi_pingpong"
DEFAULT_SIZES = (8, 1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22)


def _parse(rest):
    parser = argparse.ArgumentParser(prog=MODULE, exit_on_error=False, add_help=False)
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--repeat", type=int, default=20)
    try:
        args, extra = parser.parse_known_args(list(rest))
    except (argparse.ArgumentError, SystemExit) as exc:
        raise ValueError(f"args: {exc}; expected SIZE... [--repeat R]") from None
    if extra:
        raise ValueError(f"args: unknown argument(s) {extra}; expected SIZE... [--repeat R]")
    for n in args.sizes:
        check_int(n, "SIZE", low=1, high=1 << 30)
    check_int(args.repeat, "--repeat", low=1, high=100_000)
    return args


def body(comm, work, status, rest) -> None:
    """Ranks 0 and 1 bounce each size ``repeat`` times (after two warm-up rounds); rank 0 writes
    ``result.json`` with the fastest one-way time per size. Other ranks wait at the barriers."""
    from mpi4py import MPI

    args = _parse(rest)
    rank, P = comm.Get_rank(), comm.Get_size()
    if P < 2:
        raise ValueError(f"ranks: a ping-pong needs 2 ranks, mpiexec started {P}")
    best = []
    for n in args.sizes:
        status(f"size {n}")
        buf = np.zeros(n, np.uint8)
        times = []
        comm.Barrier()
        for i in range(args.repeat + 2):
            t0 = MPI.Wtime()
            if rank == 0:
                comm.Send([buf, MPI.BYTE], dest=1, tag=i)
                comm.Recv([buf, MPI.BYTE], source=1, tag=i)
            elif rank == 1:
                comm.Recv([buf, MPI.BYTE], source=0, tag=i)
                comm.Send([buf, MPI.BYTE], dest=0, tag=i)
            if i >= 2:
                times.append((MPI.Wtime() - t0) / 2)
        best.append(min(times))
    if rank == 0:
        (work / "result.json").write_text(json.dumps({"sizes": list(args.sizes), "seconds": best}))


def main(argv=None) -> int:
    """``mpiexec -n 2 python -m course_lib.parallel.mpi_pingpong WORKDIR SIZE... [--repeat R]``."""
    return worker_main(body, argv, check=lambda work, rest: _parse(rest))


def fit(sizes, seconds) -> tuple[float, float]:
    """``(alpha seconds, beta bytes/s)`` of ``t(n) = alpha + n / beta``: alpha is the smallest message's time,
    beta the slope between the two largest sizes (the one-way rate once alpha no longer matters)."""
    sizes = check_sizes(sizes, "sizes")
    seconds = check_numbers(seconds, "seconds", low=0.0)
    for i, t in enumerate(seconds):
        if t <= 0:
            raise ValueError(f"seconds[{i}]: expected a time > 0, got {t}")
    if len(sizes) != len(seconds) or len(sizes) < 3:
        raise ValueError(f"sizes, seconds: expected the same length, at least 3, got {len(sizes)} and {len(seconds)}")
    order = np.argsort(sizes)
    n = np.asarray(sizes, float)[order]
    t = np.asarray(seconds, float)[order]
    alpha = float(t[0])
    slope = (t[-1] - t[-2]) / (n[-1] - n[-2]) if n[-1] > n[-2] else 0.0
    beta = 1 / slope if slope > 0 else n[-1] / max(t[-1] - alpha, 1e-12)
    return alpha, float(beta)


def pingpong(sizes=DEFAULT_SIZES, *, repeat: int = 20, timeout: float = 60.0) -> dict:
    """Measure ``t(n)`` for each message size (bytes) between two ranks and fit alpha, beta.
    Returns ``{"sizes", "seconds", "alpha_s", "beta_gbs", "wall", "source"}``; raises
    :class:`course_lib.core.mpi.MPIFailed` when MPI is missing or the job fails."""
    sizes = check_sizes(sizes, "sizes", high=1 << 30)
    if len(sizes) < 3:
        raise ValueError(f"sizes: expected at least 3 message sizes (alpha and beta are fitted), got {sizes}")
    repeat = check_int(repeat, "repeat", low=1, high=100_000)
    timeout = check_float(timeout, "timeout", low=0.0, high=86400.0, low_inclusive=False)
    res, run = launch(MODULE, ranks=2, prepare=lambda work: None,
                      collect=lambda work: json.loads((work / "result.json").read_text()),
                      args=[*map(str, sizes), "--repeat", str(repeat)], timeout=timeout)
    alpha, beta = fit(res["sizes"], res["seconds"])
    return {"sizes": res["sizes"], "seconds": res["seconds"], "alpha_s": alpha, "beta_gbs": beta / 1e9,
            "wall": run.wall, "source": "measured on one node (shared memory)"}


if __name__ == "__main__":
    raise SystemExit(main())
