"""The one ``mpiexec`` launcher, and the status protocol its worker programs follow (core layer).

Launcher side (the notebook's process)::

    def prepare(work):                       # write the inputs into the temporary folder
        np.savez(work / "input.npz", X=X)
    def collect(work):                       # read the outputs back
        return np.load(work / "output.npz")["Y"].copy()
    Y, run = launch("course_lib.parallel.mpi_infer", ranks=2, prepare=prepare, collect=collect,
                    args=["--repeat", "3"], timeout=60)
    run.wall                                 # seconds, process start-up included

Worker side (the module ``mpiexec -n P python -m MODULE WORKDIR ...`` runs)::

    def main(argv=None):
        return worker_main(body, argv)       # body(comm, work: Path, status, argv_rest) -> None

``status("phase name")`` records how far each rank got. A rank that raises writes ``error: ...``
(with its traceback) to its status file and aborts the whole job, so no rank waits forever in a
collective. The launcher kills the job after ``timeout`` seconds. Either way :class:`MPIFailed`
names the failing rank(s) and what every rank was doing. The worker runs with one BLAS/OpenMP
thread per rank (ranks are the parallelism).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from .backend import mpi_available
from .validate import check_callable, check_float, check_int, check_positive_int

__all__ = ["MPIFailed", "MPIRun", "launch", "worker_main", "status_file"]

ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}


class MPIFailed(RuntimeError):
    """An ``mpiexec`` job failed or timed out.

    ``failed_ranks`` lists the ranks that raised (or, after a timeout or a crash with no error
    written, the ranks that did not finish); ``states`` maps each rank to its last status line;
    ``log`` is what ``mpiexec`` printed."""

    def __init__(self, message: str, failed_ranks: Sequence[int] = (), states: dict | None = None, log: str = ""):
        super().__init__(message)
        self.failed_ranks = list(failed_ranks)
        self.states = dict(states or {})
        self.log = log


@dataclass
class MPIRun:
    """What a successful :func:`launch` measured: ranks, wall seconds (start-up included), the command."""

    ranks: int
    wall: float
    command: list = field(default_factory=list)


def status_file(work: Path, rank: int) -> Path:
    """Where rank ``rank`` records its progress inside the job folder."""
    if not isinstance(work, (str, os.PathLike)):
        raise TypeError(f"work: expected a folder path, got {type(work).__name__}")
    rank = check_int(rank, "rank", low=0)
    return Path(work) / f"rank{rank}.status"


def _states(work: Path, ranks: int) -> dict[int, str]:
    out = {}
    for r in range(ranks):
        f = status_file(work, r)
        out[r] = f.read_text() if f.exists() else "never started"
    return out


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "no status"


def launch(module: str, *, ranks: int, prepare: Callable[[Path], Any], collect: Callable[[Path], Any],
           args: Sequence[str] = (), timeout: float = 60.0) -> tuple[Any, MPIRun]:
    """Run ``mpiexec -n ranks python -m module WORKDIR *args``; return ``(collect(WORKDIR), MPIRun)``.

    ``prepare(work)`` writes the inputs before the launch; ``collect(work)`` reads the outputs after
    a clean exit (the temporary folder is deleted afterwards). Raises :class:`MPIFailed` naming the
    rank(s) on an error, a crash or after ``timeout`` seconds, and when MPI is not installed."""
    if not isinstance(module, str) or not module:
        raise TypeError(f"module: expected a module name such as 'course_lib.parallel.mpi_infer', got {module!r}")
    if not module.replace("_", "a").replace(".", "a").isalnum() or module.startswith(".") or module.endswith("."):
        raise ValueError(f"module: expected a dotted module name such as 'course_lib.parallel.mpi_infer', got {module!r}")
    ranks = check_positive_int(ranks, "ranks", high=256)
    # a day at most: beyond that the notebook would look hung (and subprocess rejects huge timeouts)
    timeout = check_float(timeout, "timeout", low=0.0, high=86400.0, low_inclusive=False)
    check_callable(prepare, "prepare", "a function prepare(work) that writes the inputs")
    check_callable(collect, "collect", "a function collect(work) that reads the outputs")
    if isinstance(args, (str, bytes)) or not isinstance(args, (list, tuple)):
        raise TypeError(f"args: expected a list of command-line arguments, got {type(args).__name__} {args!r}")
    for i, a in enumerate(args):
        if isinstance(a, bool) or not isinstance(a, (str, int, float, os.PathLike)):
            raise TypeError(f"args[{i}]: expected a string or a number, got {type(a).__name__} {a!r}")
        if isinstance(a, str) and "\x00" in a:
            raise ValueError(f"args[{i}]: contains a NUL character")
    args = [str(a) for a in args]
    ok, exe = mpi_available()
    if not ok:
        raise MPIFailed(f"MPI is not available: {exe}")
    with tempfile.TemporaryDirectory(prefix="course_mpi_") as tmp:
        work = Path(tmp)
        prepare(work)
        cmd = [exe, "-n", str(ranks), sys.executable, "-m", module, str(work), *args]
        env = dict(os.environ, **ONE_THREAD)
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                start_new_session=True, cwd=str(Path(__file__).resolve().parents[2]))
        try:
            log, _ = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover - it ended in between
                pass
            log, _ = proc.communicate()
            timed_out = True
        wall = time.perf_counter() - t0
        states = _states(work, ranks)
        if timed_out or proc.returncode != 0 or any(s.startswith("error") for s in states.values()):
            errors = [r for r, s in states.items() if s.startswith("error")]
            unfinished = [r for r, s in states.items() if s != "done"]
            failed = errors or unfinished
            why = f"timed out after {timeout:g} s" if timed_out else f"exited with code {proc.returncode}"
            lines = [f"mpiexec -n {ranks} {module} {why}; failed rank(s): {failed}"]
            lines += [f"  rank {r}: {_first_line(s)}" for r, s in states.items()]
            if not errors and log and log.strip():
                lines.append("  mpiexec said: " + log.strip()[-600:])
            raise MPIFailed("\n".join(lines), failed, states, log or "")
        result = collect(work)
    return result, MPIRun(ranks, wall, cmd[:6])


def worker_main(body: Callable, argv: Sequence[str] | None = None, *,
                check: Callable[[Path, list], None] | None = None) -> int:
    """Entry point of a worker program: ``body(comm, work, status, rest)`` runs on every rank.

    ``argv[0]`` is the job folder made by :func:`launch`; ``rest`` are the remaining arguments.
    ``check(work, rest)``, when given, validates the folder's inputs and the arguments *before* MPI
    starts (raising ValueError/TypeError/OSError). Called by hand with a folder that does not exist
    or a bad input/spec, it says so on stderr and returns 2 instead of aborting the calling Python;
    and a failure in a job of one rank returns 1 (nobody waits in a collective, so no ``MPI_Abort``)."""
    check_callable(body, "body", "a function body(comm, work, status, rest)")
    if argv is not None and (isinstance(argv, (str, bytes)) or not isinstance(argv, (list, tuple))):
        raise TypeError(f"argv: expected a list of command-line arguments, got {type(argv).__name__} {argv!r}")
    argv = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    if not argv or not Path(argv[0]).is_dir():
        print(f"usage: mpiexec -n P python -m <worker> WORKDIR ...; WORKDIR {argv[:1]} is not a folder "
              "(course_lib.core.mpi.launch makes it)", file=sys.stderr)
        return 2
    work, rest = Path(argv[0]), argv[1:]
    if check is not None:
        try:
            check(work, rest)
        except (ValueError, TypeError, OSError, KeyError) as exc:
            msg = f"error: {type(exc).__name__}: {exc}"
            print(f"{msg} (WORKDIR {work})", file=sys.stderr)
            try:
                status_file(work, int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))) \
                    .write_text(msg)
            except (OSError, ValueError):
                pass
            return 2
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    f = status_file(work, comm.Get_rank())

    def status(text: str) -> None:
        f.write_text(text)

    status("started")
    try:
        body(comm, work, status, rest)
    except BaseException as exc:
        status(f"error: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        sys.stderr.flush()
        if comm.Get_size() > 1:      # others may wait in a collective: take the whole job down
            comm.Abort(1)
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    status("done")
    return 0
