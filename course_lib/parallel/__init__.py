"""parallel -- strategies that spread a model over threads, ranks or a device.

``inference`` (serial / batched / threads / wavefront / MPI / CUDA inference of the softmax RNN),
``mpi_infer`` and ``mgrit_mpi`` (the programs ``mpiexec`` runs), and newer strategies over the time axis.
Imports from ``core``, ``data``, ``algorithms`` and ``models``.
"""
