"""Unsolved placeholders print one line that names the exercise: exercise 8.4 (whose kernel runs in
numba's CUDA simulator threads) in a real kernel, and the stubs of an nbgrader release."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from course_lib.teaching import authoring
from course_lib.teaching import nbgrader_export as ne

ROOT = Path(__file__).resolve().parents[2]

UNSOLVED_84 = textwrap.dedent('''
    import course_lib  # first: decides GPU vs CUDA simulator before numba is imported
    from numba import cuda, float64
    from course_lib.algorithms import scan_cuda
    from course_lib.teaching.checks import scan as scan_checks
    BLOCK_MAX = scan_cuda.BLOCK_MAX

    @cuda.jit
    def my_scan_kernel(a, x, h0, h):
        sa = cuda.shared.array(BLOCK_MAX, float64)
        i = cuda.threadIdx.x
        # YOUR CODE HERE
        raise NotImplementedError("Exercise 8.4: replace this line with your code")
''')
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_unsolved_84_in_a_kernel_prints_one_line():
    """Run as a worksheet runs it: the grader's error is the placeholder's one line, without the
    simulator's thread prefix and without a traceback through the simulator's threads."""
    jc = pytest.importorskip("jupyter_client.manager")
    km, kc = jc.start_new_kernel(kernel_name="python3")
    try:
        errors = []
        for code in (UNSOLVED_84, "scan_checks.check_block_kernel(my_scan_kernel)"):
            msg_id = kc.execute(code)
            while True:
                m = kc.get_iopub_msg(timeout=300)
                if m["parent_header"].get("msg_id") != msg_id:
                    continue
                if m["msg_type"] == "error":
                    errors.append(ANSI.sub("", "\n".join(m["content"]["traceback"])))
                if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                    break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert len(errors) == 1, errors
    assert errors[0].splitlines() == [
        "NotImplementedError: Exercise 8.4: replace this line with your code (this exercise is still to do)"], errors[0]


@pytest.mark.parametrize("gid, exercise", [("exercise_8_4_answer", "8.4"), ("exercise_12_1a_answer_2", "12.1a"),
                                           ("exercise_8_4", ""), ("cell_03_code", "")])
def test_exercise_of_answer(gid, exercise):
    assert ne.exercise_of_answer(gid) == exercise


def test_exercise_of_answer_bad_input():
    with pytest.raises(TypeError, match="grade_id"):
        ne.exercise_of_answer(3)


def test_nbgrader_stubs_name_their_exercise():
    """The exported config's ClearSolutions turns every answer cell of chapter 08 into a stub that
    raises ``NotImplementedError("Exercise N.k: ...")`` -- what the one-line handler looks for."""
    pytest.importorskip("nbgrader", reason="nbgrader is in the dev extra: pip install -e '.[dev]'")
    from traitlets.config import Config

    sol = next(p for p in ne.chapters("08"))
    nb, exercises, _ = ne.nbgrader_notebook(authoring.read_ipynb(sol), "08_scan")
    cfg = Config()
    namespace = {"get_config": lambda: cfg, "__file__": str(ROOT / "nbgrader_config.py")}
    exec(compile(ne.config_text(), "nbgrader_config.py", "exec"), namespace)
    pre = [p for p in cfg.GenerateAssignment.preprocessors if p.__name__ == "NumberedClearSolutions"]
    assert len(pre) == 1, cfg.GenerateAssignment.preprocessors
    released, _ = pre[0](config=cfg).preprocess(nb, {})
    stubs = {}
    for cell in released.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            stubs[meta["grade_id"]] = re.findall(r'NotImplementedError\("([^"]*)"\)', cell.source)
    assert stubs and "exercise_8_4_answer" in stubs, sorted(stubs)
    for gid, found in stubs.items():
        assert found, (gid, "no stub")
        assert all(s == f"Exercise {ne.exercise_of_answer(gid)}: replace this line with your code" for s in found), \
            (gid, found)
    assert {ne.exercise_of_answer(g) for g in stubs} <= set(exercises)
