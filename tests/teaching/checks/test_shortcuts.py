"""Issue 29, item 8, chapters 07-11: the worksheets' own solutions pass their graders; a solution that calls the
course's own answer to the exercise (right numbers, structure skipped) is rejected by name."""
import re
import threading

import numpy as np
import pytest

import course_lib  # noqa: F401
from course_lib.algorithms import matrix_scan, mgrit, newton, scan
from course_lib.algorithms import linear_attention as la
from course_lib.models import gru, jacobians, lstm, mingru, softmax_rnn
from course_lib.parallel import inference
from course_lib.teaching.checks import chunked as chunked_checks
from course_lib.teaching.checks import lstm_layout as lstm_layout_checks
from course_lib.teaching.checks import mgrit as mgrit_checks
from course_lib.teaching.checks import newton as newton_checks
from course_lib.teaching.checks import parallel_inference as parallel_inference_checks
from course_lib.teaching.checks import scan as scan_checks
from course_lib.teaching.checks.core import ExerciseFailed
from course_lib.teaching.checks.shortcuts import calls_made, check_no_shortcut
from helpers import solution

SPEED_COSTS = {"7.3": dict(course_serial=6e-3, yours=1e-3), "8.5": dict(plain_loop=2e-3, yours=1e-3),
               "8.6": dict(course_scan=10e-3, yours=1e-3), "9.5": dict(per_gate=4e-3, yours=1e-3),
               "10.5": dict(serial=2.0, yours=1.0), "11.5": dict(full_newton=4e-3, yours=1e-3)}

#: (exercise, grader, worksheet, solution name, the course's own answer, its name in the message)
GRADERS = [
    ("7.1", parallel_inference_checks.check_wavefront_schedule, "07_parallel_inference", "wavefront_schedule",
     inference.wavefront_schedule, "inference.wavefront_schedule"),
    ("7.2", parallel_inference_checks.check_softmax, "07_parallel_inference", "softmax",
     lambda o: softmax_rnn.softmax(o), "softmax_rnn.softmax"),
    ("7.3", parallel_inference_checks.check_batched_predict, "07_parallel_inference", "batched_predict",
     lambda params, X: softmax_rnn.forward(params, X, method="batched"), "softmax_rnn.forward"),
    ("7.4", parallel_inference_checks.check_split_batch, "07_parallel_inference", "split_batch",
     inference.split_batch, "inference.split_batch"),
    ("7.5", parallel_inference_checks.check_gather_chunks, "07_parallel_inference", "gather_chunks",
     inference.gather_chunks, "inference.gather_chunks"),
    ("8.1", scan_checks.check_combine, "08_scan", "combine", scan.combine, "scan.combine"),
    ("8.3", scan_checks.check_backward, "08_scan", "recurrence_backward", scan.linear_recurrence_backward,
     "scan.linear_recurrence_backward"),
    ("8.6", chunked_checks.check_intra_chunk, "08_scan", "intra_chunk", la.intra_chunk, "linear_attention.intra_chunk"),
    ("9.1", lstm_layout_checks.check_fused_step, "09_lstm_layout", "fused_step",
     lambda x, h, c, params: lstm.lstm_step(params, x, h, c), "lstm.lstm_step"),
    ("9.5", lstm_layout_checks.check_forward_one_gemm, "09_lstm_layout", "forward_one_gemm",
     lambda params, X, h0, c0: lstm.lstm_forward(params, X, h0, c0, method="fused_pre")[0], "lstm.lstm_forward"),
    ("10.1", mgrit_checks.check_f_relax, "10_mgrit", "f_relax", mgrit.f_relaxation, "mgrit.f_relaxation"),
    ("10.2", mgrit_checks.check_c_relax, "10_mgrit", "c_relax", mgrit.c_relaxation, "mgrit.c_relaxation"),
    ("10.3", mgrit_checks.check_two_level_cycle, "10_mgrit", "two_level_cycle", mgrit.two_level_iteration,
     "mgrit.two_level_iteration"),
    ("10.4", mgrit_checks.check_implicit_gru_step, "10_mgrit", "implicit_gru_step",
     lambda params, x, h, gamma: gru.gru_cell(params, x @ params.W_ih.T + params.b_ih, h, implicit=True, gamma=gamma),
     "gru.gru_cell"),
    ("11.1", newton_checks.check_combine, "11_newton", "combine", matrix_scan.combine, "matrix_scan.combine"),
    ("11.2", newton_checks.check_newton_step, "11_newton", "newton_step",
     lambda f, jac, h0, X, H: newton.newton_step(f, jac, h0, X, H)[0], "newton.newton_step"),
    ("11.3", newton_checks.check_gru_jacobian, "11_newton", "gru_jacobian",
     lambda params, h, gi: jacobians.gru_jacobian(params, h, gi), "jacobians.gru_jacobian"),
    ("11.4", newton_checks.check_log_space_scan, "11_newton", "log_space_scan",
     lambda log_a, log_b: mingru.log_space_scan(log_a, log_b), "mingru.log_space_scan"),
    ("11.5", newton_checks.check_quasi_step, "11_newton", "quasi_step",
     lambda f, jac_diag, h0, X, H: newton.newton_step(f, None, h0, X, H, method="quasi", jac_diag=jac_diag)[0],
     "newton.newton_step"),
]
IDS = [g[0] for g in GRADERS]
#: graders whose structure checks already reject the course's answer with a more precise message
PASS_ONLY = [("8.2", scan_checks.check_chunked_scan, "08_scan", "chunked_scan"),
             ("10.5", mgrit_checks.check_f_relax_threads, "10_mgrit", "f_relaxation_threads")]


@pytest.mark.parametrize("ex, grader, notebook, name", [g[:4] for g in GRADERS] + PASS_ONLY,
                         ids=IDS + [g[0] for g in PASS_ONLY])
def test_the_worksheet_solution_passes_twice(ex, grader, notebook, name, fake_clock, capsys):
    fake_clock.cost(**SPEED_COSTS.get(ex, {}))
    mine = solution(notebook, name)
    for _ in range(2):
        assert str(grader(mine)).startswith(f"Exercise {ex} passed")


@pytest.mark.parametrize("ex, grader, notebook, name, answer, shown", GRADERS, ids=IDS)
def test_calling_the_course_answer_is_a_shortcut_named(ex, grader, notebook, name, answer, shown, fake_clock):
    fake_clock.cost(**SPEED_COSTS.get(ex, {}))
    with pytest.raises(ExerciseFailed, match=rf"Exercise {re.escape(ex)} failed:\n  your numbers are right, but "
                                             rf"your function calls {re.escape(shown)}, the course's own answer"):
        grader(answer)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_shortcuts_are_seen_in_threads_and_through_aliases_and_except_clauses():
    alias = scan.combine
    p = (np.ones(2), np.zeros(2))

    def in_a_thread(p, q):
        out = []
        t = threading.Thread(target=lambda: out.append(alias(p, q)))
        t.start()
        t.join()
        return out[0] if out else p

    def swallowing(p, q):
        try:
            return alias(p, q)
        except Exception:
            return p

    for fn in (in_a_thread, swallowing):
        assert calls_made(fn, {"scan.combine": scan.combine}, p, p) == ["scan.combine"]
        with pytest.raises(ExerciseFailed, match="your function calls scan.combine"):
            check_no_shortcut("8.1", fn, {"scan.combine": scan.combine}, p, p)
    assert calls_made(lambda p, q: (q[0] * p[0], q[0] * p[1] + q[1]), {"scan.combine": scan.combine}, p, p) == []


def test_a_profile_hook_in_place_is_restored():
    import sys

    def mine(frame, event, arg):
        return None

    sys.setprofile(mine)
    try:
        calls_made(lambda: scan.combine((np.ones(1),) * 2, (np.ones(1),) * 2), {"scan.combine": scan.combine})
        assert sys.getprofile() is mine
    finally:
        sys.setprofile(None)
