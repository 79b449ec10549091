"""The session file in-process: written redacted (thinking blocks excepted, which the API wants
back unchanged), atomically, mode 0600; read back with clear errors; URLs without their user
information. And the answer's checks: schema, report_changed with its report, grounding."""

import json
import os
import stat
from argparse import Namespace

import pytest

from tests.agent.cli.test_cli import ROOT
from triage_agent.followup import answer, ask, session as sessions
from triage_agent.outcome import Outcome
from triage_agent.policy import Policy

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----"


def run_args(**extra):
    values = dict(symptom=f"pods restart; token {TOKEN}", allow_action=["rollout_undo"],
                  mcp=f"my-server --token={TOKEN}", context=None, kubeconfig="/k/config",
                  prometheus_url="https://user:pass@prom.example:9090/",
                  prometheus_token_file=None, prometheus_ca=None, prometheus_service=None,
                  read_tls_certificates=False, allow_unscoped_tool=[], mcp_timeout=30.0,
                  base_url="https://key:secret@gateway.example/", api_profile="anthropic",
                  effort="medium", max_tokens=16000, no_fallbacks=False)
    values.update(extra)
    return Namespace(**values)


def transcript():
    thinking = {"type": "thinking", "thinking": f"the log shows {TOKEN}?", "signature": "sig=="}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": f"symptom {TOKEN}"}]},
        {"role": "assistant", "content": [thinking, {"type": "tool_use", "id": "toolu_1",
                                                     "name": "get_logs",
                                                     "input": {"match": TOKEN}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": [{"type": "text", "text": PEM}],
                                      "is_error": False}]}]
    return {"messages": messages, "results": {"toolu_1": f"password={TOKEN}"},
            "calls": {"toolu_1": ("get_logs", {"match": TOKEN})}}


def new(**extra):
    outcome = Outcome(stop="report", model="m", report={"summary": f"leaked {TOKEN}"})
    return sessions.new_session(run_args(**extra), policy=Policy(namespaces=("prod",)),
                                model_name="claude-opus-5-5", outcome=outcome,
                                transcript=transcript())


def test_the_file_holds_nothing_unredacted_and_is_private(tmp_path):
    path = tmp_path / "s.json"
    sessions.write_session(path, new())
    text = path.read_text()
    assert TOKEN not in text.replace(f"the log shows {TOKEN}?", "")  # only the thinking block
    assert "MIIEowIBAAKCAQEA7x" not in text and "user:pass" not in text and "key:secret" not in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]      # no temp file left
    doc = sessions.load_session(path)
    thinking = doc["conversation"]["messages"][1]["content"][0]
    assert thinking == {"type": "thinking", "thinking": f"the log shows {TOKEN}?",
                        "signature": "sig=="}                     # sent back unchanged
    assert doc["model"]["base_url"] == "https://gateway.example/"
    assert doc["policy"]["server"]["prometheus_url"] == "https://prom.example:9090/"


def test_a_rewrite_replaces_the_file_whole(tmp_path):
    path = tmp_path / "s.json"
    path.write_text("old")
    os.chmod(path, 0o644)
    sessions.write_session(path, new())
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and sessions.load_session(path)


@pytest.mark.parametrize("change, problem", [
    (lambda d: d.update(format="other"), "not a triage-agent session"),
    (lambda d: d.update(version=99), "version 99"),
    (lambda d: d["policy"].update(namespaces=[]), "no namespaces"),
    (lambda d: d["conversation"].update(messages=[{"role": "system", "content": []}]),
     "user and assistant turns"),
    (lambda d: d.update(runs=None), "no runs list")])
def test_a_broken_session_is_named(tmp_path, change, problem):
    doc = json.loads(json.dumps(new(), default=list))
    change(doc)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(sessions.SessionError, match=problem):
        sessions.load_session(path)


def test_the_question_follows_the_last_turn_s_results():
    messages = transcript()["messages"]
    asked = ask.continued(messages, "the question")
    assert asked[:-1] == messages[:-1] and messages[-1]["content"][-1]["type"] == "tool_result"
    assert [b["type"] for b in asked[-1]["content"]] == ["tool_result", "text"]
    unanswered = ask.continued(messages[:-1], "the question")   # the run stopped mid-round
    assert [b["type"] for b in unanswered[-1]["content"]] == ["tool_result", "text"]
    assert unanswered[-1]["content"][0]["is_error"] and "not run" in json.dumps(unanswered[-1])


def test_scope_can_only_narrow():
    doc = new()
    doc["policy"]["namespaces"] = ["prod", "staging"]
    assert ask.followup_policy(doc, namespaces=("staging",)).namespaces == ("staging",)
    assert ask.followup_policy(doc).namespaces == ("prod", "staging")
    with pytest.raises(ValueError, match="'kube-system' is not in the session's scope"):
        ask.followup_policy(doc, namespaces=("prod", "kube-system"))
    policy = ask.followup_policy(doc)
    assert (policy.max_steps, policy.max_tool_calls) == (6, 10)


@pytest.mark.parametrize("question", ["", "   ", "x" * 2001])
def test_an_empty_or_long_question_is_refused(question):
    with pytest.raises(ask.AskError):
        ask.check_question(question)


QUOTE = "Back-off restarting failed container checkout"
RESULTS = {"toolu_1": f"Warning BackOff {QUOTE} in pod checkout-6f8d9c7b5d-x7k2p"}


def reply(**extra):
    return dict({"answer": "It restarts.", "evidence": [
        {"tool_use_id": "toolu_1", "quote": QUOTE, "interpretation": "restarts"}],
        "report_changed": False}, **extra)


def test_the_answer_s_schema_and_report_rules():
    assert answer.answer_problems(reply()) == []
    assert "required when report_changed" in answer.answer_problems(
        reply(report_changed=True))[0]
    stale = json.loads((ROOT / "fixtures/replay/crashloop.json").read_text())
    full = stale["responses"][-1]["content"][-1]["input"]
    assert "only with report_changed true" in answer.answer_problems(reply(report=full))[0]
    assert answer.answer_problems("text") == ["answer: expected a JSON object"]
    assert answer.answer_problems({"answer": "x"})   # evidence and report_changed missing


def test_check_answer_grounds_quotes_names_and_a_revised_report():
    assert answer.check_answer(reply(), RESULTS) == []
    made_up = reply(answer="pod checkout-6f8d9c7b5d-zzzzz is fine",
                    evidence=[{"tool_use_id": "toolu_9", "quote": QUOTE, "interpretation": ""},
                              {"tool_use_id": "toolu_1", "quote": "not there",
                               "interpretation": ""}])
    warnings = answer.check_answer(made_up, RESULTS)
    assert any(w.startswith("answer: name 'checkout-6f8d9c7b5d-zzzzz'") for w in warnings)
    assert any("toolu_9" in w for w in warnings) and any("quote not found" in w
                                                         for w in warnings)
    revised = reply(report_changed=True, report={"evidence": [
        {"tool_use_id": "toolu_1", "quote": "nowhere", "interpretation": ""}]})
    assert answer.check_answer(revised, RESULTS) == [
        "report.evidence[0]: quote not found in the result of toolu_1"]


def test_the_answer_tool_is_strict_and_sent_as_strict_mode_allows():
    from tests.support.fake_messages_api import strict_schema_problems
    from triage_agent.prompts import Toolset
    toolset = answer.add_answer_tool(Toolset())
    [tool] = toolset.api_tools
    assert tool["strict"] is True and strict_schema_problems(tool["input_schema"]) == []
