"""A follow-up through the loop with scripted models and fake tools: ask_followup continues the
stored conversation (checked against the API's rules on every request), ends through answer,
pushes an ungrounded answer back once, refuses write_report, keeps the gates, and a follow-up's
number is on each audit entry. Two follow-ups in a row keep the conversation valid."""

from argparse import Namespace

from tests.agent.test_loop_fakes import (FATAL, FakeTools, ListRecorder, RecordingRunner,
                                         ScriptedModel, happy_script, logs_call, make_gate,
                                         policy, response, tool_use)
from triage_agent import loop, prompts
from triage_agent.followup import ask, session as sessions


def finished_run():
    """A session of the fake tools' happy run (pods -> logs -> report)."""
    model, transcript = ScriptedModel(*happy_script()), {}
    outcome = loop.run_triage("checkout pods keep restarting", model=model, tools=FakeTools(),
                              policy=policy(), gate=make_gate(), transcript=transcript)
    assert outcome.stop == "report" and model.problems == []
    args = Namespace(symptom="s", allow_action=[], mcp=None, context=None, kubeconfig=None,
                     prometheus_url=None, prometheus_token_file=None, prometheus_ca=None,
                     prometheus_service=None, read_tls_certificates=False,
                     allow_unscoped_tool=[], mcp_timeout=30.0, base_url=None,
                     api_profile=None, effort="medium", max_tokens=100, no_fallbacks=False)
    return sessions.new_session(args, policy=policy(), model_name="claude-opus-5-5",
                                outcome=outcome, transcript=transcript)


def answer_call(tid="toolu_answer", quote=FATAL, cite="toolu_logs", **extra):
    return tool_use(tid, "answer", dict({"answer": "It crashes on a missing setting.",
                                         "evidence": [{"tool_use_id": cite, "quote": quote,
                                                       "interpretation": "why"}],
                                         "report_changed": False}, **extra))


def follow_up(session, *script, gate=None, question="why?"):
    model, recorder, tools = ScriptedModel(*script), ListRecorder(), FakeTools()
    toolset = prompts.build_toolset(tools.list())
    outcome = ask.ask_followup(session, question, model=model, tools=tools, toolset=toolset,
                               policy=ask.followup_policy(session), settings=loop.Settings(),
                               gate=gate or make_gate(), recorder=recorder)
    assert model.problems == []
    return outcome, model, recorder


def test_an_answer_from_the_run_s_results_needs_no_new_call():
    session = finished_run()
    outcome, model, recorder = follow_up(session, response("tool_use", answer_call()))
    assert outcome.stop == "answer" and outcome.exit_code == 0 and outcome.followup == 1
    assert outcome.tool_calls == 0 and outcome.grounding_warnings == []
    assert [e["followup"] for e in recorder.audits] == [1]


def test_an_ungrounded_answer_is_pushed_back_once_then_taken_with_warnings():
    session = finished_run()
    bad = answer_call(quote="the database is down")
    outcome, model, recorder = follow_up(session, response("tool_use", bad),
                                         response("tool_use", answer_call("toolu_a2")))
    assert [e["decision"] for e in recorder.audits] == ["answer_ungrounded", "answer_accepted"]
    assert "answer not accepted" in str(model.requests[1]["messages"][-1])
    assert outcome.stop == "answer" and outcome.grounding_warnings == []


def test_write_report_in_a_follow_up_is_refused_with_what_to_do():
    session = finished_run()
    report = tool_use("toolu_r2", "write_report", session["report"])
    outcome, model, recorder = follow_up(session, response("tool_use", report),
                                         response("tool_use", answer_call()))
    assert recorder.audits[0]["decision"] == "report_refused"
    assert "a follow-up ends with answer" in str(model.requests[1]["messages"][-1])
    assert outcome.stop == "answer" and outcome.report is None


def test_a_follow_up_without_an_answer_ends_at_its_own_budget():
    session = finished_run()
    calls = [response("tool_use", logs_call(f"toolu_l{i}", tail=i + 1)) for i in range(6)]
    outcome, model, _ = follow_up(session, *calls)
    assert outcome.stop == "max_steps" and outcome.exit_code == 3 and len(model.requests) == 6
    assert "Call answer now" in str(model.requests[-1]["messages"][-1])


def test_a_proposal_in_a_follow_up_goes_through_the_gates():
    session = finished_run()
    runner = RecordingRunner()
    gate = make_gate(allowed=("rollout_restart",), execute=True, approve=lambda p: (True, ""),
                     runner=runner)
    propose = tool_use("toolu_p", "propose_action", {"kind": "rollout_restart",
                                                     "namespace": "prod", "target": "checkout",
                                                     "reason": "stuck"})
    outcome, _, _ = follow_up(session, response("tool_use", propose),
                              response("tool_use", answer_call()), gate=gate)
    assert [p["decision"] for p in outcome.proposals] == ["executed"]
    assert runner.argvs[0][-4:] == ["restart", "deployment/checkout", "-n", "prod"]


def test_two_follow_ups_keep_one_valid_conversation():
    session = finished_run()
    first, _, _ = follow_up(session, response("tool_use", logs_call("toolu_l1", tail=5)),
                            response("tool_use", answer_call(cite="toolu_l1")))
    second, _, _ = follow_up(session, response("tool_use", answer_call("toolu_a2",
                                                                        cite="toolu_l1")))
    assert first.stop == second.stop == "answer" and second.followup == 2
    assert [r["followup"] for r in session["runs"]] == [0, 1, 2]


def test_the_stored_conversation_is_cleared_down_to_fit_the_budget():
    session = finished_run()
    session["policy"]["context_budget_tokens"] = 1500   # the stored run alone is more
    cites_pods = answer_call(quote="0/1 CrashLoopBackOff 47", cite="toolu_pods")
    outcome, model, recorder = follow_up(session, response("tool_use", cites_pods))
    assert outcome.stop == "answer" and outcome.context["clearings"] == 1
    [pods] = [b for m in model.requests[0]["messages"] for b in m["content"]
              if b.get("tool_use_id") == "toolu_pods"]
    assert "result cleared from the conversation" in pods["content"][0]["text"]
    assert [e["decision"] for e in recorder.audits][0] == "context_cleared"
    assert outcome.grounding_warnings == []   # a cleared result's quote still verifies


def test_an_answer_is_claim_checked_like_a_report():
    session = finished_run()
    supported, _, _ = follow_up(session, response("tool_use", answer_call()))
    assert supported.verification["claims"]["unsupported"] == []
    assert supported.verification["reviewed"] is False
    wrong = answer_call(answer="It ended with exit code 143 since image checkout:v9.9.9 rolled out.")
    outcome, _, _ = follow_up(session, response("tool_use", wrong))
    tokens = [c["token"] for c in outcome.verification["claims"]["unsupported"]]
    assert "checkout:v9.9.9" in " ".join(tokens) and any("143" in t for t in tokens)
    assert all(c["where"] == "answer" for c in outcome.verification["claims"]["unsupported"])
