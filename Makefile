# toolcrib — the two commands a new user needs are `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DB     ?= sqlite:///$(CURDIR)/.toolcrib/toolcrib.db
PORT   ?= 8765

OIDC_FIXTURE := tests/fixtures/oidc

.PHONY: run test check install conformance bench clean oidc-fixture

$(BIN)/toolcrib: pyproject.toml Makefile
	@echo "==> [1/3] creating the virtual environment in $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "==> [2/3] upgrading pip"
	$(BIN)/pip install --quiet --upgrade pip
	@echo "==> [3/3] installing toolcrib with its extras (the first time takes a few minutes; pip shows each package)"
	$(BIN)/pip install --progress-bar on -e '.[dev,demo,postgres]'
	@echo "==> installed: $$($(BIN)/toolcrib --version)"
	@touch $@

install: $(BIN)/toolcrib ## create the virtual environment and install toolcrib with its extras

run: install ## set up a demo organization with real MCP servers and serve it
	@echo "==> setting up the demo organization in $(DB) (connecting real MCP servers)"
	$(BIN)/toolcrib quickstart --database $(DB) --port $(PORT)

# The real OpenID Provider the sign-in tests start (#22): npm's oidc-provider on the machine's node,
# installed from the committed package-lock.json; the marker keeps it from reinstalling every run.
$(OIDC_FIXTURE)/node_modules/.installed: $(OIDC_FIXTURE)/package.json $(OIDC_FIXTURE)/package-lock.json
	@echo "==> installing the test OpenID Provider (npm ci in $(OIDC_FIXTURE))"
	cd $(OIDC_FIXTURE) && npm ci --no-audit --no-fund
	@touch $@

oidc-fixture: $(OIDC_FIXTURE)/node_modules/.installed ## the test OpenID Provider (node + npm)

# The MCP conformance suite and the Node.js 22 it needs, both npm packages, installed into the
# git-ignored tests/conformance/node_modules (tests/e2e/test_conformance.py runs them). The marker
# is newer than the lock file once installed, so a second `make test` installs nothing.
CONFORMANCE := tests/conformance/node_modules/.installed

$(CONFORMANCE): tests/conformance/package.json tests/conformance/package-lock.json
	@echo "==> installing the MCP conformance suite and Node.js 22 from npm into tests/conformance"
	cd tests/conformance && npm ci --no-audit --no-fund
	@touch $@

conformance: $(CONFORMANCE) ## the MCP conformance suite (npm), for tests/e2e/test_conformance.py

# The suite starts hundreds of Python processes (the command line, gateways, fixture servers). Where
# PYTHONDONTWRITEBYTECODE is set (as in many CI images) none of them caches the bytecode of the
# project's own modules, and each compiles them again: compile them once, before the run.
# Two workers sharing out the tests, the idle one taking over the other's queue (#33: worksteal
# beat loadfile, which left one worker idle behind the slowest files); the 20 slowest tests are
# printed at the end of every run.
test: install oidc-fixture conformance ## the whole test suite (two worker processes sharing the tests out)
	$(BIN)/python -m compileall -q -j 0 src tests/fixtures tests/__init__.py tests/conftest.py
	$(BIN)/pytest -q -n 2 --dist worksteal --durations=20

check: install ## formatting, lint and strict typing
	$(BIN)/ruff format --check src tests bench
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

bench: install ## benchmarks: each prints a table and writes JSON under bench/out/
	$(BIN)/python bench/context.py
	$(BIN)/python bench/search_speed.py
	$(BIN)/python bench/search_quality.py
	$(BIN)/python bench/cli.py
	$(BIN)/python bench/replicas.py

clean:
	rm -rf $(VENV) .toolcrib .mypy_cache .ruff_cache .pytest_cache

# ContextForge beside toolcrib in bench/overhead.py (#25) needs a venv of its own: 1.1.0 runs on
# Python 3.12 only. `make contextforge-venv PY312=/path/to/python3.12`, then run the bench with
# TOOLCRIB_BENCH_CONTEXTFORGE_VENV naming it; CONTEXTFORGE=1.0.7 (Python 3.11 or 3.12) for the older one.
PY312             ?= python3.12
CONTEXTFORGE      ?= 1.1.0
CONTEXTFORGE_VENV ?= $(CURDIR)/.venv-contextforge

.PHONY: contextforge-venv
contextforge-venv: ## a venv with ContextForge for bench/overhead.py (PY312=..., CONTEXTFORGE=..., CONTEXTFORGE_VENV=...)
	@$(PY312) -c 'import sys; v = "$(CONTEXTFORGE)"; old = v.startswith("1.0"); sys.exit(0 if old or sys.version_info >= (3, 12) else f"ContextForge {v} needs Python 3.12; $(PY312) is {sys.version.split()[0]} (make contextforge-venv PY312=/path/to/python3.12)")'
	$(PY312) -m venv $(CONTEXTFORGE_VENV)
	$(CONTEXTFORGE_VENV)/bin/pip install --quiet --upgrade pip
	$(CONTEXTFORGE_VENV)/bin/pip install mcp-contextforge-gateway==$(CONTEXTFORGE)
	@echo "==> TOOLCRIB_BENCH_CONTEXTFORGE_VENV=$(CONTEXTFORGE_VENV) $(BIN)/python bench/overhead.py"
