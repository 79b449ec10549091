"""The planted-secret table (fixtures/kube_sim/scenarios/secrets.py) against every way out:

- redact() alone, row by row, keeping each row's marker;
- our server, through real kubectl against the `secrets` cluster, every tool it lists, called
  on every leaky pod: no planted value in any output, and each place (log line, event, args) shown;
- the loop, through the real CLI against a third-party-shaped server that returns every row
  verbatim and a fake Messages API over HTTP: no planted value in any request body the loop
  sends, nor in the trace, audit or output."""

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from fixtures.kube_sim.scenarios.secrets import PLANTED, PODS
from mcp_kubectl_server.redact import redact
from tests.support.fake_messages_api import FakeMessagesApi, response, text, tool_use
from tests.agent.cli.test_cli import run_cli
from tests.support.server_support import ServerProcess

SECRETS = [part for _, parts in PLANTED for part in parts]
MARKERS = [f"plant-{i:02d}" for i in range(len(PLANTED))]
K8S = Path(__file__).resolve().parents[1] / "support" / "fake_k8s_mcp_server.py"


def strings(value):
    """Every string inside a parsed JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def leaks(text):
    return [secret for secret in SECRETS if secret in text]


@pytest.mark.parametrize("row, parts", PLANTED, ids=MARKERS)
def test_each_planted_row_is_redacted_and_keeps_its_marker(row, parts):
    out = redact(row)
    assert [p for p in parts if p in out] == [] and "[REDACTED]" in out, out
    assert row[:8] in out and redact(out) == out


def arguments_for(tool, pod):
    """Arguments for any tool of our server: namespace prod, the pod, its first container."""
    properties = tool["inputSchema"].get("properties", {})
    values = {"namespace": "prod", "name": pod, "container": "c00", "tail": 1000}
    arguments = {k: v for k, v in values.items() if k in properties}
    for key in tool["inputSchema"].get("required", []):
        arguments.setdefault(key, pod)
    return arguments


def test_our_server_never_shows_a_planted_value_in_any_tool(kube_sim):
    sim = kube_sim("secrets")
    server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", sim.kubeconfig,
                           "--timeout", "30", "--quiet")
    server.initialize()
    outputs, done = {}, {}
    for tool in server.request("tools/list")["result"]["tools"]:
        for pod in PODS + ("",):
            arguments = arguments_for(tool, pod) if pod else {"namespace": "prod"}
            key = json.dumps([tool["name"], arguments], sort_keys=True)
            if key not in done:  # a tool without a name argument runs once
                done[key] = server.call(tool["name"], arguments)[0]
            outputs[(tool["name"], pod)] = done[key]
    assert server.close() == 0
    for key, output in outputs.items():
        assert leaks(output) == [], (key, output)
    shown = {place: "\n".join(outputs[(tool, pod)] for pod in PODS)
             for place, tool in (("log lines", "get_logs"), ("events", "get_events"),
                                 ("args", "describe_pod"))}
    for place, output in shown.items():  # each place really showed each row, redacted
        assert [m for m in MARKERS if m not in output] == [], place


def test_the_loop_redacts_a_server_that_does_not(tmp_path):
    plant = tmp_path / "plant.txt"
    plant.write_text("\n".join(row for row, _ in PLANTED))
    calls = [tool_use("toolu_01", "pods_list", {"namespace": "prod"}),
             tool_use("toolu_02", "events_list", {"namespace": "prod"})]
    script = [response("tool_use", *calls), response("end_turn", text("done")),
              response("end_turn", text("still done"))]
    trace, audit = tmp_path / "trace.jsonl", tmp_path / "audit.jsonl"
    server = shlex.join([sys.executable, str(K8S), "--log", str(tmp_path / "log"), "--plant",
                         str(plant)])
    with FakeMessagesApi(script) as api:
        out = run_cli("pods fail", "--namespaces", "prod", "--mcp", server, "--json",
                      "--trace", str(trace), "--audit-log", str(audit),
                      env={"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.url,
                           # the spans carry what the model saw, so they are checked too
                           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    assert out.returncode == 3 and json.loads(out.stdout)["stop"] == "end_turn", out.stderr
    assert "gen_ai.tool.call.result" in trace.read_text()
    bodies = [r["raw"].decode("utf-8") for r in api.requests]
    assert len(bodies) == 3 and all(MARKERS[-1] in body for body in bodies[1:])
    records = trace.read_text().splitlines() + audit.read_text().splitlines()
    for where, data in [("request", b) for b in bodies] + [("record", r) for r in records]:
        # JSON escapes quotes and newlines: look at every string in it, decoded, too
        assert leaks(data) == [] and leaks("\n".join(strings(json.loads(data)))) == [], where
    assert leaks(out.stdout) == [] and leaks(out.stderr) == []
    assert os.path.getsize(tmp_path / "log") > 0  # the server really ran both calls
