"""The course's web links come from one place (teaching/links.py), which agrees with pyproject.toml."""
import tomllib
from pathlib import Path

import pytest

from course_lib.teaching import links

ROOT = Path(__file__).resolve().parents[2]


def test_repository_is_the_one_pyproject_names():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["urls"]["Repository"] == links.REPOSITORY
    assert project["urls"]["Issues"].startswith(links.REPOSITORY)


def test_launch_links_point_at_the_notebook():
    path = "notebooks/08_scan.ipynb"
    owner, name = links.repository_parts()
    assert links.colab_url(path).endswith(f"/github/{owner}/{name}/blob/{links.BRANCH}/{path}")
    assert links.binder_url(path).endswith(f"?urlpath=lab/tree/{path}")
    assert links.raw_url(path).endswith(f"/{owner}/{name}/{links.BRANCH}/{path}")
    assert links.file_url(path) == f"{links.REPOSITORY}/blob/{links.BRANCH}/{path}"
    assert links.pip_source().startswith("parallel-rnns-course @ git+https://")


@pytest.mark.parametrize("bad", ["", "/etc/passwd", "../x.ipynb", None])
def test_bad_paths_are_refused_by_name(bad):
    with pytest.raises(ValueError, match="path"):
        links.colab_url(bad)
