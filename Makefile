# The two entry points a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

demo: $(PY)
	$(PY) -m pip install --quiet -e .
	$(PY) -m rbdiff demo

test: $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m pytest

bench: $(PY)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) -m rbdiff bench-core

clean:
	rm -rf $(VENV) build *.egg-info
	find . -name __pycache__ -prune -exec rm -rf {} +
