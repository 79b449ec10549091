"""The live path: the real CLI against a fake Messages API (tests/support/fake_messages_api.py) that
enforces the API's conversation rules, plus the real MCP server, kubectl and kube_sim."""

import json
import urllib.error
import urllib.request

import pytest

from tests.support.fake_messages_api import (FakeMessagesApi, conversation_problems, count_breakpoints,
                                     error_body, raw_field, request_problems,
                                     strict_schema_problems)
from tests.support.prompt_cache import PromptCache, cache_blocks
from tests.agent.cli.test_cli import FATAL, REPLAY, run_cli, run_cli_here
from triage_agent import prompts

FAST = {"retry-after-ms": "1"}
KEY = "sk-ant-test-not-a-real-key"


def crashloop_responses(*, review=True):
    """The crashloop fixture's responses: the investigation's four, then the review's answer
    (which a live run asks for by default; review=False leaves it out)."""
    responses = json.loads((REPLAY / "crashloop.json").read_text())["responses"]
    return responses if review else responses[:4]


def failure(status, kind):
    return {"status": status, "body": error_body(status, kind, f"{kind} on purpose", "x"),
            "headers": FAST}


def live(api, sim, *extra, run=run_cli_here):
    """A live run against the fake API `api`; `run=run_cli` for the real CLI process."""
    return run("checkout pods in prod keep restarting", "--namespaces", "prod",
               "--kubeconfig", sim.kubeconfig, "--api-profile", "anthropic", *extra,
               env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.url})


def test_live_run_with_retries_headers_and_body(shared_sim):
    r = crashloop_responses()
    script = [failure(429, "rate_limit_error"), r[0], failure(529, "overloaded_error"), r[1],
              failure(500, "api_error"), r[2], {"drop": True}, r[3], r[4]]
    with FakeMessagesApi(script) as api:
        out = live(api, shared_sim("crashloop"), run=run_cli)   # the process, end to end
    assert out.returncode == 0, out.stderr
    assert FATAL in out.stdout
    assert len(api.requests) == 9 and api.script == []
    retries = [line for line in out.stderr.splitlines() if line.startswith("[retry 1]")]
    assert len(retries) == 4 and "overloaded_error (HTTP 529)" in retries[1]
    sent, review = api.requests[:-1], api.requests[-1]   # the investigation, then the review
    for request in api.requests:
        headers = {k.lower(): v for k, v in request["headers"].items()}
        assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2026-10-21"
    assert [t["name"] for t in review["body"]["tools"]] == ["review_report"]
    assert review["body"]["tools"][0]["strict"] is True
    assert out.stdout.startswith("Checked: ") and "review: supported" in out.stdout.splitlines()[0]
    for request in sent:
        headers = {k.lower(): v for k, v in request["headers"].items()}
        assert headers["x-api-key"] == KEY
        assert headers["anthropic-version"] == "2026-10-21"
        assert headers["anthropic-beta"] == "server-side-fallback-2026-07-01"
        body = request["body"]
        assert body["fallbacks"] == "default" and body["output_config"] == {"effort": "medium"}
        assert body["max_tokens"] == 16000 and body["model"] == "claude-opus-5-5"
        assert body["system"] == [{"type": "text", "text": prompts.SYSTEM_PROMPT,
                                   "cache_control": {"type": "ephemeral"}}]
        # the system block, the newest user turn and (after the first step) the one before it
        users = sum(m["role"] == "user" for m in body["messages"])
        assert count_breakpoints(body) == 1 + min(users, 2)
        assert {t["name"] for t in body["tools"] if t.get("strict")} == {"propose_action",
                                                                          "write_report"}
    first_user = sent[0]["body"]["messages"][0]["content"][0]["text"]
    assert "checkout pods in prod keep restarting" in first_user and "prod" in first_user


def test_no_fallbacks_and_effort(shared_sim):
    r = crashloop_responses()
    with FakeMessagesApi(r) as api:
        out = live(api, shared_sim("crashloop"), "--no-fallbacks", "--effort", "low",
                   "--model", "claude-sonnet-5-5")
    assert out.returncode == 0, out.stderr
    body = api.requests[0]["body"]
    headers = {k.lower() for k in api.requests[0]["headers"]}
    assert "fallbacks" not in body and "anthropic-beta" not in headers
    assert body["output_config"] == {"effort": "low"} and body["model"] == "claude-sonnet-5-5"


def test_system_prompt_is_byte_identical_across_steps_and_runs(shared_sim):
    sim, cache = shared_sim("crashloop"), PromptCache()
    with FakeMessagesApi(crashloop_responses(), cache=cache) as first:
        assert live(first, sim).returncode == 0
    with FakeMessagesApi(crashloop_responses(), cache=cache) as second:
        out = run_cli_here("the cart is slow", "--namespaces", "prod,staging", "--kubeconfig",
                           sim.kubeconfig, "--max-steps", "5", "--effort", "high",
                           "--api-profile", "anthropic",
                           env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": second.url})
        assert out.returncode == 0, out.stderr
    # the investigation's requests (the review has its own system prompt and one tool)
    runs = ([r for r in first.requests if has_write_report(r)],
            [r for r in second.requests if has_write_report(r)])
    assert len(runs[0]) == 4 and len(first.requests) == 5
    systems = {raw_field(r["raw"], "system") for requests in runs for r in requests}
    assert len(systems) == 1 and json.dumps(prompts.SYSTEM_PROMPT).encode() in systems.pop()
    # The cached prefix (tools, then system) is the same bytes on every step of both runs, over
    # other namespaces (prod, then prod,staging): one prompt cache serves both.
    assert len({raw_field(r["raw"], "tools") for requests in runs for r in requests}) == 1
    for requests in runs:
        assert all(count_breakpoints(r["body"]) <= 4 for r in requests)
    # so the second run's first request reads all of it (all but its first user turn) from the
    # cache the first run left
    opening = second.requests[0]
    assert opening["cached_bytes"] == opening["input_bytes"] - len(cache_blocks(
        opening["body"])[-1][0])


@pytest.mark.parametrize("status,kind", [(400, "invalid_request_error"),
                                         (401, "authentication_error")])
def test_client_errors_exit_4_with_request_id(shared_sim, status, kind):
    with FakeMessagesApi([{"status": status, "body": error_body(status, kind, "nope", "x")}]) \
            as api:
        out = live(api, shared_sim("crashloop"), "--json")
    assert out.returncode == 4 and len(api.requests) == 1  # not retried
    assert "req_fake_001" in out.stderr and kind in out.stderr and "Traceback" not in out.stderr
    outcome = json.loads(out.stdout)
    assert outcome["stop"] == "api_error" and "req_fake_001" in outcome["error"]


def test_record_then_replay_gives_the_same_outcome(shared_sim, tmp_path):
    sim = shared_sim("crashloop")
    recording = tmp_path / "recorded.json"
    with FakeMessagesApi(crashloop_responses()) as api:
        live_out = live(api, sim, "--json", "--record", str(recording))
    assert live_out.returncode == 0, live_out.stderr
    replayed = run_cli_here("checkout pods in prod keep restarting", "--namespaces", "prod",
                            "--kubeconfig", sim.kubeconfig, "--json", "--replay", str(recording),
                            "--verify")   # the recording carries the review's answer
    assert replayed.returncode == 0, replayed.stderr
    a, b = json.loads(live_out.stdout), json.loads(replayed.stdout)
    assert a["report"] == b["report"] and a["usage"] == b["usage"] and a["steps"] == b["steps"]
    assert a["verification"] == b["verification"] and a["verification"]["reviewed"] is True


def has_write_report(request):
    return any(t["name"] == "write_report" for t in request["body"]["tools"])


def test_fake_api_rejects_broken_conversations():
    """The fake's rule check is not vacuous: each broken shape is caught."""
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_pods", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}
    user = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    assistant = {"role": "assistant", "content": [use]}
    assert conversation_problems([user, assistant, {"role": "user", "content": [result]}]) == []
    broken = [
        [user, assistant],                                                  # unanswered
        [user, assistant, user],                                            # no result
        [user, assistant, {"role": "user", "content": [{"type": "text", "text": "a"}, result]}],
        [user, {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
         {"role": "user", "content": [result]}],                            # orphan result
        [user, assistant, {"role": "user", "content": [result, result]}],   # answered twice
        [assistant],
    ]
    said = {"role": "assistant", "content": [{"type": "text", "text": "a"}]}
    nudge = {"role": "user", "content": [{"type": "text", "text": "go on"}]}
    again = [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    broken += [  # the rules a misbehaving model's turns would break if sent back unrepaired
        [user, {"role": "assistant", "content": [{"type": "text", "text": " "}, use]},
         {"role": "user", "content": [result]}],                            # blank text block
        [user, assistant, {"role": "user", "content": [dict(result, content=[
            {"type": "text", "text": ""}])]}],                              # ... nested too
        [user, {"role": "assistant", "content": []}, nudge],                # empty turn
        [user, {"role": "assistant", "content": [use, use]},
         {"role": "user", "content": [result, result]}],                    # same id twice
        [user, *again, said, nudge, *again],                                # id used again
        [user, {"role": "assistant", "content": [dict(use, id="toolu 1")]},
         {"role": "user", "content": [dict(result, tool_use_id="toolu 1")]}],
        [user, {"role": "assistant", "content": [dict(use, input=[])]},
         {"role": "user", "content": [result]}],                            # input not an object
        [user, {"role": "assistant", "content": [{"type": "banana"}]}, nudge],
        [user, {"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}]}, nudge],
        [user, {"role": "assistant", "content": [{"type": "text", "text": "a "}]}],  # final
    ]
    for messages in broken:
        assert conversation_problems(messages), messages
    assert conversation_problems([user, {"role": "assistant", "content": []}]) == []
    assert conversation_problems([user, said, nudge, *again]) == []


def test_fake_api_rejects_what_strict_tools_may_not_use():
    """The fake's strict-schema check is not vacuous, and the real tools pass it."""
    toolset = prompts.build_toolset([])
    for tool in toolset.api_tools:
        assert strict_schema_problems(tool["input_schema"]) == [], tool["name"]
    item = {"type": "object", "additionalProperties": False, "properties": {}}
    broken = [
        {"type": "object", "properties": {}},                                  # open object
        dict(item, properties={"x": {"type": "string", "minLength": 1}}),      # minLength
        dict(item, properties={"x": {"type": "array", "minItems": 2}}),        # minItems 2
        dict(item, properties={"x": {"type": "array", "items": {"type": "object"}}}),
        dict(item, properties={"x": {"anyOf": [{"type": "integer", "minimum": 0}]}}),
    ]
    for schema in broken:
        assert strict_schema_problems(schema), schema


def test_fake_api_rejects_a_tools_list_the_api_would_not_take():
    """Each of the API's rules for `tools` fires on its own, and the loop's real list passes."""
    base = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}
    schema = {"type": "object", "properties": {}}
    tool = {"name": "get_pods", "description": "d", "input_schema": schema}
    assert request_problems(dict(base, tools=prompts.build_toolset([]).api_tools)) == []
    assert request_problems(dict(base, tools=[tool])) == []
    server_tool = {"type": "web_search_20250305", "name": "web_search"}
    assert request_problems(dict(base, tools=[server_tool])) == []
    cases = {
        "tools: Input should be a valid list": {"name": "x"},
        "tools.0: Input should be a valid dictionary": ["get_pods"],
        "tools.0.custom.name: String should match pattern": [dict(tool, name="get.pods")],
        "tools.1.custom.name: String should match pattern": [tool, dict(tool, name="x" * 65)],
        "tools: Tool names must be unique.": [tool, dict(tool)],
        "tools.0.custom.input_schema.type: Input should be 'object'": [
            dict(tool, input_schema={"type": "string"})],
        "tools.1.custom.input_schema.type": [tool, {"name": "y", "description": "d"}],
        "tools.z.": [dict(tool, name="z", strict=True)],   # an open object under strict
    }
    for expected, tools in cases.items():
        problems = request_problems(dict(base, tools=tools))
        assert len(problems) == 1 and problems[0].startswith(expected), (tools, problems)
    assert request_problems(dict(base, tools=[dict(tool, name="x" * 64)])) == []


def test_fake_api_answers_a_body_that_is_not_json_with_a_400():
    """NaN is Python's JSON, not the API's: a request carrying one gets invalid_request_error."""
    with FakeMessagesApi([]) as api:
        request = urllib.request.Request(api.url + "/v1/messages", method="POST",
                                         data=b'{"model": "m", "max_tokens": NaN}')
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 400
    assert json.loads(caught.value.read())["error"]["type"] == "invalid_request_error"
