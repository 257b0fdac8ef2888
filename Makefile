# Two commands: `make demo` and `make test`. Each creates .venv if missing and installs what it needs.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
CORE := $(VENV)/.harness-core
DEV := $(VENV)/.harness-dev
DATA_DIR ?= $(abspath ../shared/data)

.PHONY: demo test test-slow lint bench clean

$(CORE): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# the CPU wheel of torch first, so nothing pulls a multi-GB CUDA build
	$(PY) -m pip install -q 'torch==2.13.0'
	$(PY) -m pip install -q -e .
	touch $(CORE)

$(DEV): $(CORE)
	$(PY) -m pip install -q -e '.[dev]'
	touch $(DEV)

demo: $(CORE)
	$(VENV)/bin/harness eval --suite arith --model local/tiny-arith --log-dir logs/demo

test: $(DEV)
	$(VENV)/bin/ruff check --output-format concise harness tests benchmarks
	$(VENV)/bin/ruff format --check harness tests benchmarks
	# slow tests (Monte-Carlo coverage, about a minute) fit in CI, so they run here too
	HARNESS_DATA_DIR=$${HARNESS_DATA_DIR:-$(DATA_DIR)} $(PY) -m pytest -q -m "not gpu"

test-slow: $(DEV)
	HARNESS_DATA_DIR=$${HARNESS_DATA_DIR:-$(DATA_DIR)} $(PY) -m pytest -q -m slow

lint: $(DEV)
	$(VENV)/bin/ruff check harness tests benchmarks
	$(VENV)/bin/ruff format --check harness tests benchmarks

bench: $(DEV)
	$(PY) benchmarks/local_provider.py

clean:
	rm -rf $(VENV) logs
