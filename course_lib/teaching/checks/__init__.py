"""Exercise graders (teaching folder).

The framework lives in :mod:`course_lib.teaching.checks.core` and is re-exported here
(``checks.check_function``, ``checks.ExerciseFailed``, ...). Each chapter's worksheet checks
live in their own module named after the chapter's slug, ``course_lib.teaching.checks.<slug>``
(``from course_lib.teaching.checks import scan as scan_checks``).

In Jupyter, a failed check shows only its message (no traceback through grader code), and an
unsolved exercise's placeholder shows as one line.
"""
from .core import *  # noqa: F403
from .core import __all__  # noqa: F401
from .core import install_ipython_display as _install

_install()
