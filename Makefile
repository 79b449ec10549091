# triage-agent: everyday commands. Runtime needs only python3 (>= 3.10) and kubectl;
# the tests need pytest, which `make test` installs when it is missing.
PYTHON ?= python3
CLUSTER ?= crashloop
NAMESPACES ?= prod
SYMPTOM ?= pods in prod keep restarting
LIVE_ARGS ?=

.PHONY: test demo demo-approve sim live bench eval eval-live clusters check-kubectl test-deps

check-kubectl:
	@command -v kubectl >/dev/null 2>&1 || { echo "kubectl is not on PATH: install it (https://kubernetes.io/docs/tasks/tools/) and run again" >&2; exit 2; }

test-deps:
	@$(PYTHON) -c 'import pytest' 2>/dev/null || $(PYTHON) -m pip install --quiet 'pytest>=7'

test: check-kubectl test-deps
	$(PYTHON) -m pytest

# The crashloop investigation, replayed against the simulated cluster whose logs carry an
# injection attempt: no API key, no cluster.
demo: check-kubectl
	$(PYTHON) -m fixtures.run_on_sim injection "checkout pods in prod keep restarting" \
		--namespaces prod --replay fixtures/replay/crashloop-injection.json

# The three write gates on the simulated cluster: the replay proposes a rollback, you answer the
# approval prompt, and with --execute an approved rollback really changes the simulated cluster.
demo-approve: check-kubectl
	$(PYTHON) -m fixtures.run_on_sim crashloop "checkout pods in prod keep restarting" \
		--namespaces prod --replay fixtures/replay/crashloop-undo.json \
		--allow-action rollout_undo --execute

# A live model against the simulated cluster: needs ANTHROPIC_API_KEY.
live: check-kubectl
	$(PYTHON) -m fixtures.run_on_sim $(CLUSTER) "$(SYMPTOM)" --namespaces $(NAMESPACES) $(LIVE_ARGS)

sim: check-kubectl
	$(PYTHON) -m fixtures.kube_sim fixtures/clusters/$(CLUSTER).json --kubeconfig .sim/kubeconfig --journal .sim/journal.jsonl

# Every evaluation scenario, replayed through the real CLI, graded without a model.
eval: check-kubectl
	$(PYTHON) -m triage_agent.evaluate

# The same scenarios with a live model (needs ANTHROPIC_API_KEY); results kept for comparison.
eval-live: check-kubectl
	$(PYTHON) -m triage_agent.evaluate --live --runs 3 --results fixtures/results/live.jsonl

# Rewrite the hand-described cluster files from fixtures/kube_sim_scenarios.py.
clusters:
	$(PYTHON) -m fixtures.kube_sim_build

bench: check-kubectl
	$(PYTHON) -m tests.bench
