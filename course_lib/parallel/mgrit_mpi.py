"""MGRIT across MPI ranks (parallel layer): the worker program and :func:`solve`, which launches it.

The iteration loop is :meth:`course_lib.algorithms.mgrit.MGRIT.iterate` -- the same code the
threaded solver runs -- given a :class:`RankPartition` instead of a ``ThreadPartition``:

* each of the P ranks owns a contiguous block of the fine grid's C-intervals ``[a, b)`` (the C-point
  ``j*m`` starts interval ``j``; the last rank also owns the final point ``nt``);
* F-relaxation is purely local (each interval starts at a C-point its rank owns);
* C-relaxation and the C-point residual need the last F-point of the previous block: rank r sends
  ``U[b*m - 1]`` to rank r+1 (``exchange``, the one point-to-point message);
* coarse-grid correction: the C-point values and residuals are gathered on rank 0, which runs the
  coarse levels (the same FAS code) and scatters the corrected C-values back (XBraid distributes the
  coarse levels too; here they stay on rank 0, which the work/span model counts);
* residual norms and the divergence check are ``allreduce``-d, so every rank stops together;
* ``threads > 1`` splits each rank's own F- and C-relaxation over that many threads (the seed's hybrid layout,
  4 MPI ranks x 9 OpenMP threads per node): ``ranks * threads`` workers in all.

The arithmetic of every step is the one-process solver's, so ``U`` equals it bit for bit for any
number of ranks.

From Python (a subprocess under ``mpiexec -n P`` via :func:`course_lib.core.mpi.launch`)::

    U, history, info = solve({"kind": "dahlquist", "lam": -1.0, "dt": 0.1, "u0": [1.0]}, nt=64, ranks=2,
                             m=4, levels=2, relax="F", max_iter=5, tol=0.0)
    solve({"kind": "gru", "params": p, "X": X, "h0": h0, "implicit": True, "dt": 1.0}, nt=T, ...)

``info`` holds ``wall_s`` (MPI start-up included), ``ranks``, ``threads``, ``steps`` (time steps taken by all
ranks together) and, when ``repeat > 0`` was asked for, ``solve_times`` (seconds of each timed solve
on rank 0's clock, between barriers, start-up excluded) and ``others`` (cores other processes kept
busy meanwhile, seen from rank 0 -- the other ranks included). A rank that raises or hangs makes :func:`solve` raise
:class:`course_lib.core.mpi.MPIFailed` naming the rank.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from ..algorithms.mgrit import CYCLES, MGRIT, RELAXATIONS, Partition, ThreadPartition, dahlquist_step, hierarchy
from ..core.mpi import MPIFailed, launch, worker_main
from ..core.timing import measure
from ..core.validate import (MAX_REPEAT, check_alloc, check_array, check_choice, check_float, check_int, check_positive_int,
                             to_builtin)

__all__ = ["solve", "RankPartition", "block_range", "body", "check_job", "main", "MPIFailed"]

MODULE = "course_lib.parallel.mgrit_mpi"


def block_range(n: int, size: int, rank: int) -> tuple[int, int]:
    """Contiguous block ``[a, b)`` of ``range(n)`` owned by ``rank`` of ``size`` (sizes differ by <= 1)."""
    n = check_int(n, "n", low=0)
    size = check_positive_int(size, "size")
    rank = check_int(rank, "rank", low=0, high=size - 1)
    return (n * rank) // size, (n * (rank + 1)) // size


class RankPartition(Partition):
    """The fine level's C-intervals split in contiguous blocks over the ranks of ``comm``; inside a rank,
    ``threads`` threads share the rank's block (the seed's hybrid layout: MPI ranks x OpenMP threads)."""

    def __init__(self, comm, nc: int, m: int, threads: int = 1):
        super().__init__(nc)
        m = check_int(m, "m", low=2)
        self.threads = check_positive_int(threads, "threads")
        if not all(hasattr(comm, a) for a in ("Get_rank", "Get_size", "gather", "scatter")):
            raise TypeError(f"comm: expected an MPI communicator (mpi4py.MPI.COMM_WORLD), got {type(comm).__name__}")
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        if self.size > nc:
            raise ValueError(f"ranks: {self.size} ranks for {nc} C-intervals; use at most {nc} ranks")
        a, b = block_range(nc, self.size, self.rank)
        self.a, self.b = a, b
        self.last = self.rank == self.size - 1
        self.intervals = range(a, b)
        self.cpoints = range(max(a, 1), b + (1 if self.last else 0))
        self.owned_c = range(a, b + (1 if self.last else 0))  # C-values this rank holds
        self.points = range(a * m, b * m + (1 if self.last else 0))  # time points this rank owns
        self._local = ThreadPartition(nc, self.threads)  # splits this rank's intervals over its threads

    def map(self, fn, items: range) -> None:
        self._local.map(fn, items)

    def close(self) -> None:
        self._local.close()

    def exchange(self, U, m: int) -> None:
        reqs = []
        if not self.last:
            reqs.append(self.comm.Isend(np.ascontiguousarray(U[self.b * m - 1]), dest=self.rank + 1, tag=1))
        if self.rank > 0:
            buf = np.empty(U.shape[1:], dtype=U.dtype)
            self.comm.Recv(buf, source=self.rank - 1, tag=1)
            U[self.a * m - 1] = buf
        for r in reqs:
            r.Wait()

    def allreduce(self, x: float, op: str = "sum") -> float:
        from mpi4py import MPI

        check_choice(op, "op", ("sum", "min"))
        return float(self.comm.allreduce(x, op={"sum": MPI.SUM, "min": MPI.MIN}[op]))

    def coarse_correct(self, U, R, m: int, correct) -> None:
        sl = slice(self.a * m, (self.b + (1 if self.last else 0)) * m, m)
        idx = list(self.owned_c)
        parts = self.comm.gather((idx, U[sl].copy(), R[idx]), root=0)
        pieces = None
        if self.rank == 0:
            Uc = np.empty((self.nc + 1,) + U.shape[1:], dtype=U.dtype)
            Rc = np.zeros_like(Uc)
            for i, uc, rc in parts:
                Uc[i] = uc
                Rc[i] = rc
            Rc[0] = 0.0
            Uc = correct(Uc, Rc)
            pieces = [Uc[list(range(*block_range(self.nc, self.size, r))) + ([self.nc] if r == self.size - 1 else [])]
                      for r in range(self.size)]
        U[sl] = self.comm.scatter(pieces, root=0)

    def gather(self, U):
        start, stop = self.points.start, self.points.stop
        blocks = self.comm.gather((start, U[start:stop]), root=0)
        if self.rank != 0:
            return None
        out = np.empty_like(U)
        for s, blk in blocks:
            out[s: s + len(blk)] = blk
        return out


# --------------------------------------------------------------------------- the worker
def _build_step(problem: dict, arrays: dict, m: int):
    kind = problem["kind"]
    if kind == "dahlquist":
        return dahlquist_step(problem["lam"], problem["dt"], m), np.asarray(problem["u0"], dtype=np.float64)
    from ..models.gru import GRUParams, gru_steps, input_projection

    params = GRUParams(arrays["W_ih"], arrays["W_hh"], arrays["b_ih"], arrays["b_hh"])
    GI = input_projection(params, arrays["X"])
    return gru_steps(params, GI, implicit=bool(problem["implicit"]), dt=float(problem["dt"]), m=m), arrays["h0"]


def check_job(work, rest) -> None:
    """Validate ``WORKDIR/spec.json`` (+ ``arrays.npz``) before MPI starts (see
    :func:`course_lib.core.mpi.worker_main`): a worker called by hand with a bad folder or spec says
    what is wrong and returns 2 instead of aborting the calling Python with ``MPI_Abort``."""
    work = Path(work)
    file = work / "spec.json"
    if not file.is_file():
        raise FileNotFoundError(f"WORKDIR: {file} does not exist (course_lib.parallel.mgrit_mpi.solve writes it)")
    try:
        spec = json.loads(file.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"spec.json: not valid JSON ({exc})") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("mgrit"), dict) or not isinstance(spec.get("problem"), dict):
        raise ValueError("spec.json: expected an object with 'nt', 'mgrit' and 'problem'")
    nt = check_positive_int(spec.get("nt"), "spec.json nt")
    opts = spec["mgrit"]
    unknown = set(opts) - {"m", "levels", "relax", "cycle", "max_iter", "tol"}
    if unknown:
        raise ValueError(f"spec.json mgrit: unknown option(s) {sorted(unknown)}")
    m = check_int(opts.get("m"), "spec.json mgrit.m", low=2)
    levels = check_int(opts.get("levels"), "spec.json mgrit.levels", low=2)
    sizes = hierarchy(nt, m, levels)
    MGRIT(lambda u, i, level: u, **opts)  # the remaining options, checked by the solver itself
    check_int(spec.get("repeat", 0), "spec.json repeat", low=0)
    check_positive_int(spec.get("threads", 1), "spec.json threads")
    ranks = spec.get("ranks")
    if ranks is not None:
        ranks = check_int(ranks, "spec.json ranks", low=1, high=sizes[1])
        for name in ("fail_rank", "hang_rank"):
            if spec.get(name) is not None:
                check_int(spec[name], f"spec.json {name}", low=0, high=ranks - 1)
    problem = spec["problem"]
    kind = check_choice(problem.get("kind"), "spec.json problem.kind", ("dahlquist", "gru"))
    if kind == "dahlquist":
        check_float(problem.get("lam"), "spec.json problem.lam")
        check_float(problem.get("dt"), "spec.json problem.dt", low=0.0, low_inclusive=False)
        check_array(np.asarray(problem.get("u0"), dtype=np.float64), "spec.json problem.u0")
        return
    from ..models.gru import GRUParams, check_params

    check_float(problem.get("dt"), "spec.json problem.dt", low=0.0, low_inclusive=False)
    try:
        with np.load(work / "arrays.npz", allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"arrays.npz: not a readable .npz file ({type(exc).__name__}: {exc})") from None
    missing = [k for k in ("X", "h0", "W_ih", "W_hh", "b_ih", "b_hh") if k not in arrays]
    if missing:
        raise ValueError(f"arrays.npz: missing {missing}")
    _, nx, nh = check_params(GRUParams(arrays["W_ih"], arrays["W_hh"], arrays["b_ih"], arrays["b_hh"]))
    dims = {"nx": nx}
    check_array(arrays["X"], "arrays.npz X", shape=(nt, "B", "nx"), dims=dims)
    check_array(arrays["h0"], "arrays.npz h0", shape=(dims["B"], nh))


def body(comm, work, status, rest) -> None:
    """One rank's part: read ``spec.json`` (+ ``arrays.npz``), run the distributed solve, rank 0 writes
    ``result.npz``. ``spec["repeat"] > 0`` also times that many solves (after one warm-up)."""
    rank = comm.Get_rank()
    spec = json.loads((work / "spec.json").read_text())
    arrays = {}
    if (work / "arrays.npz").exists():
        with np.load(work / "arrays.npz") as f:
            arrays = {k: f[k] for k in f.files}
    if spec.get("fail_rank") == rank:
        raise RuntimeError("injected failure (test hook fail_rank)")
    if spec.get("hang_rank") == rank:
        status("hanging (test hook hang_rank)")
        time.sleep(3600)
    opts = spec["mgrit"]
    step, u0 = _build_step(spec["problem"], arrays, opts["m"])
    solver = MGRIT(step, **opts)
    nt = spec["nt"]
    part = RankPartition(comm, nt // opts["m"], opts["m"], threads=spec.get("threads", 1))
    U, history = solver.iterate(u0, nt, part, status=status)
    extra = {}
    if spec.get("repeat", 0) > 0:
        status("timing")

        def once():
            comm.Barrier()
            solver.iterate(u0, nt, part)
            comm.Barrier()

        t = measure(once, repeat=spec["repeat"], warmup=0, number=1)
        extra = {"solve_times": np.array(t.times),
                 "others": np.array(np.nan if t.noise.others is None else t.noise.others)}
    steps = part.allreduce(float(solver.steps_taken), "sum")
    part.close()
    if rank == 0:
        np.savez(work / "result.npz", U=U, history=np.array(history, dtype=np.float64),
                 steps=np.array(steps), **extra)


def main(argv=None) -> int:
    """Worker entry point: ``mpiexec -n P python -m course_lib.parallel.mgrit_mpi WORKDIR``."""
    return worker_main(body, argv, check=check_job)


# --------------------------------------------------------------------------- the launcher side
def solve(problem: dict, nt: int, *, ranks: int = 2, m: int = 4, levels: int = 2, relax: str = "FCF",
          max_iter: int = 10, tol: float = 1e-8, cycle: str = "V", repeat: int = 0, timeout: float = 60.0,
          threads: int = 1, fail_rank: int | None = None, hang_rank: int | None = None):
    """Run MGRIT on ``problem`` over ``ranks`` MPI ranks, each F-relaxing its block of C-intervals with
    ``threads`` threads (``ranks * threads`` workers in all: keep it at most the cores you have); returns
    ``(U, history, info)``.

    ``problem`` is ``{"kind": "dahlquist", "lam", "dt", "u0"}`` or ``{"kind": "gru", "params"
    (GRUParams), "X" (nt, B, nx), "h0" (B, H), "implicit", "dt"}``. ``U`` has shape
    ``(nt + 1, *u0.shape)``; ``info`` is described in the module docstring. Raises :class:`MPIFailed` naming the failing rank(s) on an error, after
    ``timeout`` seconds, or when MPI is not installed; ``fail_rank`` / ``hang_rank`` inject a failure.
    """
    ranks = check_positive_int(ranks, "ranks", high=256)
    threads = check_positive_int(threads, "threads", high=256)
    nt = check_positive_int(nt, "nt")
    relax = check_choice(relax, "relax", RELAXATIONS)
    cycle = check_choice(cycle, "cycle", CYCLES)
    m = check_int(m, "m", high=max(2, nt // 2))  # ints for JSON; a coarse level needs >= 2 steps (m >= 2: hierarchy)
    check_alloc((nt + 1, 1), np.float64, "nt", what="MGRIT's solution")
    # up front: a coarsest level of >= 2 steps needs m**(levels-1) <= nt / 2, so levels <= log2(nt)
    levels = check_int(levels, "levels", low=1, high=max(1, nt.bit_length()))
    sizes = hierarchy(nt, m, levels)
    if levels < 2:
        raise ValueError("levels: the MPI solver needs levels >= 2")
    if ranks > sizes[1]:
        raise ValueError(f"ranks: {ranks} ranks for {sizes[1]} C-intervals; use at most {sizes[1]} ranks")
    repeat = check_int(repeat, "repeat", low=0, high=MAX_REPEAT)
    timeout = check_float(timeout, "timeout", low=0.0, high=86400.0, low_inclusive=False)
    tol = check_float(tol, "tol", low=0.0)
    max_iter = check_int(max_iter, "max_iter", low=1, high=10_000)
    if fail_rank is not None:
        fail_rank = check_int(fail_rank, "fail_rank", low=0, high=ranks - 1)
    if hang_rank is not None:
        hang_rank = check_int(hang_rank, "hang_rank", low=0, high=ranks - 1)
    if not isinstance(problem, dict) or "kind" not in problem:
        raise TypeError("problem: expected a dict with a 'kind' ('dahlquist' or 'gru')")
    check_choice(problem["kind"], "problem['kind']", ("dahlquist", "gru"))
    spec = {"nt": nt, "ranks": ranks, "threads": threads, "repeat": repeat, "fail_rank": fail_rank, "hang_rank": hang_rank,
            "mgrit": {"m": m, "levels": levels, "relax": relax, "cycle": cycle,
                      "max_iter": max_iter, "tol": tol}}
    arrays = {}
    if problem["kind"] == "dahlquist":
        missing = [k for k in ("lam", "dt", "u0") if k not in problem]
        if missing:
            raise ValueError(f"problem: missing {missing} (expected kind, lam, dt, u0)")
        u0 = check_array(np.atleast_1d(np.asarray(problem["u0"], dtype=np.float64)), "problem['u0']")
        spec["problem"] = {"kind": "dahlquist", "lam": check_float(problem["lam"], "problem['lam']"),
                           "dt": check_float(problem["dt"], "problem['dt']", low=0.0, low_inclusive=False),
                           "u0": u0.tolist()}
    else:
        from ..models.gru import GRUParams, check_params

        p = problem.get("params")
        if not isinstance(p, GRUParams):
            raise TypeError(f"problem['params']: expected GRUParams, got {type(p).__name__}")
        check_params(p)  # finite weights, consistent shapes: before the job starts
        dims = {"nx": p.nx}
        X = check_array(problem.get("X"), "problem['X']", shape=(nt, "B", "nx"), dims=dims)
        h0 = problem.get("h0")
        h0 = np.zeros((dims["B"], p.nh), dtype=X.dtype) if h0 is None else \
            check_array(h0, "problem['h0']", shape=(dims["B"], p.nh))
        implicit = problem.get("implicit", True)
        if not isinstance(implicit, (bool, np.bool_)):
            raise TypeError(f"problem['implicit']: expected True or False, got {type(implicit).__name__} {implicit!r}")
        spec["problem"] = {"kind": "gru", "implicit": bool(implicit),
                           "dt": check_float(problem.get("dt", 1.0), "problem['dt']", low=0.0, low_inclusive=False)}
        arrays = {"X": X, "h0": h0, "W_ih": p.W_ih, "W_hh": p.W_hh, "b_ih": p.b_ih, "b_hh": p.b_hh}

    def prepare(work):
        (work / "spec.json").write_text(json.dumps(to_builtin(spec)))
        if arrays:
            np.savez(work / "arrays.npz", **arrays)

    def collect(work):
        with np.load(work / "result.npz") as f:
            return {k: f[k].copy() for k in f.files}

    res, run = launch(MODULE, ranks=ranks, prepare=prepare, collect=collect, timeout=timeout)
    others = float(res["others"]) if "others" in res and np.isfinite(res["others"]) else None
    info = {"wall_s": run.wall, "ranks": ranks, "threads": threads, "steps": float(res["steps"]),
            "solve_times": [float(x) for x in res["solve_times"]] if "solve_times" in res else [],
            "others": others, "command": " ".join(str(c) for c in run.command)}
    return res["U"], [float(x) for x in res["history"]], info


if __name__ == "__main__":
    sys.exit(main())
