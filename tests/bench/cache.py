"""Prompt-cache figures for `make bench` (not a test: prints shares, asserts nothing).

The crashloop investigation runs twice through the real CLI against the test Messages API
(tests/support/fake_messages_api.py), real MCP server, kubectl and kube_sim: first over `prod`, then,
right after, over other namespaces (`prod,staging`), both answered from the crashloop replay
fixture. One PromptCache (tests/support/prompt_cache.py) spans both runs; for each step it gives the
share of the request's input bytes that lie in a prefix an earlier request marked with
cache_control (tools, then system, then the conversation), and next to it the share that lies in
a prefix any earlier request sent (what perfectly placed breakpoints could read; the rest is new:
the model's last turn and the latest tool results). Bytes, not tokens: a stand-in.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from fixtures.kube_sim.sim import start_sim
from tests.support.fake_messages_api import FakeMessagesApi
from tests.support.prompt_cache import PromptCache

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "replay" / "crashloop.json"
SYMPTOM = "checkout pods in prod keep restarting"
RUNS = (("the crashloop run, --namespaces prod", "prod"),
        ("right after, --namespaces prod,staging", "prod,staging"))


def shares(sim):
    """[(label, [(cached, reusable, input bytes) per step])] for the two runs, one cache."""
    responses = json.loads(FIXTURE.read_text())["responses"]
    cache, measured = PromptCache(), []
    for label, namespaces in RUNS:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        with FakeMessagesApi(responses, cache=cache) as api:
            env.update(ANTHROPIC_API_KEY="sk-ant-bench-not-a-key", ANTHROPIC_BASE_URL=api.url)
            subprocess.run([sys.executable, "-m", "triage_agent", SYMPTOM, "--namespaces",
                            namespaces, "--kubeconfig", sim.kubeconfig, "--json",
                            "--api-profile", "anthropic"], cwd=ROOT,
                           env=env, capture_output=True, timeout=120, check=True)
        measured.append((label, [(r["cached_bytes"], r["reusable_bytes"], r["input_bytes"])
                                 for r in api.requests]))
    return measured


def main():
    """Print each step's cached share and each run's whole share."""
    saved = os.environ.get("KUBECACHEDIR")
    with tempfile.TemporaryDirectory(prefix="triage-bench-") as cache:
        os.environ["KUBECACHEDIR"] = cache
        try:
            with start_sim("crashloop") as sim:
                measured = shares(sim)
        finally:
            if saved is None:
                os.environ.pop("KUBECACHEDIR", None)
            else:
                os.environ["KUBECACHEDIR"] = saved
    print("share of input bytes in a prefix an earlier request marked for caching (in brackets:"
          " sent before at all), per step:")
    for label, steps in measured:
        cached, reusable, total = (sum(step[i] for step in steps) for i in range(3))
        per_step = ", ".join(f"{c / t:.0%} ({r / t:.0%}) of {t:,}" for c, r, t in steps)
        print(f"  {label}: {per_step}; whole run {cached / total:.1%} ({reusable / total:.1%}) "
              f"of {total:,} bytes")


if __name__ == "__main__":
    main()
