"""Parallel RNNs, hands-on -- the library behind the course notebooks.

Seven folders; each imports only from the folders above it (``tests/test_layers.py`` checks it from
the code, and that there are no import cycles)::

    core/         the machine and how to measure on it; knows nothing about RNNs
    data/         data sets made in code or shipped with Python
    algorithms/   model-agnostic parallel building blocks (matmul ladder, activations, scans, MGRIT, ...)
    models/       one file per network: params dataclass, forward, backward, train
    parallel/     strategies that spread a model over threads, ranks or a device
    experiments/  measuring helpers the notebooks and benchmarks call; the autotuner
    teaching/     checks (graders), claims (seed numbers), verdict lines, plots, widgets, authoring

A new chapter's code goes where its idea belongs: a way to compute something that does not care which
network it serves goes in ``algorithms/``; a network in ``models/``; spreading a network over workers in
``parallel/``; anything that times or compares in ``experiments/``; its grader in ``teaching/checks/``.

One vocabulary everywhere:

* ``method=``   chooses among ways of computing *the same numbers* (scan methods, LSTM layouts,
  inference strategies, GRU serial vs MGRIT); all methods agree to round-off, and tests say so;
* ``threads=``  is always a number of CPU threads (``core.backend.set_threads`` sets numba and BLAS together);
* ``block=`` / ``grid=`` are CUDA launch sizes;
* model parameters are a dataclass of named arrays (PyTorch's layout where a PyTorch twin exists);
* every ``train*`` returns a :class:`core.results.TrainResult` (history, final params, seconds);
* arrays are time-major ``(T, B, features)``; float32 by default, float64 accepted for checks;
* a plain call computes; it never benchmarks, tunes or writes a file behind the caller's back.

Chapter -> modules:

====  ======================  =====================================================================
 00   setup                   core.backend, core.timing, teaching.widgets, teaching.claims, teaching.verdict
 01   serial RNN              models.rnn, models.gradcheck, data.rotation
 02   BPTT                    models.rnn (bptt_quadratic / bptt_linear), experiments.bptt
 03   batching                experiments.batching, core.timing (roofline, cache residency)
 04   tiling & SIMD           algorithms.matmul, experiments.matmul
 05   threads & fusion        models.fast_rnn, algorithms.activations, experiments.profile, experiments.jit
 06   Halide                  models.halide_rnn, experiments.halide
 07   parallel inference      models.softmax_rnn, models.charlm, parallel.inference, parallel.mpi_infer,
                              experiments.inference
 08   linear recurrences      algorithms.scan, algorithms.scan_cuda, models.linear_rnn, experiments.scan
 09   LSTM & data layout      models.lstm, models.lstm_lm, experiments.lstm, experiments.autotune
 10   MGRIT                   algorithms.mgrit, models.gru, parallel.mgrit_mpi, data.activity, experiments.mgrit
 11   Newton in time          algorithms.matrix_scan, algorithms.newton, models.jacobians, models.mingru,
                              parallel.deer, experiments.newton
 12   which parallelism when  experiments.cost_model (with its cluster)
====  ======================  =====================================================================

Instructors: ``teaching.authoring`` (``python -m course_lib exercises build``, ``grade``) and
``teaching.nbgrader_export`` (``python -m course_lib export --nbgrader DIR``).

``core.backend`` is imported first, on purpose: it decides whether CUDA kernels run on a GPU or in
numba's CUDA simulator, and that must happen before numba is imported anywhere.
"""
from .core import backend  # noqa: F401  (must come first: sets NUMBA_ENABLE_CUDASIM)

__version__ = "0.2.0"
__all__ = ["backend", "__version__"]
