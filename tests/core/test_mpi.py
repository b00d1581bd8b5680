"""course_lib.core.mpi: the launcher refuses bad arguments before starting anything; the worker's entry point
names what is wrong (the real launches are in tests/parallel/test_mpi_infer.py and test_mgrit_mpi.py)."""
import pytest

from course_lib.core import mpi
from helpers import raises_naming


# --------------------------------------------------------------------------- bad input
# the launcher and the worker's entry point
def _noop(work):
    return None


@pytest.mark.parametrize("kw, name", [
    ({"ranks": 0}, "ranks"), ({"ranks": 10**6}, "ranks"), ({"ranks": True}, "ranks"),
    ({"timeout": 0}, "timeout"), ({"timeout": float("inf")}, "timeout"), ({"timeout": 1e9}, "timeout"),
    ({"prepare": None}, "prepare"), ({"collect": 3}, "collect"),
    ({"args": "--repeat 3"}, "args"), ({"args": [None]}, "args[0]"), ({"args": [True]}, "args[0]"),
])
def test_launch_rejects_out_of_range_arguments_before_starting(kw, name):
    call = dict(ranks=1, prepare=_noop, collect=_noop, timeout=5.0) | kw
    raises_naming((TypeError, ValueError), name, mpi.launch, "course_lib.parallel.mpi_infer", **call)


@pytest.mark.timeout(30)
def test_launch_module_and_worker_main_arguments():
    raises_naming(ValueError, "module", mpi.launch, "x y; rm", ranks=1, prepare=_noop, collect=_noop)
    raises_naming(TypeError, "body", mpi.worker_main, None, [])
    raises_naming(TypeError, "argv", mpi.worker_main, lambda *a: None, "folder")
    raises_naming(ValueError, "rank", mpi.status_file, "/tmp", -1)
    assert mpi.worker_main(lambda *a: None, ["/definitely/not/a/folder"]) == 2
