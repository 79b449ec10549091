"""The real CLI's trace, as an OpenTelemetry collector receives it: a replay against kube_sim with
OTEL_EXPORTER_OTLP_* pointing at a real local OTLP/HTTP receiver (tests/support/otlp_receiver.py).

What arrives must parse as an ExportTraceServiceRequest and hold one consistent trace: one root
`invoke_agent triage-agent`, every other span its child, times inside it, typed attributes, the
resource and headers the environment asked for; the same spans are in --trace, the same trace id
in every audit entry and in the --json outcome. Export trouble (throttling, a refusing or absent
collector) is one warning line and never changes the exit code."""

import json
import signal

import pytest

from tests.support.otlp_receiver import Receiver, attrs, request_problems, spans_of
from tests.agent.cli.test_cli import jsonl, replay_args, run_cli_here
from tests.agent.cli.test_signals import Cli
from triage_agent import __version__

PRIVATE = "s3cr3t-t0ken"


def exported_run(sim, receiver, tmp_path, fixture="crashloop-undo", env=(), extra=()):
    trace, audit = tmp_path / "trace.jsonl", tmp_path / "audit.jsonl"
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, **dict(env)}
    out = run_cli_here(*replay_args(sim, fixture, "--json", "--trace", str(trace),
                                    "--audit-log", str(audit), *extra), env=environ)
    return out, trace, audit


def test_one_run_is_one_consistent_trace_at_the_collector(shared_sim, tmp_path):
    sim = shared_sim("crashloop")
    env = {"OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{PRIVATE},x-tenant=sre",
           "OTEL_SERVICE_NAME": "triage-prod",
           "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=staging"}
    with Receiver() as receiver:
        out, trace, audit = exported_run(sim, receiver, tmp_path, env=env,
                                         extra=["--allow-action", "rollout_undo"])
    assert out.returncode == 0, out.stderr
    outcome = json.loads(out.stdout)
    (request,) = receiver.requests                           # sent once, at the end
    assert request["path"] == "/v1/traces" and request_problems(request["body"]) == []
    assert request["headers"]["content-type"] == "application/json"
    assert request["headers"]["authorization"] == f"Bearer {PRIVATE}"   # URL-decoded
    assert request["headers"]["x-tenant"] == "sre" and PRIVATE not in out.stderr
    assert attrs(request["body"]["resourceSpans"][0]["resource"]) == {
        "service.name": "triage-prod", "service.version": __version__,
        "deployment.environment": "staging"}
    spans = spans_of(request["body"])
    assert {s["traceId"] for s in spans} == {outcome["trace_id"]}
    assert {e["trace_id"] for e in jsonl(audit)} == {outcome["trace_id"]}
    assert jsonl(trace) == spans                              # the file holds the same spans
    (root,) = [s for s in spans if "parentSpanId" not in s]
    assert root["name"] == "invoke_agent triage-agent" and root["kind"] == 1 and root is spans[-1]
    children = spans[:-1]
    assert {s["parentSpanId"] for s in children} == {root["spanId"]}
    assert len({s["spanId"] for s in spans}) == len(spans)
    for span in children:
        assert int(root["startTimeUnixNano"]) <= int(span["startTimeUnixNano"]) <= \
            int(span["endTimeUnixNano"]) <= int(root["endTimeUnixNano"])
    chats = [s for s in children if s["kind"] == 3]
    assert [s["name"] for s in chats] == ["chat claude-opus-5-5"] * outcome["steps"]
    tools = [(s["name"], s["kind"], s["status"]["code"]) for s in children if s["kind"] == 1]
    assert tools == [("execute_tool get_pods", 1, 0), ("execute_tool get_logs", 1, 0),
                     ("execute_tool describe_pod", 1, 0),
                     ("execute_tool propose_action", 1, 2),   # no terminal: denied, an error
                     ("execute_tool write_report", 1, 0)]
    propose = attrs(next(s for s in children if s["name"] == "execute_tool propose_action"))
    assert propose["error.type"] == "tool_error"
    assert propose["triage_agent.decision"] == "proposal_denied"
    first_chat = attrs(chats[0])
    assert first_chat["gen_ai.usage.input_tokens"] > 0
    assert first_chat["gen_ai.response.finish_reasons"] == ["tool_use"]
    get_pods = attrs(next(s for s in children if s["name"] == "execute_tool get_pods"))
    assert get_pods["mcp.method.name"] == "tools/call" and get_pods["mcp.protocol.version"]
    summary = attrs(root)
    assert (summary["triage_agent.stop"], summary["triage_agent.steps"],
            summary["triage_agent.tool_calls"], summary["triage_agent.violations"]) == \
        ("report", outcome["steps"], outcome["tool_calls"], len(outcome["violations"]))
    assert summary["triage_agent.cost_usd"] == outcome["cost_usd"]
    assert summary["gen_ai.usage.output_tokens"] == outcome["usage"]["output"]
    assert f"trace {outcome['trace_id']} exported to {receiver.url}/v1/traces" in out.stderr
    text = json.dumps(request["body"])   # no prompt or tool text unless the operator opts in
    assert "PAYMENT_API_URL" not in text and "gen_ai.input.messages" not in text


def test_two_runs_in_one_trace_file_are_two_traces(shared_sim, tmp_path):
    sim = shared_sim("crashloop")
    trace = tmp_path / "trace.jsonl"
    ids = []
    for _ in range(2):   # a one-call run (the model refuses) is enough to make a trace
        out = run_cli_here(*replay_args(sim, "refusal", "--json", "--trace", str(trace)))
        assert out.returncode == 3, out.stderr
        ids.append(json.loads(out.stdout)["trace_id"])
    spans = jsonl(trace)
    assert len(set(ids)) == 2 and {s["traceId"] for s in spans} == set(ids)
    for trace_id in ids:
        roots = [s for s in spans if s["traceId"] == trace_id and "parentSpanId" not in s]
        assert len(roots) == 1


def test_message_content_only_when_the_operator_opts_in_and_redacted(shared_sim, tmp_path):
    sim = shared_sim("crashloop")
    with Receiver() as receiver:
        out, _, _ = exported_run(sim, receiver, tmp_path, fixture="crashloop", env={
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    assert out.returncode == 0, out.stderr
    spans = [attrs(s) for s in spans_of(receiver.requests[0]["body"])]
    chats = [s for s in spans if s["gen_ai.operation.name"] == "chat"]
    first = json.loads(chats[0]["gen_ai.input.messages"])
    assert first[0]["role"] == "user" and "checkout pods in prod" in first[0]["parts"][0]["content"]
    assert all("gen_ai.output.messages" in s for s in chats)
    logs = next(s for s in spans if s.get("gen_ai.tool.name") == "get_logs")
    assert "PAYMENT_API_URL" in logs["gen_ai.tool.call.result"]


def test_a_secret_in_the_symptom_is_redacted_in_captured_content(shared_sim, tmp_path):
    sim = shared_sim("crashloop")
    args = replay_args(sim, "crashloop", "--json")
    args[0] = f"checkout restarts since DB_PASSWORD={PRIVATE} was rotated"
    with Receiver() as receiver:
        out = run_cli_here(*args, env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    assert out.returncode == 0, out.stderr
    body = receiver.requests[0]["raw"].decode()
    assert PRIVATE not in body and "[REDACTED]" in body


def test_the_traces_endpoint_is_used_as_it_is(shared_sim, tmp_path):
    with Receiver() as receiver:
        out = run_cli_here(*replay_args(shared_sim("crashloop"), "crashloop", "--json"), env={
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.url + "/otlp/traces",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9/never"})
    assert out.returncode == 0 and [r["path"] for r in receiver.requests] == ["/otlp/traces"]


def test_a_throttled_export_is_sent_again_once(shared_sim, tmp_path):
    with Receiver([(429, {"Retry-After": "0"}, b"")]) as receiver:
        out, _, _ = exported_run(shared_sim("crashloop"), receiver, tmp_path, fixture="crashloop")
    assert out.returncode == 0 and "warning" not in out.stderr
    first, second = receiver.requests
    assert first["raw"] == second["raw"] and request_problems(second["body"]) == []


@pytest.mark.parametrize("fixture,code", [("crashloop", 0), ("api-error", 4)])
def test_a_failed_export_is_one_warning_and_keeps_the_exit_code(shared_sim, tmp_path, fixture,
                                                                  code):
    with Receiver([(500, {}, b'{"message": "disk full"}')] * 2) as receiver:
        out, trace, _ = exported_run(shared_sim("crashloop"), receiver, tmp_path, fixture=fixture)
    assert out.returncode == code and len(receiver.requests) == 1
    warnings = [line for line in out.stderr.splitlines() if "trace not exported" in line]
    assert warnings == [f"triage-agent: warning: trace not exported to {receiver.url}/v1/traces:"
                        " HTTP 500 (disk full); the run's outcome is unchanged"]
    assert json.loads(out.stdout)["stop"] == ("report" if code == 0 else "api_error")
    root = jsonl(trace)[-1]                  # the file is written whatever the collector does
    assert root["name"] == "invoke_agent triage-agent"
    if code:
        chat = attrs(jsonl(trace)[-2])
        assert chat["error.type"] == "overloaded_error" and root["status"]["code"] == 2


def test_no_collector_listening_is_one_warning(shared_sim):
    with Receiver() as receiver:
        url = receiver.url             # closed again: nothing listens there any more
    out = run_cli_here(*replay_args(shared_sim("crashloop"), "crashloop"),
                       env={"OTEL_EXPORTER_OTLP_ENDPOINT": url})
    assert out.returncode == 0 and "SEVERITY:" in out.stdout
    assert len([line for line in out.stderr.splitlines() if "trace not exported" in line]) == 1


@pytest.mark.parametrize("switch", [{"OTEL_SDK_DISABLED": "true"},
                                    {"OTEL_TRACES_EXPORTER": "none"}])
def test_disabled_sends_nothing_but_keeps_the_trace_file(shared_sim, tmp_path, switch):
    with Receiver() as receiver:
        out, trace, _ = exported_run(shared_sim("crashloop"), receiver, tmp_path,
                                     fixture="crashloop", env=switch)
    assert out.returncode == 0 and receiver.requests == []   # the run has ended: none will come
    assert jsonl(trace)[-1]["name"] == "invoke_agent triage-agent"
    assert "exported" not in out.stderr


def test_bad_otel_settings_warn_and_the_run_goes_on(shared_sim):
    out = run_cli_here(*replay_args(shared_sim("crashloop"), "crashloop", "--json"),
                       env={"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318",
                       "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"})
    assert out.returncode == 0 and json.loads(out.stdout)["stop"] == "report"
    assert out.stderr.count("triage-agent: warning: OTEL_EXPORTER_OTLP_") == 2


def test_an_interrupted_run_still_sends_its_trace(tmp_path):
    with Receiver() as receiver:
        run = Cli(tmp_path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        try:
            run.wait_stderr(b"[step 2/")       # the get_logs call hangs on the server
            run.proc.send_signal(signal.SIGTERM)
            returncode, stdout, _ = run.finish()
        finally:
            run.cleanup()
    assert returncode == 143
    (request,) = receiver.requests
    spans = spans_of(request["body"])
    root = attrs(spans[-1])
    assert root["triage_agent.stop"] == "interrupted" and root["error.type"] == "interrupted"
    assert spans[-1]["status"] == {"code": 2, "message": "terminated by SIGTERM"}
    assert [s["name"] for s in spans[:-1]] == ["chat claude-opus-5-5", "execute_tool get_pods",
                                               "chat claude-opus-5-5"]
    assert json.loads(stdout)["trace_id"] == spans[-1]["traceId"]


def test_a_server_that_will_not_start_is_a_trace_too(tmp_path):
    fixture = tmp_path / "f.json"
    fixture.write_text(json.dumps({"description": "unused", "responses": []}))
    with Receiver() as receiver:
        out = run_cli_here("x", "--namespaces", "prod", "--replay", str(fixture), "--json",
                           "--mcp", str(tmp_path / "no-such-server"),
                           env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    assert out.returncode == 4
    outcome = json.loads(out.stdout)
    (root,) = spans_of(receiver.requests[0]["body"])
    assert root["traceId"] == outcome["trace_id"]
    assert attrs(root)["error.type"] == "mcp_error" and attrs(root)["triage_agent.steps"] == 0
