"""The safety records fail closed, through the real CLI: an --audit-log that cannot be opened, and
--execute without any --allow-action, are usage errors (exit 2, one --json outcome) before
anything starts: the MCP server's start marker stays unwritten and no model is called."""

import json
import shlex
import sys

import pytest

from tests.support.fake_messages_api import SMALL_USAGE, response, tool_use
from tests.agent.cli.test_cli import OUTCOME_SCHEMA, run_cli_here
from tests.agent.cli.test_foreign import FAKE
from triage_agent import schema


def argv(tmp_path, *extra):
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json.dumps({"description": "never reached", "responses": [
        response("tool_use", tool_use("toolu_1", "echo", {}), usage=SMALL_USAGE)]}))
    server = shlex.join([sys.executable, str(FAKE), "--marker", str(tmp_path / "started")])
    return ["web pods fail", "--namespaces", "prod", "--replay", str(fixture), "--mcp", server,
            "--json", *extra]


@pytest.mark.parametrize("extra, words", [
    (["--audit-log", "{tmp}/no/such/dir/audit.jsonl"],
     "a run whose audit cannot be written does not start"),
    (["--audit-log", "{tmp}"], "Is a directory"),
    (["--execute"], "--execute without --allow-action can never run anything"),
    (["--execute", "--audit-log", "{tmp}/audit.jsonl"], "--allow-action KIND"),
    (["--execute", "--allow-action", "delete_pod", "--pending-approvals", "{tmp}/r-1"],
     "cannot be combined with --execute"),
])
def test_a_run_that_cannot_be_recorded_or_act_does_not_start(tmp_path, extra, words):
    extra = [word.replace("{tmp}", str(tmp_path)) for word in extra]
    out = run_cli_here(*argv(tmp_path, *extra))
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr
    outcome = json.loads(out.stdout)  # --json: still exactly one object
    assert outcome["stop"] == "usage_error" and words in outcome["error"]
    assert outcome["steps"] == 0 and schema.validate(outcome, OUTCOME_SCHEMA) == []
    assert not (tmp_path / "started").exists()  # the MCP server never started
    assert not (tmp_path / "audit.jsonl").exists()
