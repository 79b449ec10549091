"""What the operator reads, through the real CLI: money without float noise, no `None` in a
message, ^C at the approval prompt, cut values marked in progress lines, `--mcp ""`, `--help`
(each option's default, the exit codes, the environment), and the Claude Code commands of
docs/claude-code.md against the real server's tools. The approvals themselves are in test_cli_gates.py."""

import json
import os
import re
import shlex

import pytest

from tests.support.fake_messages_api import SMALL_USAGE, response, tool_use
from tests.agent.cli.test_cli import REPLAY, ROOT, jsonl, replay_args, run_cli, run_cli_here
from tests.agent.cli.test_gates import fixture as gates_fixture
from tests.agent.cli.test_gates import run_on_pty
from tests.project.test_outputs import server_tools
from triage_agent import cli
from triage_agent.telemetry import records
from triage_agent.outcome import EXIT_CODES

CLAUDE_CODE = ROOT / "docs" / "claude-code.md"


def test_money_is_rounded_wherever_it_is_shown(shared_sim, tmp_path):
    sim = shared_sim("crashloop")
    fixture = json.loads((REPLAY / "crashloop.json").read_text())
    total = records.Usage()
    for item in fixture["responses"][:4]:   # a replay without --verify leaves the review's out
        total.add(item["model"], item["usage"])
    assert len(repr(total.cost).split(".")[1]) > 6          # the fixture's sum has float noise
    trace = tmp_path / "trace.jsonl"
    out = run_cli_here(*replay_args(sim, "crashloop", "--json", "--trace", str(trace)))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["cost_usd"] == round(total.cost, 6) == 0.066124
    assert not re.search(r"\d\.\d{7,}", out.stdout + out.stderr + trace.read_text())
    assert "· $0.0661 (prices of" in out.stderr              # the cost line, for people


def test_no_none_in_an_api_error_without_an_http_response(shared_sim, tmp_path):
    fixture = tmp_path / "no-response.json"
    fixture.write_text(json.dumps({"description": "the API never answered", "responses": [
        {"error": {"type": "connection_error", "message": "cannot reach the API"}}]}))
    out = run_cli_here("checkout restarts", "--namespaces", "prod", "--replay", str(fixture),
                       "--kubeconfig", shared_sim("crashloop").kubeconfig, "--json")
    assert out.returncode == 4
    error = json.loads(out.stdout)["error"]
    assert error.startswith("model API error (no HTTP response) connection_error: cannot reach")
    assert "None" not in out.stderr and "None" not in error


def test_ctrl_c_at_the_approval_prompt_ends_the_prompt_line_first(shared_sim, tmp_path):
    sim = shared_sim("crashloop")
    argv = ["checkout crash-loops", "--namespaces", "prod", "--replay",
            str(gates_fixture(tmp_path)), "--kubeconfig", sim.kubeconfig,
            "--allow-action", "rollout_restart", "--json"]
    code, stdout, screen = run_on_pty(argv, lambda master: os.write(master, b"\x03"))  # ^C
    assert code == 130, screen
    assert json.loads(stdout)["stop"] == "interrupted"
    lines = screen.splitlines()
    stop_line = next(line for line in lines if "run ended without a report" in line)
    assert stop_line == "triage-agent: run ended without a report (stop: interrupted)"
    prompt = next(line for line in lines if "Run this command?" in line)
    assert "triage-agent" not in prompt and "interrupted" not in prompt
    assert sim.journal_entries() == []


def test_progress_lines_mark_a_cut_value(shared_sim, tmp_path):
    long_name = "checkout-" + "x" * 100
    fixture = tmp_path / "long.json"
    fixture.write_text(json.dumps({"description": "a long argument", "responses": [
        response("tool_use", tool_use("toolu_1", "get_logs", {"namespace": "prod",
                                                              "name": long_name}),
                 usage=SMALL_USAGE)]}))
    audit = tmp_path / "audit.jsonl"
    out = run_cli_here("checkout restarts", "--namespaces", "prod", "--replay", str(fixture),
                       "--kubeconfig", shared_sim("crashloop").kubeconfig, "--audit-log", str(audit))
    progress = next(line for line in out.stderr.splitlines() if line.startswith("[step 1/"))
    assert progress == f"[step 1/12] get_logs namespace=prod name={long_name[:59]}\u2026"
    audit_line = next(line for line in out.stderr.splitlines() if line.startswith("[audit]"))
    assert f"name={long_name[:59]}\u2026" in audit_line
    model_calls = [e for e in jsonl(audit) if e["step"] > 0]     # after the preflight's entry
    assert model_calls[0]["arguments"]["name"] == long_name      # the record keeps it whole


@pytest.mark.parametrize("command,message", [
    ("", "--mcp: the command is empty"),
    ("   ", "--mcp: the command is empty"),
    ('"unclosed', "--mcp: No closing quotation"),
])
def test_an_empty_mcp_command_is_a_usage_error(command, message):
    out = run_cli_here("x", "--namespaces", "prod", "--replay", str(REPLAY / "crashloop.json"),
                       "--mcp", command, "--json")
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
    outcome = json.loads(out.stdout)
    assert outcome["stop"] == "usage_error" and message in outcome["error"]


def help_entries(text):
    """{option strings: help text} of argparse's options section."""
    section = text.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    entries, current = {}, None
    for line in section.splitlines():
        if line.startswith("  -"):
            current = line.split("  ", 2)[1].strip()
            entries[current] = line
        else:
            entries[current] += " " + line.strip()
    return entries


def env_vars_read():
    """The ANTHROPIC_* and OTEL_* names the triage CLI's modules mention (evaluate.py is a
    command of its own)."""
    names = set()
    for path in (ROOT / "triage_agent").glob("*.py"):
        if path.name != "evaluate.py":
            names |= set(re.findall(r"\b((?:ANTHROPIC|OTEL)_[A-Z_]+)\b", path.read_text()))
    return names


def test_help_shows_every_default_the_exit_codes_and_the_environment():
    out = run_cli("--help")
    assert out.returncode == 0 and "None" not in out.stdout
    entries = help_entries(out.stdout)
    options = [a for a in cli.build_parser()._actions if a.option_strings and a.dest != "help"]
    for action in options:
        entry = next(v for k, v in entries.items() if action.option_strings[-1] in k)
        assert "default" in entry, entry
        if action.default not in (None, False, []):   # a real value: the help shows that one
            shown = f"{action.default:g}" if isinstance(action.default, float) else \
                str(action.default)
            assert f"(default: {shown})" in entry, entry
    codes = out.stdout.split("exit codes:", 1)[1].split("environment:", 1)[0]
    for code in set(EXIT_CODES.values()) | {3, 143, 129}:
        assert re.search(rf"(^|\s|,){code}\b", codes), code
    environment = out.stdout.split("environment:", 1)[1]
    names = env_vars_read()
    assert {"ANTHROPIC_API_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SDK_DISABLED"} <= names
    assert sorted(n for n in names if n not in environment) == []


def test_the_docs_give_claude_code_every_tool_of_the_server():
    section = CLAUDE_CODE.read_text(encoding="utf-8")
    command = next(block for block in re.findall(r"```sh\n(.*?)```", section, re.S)
                   if "claude -p" in block)
    words = shlex.split(command.replace("\\\n", " "))
    assert words[:2] == ["claude", "-p"]
    allowed = words[words.index("--allowedTools") + 1].split(",")
    settings = json.loads(next(block for block in re.findall(r"```json\n(.*?)```", section, re.S)
                               if '"permissions"' in block))
    listed = settings["permissions"]["allow"]
    assert sorted(allowed) == sorted(listed) and len(set(listed)) == len(listed)
    offered = {"mcp__kubectl-ro__" + tool["name"] for tool in server_tools()}
    assert offered <= set(listed)                       # every tool the server offers
    assert all(name.startswith("mcp__kubectl-ro__") for name in listed)
    assert "claude mcp add kubectl-ro " in section       # the name the rules depend on
    assert ".claude/settings.json" in section
