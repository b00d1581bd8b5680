"""Where the course lives on the web: the one place every launch, download and "report a problem" link is
made from (teaching layer).

The course's home is a git repository; its address is the ``Repository`` entry of ``[project.urls]`` in
``pyproject.toml``, repeated here as :data:`REPOSITORY` (``tests/course/test_links.py`` holds the two
together). A fork or a mirror changes both, and every link in the notebooks, the README and the site follows.

Every function returns a plain ``https://`` string; none of them touches the network.
"""
from __future__ import annotations

import os

__all__ = ["REPOSITORY", "BRANCH", "repository_parts", "file_url", "raw_url", "colab_url", "binder_url",
           "codespaces_url", "issues_url", "pip_source"]

#: the course's git repository (GitHub); the same as pyproject.toml's [project.urls] Repository
REPOSITORY = "https://github.com/parallel-rnns/parallel-rnns-course"
#: the branch the launch links open
BRANCH = "main"


def _relative(path) -> str:
    """``path`` as a ``/``-separated path inside the repository ("notebooks/08_scan.ipynb")."""
    path = os.fspath(path) if isinstance(path, os.PathLike) else path
    text = path.replace("\\", "/").strip() if isinstance(path, str) else ""
    if not text or text.startswith("/") or ".." in text.split("/"):
        raise ValueError(f"path: expected a path inside the repository such as 'notebooks/08_scan.ipynb', "
                         f"got {path!r}")
    return text


def repository_parts() -> tuple[str, str]:
    """``(owner, name)`` of :data:`REPOSITORY`."""
    owner, name = REPOSITORY.rstrip("/").split("/")[-2:]
    return owner, name


def file_url(path) -> str:
    """The page of ``path`` on the repository's web site."""
    return f"{REPOSITORY}/blob/{BRANCH}/{_relative(path)}"


def raw_url(path) -> str:
    """The file ``path`` itself (what a "Download .ipynb" link points to)."""
    owner, name = repository_parts()
    return f"https://raw.githubusercontent.com/{owner}/{name}/{BRANCH}/{_relative(path)}"


def colab_url(path) -> str:
    """Opens notebook ``path`` in Google Colab (its first cell installs the course into Colab's kernel)."""
    owner, name = repository_parts()
    return f"https://colab.research.google.com/github/{owner}/{name}/blob/{BRANCH}/{_relative(path)}"


def binder_url(path=None) -> str:
    """Opens the repository on mybinder.org (built from ``binder/``), at notebook ``path`` in JupyterLab."""
    owner, name = repository_parts()
    url = f"https://mybinder.org/v2/gh/{owner}/{name}/{BRANCH}"
    return url if path is None else f"{url}?urlpath=lab/tree/{_relative(path)}"


def codespaces_url() -> str:
    """Creates a GitHub Codespace from the repository's ``.devcontainer/``."""
    owner, name = repository_parts()
    return f"https://codespaces.new/{owner}/{name}?quickstart=1"


def issues_url() -> str:
    """Where a reader reports a problem (the repository's issue tracker)."""
    return f"{REPOSITORY}/issues/new"


def pip_source() -> str:
    """What ``pip install`` takes to install the course from its repository (Colab's first cell uses it)."""
    return f"parallel-rnns-course @ git+{REPOSITORY}.git@{BRANCH}"
