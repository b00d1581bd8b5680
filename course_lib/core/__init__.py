"""core -- knows nothing about RNNs: the machine and how to measure on it.

``backend`` (cores, SIMD, BLAS, threads, GPU or CUDA simulator), ``timing`` (measure, compare, FLOP and
byte counts, the measured roofline), ``noise`` (the noise guard: whether a measurement can be trusted, and
what it still shows), ``intervals`` (order-statistic intervals of paired ratios), ``validate`` (argument checks that name the
argument), ``params`` (the one parameter protocol, :class:`~course_lib.core.params.Params`), ``optim`` (Adam), ``results`` (the one ``TrainResult``), ``mpi`` (the one ``mpiexec`` launcher).
Imports nothing from the rest of ``course_lib``.
"""
