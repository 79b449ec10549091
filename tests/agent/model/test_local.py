"""The Messages client against self-hosted servers (tests/support/fake_local_api.py: llama-server's
and Ollama's wire behaviour) and the endpoint profiles: what the compatible profile sends, that
the anthropic profile sends what the client always sent, auth, error bodies of either shape,
a model still loading, the first-byte wait, and streams without pings or with late stops."""

import json
import time

import pytest

from tests.support.fake_local_api import FakeLocalApi
from tests.support.fake_messages_api import FakeMessagesApi, response, text, tool_use
from tests.agent.model.test_sse import THINKING
from triage_agent import prompts
from triage_agent.model import profiles
from triage_agent.model.messages import ApiError, MessagesClient
from triage_agent.turns import Settings, build_request, tool_result

CALLS = response("tool_use", THINKING, text("Checking"),
                 tool_use("toolu_1", "get_logs", {"namespace": "prod", "name": "web-1"}),
                 tool_use("toolu_2", "get_pods", {}))


class Tools:
    api_tools = [{"name": "get_pods", "description": "pods", "strict": True,
                  "input_schema": {"type": "object", "additionalProperties": False},
                  "cache_control": {"type": "ephemeral"}}]


def loop_request(*, error=True):
    """A request as the loop builds it: cached system block, strict tool, a tool result."""
    messages = [{"role": "user", "content": [{"type": "text", "text": "pods restart"}]},
                {"role": "assistant", "content": [tool_use("toolu_1", "get_pods", {})]},
                {"role": "user", "content": [tool_result("toolu_1", "pod not found", error)]}]
    return build_request(Settings(), Tools(), messages)


def client_for(api, **options):
    seen = {"sleeps": [], "retries": []}
    options = dict({"api_key": None, "profile": "compatible", "stream": True}, **options)
    client = MessagesClient(base_url=api.url, rand=lambda: 0.0, sleep=seen["sleeps"].append,
                            on_retry=lambda n, delay, error: seen["retries"].append(error),
                            **options)
    return client, seen


@pytest.mark.parametrize("url", ["https://api.anthropic.com", "https://API.anthropic.com./"])
def test_the_hosted_host_is_known(url):
    assert profiles.is_hosted(url)
    assert not profiles.is_hosted("https://api.anthropic.com.evil.example")
    assert not profiles.is_hosted("http://127.0.0.1:8080") and not profiles.is_hosted("not a url")


@pytest.mark.parametrize("model, profile", [
    ("claude-opus-5-5", "anthropic"), ("claude-haiku-4-5-20251001", "anthropic"),
    ("qwen3-4b-instruct", "compatible"), ("llama3.1:8b", "compatible"),
    ("claude", "compatible"), (None, "compatible")])
def test_the_default_profile_follows_the_model_whatever_the_url(model, profile):
    """Issue 54 changed this from the base URL's host to the model: a gateway in front of the
    hosted API keeps the anthropic profile."""
    assert profiles.default_profile(model) == profile


def test_the_compatible_request_carries_only_what_these_servers_understand():
    body = loop_request()
    sent = profiles.compatible_request(body)
    assert sent["system"] == prompts.SYSTEM_PROMPT            # one text, no blocks to join
    assert "fallbacks" not in sent and "output_config" not in sent
    assert '"cache_control"' not in json.dumps(sent) and '"strict"' not in json.dumps(sent)
    result = sent["messages"][-1]["content"][0]
    assert result["content"] == [{"type": "text", "text": "ERROR: pod not found"}]
    assert body == loop_request()                             # the loop's request unchanged
    assert profiles.compatible_request(sent) == sent          # said once, not twice
    fine = profiles.compatible_request(loop_request(error=False))
    assert fine["messages"][-1]["content"][0]["content"][0]["text"] == "pod not found"


def test_the_anthropic_profile_sends_what_the_client_always_sent():
    body = loop_request()
    with FakeMessagesApi([CALLS, CALLS]) as api:
        for profile in ("anthropic", None):
            options = {"profile": profile} if profile else {}
            MessagesClient(api_key="sk-k", base_url=api.url, **options)(body)
    hosted, default = api.requests
    assert hosted["raw"] == default["raw"] == json.dumps(body, ensure_ascii=False).encode()
    assert {k.lower(): v for k, v in hosted["headers"].items() if k.lower() not in (
        "host", "content-length", "connection", "accept-encoding")} == {
        "x-api-key": "sk-k", "anthropic-version": "2026-10-21", "content-type":
        "application/json", "accept": "application/json", "user-agent":
        "triage-agent/0.1 (python-urllib)", "anthropic-beta": "server-side-fallback-2026-07-01"}


@pytest.mark.parametrize("server", ["llama", "ollama"])
@pytest.mark.parametrize("stream", [True, False])
def test_a_local_server_answer_reads_whole_and_nothing_is_lost_on_the_way(server, stream):
    with FakeLocalApi([CALLS], server=server) as api:
        client, _ = client_for(api, stream=stream)
        answer = client(loop_request())
    assert [b["type"] for b in answer["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert answer["content"][2]["input"] == {"namespace": "prod", "name": "web-1"}
    assert answer["content"][3]["input"] == {} and answer["stop_reason"] == "tool_use"
    assert answer["usage"]["output_tokens"] == 20 and answer["usage"]["input_tokens"] == 100
    (request,) = api.requests
    assert request["ignored"] == []
    assert "x-api-key" not in {k.lower() for k in request["headers"]}
    assert ("tool", "ERROR: pod not found") in request["seen"]["turns"]


def test_llama_streams_tool_use_without_input_and_every_stop_at_the_end():
    with FakeLocalApi([CALLS], server="llama") as api:
        events = api.events(api.answer(CALLS, {"model": "m"}))
    names = [name for name, _ in events]
    assert "ping" not in names and names[-6:-2] == ["content_block_stop"] * 4
    starts = [data["content_block"] for name, data in events if name == "content_block_start"]
    assert "input" not in starts[2]
    assert events[-2][1]["usage"] == {"output_tokens": 20}          # output tokens only here
    assert events[0][1]["message"]["usage"] == {"input_tokens": 100}


def test_a_missing_stop_reason_comes_through_as_none():
    with FakeLocalApi([dict(CALLS, stop_reason=None)], server="ollama") as api:
        answer = client_for(api)[0](loop_request())
    assert answer.get("stop_reason") is None and len(answer["content"]) == 4


def test_a_bearer_token_is_sent_and_a_wrong_one_fails_in_words():
    with FakeLocalApi([CALLS, CALLS], token="s3cret") as api:
        good, _ = client_for(api, auth_token="s3cret")
        assert good(loop_request())["stop_reason"] == "tool_use"
        bad, _ = client_for(api, auth_token="nope")
        with pytest.raises(ApiError) as caught:
            bad(loop_request())
    headers = {k.lower(): v for k, v in api.requests[0]["headers"].items()}
    assert headers["authorization"] == "Bearer s3cret" and "x-api-key" not in headers
    assert caught.value.status == 401 and caught.value.error_type == "authentication_error"
    assert caught.value.message == "Invalid API Key"


@pytest.mark.parametrize("server", ["llama", "ollama"])
def test_a_prompt_past_the_context_size_is_said_in_the_operators_words(server):
    error = {"status": 400, "error": {"type": "exceed_context_size_error", "message":
                                      "the request exceeds the available context size"}}
    with FakeLocalApi([error], server=server) as api:
        client, seen = client_for(api)
        with pytest.raises(ApiError) as caught:
            client(loop_request())
    assert caught.value.status == 400 and seen["retries"] == []
    assert caught.value.message.startswith(
        "the model server says the prompt exceeds its context size (exceed_context_size_error)"
        ": the request exceeds the available context size; what to do: ")


def test_a_model_still_loading_is_retried_like_an_overload():
    loading = {"status": 503, "error": {"type": "unavailable_error", "message": "Loading model"}}
    with FakeLocalApi([loading, loading, CALLS]) as api:
        client, seen = client_for(api)
        assert client(loop_request())["stop_reason"] == "tool_use"
    assert seen["sleeps"] == [0.5, 1.0] and len(api.requests) == 3
    assert "the model is not ready" in seen["retries"][0].message


def test_an_error_body_of_plain_text_or_a_string_is_kept_readable():
    from triage_agent.model.gateway import error_fields
    assert error_fields(500, b'{"error": "model \\"x\\" not found"}') == (
        "http_500", 'model "x" not found', None)
    assert error_fields(502, b"Bad Gateway") == ("http_502", "Bad Gateway", None)


def test_the_first_byte_may_take_longer_than_the_idle_timeout():
    # the server reads the prompt for 0.5 s before its first byte; the idle wait is 0.1 s
    with FakeLocalApi([CALLS, CALLS], first_byte_delay=0.5) as api:
        patient, _ = client_for(api, idle_timeout=0.1, first_byte_timeout=5)
        assert patient(loop_request())["stop_reason"] == "tool_use"
        hasty, seen = client_for(api, idle_timeout=0.1, max_retries=0)
        with pytest.raises(ApiError) as caught:
            hasty(loop_request())
    assert caught.value.error_type == "timeout_error"
    assert "0.1 s" in caught.value.message


def test_once_the_answer_has_started_the_idle_timeout_is_the_wait_again():
    stalled = {"status": 200, "body": CALLS, "sse": {"after": 3, "then": "stall"}}
    with FakeMessagesApi([stalled]) as api:
        client, _ = client_for(api, idle_timeout=0.2, first_byte_timeout=30, max_retries=0)
        started = time.monotonic()
        with pytest.raises(ApiError) as caught:
            client(loop_request())
        assert time.monotonic() - started < 10   # the idle wait, not the 30 s first-byte one
        assert api.hung_up.wait(10)
    assert caught.value.error_type == "timeout_error"
    assert caught.value.message.startswith("the event stream was silent for 0.2 s")
