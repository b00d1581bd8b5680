"""Plain helpers shared by the test files (``from helpers import ...``; pytest puts tests/ on sys.path,
since tests/ has no ``__init__.py``). Fixtures live in conftest.py."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SEEDS_DIR = REPO.parent / "shared" / "seeds"  # the seed texts, beside the repository where the course is developed


def in_ci(environ=None) -> bool:
    """Whether the tests run under CI (``CI=true``, as GitHub Actions, GitLab and most runners set it)."""
    env = os.environ if environ is None else environ
    return str(env.get("CI", "")).strip().lower() in ("true", "1", "yes")


def seed_texts_decision(seeds_dir: Path = SEEDS_DIR, environ=None) -> tuple[str, str]:
    """``("run" | "skip" | "fail", message)`` for tests that read the seed texts in ``seeds_dir``.

    They run where the texts are; outside CI a missing folder (or one without ``NNN_*.txt`` files) skips;
    under CI it fails, naming the missing path, so a CI run can never pass with the quote checks unseen."""
    if seeds_dir.is_dir() and any(seeds_dir.glob("[0-9][0-9][0-9]_*.txt")):
        return "run", ""
    msg = (f"the seed texts are missing: {seeds_dir} (expected files NNN_*.txt there, beside the repository); "
           "the claims registry is checked against them")
    return ("fail", msg + " -- under CI=true this is an error") if in_ci(environ) else ("skip", msg)


def require_seed_texts(seeds_dir: Path = SEEDS_DIR) -> Path:
    """Call at the start of a test that reads the seed texts: skip or fail as :func:`seed_texts_decision` says."""
    what, msg = seed_texts_decision(seeds_dir)
    if what == "fail":
        pytest.fail(msg, pytrace=False)
    if what == "skip":
        pytest.skip(msg)
    return seeds_dir


def raises_naming(exc_types, name: str, fn, *args, **kw) -> str:
    """Call ``fn(*args, **kw)``, expect ``exc_types``, and check the message names the argument ``name``
    (it starts with it, or says ``name:`` / ``name,`` as in "a, x: ..."). Returns the message."""
    with pytest.raises(exc_types) as info:
        fn(*args, **kw)
    msg = str(info.value)
    assert msg.startswith(name) or f"{name}:" in msg or f"{name}," in msg, msg
    return msg
