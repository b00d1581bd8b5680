"""What each worksheet exercise asks for, and where the course keeps its answer (teaching folder).

Every worksheet (``solutions/NN_*.py``) asks the student to write a function; its grader
(``course_lib.teaching.checks.<slug>``) compares it with a course function that does the same
job. That course function's source **is the answer**: a lecture must not print it, ``getsource``
it, or point at it as reading material before the student has written their own.
``tests/course/test_no_answers_in_lectures.py`` holds every lecture to this with
:func:`shown_answers`.

``TARGETS`` lists one :class:`Target` per exercise: the exercise number, the name the student
defines, and the course functions (``"module:qualname"`` under ``course_lib``) whose source
answers it. An exercise with no answer in the library (a measurement, a schedule, a prediction
the student makes) has ``answers=()``.

Example::

    from course_lib.teaching import answers
    answers.target("2.1").answers          # ('models.rnn:bptt_linear',)
    answers.shown_answers(printed_text)    # [('2.1', 'models.rnn:bptt_linear')] if it prints that body
"""
from __future__ import annotations

import importlib
import inspect
import re
import textwrap
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Target", "TARGETS", "target", "answer_names", "answer_object", "answer_lines",
           "code_lines", "shown_answers", "MIN_LINES", "SHORTEST"]

MIN_LINES = 5   # this many consecutive non-trivial lines of an answer, shown anywhere, give it away
SHORTEST = 3    # an answer of fewer lines is one the lecture's equations already state


@dataclass(frozen=True)
class Target:
    """Exercise ``exercise`` asks for ``name``; ``answers`` are the course functions that answer it."""

    exercise: str
    name: str
    answers: tuple[str, ...] = ()


TARGETS: tuple[Target, ...] = (
    Target("0.1", "gemm_intensity", ("core.counting:gemm_intensity",)),
    Target("1.1", "forward_step", ("models.rnn:forward_step",)),
    Target("1.2", "forward", ("models.rnn:forward",)),
    Target("1.3", "loss", ("models.rnn:loss",)),
    Target("1.4", "numerical_gradient", ("models.gradcheck:numerical_gradient",)),
    Target("2.1", "bptt_linear", ("models.rnn:bptt_linear",)),
    Target("2.2", "bptt_quadratic", ("models.rnn:bptt_quadratic",)),
    Target("2.3", "time_bptt"),
    Target("3.1", "batched_forward", ("models.rnn:forward",)),
    Target("3.2", "rnn_step_intensity", ("experiments.batching:rnn_step_intensity",)),
    Target("4.1", "tiled_matmul", ("algorithms.matmul:_tiled",)),
    Target("4.2", "parallel_matmul", ("algorithms.matmul:_tiled_parallel_simd",)),
    Target("5.1", "fused_hidden_delta", ("models.fast_rnn:_add_tanh_backward",
                                         "models.fast_rnn:_add_tanh_backward_row")),
    Target("5.2", "output_delta_and_loss", ("models.fast_rnn:_output_delta_loss",
                                            "models.fast_rnn:_output_delta_loss_row")),
    Target("6.1", "my_schedule"),
    Target("6.2", "fused_backward"),
    Target("7.1", "wavefront_schedule", ("parallel.inference:wavefront_schedule",)),
    Target("7.2", "softmax", ("models.softmax_rnn:softmax", "models.softmax_rnn:softmax_unchecked")),
    Target("7.3", "batched_predict", ("models.softmax_rnn:_states",)),
    Target("7.4", "split_batch", ("parallel.inference:split_batch",)),
    Target("7.5", "gather_chunks", ("parallel.inference:gather_chunks",)),
    Target("8.1", "combine", ("algorithms.scan:combine",)),
    Target("8.2", "chunked_scan", ("algorithms.scan_kernels:chunked", "algorithms.scan_kernels:_reduce_chunk")),
    Target("8.3", "recurrence_backward", ("algorithms.scan:linear_recurrence_backward",)),
    Target("8.4", "my_scan_kernel", ("algorithms.scan_cuda:blelloch_block_kernel",
                                    "algorithms.scan_cuda:block_exclusive_scan")),
    Target("8.5", "fast_scan", ("algorithms.scan_kernels:chunked_par",)),
    Target("8.6", "intra_chunk", ("algorithms.linear_attention:_intra_chunk",
                                  "algorithms.linear_attention:_decay_mask")),
    Target("9.1", "fused_step", ("models.lstm:lstm_step", "models.lstm:_forward_fused")),
    Target("9.2", "step_transposed", ("models.lstm:cell_transposed", "models.lstm:_forward_transposed")),
    Target("9.3", "pick_fastest", ("experiments.autotune:_decide",)),
    Target("9.4", "cached_pick", ("experiments.autotune:tune",)),
    Target("9.5", "forward_one_gemm", ("models.lstm:_forward_fused_pre",)),
    Target("10.1", "f_relax", ("algorithms.mgrit:f_relaxation", "algorithms.mgrit:MGRIT.f_relax_intervals")),
    Target("10.2", "c_relax", ("algorithms.mgrit:c_relaxation", "algorithms.mgrit:MGRIT.c_relax_points")),
    Target("10.3", "two_level_cycle", ("algorithms.mgrit:two_level_iteration",)),
    Target("10.4", "implicit_gru_step", ("models.gru:cell_unchecked",)),
    Target("10.5", "f_relaxation_threads", ("algorithms.mgrit:MGRIT.f_relax",)),
    Target("11.1", "combine", ("algorithms.matrix_scan:combine",)),
    Target("11.2", "newton_step", ("algorithms.newton:newton_step", "algorithms.newton:_direction")),
    Target("11.3", "gru_jacobian", ("models.jacobians:gru_jacobian_unchecked",)),
    Target("11.4", "log_space_scan", ("models.mingru:log_space_scan",)),
    Target("11.5", "quasi_step", ("algorithms.newton:newton_step", "algorithms.newton:_direction")),
    Target("11.6", "picard_step"),
    Target("11.7", "predict_kstar"),
    Target("12.1", "predict_a"),
    Target("12.2", "predict_b"),
    Target("12.3", "predict_c"),
)


def target(exercise: str) -> Target:
    """The :class:`Target` of ``exercise`` (``"8.4"``); KeyError naming the known ones otherwise."""
    for t in TARGETS:
        if t.exercise == exercise:
            return t
    raise KeyError(f"exercise {exercise!r}: no such exercise (known: {', '.join(t.exercise for t in TARGETS)})")


def answer_names() -> dict[str, tuple[str, ...]]:
    """``{"models.rnn:bptt_linear": ("2.1",), ...}``: every answer and the exercises it answers."""
    out: dict[str, tuple[str, ...]] = {}
    for t in TARGETS:
        for a in t.answers:
            out[a] = out.get(a, ()) + (t.exercise,)
    return out


def answer_object(answer: str):
    """The course object named ``answer`` (``"algorithms.mgrit:MGRIT.f_relax"``), unwrapped from
    numba's and functools' wrappers."""
    module, _, qualname = answer.partition(":")
    obj = importlib.import_module(f"course_lib.{module}")
    for part in qualname.split("."):
        obj = getattr(obj, part)
    obj = getattr(obj, "py_func", obj)          # numba @njit / @cuda.jit dispatchers
    return inspect.unwrap(obj)


def _normal(line: str) -> str:
    return " ".join(line.split())


def code_lines(text: str) -> list[str]:
    """Non-trivial lines of ``text``, whitespace-normalised: no blanks, comments, lone brackets,
    decorators, ``def`` lines or lines shorter than 8 characters (``return h``)."""
    out = []
    for raw in text.splitlines():
        line = _normal(raw)
        if len(line) < 8 or line.startswith(("#", "@", "def ", '"""', "'''")) or line.strip("()[]{},:") == "":
            continue
        out.append(line)
    return out


@lru_cache(maxsize=None)
def answer_lines(answer: str) -> tuple[str, ...]:
    """The non-trivial code lines of ``answer``'s body, docstring left out."""
    source = textwrap.dedent(inspect.getsource(answer_object(answer)))
    doc = re.compile(r'^\s*(?:[rRuU]?)("""|\'\'\')(.*?)\1', re.S | re.M)
    return tuple(code_lines(doc.sub("", source, count=1)))


def _windows(lines, n: int) -> set[tuple[str, ...]]:
    return {tuple(lines[i:i + n]) for i in range(len(lines) - n + 1)}


def shown_answers(text: str, min_lines: int = MIN_LINES) -> list[tuple[str, str]]:
    """``[(exercise, answer), ...]`` for every answer of which ``text`` shows ``min_lines``
    consecutive non-trivial lines (an answer shorter than that: all of its lines; one of fewer
    than ``SHORTEST`` lines is a formula the lecture may write, and is not looked for)."""
    shown = code_lines(text)
    found = []
    for t in TARGETS:
        for a in t.answers:
            body = answer_lines(a)
            n = min(min_lines, len(body))
            if n >= SHORTEST and _windows(body, n) & _windows(shown, n):
                found.append((t.exercise, a))
    return found
