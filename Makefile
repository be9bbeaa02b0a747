# shimlab: the two commands of the README are `make demo` and `make test`.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python

.PHONY: all setup demo test test-all notebook test-sanitize fuzz clean

all: test

# pytest workers (pytest-xdist): one a CPU
JOBS ?= auto

# Idempotent and fast when everything is already there (see scripts/setup.sh).
setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/bin/shimlab demo

# `make test` leaves out the tests marked slow (pytest -m slow: all notebooks
# but one run in quick mode, and the like) to stay within CI's time; `make test-all`
# runs them too.  docs/testing.md lists what each runs.
test: setup
	$(PY) -m shimlab.interp.generate --check
	$(PY) -m pytest -q -n $(JOBS) -m "not slow" tests

test-all: setup
	$(PY) -m shimlab.interp.generate --check
	$(PY) -m pytest -q -n $(JOBS) tests

# Jupyter with shimlab importable.  `make notebook` installs the `notebook`
# extra (JupyterLab; setup has the kernel already) and starts JupyterLab on
# experiments/, where a .py notebook opens as a notebook (right click, Open
# With > Notebook: jupytext).  `make notebook NB=experiments/the-illusion.py
# [QUICK=1]` instead executes that notebook (or one of your own) headless
# through a kernel and writes the executed .ipynb beside its outputs.
NB    ?=
QUICK ?=
notebook: setup
ifeq ($(strip $(NB)),)
	@$(PY) -c 'import jupyterlab' 2>/dev/null || $(PY) -m pip install -qq --disable-pip-version-check -e '.[notebook]'
	$(VENV)/bin/jupyter lab --notebook-dir=experiments $(if $(filter 0,$(shell id -u)),--allow-root)
else
	$(VENV)/bin/shimlab reproduce $(NB) --kernel $(if $(QUICK),--quick)
endif

# The corpus, the property tests and the regression cases again, on
# interpreters built with ASan + UBSan: one pass per compiler runtime (a
# sanitized build loads only next to its own compiler's runtime), reports
# collected from build/sanitize/ (see src/shimlab/sanitize.py).
# The two heavy examples (hundreds of millions of instructions) run the same
# handlers as the rest and would double the time, so they are left out here.
SANITIZE_CCS   ?= clang-19 clang-22
SANITIZE_TESTS ?= tests/test_modes.py tests/test_differential.py tests/test_regression.py \
                  tests/test_cached_values.py::test_every_crossing_at_k_on_a_sample \
                  tests/test_sanitize.py::test_this_sanitizer_run_really_uses_sanitized_builds
SANITIZE_SKIP  ?= heavy or round_trips
test-sanitize: setup
	@set -e; for cc in $(SANITIZE_CCS); do \
	  echo "== sanitizers: $$cc"; \
	  $(PY) -m shimlab.sanitize --if-present --cc $$cc -- \
	    $(PY) -m pytest -q -p no:cacheprovider -n $(JOBS) -k "not ($(SANITIZE_SKIP))" $(SANITIZE_TESTS); \
	done

# Differential fuzzing for as long as asked; a failure is shrunk and saved in
# tests/regression/.  FUZZ_SANITIZE=clang-19 fuzzes that compiler's sanitizer builds;
# FUZZ_ARGS passes more options (e.g. "--kind cpython --full": scripts/fuzz.py --help).
FUZZ_SECONDS  ?= 300
FUZZ_SANITIZE ?=
FUZZ_ARGS     ?=
fuzz: setup
	$(if $(FUZZ_SANITIZE),$(PY) -m shimlab.sanitize --cc $(FUZZ_SANITIZE) --) $(PY) scripts/fuzz.py --seconds $(FUZZ_SECONDS) $(FUZZ_ARGS)

# Removes build products, the venv and caches (the next `make setup` rebuilds the venv).
clean:
	rm -rf build $(VENV) .pytest_cache .hypothesis src/*.egg-info
	find . -path ./.venv -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
