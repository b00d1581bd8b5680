"""Every exercise of every worksheet is named by its own heading: an answer cell's exercise is the one its
``## Exercise N.k`` heading opens, never another exercise its statement mentions (10.5's statement names
Exercise 10.1: its stub, its ``answer:`` tag and its nbgrader grade id all said 10.1)."""
import nbformat
import pytest

from course_lib.teaching import authoring, nbgrader_export

SOLUTIONS = [ipynb for _, ipynb in authoring.notebook_pairs("solutions")]


def _headings(nb) -> list[str]:
    return [authoring.heading_exercise(authoring.normal_source(c)) for c in nb.cells
            if c.cell_type == "markdown" and authoring.heading_exercise(authoring.normal_source(c))]


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_answer_tags_stubs_and_grade_ids_follow_the_headings(solution):
    sol = authoring.read_ipynb(solution)
    headings = _headings(sol)
    sheet = nbformat.reads(authoring.exercise_texts(solution)[0], as_version=4)
    answers = [(authoring.answer_exercise(c), c.source) for c in sheet.cells if "solution" in authoring.cell_tags(c)]
    assert sorted({ex for ex, _ in answers}) == sorted(headings)
    for ex, src in answers:
        assert f'NotImplementedError("Exercise {ex}:' in src
    assert sorted(sheet.metadata["course_lib"]["exercises"]) == sorted(headings)
    _, points, _ = nbgrader_export.nbgrader_notebook(sol, solution.stem)
    assert sorted(points) == sorted(headings)
