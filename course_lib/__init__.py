"""Parallel RNNs, hands-on -- the library behind the course notebooks.

Three layers, imports only point down:

1. foundation -- :mod:`backend` (hardware, CUDA simulator decision, threads), :mod:`timing`,
   :mod:`validate`, :mod:`data`/:mod:`corpus` (data sets made in code or shipped with Python);
2. methods    -- one module per idea: ``rnn`` and ``gradcheck`` (ch. 01-02), ``batching`` (03),
   ``kernels`` (04), ``fast_rnn``, ``profile``, ``jit`` (05), ``inference``, ``charlm``, ``mpi_infer`` (06),
   ``scan``, ``scan_cuda``, ``linear_rnn`` (07), ``lstm``, ``lstm_lm``, ``autotune`` (08), ``gru``, ``mgrit``,
   ``mgrit_mpi`` (09): pure functions on arrays;
3. teaching front -- :mod:`checks` (graders), :mod:`plots`, :mod:`widgets`, :mod:`authoring`
   (``python -m course_lib ...``).

``backend`` is imported first, on purpose: it decides whether CUDA kernels run on a GPU or in
numba's CUDA simulator, and that must happen before numba is imported anywhere.
"""
from . import backend  # noqa: F401  (must come first: sets NUMBA_ENABLE_CUDASIM)

__version__ = "0.1.0"
__all__ = ["backend", "__version__"]
