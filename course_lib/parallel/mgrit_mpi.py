"""MGRIT across MPI ranks (layer 2: methods). Launcher *and* worker entry point.

Each of the P ranks owns a contiguous block of the fine grid's C-intervals ``[a, b)`` (the C-point
``j*m`` starts interval ``j``; the last rank also owns the final point ``nt``).

* F-relaxation: purely local (each interval starts at a C-point its rank owns);
* C-relaxation and the C-point residual need the last F-point of the previous block: rank r sends
  ``U[b*m - 1]`` to rank r+1 (the boundary exchange);
* coarse-grid correction: the C-point values and residuals are gathered on rank 0, which runs the
  coarse levels (the same FAS code as the serial :class:`course_lib.algorithms.mgrit.MGRIT`) and scatters
  the corrected C-values back (XBraid distributes the coarse levels too; here they stay on rank 0,
  which the work/span model counts);
* the residual norm is an ``Allreduce`` of the ranks' sums of squares.

The arithmetic of every step is the serial solver's, so ``U`` equals the serial MGRIT result to
round-off (bit for bit in practice) for any number of ranks.

Launch from Python (a subprocess under ``mpiexec -n P`` with a timeout)::

    U, history, info = launch({"kind": "dahlquist", "lam": -1.0, "dt": 0.1, "u0": [1.0]}, nt=64, ranks=2,
                              m=4, levels=2, relax="F", max_iter=5, tol=0.0)
    launch({"kind": "gru", "params": p, "X": X, "h0": h0, "implicit": True, "dt": 1.0}, nt=T, ...)

or by hand: ``mpiexec -n 2 python -m course_lib.parallel.mgrit_mpi DIR`` with ``DIR/spec.json`` (+ ``arrays.npz``).
A rank that raises or hangs makes :func:`launch` raise :class:`MPIRankError` naming the rank.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from ..core.backend import mpi_available, mpiexec_path
from ..algorithms.mgrit import MGRIT, MGRITDivergence, dahlquist_step, hierarchy
from ..core.validate import check_choice, check_float, check_int, check_positive_int

__all__ = ["launch", "MPIRankError", "block_range", "distributed_solve", "main"]

MGRIT_KEYS = ("m", "levels", "relax", "max_iter", "tol")


class MPIRankError(RuntimeError):
    """An MPI rank failed or did not finish in time; the message names the rank(s)."""


def block_range(n: int, size: int, rank: int) -> tuple[int, int]:
    """Contiguous block ``[a, b)`` of ``range(n)`` owned by ``rank`` of ``size`` (sizes differ by <= 1)."""
    return (n * rank) // size, (n * (rank + 1)) // size


# --------------------------------------------------------------------------- the distributed solve
def distributed_solve(comm, solver: MGRIT, u0, nt: int, status=lambda s: None):
    """Run ``solver``'s two-or-more-level V-cycle with the fine level split over ``comm``'s ranks.
    Returns ``(U, history)`` on rank 0 (``(None, history)`` elsewhere)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    hierarchy(nt, solver.m, solver.levels)
    if solver.levels < 2:
        raise ValueError("levels: the MPI solver needs levels >= 2")
    m = solver.m
    nc = nt // m
    if size > nc:
        raise ValueError(f"ranks: {size} ranks for {nc} C-intervals; use at most {nc} ranks")
    a, b = block_range(nc, size, rank)
    last = rank == size - 1
    cpoints = range(max(a, 1), b + (1 if last else 0))  # C-points this rank relaxes
    owned_c = range(a, b + (1 if last else 0))  # C-values this rank holds
    u0 = np.asarray(u0)
    U = np.empty((nt + 1,) + u0.shape, dtype=u0.dtype)
    U[:] = u0

    def exchange():
        reqs = []
        if not last:
            reqs.append(comm.Isend(np.ascontiguousarray(U[b * m - 1]), dest=rank + 1, tag=1))
        if rank > 0:
            buf = np.empty(u0.shape, dtype=U.dtype)
            comm.Recv(buf, source=rank - 1, tag=1)
            U[a * m - 1] = buf
        for r in reqs:
            r.Wait()

    def residual():
        exchange()
        R = np.zeros((nc + 1,) + u0.shape, dtype=U.dtype)
        solver.c_residual_points(0, U, None, cpoints, R)
        return R

    history: list[float] = []
    with np.errstate(over="ignore", invalid="ignore"):
        for it in range(solver.max_iter):
            status(f"iteration {it + 1}")
            for k, kind in enumerate(solver.relax):
                if kind == "F":
                    if not (k == 0 and it > 0):
                        solver.f_relax_intervals(0, U, None, range(a, b))
                else:
                    exchange()
                    solver.c_relax_points(0, U, None, cpoints)
            R = residual()
            # gather C-values and residuals on rank 0, coarse levels there, scatter back
            mine = (np.array(list(owned_c)), U[a * m: (b + (1 if last else 0)) * m: m].copy(), R[list(owned_c)])
            parts = comm.gather(mine, root=0)
            if rank == 0:
                Uc = np.empty((nc + 1,) + u0.shape, dtype=U.dtype)
                Rc = np.zeros_like(Uc)
                for idx, uc, rc in parts:
                    Uc[idx] = uc
                    Rc[idx] = rc
                Rc[0] = 0.0
                Uc = solver.correct_c_values(0, Uc, Rc)
                pieces = [Uc[list(range(*block_range(nc, size, r)))
                             + ([nc] if r == size - 1 else [])] for r in range(size)]
            else:
                pieces = None
            U[a * m: (b + (1 if last else 0)) * m: m] = comm.scatter(pieces, root=0)
            solver.f_relax_intervals(0, U, None, range(a, b))
            R = residual()
            local = float(np.sum(np.abs(R.astype(np.float64)) ** 2))
            norm = float(np.sqrt(comm.allreduce(local)))
            history.append(norm)
            if not np.isfinite(norm):
                raise MGRITDivergence(f"MGRIT diverged at iteration {it + 1}: the residual is {norm}")
            if len(history) >= 2 and norm > solver.diverge_factor * max(history[0], solver.tol) and norm > history[-2]:
                raise MGRITDivergence(f"MGRIT diverged at iteration {it + 1}: the residual grew from "
                                      f"{history[0]:.3g} to {norm:.3g}")
            if norm <= solver.tol:
                break
    blocks = comm.gather((a * m, U[a * m: b * m + (1 if last else 0)]), root=0)
    if rank != 0:
        return None, history
    out = np.empty_like(U)
    for start, blk in blocks:
        out[start: start + len(blk)] = blk
    return out, history


# --------------------------------------------------------------------------- problems
def _build_step(spec: dict, arrays: dict, m: int):
    kind = spec["kind"]
    if kind == "dahlquist":
        return dahlquist_step(spec["lam"], spec["dt"], m), np.asarray(spec["u0"], dtype=np.float64)
    if kind == "gru":
        from ..models.gru import gru_steps, input_projection  # noqa: PLC0415

        params = {k[2:]: v for k, v in arrays.items() if k.startswith("p_")}
        GI = input_projection(params, arrays["X"])
        return gru_steps(params, GI, implicit=bool(spec["implicit"]), dt=float(spec["dt"]), m=m), arrays["h0"]
    raise ValueError(f"problem['kind']: expected 'dahlquist' or 'gru', got {kind!r}")


def main(argv=None) -> int:
    """Worker entry point: ``python -m course_lib.parallel.mgrit_mpi DIR`` under ``mpiexec``."""
    from mpi4py import MPI  # noqa: PLC0415

    argv = sys.argv[1:] if argv is None else argv
    work = Path(argv[0])
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    status_file = work / f"rank{rank}.status"

    def status(text):
        status_file.write_text(text)

    status("started")
    try:
        spec = json.loads((work / "spec.json").read_text())
        arrays = dict(np.load(work / "arrays.npz")) if (work / "arrays.npz").exists() else {}
        if spec.get("fail_rank") == rank:
            raise RuntimeError("injected failure (test hook fail_rank)")
        if spec.get("hang_rank") == rank:
            status("hanging (test hook hang_rank)")
            time.sleep(3600)
        opts = spec["mgrit"]
        step, u0 = _build_step(spec["problem"], arrays, opts["m"])
        solver = MGRIT(step, **opts)
        U, history = distributed_solve(comm, solver, u0, spec["nt"], status=status)
        if rank == 0:
            np.savez(work / "result.npz", U=U, history=np.array(history, dtype=np.float64))
        status("done")
        return 0
    except BaseException as exc:  # noqa: BLE001 - report every failure, then stop all ranks
        status(f"error: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        sys.stderr.write(f"rank {rank}: {type(exc).__name__}: {exc}\n")
        sys.stderr.flush()
        comm.Abort(1)
        return 1


# --------------------------------------------------------------------------- launcher
def _rank_report(work: Path, ranks: int) -> tuple[list[int], str]:
    bad, lines = [], []
    for r in range(ranks):
        f = work / f"rank{r}.status"
        text = f.read_text().strip() if f.exists() else "never started"
        if text != "done":
            bad.append(r)
            lines.append(f"rank {r}: {text.splitlines()[0] if text else 'no status'}")
    return bad, "\n".join(lines)


def launch(problem: dict, nt: int, *, ranks: int = 2, timeout: float = 60.0, m: int = 4, levels: int = 2,
           relax: str = "FCF", max_iter: int = 10, tol: float = 1e-8, fail_rank: int | None = None,
           hang_rank: int | None = None):
    """Run MGRIT on ``problem`` with ``mpiexec -n ranks``; returns ``(U, history, info)``.

    ``problem`` is ``{"kind": "dahlquist", "lam", "dt", "u0"}`` or ``{"kind": "gru", "params", "X",
    "h0", "implicit", "dt"}``. ``info`` has the wall time (including MPI start-up) and the command.
    Raises :class:`MPIRankError` naming the failing rank(s) on an error or after ``timeout`` seconds;
    ``fail_rank`` / ``hang_rank`` inject a failure (for tests and the notebook's bad-input demo).
    """
    ok, why = mpi_available()
    if not ok:
        raise RuntimeError(f"MPI is not available: {why}")
    ranks = check_positive_int(ranks, "ranks")
    nt = check_positive_int(nt, "nt")
    timeout = check_float(timeout, "timeout", low=0.0, low_inclusive=False)
    relax = check_choice(relax, "relax", ("F", "FCF", "FCFCF"))
    sizes = hierarchy(nt, m, levels)
    if levels < 2:
        raise ValueError("levels: the MPI solver needs levels >= 2")
    if ranks > sizes[1]:
        raise ValueError(f"ranks: {ranks} ranks for {sizes[1]} C-intervals; use at most {sizes[1]} ranks")
    if not isinstance(problem, dict) or "kind" not in problem:
        raise TypeError("problem: expected a dict with a 'kind' ('dahlquist' or 'gru')")
    check_choice(problem["kind"], "problem['kind']", ("dahlquist", "gru"))
    spec = {"nt": nt, "mgrit": {"m": m, "levels": levels, "relax": relax, "max_iter": check_int(max_iter, "max_iter", low=1),
                                "tol": float(tol)},
            "fail_rank": fail_rank, "hang_rank": hang_rank}
    arrays = {}
    if problem["kind"] == "dahlquist":
        spec["problem"] = {"kind": "dahlquist", "lam": float(problem["lam"]), "dt": float(problem["dt"]),
                           "u0": np.atleast_1d(np.asarray(problem["u0"], dtype=np.float64)).tolist()}
    else:
        X = np.asarray(problem["X"])
        if X.shape[0] != nt:
            raise ValueError(f"problem['X']: expected {nt} time steps (nt), got shape {X.shape}")
        spec["problem"] = {"kind": "gru", "implicit": bool(problem.get("implicit", True)),
                           "dt": float(problem.get("dt", 1.0))}
        arrays = {"X": X, "h0": np.asarray(problem["h0"])}
        arrays.update({f"p_{k}": np.asarray(v) for k, v in problem["params"].items()})
    exe = mpiexec_path()
    with tempfile.TemporaryDirectory(prefix="mgrit_mpi_") as tmp:
        work = Path(tmp)
        (work / "spec.json").write_text(json.dumps(spec))
        if arrays:
            np.savez(work / "arrays.npz", **arrays)
        cmd = [exe, "-n", str(ranks), sys.executable, "-m", "course_lib.parallel.mgrit_mpi", str(work)]
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                start_new_session=True, cwd=str(Path(__file__).resolve().parents[2]))
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            bad, report = _rank_report(work, ranks)
            raise MPIRankError(f"MPI run timed out after {timeout:g} s; rank(s) {bad} did not finish:\n{report}") from None
        wall = time.perf_counter() - t0
        if proc.returncode != 0 or not (work / "result.npz").exists():
            bad, report = _rank_report(work, ranks)
            failed = [r for r in bad if (work / f"rank{r}.status").exists()
                      and (work / f"rank{r}.status").read_text().startswith("error")]
            who = failed or bad
            raise MPIRankError(f"MPI run failed (exit code {proc.returncode}); rank(s) {who} failed:\n{report}"
                               + (f"\nstderr: {err.strip()[-800:]}" if err.strip() else ""))
        res = np.load(work / "result.npz")
        U, history = res["U"], [float(x) for x in res["history"]]
    return U, history, {"wall_s": wall, "ranks": ranks, "command": " ".join(cmd[:4]) + " ..."}


if __name__ == "__main__":
    sys.exit(main())
