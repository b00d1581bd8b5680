"""teaching -- the front the student sees: ``checks`` (graders), ``claims`` (the seed-claims registry),
``verdict`` (computed verdict lines), ``plots``, ``widgets`` and ``authoring`` (the command line).
GUI libraries are imported lazily, inside the functions that draw.
"""
