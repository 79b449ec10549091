"""Randomized misbehaving models (seeded): the loop never raises, ends within max_steps, never
sends a conversation the API would reject, and never executes an action without all three gates.

2,000 scripts run in-process against ScriptedModel (every request checked against the fake
API's rules); a subset runs over real HTTP through MessagesClient and FakeMessagesApi, which
answers a rule-breaking request with the real API's 400. Any field of a response may hold a
value of the wrong type: usage counts, block fields, tool_use ids and inputs, report fields.
In streaming mode every scripted answer that server-sent events can carry travels as them, cut
at random byte boundaries with pings between events, through the real client over real HTTP."""

import json
import math
import random

import pytest

from tests.support.fake_messages_api import FakeMessagesApi, error_body
from tests.agent.test_loop_fakes import (FATAL, POD, FakeTools, ListRecorder, RecordingRunner,
                                   ScriptedModel, good_report, response, text, tool_use)
from triage_agent import actions, prompts
from triage_agent.loop import run_triage
from triage_agent.outcome import EXIT_CODES
from triage_agent.seams import RunEnded
from triage_agent.model.messages import ApiError, MessagesClient
from triage_agent.policy import Policy

SEEDS, SCRIPTS_PER_SEED = 20, 100   # 2,000 scripts
STOPS = {"report", "end_turn", "max_tokens", "refusal", "model_context_window_exceeded",
         "max_steps", "max_repeats", "max_cost", "replay_exhausted", "api_error", "mcp_error",
         "interrupted"}
STOP_REASONS = ["tool_use"] * 14 + ["end_turn", "max_tokens", "pause_turn", "refusal",
                                   "stop_sequence", "model_context_window_exceeded", None]
NAMES = ["get_pods", "get_logs", "describe_pod", "get_events", "propose_action",
         "write_report", "delete_namespace", "kubectl", "", "get_pods "]
# a value of every JSON type (and NaN, which Python's json reads and writes) in odd shapes
WRONG = [None, True, False, 0, -1, 7, 1.5, math.nan, math.inf, "", " ", "n/a", "\x1b[2J",
         "x" * 300, [], [1], ["a"], {}, {"a": 1}, {"type": "text"}]
REPORT_FIELDS = list(good_report())


def wrong(rng):
    return rng.choice(WRONG)


def maybe_wrong(rng, value, p=0.08):
    return wrong(rng) if rng.random() < p else value


def random_report(rng):
    report = good_report(tool_use_id=rng.choice(["toolu_0", "toolu_1", "toolu_nope"]),
                         quote=rng.choice([FATAL, "made up", "CrashLoopBackOff"]))
    roll = rng.random()
    if roll < 0.2:
        return {"summary": "incomplete"}
    if roll < 0.6:      # one or two fields of the wrong type, top level or nested
        for _ in range(rng.randint(1, 2)):
            report[rng.choice(REPORT_FIELDS)] = wrong(rng)
        if rng.random() < 0.3 and isinstance(report.get("evidence"), list):
            report["evidence"] = [wrong(rng), {"tool_use_id": wrong(rng), "quote": wrong(rng),
                                               "interpretation": wrong(rng)}]
    return report


def random_arguments(rng, name):
    choice = rng.random()
    if name == "propose_action":
        return {"kind": rng.choice(list(actions.ACTION_KINDS) + ["drain_node", wrong(rng)]),
                "namespace": rng.choice(["prod"] * 4 + ["kube-system", "-A", wrong(rng)]),
                "target": rng.choice(["checkout", "checkout", POD, "--all", wrong(rng)]),
                "reason": rng.choice(["log says so"] * 4 + ["", wrong(rng)])}
    if name == "write_report":
        return random_report(rng) if choice > 0.05 else wrong(rng)
    if choice < 0.15:
        return wrong(rng)
    args = {"namespace": rng.choice(["prod", "prod", "kube-system", "*", "", wrong(rng)]),
            "name": rng.choice([POD, "checkout", "../../etc", wrong(rng)])}
    if choice < 0.3:
        args["all_namespaces"] = maybe_wrong(rng, True, 0.3)
    if choice > 0.8:
        args["previous"] = rng.choice([True, "yes", wrong(rng)])
    return args


def random_id(rng, ids, block_ids):
    roll = rng.random()
    if roll < 0.1 and ids:
        return rng.choice(ids)                 # reused from an earlier turn
    if roll < 0.2 and block_ids:
        return block_ids[-1]                   # twice in this response
    if roll < 0.25:
        return rng.choice(["", "toolu 1", "toolu/1", "tööl"])   # not of the API's form
    if roll < 0.26:
        return wrong(rng)                      # not a string: the response is unusable
    ids.append(f"toolu_{len(ids)}")
    return ids[-1]


def random_block(rng, ids, block_ids):
    roll = rng.random()
    if roll < 0.15:
        return {"type": "thinking", "thinking": maybe_wrong(rng, "...", 0.03),
                "signature": maybe_wrong(rng, "s", 0.03)}
    if roll < 0.4:
        return text(rng.choice(["hmm", "", " \n", "trailing  ", maybe_wrong(rng, "ok", 0.1)]))
    if roll < 0.43:
        return rng.choice([{"type": "banana"}, {"type": "server_tool_use"}, {"no": "type"},
                           wrong(rng),
                           {"type": "redacted_thinking", "data": maybe_wrong(rng, "d")}])
    name = maybe_wrong(rng, rng.choice(NAMES + ["propose_action"] * 3), 0.01)
    block_ids.append(random_id(rng, ids, block_ids))
    return tool_use(block_ids[-1], name, random_arguments(rng, name))


def random_usage(rng):
    usage = {"input_tokens": rng.randint(0, 3000), "output_tokens": rng.randint(0, 300),
             "cache_read_input_tokens": rng.choice([0, None, 500]),
             "cache_creation_input_tokens": rng.choice([0, None])}
    roll = rng.random()
    if roll < 0.05:
        usage[rng.choice(list(usage))] = wrong(rng)
    elif roll < 0.07:
        usage = wrong(rng)
    elif roll < 0.09:
        usage["iterations"] = rng.choice([wrong(rng), [wrong(rng)],
                                          [{"model": "claude-opus-5-5", "input_tokens": 1}]])
    return usage


def random_response(rng, ids):
    block_ids = []
    blocks = [random_block(rng, ids, block_ids) for _ in range(rng.choice([0, 1, 1, 2, 3, 4]))]
    body = response(rng.choice(STOP_REASONS), *blocks)
    body["usage"] = random_usage(rng)
    for field in ("stop_reason", "model", "id", "content"):
        body[field] = maybe_wrong(rng, body[field], 0.01)
    return body


def random_script(rng, *, errors=True):
    ids, script = [], []
    for _ in range(rng.randint(0, 14)):
        roll = rng.random()
        if roll < 0.03 and errors:
            script.append(ApiError(529, "overloaded_error", "busy", request_id="req_r"))
        elif roll < 0.05:
            script.append(wrong(rng))                                 # not even an object
        elif roll < 0.15 and script and isinstance(script[-1], dict):
            script.append(json.loads(json.dumps(script[-1])))        # the same turn again
        else:
            script.append(random_response(rng, ids))
    return script


def random_setup(rng):
    policy = Policy(namespaces=("prod",), max_steps=rng.randint(1, 8),
                    max_tool_calls=rng.randint(0, 5), max_repeats=rng.randint(1, 3),
                    max_cost_usd=rng.choice([None, None, 0.002]))
    runner = RecordingRunner()
    approve = rng.choice([lambda p: (True, ""), lambda p: (False, "no"), lambda p: 1 / 0])
    gate = actions.ActionGate(allowed_kinds=rng.sample(actions.ACTION_KINDS, rng.randint(0, 3)),
                              execute=rng.random() < 0.5, approve=approve, runner=runner,
                              namespaces=("prod",))
    tools = FakeTools(fail_after=rng.choice([None, None, None, 2]))
    return policy, runner, gate, tools


def check_gates(gate, proposals, runner):
    ran = [p for p in proposals if p["gates"]["executed"]]
    assert len(ran) == len(runner.argvs)
    for proposal in ran:
        assert proposal["kind"] in gate.allowed_kinds and proposal["gates"]["approved"] is True
        assert gate.execute and proposal["argv"] == runner.argvs[ran.index(proposal)]
    if not gate.execute or not gate.allowed_kinds:
        assert runner.argvs == []


def check_outcome(outcome, policy, calls):
    assert outcome.stop in STOPS and outcome.exit_code in set(EXIT_CODES.values()) | {3}
    assert calls <= policy.max_steps and outcome.steps <= policy.max_steps
    assert outcome.tool_calls <= policy.max_tool_calls
    assert (outcome.report is not None) == (outcome.stop == "report")
    if outcome.stop == "api_error":
        assert isinstance(outcome.error, str) and outcome.error
    # the --json object: strict JSON (no NaN), whatever the model sent
    json.loads(json.dumps(outcome.to_dict(), default=str), parse_constant=_no_constants)


def _no_constants(name):
    raise AssertionError(f"{name} in the outcome")


TOOLSET = prompts.build_toolset(FakeTools().list())


@pytest.mark.parametrize("seed", range(SEEDS))
def test_misbehaving_models(seed):
    rng = random.Random(seed)
    for _ in range(SCRIPTS_PER_SEED):
        policy, runner, gate, tools = random_setup(rng)
        model = ScriptedModel(*random_script(rng))
        outcome = run_triage("pods restart", model=model, tools=tools, policy=policy,
                             gate=gate, recorder=ListRecorder(), toolset=TOOLSET)
        assert model.problems == []
        check_outcome(outcome, policy, len(model.requests))
        check_gates(gate, outcome.proposals, runner)


def streamable(answer):
    """What the event stream can carry exactly: an object with a content list of blocks with a
    string type and string text, thinking and signature, and a usage with an output count (the
    stream's last word on usage); the wrong-typed rest is not streamed."""
    if not isinstance(answer, dict) or not isinstance(answer.get("content"), list):
        return False
    if not (isinstance(answer.get("usage"), dict) and "output_tokens" in answer["usage"]):
        return False
    carried = {"text": ("text",), "thinking": ("thinking", "signature")}
    return all(isinstance(b, dict) and isinstance(b.get("type"), str)
               and all(isinstance(b.get(f), str) for f in carried.get(b["type"], ()))
               for b in answer["content"])


class StreamedModel:
    """The scripted model's answers, streamed over HTTP by the fake API to the real client."""

    def __init__(self, scripted, api, rng):
        self.scripted, self.api, self.rng = scripted, api, rng
        self.client = MessagesClient(api_key="k", base_url=api.url, stream=True, max_retries=0)
        self.requests, self.problems = scripted.requests, scripted.problems

    def __call__(self, request):
        try:
            answer = self.scripted(request)     # checks the request; may raise like a model
        except ApiError as exc:                 # the same error, as an HTTP answer
            self.api.script.append({"status": exc.status, "body": error_body(
                exc.status, exc.error_type, exc.message, "x")})
            return self.client(request)
        if not streamable(answer):
            return answer
        sse = {"split": [self.rng.randint(1, 40) for _ in range(5)], "pings": True}
        self.api.script.append({"status": 200, "body": answer, "sse": sse})
        got = self.client(request)
        if json.dumps(got, sort_keys=True) != json.dumps(answer, sort_keys=True):
            self.problems.append(f"streamed {got!r:.300} is not the answer")  # (NaN != NaN)
        return got


@pytest.mark.parametrize("seed", range(6))
def test_misbehaving_models_streamed(seed):
    rng = random.Random(1000 + seed)
    with FakeMessagesApi([]) as api:
        for _ in range(40):
            policy, runner, gate, tools = random_setup(rng)
            model = StreamedModel(ScriptedModel(*random_script(rng)), api, rng)
            outcome = run_triage("pods restart", model=model, tools=tools, policy=policy,
                                 gate=gate, recorder=ListRecorder(), toolset=TOOLSET)
            assert model.problems == []
            check_outcome(outcome, policy, len(model.requests))
            check_gates(gate, outcome.proposals, runner)


class Exhausting:
    """The HTTP client, ending the run like --replay once the fake's script is used up."""

    def __init__(self, client, api):
        self.client, self.api = client, api

    def __call__(self, request):
        if not self.api.script:
            raise RunEnded("replay_exhausted", "script exhausted")
        return self.client(request)


def test_misbehaving_models_over_http_get_no_400():
    """A subset over the wire: the fake answers any rule-breaking request with a 400, which
    would end the run as api_error with the fake's own words."""
    rng = random.Random(2026)
    with FakeMessagesApi([]) as api:
        client = MessagesClient(api_key="k", base_url=api.url, max_retries=0,
                                sleep=lambda s: None)
        for _ in range(60):
            policy, runner, gate, tools = random_setup(rng)
            script = [s for s in random_script(rng, errors=False) if isinstance(s, dict)]
            with api.lock:  # one server for every script: a shutdown costs a poll interval
                api.script, api.requests = json.loads(json.dumps(script)), []
            outcome = run_triage("pods restart", model=Exhausting(client, api), tools=tools,
                                 policy=policy, gate=gate, recorder=ListRecorder(),
                                 toolset=TOOLSET)
            assert "invalid_request_error" not in (outcome.error or ""), outcome.error
            check_outcome(outcome, policy, len(api.requests))
            check_gates(gate, outcome.proposals, runner)
