"""A misbehaving model's turns: the loop repairs or drops what the API would reject when sent
back, says so in the trace and the audit, and ends a run it cannot continue as api_error.

Every request goes through ScriptedModel, which fails the test on anything the fake API
(tests/support/fake_messages_api.py, worded as the real API) would answer with 400."""

import math

import pytest

from tests.agent.test_loop_fakes import (FATAL, POD, FakeTools, ListRecorder, ScriptedModel,
                                   good_report, happy_script, logs_call, policy, report_call,
                                   response, text, tool_use)
from triage_agent import prompts, turns
from triage_agent.loop import run_triage

PODS = {"namespace": "prod"}


def run(*script, tools=None, **limits):
    model, recorder = ScriptedModel(*script), ListRecorder()
    outcome = run_triage("pods restart", model=model, tools=tools or FakeTools(),
                         policy=policy(**limits), recorder=recorder)
    assert model.problems == []
    return outcome, model, recorder


def repairs(recorder):
    return [note for span in recorder.traces if span["name"].startswith("chat ")
            for note in span["attributes"].get("triage_agent.repairs", [])]


@pytest.mark.parametrize("usage", [{"input_tokens": "n/a", "output_tokens": 5},
                                   {"input_tokens": 10, "output_tokens": -1},
                                   {"input_tokens": 1.5, "output_tokens": 1},
                                   {"input_tokens": True, "output_tokens": 1},
                                   {"input_tokens": 10, "iterations": [{"input_tokens": []}]},
                                   {"input_tokens": 10, "iterations": "all"},
                                   "lots", [10]])
def test_usage_that_is_not_token_counts_ends_the_run_as_api_error(usage):
    bad = dict(response("tool_use", tool_use("toolu_1", "get_pods", PODS)), usage=usage)
    outcome, model, recorder = run(bad, *happy_script())
    assert outcome.stop == "api_error" and "usage" in outcome.error and "token" in outcome.error
    assert len(model.requests) == 1 and outcome.tool_calls == 0   # nothing ran on it
    assert [s["name"] for s in recorder.traces] == ["chat claude-opus-5-5"]   # it is traced


def test_usage_none_and_missing_are_zero_not_errors():
    script = happy_script()
    script[0]["usage"] = {"input_tokens": 10, "output_tokens": 2,
                          "cache_creation_input_tokens": None, "cache_read_input_tokens": None}
    del script[1]["usage"]
    outcome, _, _ = run(*script)
    assert outcome.stop == "report" and outcome.usage["input"] == 110


@pytest.mark.parametrize("field,value", [("evidence", 5), ("affected", "all"),
                                         ("evidence", {"a": 1}), ("summary", None),
                                         ("severity", ["high"]), ("next_checks", 3.5),
                                         ("proposed_actions", True), ("confidence", {})])
def test_write_report_with_a_field_of_the_wrong_type_is_refused_not_a_crash(field, value):
    script = happy_script()
    script.insert(2, response("tool_use", report_call(tid="toolu_bad", **{field: value})))
    outcome, model, recorder = run(*script)
    assert outcome.stop == "report" and outcome.report[field] != value
    refused = [a for a in recorder.audits if a["decision"] == "report_invalid"]
    assert len(refused) == 1 and refused[0]["tool_use_id"] == "toolu_bad"
    answer = model.requests[3]["messages"][-1]["content"][0]
    assert answer["is_error"] and field in answer["content"][0]["text"]


def test_two_tool_uses_with_one_id_in_a_response_each_get_their_own_result():
    twice = response("tool_use", tool_use("toolu_1", "get_pods", PODS),
                     logs_call(tid="toolu_1"))
    outcome, model, recorder = run(twice, response("tool_use", report_call(tid="toolu_9",
                                                                         tool_use_id="x")))
    sent = model.requests[1]["messages"]
    ids = [b["id"] for b in sent[1]["content"]]
    assert ids[0] == "toolu_1" and ids[1] != "toolu_1"
    assert [b["tool_use_id"] for b in sent[2]["content"]] == ids
    executed = [a for a in recorder.audits if a["decision"] == "executed"]
    assert [a["tool_use_id"] for a in executed] == ids
    assert "repaired" not in executed[0] and "'toolu_1'" in executed[1]["repaired"]
    assert any("'toolu_1'" in note and ids[1] in note for note in repairs(recorder))
    assert outcome.tool_calls == 2


def test_tool_use_ids_reused_across_turns_are_renamed_and_results_still_ground():
    script = [response("tool_use", tool_use("toolu_1", "get_pods", PODS)),
              response("tool_use", logs_call(tid="toolu_1"))]
    outcome, model, recorder = run(*script)
    renamed = model.requests[2]["messages"][3]["content"][0]["id"]
    assert renamed != "toolu_1"
    assert model.requests[2]["messages"][4]["content"][0]["tool_use_id"] == renamed
    assert any(renamed in note and "already used" in note for note in repairs(recorder))
    # the model cites the id it now sees in the conversation; the report grounds on it
    outcome, _, _ = run(*script, response("tool_use", report_call(tool_use_id=renamed)))
    assert outcome.stop == "report" and outcome.grounding_warnings == []


@pytest.mark.parametrize("bad_id", ["", "toolu 1", "toolu/1", "tööl", "x" * 3 + "\n"])
def test_tool_use_id_not_of_the_api_form_is_renamed(bad_id):
    outcome, model, recorder = run(response("tool_use", tool_use(bad_id, "get_pods", PODS)),
                                   response("end_turn", text("done")))
    new = model.requests[1]["messages"][1]["content"][0]["id"]
    assert turns.TOOL_USE_ID.fullmatch(new) and outcome.tool_calls == 1


@pytest.mark.parametrize("arguments", [None, [], "namespace=prod", 7, 1.5, True,
                                       {"namespace": math.nan}, {"n": math.inf}])
def test_tool_use_input_that_is_not_a_json_object_is_sent_back_as_an_empty_object(arguments):
    outcome, model, recorder = run(response("tool_use", tool_use("toolu_1", "get_pods",
                                                                 arguments)),
                                   response("end_turn", text("done")))
    assert model.requests[1]["messages"][1]["content"][0]["input"] == {}
    refused = recorder.audits[0]
    assert refused["decision"] == "schema_error" and "input" in refused["repaired"]
    assert outcome.tool_calls == 0


def test_end_turn_with_empty_content_is_not_stored_and_the_nudge_joins_the_user_turn():
    outcome, model, recorder = run(response("end_turn"), *happy_script())
    second = model.requests[1]["messages"]
    assert [m["role"] for m in second] == ["user"]
    assert [b["text"] for b in second[0]["content"]][1:] == [prompts.NUDGE_REPORT]
    assert outcome.stop == "report"
    assert any("empty" in note for note in repairs(recorder))


def test_two_empty_end_turns_stop_the_run_as_end_turn():
    outcome, model, _ = run(response("end_turn"), response("end_turn", text(" ")))
    assert outcome.stop == "end_turn" and len(model.requests) == 2


def test_empty_and_blank_text_blocks_are_dropped_before_they_go_back():
    first = response("tool_use", text(""), text(" \n"), tool_use("toolu_1", "get_pods", PODS),
                     text("\t"))
    outcome, model, recorder = run(first, response("end_turn", text("done")))
    assert [b["type"] for b in model.requests[1]["messages"][1]["content"]] == ["tool_use"]
    assert sum("text block" in note for note in repairs(recorder)) == 3


def test_a_tool_that_returns_no_text_is_answered_with_words_not_an_empty_block():
    class Silent(FakeTools):
        def call(self, name, arguments):
            super().call(name, arguments)
            return "", False
    outcome, model, _ = run(response("tool_use", tool_use("toolu_1", "get_pods", PODS)),
                            response("end_turn", text("done")), tools=Silent())
    result = model.requests[1]["messages"][2]["content"][0]
    assert result["content"][0]["text"].strip() and outcome.tool_calls == 1


def test_block_types_the_loop_never_asked_for_are_dropped():
    first = response("tool_use", {"type": "server_tool_use", "id": "srvtoolu_1", "name": "x",
                                  "input": {}}, {"type": "banana"},
                     tool_use("toolu_1", "get_pods", PODS))
    outcome, model, recorder = run(first, response("end_turn", text("done")))
    assert [b["type"] for b in model.requests[1]["messages"][1]["content"]] == ["tool_use"]
    assert any("'banana'" in note for note in repairs(recorder))


@pytest.mark.parametrize("block", [{"type": "text", "text": 5},
                                   {"type": "thinking", "thinking": "t"},
                                   {"type": "thinking", "thinking": None, "signature": "s"},
                                   {"type": "redacted_thinking", "data": 1},
                                   {"type": "tool_use", "id": "t", "name": None, "input": {}},
                                   "text", None])
def test_a_block_the_loop_cannot_send_back_unchanged_ends_the_run_as_api_error(block):
    outcome, model, _ = run(response("tool_use", block, tool_use("toolu_1", "get_pods", PODS)),
                            response("end_turn", text("done")))
    assert outcome.stop == "api_error" and "malformed model response" in outcome.error
    assert len(model.requests) == 1 and outcome.tool_calls == 0


def test_paused_turn_ending_in_whitespace_is_sent_back_trimmed():
    outcome, model, _ = run(response("pause_turn", text("still looking  \n")),
                            response("end_turn", text("done")))
    last = model.requests[1]["messages"][-1]
    assert last["role"] == "assistant" and last["content"][-1]["text"] == "still looking"


def test_an_answer_and_its_repairs_keep_the_report_path_intact():
    script = happy_script()
    script[2] = response("tool_use", text(""), report_call(), text(""))
    outcome, _, recorder = run(*script)
    assert outcome.stop == "report" and FATAL in outcome.report["evidence"][0]["quote"]
    assert outcome.report["affected"][0]["name"] == POD
    assert len(repairs(recorder)) == 2



def test_a_failed_tool_s_audit_entry_carries_its_first_line():
    class Failing(FakeTools):
        def call(self, name, arguments):
            super().call(name, arguments)
            return "\n  kubectl failed (exit 1): connection refused\nmore detail", True
    _, _, recorder = run(response("tool_use", tool_use("toolu_1", "get_pods", PODS)),
                         response("end_turn", text("done")), tools=Failing())
    [entry] = recorder.audits
    assert entry["error"] == "kubectl failed (exit 1): connection refused"
    assert entry["decision"] == "executed" and entry["is_error"] is True
