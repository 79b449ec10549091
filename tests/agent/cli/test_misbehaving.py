"""A misbehaving model through the real CLI, the real MCP server, kubectl and kube_sim: in
--replay and over HTTP against the fake API (which answers what the real API rejects with 400).
No traceback, the right exit code, and with --json exactly one outcome object on stdout."""

import copy
import json

from tests.support.fake_messages_api import FakeMessagesApi
from tests.agent.cli.test_cli import FATAL, replay_args, run_cli_here
from tests.agent.cli.test_live import crashloop_responses, live


def fixture_file(tmp_path, responses):
    path = tmp_path / "misbehaving.json"
    path.write_text(json.dumps({"description": "a misbehaving model", "responses": responses}))
    return path


def run_replay(sim, path, *extra):
    args = replay_args(sim, "crashloop", "--json", *extra)
    args[args.index("--replay") + 1] = str(path)
    out = run_cli_here(*args)
    assert "Traceback" not in out.stderr, out.stderr
    return out, json.loads(out.stdout)   # exactly one JSON object, or this raises


def test_usage_that_is_not_a_number_ends_as_api_error(shared_sim, tmp_path):
    responses = crashloop_responses()
    responses[0]["usage"]["input_tokens"] = "n/a"
    out, outcome = run_replay(shared_sim("crashloop"), fixture_file(tmp_path, responses))
    assert out.returncode == 4 and outcome["stop"] == "api_error"
    assert "usage.input_tokens is 'n/a', not a token count" in outcome["error"]
    assert outcome["tool_calls"] == 0 and "stop: api_error" in out.stderr


def test_a_report_field_of_the_wrong_type_is_refused_then_the_good_report_lands(shared_sim,
                                                                                tmp_path):
    responses = crashloop_responses(review=False)
    bad = copy.deepcopy(responses[-1])
    bad["content"][0]["id"] = "toolu_06bad"
    bad["content"][0]["input"]["evidence"] = 5
    responses.insert(-1, bad)
    out, outcome = run_replay(shared_sim("crashloop"), fixture_file(tmp_path, responses))
    assert out.returncode == 0 and outcome["stop"] == "report", out.stderr
    assert "write_report severity=high confidence=high evidence=5" in out.stderr
    assert "report_invalid" in out.stderr and FATAL in json.dumps(outcome["report"])


def test_the_wrong_type_report_alone_ends_without_a_report_not_a_crash(shared_sim, tmp_path):
    responses = crashloop_responses(review=False)
    responses[-1]["content"][0]["input"]["evidence"] = 5
    out, outcome = run_replay(shared_sim("crashloop"), fixture_file(tmp_path, responses),
                              "--max-steps", "5")
    assert out.returncode == 3 and outcome["report"] is None
    assert outcome["stop"] == "replay_exhausted"


def misbehaving_turns():
    """The crashloop run with the same id twice in a turn, an id reused across turns, blank
    text blocks and an empty end_turn the loop must not send back as they came."""
    r = crashloop_responses()
    r[0]["content"].insert(0, {"type": "text", "text": ""})
    twice = copy.deepcopy(r[2])
    twice["content"][1]["id"] = twice["content"][0]["id"] = "toolu_01pods"   # reused, twice
    twice["content"].append({"type": "text", "text": "  \n"})
    empty = {"type": "message", "role": "assistant", "model": "claude-opus-5-5",
             "content": [], "stop_reason": "end_turn", "usage": {"input_tokens": 10,
                                                                 "output_tokens": 1}}
    again = copy.deepcopy(r[3])   # the report cites the ids the model sent: pushed back once
    again["content"][0]["id"] = "toolu_08report"
    return [r[0], empty, r[1], twice, r[3], again, r[4]]   # r[4]: the review's answer


def test_misbehaving_turns_in_replay_are_repaired_and_the_report_lands(shared_sim, tmp_path):
    trace = tmp_path / "trace.jsonl"
    out, outcome = run_replay(shared_sim("crashloop"), fixture_file(tmp_path, misbehaving_turns()),
                              "--trace", str(trace))
    assert out.returncode == 0 and outcome["stop"] == "report", out.stderr
    assert outcome["tool_calls"] == 3 and outcome["steps"] == 6
    assert "report_ungrounded" in out.stderr and outcome["grounding_warnings"]
    assert out.stderr.count("repaired=id 'toolu_01pods' was already used") == 2
    spans = [json.loads(line) for line in trace.read_text().splitlines()]
    notes = [v["stringValue"] for s in spans if s["name"].startswith("chat ")
             for a in s["attributes"] if a["key"] == "triage_agent.repairs"
             for v in a["value"]["arrayValue"]["values"]]
    assert len(notes) == 5, notes   # 2 blank texts, 1 empty turn, 2 renamed ids


def test_misbehaving_turns_over_http_draw_no_400(shared_sim):
    with FakeMessagesApi(misbehaving_turns()) as api:
        out = live(api, shared_sim("crashloop"), "--json")
    assert "invalid_request_error" not in out.stderr and "Traceback" not in out.stderr
    outcome = json.loads(out.stdout)
    assert out.returncode == 0 and outcome["stop"] == "report", out.stderr
    assert len(api.requests) == 7 and api.script == []   # six steps, then the review
