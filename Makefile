# Two commands, from a fresh clone with only python3 (>= 3.10) and make:
#   make demo   create/refresh .venv, install the core, run scripts/cond_vs_depth.py on digits
#   make test   create/refresh .venv, install everything (nt, tfds, test), run the whole suite
#   make docs   install the docs extra, build the HTML site into site/ (warnings are errors)
# CI (.ci/run) also runs test-newest-jax (in a scratch clone) and wheel-check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install -q --disable-pip-version-check
NEWEST := .venv-newest-jax
# The suite runs on TEST_WORKERS pytest-xdist processes (the test extra), whole files to a worker
# (--dist loadfile: a module's fixtures and jit caches are built once), each with BLAS at one
# thread (two BLAS threads per worker on two cores wait at barriers for a descheduled
# partner; the tests that need several threads ask for them). CI's machine has 2 cores.
# `make test TEST_WORKERS=0` runs it in one process. Measured on this 2-core machine with
# other jobs running (load 2.3-4.1): make test's suite 742 s on 2 workers (1279 s in one
# process on one core), after ~140 s installing .[dev] into a new venv; test-newest-jax's
# suite 350 s on 2 workers (708 s in one process before), after ~60 s installing.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile

.PHONY: demo test test-newest-jax docs wheel-check

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

demo: $(BIN)/python
	$(PIP) -c constraints.txt -e .
	$(BIN)/python scripts/cond_vs_depth.py --overwrite

test: $(BIN)/python
	$(PIP) -c constraints.txt -e '.[dev]'
	$(BIN)/lint-imports
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest $(XDIST)

# The core (everything but the nt and tfds extras) on the newest jax release: tests that
# need neural-tangents or tensorflow-datasets skip here, and so do the `slow` ones (the
# extended-precision references and planted-error sweeps, which test NumPy/mpmath maths that
# `make test` has already run, not the jax API): about 7 minutes in all on 2 workers.
test-newest-jax:
	test -x $(NEWEST)/bin/python || $(PYTHON) -m venv $(NEWEST)
	$(NEWEST)/bin/python -m pip install -q --disable-pip-version-check --upgrade -e '.[test]' jax jaxlib
	$(NEWEST)/bin/python -c "import jax; print('newest-jax venv: jax', jax.__version__)"
	OPENBLAS_NUM_THREADS=1 $(NEWEST)/bin/python -m pytest $(XDIST) -p no:cacheprovider -m "not slow"

# The documentation site (mkdocs.yml): README, docs/, the notebooks (as stored, with their outputs;
# tests/test_notebooks.py re-executes them), typeset math (MathJax from the docs extra) and the API
# reference of every name in ntkcond.__all__, strictly; then a check that none is missing.
docs: $(BIN)/python
	$(PIP) -c constraints.txt -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/python -m mkdocs build --strict --clean --site-dir site
	$(BIN)/python docs/_mkdocs/check_site.py site
# The wheel as a user gets it: built from the checkout without a warning (no tests in it, its
# py.typed marker), installed alone
# (--no-deps: the venv provides jax, numpy, ...) into a scratch folder, and run from there,
# outside the repository, as `python -m ntkcond` and as the `ntkcond` console script.
# (build/ is emptied first: setuptools would ship stale modules left there by an older build.)
wheel-check: $(BIN)/python
	$(PIP) -c constraints.txt -e . 'setuptools>=77' wheel
	@set -e; tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	py="$(abspath $(BIN))/python"; \
	rm -rf build; $$py -m pip wheel -v --no-deps --no-build-isolation -w "$$tmp/dist" . > "$$tmp/build.log" 2>&1 \
	  || { tail -30 "$$tmp/build.log"; exit 1; }; \
	if grep -E 'Warning|!!' "$$tmp/build.log" | grep -v "Location 'file:" ; then echo "wheel-check: the build warns (above)"; exit 1; fi; \
	$$py -m zipfile -l "$$tmp"/dist/ntkcond-*.whl > "$$tmp/files.txt"; \
	if grep -Eq '(^|/)(tests/|test_)' "$$tmp/files.txt"; then echo "wheel-check: the wheel ships tests"; exit 1; fi; \
	grep -q 'ntkcond/py.typed' "$$tmp/files.txt" || { echo "wheel-check: the wheel lacks py.typed"; exit 1; }; \
	$$py -m pip install -q --no-deps --target "$$tmp/site" "$$tmp"/dist/ntkcond-*.whl; \
	cd "$$tmp"; export PYTHONPATH="$$tmp/site" OPENBLAS_NUM_THREADS=1; \
	$$py -c 'import ntkcond, sys; assert ntkcond.__file__.startswith(sys.argv[1]), ntkcond.__file__' "$$tmp/site"; \
	$$py -m ntkcond --help > help.txt; grep -q 'cond-vs-depth' help.txt; \
	$$py -m ntkcond cond-vs-depth --help > help.txt; grep -q -- '--max-batches' help.txt; \
	"$$tmp/site/bin/ntkcond" --version; \
	"$$tmp/site/bin/ntkcond" cond-vs-depth --depths 0,1 --batch 64 --max-batches 1 --no-progress --out "$$tmp/run"; \
	test -s "$$tmp/run/records.jsonl" && test -s "$$tmp/run/config.json"; \
	echo "wheel-check: $$(basename "$$tmp"/dist/*.whl) installed alone, run from $$tmp: OK"
