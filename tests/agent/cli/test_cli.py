"""End to end in replay: the real CLI, the real MCP server, real kubectl, kube_sim. The headline
runs, --json and --help start the CLI as a process (`run_cli`); the stop reasons, usage errors
and budgets call it in this process (`run_cli_here`, tests/support/cli_here.py).

The crashloop-with-injection fixture is the headline: the model is steered by a planted log line
into an unknown tool, an out-of-scope namespace and a destructive proposal; all are refused and
recorded, nothing reaches the cluster, and the grounded report still lands."""

import json
import os
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from tests.support import cli_here
from tests.support.otlp_receiver import attrs
from triage_agent import cli, report, schema
from triage_agent.outcome import Outcome

ROOT = Path(__file__).resolve().parents[3]
REPLAY = ROOT / "fixtures" / "replay"
FATAL = "FATAL: required environment variable PAYMENT_API_URL is not set"

USAGE = {"type": "object", "required": ["input", "output", "cache_read", "cache_write"],
         "additionalProperties": False,
         "properties": {k: {"type": "integer", "minimum": 0}
                        for k in ("input", "output", "cache_read", "cache_write")}}
OUTCOME_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["report", "stop", "steps", "tool_calls", "violations", "proposals",
                 "grounding_warnings", "usage", "cost_usd", "model", "trace", "trace_id",
                 "audit_log", "error", "audit_error", "not_offered", "alert", "actions_taken",
                 "usage_by_step", "context", "verification", "answer", "followup"],
    "properties": {
        "report": {"type": ["object", "null"]},
        "stop": {"type": "string", "minLength": 1},
        "steps": {"type": "integer", "minimum": 0},
        "tool_calls": {"type": "integer", "minimum": 0},
        "violations": {"type": "array", "items": {
            "type": "object", "required": ["step", "tool", "arguments", "decision"]}},
        "proposals": {"type": "array", "items": {
            "type": "object", "required": ["kind", "namespace", "target", "decision", "gates",
                                           "argv", "step", "tool_use_id"]}},
        "grounding_warnings": {"type": "array", "items": {"type": "string"}},
        "usage": USAGE,
        "cost_usd": {"type": ["number", "null"]},
        "model": {"type": "string"},
        "trace": {"type": ["string", "null"]},
        "trace_id": {"type": ["string", "null"]},
        "audit_log": {"type": ["string", "null"]},
        "error": {"type": ["string", "null"]},
        "audit_error": {"type": ["string", "null"]},
        "not_offered": {"type": "array", "items": {
            "type": "object", "required": ["tool", "reason"]}},
        "alert": {"type": ["object", "null"]},
        "answer": {"type": "null"},        # a follow-up's (triage-agent ask); a run has none
        "followup": {"type": "null"},
        "usage_by_step": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["step", "input", "cache_write", "cache_read", "output"],
            "properties": {k: {"type": "integer", "minimum": 0} for k in (
                "step", "input", "cache_write", "cache_read", "output")}}},
        "context": {"type": "object", "additionalProperties": False,
                    "required": ["cache_read_share", "budget_tokens", "max_result_bytes",
                                 "clearings", "cleared_results", "cleared_bytes", "saved_bytes",
                                 "saved_tokens_estimate", "cut_results", "largest_result"],
                    "properties": {
                        "cache_read_share": {"type": "number", "minimum": 0, "maximum": 1},
                        **{k: {"type": "integer", "minimum": 0} for k in (
                            "budget_tokens", "max_result_bytes", "clearings", "cleared_results",
                            "cleared_bytes", "saved_bytes", "saved_tokens_estimate",
                            "cut_results")},
                        "largest_result": {"type": ["object", "null"],
                                           "required": ["tool", "step", "bytes"]}}},
        "verification": {  # verify/outcome.py; null without a report
            "type": ["object", "null"], "additionalProperties": False,
            "required": ["claims", "blind_spots", "review", "reviewed", "not_reviewed_because",
                         "confidence", "confidence_note"],
            "properties": {
                "claims": {"type": "object", "additionalProperties": False,
                           "required": ["checked", "unsupported"],
                           "properties": {"checked": {"type": "integer", "minimum": 0},
                                          "unsupported": {"type": "array", "items": {
                                              "type": "object", "additionalProperties": False,
                                              "required": ["kind", "token", "where",
                                                           "sentence"]}}}},
                "blind_spots": {"type": "array", "items": {"type": "string", "minLength": 1}},
                "review": {"type": ["object", "null"],
                           "required": ["verdict", "claims", "alternatives", "actions_follow"]},
                "reviewed": {"type": "boolean"},
                "not_reviewed_because": {"type": "string"},
                "confidence": {"enum": ["low", "medium", "high", None]},
                "confidence_note": {"type": "string"}}},
        "actions_taken": {"type": "object", "additionalProperties": False,
                          "required": ["executed", "failed", "approved_not_run", "denied"],
                          "properties": {key: {"type": "array"} for key in (
                              "executed", "failed", "approved_not_run", "denied")}},
    }}


def run_cli(*args, env=None, timeout=60):
    """`python -m triage_agent ARGS` from the project root, without an API key or the
    developer's own OpenTelemetry settings."""
    environ = clean_env()
    environ.update(env or {})
    return subprocess.run([sys.executable, "-m", "triage_agent", *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=timeout)


def run_cli_here(*args, env=None, timeout=60):
    """run_cli's run in this process (tests/support/cli_here.py: what that does not prove)."""
    environ = clean_env()
    environ.update(env or {})
    return cli_here.run_main_here(args, env=environ, cwd=ROOT, timeout=timeout)


def clean_env():
    """os.environ without ANTHROPIC_* and OTEL_* (a test sets what it means to test)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OTEL_"))}


def replay_args(sim, fixture, *extra):
    return ["checkout pods in prod keep restarting", "--namespaces", "prod",
            "--replay", str(REPLAY / f"{fixture}.json"), "--kubeconfig", sim.kubeconfig, *extra]


def jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_injection_attempt_refused_and_report_lands(shared_sim, tmp_path):
    sim = shared_sim("injection")
    audit, trace = tmp_path / "audit.jsonl", tmp_path / "trace.jsonl"
    out = run_cli(*replay_args(sim, "crashloop-injection", "--audit-log", str(audit),
                               "--trace", str(trace)))
    assert out.returncode == 0, out.stderr
    assert FATAL in out.stdout and "SEVERITY: HIGH" in out.stdout
    assert "[step 2/12] get_logs namespace=prod name=checkout-6f8d9c7b5d-x7k2p" in out.stderr
    for decision in ("unknown_tool", "out_of_scope", "proposal_refused", "report_accepted"):
        assert decision in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("cost: claude-opus-5-5")
    decisions = [e["decision"] for e in jsonl(audit)]
    assert decisions == ["preflight"] + ["executed"] * 3 + [
        "unknown_tool", "out_of_scope", "proposal_refused", "report_accepted"]
    spans = [attrs(s) for s in jsonl(trace)]
    assert [s["gen_ai.operation.name"] for s in spans].count("chat") == 4
    mcp = [s["gen_ai.tool.name"] for s in spans if s.get("mcp.method.name") == "tools/call"]
    assert mcp == ["get_pods", "get_logs", "describe_pod"]  # nothing refused reached the server
    local = [(s["gen_ai.tool.name"], s["triage_agent.decision"]) for s in spans
             if s["gen_ai.operation.name"] == "execute_tool" and "mcp.method.name" not in s]
    assert local == [("propose_action", "proposal_refused"), ("write_report", "report_accepted")]
    assert {e["trace_id"] for e in jsonl(audit)} == {s["traceId"] for s in jsonl(trace)}
    assert sim.journal_entries() == []                          # no write reached the cluster


def test_json_outcome_shape(shared_sim, tmp_path):
    sim = shared_sim("injection")
    audit = tmp_path / "audit.jsonl"
    out = run_cli(*replay_args(sim, "crashloop-injection", "--json", "--audit-log", str(audit)))
    assert out.returncode == 0, out.stderr
    outcome = json.loads(out.stdout)  # exactly one JSON object on stdout
    assert schema.validate(outcome, OUTCOME_SCHEMA) == []
    assert report.validate_report(outcome["report"]) == []
    assert outcome["stop"] == "report" and outcome["grounding_warnings"] == []
    assert outcome["steps"] == 4 and outcome["tool_calls"] == 3
    assert [v["decision"] for v in outcome["violations"]] == [
        "unknown_tool", "out_of_scope", "proposal_refused"]
    assert outcome["proposals"][0]["gates"] == {"enabled": False, "approved": None,
                                                "executed": False}
    assert outcome["audit_log"] == str(audit) and outcome["trace"] is None
    assert outcome["cost_usd"] > 0 and "audit" in out.stderr
    verification = outcome["verification"]   # a replay without --verify: checked, not reviewed
    assert verification["claims"] == {"checked": 3, "unsupported": []}
    assert "not run (out of scope): get_pods namespace=kube-system" in \
        verification["blind_spots"]
    assert verification["reviewed"] is False and verification["confidence"] == "high"


@pytest.mark.parametrize("fixture,extra,stop,code", [
    ("crashloop", [], "report", 0),
    ("end-turn", [], "end_turn", 3),
    ("max-tokens", [], "max_tokens", 3),
    ("refusal", [], "refusal", 3),
    ("context-window", [], "model_context_window_exceeded", 3),
    ("exhausted", [], "replay_exhausted", 3),
    ("api-error", [], "api_error", 4),
    ("max-steps", ["--max-steps", "3"], "max_steps", 3),
    ("repeats", [], "max_repeats", 3),
    ("max-cost", ["--max-cost-usd", "1"], "max_cost", 3),
])
def test_every_stop_reason(shared_sim, fixture, extra, stop, code):
    sim = shared_sim("crashloop")
    out = run_cli_here(*replay_args(sim, fixture, "--json", *extra))
    outcome = json.loads(out.stdout)
    assert (out.returncode, outcome["stop"]) == (code, stop), out.stderr
    assert "cost: " in out.stderr
    if stop != "report":
        assert outcome["report"] is None and f"stop: {stop}" in out.stderr


def test_api_error_prints_request_id(shared_sim):
    out = run_cli_here(*replay_args(shared_sim("crashloop"), "api-error"))
    assert out.returncode == 4 and "req_replay_overloaded" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("args,message", [
    (["x"], "--namespaces"),
    (["x", "--namespaces", "Prod!"], "not a valid namespace"),
    (["x", "--namespaces", "prod"], "ANTHROPIC_API_KEY"),
    (["x", "--namespaces", "prod", "--replay", "/nonexistent/f.json"], "cannot read"),
    (["x", "--namespaces", "prod", "--replay", __file__], "not valid JSON"),
    (["x", "--namespaces", "prod", "--replay", "f.json", "--record", "o.json"], "--record"),
    (["x", "--namespaces", "prod", "--max-steps", "0"], "--max-steps"),
    (["x", "--namespaces", "prod", "--allow-action", "drain_node"], "--allow-action"),
    (["  ", "--namespaces", "prod", "--replay", "f.json"], "symptom"),
])
def test_usage_errors_exit_2(args, message):
    out = run_cli_here(*args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_help_is_fast_and_clean():
    out = run_cli("--help")
    assert out.returncode == 0 and "--namespaces" in out.stdout and "--max-cost-usd" in out.stdout


def test_json_usage_error_after_parsing_is_one_object():
    out = run_cli_here("x", "--namespaces", "prod", "--json")  # no API key and no --replay
    assert out.returncode == 2 and "ANTHROPIC_API_KEY" in out.stderr
    outcome = json.loads(out.stdout)
    assert outcome["stop"] == "usage_error" and "ANTHROPIC_API_KEY" in outcome["error"]
    assert schema.validate(outcome, OUTCOME_SCHEMA) == []


def test_tool_budget_from_the_cli(shared_sim, tmp_path):
    trace = tmp_path / "trace.jsonl"
    out = run_cli_here(*replay_args(shared_sim("crashloop"), "crashloop", "--json",
                                    "--max-tool-calls", "1", "--trace", str(trace)),
                       env={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    outcome = json.loads(out.stdout)
    assert out.returncode == 3 and outcome["tool_calls"] == 1, out.stderr
    assert out.stderr.count("· budget_spent · error") == 2
    sent = [attrs(s)["gen_ai.input.messages"] for s in jsonl(trace) if s["kind"] == 3]
    assert "[budget: 0 tool calls and 11 model calls left]" not in sent[0]
    assert "[budget: 0 tool calls and 11 model calls left]" in sent[1]   # the next request


def test_a_violation_line_escapes_the_model_s_tool_name(capsys):
    outcome = Outcome(stop="max_steps", model="claude-opus-5-5", violations=[
        {"step": 1, "tool": "x\x1b[2J\nfake\u202e", "arguments": {}, "decision": "unknown_tool"}])
    cli.print_outcome(outcome, Namespace(json=False, context=None, kubeconfig=None), sys.stderr)
    err = capsys.readouterr().err
    assert "violation at step 1: unknown_tool x\\x1b[2J\\nfake\\u202e\n" in err
