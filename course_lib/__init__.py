"""Parallel RNNs, hands-on -- the library behind the course notebooks.

Seven folders; each imports only from the folders above it (``tests/course/test_layers.py`` checks it from
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

Chapter -> modules: :data:`CHAPTERS` (below, as data: the test suite derives its per-chapter markers
``pytest -m ch08`` from it, and the chapters' titles are in :data:`CHAPTER_TITLES`). Each chapter lists
the modules it teaches with, its grader in ``teaching/checks/`` and its figures in ``teaching/plots/``.

Instructors: ``teaching.authoring`` (``python -m course_lib exercises build``, ``grade``) and
``teaching.nbgrader_export`` (``python -m course_lib export --nbgrader DIR``).

``core.backend`` is imported first, on purpose: it decides whether CUDA kernels run on a GPU or in
numba's CUDA simulator, and that must happen before numba is imported anywhere.
"""
from .core import backend

__version__ = "0.2.0"
__all__ = ["backend", "__version__", "CHAPTERS", "CHAPTER_TITLES"]

CHAPTER_TITLES = {
    "00": "setup", "01": "serial RNN", "02": "BPTT", "03": "batching", "04": "tiling & SIMD",
    "05": "threads & fusion", "06": "Halide", "07": "parallel inference", "08": "linear recurrences",
    "09": "LSTM & data layout", "10": "MGRIT", "11": "Newton in time", "12": "which parallelism when",
}

#: chapter -> the course_lib modules (dotted, below ``course_lib``) it teaches with; the one table of it
CHAPTERS = {
    "00": ("core.backend", "core.timing", "teaching.widgets", "teaching.claims", "teaching.verdict",
           "teaching.checks.setup"),
    "01": ("models.rnn", "models.gradcheck", "data.rotation", "teaching.checks.serial_rnn", "teaching.plots.rnn"),
    "02": ("models.rnn", "experiments.bptt", "teaching.checks.bptt", "teaching.plots.rnn"),
    "03": ("experiments.batching", "experiments.frameworks", "core.timing", "teaching.checks.batching", "teaching.plots.perf"),
    "04": ("algorithms.matmul", "experiments.matmul", "teaching.checks.tiling_simd", "teaching.checks.parallel_loops",
           "teaching.plots.matmul"),
    "05": ("models.fast_rnn", "models.fast_rnn_workspace", "models.numpy_step", "models.step_checks",
           "algorithms.activations", "experiments.profile", "experiments.jit",
           "teaching.checks.threads_fusion", "teaching.plots.perf"),
    "06": ("models.halide_rnn", "models.halide_schedules", "experiments.halide", "teaching.checks.halide",
           "teaching.claims.halide", "teaching.plots.halide"),
    "07": ("models.softmax_rnn", "models.charlm", "data.corpus", "parallel.inference", "parallel.mpi_infer",
           "experiments.inference", "teaching.checks.parallel_inference", "teaching.claims.seed004",
           "teaching.plots.inference"),
    "08": ("algorithms.scan", "algorithms.scan_kernels", "algorithms.scan_lanes", "algorithms.scan_cuda", "algorithms.scan_cuda_coalesced",
           "models.linear_rnn",
           "experiments.scan", "experiments.scan_gpu", "teaching.checks.scan", "teaching.checks.scan_cuda", "teaching.plots.scan",
           "algorithms.linear_attention", "algorithms.linear_attention_kernels", "algorithms.linear_attention_fused", "algorithms.linear_attention_runs", "algorithms.linear_attention_inputs", "algorithms.delta_rule", "parallel.mpi_scan", "parallel.mpi_pingpong",
           "experiments.linear_attention", "teaching.checks.chunked", "teaching.claims.chunked"),
    "09": ("models.lstm", "models.lstm_lm", "data.corpus", "experiments.lstm", "experiments.lstm_layout", "experiments.autotune",
           "teaching.checks.lstm_layout", "teaching.plots.lstm", "algorithms.gemm",
           "experiments.gemm_providers"),
    "10": ("algorithms.mgrit", "algorithms.mgrit_partition", "models.gru", "parallel.mgrit_mpi", "data.activity", "experiments.mgrit",
           "teaching.checks.mgrit", "teaching.plots.mgrit"),
    "11": ("algorithms.matrix_scan", "algorithms.newton", "models.jacobians", "models.mingru", "parallel.deer",
           "experiments.newton", "teaching.checks.newton", "teaching.claims.newton",
           "teaching.plots.newton"),
    "12": ("experiments.cost_model", "experiments.cost_model.cluster", "parallel.mpi_pingpong", "teaching.checks.which",
           "teaching.plots.cost_model"),
}
