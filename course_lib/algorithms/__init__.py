"""algorithms -- model-agnostic parallel building blocks; they never import a model.

``matmul`` (the numba matmul ladder of chapter 04), ``activations`` (the one fast tanh/sigmoid for numba
kernels), ``scan`` (linear recurrences on the CPU; its numba kernels in ``scan_kernels``), ``scan_cuda`` (the
same as CUDA kernels; ``scan_cuda_coalesced``: seed 001's serial baseline and the coalesced scan a GPU wants), ``mgrit`` (the generic multigrid-in-time solver), and the newer ``matrix_scan`` and
``newton``.
Imports only from ``core`` and ``data``.
"""
