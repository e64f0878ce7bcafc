# Haytham — two commands: `make run` and `make test`. pip + venv; torch pinned to the CPU build.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/pip
PORT   ?= 8501
# The local model runs on llama.cpp from a prebuilt wheel (xllamacpp): no compiler. Should pip
# ever build something from source here, it runs at most one compiler job per core.
JOBS   := $(shell nproc 2>/dev/null || echo 2)
# TEST_JOBS=2 make test runs the suite in two processes (pytest-xdist), each test file whole in
# one of them: about 10.5 min instead of 15 on 2 cores. Each of the last two pairs of runs had
# one failure, a race the second process exposed (a browser download, then a session lock
# released late by the pool); both are fixed, but until runs show no more, the default is one
TEST_JOBS ?= 0
# make test-agents knobs
PROVIDER ?=
IDEAS    ?=
K        ?=

# Dead code ([tool.vulture] in pyproject.toml): any finding in the package fails; unused
# variables and attributes are left out (pydantic fields).
DEADCODE = $(BIN)/vulture | grep -E '^(haytham|frontend_streamlit)/' \
	| grep -vE 'unused (variable|attribute)' | { ! grep .; }

.PHONY: run test test-slow test-agents lint burr stages graph clean setup setup-local browser \
	services run-team

$(VENV)/.base: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[dev,tracking,team]"
	touch $@

$(VENV)/.local: $(VENV)/.base
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) MAKEFLAGS=-j$(JOBS) $(PIP) install -q -e ".[local]"
	touch $@

setup: $(VENV)/.base
setup-local: $(VENV)/.local

# Debian's Chromium for the real-browser tests (never a downloaded browser), poppler-utils
# (pdftotext, pdftoppm) for the PDF report tests and the npm package of the sign-in tests' local
# OpenID Connect provider (tests/oidc/); each is skipped, with why, where it is missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium for the browser tests"; \
	  (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) \
	  || echo "could not install chromium; the browser tests will be skipped"; }
	@command -v pdftoppm >/dev/null 2>&1 || { \
	  echo "installing Debian poppler-utils for the PDF report tests"; \
	  (apt-get install -y -qq poppler-utils >/dev/null \
	   || (apt-get update -qq && apt-get install -y -qq poppler-utils >/dev/null)) \
	  || echo "could not install poppler-utils; the PDF report tests will be skipped"; }
	@[ -d tests/oidc/node_modules/oidc-provider ] || { command -v npm >/dev/null 2>&1 \
	  && npm ci --prefix tests/oidc --silent --no-audit --no-fund; } \
	  || echo "no npm: the sign-in tests (a local OpenID Connect provider) will be skipped"

run: $(VENV)/.local
	@echo "Haytham on http://localhost:$(PORT) (local model: for trying the flow offline only)"
	$(BIN)/streamlit run frontend_streamlit/app.py --server.port $(PORT) \
	  --server.headless true --browser.gatherUsageStats false

test: $(VENV)/.base browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(DEADCODE)
	$(BIN)/mypy
	bash scripts/services.sh --optional
	$(BIN)/pytest -q -n $(TEST_JOBS) --dist loadfile

# Team deployment (docs/deploy.md): PostgreSQL on this machine (Debian's; installed if missing),
# then two app instances (ports 8501, 8502; PORTS=...) and two workers on it. `make test` calls
# services.sh --optional: the team tests run where PostgreSQL can be set up, else are skipped.
services:
	bash scripts/services.sh

run-team: $(VENV)/.base
	bash scripts/run-team.sh

test-slow: $(VENV)/.local
	$(BIN)/pytest -q -m slow

test-agents: $(VENV)/.base
	$(BIN)/haytham eval $(if $(PROVIDER),--provider $(PROVIDER)) \
	  $(if $(IDEAS),--ideas $(IDEAS)) $(if $(K),--k $(K))

lint: $(VENV)/.base
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(DEADCODE)
	$(BIN)/mypy

# Redraw docs/pipeline-graph.{dot,svg} from the code (Burr draws it; Debian's graphviz renders the
# SVG). tests/test_graph.py fails while the committed drawing is out of date.
graph: $(VENV)/.base
	@command -v dot >/dev/null 2>&1 || (apt-get install -y -qq graphviz >/dev/null 2>&1) || true
	$(BIN)/python -m haytham.pipeline.graph docs/pipeline-graph

burr: $(VENV)/.base
	burr_path=sessions/_tracking $(BIN)/burr --no-open --no-copy-demo_data --port 7241

stages: $(VENV)/.base
	$(BIN)/haytham stages

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
