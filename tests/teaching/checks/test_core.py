import dataclasses

import numpy as np
import pytest

from helpers import solution

from course_lib.teaching import checks
from course_lib.core import timing
from course_lib.teaching.checks import setup as setup_checks


def ref(X, W):
    return np.tanh(X @ W)


def make(rng, i):
    return dict(X=rng.standard_normal((4, 2, 3)), W=rng.standard_normal((3, 5)))


def test_pass_prints_one_stable_line(capsys):
    line = checks.check_function("9.1", ref, ref, make, n_cases=4)
    assert line == "Exercise 9.1 passed: 4/4 cases"
    assert capsys.readouterr().out == "Exercise 9.1 passed: 4/4 cases\n"


def test_failure_names_case_output_index_time_step_and_hint():
    def wrong(X, W):
        out = np.tanh(X @ W)
        out[2:] += 0.5  # wrong from time step 2 on
        return out

    with pytest.raises(checks.ExerciseFailed) as err:
        checks.check_function("9.2", wrong, ref, make, output_names=["H"], hint="look at step 2")
    msg = str(err.value)
    assert "Exercise 9.2 failed on case 1/5 (X (4, 2, 3), W (3, 5))" in msg
    assert "'H' differs from the reference: first at index (2, 0, 0) (time step 2)" in msg
    assert "max relative error" in msg and "Hint: look at step 2" in msg
    assert "20 of 40 entries differ" in msg


def test_shape_and_structure_errors_are_explained():
    with pytest.raises(checks.ExerciseFailed, match=r"'output' has shape \(4, 2\), expected \(4, 2, 5\)"):
        checks.check_function("9.3", lambda X, W: np.zeros((4, 2)), ref, make)
    with pytest.raises(checks.ExerciseFailed, match=r"expected a tuple of 2 outputs \(h, y\), got 1"):
        checks.check_function("9.3", lambda X, W: ref(X, W), lambda X, W: (ref(X, W), X), make,
                              output_names=["h", "y"])
    with pytest.raises(checks.ExerciseFailed, match="contains NaN or inf, first at index"):
        checks.check_function("9.3", lambda X, W: ref(X, W) * np.nan, ref, make)


def test_dataclass_fields_are_named():
    @dataclasses.dataclass
    class Grads:
        Wxh: np.ndarray
        Whh: np.ndarray

    def refg(A):
        return Grads(A, 2 * A)

    def wrongg(A):
        g = Grads(A.copy(), 2 * A)
        g.Whh = g.Whh.copy()
        g.Whh[3, 1] += 1
        return g

    with pytest.raises(checks.ExerciseFailed, match=r"'grads.Whh' differs .* first at index \(3, 1\)"):
        checks.check_function("9.4", wrongg, refg, [dict(A=np.ones((5, 2)))], output_names=["grads"])


def test_student_exceptions_are_reported_and_not_implemented_passes_through():
    def boom(X, W):
        raise KeyError("oops")

    with pytest.raises(checks.ExerciseFailed, match="your function raised KeyError"):
        checks.check_function("9.5", boom, ref, make)

    def todo(X, W):
        raise NotImplementedError("Exercise 9.5: replace this line with your code")

    with pytest.raises(NotImplementedError):
        checks.check_function("9.5", todo, ref, make)


def test_inputs_are_copied_so_in_place_students_cannot_corrupt_the_reference():
    def in_place(X, W):
        X *= 0
        return ref(X, W)

    with pytest.raises(checks.ExerciseFailed):
        checks.check_function("9.6", in_place, ref, make, n_cases=1)


def test_check_value_true_and_slope(capsys):
    assert checks.check_value("9.7", np.arange(3.0), np.arange(3.0)) == "Exercise 9.7 passed"
    with pytest.raises(checks.ExerciseFailed, match="got 0.5, expected 1"):
        checks.check_value("9.7", 0.5, 1.0)
    with pytest.raises(checks.ExerciseFailed, match="'answer': expected 3, got 4"):
        checks.check_value("9.7", 4, 3)
    assert checks.check_true("9.8", True, "never shown") == "Exercise 9.8 passed"
    with pytest.raises(checks.ExerciseFailed, match="the reason"):
        checks.check_true("9.8", False, "the reason")
    n = np.array([8, 16, 32, 64])
    assert checks.check_slope("9.9", n, 1e-6 * n**2, expected=2) == "Exercise 9.9 passed"
    with pytest.raises(checks.ExerciseFailed, match="fitted log-log slope of time vs size is 1.00, expected 2"):
        checks.check_slope("9.9", n, 1e-6 * n, expected=2)
    with pytest.raises(checks.ExerciseFailed, match="at least 3"):
        checks.check_slope("9.9", [1, 2], [1, 2], expected=1)


def test_bad_cases_argument():
    with pytest.raises(TypeError, match="cases: expected Case objects or dicts"):
        checks.check_function("9.0", ref, ref, [1, 2])
    with pytest.raises(ValueError, match="cases: expected at least one case"):
        checks.check_function("9.0", ref, ref, [])
    with pytest.raises(checks.ExerciseFailed, match="expected a function, got int"):
        checks.check_function("9.0", 3, ref, make)


def test_chapter00_check_accepts_the_reference_and_rejects_a_classic_mistake():
    assert setup_checks.check_intensity(solution("00_setup", "gemm_intensity")) == "Exercise 0.1 passed: 6/6 cases"
    with pytest.raises(checks.ExerciseFailed, match="calls timing.gemm_intensity, the course's own answer"):
        setup_checks.check_intensity(timing.gemm_intensity)
    with pytest.raises(checks.ExerciseFailed, match=r"(?s)Exercise 0.1 failed on case 1/6.*got 83.3333, expected 166.667.*Hint: FLOPs are 2"):
        setup_checks.check_intensity(lambda m, n, k, itemsize=4: m * n * k / (itemsize * (m * k + k * n + m * n)))


def test_exercise_failed_renders_only_its_message_in_ipython():
    from course_lib.teaching.checks.core import ExerciseFailed

    err = ExerciseFailed("Exercise 1.1 failed on case 2/5:\n  'h' differs at time step 3\n  Hint: look at h0")
    lines = err._render_traceback_()
    assert len(lines) == 3 and "ExerciseFailed" in lines[0] and "Exercise 1.1 failed" in lines[0]
    assert "Traceback" not in "".join(lines)


def test_placeholder_errors_show_one_line_in_a_kernel():
    """Run a failing check and an unsolved placeholder in a real kernel: one-line error outputs."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import numpy as np\nfrom course_lib.teaching import checks"),
        nbformat.v4.new_code_cell("def f(x):\n    raise NotImplementedError('Exercise 9.9: replace this line with your code')\nf(1)"),
        nbformat.v4.new_code_cell("checks.check_value('9.8', np.zeros(3), np.ones(3))"),
        nbformat.v4.new_code_cell("raise NotImplementedError('something else')"),
    ]
    nbclient.NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=120).execute()
    out = [c.outputs[0] for c in nb.cells[1:]]
    assert out[0]["ename"] == "NotImplementedError" and len(out[0]["traceback"]) == 1
    assert "Exercise 9.9" in out[0]["traceback"][0]
    assert out[1]["ename"] == "ExerciseFailed" and len(out[1]["traceback"]) <= 4
    assert not any("site-packages" in line or "course_lib/" in line for line in out[1]["traceback"])
    assert len(out[2]["traceback"]) > 1  # other errors keep their traceback


def test_explain_error_names_numbas_missing_scipy_and_nothing_else():
    from course_lib.teaching.checks.core import explain_error

    assert "SciPy is not installed" in explain_error(ImportError("scipy 0.16+ is required for linear algebra"))
    assert explain_error(ImportError("no module named foo")) == ""
    assert explain_error(ValueError("scipy is required")) == ""
