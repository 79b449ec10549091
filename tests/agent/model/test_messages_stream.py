"""The streaming Messages client over real HTTP against the fake API in streaming mode: answers
equal to the plain ones, every way a stream fails retried under the same policy, and a loop
whose conversation is byte-for-byte the same with and without streaming."""

import json
import time

import pytest

from tests.support.fake_messages_api import FakeMessagesApi, error_body, response, text, tool_use
from tests.support.fake_sse import events_for
from tests.agent.test_loop_fakes import FakeTools, ListRecorder, happy_script, policy
from tests.agent.model.test_sse import EVERYTHING, THINKING
from triage_agent.loop import run_triage
from triage_agent.model.messages import ApiError, MessagesClient

REQUEST = {"model": "claude-opus-5-5", "max_tokens": 64,
           "messages": [{"role": "user", "content": [{"type": "text", "text": "héllo"}]}]}
SMALL = response("tool_use", THINKING, text("Checking ✓"),
                 tool_use("toolu_1", "get_logs", {"namespace": "prod", "name": "a\"☃"}))


def client_for(api, *, stream=True, **options):
    seen = {"sleeps": [], "retries": [], "events": []}
    client = MessagesClient(api_key="k", base_url=api.url, stream=stream, rand=lambda: 0.0,
                            sleep=seen["sleeps"].append, on_stream=seen["events"].append,
                            on_retry=lambda n, delay, error: seen["retries"].append(error),
                            **options)
    return client, seen


def test_a_streamed_answer_is_the_plain_answer_and_the_request_differs_only_by_stream():
    with FakeMessagesApi([EVERYTHING, EVERYTHING], sse={"split": [1, 3, 2], "pings": True}) \
            as api:
        streamed, seen = client_for(api)
        plain, _ = client_for(api, stream=False)
        assert streamed(REQUEST) == EVERYTHING == plain(REQUEST)
    sent_streamed, sent_plain = api.requests[0]["raw"], api.requests[1]["raw"]
    assert sent_streamed == sent_plain[:-1] + b', "stream": true}'
    assert api.requests[0]["body"]["stream"] is True and "stream" not in REQUEST
    assert streamed.last_request_id == "req_fake_001" and seen["sleeps"] == []
    assert ("block", "tool_use", "get_logs") in seen["events"]


@pytest.mark.parametrize("how, kind", [
    ({"after": 5, "then": "error"}, "overloaded_error"),     # an error event after deltas
    ({"after": 6, "then": "drop"}, "connection_error"),      # the connection breaks
    ({"after": 4, "then": "end"}, "incomplete_stream"),      # ends without message_stop
])
def test_a_failed_stream_is_retried_and_the_retry_succeeds(how, kind):
    with FakeMessagesApi([dict(status=200, body=SMALL, sse=how), SMALL],
                         sse={"split": 5, "pings": True}) as api:
        client, seen = client_for(api)
        assert client(REQUEST) == SMALL
    (error,) = seen["retries"]
    assert error.error_type == kind and error.request_id == "req_fake_001"
    assert seen["sleeps"] == [0.5] and len(api.requests) == 2 and client.retries == 1
    assert client.last_request_id == "req_fake_002"
    assert api.requests[0]["raw"] == api.requests[1]["raw"]   # the same request, sent again


def test_a_silent_stream_hits_the_idle_timeout_and_the_connection_is_closed():
    with FakeMessagesApi([dict(status=200, body=SMALL, sse={"after": 3, "then": "stall"}),
                          SMALL], sse={"pings": True}) as api:
        client, seen = client_for(api, idle_timeout=0.2)
        began = time.monotonic()
        assert client(REQUEST) == SMALL
        took = time.monotonic() - began
        assert api.hung_up.wait(30)    # the client closed the silent connection
    (error,) = seen["retries"]
    assert error.error_type == "timeout_error" and error.request_id == "req_fake_001"
    assert "silent for 0.2 s" in error.message and error.status == 200
    assert 0.2 <= took < 1.5 and api.hangups == ["req_fake_001"]


def test_tool_input_that_is_not_json_is_retried_then_reported_with_the_request_id():
    events = events_for(SMALL)
    pieces = [d["delta"] for _, d in events if d.get("delta", {}).get("type")
              == "input_json_delta"]
    pieces[1]["partial_json"] = "{" + pieces[1]["partial_json"]   # {{"names...: not JSON
    bad = {"status": 200, "body": SMALL, "sse": {"events": events}}
    with FakeMessagesApi([bad, bad, bad]) as api:
        client, seen = client_for(api)
        with pytest.raises(ApiError) as caught:
            client(REQUEST)
    err = caught.value
    assert (err.status, err.error_type, err.request_id) == (200, "invalid_tool_input",
                                                             "req_fake_003")
    assert "get_logs" in err.message and "in the event stream" in str(err)
    assert len(api.requests) == 3 and len(seen["retries"]) == 2


def test_an_error_event_that_a_retry_cannot_fix_is_raised_at_once():
    events = [("error", {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": "prompt is too long"}})]
    with FakeMessagesApi([dict(status=200, body=SMALL, sse={"events": events})]) as api:
        client, seen = client_for(api)
        with pytest.raises(ApiError) as caught:
            client(REQUEST)
    assert caught.value.error_type == "invalid_request_error" and seen["retries"] == []
    assert caught.value.request_id == "req_fake_001" and len(api.requests) == 1


def test_http_errors_before_the_stream_are_handled_as_without_streaming():
    overloaded = {"status": 529, "body": error_body(529, "overloaded_error", "busy", "x"),
                  "headers": {"retry-after-ms": "20"}}
    bad = {"status": 400, "body": error_body(400, "invalid_request_error", "no", "x")}
    with FakeMessagesApi([overloaded, {"drop": True}, SMALL, bad]) as api:
        client, seen = client_for(api)
        assert client(REQUEST) == SMALL
        assert seen["sleeps"] == [0.02, 1.0]
        with pytest.raises(ApiError) as caught:
            client(REQUEST)
    assert (caught.value.status, caught.value.request_id) == (400, "req_fake_004")


def test_a_plain_json_answer_to_a_streaming_request_is_still_used():
    with FakeMessagesApi([]) as api:
        api.script = [{"status": 200, "body": SMALL, "sse": {}}]
        original = api.handle

        def plain(handler):   # a proxy that ignores "stream" and answers in one piece
            with api.lock:
                item = api.script.pop(0)
            api._send(handler, 200, item["body"], {"request-id": "req_proxy"})
        api.handle = plain
        try:
            client, _ = client_for(api)
            assert client(REQUEST) == SMALL and client.last_request_id == "req_proxy"
        finally:
            api.handle = original


def test_a_status_callback_that_fails_does_not_fail_the_call():
    def broken(meaning):
        raise RuntimeError("no terminal")
    with FakeMessagesApi([SMALL]) as api:
        client = MessagesClient(api_key="k", base_url=api.url, stream=True, on_stream=broken)
        assert client(REQUEST) == SMALL


def conversation(stream, script):
    with FakeMessagesApi(script, sse={"split": [2, 11], "pings": True}) as api:
        client = MessagesClient(api_key="k", base_url=api.url, stream=stream, max_retries=0)
        outcome = run_triage("pods restart", model=client, tools=FakeTools(),
                             policy=policy(), recorder=ListRecorder())
    return outcome, [r["raw"] for r in api.requests], [r["body"] for r in api.requests]


def test_the_loop_sends_the_same_bytes_with_and_without_streaming():
    script = happy_script()
    script[0]["content"].insert(0, THINKING)
    script[1]["content"].insert(0, {"type": "redacted_thinking", "data": "abc=="})
    plain, plain_raw, _ = conversation(False, script)
    streamed, streamed_raw, bodies = conversation(True, script)
    assert streamed.stop == plain.stop == "report" and streamed.to_dict() == plain.to_dict()
    assert len(streamed_raw) == len(plain_raw) == 3
    for a, b in zip(plain_raw, streamed_raw):
        assert b == a[:-1] + b', "stream": true}'
    # the thinking block and its signature went back exactly as they came
    assert bodies[1]["messages"][1]["content"][0] == THINKING
    assert json.dumps(THINKING, ensure_ascii=False).encode() in streamed_raw[2]
