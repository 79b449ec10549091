"""Spans in the OTLP/JSON shape (triage_agent.telemetry.otel) and their OTLP/HTTP export (triage_agent.telemetry.otlp),
against a real local receiver. The whole CLI's traces are in test_cli_otel.py."""

import io
import json
import time
import urllib.parse

import pytest

from tests.support.otlp_receiver import Receiver, attrs, request_problems, spans_of
from triage_agent import __version__
from triage_agent.telemetry import otel, otlp
from triage_agent.outcome import Outcome
from triage_agent.model.messages import ApiError
from triage_agent.telemetry.records import Recorder

REQUEST = {"model": "claude-opus-5-5", "max_tokens": 16000,
           "system": [{"type": "text", "text": "You triage."}],
           "tools": [{"name": "get_pods", "description": "d", "input_schema": {}}],
           "messages": [
               {"role": "user", "content": [{"type": "text", "text": "checkout restarts"}]},
               {"role": "assistant", "content": [
                   {"type": "thinking", "thinking": "look at pods", "signature": "s"},
                   {"type": "tool_use", "id": "toolu_1", "name": "get_pods",
                    "input": {"namespace": "prod"}}]},
               {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "DB_PASSWORD=hunter2 in env"}]},
                   {"type": "text", "text": "[budget: 19 tool calls left]"}]}]}
RESPONSE = {"id": "msg_9", "type": "message", "model": "claude-opus-5-5",
            "stop_reason": "tool_use", "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 100, "cache_creation_input_tokens": 2000,
                      "cache_read_input_tokens": 3000, "output_tokens": 50}}


def chat(**overrides):
    return otel.model_call_span(**{"step": 2, "request": REQUEST, "response": RESPONSE,
                                   "started": 10.0, "ended": 11.25, **overrides})


def tool(**overrides):
    return otel.tool_span(**{"step": 2, "name": "get_logs", "call_id": "toolu_2",
                             "arguments": {"namespace": "prod", "name": "web-1"},
                             "text": "token=abc123secret\nready", "is_error": False,
                             "started": 11.5, "ended": 12.0, **overrides})


def test_a_chat_span_has_ids_times_kind_and_typed_genai_attributes():
    tracer = otel.Tracer(clock=lambda: 9.0)
    span = tracer.record(chat())
    assert span["traceId"] == tracer.trace_id and len(tracer.trace_id) == 32
    assert span["parentSpanId"] == tracer.root_id and len(span["spanId"]) == 16
    assert span["name"] == "chat claude-opus-5-5" and span["kind"] == otel.CLIENT
    assert (span["startTimeUnixNano"], span["endTimeUnixNano"]) == ("10000000000",
                                                                    "11250000000")
    assert attrs(span) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-opus-5-5", "gen_ai.request.max_tokens": 16000,
        "gen_ai.response.id": "msg_9", "gen_ai.response.model": "claude-opus-5-5",
        "gen_ai.response.finish_reasons": ["tool_use"], "triage_agent.step": 2,
        "gen_ai.usage.input_tokens": 5100, "gen_ai.usage.output_tokens": 50,
        "gen_ai.usage.cache_read.input_tokens": 3000,
        "gen_ai.usage.cache_creation.input_tokens": 2000}
    values = {a["key"]: a["value"] for a in span["attributes"]}
    assert values["gen_ai.usage.input_tokens"] == {"intValue": "5100"}
    assert values["gen_ai.response.finish_reasons"] == {
        "arrayValue": {"values": [{"stringValue": "tool_use"}]}}
    assert span["status"] == {"code": otel.UNSET}
    assert request_problems({"resourceSpans": [{"resource": {"attributes": []},
                                                "scopeSpans": [{"spans": [span]}]}]}) == []


def test_a_failed_call_is_an_error_span_without_null_or_empty_attributes():
    tracer = otel.Tracer()
    error = ApiError(None, "connection_error", "cannot reach the API")
    span = tracer.record(chat(response=None, error=error))
    assert span["status"] == {"code": otel.ERROR,
                              "message": "connection_error (no response): cannot reach the API"}
    found = attrs(span)
    assert found["error.type"] == "connection_error"
    for absent in ("gen_ai.response.id", "gen_ai.response.finish_reasons",
                   "http.response.status_code"):
        assert absent not in found
    assert all(a["value"] not in ({}, {"arrayValue": {"values": []}}) for a in span["attributes"])
    overloaded = attrs(tracer.record(chat(response=None, error=ApiError(529, "overloaded_error",
                                                                        "Overloaded"))))
    assert overloaded["http.response.status_code"] == 529


def test_tool_spans_mcp_and_local_and_a_tool_error():
    tracer = otel.Tracer()
    tracer.mcp_attributes = {"mcp.protocol.version": "2025-11-25"}
    mcp = tracer.record(tool(decision="executed"))
    assert mcp["name"] == "execute_tool get_logs" and mcp["kind"] == otel.INTERNAL
    assert attrs(mcp) == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_logs",
                          "gen_ai.tool.call.id": "toolu_2", "gen_ai.tool.type": "function",
                          "gen_ai.agent.name": "triage-agent", "triage_agent.step": 2,
                          "triage_agent.decision": "executed", "mcp.method.name": "tools/call",
                          "network.transport": "pipe", "mcp.protocol.version": "2025-11-25"}
    local = tracer.record(tool(name="propose_action", via_mcp=False, is_error=True,
                               decision="proposal_denied"))
    assert "mcp.method.name" not in attrs(local) and "mcp.protocol.version" not in attrs(local)
    assert attrs(local)["error.type"] == "tool_error" and local["status"] == {"code": otel.ERROR}


def test_no_message_content_unless_the_operator_opts_in():
    quiet = otel.Tracer()
    for span in (quiet.record(chat()), quiet.record(tool())):
        assert not [k for k in attrs(span) if k.startswith((
            "gen_ai.input", "gen_ai.output", "gen_ai.system", "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result", "gen_ai.tool.definitions"))]
        assert "hunter2" not in json.dumps(span) and "checkout restarts" not in json.dumps(span)


def test_captured_content_follows_the_genai_message_shape_and_is_redacted():
    tracer = otel.Tracer(capture_content=True)
    found = attrs(tracer.record(chat()))
    messages = json.loads(found["gen_ai.input.messages"])
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user"]
    assert messages[1]["parts"] == [
        {"type": "reasoning", "content": "look at pods"},
        {"type": "tool_call", "id": "toolu_1", "name": "get_pods",
         "arguments": {"namespace": "prod"}}]
    assert messages[2]["parts"][0]["type"] == "tool_call_response"
    assert messages[2]["parts"][0]["id"] == "toolu_1"
    assert "hunter2" not in found["gen_ai.input.messages"] and "[REDACTED]" in \
        messages[2]["parts"][0]["response"]
    assert json.loads(found["gen_ai.output.messages"]) == [
        {"role": "assistant", "finish_reason": "tool_use",
         "parts": [{"type": "text", "content": "ok"}]}]
    assert json.loads(found["gen_ai.system_instructions"]) == [{"type": "text",
                                                                "content": "You triage."}]
    assert json.loads(found["gen_ai.tool.definitions"]) == [{"type": "function",
                                                             "name": "get_pods"}]
    result = attrs(tracer.record(tool()))
    assert json.loads(result["gen_ai.tool.call.arguments"]) == {"namespace": "prod",
                                                                "name": "web-1"}
    assert "abc123secret" not in result["gen_ai.tool.call.result"]
    assert result["gen_ai.tool.call.result"].endswith("\nready")
    failed = attrs(tracer.record(tool(is_error=True)))
    assert "gen_ai.tool.call.result" not in failed  # recorded only for a call that succeeded


def test_the_root_span_sums_up_the_run():
    moments = iter([100.0, 130.5])
    tracer = otel.Tracer(clock=lambda: next(moments))
    outcome = Outcome(stop="report", steps=4, tool_calls=3, model="claude-opus-5-5",
                      cost_usd=0.06612399999999999,
                      usage={"input": 10, "output": 20, "cache_read": 30, "cache_write": 40},
                      report={"severity": "high", "confidence": "medium"})
    root = tracer.end(outcome)
    assert "parentSpanId" not in root and root["spanId"] == tracer.root_id
    assert root["name"] == "invoke_agent triage-agent" and root["kind"] == otel.INTERNAL
    assert (root["startTimeUnixNano"], root["endTimeUnixNano"]) == ("100000000000",
                                                                    "130500000000")
    found = attrs(root)
    assert found["gen_ai.operation.name"] == "invoke_agent"
    assert found["gen_ai.agent.name"] == "triage-agent"
    assert found["gen_ai.agent.version"] == __version__
    assert found["gen_ai.usage.input_tokens"] == 80 and found["gen_ai.usage.output_tokens"] == 20
    assert (found["triage_agent.stop"], found["triage_agent.steps"],
            found["triage_agent.tool_calls"], found["triage_agent.violations"]) == \
        ("report", 4, 3, 0)
    assert found["triage_agent.cost_usd"] == 0.066124
    assert "triage_agent.violation.decisions" not in found and root["status"] == {"code": 0}
    assert tracer.end(outcome) is root   # ended once


def test_a_run_without_a_report_ends_its_root_span_in_error():
    root = otel.Tracer().end(Outcome(stop="max_steps", error="12 model calls", cost_usd=None,
                                     violations=[{"decision": "unknown_tool"}]))
    found = attrs(root)
    assert found["error.type"] == "max_steps" and "triage_agent.cost_usd" not in found
    assert found["triage_agent.violation.decisions"] == ["unknown_tool"]
    assert root["status"] == {"code": otel.ERROR, "message": "12 model calls"}


def test_ids_are_random_per_run():
    ids = {otel.Tracer().trace_id for _ in range(50)}
    assert len(ids) == 50 and all(len(i) == 32 and int(i, 16) for i in ids)


def test_attribute_encoding_drops_none_and_empty_lists():
    assert otel.attributes({"a": None, "b": [], "c": (), "d": 0, "e": False, "f": 1.5,
                            "g": ["x"]}) == [
        {"key": "d", "value": {"intValue": "0"}}, {"key": "e", "value": {"boolValue": False}},
        {"key": "f", "value": {"doubleValue": 1.5}},
        {"key": "g", "value": {"arrayValue": {"values": [{"stringValue": "x"}]}}}]
    assert otel.any_value(float("nan")) == {"stringValue": "nan"}   # JSON has no NaN


def test_the_checker_rejects_what_is_not_otlp_json():
    good = otel.Tracer().end(Outcome(stop="report"))
    body = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": []}]}]}
    bad_spans = [dict(good, traceId="S45f95gDgQPSaWczOBP8DA=="),   # base64, not hex
                 dict(good, startTimeUnixNano=1700000000000000000),
                 dict(good, kind="SPAN_KIND_INTERNAL"),
                 dict(good, attributes=[{"key": "a", "value": None}]),
                 dict(good, attributes=[{"key": "a", "value": {"arrayValue": {"values": []}}}]),
                 dict(good, attributes=[{"key": "a", "value": {"intValue": 3}}]),
                 dict(good, endTimeUnixNano="1")]
    for span in bad_spans:
        body["resourceSpans"][0]["scopeSpans"][0]["spans"] = [span]
        assert request_problems(body), span
    body["resourceSpans"][0]["scopeSpans"][0]["spans"] = [good]
    assert request_problems(body) == []


# --- the environment ---------------------------------------------------------------------------

@pytest.mark.parametrize("environ,url", [
    ({}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "http://c:4318/v1/traces"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/base/"}, "http://c:4318/base/v1/traces"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c/custom",
      "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318"}, "https://c/custom"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "false"},
     "http://c:4318/v1/traces"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, None),
])
def test_the_endpoint_the_way_every_sdk_reads_it(environ, url):
    assert otlp.settings_from_env(environ).url == url


def test_headers_timeout_and_resource_from_the_environment():
    settings = otlp.settings_from_env({
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-general=1",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": " api-key = s%3Dcret%2C1 ,tenant=t%201",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod%20eu,service.name=ignored",
        "OTEL_SERVICE_NAME": "triage-prod",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "True"})
    assert settings.headers == {"api-key": "s=cret,1", "tenant": "t 1"}
    assert settings.timeout == 2.5 and settings.capture_content and settings.problems == []
    assert settings.resource == {"service.name": "triage-prod", "service.version": __version__,
                                 "deployment.environment": "prod eu"}


def test_bad_values_are_warnings_and_never_smuggle_a_header():
    settings = otlp.settings_from_env({
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
        "OTEL_EXPORTER_OTLP_HEADERS": "good=1,x-evil=a%0D%0AHost:%20attacker,noequals,=v",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "soon",
        "OTEL_RESOURCE_ATTRIBUTES": "team=sre,broken"})
    assert settings.headers == {"good": "1"}
    assert settings.timeout == 10.0
    assert settings.resource == {"service.name": "triage-agent", "service.version": __version__}
    assert len(settings.problems) == 3 and "a%0D" not in " ".join(settings.problems)
    grpc = otlp.settings_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317",
                                   "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert grpc.url and "not its gRPC one (4317)" in grpc.problems[0]
    assert not otlp.settings_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                                       "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}).problems
    nowhere = otlp.settings_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"})
    assert nowhere.url is None and "not an http:// or https:// URL" in nowhere.problems[0]


# --- export against a real receiver --------------------------------------------------------------

def must_not_sleep(seconds):
    pytest.fail(f"the exporter waited {seconds} s for a retry it must not make")


def export_to(receiver, *, timeout=5.0, path="/v1/traces", **options):
    settings = otlp.ExportSettings(url=receiver.url + path, headers={"x-key": "k"}, timeout=timeout)
    spans = [otel.Tracer().end(Outcome(stop="report"))]
    lines = []
    return otlp.export(settings, spans, warn=lines.append, **options), lines


def test_export_posts_one_request_the_receiver_can_parse():
    with Receiver() as receiver:
        ok, lines = export_to(receiver)
    assert ok and lines == []
    (request,) = receiver.requests
    assert request["path"] == "/v1/traces" and request_problems(request["body"]) == []
    assert request["headers"]["content-type"] == "application/json"
    assert request["headers"]["x-key"] == "k"
    assert attrs(request["body"]["resourceSpans"][0]["resource"])["service.name"] == \
        "triage-agent"
    assert [s["name"] for s in spans_of(request["body"])] == ["invoke_agent triage-agent"]


@pytest.mark.parametrize("status", [429, 503])
def test_a_throttled_export_is_retried_once_after_retry_after(status):
    waits = []
    with Receiver([(status, {"Retry-After": "2"}, b'{"message": "slow down"}')]) as receiver:
        ok, lines = export_to(receiver, sleep=waits.append)
    assert ok and lines == [] and waits == [2.0]
    first, second = receiver.requests
    assert first["raw"] == second["raw"]


def test_retry_after_as_an_http_date_is_honoured():
    waits = []
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 3))
    with Receiver([(503, {"Retry-After": when}, b"")]) as receiver:
        ok, _ = export_to(receiver, sleep=waits.append)
    assert ok and len(receiver.requests) == 2 and 1.0 < waits[0] <= 3.0


def test_no_retry_that_would_pass_the_timeout_and_only_one_retry():
    with Receiver([(429, {"Retry-After": "60"}, b"")]) as receiver:
        ok, lines = export_to(receiver, timeout=1.0, sleep=must_not_sleep)
    assert not ok and len(receiver.requests) == 1
    assert len(lines) == 1 and "retry after 60 s, past the export timeout" in lines[0]
    with Receiver([(503, {"Retry-After": "0"}, b"")] * 3) as receiver:
        ok, lines = export_to(receiver, sleep=lambda s: None)
    assert not ok and len(receiver.requests) == 2 and "HTTP 503" in lines[0]


def test_a_rejected_export_is_one_warning_without_the_header_values():
    with Receiver([(400, {}, b'{"code": 3, "message": "bad span\\u001b[2J"}')]) as receiver:
        ok, lines = export_to(receiver, sleep=must_not_sleep)
    assert not ok and len(receiver.requests) == 1
    assert lines == [f"warning: trace not exported to {receiver.url}/v1/traces: HTTP 400 (bad "
                     "span\\x1b[2J); the run's outcome is unchanged"]


def test_nobody_listening_is_one_warning():
    with Receiver() as receiver:
        url = receiver.url
    settings = otlp.ExportSettings(url=url + "/v1/traces", timeout=1.0)
    lines = []
    assert not otlp.export(settings, [{"name": "x"}], warn=lines.append)
    assert len(lines) == 1 and "cannot connect" in lines[0]


def test_a_partial_success_is_reported():
    body = json.dumps({"partialSuccess": {"rejectedSpans": "1", "errorMessage": "too old"}})
    with Receiver([(200, {}, body.encode())]) as receiver:
        ok, lines = export_to(receiver)
    assert ok and "1 span(s) rejected (too old)" in lines[0]


def test_user_info_in_the_endpoint_is_not_printed():
    assert otlp.where("https://user:pw@c.example:4318/v1/traces?k=v") == \
        "https://c.example:4318/v1/traces"
    assert urllib.parse.urlsplit(otlp.where("http://c/v1/traces")).path == "/v1/traces"


def test_the_recorder_exports_every_span_of_the_run_once():
    sent = []
    err = io.StringIO()
    recorder = Recorder(stderr=err, exporter=sent.append)
    recorder.trace(chat())
    recorder.trace(tool())
    recorder.finish(Outcome(stop="report"))
    (spans,) = sent
    assert [s["name"] for s in spans] == ["chat claude-opus-5-5", "execute_tool get_logs",
                                          "invoke_agent triage-agent"]
    assert {s["traceId"] for s in spans} == {recorder.trace_id}
