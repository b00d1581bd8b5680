"""The course's one vocabulary (core folder): the values of ``method=`` and the names of sizes.

``method=`` chooses among ways of computing *the same numbers*. Each way has one value, used by every
module that offers it (``"sequential"`` means marching over time, one step after another, whether it is
a GRU, a softmax RNN, a scan or a cost-model row). :data:`METHOD_MEANINGS` is the table: a value not in
it is not a method anywhere in the course, and ``tests/test_vocabulary.py`` reads the code (AST) to keep
every ``METHODS`` tuple, ``method=`` default, keyword, choice check and comparison inside it.

Sizes: ``nh`` is the hidden size (``H`` names only the hidden-state array, shape ``(T, B, nh)``);
``batch`` is a keyword or field that is a number of sequences (``B`` only names that dimension in
shapes, docstrings and local maths); ``T`` is the sequence length, ``nx``/``ny`` the input/output
widths; ``threads=`` is always CPU threads. There is no ``batch_size``, ``hidden`` or ``hidden_size``.

Graders in ``course_lib.teaching.checks`` are named ``check_<what they check>``. Notebooks and worksheets
import course modules under :func:`import_alias` (stated in the README).
"""
from __future__ import annotations

__all__ = ["METHOD_MEANINGS", "SIZE_NAMES", "NOT_SIZE_NAMES", "ALIAS_SUFFIXES", "GRADER_PREFIX", "import_alias"]

METHOD_MEANINGS: dict[str, str] = {
    # marching over time, and what is spread inside each step
    "sequential": "march over time, one step after another (the loop every other method is checked against)",
    "batched": "march over time with all sequences of the batch in one matrix product per step",
    "threads": "CPU threads (shared memory) split the batch or the rows of each step",
    "wavefront": "cells (layer, step) on one anti-diagonal run at once on threads",
    "mpi": "MPI ranks (message passing) each run a slice of the batch",
    "cuda_batched": "one CUDA kernel per step, a GPU thread per (unit, sequence), marching over time",
    # linear recurrences h_t = a_t h_{t-1} + x_t (chapter 08)
    "channels": "parallel over channels: each thread marches over time on its own group of channels",
    "chunked": "parallel over time: reduce chunks, scan the carries, expand (the chunked scan)",
    "cuda_chunked": "the chunked scan's reduce / carries / expand phases as CUDA kernels",
    "hillis_steele": "Hillis-Steele prefix scan (n log n work, log n span)",
    "blelloch": "Blelloch's work-efficient up-sweep / down-sweep scan",
    "log_space": "Heinsen's two prefix sums in log space (cumsum, logcumsumexp)",
    # matrix-state recurrences S_t = a_t S_{t-1} + k_t v_t^T (chapter 08, the scan as matmuls)
    "scan": "chapter 08's element-wise scan run over a matrix state flattened into channels",
    # nonlinear recurrences over time (chapters 10-11)
    "mgrit": "multigrid reduction in time (FAS), parallel over time",
    "newton": "Newton's method over the whole trajectory with full Jacobians (DEER)",
    "quasi": "Newton with only the Jacobians' diagonals (quasi-DEER)",
    "damped": "Newton with each Jacobian shrunk to a bounded norm (a trust region)",
    "picard": "the Newton iteration with A = I: the update is a cumulative sum of the residuals",
    "jacobi": "the Newton iteration with A = 0: every step re-evaluated from the last iterate, no scan",
    # the LSTM's layouts (chapter 09)
    "naive": "one product per gate and operand, separate element-wise passes (also the naive matmul loop)",
    "fused": "the four LSTM gates in one product per step and one fused element-wise kernel",
    "fused_pre": "fused, with the input projection of all steps in one product up front",
    "transposed": "fused_pre with the state kept transposed, W X^T (the seed's layout)",
    "gemv": "fused_pre with one matrix-vector product per sequence (small batches)",
    "workspace": "fused_pre tuned: scratch reused across steps and calls, one in-place GEMM and one kernel per step",
    "persistent": "the loop over T compiled: threads own hidden units and keep their rows of W_hh for every step (dot products, no BLAS call per step)",
    # element-wise kernels of one training step (chapter 05)
    "loop": "the fused element-wise kernels on the calling thread",
    "prange": "the fused element-wise kernels with their rows split over numba's threads",
    "reference": "the seed-organised numpy training step (BPTT + SGD, a time loop per phase)",
    "fast": "the fastest CPU training step (models.fast_rnn.train_step)",
    # BPTT (chapter 02)
    "linear": "BPTT in one reverse sweep, O(T)",
    "quadratic": "BPTT as the double loop over (t, k), O(T^2)",
    # the matmul ladder (chapter 04) and the framework comparison (chapter 03)
    "ikj": "matmul loop order i-k-j (contiguous inner loop)",
    "tiled": "matmul on cache-sized tiles",
    "tiled_simd": "matmul on tiles with a vectorised inner loop",
    "parallel": "matmul with prange over blocks of rows",
    "parallel_tiled": "matmul with prange over row blocks, packed panels, register blocking",
    "numpy": "numpy (its BLAS)",
    "numba": "hand-written numba kernels",
    "torch": "PyTorch",
}
"""Every value ``method=`` takes anywhere in the course, with its one meaning."""

SIZE_NAMES = {"nh": "hidden size", "batch": "number of sequences", "T": "sequence length",
              "nx": "input width", "ny": "output width"}
"""Names of sizes in keywords, parameters and fields."""

NOT_SIZE_NAMES = {"H": "the hidden-state array (T, B, nh), never a size", "B": "a dimension in shapes only",
                  "batch_size": "use batch", "hidden": "use nh", "hidden_size": "use nh"}
"""Names that never mean a size in a keyword, parameter or field."""

ALIAS_SUFFIXES = {"course_lib.experiments": "_exp", "course_lib.teaching.plots": "_plots",
                  "course_lib.teaching.checks": "_checks"}
"""Modules of these packages are imported as ``<module><suffix>``; every other module under its own name."""

GRADER_PREFIX = "check_"


def import_alias(package: str, module: str) -> str:
    """The name a notebook imports ``from <package> import <module>`` under, e.g.
    ``import_alias("course_lib.experiments", "scan") == "scan_exp"``,
    ``import_alias("course_lib.algorithms", "scan") == "scan"``."""
    if not isinstance(package, str) or not package:
        raise TypeError(f"package: expected a dotted package name, got {package!r}")
    if not isinstance(module, str) or not module.isidentifier():
        raise TypeError(f"module: expected a module name, got {module!r}")
    for prefix, suffix in ALIAS_SUFFIXES.items():
        if package == prefix or package.startswith(prefix + "."):
            return module + suffix
    return module
