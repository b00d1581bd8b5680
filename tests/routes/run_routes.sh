#!/usr/bin/env bash
# The launch routes, tested as far as a machine without Docker or GitHub can (`make test-routes`; .ci/run).
# Each route's own commands run exactly as written in its file, in a fresh copy of the working tree, with a fresh
# `python3 -m venv` standing in for the image's Python:
#   Codespaces / VS Code: .devcontainer/devcontainer.json's postCreateCommand (make install-lab kernel)
#   Binder (repo2docker):  pip install -r binder/requirements.txt, then binder/postBuild
# then tests/routes/check_env.py imports the course, numba, halide and ipywidgets there, finds the kernel spec
# inside that environment and starts-up (without serving) the Jupyter server with the settings the route uses.
# Not tested here: the images themselves (mcr.microsoft.com/devcontainers/python, repo2docker's), the port
# forwarding, and Colab. pip's cache is reused (repo2docker itself passes --no-cache-dir).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${ROUTES_PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/course-routes.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
say() { echo "[routes] $*"; }

copy_tree() {  # the working tree as a student's clone would have it: tracked and new files, nothing ignored
  mkdir -p "$1"
  (cd "$ROOT" && git ls-files -co --exclude-standard -z | xargs -0 tar cf - --no-recursion --ignore-failed-read 2>/dev/null) \
    | tar xf - -C "$1"
}

# --- the route files parse, and name the same Python ---------------------------------------------------------
mapfile -t FACTS < <("$PY" - "$ROOT" <<'PY'
import json, re, sys
from pathlib import Path
root = Path(sys.argv[1])
dc = json.loads((root / ".devcontainer/devcontainer.json").read_text())
image_py = re.search(r":(?:\d+-)?(3\.\d+)", dc["image"]).group(1)
runtime = (root / "binder/runtime.txt").read_text().strip()
assert runtime == f"python-{image_py}", f"binder/runtime.txt says {runtime}, the devcontainer image has Python {image_py}"
print(image_py)
print(dc["postCreateCommand"])
PY
)
IMAGE_PY=${FACTS[0]}
POST_CREATE=${FACTS[1]}
HERE_PY=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
say "devcontainer.json and binder/ parse; both use Python $IMAGE_PY; this machine's $PY is $HERE_PY"
[ "$HERE_PY" = "$IMAGE_PY" ] || say "WARNING: testing with Python $HERE_PY, the images have $IMAGE_PY"

# --- Codespaces / VS Code devcontainer ------------------------------------------------------------------------
copy_tree "$WORK/devcontainer"
say "devcontainer: running its postCreateCommand: $POST_CREATE"
start=$(date +%s)
(cd "$WORK/devcontainer" && PYTHON="$PY" bash -c "$POST_CREATE")
say "devcontainer: first start took $(( $(date +%s) - start )) s"
config=$(cd "$WORK/devcontainer" && make -n lab | grep -o -- '--config=[^ ]*' | cut -d= -f2- | tr -d '"')
[ -f "$config" ] || { say "devcontainer: make lab passes no server config file ($config)"; exit 1; }
(cd "$WORK" && "$WORK/devcontainer/.venv/bin/python" "$ROOT/tests/routes/check_env.py" devcontainer --config "$config")

# --- Binder (repo2docker) -------------------------------------------------------------------------------------
copy_tree "$WORK/binder"
"$PY" -m venv "$WORK/binder-env"
say "binder: pip install -r binder/requirements.txt, then binder/postBuild"
start=$(date +%s)
(cd "$WORK/binder" && export PATH="$WORK/binder-env/bin:$PATH" NB_PYTHON_PREFIX="$WORK/binder-env" &&
  { python -m pip install --disable-pip-version-check -q -r binder/requirements.txt >"$WORK/binder-pip.log" 2>&1 ||
    { grep -v "is neither a file nor a directory" "$WORK/binder-pip.log"; exit 1; }; } &&
  ./binder/postBuild)
say "binder: first start took $(( $(date +%s) - start )) s"
(cd "$WORK" && "$WORK/binder-env/bin/python" "$ROOT/tests/routes/check_env.py" binder)
say "all routes passed"
