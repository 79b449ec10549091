"""The CLI against an MCP server that is not ours (tests/support/fake_mcp_server.py, in replay): tool
names the API would reject are mapped and mapped back, tools not annotated read-only are never
offered (and listed once at start-up), a tool shadowing write_report is a start-up error, and a
server that dies twice ends the run with mcp_error and its stderr tail, audit and cost kept."""

import json
import shlex
import sys
from pathlib import Path

from tests.support.fake_messages_api import SMALL_USAGE, response, tool_use
from tests.support.otlp_receiver import attrs
from tests.agent.cli.test_cli import jsonl, run_cli_here
from triage_agent import cli, report

FAKE = Path(__file__).resolve().parents[2] / "support" / "fake_mcp_server.py"
DOTTED, LONG = "k8s.echo.v1", "inspect_" + "x" * 70     # neither is a valid API tool name
LONG_API = LONG[:56]                                     # what build_toolset maps it to


def message(*uses):
    blocks = [tool_use(f"toolu_{name[:8]}_{i}", name, arguments)
              for i, (name, arguments) in enumerate(uses)]
    return response("tool_use", *blocks, usage=SMALL_USAGE)


def cli_args(tmp_path, *responses, server_flags=(), extra=()):
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json.dumps({"description": "foreign server", "responses": responses}))
    command = shlex.join([sys.executable, str(FAKE), *server_flags])
    return ["web pods fail", "--namespaces", "prod", "--replay", str(fixture), "--mcp", command,
            "--json", *extra]


def test_dotted_and_long_names_round_trip_and_unsafe_tools_are_not_offered(tmp_path):
    trace, audit = tmp_path / "trace.jsonl", tmp_path / "audit.jsonl"
    flags = ["--read-only", "echo,mixed", "--rename", f"echo={DOTTED}", "--rename",
             f"mixed={LONG}"]
    out = run_cli_here(*cli_args(tmp_path, message(("k8s_echo_v1", {"namespace": "prod"}),
                                                   (LONG_API, {}), ("crash", {})),
                                 server_flags=flags, extra=["--trace", str(trace),
                                                            "--audit-log", str(audit)]),
                       env={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    assert out.returncode == 3 and json.loads(out.stdout)["stop"] == "replay_exhausted"
    offered_lines = [line for line in out.stderr.splitlines() if "not offered" in line]
    assert "(not annotated read-only)" in offered_lines[0]
    assert len(offered_lines) == 1 and "crash" in offered_lines[0] and "env" in offered_lines[0]
    spans = [attrs(s) for s in jsonl(trace)]
    tools = [t["name"] for t in json.loads(spans[0]["gen_ai.tool.definitions"])]
    assert tools == ["k8s_echo_v1", LONG_API, "propose_action", "write_report"]
    executed = {s["gen_ai.tool.name"]: s["gen_ai.tool.call.result"] for s in spans
                if s["gen_ai.operation.name"] == "execute_tool"}
    assert executed == {DOTTED: '{"namespace": "prod"}', LONG: executed[LONG]}
    assert executed[LONG].startswith("first") and executed[LONG].endswith("last")
    decisions = [(e["tool"], e["decision"]) for e in jsonl(audit) if e["step"]]
    assert decisions == [(DOTTED, "executed"), (LONG, "executed"), ("crash", "unknown_tool")]


def test_a_server_tool_named_write_report_is_a_start_up_error(tmp_path):
    out = run_cli_here(*cli_args(tmp_path, message(("get_pods", {})), server_flags=[
        "--read-only", "echo", "--rename", "echo=write_report"]))
    assert out.returncode == 2 and "'write_report'" in out.stderr
    assert "Traceback" not in out.stderr
    outcome = json.loads(out.stdout)  # --json: still exactly one object
    assert outcome["stop"] == "usage_error" and "write_report" in outcome["error"]


def test_a_server_that_dies_again_after_its_restart_ends_the_run(tmp_path):
    audit = tmp_path / "audit.jsonl"
    out = run_cli_here(*cli_args(tmp_path, message(("crash", {})), message(("echo", {"n": 1})),
                                 message(("crash", {})), server_flags=["--read-only", "crash,echo"],
                                 extra=["--audit-log", str(audit)]))
    outcome = json.loads(out.stdout)
    assert out.returncode == 4 and outcome["stop"] == "mcp_error", out.stderr
    assert "already restarted 1 time" in outcome["error"]
    assert "panic: the fake server crashed on purpose" in outcome["error"]  # the stderr tail
    assert outcome["tool_calls"] == 2 and "Traceback" not in out.stderr
    assert [e["decision"] for e in jsonl(audit) if e["step"]] == ["executed", "executed",
                                                                  "mcp_error"]
    assert out.stderr.strip().splitlines()[-1].startswith("cost: ")


def test_json_failure_before_the_run_is_still_one_object(tmp_path):
    out = run_cli_here(*cli_args(tmp_path, message(("echo", {})), server_flags=["--die-at-start"]))
    assert out.returncode == 4 and "fatal: cannot load configuration" in out.stderr
    outcome = json.loads(out.stdout)
    assert outcome["stop"] == "mcp_error" and outcome["steps"] == 0
    assert "fatal: cannot load configuration" in outcome["error"]


def test_a_missing_report_schema_is_a_configuration_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(report, "SCHEMA_PATH", tmp_path / "gone.json")
    monkeypatch.setattr(report, "INSTALLED_SCHEMA_PATH", tmp_path / "gone.json", raising=False)
    report.load_report_schema.cache_clear()
    try:
        code = cli.main(cli_args(tmp_path, message(("echo", {})),
                                 server_flags=["--read-only", "echo"]))
    finally:
        report.load_report_schema.cache_clear()
    captured = capsys.readouterr()
    assert code == 2 and "report schema not found" in captured.err
    assert json.loads(captured.out)["stop"] == "usage_error"
