"""Scope proven by the loop, through the real CLI against a third-party-shaped server
(tests/support/fake_k8s_mcp_server.py, where a missing namespace means every namespace) and a replayed
model: every bypass the loop must stop, what it fills in, what it does not offer and why, and
that a server's own name for a tool earns it nothing."""

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.support.fake_messages_api import SMALL_USAGE, response, tool_use
from tests.support.otlp_receiver import attrs
from tests.agent.cli.test_cli import jsonl, run_cli_here
from triage_agent import cli

FAKE = Path(__file__).resolve().parents[2] / "support" / "fake_k8s_mcp_server.py"
UNSCOPED = ("configuration_view", "namespaces_list")


def k8s_run(tmp_path, calls, *, namespaces="prod,staging", server_flags=(), extra=()):
    """Run the CLI with one model turn making `calls`; returns (process, outcome, server log)."""
    uses = [tool_use(f"toolu_{i:02d}", name, arguments) for i, (name, arguments) in
            enumerate(calls)]
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json.dumps({"description": "scope bypasses", "responses": [
        response("tool_use", *uses, usage=SMALL_USAGE)]}))
    log = tmp_path / "server.jsonl"
    server = shlex.join([sys.executable, str(FAKE), "--log", str(log), *server_flags])
    out = run_cli_here("pods fail", "--namespaces", namespaces, "--replay", str(fixture), "--mcp",
                       server, "--json", "--audit-log", str(tmp_path / "audit.jsonl"), "--trace",
                       str(tmp_path / "trace.jsonl"), *extra,   # with what the model saw
                       env={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    ran = jsonl(log) if log.exists() else []
    return out, json.loads(out.stdout), ran


def audits(tmp_path):
    return {e["tool_use_id"]: e for e in jsonl(tmp_path / "audit.jsonl") if e["step"]}


BYPASSES = [  # (call, audit decision): what the issue saw run cluster-wide, and its cousins
    (("pods_list", {}), "namespace_required"),
    (("events_list", {}), "namespace_required"),
    (("pods_get", {"name": "coredns-668d6bf9bc-2xk4p"}), "namespace_required"),
    (("pods_list", {"fieldSelector": "metadata.namespace=kube-system"}), "out_of_scope"),
    (("pods_list", {"namespace": "prod", "fieldSelector": "metadata.namespace!=prod"}),
     "out_of_scope"),
    (("pods_list", {"namespace": "prod",
                    "labelSelector": "io.kubernetes.pod.namespace=kube-system"}), "out_of_scope"),
    (("pods_top", {"namespace": "prod", "all_namespaces": True}), "out_of_scope"),
    (("pods_top", {"namespace": "prod", "all_namespaces": "false"}), "schema_error"),
    (("pods_list", {"namespace": "kube-system"}), "out_of_scope"),
    (("pods_list", {"namespace": "prod --all-namespaces"}), "out_of_scope"),
    (("pods_get", {"namespace": "prod", "name": "-A"}), "out_of_scope"),
    (("pods_list", {"namespace": "prod", "labelSelector": "app=web -A"}), "out_of_scope"),
    (("configuration_view", {}), "unknown_tool"),
    (("namespaces_list", {}), "unknown_tool"),
]


def test_every_bypass_is_refused_and_nothing_reads_outside_the_scope(tmp_path):
    allowed = [("pods_top", {"namespace": "prod"}),
               ("pods_list", {"namespace": "staging", "labelSelector": "app=web"})]
    out, outcome, ran = k8s_run(tmp_path, [call for call, _ in BYPASSES] + allowed)
    assert out.returncode == 3 and outcome["stop"] == "replay_exhausted", out.stderr
    decisions = audits(tmp_path)
    for i, (call, decision) in enumerate(BYPASSES):
        assert decisions[f"toolu_{i:02d}"]["decision"] == decision, call
    # only the two provable calls reached the server; the top one with its flag made false
    assert ran == [{"tool": "pods_top", "arguments": {"namespace": "prod",
                                                      "all_namespaces": False}},
                   {"tool": "pods_list", "arguments": allowed[1][1]}]
    trace = (tmp_path / "trace.jsonl").read_text()
    assert "read namespace prod" in trace and "read namespace staging" in trace
    assert "read namespace kube-system" not in trace and "read namespace default" not in trace
    violations = {v["decision"] for v in outcome["violations"]}
    assert violations == {"out_of_scope", "unknown_tool"}  # a missing namespace is no violation
    refused = decisions["toolu_00"]
    assert refused["is_error"] and decisions[f"toolu_{len(BYPASSES):02d}"]["filled"] == {
        "all_namespaces": False}


def test_tools_without_a_namespace_argument_are_not_offered_and_said_why(tmp_path):
    out, outcome, _ = k8s_run(tmp_path, [("configuration_view", {})])
    first = attrs(jsonl(tmp_path / "trace.jsonl")[0])
    tools = [t["name"] for t in json.loads(first["gen_ai.tool.definitions"])]
    assert tools == ["pods_list", "events_list", "pods_get", "pods_top", "propose_action",
                     "write_report"]
    line = next(l for l in out.stderr.splitlines() if "not offered" in l)
    assert "no namespace argument" in line and "configuration_view, namespaces_list" in line
    assert "--allow-unscoped-tool NAME" in line
    assert [(n["tool"], "no namespace argument" in n["reason"])
            for n in outcome["not_offered"]] == [(name, True) for name in UNSCOPED]
    listed = [(e["tool"], e["decision"]) for e in jsonl(tmp_path / "audit.jsonl")
              if e["step"] == 0]
    assert listed == [(name, "not_offered") for name in UNSCOPED]


def test_the_one_allowed_namespace_is_filled_in_and_the_audit_says_so(tmp_path):
    out, outcome, ran = k8s_run(tmp_path, [("pods_list", {}), ("events_list", {}),
                                           ("pods_get", {"name": "web-1"})], namespaces="prod")
    assert [r["arguments"] for r in ran] == [{"namespace": "prod"}, {"namespace": "prod"},
                                             {"name": "web-1", "namespace": "prod"}]
    for entry in audits(tmp_path).values():
        assert entry["decision"] == "executed" and entry["filled"] == {"namespace": "prod"}
        assert "namespace" not in entry["arguments"]  # the model's own call, as it was made
    line = ('pods_list · executed · 55 bytes · tool_use_id=toolu_00 · '
            'filled={"namespace": "prod"}')
    assert line in out.stderr  # the operator's audit line says so, too
    assert outcome["violations"] == []


def test_an_operator_named_unscoped_tool_is_offered_and_still_checked(tmp_path):
    out, outcome, ran = k8s_run(tmp_path, [("namespaces_list", {}),
                                           ("namespaces_list", {"all_namespaces": True})],
                                extra=["--allow-unscoped-tool", "namespaces_list"])
    assert [r["tool"] for r in ran] == ["namespaces_list"]
    assert [n["tool"] for n in outcome["not_offered"]] == ["configuration_view"]
    assert audits(tmp_path)["toolu_01"]["decision"] == "out_of_scope"  # a flag is a flag


def test_naming_a_tool_the_server_does_not_have_is_a_usage_error(tmp_path):
    out, outcome, ran = k8s_run(tmp_path, [("pods_list", {})],
                                extra=["--allow-unscoped-tool", "pods_lsit"])
    assert out.returncode == 2 and outcome["stop"] == "usage_error"
    assert "'pods_lsit'" in outcome["error"] and ran == [] and "Traceback" not in out.stderr


def test_a_foreign_server_calling_a_tool_get_nodes_earns_no_exception(tmp_path):
    # our own server's node tools are offered only when the CLI started that server itself
    out, outcome, ran = k8s_run(tmp_path, [("get_nodes", {})],
                                server_flags=["--extra", "get_nodes", "--extra", "describe_node"])
    assert {"get_nodes", "describe_node"} <= {n["tool"] for n in outcome["not_offered"]}
    assert ran == [] and audits(tmp_path)["toolu_00"]["decision"] == "unknown_tool"


def test_a_foreign_server_calling_a_tool_get_api_resources_earns_no_exception(tmp_path):
    # offered without a namespace only from our own server, which bounds it (discovery only)
    assert "get_api_resources" in cli.OWN_SERVER_UNSCOPED
    out, outcome, ran = k8s_run(tmp_path, [("get_api_resources", {})],
                                server_flags=["--extra", "get_api_resources"])
    assert "get_api_resources" in {n["tool"] for n in outcome["not_offered"]}
    assert ran == [] and audits(tmp_path)["toolu_00"]["decision"] == "unknown_tool"


@pytest.mark.parametrize("argv, unscoped", [
    (["--mcp", "other-server"], set()),
    (["--mcp", "other-server", "--allow-unscoped-tool", "x", "--allow-unscoped-tool", "y"],
     {"x", "y"}),
    ([], set(cli.OWN_SERVER_UNSCOPED)),
    (["--allow-unscoped-tool", "x"], set(cli.OWN_SERVER_UNSCOPED) | {"x"}),
])
def test_the_own_server_exception_depends_only_on_who_started_the_server(argv, unscoped):
    args = cli.build_parser().parse_args(["s", "--namespaces", "prod", *argv])
    assert cli.unscoped_tools(args) == unscoped
