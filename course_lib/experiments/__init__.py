"""experiments -- the measuring helpers the notebooks and benchmarks call, all built on
:func:`course_lib.core.timing.compare`, and the autotuner. A model or algorithm never times itself: its
time is measured here. Imports from every layer above except ``teaching``.
"""
