"""The loop against its seams: a scripted model that checks every request, fake tools, fake gate
runner. Each guardrail and stop reason has a test that proves it fires."""

import pytest

from tests.agent.test_loop_fakes import (FATAL, POD, FakeTools, ListRecorder, RecordingRunner,
                                   ScriptedModel, happy_script, logs_call, make_gate, policy,
                                   report_call, response, text, tool_use)
from triage_agent import prompts
from triage_agent.loop import Settings, describe_call, run_triage
from triage_agent.model.messages import ApiError


def run(*script, tools=None, gate=None, recorder=None, settings=None, **budget):
    model = ScriptedModel(*script)
    tools = tools or FakeTools()
    recorder = recorder or ListRecorder()
    outcome = run_triage("checkout pods keep restarting", model=model, tools=tools,
                         policy=policy(**budget), settings=settings, gate=gate or make_gate(),
                         recorder=recorder)
    assert model.problems == []
    return outcome, model, tools, recorder


def results_of(request):
    """tool_use_id -> (text, is_error) of the newest user turn."""
    out = {}
    for block in request["messages"][-1]["content"]:
        if block["type"] == "tool_result":
            out[block["tool_use_id"]] = ("\n".join(c["text"] for c in block["content"]),
                                         block["is_error"])
    return out


def test_happy_path_ends_with_grounded_report():
    outcome, model, tools, recorder = run(*happy_script())
    assert outcome.stop == "report" and outcome.exit_code == 0
    assert outcome.steps == 3 and outcome.tool_calls == 2
    assert outcome.report["evidence"][0]["quote"] == FATAL
    assert outcome.grounding_warnings == [] and outcome.violations == []
    assert [c[0] for c in tools.calls] == ["get_pods", "get_logs"]
    assert [a["decision"] for a in recorder.audits] == ["executed", "executed", "report_accepted"]
    assert outcome.usage == {"input": 300, "output": 60, "cache_read": 0, "cache_write": 0}


def test_request_shape_and_cache_breakpoints():
    _, model, _, _ = run(*happy_script(), settings=Settings(effort="high"))
    systems = {r["system"][0]["text"] for r in model.requests}
    assert systems == {prompts.SYSTEM_PROMPT}
    for request in model.requests:
        assert request["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert request["output_config"] == {"effort": "high"}
        assert request["fallbacks"] == "default"
        for absent in ("thinking", "temperature", "top_p", "top_k", "tool_choice"):
            assert absent not in request
        strict = {t["name"] for t in request["tools"] if t.get("strict")}
        assert strict == {"propose_action", "write_report"}
        newest = request["messages"][-1]["content"][-1]
        assert newest["cache_control"] == {"type": "ephemeral"}
        marked = [i for i, m in enumerate(request["messages"]) for b in m["content"]
                  if "cache_control" in b]
        users = [i for i, m in enumerate(request["messages"]) if m["role"] == "user"]
        assert marked == users[-2:]  # the newest two user turns; older turns do not keep one
    first = model.requests[0]["messages"][0]["content"][0]["text"]
    assert "checkout pods keep restarting" in first and "prod" in first
    assert "12 model calls" in first and "20 tool calls" in first


def test_no_fallbacks_leaves_field_out():
    _, model, _, _ = run(*happy_script(), settings=Settings(fallbacks=False))
    assert all("fallbacks" not in r for r in model.requests)


def test_assistant_blocks_go_back_unchanged():
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig-abc"}
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    first = response("tool_use", thinking, redacted, logs_call())
    _, model, _, _ = run(first, response("tool_use", report_call()))
    assert model.requests[1]["messages"][1]["content"] == first["content"]


def test_all_results_in_one_user_turn_in_order():
    both = response("tool_use", tool_use("toolu_a", "get_pods", {"namespace": "prod"}),
                    tool_use("toolu_b", "get_events", {"namespace": "prod"}))
    _, model, _, _ = run(both, response("end_turn", text("done")))
    turn = model.requests[1]["messages"][2]["content"]
    assert [b["tool_use_id"] for b in turn] == ["toolu_a", "toolu_b"]


def test_unknown_tool_refused_and_a_violation():
    outcome, model, tools, _ = run(response("tool_use", tool_use("toolu_x", "kubectl_delete",
                                                                 {"namespace": "prod"})))
    body, is_error = results_of(model.requests[1])["toolu_x"]
    assert is_error and body.startswith("Unknown tool 'kubectl_delete'. Available tools:")
    assert "get_logs" in body and tools.calls == []
    assert outcome.violations[0]["decision"] == "unknown_tool"


def test_schema_errors_are_field_level():
    outcome, model, tools, _ = run(response("tool_use", tool_use("toolu_s", "get_logs",
                                                                 {"namespace": "prod",
                                                                  "previous": "yes"})))
    body, is_error = results_of(model.requests[1])["toolu_s"]
    assert is_error and "name" in body and "previous" in body and tools.calls == []
    assert outcome.violations == []


@pytest.mark.parametrize("arguments", [
    {"namespace": "kube-system"},
    {"namespace": "prod", "all_namespaces": True},
    {"namespace": "prod", "allNamespaces": "true"},
])
def test_scope_refused_and_a_violation(arguments):
    loose = {"type": "object", "properties": {"namespace": {"type": "string"}}}  # any extra key
    tools = FakeTools([dict(t, inputSchema=loose) for t in FakeTools().tools])
    outcome, model, _, recorder = run(response("tool_use", tool_use("toolu_n", "get_pods",
                                                                    arguments)), tools=tools)
    body, is_error = results_of(model.requests[1])["toolu_n"]
    assert is_error and "prod" in body and tools.calls == []
    assert outcome.violations[0]["decision"] == "out_of_scope"
    assert recorder.audits[0]["decision"] == "out_of_scope"


def test_duplicates_served_from_cache_then_final_step():
    script = [response("tool_use", logs_call("toolu_1"))]
    script += [response("tool_use", logs_call(f"toolu_d{i}")) for i in range(3)]
    script += [response("end_turn", text("no report"))]
    outcome, model, tools, _ = run(*script, max_repeats=2)
    assert len(tools.calls) == 1
    body, is_error = results_of(model.requests[2])["toolu_d0"]
    assert not is_error and FATAL in body and "not run again" in body
    assert outcome.stop == "max_repeats" and outcome.steps == 4  # 1 call, 2 repeats, last
    assert model.requests[-1]["messages"][-1]["content"][-1]["text"] == prompts.LAST_CALL


def test_tool_budget_refuses_after_n_calls():
    script = [response("tool_use", tool_use("toolu_1", "get_pods", {"namespace": "prod"})),
              response("tool_use", logs_call("toolu_2"))]
    outcome, model, tools, _ = run(*script, max_tool_calls=1)
    body, is_error = results_of(model.requests[2])["toolu_2"]
    assert is_error and body.startswith("tool budget of 1 calls is spent; call write_report "
                                        "with what you have.")
    assert len(tools.calls) == 1 and "[budget: 0 tool calls" in results_of(
        model.requests[1])["toolu_1"][0]


def test_max_steps_last_request_asks_for_the_report():
    script = [response("tool_use", tool_use(f"toolu_{i}", "get_events",
                                            {"namespace": "prod", "name": f"p{i}"}))
              for i in range(5)]
    outcome, model, tools, _ = run(*script, max_steps=3)
    assert outcome.stop == "max_steps" and outcome.report is None and outcome.exit_code == 3
    assert len(model.requests) == 3 and len(tools.calls) == 2  # the last call's tools never run
    assert prompts.LAST_CALL in str(model.requests[-1]["messages"][-1])
    assert prompts.LAST_CALL not in str(model.requests[-2]["messages"])


def test_end_turn_nudged_once_then_stops():
    outcome, model, _, _ = run(response("end_turn", text("I think it's fine.")),
                               response("end_turn", text("Really.")))
    assert outcome.stop == "end_turn" and len(model.requests) == 2
    assert model.requests[1]["messages"][-1]["content"][0]["text"] == prompts.NUDGE_REPORT


def test_max_tokens_truncated_call_never_runs_then_stops():
    cut = response("max_tokens", logs_call("toolu_cut"))
    outcome, model, tools, recorder = run(cut, response("max_tokens", text("...")))
    assert tools.calls == [] and outcome.stop == "max_tokens"
    assert results_of(model.requests[1])["toolu_cut"] == (prompts.CUT_OFF_RESULT, True)
    assert recorder.audits[0]["decision"] == "cut_off"


def test_max_tokens_once_then_continues():
    outcome, _, _, _ = run(response("max_tokens", text("long...")), *happy_script())
    assert outcome.stop == "report"


@pytest.mark.parametrize("reason", ["refusal", "model_context_window_exceeded"])
def test_refusal_and_context_window_stop(reason):
    outcome, model, tools, _ = run(response(reason, logs_call()))
    assert outcome.stop == reason and tools.calls == [] and outcome.exit_code == 3


def test_pause_turn_is_sent_back_and_continued():
    paused = response("pause_turn", text("thinking about it"))
    outcome, model, _, _ = run(paused, *happy_script())
    assert outcome.stop == "report"
    assert model.requests[1]["messages"][-1]["role"] == "assistant"
    assert model.requests[2]["messages"][1]["content"][0] == text("thinking about it")


def test_report_before_any_tool_pushed_back_once():
    early = response("tool_use", report_call("toolu_r1"))
    outcome, model, _, _ = run(early, response("tool_use", report_call("toolu_r2")),
                               response("tool_use", report_call("toolu_r3")))
    assert results_of(model.requests[1])["toolu_r1"] == (prompts.NO_TOOLS_YET, True)
    body, is_error = results_of(model.requests[2])["toolu_r2"]  # then: nothing grounds it
    assert is_error and "not grounded" in body
    assert outcome.stop == "report" and outcome.grounding_warnings


def test_grounding_pushback_then_accepted_with_warnings():
    made_up = "ERROR: database is on fire"
    script = [response("tool_use", logs_call()),
              response("tool_use", report_call("toolu_r1", quote=made_up)),
              response("tool_use", report_call("toolu_r2", quote=made_up))]
    outcome, model, _, _ = run(*script)
    body, is_error = results_of(model.requests[2])["toolu_r1"]
    assert is_error and "evidence[0]" in body
    assert outcome.stop == "report" and outcome.grounding_warnings
    assert "evidence[0]" in outcome.grounding_warnings[0]


def test_invalid_report_gets_field_errors():
    bad = tool_use("toolu_bad", "write_report", {"summary": "x", "severity": "apocalyptic"})
    outcome, model, _, _ = run(response("tool_use", logs_call()), response("tool_use", bad))
    body, is_error = results_of(model.requests[2])["toolu_bad"]
    assert is_error and "severity" in body and "evidence" in body
    assert outcome.report is None


def test_max_cost_stops_before_crossing():
    big = {"input_tokens": 200_000, "output_tokens": 10, "cache_read_input_tokens": 0,
           "cache_creation_input_tokens": 0}
    first = response("tool_use", logs_call(), usage=big)
    outcome, model, _, _ = run(first, *happy_script(), max_cost_usd=1.0)
    assert outcome.stop == "max_cost" and len(model.requests) == 1
    assert outcome.cost_usd > 0


def test_api_error_ends_with_request_id():
    err = ApiError(401, "authentication_error", "invalid x-api-key", request_id="req_123")
    outcome, _, _, _ = run(err)
    assert outcome.stop == "api_error" and outcome.exit_code == 4
    assert "req_123" in outcome.error and "authentication_error" in outcome.error


def test_mcp_server_gone_ends_with_mcp_error():
    outcome, _, _, recorder = run(*happy_script(), tools=FakeTools(fail_after=1))
    assert outcome.stop == "mcp_error" and outcome.exit_code == 4
    assert recorder.audits[-1]["decision"] == "mcp_error"


def test_tool_exception_becomes_error_result():
    _, model, _, _ = run(response("tool_use", logs_call()), tools=FakeTools(raise_on="get_logs"))
    body, is_error = results_of(model.requests[1])["toolu_logs"]
    assert is_error and body == "tool call failed (ValueError): boom"


def test_interrupt_becomes_an_outcome():
    outcome, _, _, _ = run(response("tool_use", logs_call()), KeyboardInterrupt())
    assert outcome.stop == "interrupted" and outcome.exit_code == 130 and outcome.tool_calls == 1


def test_malformed_response_is_an_api_error():
    outcome, _, _, recorder = run({"content": "not a list"})
    assert outcome.stop == "api_error" and "malformed" in outcome.error
    [span] = [s for s in recorder.traces if s["name"].startswith("chat ")]  # the failed call too
    assert span["error"][0] == "ValueError" and "malformed" in span["error"][1]


def test_a_model_seam_that_raises_leaves_a_failed_chat_span():
    outcome, _, _, recorder = run(RuntimeError("socket gone"))
    assert outcome.stop == "api_error" and "RuntimeError" in outcome.error
    [span] = [s for s in recorder.traces if s["name"].startswith("chat ")]
    assert span["error"] == ("RuntimeError", "socket gone")


def test_broken_audit_sink_does_not_end_the_run():
    class Broken(ListRecorder):
        def audit(self, **fields):
            raise OSError("disk full")
    outcome, _, _, _ = run(*happy_script(), recorder=Broken())
    assert outcome.stop == "report"


def test_broken_trace_sink_does_not_end_the_run():
    class Broken(ListRecorder):
        def trace(self, span):
            raise OSError("disk full")
    recorder = Broken()
    outcome, _, _, _ = run(*happy_script(), recorder=recorder)
    assert outcome.stop == "report" and len(recorder.audits) == 3


def propose(kind, tid="toolu_p", namespace="prod", target="checkout"):
    return tool_use(tid, "propose_action", {"kind": kind, "namespace": namespace,
                                            "target": target, "reason": "crash loop"})


@pytest.mark.parametrize("allowed,approve,execute,decision,runs", [
    ((), True, True, "refused", 0),
    (("rollout_restart",), False, True, "denied", 0),
    (("rollout_restart",), True, False, "approved_not_executed", 0),
    (("rollout_restart",), True, True, "executed", 1),
])
def test_proposals_pass_three_gates(allowed, approve, execute, decision, runs):
    runner = RecordingRunner()
    gate = make_gate(allowed=allowed, execute=execute, runner=runner,
                     approve=lambda p: (approve, "ok" if approve else "not now"))
    outcome, model, _, recorder = run(response("tool_use", propose("rollout_restart")),
                                      gate=gate)
    assert outcome.proposals[0]["decision"] == decision and len(runner.argvs) == runs
    assert recorder.audits[0]["decision"] == f"proposal_{decision}"
    violated = [v["decision"] for v in outcome.violations]
    assert violated == ([f"proposal_{decision}"] if decision in ("refused", "denied") else [])


def test_proposal_outside_scope_is_a_violation():
    outcome, _, _, _ = run(response("tool_use", propose("delete_pod", namespace="kube-system",
                                                        target="coredns-abc")),
                           gate=make_gate(allowed=("delete_pod",), execute=True,
                                          approve=lambda p: (True, "")))
    assert outcome.proposals[0]["decision"] == "invalid"
    assert outcome.violations[0]["decision"] == "proposal_invalid"


def test_toolset_offers_only_read_only_tools_and_maps_names():
    tools = FakeTools(FakeTools().tools + [
        {"name": "delete_pod", "annotations": {"readOnlyHint": False}, "inputSchema": {}},
        {"name": "exec", "inputSchema": {}},
        {"name": "k8s.get pods", "annotations": {"readOnlyHint": True},
         "inputSchema": {"type": "object", "properties": {"namespace": {"type": "string"}}}}])
    toolset = prompts.build_toolset(tools.list())
    assert toolset.not_offered == [{"tool": "delete_pod", "reason": "not annotated read-only"},
                                   {"tool": "exec", "reason": "not annotated read-only"}]
    assert toolset.api_name("k8s.get pods") == "k8s_get_pods"
    _, model, _, _ = run(response("tool_use", tool_use("toolu_m", "k8s_get_pods",
                                                       {"namespace": "prod"})), tools=tools)
    assert tools.calls == [("k8s.get pods", {"namespace": "prod"})]
    names = [t["name"] for t in model.requests[0]["tools"]]
    assert "delete_pod" not in names and "k8s_get_pods" in names


@pytest.mark.parametrize("name", ["propose_action", "write_report"])
def test_server_tool_shadowing_a_builtin_is_a_start_up_error(name):
    with pytest.raises(prompts.ToolsetError):
        prompts.build_toolset([{"name": name, "annotations": {"readOnlyHint": True}}])


def test_progress_lines():
    lines = []
    run_triage("x", model=ScriptedModel(*happy_script()), tools=FakeTools(),
               policy=policy(), gate=make_gate(), recorder=ListRecorder(),
               progress=lines.append)
    assert lines[1] == f"[step 2/12] get_logs namespace=prod name={POD} previous=true"


def test_a_progress_line_escapes_what_the_model_wrote():
    # the model's arguments go to the operator's terminal: no escapes, fake lines or overrides
    line = describe_call("get_pods\nok", {"namespace": "a\x1b[2J\rb\u202ec"})
    assert line == "get_pods\\nok namespace=a\\x1b[2J\\rb\\u202ec"


@pytest.mark.parametrize("reason", ["banana", ""])
def test_a_stop_reason_the_api_does_not_have_ends_the_run_clearly(reason):
    outcome, model, tools, _ = run(response(reason, logs_call()), *happy_script())
    assert outcome.stop == "api_error" and outcome.exit_code == 4 and len(model.requests) == 1
    assert repr(reason) in outcome.error and tools.calls == []
    assert outcome.usage["input"] == 100  # the call was made (and billed): it is counted


def test_a_missing_stop_reason_reads_as_what_the_turn_holds():
    # self-hosted servers may leave stop_reason out: a turn with tool calls is tool_use (the
    # calls run), one without is end_turn (the nudge, then the stop); the trace says so
    script = [dict(r, stop_reason=None) for r in happy_script()]
    del script[0]["stop_reason"]
    outcome, model, tools, recorder = run(*script)
    assert outcome.stop == "report" and len(tools.calls) == 2
    repairs = [s["attributes"]["triage_agent.repairs"] for s in recorder.traces
               if "triage_agent.repairs" in s.get("attributes", {})]
    assert repairs == [["no stop_reason in the response; read as tool_use"]] * 3
    outcome, model, _, _ = run(response(None, text("nothing to call")),
                               response(None, text("still nothing")))
    assert outcome.stop == "end_turn" and len(model.requests) == 2
    assert model.requests[1]["messages"][-1]["content"][-1]["text"] == prompts.NUDGE_REPORT


def test_last_call_after_a_paused_turn_still_says_it_is_the_last():
    outcome, model, _, _ = run(response("pause_turn", text("checking")), *happy_script(),
                               max_steps=2)
    last = model.requests[-1]["messages"]
    assert last[-1]["role"] == "assistant"           # the paused turn is continued as it is
    assert prompts.LAST_CALL in str(last[:-1]) and outcome.stop == "max_steps"


def test_max_cost_stops_once_the_spend_cannot_be_priced():
    unpriced = response("tool_use", logs_call(), model="claude-unknown-9")
    outcome, model, _, _ = run(unpriced, *happy_script(), max_cost_usd=100.0)
    assert outcome.stop == "max_cost" and len(model.requests) == 1
    assert outcome.cost_usd is None and "claude-unknown-9" in outcome.error


def test_a_progress_seam_that_raises_does_not_end_the_run():
    def broken(line):
        raise BrokenPipeError(32, "Broken pipe")
    outcome = run_triage("x", model=ScriptedModel(*happy_script()), tools=FakeTools(),
                         policy=policy(), gate=make_gate(), recorder=ListRecorder(),
                         progress=broken)
    assert outcome.stop == "report" and outcome.tool_calls == 2
