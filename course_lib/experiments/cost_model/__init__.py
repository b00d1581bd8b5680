"""Which parallelism when: one cost model across the course, and an advisor (experiments folder, chapter 12).

Three pieces, each plain data:

``Machine``   what this computer can do, *measured* by :meth:`Machine.measure` with
              :mod:`course_lib.core.timing` (cached per process; ``quick=True`` for tests): cores, SIMD
              lanes, GEMM peak per core and on all cores, GEMV rate with the weights in cache, streaming
              bandwidth on one and on all cores, the cost of one library call, of a thread-pool hand-off
              and of a numba parallel region, the latency of one dependent step. MPI and GPU numbers
              cannot be measured on a machine without them: they are *assumed* and say so
              (``machine.source[field]``). :meth:`Machine.preset` gives the seeds' machines (assumed).
``Problem``   model ``kind`` (``"rnn"``, ``"lstm"``, ``"gru"``, ``"linear"``), ``mode`` (``"inference"`` or
              ``"training"``), ``B``, ``T``, ``H``, ``layers`` (and ``nx``, ``ny``), validated.
``Cost``      one method on one problem on one machine: ``work`` and ``span`` (flops), ``bytes`` moved,
              ``calls`` (library calls or kernel launches), ``regions`` (fork-joins / barriers),
              ``messages`` and ``comm_bytes``, the model's own ``counts`` (cells, steps, combines ...) and
              the predicted ``seconds`` with its parts.

Methods (:data:`METHODS`): ``sequential`` (one sequence, one step at a time), ``batched`` (GEMM over the
batch), ``threads`` (the batch split over CPU threads), ``wavefront`` (layers x time diagonals), ``mpi``
(the batch split over ranks; an allreduce of gradients when training), ``chunked`` (linear recurrences:
parallel over time, chunked), ``channels`` (linear recurrences: parallel over channels), ``mgrit``,
``newton`` and ``quasi`` (nonlinear recurrences, parallel over time), ``cuda_chunked`` and
``cuda_batched`` (a GPU, when the machine has one).

The time of a method is a roofline with overheads::

    seconds = max(work / (P * rate), span / rate, bytes / bandwidth)
              + calls * call + regions * region + messages * latency + comm_bytes / mpi_bandwidth

with ``rate`` the GEMM rate at the rows a call multiplies (``min(peak, rows * gemv_rate)``: weights read
once, used ``rows`` times). Python's GIL serialises the library calls of threads in one process
(``calls`` are not divided by P there) -- separate processes (MPI) do divide them. Where the GIL was measured
(:meth:`Machine.measure`: the course's own threads and wavefront methods at other sizes than chapter 07's), the
Python-thread methods take ``ideal + share * (serial - ideal) + barriers + start`` instead, with the measured
share for calls of their size -- above 1 where handing the GIL back and forth costs more than taking turns.

``run(problem, method)`` executes the course's own code for ``method`` on ``problem`` (:mod:`.execute`;
``measure(problem, methods)`` times several interleaved) so every prediction can be checked;
``predict(method, problem, machine)`` -> Cost;  ``advise(problem, machine=None)`` -> ranked
:class:`Advice` (method, seconds, reason). ``advise`` raises ValueError naming the argument for
impossible problems; with a ``calibration`` (``calibrate(...).errors()``) each method carries the error bars
measured for it here, per direction (``Advice.low``, ``Advice.high``), and a miss is advised with its bar and said,
not a reason for silence. ``Machine.save`` / ``Machine.load`` keep a machine's constants as JSON;
``benchmarks/which.py --record DIR`` keeps a whole run, and :func:`.fresh.replay` asks today's model about it.

Counts come from the course where it has them: the wavefront's diagonals and barrier steps
(:func:`course_lib.parallel.inference.work_span` -- recomputed here in closed form, tested equal), the
library calls per cell, per step and per pass and DEER's calls and bytes per iteration (:mod:`.counts`:
counted by running the course's own code on tiny problems, tested equal to fresh counts at other sizes), the
scan's combines (:func:`course_lib.algorithms.scan.scan_counts` -- closed form here, tested equal), MGRIT's
and DEER's critical paths (the task graphs of :mod:`.cluster`, tested equal to
:func:`course_lib.algorithms.mgrit.span_model` and :func:`course_lib.algorithms.newton.span_model`).

The package, one idea per module: :mod:`.machine` (the machine's constants, measured or assumed),
:mod:`.problem` (what is asked: kind, mode, sizes), :mod:`.model` (costs, ``predict``), :mod:`.advice` (the
ranking), :mod:`.configurations` (the
course's benchmark configurations the model is checked on: ``calibrate``, the seeds' schedules, winner
maps), :mod:`.cluster` (the simulated machine the task graphs run on), :mod:`.execute` (``run``: the
course's own code for any method and problem), :mod:`.overheads` (the per-kind call price and cell-kernel
rate, measured by tiny and mid-sized runs of that code -- micro-benchmarks, never the chapter
configurations, which stay a hold-out) and :mod:`.fresh` (the advisor checked on random fresh problems).
"""
from __future__ import annotations

from . import cluster
from . import counts  # noqa: F401  (registers the counted calls and bytes with the model)
from .counts import Tally, count_deer, count_run, deer_bytes, deer_calls, step_calls
from .advice import Advice, advise, first_choice
from .configurations import (CONFIG_NAMES, SEED_ELSEWHERE, SEED_SCHEDULES, Calibration, Row, calibrate, measured_speedups,
                             ranking_and_maps, seed_schedules)
from .execute import RUNNABLE, inputs, measure, run, runnable
from . import overheads, probes  # noqa: F401  (the micro-benchmarks of Machine.measure, and the course-code probes)
from .fresh import WITHIN, AdvisorCheck, FreshResult, check_advisor, fresh_problems
from .machine import GPU, Machine
from .model import (DEER_ITERS, METHODS, MGRIT_ITERS, MGRIT_TOL, Cost, applicable, calls_per_step, deer_counts,
                    mgrit_counts, pass_calls, predict, predict_all, scan_counts, wavefront_counts)
from .problem import KINDS, MODES, Problem

__all__ = [
    "KINDS",
    "MODES",
    "METHODS",
    "GPU",
    "Machine",
    "Problem",
    "Cost",
    "Advice",
    "predict",
    "predict_all",
    "advise",
    "run",
    "runnable",
    "measure",
    "inputs",
    "RUNNABLE",
    "fresh_problems",
    "check_advisor",
    "AdvisorCheck",
    "FreshResult",
    "WITHIN",
    "first_choice",
    "applicable",
    "wavefront_counts",
    "scan_counts",
    "mgrit_counts",
    "deer_counts",
    "MGRIT_ITERS",
    "MGRIT_TOL",
    "DEER_ITERS",
    "CONFIG_NAMES",
    "Row",
    "Calibration",
    "calibrate",
    "seed_schedules",
    "measured_speedups",
    "SEED_SCHEDULES",
    "SEED_ELSEWHERE",
    "ranking_and_maps",
    "cluster",
    "Tally",
    "count_run",
    "count_deer",
    "step_calls",
    "deer_calls",
    "deer_bytes",
    "calls_per_step",
    "pass_calls",
]
