"""`triage-agent ask` end to end in replay: the real CLI (in this process), the real MCP server,
real kubectl, kube_sim. A run keeps its session; a replayed follow-up answers from it, is
refused outside the session's scope, goes through the same three gates, may revise the report
(the old one kept), and appends its audit and trace with its number."""

import json
import os
import shutil
import sys
import stat

import pytest

from tests.agent.cli.test_cli import REPLAY, run_cli, run_cli_here
from mcp_kubectl_server.redact import redact
from tests.support.fake_messages_api import FakeMessagesApi, conversation_problems
from triage_agent.followup import session as sessions

SYMPTOM = "checkout pods in prod keep restarting"
FATAL = "FATAL: required environment variable PAYMENT_API_URL is not set"


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def kept(shared_sim, tmp_path_factory):
    """{namespaces: session file} of replayed crashloop runs, made once for the module."""
    sim, made = shared_sim("crashloop"), {}

    def get(namespaces="prod", *extra):
        key = (namespaces, extra)
        if key not in made:
            path = tmp_path_factory.mktemp("session") / "run.session.json"
            out = run_cli_here(SYMPTOM, "--namespaces", namespaces, "--replay",
                               str(REPLAY / "crashloop.json"), "--kubeconfig", sim.kubeconfig,
                               "--session", str(path), *extra)
            assert out.returncode == 0, out.stderr
            made[key] = path
        return made[key]
    return sim, get


def copy_of(kept_path, tmp_path):
    path = tmp_path / "s.json"
    shutil.copy(kept_path, path)
    return path


def ask(session, question, fixture, *extra):
    return run_cli_here("ask", str(session), question, "--replay",
                        str(REPLAY / f"{fixture}.json"), *extra)


def test_a_run_keeps_its_session_private_and_redacted(kept):
    _, get = kept
    path = get()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    doc = json.loads(path.read_text())
    assert sessions.session_problem(doc) is None
    assert doc["policy"]["namespaces"] == ["prod"] and doc["runs"][0]["stop"] == "report"
    messages = doc["conversation"]["messages"]
    assert messages[-2]["content"][-1]["name"] == "write_report"       # the model's last turn
    assert messages[-1]["content"][0]["tool_use_id"] == "toolu_07report"  # and its result
    assert doc["report"]["severity"] == "high" and doc["history"] == []
    assert FATAL in doc["conversation"]["results"]["toolu_02logs"]
    assert not conversation_problems(messages)
    assert "ANTHROPIC" not in path.read_text() and "api_key" not in path.read_text()
    assert [t for t in strings(doc) if redact(t) != t] == []    # nothing redaction would change


def strings(value):
    """Every string in a JSON value, thinking blocks left out (sent back as they came)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict) and value.get("type") not in ("thinking", "redacted_thinking"):
        for item in value.values():
            yield from strings(item)


def test_a_replayed_follow_up_answers_and_grows_the_session(kept, tmp_path):
    _, get = kept
    session = copy_of(get(), tmp_path)
    audit, trace = tmp_path / "audit.jsonl", tmp_path / "trace.jsonl"
    out = ask(session, "what about the other replica?", "followup-other-replica",
              "--audit-log", str(audit), "--trace", str(trace))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ANSWER (follow-up 1)") and "m4q9z" in out.stdout
    assert "[step 1/6] get_logs" in out.stderr and "follow-up 1: cost:" in out.stderr
    doc = json.loads(session.read_text())
    assert [(r["followup"], r["stop"]) for r in doc["runs"]] == [(0, "report"), (1, "answer")]
    assert doc["runs"][1]["question"] == "what about the other replica?"
    assert "toolu_f1logs" in doc["conversation"]["results"]        # its result is citable now
    assert not conversation_problems(doc["conversation"]["messages"])
    assert {e["followup"] for e in jsonl(audit)} == {1}
    spans = jsonl(trace)
    assert spans and all(any(a["key"] == "triage_agent.followup" for a in s["attributes"])
                         for s in spans)


def test_json_outcome_of_a_follow_up(kept, tmp_path):
    _, get = kept
    out = ask(copy_of(get(), tmp_path), "what about the other replica?",
              "followup-other-replica", "--json")
    outcome = json.loads(out.stdout)
    assert out.returncode == 0 and outcome["stop"] == "answer" and outcome["followup"] == 1
    assert outcome["answer"]["report_changed"] is False and outcome["report"] is None
    assert outcome["grounding_warnings"] == []


def test_an_out_of_scope_call_in_a_follow_up_is_refused(kept, tmp_path):
    _, get = kept
    out = ask(copy_of(get(), tmp_path), "also look at kube-system", "followup-out-of-scope",
              "--json")
    outcome = json.loads(out.stdout)
    assert out.returncode == 0, out.stderr
    assert [v["decision"] for v in outcome["violations"]] == ["out_of_scope"]
    assert outcome["tool_calls"] == 0


def test_namespaces_on_ask_only_narrow(kept, tmp_path):
    _, get = kept
    session = copy_of(get("prod,staging"), tmp_path)
    wider = ask(session, "q", "followup-other-replica", "--namespaces", "prod,kube-system")
    assert wider.returncode == 2 and "'kube-system' is not in the session's scope" in wider.stderr
    narrowed = ask(session, "what about the other replica?", "followup-other-replica",
                   "--namespaces", "staging", "--json")
    outcome = json.loads(narrowed.stdout)
    assert [v["decision"] for v in outcome["violations"]][0] == "out_of_scope"  # prod, now
    assert json.loads(session.read_text())["policy"]["namespaces"] == ["prod", "staging"]


def test_a_proposal_in_a_follow_up_meets_the_same_gates(kept, tmp_path):
    sim, get = kept
    no_kinds = ask(copy_of(get(), tmp_path), "should we roll back?", "followup-propose",
                   "--json")
    [proposal] = json.loads(no_kinds.stdout)["proposals"]
    assert proposal["decision"] == "refused" and proposal["gates"]["enabled"] is False
    assert ask(copy_of(get(), tmp_path), "q", "followup-propose", "--execute").returncode == 2
    enabled = copy_of(get("prod", "--allow-action", "rollout_undo"), tmp_path)
    out = ask(enabled, "should we roll back?", "followup-propose", "--json", "--execute")
    [proposal] = json.loads(out.stdout)["proposals"]
    assert proposal["decision"] != "executed"   # no terminal here: approval fails closed
    assert sim.journal_entries() == []


def test_a_revised_report_replaces_the_session_s_and_keeps_the_old(kept, tmp_path):
    _, get = kept
    session = copy_of(get(), tmp_path)
    before = json.loads(session.read_text())["report"]
    out = ask(session, "is the other replica failing too?", "followup-revise")
    assert out.returncode == 0, out.stderr
    assert "THE REPORT WAS REVISED" in out.stdout and "Both replicas" in out.stdout
    doc = json.loads(session.read_text())
    assert doc["report"]["summary"].startswith("Both replicas")
    assert doc["history"] == [{"followup": 1, "report": before,
                               "replaced_at": doc["history"][0]["replaced_at"]}]


def test_a_follow_up_without_an_answer_exits_3(kept, tmp_path):
    _, get = kept
    out = ask(copy_of(get(), tmp_path), "q", "end-turn", "--json")
    assert out.returncode == 3 and json.loads(out.stdout)["stop"] != "answer"


@pytest.mark.parametrize("content, message", [
    ("not json", "is not valid JSON"), ('{"format": "x"}', "not a triage-agent session"),
    (None, "cannot read session")])
def test_a_broken_session_is_a_usage_error(tmp_path, content, message):
    path = tmp_path / "s.json"
    if content is not None:
        path.write_text(content)
    out = run_cli_here("ask", str(path), "q", "--replay", str(REPLAY / "crashloop.json"))
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_the_first_request_is_the_stored_conversation_plus_the_question(kept, tmp_path):
    """The strict fake API: any broken conversation rule would be a 400 (exit 4)."""
    _, get = kept
    session = copy_of(get(), tmp_path)
    stored = json.loads(session.read_text())["conversation"]["messages"]
    script = json.loads((REPLAY / "followup-other-replica.json").read_text())["responses"]
    with FakeMessagesApi(script) as fake:
        out = run_cli("ask", str(session), "what about the other replica?", "--base-url",
                      fake.url, "--no-stream", env={"ANTHROPIC_API_KEY": "sk-test"})
    assert out.returncode == 0, out.stderr
    first = fake.requests[0]["body"]
    assert first["messages"][:-1] == stored[:-1]
    assert [b.get("tool_use_id") for b in first["messages"][-1]["content"]] == [
        "toolu_07report", None]
    assert "what about the other replica?" in first["messages"][-1]["content"][-1]["text"]
    names = [t["name"] for t in first["tools"]]
    assert "write_report" in names and names[-1] == "answer"
    assert first["model"] == "claude-opus-5-5"


def test_a_server_that_does_not_start_is_exit_4_and_a_long_question_exit_2(kept, tmp_path):
    _, get = kept
    session = copy_of(get(), tmp_path)
    doc = json.loads(session.read_text())
    doc["policy"]["server"]["mcp"] = f"{sys.executable} -c 'raise SystemExit(3)'"
    session.write_text(json.dumps(doc))
    out = ask(session, "why?", "followup-other-replica", "--json")
    assert out.returncode == 4 and json.loads(out.stdout)["stop"] == "mcp_error"
    assert "Traceback" not in out.stderr
    long = ask(copy_of(get(), tmp_path), "x" * 2001, "followup-other-replica")
    assert long.returncode == 2 and "longer than 2000 characters" in long.stderr
