# triage-agent: everyday commands. Runtime needs only python3 (>= 3.10) and kubectl;
# the tests need the tools in tests/requirements.txt and Prometheus, which `make test` installs.
PYTHON ?= python3
CLUSTER ?= crashloop
NAMESPACES ?= prod
SYMPTOM ?= pods in prod keep restarting
LIVE_ARGS ?=
# The interpreter for the tests: a project venv with the pinned test-only tools (test-deps).
TEST_PYTHON = .venv/bin/python

.PHONY: test test-browser demo demo-approve serve-demo sim live bench bench-suite eval eval-live clusters docs check test-deps prometheus-deps

check:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || { echo "$(PYTHON) is missing or older than 3.10: install Python 3.10 or newer (or run make PYTHON=python3.12 ...)" >&2; exit 2; }
	@command -v kubectl >/dev/null 2>&1 || { echo "kubectl is not on PATH: install it (https://kubernetes.io/docs/tasks/tools/) and run again" >&2; exit 2; }

# The test-only tools (tests/requirements.txt, exact versions) go into a project venv, so a
# system Python that refuses pip installs (PEP 668) is left alone; pip runs only when the file
# differs from the copy kept in .venv at the last install. When $(PYTHON) has a pip, the venv
# gets no pip of its own (bootstrapping one cost more CPU than the whole install): the venv's
# interpreter runs $(PYTHON)'s pip from a folder that holds only it (.venv/host-pip), which is
# what `pip --python` does, without a second pip started in front of it (0.21 s of a pip call
# against 0.45 s). The file pins every dependency, so pip resolves nothing (--no-deps), and
# bytecode is left to the first import (--no-compile).
# The pins come in three parts, by name, installed by three pips at once. FIRST is what a
# collection of the tests imports (pytest, what pytest needs, PyYAML), into the venv's
# site-packages: once it is in, the first collection of a fresh checkout (WARM_UP, see test) runs
# while the second pip is still installing the rest (xdist, setuptools and pip for the packaging
# test, jsonschema and the like for the schema tests), which no collection imports (it loads no
# plugin either: PYTEST_DISABLE_PLUGIN_AUTOLOAD). The rest goes into a directory of its own,
# .venv/rest (pip --target), a site directory of the venv's interpreter through rest.pth, so the
# two pips never write one directory (pip does not guard an environment against another pip):
# on a fresh clone the two one after the other took 2.8 s, side by side 2.0 s.
# kubernetes-validate is not installed: its wheel is 17,000 schema files (108 MB), and creating
# them was 4 to 20 s of the kernel's time, more than all the rest of the install. The third pip
# downloads the pinned wheel into .venv/schemas, and tests/support/kube_schemas.py writes out of
# it the package and the one version's schemas the tests read (650 files,
# .venv/schemas/unpacked). A .venv without .venv/rest or .venv/schemas/unpacked (an earlier
# layout) is made again, and the schemas.pth of the layout before those (a whole unpacked copy on
# the path) is removed.
# $(PYTHON) is resolved to its interpreter once (a version manager's shim, pyenv's, costs 0.15 s
# of CPU a call), and asked where its pip is by importing it.
# One such venv serves every checkout of the machine (tests/support/venv_cache.py): .venv is a
# link to the venv in ~/.cache/triage-agent/test-venvs made from the same pins and interpreter,
# and only when there is none is one built there (through .venv, as above) and kept. A fresh
# clone then starts its tests without installing anything. TRIAGE_TEST_VENV_CACHE= (empty)
# builds .venv in the checkout instead; a whole .venv directory of its own is kept as it is.
PIP_DIR = import os, pip; print(os.path.dirname(pip.__file__))
FIRST = pytest|pluggy|iniconfig|packaging|pygments|pyyaml
SCHEMAS = kubernetes-validate
PIP_INSTALL = install --quiet --no-deps --no-compile --disable-pip-version-check
PIP_DOWNLOAD = download --quiet --no-deps --only-binary :all: --disable-pip-version-check
VENV_OK = { cmp -s tests/requirements.txt .venv/requirements.txt && [ -d .venv/schemas/unpacked ] && [ -d .venv/rest ]; } 2>/dev/null
test-deps: check
	@$(VENV_OK) || { \
		py=$$($(PYTHON) -c 'import sys; print(sys.executable)') && \
		{ "$$py" -m tests.support.venv_cache link && $(VENV_OK); } || { \
		echo "installing the test-only dependencies into .venv (tests/requirements.txt)"; \
		"$$py" -m tests.support.venv_cache begin && \
		{ [ -d .venv/schemas/unpacked ] && [ -d .venv/rest ] || rm -rf .venv/* .venv/.[!.]*; } && \
		{ [ -x .venv/bin/python ] || "$$py" -m venv --without-pip "$$(readlink .venv || echo .venv)"; } && \
		if [ ! -x .venv/bin/pip ] && pipdir=$$("$$py" -c '$(PIP_DIR)' 2>/dev/null); then \
			rm -rf .venv/host-pip && mkdir .venv/host-pip && ln -s "$$pipdir" .venv/host-pip/pip && \
			pip="env PYTHONPATH=$$PWD/.venv/host-pip .venv/bin/python -m pip"; \
		else { [ -x .venv/bin/pip ] || .venv/bin/python -m ensurepip --default-pip >/dev/null; } && \
			pip=".venv/bin/python -m pip"; fi && \
		grep -E -i '^($(FIRST))==' tests/requirements.txt > .venv/requirements-first.txt && \
		grep -v -E -i '^($(FIRST)|$(SCHEMAS))==' tests/requirements.txt > .venv/requirements-rest.txt && \
		rm -rf .venv/schemas .venv/rest && \
		for site in .venv/lib/python*/site-packages; do \
			echo 'import os, site, sys; site.addsitedir(os.path.join(sys.prefix, "rest"))' > "$$site/rest.pth"; done && \
		first() { $$pip $(PIP_INSTALL) -r .venv/requirements-first.txt; } && \
		rest() { $$pip $(PIP_INSTALL) --target .venv/rest -r .venv/requirements-rest.txt; } && \
		schemas() { $$pip $(PIP_DOWNLOAD) --dest .venv/schemas $$(grep -i '^$(SCHEMAS)==' tests/requirements.txt) && \
			.venv/bin/python -m tests.support.kube_schemas unpack; } && \
		{ schemas & pid=$$!; rest & rest=$$!; first && { $(WARM_UP) || true; }; ok=$$?; \
			wait $$rest && wait $$pid && [ $$ok = 0 ]; } && \
		rm -f .venv/lib/python*/site-packages/schemas.pth && \
		cp tests/requirements.txt .venv/requirements.txt && \
		"$$py" -m tests.support.venv_cache keep; }; }

# The metrics tests run the real Prometheus server and its promtool: Debian's prometheus package
# (2.42), installed when missing (apt-get, so root or sudo on a Debian-like system).
prometheus-deps:
	@command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || { \
		echo "installing Debian's prometheus package (test-only dependency: prometheus, promtool)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }

# The suite across the machine's cores (pytest-xdist), ending in pytest's one summary line;
# `.venv/bin/python -m pytest` alone runs it in one process. Two workers more than the cores
# (TEST_WORKERS; `auto` is that count, tests/conftest.py): a worker waiting on a child it started
# (an interpreter, kubectl, Prometheus getting ready) leaves its core to a spare one
# (docs/development.md has the figures). The run lets Python cache bytecode even where the
# environment says not to (PYTHONDONTWRITEBYTECODE): the suite starts hundreds of interpreters
# (CLI, server, simulator), each of which would compile the project's modules again.
# In a fresh checkout, where nothing is cached yet, two collections (half of tests/ each, at
# once) first compile the modules and rewrite the test modules' asserts: else every worker does
# all of it at its start (about 4.7 s of CPU each against 1.2 s). What they print is not kept:
# the run itself reports any error of collection.
TEST_WORKERS ?= auto
COLLECT = PYTHONDONTWRITEBYTECODE= PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(TEST_PYTHON) -m pytest -p no:cacheprovider --collect-only -q
WARM_UP = { ls tests/agent/__pycache__/*-pytest-*.pyc >/dev/null 2>&1 || { \
	$(COLLECT) tests/agent >/dev/null 2>&1 & agent=$$!; \
	$(COLLECT) tests/server tests/e2e tests/sim tests/project tests/bench tests/browser >/dev/null 2>&1; \
	wait $$agent; }; }
test: test-deps prometheus-deps
	@$(WARM_UP) || true
	PYTHONDONTWRITEBYTECODE= $(TEST_PYTHON) -m pytest -n $(TEST_WORKERS)

# The approval page in a real browser: Debian's chromium and chromium-driver (installed with apt
# when missing), driven over WebDriver by tests/support/webdriver.py. Kept out of `make test`.
SUDO = $(shell [ "$$(id -u)" = 0 ] || echo sudo)
test-browser: test-deps
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then \
		echo "installing chromium and chromium-driver (apt-get, test-only)"; \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends chromium chromium-driver; \
	fi
	TRIAGE_BROWSER_TESTS=1 $(TEST_PYTHON) -m pytest -p no:cacheprovider tests/browser

# The crashloop investigation, replayed against the simulated cluster whose logs carry an
# injection attempt: no API key, no cluster. --verify makes the review too (the fixture carries
# its answer), so the report opens with its Checked line.
# `make demo CLUSTER=NAME` replays that eval scenario instead (its cluster, symptom and replay;
# a Prometheus beside the simulator when the cluster has metrics, e.g. CLUSTER=memory-leak).
demo: check
ifneq ($(filter command line environment,$(origin CLUSTER)),)
	$(PYTHON) -m fixtures.run_on_sim --scenario $(CLUSTER)
else
	$(PYTHON) -m fixtures.run_on_sim injection "checkout pods in prod keep restarting" \
		--namespaces prod --replay fixtures/replay/crashloop-injection.json --verify
endif

# The three write gates on the simulated cluster: the replay proposes a rollback, you answer the
# approval prompt, and with --execute an approved rollback really changes the simulated cluster,
# whose new pods take 3 s to come up; the watch after it says whether checkout recovered.
demo-approve: check
	$(PYTHON) -m fixtures.run_on_sim crashloop --pod-start-delay 3 \
		"checkout pods in prod keep restarting" \
		--namespaces prod --replay fixtures/replay/crashloop-undo.json \
		--allow-action rollout_undo --execute --verify-quiet 10

# The Alertmanager webhook service on the simulated cluster: one example alert posted, its
# triage replayed (no API key), the outcome and /metrics shown, and the one pending approval it
# leaves with its URL and an operator token (on a terminal it waits for Enter), then SIGTERM.
serve-demo: check
	$(PYTHON) -m fixtures.serve_demo

# A live model against the simulated cluster: needs ANTHROPIC_API_KEY.
live: check
	$(PYTHON) -m fixtures.run_on_sim $(CLUSTER) "$(SYMPTOM)" --namespaces $(NAMESPACES) $(LIVE_ARGS)

sim: check
	$(PYTHON) -m fixtures.kube_sim fixtures/clusters/$(CLUSTER).json --kubeconfig .sim/kubeconfig --journal .sim/journal.jsonl

# Every evaluation scenario, replayed through the real CLI, graded without a model.
eval: check prometheus-deps
	$(PYTHON) -m triage_agent.evals

# The same scenarios with a live model (needs ANTHROPIC_API_KEY); results kept for comparison.
eval-live: check
	$(PYTHON) -m triage_agent.evals --live --runs 3 --results fixtures/results/live.jsonl

# Rewrite the hand-described cluster files from fixtures/kube_sim/scenarios/core.py.
clusters:
	$(PYTHON) -m fixtures.kube_sim.build

# Rewrite the generated reference pages, docs/tools.md and docs/flags.md, from the code.
docs:
	$(PYTHON) -m tests.support.docs_gen

bench: check prometheus-deps
	$(PYTHON) -m tests.bench

# `make test` on fresh clones of HEAD (or REV=...), in units of a fixed CPU workload timed in
# the same run (tests/bench/suite.py); ROUNDS clones one after the other. AGAINST=BASE measures
# that commit too, in turns, and prints REV's time as a share of BASE's. FRESH_VENV=1 builds each
# clone's test venv from nothing, as a machine's first clone does. Takes as long as the suite,
# ROUNDS times (twice that with AGAINST): not part of `make bench`.
ROUNDS ?= 3
REV ?= HEAD
AGAINST ?=
FRESH_VENV ?=
bench-suite: check
	$(PYTHON) -m tests.bench.suite $(REV) --rounds $(ROUNDS)$(if $(AGAINST), --against $(AGAINST))$(if $(FRESH_VENV), --fresh-venv)
