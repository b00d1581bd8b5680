"""Instructor tools run from an installed course (no checkout beside course_lib) say that they need the
course's git checkout and what is missing -- never a raw traceback or an empty result."""
import pytest

from course_lib import __main__ as cli
from course_lib.teaching import authoring, book, nbgrader_export, notebook_io
from course_lib.teaching.notebook_io import NeedsCheckout


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """COURSE_ROOT as pip leaves it: a site-packages folder with no notebooks/, solutions/, README.md."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(notebook_io, "COURSE_ROOT", site)
    return site


def test_checkout_names_what_is_missing(installed):
    with pytest.raises(NeedsCheckout, match=r"needs the course's git checkout \(no solutions beside course_lib in "
                                            r".*site-packages: this course is pip-installed\)"):
        notebook_io.checkout("solutions")
    with pytest.raises(NeedsCheckout, match=r"\(README.md is missing from .*elsewhere\); clone https://"):
        notebook_io.checkout("README.md", installed.parent / "elsewhere")
    (installed / "solutions").mkdir()
    assert notebook_io.checkout("solutions") == installed


def test_checkout_in_the_real_checkout_is_its_root():
    assert notebook_io.checkout("notebooks") == notebook_io.COURSE_ROOT
    assert (notebook_io.COURSE_ROOT / "pyproject.toml").is_file()


def test_tools_refuse_with_the_message(installed):
    for call in (lambda: notebook_io.notebook_pairs("notebooks"), lambda: authoring.build_exercises(),
                 lambda: nbgrader_export.chapters(), lambda: book.prepare()):
        with pytest.raises(NeedsCheckout, match="needs the course's git checkout"):
            call()


def test_a_given_folder_that_is_missing_stays_a_value_error(installed, tmp_path):
    with pytest.raises(ValueError, match="folder: expected a directory"):
        notebook_io.notebook_pairs("notebooks", tmp_path / "elsewhere")


@pytest.mark.parametrize("argv", [["grade"], ["exercises", "build"], ["notebooks", "--no-exercises"]])
def test_command_line_says_it_and_exits_2(installed, argv, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"python -m course_lib {argv[0]}: needs the course's git checkout" in err
    assert "Traceback" not in err


def test_book_command_says_it_and_exits_2(installed, capsys):
    assert book.main(["--prepare-only"]) == 2
    assert "book: needs the course's git checkout (no notebooks beside course_lib" in capsys.readouterr().err
