"""The skeptical second reading (verify/review.py) through the loop, against the scripted model
that checks every request as the API would (tests/agent/test_loop_fakes.py): the request's
shape, the report kept as written, the cost counted, and every way the review can fail."""

from tests.agent.test_loop_fakes import (FATAL, REVIEW_USAGE, SUPPORTED_REVIEW, FakeTools,
                                         ListRecorder, ScriptedModel, good_report, happy_script,
                                         logs_call, policy, report_call, response,
                                         review_response, text, tool_use)
from tests.support.fake_messages_api import strict_schema_problems
from triage_agent import schema
from triage_agent.loop import run_triage
from triage_agent.model.errors import ApiError
from triage_agent.telemetry import records
from triage_agent.verify import claims, review

SUPPORTED = SUPPORTED_REVIEW


def keys(node):
    """Every key used anywhere in a JSON schema."""
    if isinstance(node, dict):
        return set(node) | {k for value in node.values() for k in keys(value)}
    if isinstance(node, list):
        return {k for value in node for k in keys(value)}
    return set()


def answer(review_input=SUPPORTED, tid="toolu_review"):
    return review_response(review_input, tid)


def run(*after, reviewing=True, **budget):
    model, recorder = ScriptedModel(*happy_script(), *after), ListRecorder()
    outcome = run_triage("checkout pods keep restarting", model=model, tools=FakeTools(),
                         policy=policy(**budget), recorder=recorder, review=reviewing)
    assert model.problems == [] and outcome.stop == "report" and outcome.exit_code == 0
    return outcome, model, recorder


def test_the_review_request_offers_exactly_review_report_strict_in_a_fresh_conversation():
    outcome, model, _ = run(answer())
    request = model.requests[-1]
    assert [t["name"] for t in request["tools"]] == ["review_report"]
    tool = request["tools"][0]
    assert tool["strict"] is True and strict_schema_problems(tool["input_schema"]) == []
    # the bounds strict mode does not take are kept for the loop's own validation
    assert tool["input_schema"] == schema.strict_tool_schema(review.REVIEW_SCHEMA)
    assert "maxItems" not in keys(tool["input_schema"]) and "maxLength" not in keys(
        tool["input_schema"])
    assert {"maxItems", "maxLength", "minLength"} <= keys(review.REVIEW_SCHEMA)
    assert request["system"] == [{"type": "text", "text": review.REVIEW_SYSTEM}]
    assert len(request["messages"]) == 1 and request["messages"][0]["role"] == "user"
    asked = request["messages"][0]["content"][0]["text"]
    assert FATAL in asked and "--- toolu_logs (get_logs namespace=prod" in asked
    assert "Claim checks by code: 1 of 1" in asked and "What this run could not see" in asked
    for absent in ("thinking", "temperature", "tool_choice"):
        assert absent not in request
    assert outcome.verification["reviewed"] is True
    assert outcome.verification["review"] == SUPPORTED


def test_the_report_is_kept_as_written_and_the_review_is_not_a_step():
    outcome, model, _ = run(answer(dict(SUPPORTED, verdict="unsupported", claims=[
        dict(SUPPORTED["claims"][0], status="contradicted")])), max_steps=3)
    assert outcome.report == good_report() and outcome.report["confidence"] == "high"
    assert outcome.steps == 3 and len(model.requests) == 4   # three steps, then the review
    verification = outcome.verification
    assert verification["confidence"] == "medium"
    assert verification["confidence_note"] == "lowered from high: review: 1 claim contradicted"


def test_the_review_is_counted_in_tokens_cost_the_audit_and_the_trace():
    outcome, _, recorder = run(answer())
    assert outcome.usage == {"input": 300 + 1200, "output": 60 + 300, "cache_read": 0,
                             "cache_write": 0}
    expected = sum(records.cost_usd("claude-opus-5-5", usage) for usage in
                   [response("end_turn")["usage"]] * 3 + [REVIEW_USAGE])
    assert abs(outcome.cost_usd - expected) < 1e-9
    reviewed = [a for a in recorder.audits if a.get("tool") == "review_report"]
    assert reviewed == [dict(step=3, tool="review_report", decision="reviewed",
                             verdict="supported", flagged=0)]
    spans = [s for s in recorder.traces if s.get("name", "").startswith("review_report")]
    assert len(spans) == 1 and spans[0]["attributes"]["gen_ai.usage.input_tokens"] == 1200
    assert spans[0]["attributes"].get("triage_agent.step") is None   # not a step


def test_no_review_when_turned_off():
    outcome, model, recorder = run(answer(), reviewing=False)
    assert len(model.requests) == 3 and outcome.verification["review"] is None
    assert outcome.verification["reviewed"] is False
    assert outcome.verification["not_reviewed_because"].startswith("turned off")
    assert outcome.verification["claims"] == {"checked": 1, "unsupported": []}
    assert not [a for a in recorder.audits if a.get("tool") == "review_report"]


def test_an_api_error_loses_the_review_not_the_report():
    outcome, _, recorder = run(ApiError(529, "overloaded_error", "busy", request_id="req_9"))
    verification = outcome.verification
    assert verification["reviewed"] is False and verification["review"] is None
    assert "overloaded_error" in verification["not_reviewed_because"]
    assert "req_9" in verification["not_reviewed_because"]
    assert outcome.report == good_report() and verification["confidence"] == "high"
    assert recorder.audits[-1]["decision"] == "review_failed"
    assert any(s.get("error") for s in recorder.traces if "review_report" in s.get("name", ""))


def test_a_broken_model_seam_or_response_loses_only_the_review():
    for item in (RuntimeError("socket gone"), {"content": "not a list"},
                 response("tool_use", usage={"input_tokens": -1})):
        outcome, _, _ = run(item)
        assert outcome.verification["reviewed"] is False, item
        assert outcome.verification["not_reviewed_because"]


def test_an_invalid_answer_is_sent_back_once_then_accepted():
    bad = dict(SUPPORTED, verdict="maybe")
    outcome, model, recorder = run(answer(bad, "toolu_r1"), answer(tid="toolu_r2"))
    assert outcome.verification["reviewed"] is True
    second = model.requests[-1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    sent_back = second[2]["content"][0]
    assert sent_back["type"] == "tool_result" and sent_back["is_error"] is True
    assert sent_back["tool_use_id"] == "toolu_r1" and "verdict" in sent_back["content"][0]["text"]
    assert [a["decision"] for a in recorder.audits if a["tool"] == "review_report"] == [
        "review_invalid", "reviewed"]


def test_an_invalid_answer_twice_ends_the_review():
    bad = dict(SUPPORTED, claims=[dict(SUPPORTED["claims"][0], status="probably")])
    outcome, model, _ = run(answer(bad, "toolu_r1"), answer(bad, "toolu_r2"))
    assert len(model.requests) == 5
    why = outcome.verification["not_reviewed_because"]
    assert outcome.verification["reviewed"] is False and why.startswith("invalid answer twice")
    assert "claims[0].status" in why


def test_a_quote_no_result_holds_is_sent_back():
    made_up = dict(SUPPORTED, claims=[dict(SUPPORTED["claims"][0], quote="exit code 137")])
    outcome, model, _ = run(answer(made_up, "toolu_r1"), answer(made_up, "toolu_r2"))
    assert "claims[0].quote is not in any cited result" in \
        outcome.verification["not_reviewed_because"]


def test_an_answer_without_the_tool_is_told_to_use_it():
    outcome, model, _ = run(response("end_turn", text("Looks fine to me.")), answer())
    assert outcome.verification["reviewed"] is True
    second = model.requests[-1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert "no review_report call" in second[2]["content"][0]["text"]


def test_a_review_the_budget_cannot_pay_for_is_not_made():
    spent = 3 * records.cost_usd("claude-opus-5-5", response("end_turn")["usage"])
    outcome, model, recorder = run(answer(), max_cost_usd=spent + 0.0001)
    assert len(model.requests) == 3
    why = outcome.verification["not_reviewed_because"]
    assert why.startswith("the review (about $") and "--max-cost-usd" in why
    assert outcome.cost_usd == spent and recorder.audits[-1]["decision"] == "review_failed"


def test_a_replay_without_the_answer_says_so():
    outcome, _, _ = run()   # the script ends after the report
    assert outcome.verification["not_reviewed_because"] == "no answer: script exhausted"


def test_an_interrupt_during_the_review_keeps_the_report():
    outcome, _, _ = run(KeyboardInterrupt())
    assert outcome.stop == "report" and outcome.verification["not_reviewed_because"] == \
        "interrupted"


def test_unsupported_claims_lower_the_confidence_one_step_only():
    outcome, _, _ = run(answer(dict(SUPPORTED, verdict="partly_supported")))
    assert outcome.verification["confidence"] == "medium"
    assert outcome.verification["confidence_note"] == "lowered from high: review: partly supported"
    low = review_outcome(good_report(confidence="low", summary="exit code 137 and 9Gi"))
    assert low["confidence"] == "low" and low["confidence_note"] == ""


def review_outcome(report):
    from triage_agent.verify.outcome import verification
    checks = {"checked": 2, "unsupported": [{"kind": "size", "token": "9Gi"}]}
    return verification(report, checks, [], None, "turned off")


def test_the_first_message_cuts_each_result_and_redacts():
    big = "line of output\n" * 2000 + "password=hunter2\n"
    message = review.first_message(good_report(tool_use_id="toolu_big"),
                                   {"toolu_big": big}, {"toolu_big": ("get_logs", {})},
                                   {"checked": 0, "unsupported": []}, [])
    assert "[result cut:" in message and len(message) < review.RESULT_BYTES + 3000
    small = review.first_message(good_report(tool_use_id="toolu_s"),
                                 {"toolu_s": "password=hunter2"}, {}, {"checked": 0,
                                                                        "unsupported": []}, [])
    assert "hunter2" not in small


class InterruptingTools(FakeTools):
    """get_events is where the operator presses ^C."""

    def call(self, name, arguments):
        if name == "get_events":
            raise KeyboardInterrupt
        return super().call(name, arguments)


def test_an_interrupt_after_the_report_makes_no_review():
    script = [response("tool_use", tool_use("toolu_pods", "get_pods", {"namespace": "prod"})),
              response("tool_use", logs_call()),
              response("tool_use", report_call(),
                       tool_use("toolu_ev", "get_events", {"namespace": "prod"})),
              answer()]
    model = ScriptedModel(*script)
    outcome = run_triage("checkout pods keep restarting", model=model, tools=InterruptingTools(),
                         policy=policy(), recorder=ListRecorder(), review=True)
    assert outcome.stop == "interrupted" and outcome.report is not None
    assert len(model.requests) == 3
    assert outcome.verification["not_reviewed_because"] == ("the run stopped (interrupted) "
                                                            "before the review")


def test_a_checker_that_breaks_is_said_and_the_run_keeps_its_outcome(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")
    monkeypatch.setattr(claims, "check_claims", broken)
    outcome, _, _ = run(answer())
    assert outcome.verification["blind_spots"] == [
        "the loop's checks failed (RuntimeError: a bug): verify by hand"]
    assert outcome.verification["reviewed"] is True


def test_a_refused_review_is_not_asked_again():
    outcome, model, _ = run(response("refusal", text("I cannot help with that.")), answer())
    assert len(model.requests) == 4 and outcome.verification["reviewed"] is False
    assert outcome.verification["not_reviewed_because"] == (
        "invalid answer (refusal): no review_report call (stop_reason refusal)")
