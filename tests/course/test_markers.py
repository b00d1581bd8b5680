"""The per-chapter markers: computed from course_lib.CHAPTERS and the imports of each test file."""
from pathlib import Path

import course_lib
from helpers import REPO, chapters_of_file, chapters_of_modules, imported_names, scripts_run_by


def test_the_chapter_table_names_real_modules_and_every_chapter_has_a_notebook():
    assert sorted(course_lib.CHAPTERS) == sorted(course_lib.CHAPTER_TITLES)
    for ch, mods in course_lib.CHAPTERS.items():
        assert list((REPO / "notebooks").glob(f"{ch}_*.py")), f"chapter {ch} has no notebook"
        for m in mods:
            path = REPO / "course_lib" / Path(*m.split("."))
            assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), f"{ch}: no module {m}"


def test_chapters_come_from_what_is_imported():
    table = {"08": ("algorithms.scan",), "10": ("algorithms.mgrit", "models.gru")}
    src = ("import numpy as np\nfrom course_lib.algorithms import scan\n"
           "from course_lib.models.gru import forward as f\nfrom course_lib.algorithms.scanner import x\n")
    names = imported_names(src)
    assert chapters_of_modules(names, table) == {"08", "10"}
    assert chapters_of_modules(imported_names("from course_lib.algorithms.scanner import x\n"), table) == set()
    pkg = imported_names("from course_lib.teaching import plots\nplots.scan.crossover_map()\n")
    assert "course_lib.teaching.plots.scan" in pkg  # an attribute of an imported package counts


def test_real_files_get_the_chapters_they_test(tmp_path):
    tests = REPO / "tests"
    assert chapters_of_file(tests / "algorithms" / "test_scan.py") == {"08", "11"}  # its subnormal detectors use matrix_scan
    assert chapters_of_file(tests / "algorithms" / "test_mgrit.py") == {"10"}
    # one string: a bare "benchmarks" in this file would read as this file running a benchmark script
    bench_scan = REPO / "tests/benchmarks/test_scan.py"
    assert "08" in chapters_of_file(bench_scan)  # through the benchmark script it runs
    assert [p.name for p in scripts_run_by(bench_scan.read_text())] == ["scan.py"]
    assert chapters_of_file(REPO / "notebooks" / "08_scan.ipynb") == {"08"}
    assert chapters_of_file(tests / "course" / "test_layers.py") == set()


def test_slow_ids_name_collected_tests(request):
    """Every id in conftest.SLOW names a test that exists (a renamed test would silently lose its mark)."""
    import conftest

    root = Path(str(request.config.rootpath))
    for nodeid in conftest.SLOW:
        path, _, name = nodeid.partition("::")
        func = name.split("[")[0]
        assert (root / path).is_file(), nodeid
        assert f"def {func}(" in (root / path).read_text(), nodeid
