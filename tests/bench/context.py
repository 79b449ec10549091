"""Context management figures for `make bench` (not a test: prints figures, asserts nothing).

A scripted 40-step investigation through the real CLI, the test Messages API (its prompt-cache
model and usage counted from bytes) and a fake MCP server whose results are 20 to 40 KB each,
run with management (--context-budget-tokens BUDGET) and without (0). For each arm: the bytes of
all its requests, and a cache-weighted input cost in byte units (uncached 1.0, cache write 1.25,
cache read 0.1; the same rule in both arms) as the API bills it: a request reads only an entry it
finds within 20 blocks before one of its breakpoints (tests/support/prompt_cache.py). Beside it,
the same cost if every prefix sent before were read: what the 20-block rule and the placement of
breakpoints cost. The managed arm's report quotes the first result,
long cleared by then: it must still verify. Every request went through the fake API's
conversation rules (a request that broke one would have ended the run with a 400).
"""

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.fake_messages_api import FakeMessagesApi, response, tool_use

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "support" / "fake_mcp_server.py"
STEPS = 40
BUDGET = 50_000
WEIGHTS = {"uncached": 1.0, "write": 1.25, "read": 0.1}


def script():
    steps = [response("tool_use", tool_use(f"toolu_{n:02d}", "big_page", {"namespace": "prod", "n": n}))
             for n in range(1, STEPS + 1)]
    report = {"summary": "orders are served", "severity": "low", "affected": [],
              "evidence": [{"tool_use_id": "toolu_01", "quote": "page=1 line=0 level=info",
                            "interpretation": "the first page of logs is healthy"}],
              "hypothesis": "nothing is wrong", "confidence": "low", "proposed_actions": [],
              "next_checks": ["ask the reporter for a request id"]}
    return steps + [response("tool_use", tool_use("toolu_report", "write_report", report))]


def run_arm(budget):
    """(requests, outcome) of one arm."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OTEL_"))}
    server = shlex.join([sys.executable, str(FAKE), "--big", "--read-only", "big_page"])
    with FakeMessagesApi(script(), count_usage=True) as api, tempfile.TemporaryDirectory() as tmp:
        env.update(ANTHROPIC_API_KEY="sk-ant-bench-not-a-key", ANTHROPIC_BASE_URL=api.url)
        out = subprocess.run([sys.executable, "-m", "triage_agent", "orders are slow", "--namespaces",
                              "prod", "--mcp", server, "--json", "--max-steps", str(STEPS + 1),
                              "--max-tool-calls", str(STEPS), "--context-budget-tokens", str(budget),
                              "--audit-log", str(Path(tmp) / "audit.jsonl"),
                              "--api-profile", "anthropic"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    outcome = json.loads(out.stdout)
    return api.requests, outcome


def investigation(requests):
    """The run's own requests: the review after the report (issue 50) is one more request, with
    a short conversation of its own and only review_report, which context management never sees."""
    return [r for r in requests
            if [t.get("name") for t in r["body"].get("tools", ())] != ["review_report"]]


def figures(requests):
    """(bytes sent, cost as billed, cost if every prefix sent before were read)."""
    sent = sum(len(r["raw"]) for r in requests)
    cost = sum(r["cached_bytes"] * WEIGHTS["read"] + r["written_bytes"] * WEIGHTS["write"]
               + (r["input_bytes"] - r["cached_bytes"] - r["written_bytes"]) * WEIGHTS["uncached"]
               for r in requests)
    ideal = sum(r["reusable_bytes"] * WEIGHTS["read"]
                + (r["input_bytes"] - r["reusable_bytes"]) * WEIGHTS["write"] for r in requests)
    return sent, cost, ideal


def main():
    plain_requests, plain = run_arm(0)
    managed_requests, managed = run_arm(BUDGET)
    plain_requests, managed_requests = investigation(plain_requests), investigation(managed_requests)
    (plain_bytes, plain_cost, plain_ideal), (bytes_, cost, ideal) = \
        figures(plain_requests), figures(managed_requests)
    biggest = max(len(r["raw"]) for r in managed_requests)
    per_token = managed_requests[-1]["input_bytes"] / max(1, sum(
        managed["usage_by_step"][-1][k] for k in ("input", "cache_write", "cache_read")))
    print(f"context management, a {STEPS}-step investigation of 20-40 KB results "
          f"(budget {BUDGET:,} tokens):")
    print(f"  request bytes: managed {bytes_:,} / unmanaged {plain_bytes:,} = "
          f"{bytes_ / plain_bytes:.1%} (target <= 20%)")
    print(f"  cache-weighted input cost: managed {cost:,.0f} / unmanaged {plain_cost:,.0f} = "
          f"{cost / plain_cost:.1%} (target <= 65%; floor near 40%), reads found within 20 "
          f"blocks of a breakpoint; {ideal / plain_ideal:.1%} if every prefix sent before were read")
    print(f"  largest managed request: {biggest:,} bytes, about "
          f"{biggest / per_token:,.0f} tokens (budget {BUDGET:,}); clearings "
          f"{managed['context']['clearings']}, results cleared {managed['context']['cleared_results']}")
    print(f"  both arms ended with {plain['stop']!r} / {managed['stop']!r}; the managed report's "
          f"quote of a cleared result: {'verified' if not managed['grounding_warnings'] else 'NOT verified'}")


if __name__ == "__main__":
    main()
