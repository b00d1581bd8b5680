"""environment.yml (conda-forge) must describe the same environment as pyproject.toml.

No conda tool is reachable here, so this validates offline: YAML shape, every spec parses as a
conda MatchSpec (py-rattler), and the package set equals pyproject's dependencies + extras."""
import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONDA_ONLY = {"python", "pip"}
EXTRAS_IN_ENV = ("mpi", "dev")
CONDA_NAME = {"halide": "halide-python"}  # PyPI name -> conda-forge name where they differ


def _pep508_name(req: str) -> str:
    name = re.split(r"[\s\[<>=!~;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")
    return CONDA_NAME.get(name, name)


@pytest.fixture(scope="module")
def env():
    return yaml.safe_load((ROOT / "environment.yml").read_text())


@pytest.fixture(scope="module")
def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_yaml_shape(env):
    assert set(env) == {"name", "channels", "dependencies"}
    assert env["channels"] == ["conda-forge"]
    assert isinstance(env["name"], str) and env["name"]
    deps = env["dependencies"]
    strings = [d for d in deps if isinstance(d, str)]
    dicts = [d for d in deps if isinstance(d, dict)]
    assert len(strings) + len(dicts) == len(deps)
    assert dicts == [{"pip": ["-e ."]}], "the course itself is installed editable through pip"


def test_every_spec_parses(env):
    from rattler import MatchSpec

    for spec in env["dependencies"]:
        if isinstance(spec, str):
            ms = MatchSpec(spec)
            assert ms.name.as_package_name().normalized == spec.split()[0]


def test_package_set_equals_pyproject(env, pyproject):
    from rattler import MatchSpec

    conda = {MatchSpec(s).name.as_package_name().normalized for s in env["dependencies"] if isinstance(s, str)}
    conda -= CONDA_ONLY
    project = pyproject["project"]
    wanted = {_pep508_name(r) for r in project["dependencies"]}
    for extra in EXTRAS_IN_ENV:
        wanted |= {_pep508_name(r) for r in project["optional-dependencies"][extra]}
    assert conda == wanted, f"only in environment.yml: {sorted(conda - wanted)}; only in pyproject: {sorted(wanted - conda)}"


def test_minimum_versions_agree(env, pyproject):
    conda = {}
    for s in env["dependencies"]:
        if isinstance(s, str) and ">=" in s:
            name, version = s.split(">=")
            conda[name.strip()] = version.strip()
    project = pyproject["project"]
    reqs = list(project["dependencies"]) + [r for e in EXTRAS_IN_ENV for r in project["optional-dependencies"][e]]
    for r in reqs:
        m = re.match(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][^,;\s]*)", r)
        if m:
            name = m.group(1).lower().replace("_", "-")
            name = CONDA_NAME.get(name, name)
            assert conda.get(name) == m.group(2), f"{name}: pyproject >={m.group(2)}, environment.yml >={conda.get(name)}"
