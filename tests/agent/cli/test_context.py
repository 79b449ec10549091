"""The result cap through the real CLI against a server that is not ours (fake_mcp_server --big,
in replay): 5 MB, a single 1 MB line and binary-looking bytes reach the model cut to
--max-result-bytes, the audit keeps their full size, and the outcome and cost line say so."""

import json

from tests.agent.cli.test_cli import jsonl, run_cli_here
from tests.agent.cli.test_foreign import cli_args, message
from tests.support import fake_mcp_server
from tests.support.fake_messages_api import SMALL_USAGE, response, tool_use
from triage_agent import context

BIG = "big_lines,big_line,big_binary"


def test_big_results_from_another_server_are_cut_and_audited_whole(tmp_path, limit=4096):
    audit = tmp_path / "audit.jsonl"
    report = {"summary": "nothing found", "severity": "low", "affected": [], "evidence": [],
              "hypothesis": "none", "confidence": "low", "proposed_actions": [],
              "next_checks": ["look elsewhere"]}
    calls = message(*[(n, {"namespace": "prod"}) for n in BIG.split(",")])
    out = run_cli_here(*cli_args(
        tmp_path, calls,
        response("tool_use", tool_use("toolu_r", "write_report", report), usage=SMALL_USAGE),
        server_flags=["--big", "--read-only", BIG],
        extra=["--audit-log", str(audit), "--max-result-bytes", str(limit)]))
    assert out.returncode == 0, out.stderr
    outcome = json.loads(out.stdout)
    entries = {e["tool"]: e for e in jsonl(audit) if e.get("decision") == "executed"}
    full = {name: len(fake_mcp_server.BIG[name]({}).encode()) for name in BIG.split(",")}
    assert full["big_lines"] > 5_000_000 and full["big_line"] == 1024 * 1024
    for name, size in full.items():
        assert entries[name]["bytes"] == size and entries[name]["shown_bytes"] <= limit + 300
    assert outcome["context"]["cut_results"] == 3 and outcome["context"]["max_result_bytes"] == limit
    assert outcome["context"]["largest_result"] == {"tool": "big_lines", "step": 1,
                                                    "bytes": full["big_lines"]}
    assert "3 result(s) cut to" in out.stderr.strip().splitlines()[-1]
    assert "Traceback" not in out.stderr


def test_the_cut_note_tells_the_model_how_much_was_left_out():
    capped = context.cap_result("\n".join(f"line {i:06d} " + "z" * 88 for i in range(52_429)),
                                32768)
    note = capped.text.rsplit("\n", 1)[-1]
    assert note.startswith("[result cut: ") and "more lines) were left out" in note


def test_a_cap_too_small_to_read_is_a_usage_error(tmp_path):
    out = run_cli_here("web pods fail", "--namespaces", "prod", "--replay",
                       str(tmp_path / "x.json"), "--max-result-bytes", "100")
    assert out.returncode == 2 and "--max-result-bytes 100: a result cut that short" in out.stderr
