# The two entry points a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test docs bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

demo: $(PY)
	$(PY) -m pip install --quiet -e .
	$(PY) -m rbdiff demo

# Compile the public entry points first (all cores; fills Numba's on-disk cache), then
# run the tests on all cores (pytest-xdist; kernels/jit.py makes the shared cache safe),
# a file to a worker: a file's tests compile the same test-only specialisations (float32,
# complex128, fext), which two workers running them at once would both compile.
# (the contact functions' parallel entries are left out: the two tests that force some
# (impulse dynamics, the contractions) compile theirs there, less than the job costs; a
# user's `rbdiff compile` includes them)
test: $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m rbdiff compile --no-progress --skip 'contacts[parallel]'
	$(PY) -m pytest -n auto --dist loadfile

# the documentation site (mkdocs.yml, docs/) into site/, which opens from disk:
# site/index.html (strict: a broken link or reference fails the build)
docs: $(PY)
	$(PY) -m pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

bench: $(PY)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) -m rbdiff bench-core

clean:
	rm -rf $(VENV) build site *.egg-info
	find . -name __pycache__ -prune -exec rm -rf {} +
