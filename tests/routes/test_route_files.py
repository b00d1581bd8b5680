"""The launch routes' files, checked without building anything (make test-routes builds them in a fresh venv):
the devcontainer and Binder set-ups parse, name the same Python, install with the pins, and the README's
launch links are the ones course_lib.teaching.links makes."""
import json
import os
import re
import subprocess
from pathlib import Path

from course_lib.teaching import links

ROOT = Path(__file__).resolve().parents[2]


def _devcontainer() -> dict:
    return json.loads((ROOT / ".devcontainer" / "devcontainer.json").read_text())


def test_the_devcontainer_runs_make_targets_that_exist():
    dc = _devcontainer()
    assert dc["postCreateCommand"] == "make install-lab kernel"
    dry = subprocess.run(["make", "-n", *dc["postCreateCommand"].split()[1:]], cwd=ROOT, capture_output=True,
                         text=True)
    assert dry.returncode == 0, dry.stderr
    assert 8888 in dc["forwardPorts"] and dc["portsAttributes"]["8888"]["label"]
    assert "make lab" in dc["postAttachCommand"]


def test_binder_and_the_devcontainer_use_the_same_python():
    image_python = re.search(r":(?:\d+-)?(3\.\d+)", _devcontainer()["image"]).group(1)
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == f"python-{image_python}"


def test_binder_installs_the_course_with_the_pins():
    lines = [ln.strip() for ln in (ROOT / "binder" / "requirements.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines == ["-c ../constraints.txt", "-e ."]
    # pip reads a nested -c relative to the requirements file: binder/../constraints.txt
    assert (ROOT / "binder" / lines[0].split()[1]).resolve() == (ROOT / "constraints.txt").resolve()


def test_post_build_is_an_executable_bash_script_that_parses():
    post = ROOT / "binder" / "postBuild"
    assert os.access(post, os.X_OK) and post.read_text().startswith("#!/bin/bash")
    assert subprocess.run(["bash", "-n", str(post)]).returncode == 0
    text = post.read_text()
    assert 'ipykernel install --sys-prefix --name python3 --display-name "Python 3"' in text
    assert "jupyter_server_config.json" in text


def test_the_readme_launch_links_are_those_of_links_py():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Run it without installing", 1)[1].split("\n## ", 1)[0]
    found = set(re.findall(r"\]\((https?://[^)\s]+)\)", section))
    wanted = {links.colab_url("notebooks/00_setup.ipynb"), links.binder_url("notebooks/00_setup.ipynb"),
              links.codespaces_url()}
    assert found == wanted, f"README has {sorted(found)}, links.py makes {sorted(wanted)}"
