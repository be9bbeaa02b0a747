# shimlab: the two commands of the README are `make demo` and `make test`.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python

.PHONY: all setup demo test clean

all: test

# Idempotent and fast when everything is already there (see scripts/setup.sh).
setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/bin/shimlab demo

test: setup
	$(PY) -m shimlab.cases --check
	$(PY) -m pytest -q tests

# Removes build products, the venv and caches (the next `make setup` rebuilds the venv).
clean:
	rm -rf build $(VENV) .pytest_cache .hypothesis src/*.egg-info
	find . -path ./.venv -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
