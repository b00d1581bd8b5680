# Parallel RNNs, hands-on -- two commands do all the set-up:
#   make lab    create .venv, install the course, register the kernel, start JupyterLab on 127.0.0.1
#   make test   install what the tests need (+ Debian's chromium), build the site, and run the whole suite (the site in Chromium too)
#   make book   the course as a static website in build/book/html (Jupyter Book 2, stored outputs)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
PORT ?= 8888
# Every install takes the known-good versions in constraints.txt (what CI last passed with; refresh it with
# `python -m course_lib constraints --write`). LATEST=1 (e.g. `make lab LATEST=1`) ignores them and upgrades
# to the newest releases pyproject.toml allows.
LATEST ?=
PIN := $(if $(LATEST),--upgrade --upgrade-strategy eager,-c constraints.txt)
FORCE_IF_LATEST := $(if $(LATEST),FORCE)
# Timing sweeps shrink under this budget; deterministic outputs never depend on it.
TEST_BUDGET ?= small
PYTEST_ARGS ?=
# two pytest workers; --dist loadfile keeps each notebook (one nbval kernel) on one worker
PYTEST_WORKERS ?= 2
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: lab test test-browser install-lab install-test kernel chromium notebooks exercises grade bench report \
        clean book test-book install-book node lint test-one-core test-routes FORCE
FORCE:

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.lab-installed: pyproject.toml constraints.txt $(FORCE_IF_LATEST) | $(BIN)/python
	@echo "[1/3] installing the course and JupyterLab into $(VENV) -- the first run downloads about 150 MB"
	@echo "      and takes 2-4 minutes (pip prints each package as it goes); later runs skip this step."
	@$(PIP) install --progress-bar on $(PIN) -e . 2>&1 | grep --line-buffered -v -e "is neither a file nor a directory" -e "^Requirement already satisfied" || true
	@$(BIN)/python -c "import course_lib, jupyterlab, ipywidgets, numba"
	@echo "[1/3] installed."
	@touch $@

$(VENV)/.test-installed: pyproject.toml constraints.txt $(FORCE_IF_LATEST) | $(BIN)/python
	$(PIP) install --quiet $(PIN) -e '.[dev,mpi]' 2>&1 | grep -v "is neither a file nor a directory" || true
	$(BIN)/python -c "import course_lib, nbval, playwright, rattler, pytest, xdist, mpi4py, nbgrader"
	@# nbgrader (for the export test) ships a JupyterLab extension; students' labs do not have it
	-$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1
	touch $(VENV)/.lab-installed $@

# The site: jupyter-book from PyPI (the 'book' extra), Node.js >= 18 for its mystmd (Debian's nodejs +
# npm where missing), and the site template's one web library (KaTeX's style sheet) from npm.
BOOK_TEMPLATE := book/template
$(VENV)/.book-installed: pyproject.toml constraints.txt $(FORCE_IF_LATEST) | $(VENV)/.lab-installed
	$(PIP) install --quiet $(PIN) -e '.[book]' 2>&1 | grep -v "is neither a file nor a directory" || true
	$(BIN)/jupyter-book --version >/dev/null
	touch $@

$(BOOK_TEMPLATE)/node_modules/.installed: $(BOOK_TEMPLATE)/package-lock.json | node
	cd $(BOOK_TEMPLATE) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

install-lab: $(VENV)/.lab-installed
install-test: $(VENV)/.test-installed

# The display name is the one the notebooks store: JupyterLab writes the running kernel's name into
# every notebook it saves (tests/test_lab_save.py holds the two together).
kernel: $(VENV)/.lab-installed
	@$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	@echo "[2/3] registered kernel 'python3' (Python 3) in $(VENV)"

lab: install-lab kernel
	@echo ""
	@echo "[3/3] starting JupyterLab (a few seconds) on http://127.0.0.1:$(PORT)/lab -- open the URL with the token printed below."
	@echo "Start with notebooks/00_setup.ipynb. Stop with Ctrl-C."
	@echo ""
	$(BIN)/jupyter lab --ip=127.0.0.1 --port=$(PORT) --no-browser --ServerApp.root_dir="$(CURDIR)" --config="$(CURDIR)/jupyter_server_config.json" $(ROOT_FLAG)

chromium:
	@if [ -x /usr/bin/chromium ]; then echo "chromium: $$(/usr/bin/chromium --version 2>/dev/null)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "installing Debian's chromium for the browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "chromium is missing and apt-get is not usable here: the browser test will be skipped"; fi

node:
	@need_node() { command -v node >/dev/null 2>&1 && node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : 1)'; }; \
	if ! need_node || ! command -v npm >/dev/null 2>&1; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing the system's Node.js and npm for the course site (apt-get install nodejs npm)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	  fi; \
	fi; \
	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  echo "make book needs Node.js >= 18 and npm: install them with your system's package manager" \
	       "(Debian/Ubuntu as root: apt-get install nodejs npm; make book does that when run as root)"; exit 1; \
	elif ! need_node; then \
	  echo "make book needs Node.js >= 18 (Jupyter Book 2's mystmd); this system has $$(node --version)." \
	       "Install a newer nodejs from your system's packages (Debian 12, Ubuntu 24.04 and later ship 18+)"; exit 1; \
	else echo "node: $$(node --version), npm $$(npm --version)"; fi

install-book: $(VENV)/.book-installed $(BOOK_TEMPLATE)/node_modules/.installed

# renders the notebooks' stored outputs (nothing executed, nothing downloaded) into build/book/html
book: install-book
	$(BIN)/python -m course_lib.teaching.book

# the site in headless Chromium: every page, image and link, math, no raw widget text, no solutions
test-book: book install-test chromium
	BOOK_REQUIRED=1 $(BIN)/python -m pytest -ra -p no:xdist tests/browser/test_book.py

lint: install-test
	$(BIN)/ruff check .

# COURSE_NOT_JUDGED=continue: a reference solution whose speed the other worker's load leaves undecided prints
# "speed not judged" and runs on (teaching/checks/speed.py); a miss still fails. Students never have it.
test: lint install-test kernel chromium book
	COURSE_BUDGET=$(TEST_BUDGET) COURSE_NOT_JUDGED=continue BOOK_REQUIRED=1 $(BIN)/python -m pytest -ra --durations=20 -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS) \
	  tests notebooks solutions \
	  --nbval --nbval-current-env --nbval-cell-timeout=600 --nbval-sanitize-with tests/nbval_sanitize.cfg

# Every notebook and worksheet once more on ONE core (taskset -c 0, one numba/BLAS/OpenMP thread), as a
# student with one core runs them: nothing compared by nbval may depend on the core count. .ci/run calls it after
# `make test`; about 2.5 minutes on a quiet machine.
test-one-core: install-test kernel
	@command -v taskset >/dev/null 2>&1 || { echo "taskset (util-linux) is missing: cannot pin to one core"; exit 1; }
	COURSE_BUDGET=$(TEST_BUDGET) COURSE_NOT_JUDGED=continue NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	  taskset -c 0 $(BIN)/python -m pytest -ra -p no:xdist notebooks solutions \
	  --nbval --nbval-current-env --nbval-cell-timeout=600 --nbval-sanitize-with tests/nbval_sanitize.cfg

# The browser walk alone (tests/browser/test_panels.py, also part of `make test`): every lecture notebook
# Run All in a real JupyterLab, every control of every slider panel moved once and its redrawn plot
# decoded, then `git status` of the served copy checked. About 10 minutes on 2 cores.
test-browser: install-test kernel chromium
	COURSE_BUDGET=$(TEST_BUDGET) $(BIN)/python -m pytest -ra --durations=20 $(PYTEST_ARGS) tests/browser/test_panels.py

notebooks: install-test kernel
	$(BIN)/python -m course_lib notebooks --execute

exercises: install-lab
	$(BIN)/python -m course_lib exercises build

grade: install-test kernel
	$(BIN)/python -m course_lib grade --exercises

report: install-lab
	$(BIN)/python -m course_lib report

bench: install-test
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# The launch routes as far as this machine can test them (no Docker, no GitHub): in a fresh venv, the exact
# commands of .devcontainer/devcontainer.json's postCreateCommand and of binder/ (requirements.txt + postBuild),
# then imports, kernel spec and server config checked. .ci/run calls it after test-book; ~3-6 minutes.
test-routes:
	bash tests/routes/run_routes.sh

# The optional GEMM providers (oneMKL, BLIS: `pip install -e '.[fast]'`, ~230 MB) and the tests that use them;
# the default install never needs them (their tests skip with the reason there). .ci/run calls it once.
.PHONY: test-fast
test-fast: install-test
	$(BIN)/python -m pip install $(PIN) -e '.[fast]'
	$(BIN)/python -m pytest -ra -p no:xdist -m "not slow" tests/algorithms/test_gemm.py tests/models/test_lstm_providers.py \
	  tests/experiments/test_autotune.py tests/experiments/test_gemm_providers.py

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts build/book $(BOOK_TEMPLATE)/node_modules

# The course as students outside the checkout get it (Colab, Binder, a JupyterHub): a wheel of this checkout (not
# editable) in a fresh venv in a temporary folder, every notebooks/, solutions/ and exercises/ .ipynb copied next
# to it and run there (tests/installed/run_installed.py). About 3 minutes of pip, then the notebooks.
.PHONY: test-installed
test-installed: | $(BIN)/python
	$(BIN)/python tests/installed/run_installed.py
