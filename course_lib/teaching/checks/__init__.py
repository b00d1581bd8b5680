"""Exercise graders (layer 3: teaching front).

The framework lives in :mod:`course_lib.teaching.checks.core` and is re-exported here
(``checks.check_function``, ``checks.ExerciseFailed``, ...). Each chapter's worksheet checks
live in their own module, ``course_lib.teaching.checks.chNN`` (e.g. ``from course_lib.teaching.checks import ch00``).
"""
from .core import *  # noqa: F401,F403
from .core import __all__  # noqa: F401
