"""Short runs are not touched by context management: the crashloop replay through the real CLI,
server, kubectl and kube_sim sends byte-identical requests with it on (the defaults) and off.
The CLI runs in the test's process (tests/support/cli_here.py): the bytes are the question here,
not the process; tests/agent/cli/test_live.py runs a live CLI process over real HTTP."""

import json
import os
from pathlib import Path

from tests.support.cli_here import run_main_here
from tests.support.fake_messages_api import FakeMessagesApi

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "replay" / "crashloop.json"


def requests(sim, *flags):
    responses = json.loads(FIXTURE.read_text())["responses"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OTEL_"))}
    with FakeMessagesApi(responses) as api:
        env.update(ANTHROPIC_API_KEY="sk-ant-test-not-a-key", ANTHROPIC_BASE_URL=api.url)
        out = run_main_here(["checkout pods keep restarting", "--namespaces", "prod",
                             "--kubeconfig", sim.kubeconfig, "--json", "--no-preflight",
                             "--api-profile", "anthropic", *flags], env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return [r["raw"] for r in api.requests], json.loads(out.stdout)


def test_the_crashloop_run_sends_the_same_bytes_with_and_without_management(kube_sim):
    sim = kube_sim("crashloop")
    managed, outcome = requests(sim)
    unmanaged, _ = requests(sim, "--max-result-bytes", "0", "--context-budget-tokens", "0")
    assert len(managed) == 5 and managed == unmanaged   # four steps, then the review
    assert outcome["context"]["clearings"] == outcome["context"]["cut_results"] == 0
    assert outcome["context"]["budget_tokens"] == 80_000
