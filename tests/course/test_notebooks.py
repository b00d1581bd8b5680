"""The committed notebooks: pairs in sync, outputs present, exercises == build(solutions),
and every student worksheet runs top to bottom with no error but NotImplementedError."""
import re

import pytest

from course_lib.teaching import authoring

ROOT = authoring.COURSE_ROOT
PAIRS = [(folder, py, ipynb) for folder in authoring.FOLDERS for py, ipynb in authoring.notebook_pairs(folder)]
SOLUTIONS = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))
IDS = [f"{folder}/{py.stem}" for folder, py, _ in PAIRS]


def test_course_has_notebooks_and_worksheets():
    names = {py.stem for folder, py, _ in PAIRS if folder == "notebooks"}
    assert "00_setup" in names
    assert SOLUTIONS and EXERCISES


@pytest.mark.parametrize("folder, py, ipynb", PAIRS, ids=IDS)
def test_pair_in_sync_with_outputs(folder, py, ipynb):
    assert re.fullmatch(r"\d\d_[a-z0-9_]+\.py", py.name), f"{py.name}: expected NN_slug.py"
    header = py.read_text().split("# ---", 2)[1]
    assert "name: python3" in header and "formats: ipynb,py:percent" in header, (
        f"{py}: the jupytext header must name the python3 kernel and pair with ipynb")
    problems = authoring.pair_problems(py, ipynb)
    assert not problems, f"{folder}/{py.name} and its .ipynb are out of sync: {problems}; " \
                         "run: python -m course_lib notebooks --execute --only " + py.stem[:3]
    nb = authoring.read_ipynb(ipynb)
    assert authoring.has_outputs(nb), f"{ipynb} has no outputs: execute it and commit the outputs"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert not authoring.error_outputs(nb), f"{ipynb} has error outputs: {authoring.error_outputs(nb)}"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_exercise_pair_equals_build_of_solution(solution):
    target = authoring.exercise_path(solution)
    for path, expected in zip((target, target.with_suffix(".py")), authoring.exercise_texts(solution)):
        assert path.exists(), f"{path} is missing: python -m course_lib exercises build"
        assert path.read_text(encoding="utf-8") == expected, (
            f"{path.name} differs from build(solutions/{solution.name}): run python -m course_lib exercises build")
    assert not authoring.pair_problems(target.with_suffix(".py"), target)


def test_no_exercise_without_a_solution():
    assert {p.name for p in EXERCISES} == {p.name for p in SOLUTIONS}
    pys = {p.stem for p in (ROOT / "exercises").glob("*.py")}
    assert pys == {p.stem for p in SOLUTIONS}, "every worksheet is an .ipynb + .py pair, and nothing else"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_every_exercise_has_a_passing_check_in_the_solution_outputs(solution):
    nb = authoring.read_ipynb(solution)
    exercise_ids = set()
    for cell in authoring.build_exercise(nb, solution.name).cells:
        exercise_ids |= set(re.findall(r'NotImplementedError\("Exercise (\d+\.\d+[a-z]?)', cell.source))
    assert exercise_ids, f"{solution.name} has no exercises"
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "stream")
    passed = set(re.findall(r"^Exercise (\S+) passed", text, flags=re.M))
    assert exercise_ids <= passed, f"exercises without a passing check in {solution.name}: {sorted(exercise_ids - passed)}"


@pytest.mark.parametrize("exercise", EXERCISES, ids=[p.stem for p in EXERCISES])
def test_unsolved_worksheet_runs_with_only_not_implemented_errors(exercise):
    nb = authoring.read_ipynb(exercise)
    executed = authoring.execute_notebook(nb, exercise.parent, timeout=600)
    errors = authoring.error_outputs(executed)
    assert errors, f"{exercise.name}: expected NotImplementedError from the unsolved exercises"
    others = [(i, e, v) for i, e, v in errors if e != "NotImplementedError"]
    assert not others, f"{exercise.name}: errors other than NotImplementedError: {others}"
