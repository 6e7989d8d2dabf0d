# Two commands, from a fresh clone with only python3 (>= 3.10) and make:
#   make demo   create/refresh .venv, install the core, run scripts/cond_vs_depth.py on digits
#   make test   create/refresh .venv, install everything (nt, tfds, test), run the whole suite
#   make docs   install the docs extra, build the HTML site into site/ (warnings are errors)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install -q --disable-pip-version-check
NEWEST := .venv-newest-jax

.PHONY: demo test test-newest-jax docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

demo: $(BIN)/python
	$(PIP) -c constraints.txt -e .
	$(BIN)/python scripts/cond_vs_depth.py --overwrite

test: $(BIN)/python
	$(PIP) -c constraints.txt -e '.[dev]'
	$(BIN)/lint-imports
	$(BIN)/python -m pytest

# The core (everything but the nt and tfds extras) on the newest jax release: tests that
# need neural-tangents or tensorflow-datasets skip here.
test-newest-jax:
	test -x $(NEWEST)/bin/python || $(PYTHON) -m venv $(NEWEST)
	$(NEWEST)/bin/python -m pip install -q --disable-pip-version-check --upgrade -e '.[test]' jax jaxlib
	$(NEWEST)/bin/python -c "import jax; print('newest-jax venv: jax', jax.__version__)"
	$(NEWEST)/bin/python -m pytest -p no:cacheprovider

# The documentation site (mkdocs.yml): README, docs/, the notebooks (not executed) and the API
# reference of every name in ntkcond.__all__, strictly; then a check that none is missing.
docs: $(BIN)/python
	$(PIP) -c constraints.txt -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/python -m mkdocs build --strict --clean --site-dir site
	$(BIN)/python docs/_mkdocs/check_site.py site
