"""The crashloop replay through the real CLI, server, kubectl and kube_sim, both ways: with the
anthropic profile the client sends the loop's request as it always did (json.dumps of it, the
hosted headers), and the compatible requests are exactly that request cut down by the profile.
The CLI runs in the test's process (tests/support/cli_here.py): the requests are the question,
not the process."""

import json
import os
from pathlib import Path

from tests.support.cli_here import run_main_here
from tests.support.fake_messages_api import FakeMessagesApi
from triage_agent.model import profiles

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "replay" / "crashloop.json"


def requests(sim, profile):
    responses = json.loads(FIXTURE.read_text())["responses"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OTEL_"))}
    with FakeMessagesApi(responses) as api:
        env.update(ANTHROPIC_API_KEY="sk-ant-test-not-a-key", ANTHROPIC_BASE_URL=api.url)
        out = run_main_here(["checkout pods restart", "--namespaces", "prod", "--kubeconfig",
                             sim.kubeconfig, "--json", "--no-preflight", "--api-profile", profile],
                           env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return api.requests


def test_the_hosted_requests_are_the_loops_and_the_compatible_ones_are_them_cut_down(kube_sim):
    sim = kube_sim("crashloop")
    hosted, compatible = requests(sim, "anthropic"), requests(sim, "compatible")
    assert len(hosted) == len(compatible) == 5   # four steps, then the review
    for ours, theirs in zip(hosted, compatible):
        body = json.loads(ours["raw"])
        ours["headers"], theirs["headers"] = ({k.lower(): v for k, v in r["headers"].items()}
                                              for r in (ours, theirs))
        assert ours["raw"] == json.dumps(body, ensure_ascii=False).encode()
        assert body["fallbacks"] == "default" and body["output_config"] == {"effort": "medium"}
        assert ours["headers"]["anthropic-beta"] == "server-side-fallback-2026-07-01"
        assert theirs["body"] == profiles.compatible_request(body)
        assert "anthropic-beta" not in theirs["headers"]
        assert theirs["headers"]["x-api-key"] == "sk-ant-test-not-a-key"   # a key given is sent
