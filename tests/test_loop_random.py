"""Randomized misbehaving models (seeded): the loop never raises, ends within max_steps, never
sends a conversation the API would reject, and never executes an action without all three gates.
In streaming mode every scripted answer travels as server-sent events, cut at random byte
boundaries with pings between events, through the real client over real HTTP."""

import contextlib
import random

import pytest

from tests.fake_messages_api import FakeMessagesApi, error_body
from tests.test_loop_fakes import (FATAL, POD, FakeTools, ListRecorder, RecordingRunner,
                                   ScriptedModel, good_report, response, text, tool_use)
from triage_agent import actions
from triage_agent.loop import EXIT_CODES, run_triage
from triage_agent.messages import ApiError, MessagesClient
from triage_agent.policy import Policy

STOPS = {"report", "end_turn", "max_tokens", "refusal", "model_context_window_exceeded",
         "max_steps", "max_repeats", "max_cost", "replay_exhausted", "api_error", "mcp_error",
         "interrupted"}
STOP_REASONS = ["tool_use"] * 14 + ["end_turn", "max_tokens", "pause_turn", "refusal",
                                   "stop_sequence", "model_context_window_exceeded", None]
NAMES = ["get_pods", "get_logs", "describe_pod", "get_events", "propose_action",
         "write_report", "delete_namespace", "kubectl", "", "get_pods "]


def random_arguments(rng, name):
    choice = rng.random()
    if name == "propose_action":
        return {"kind": rng.choice(list(actions.ACTION_KINDS) + ["drain_node"]),
                "namespace": rng.choice(["prod"] * 4 + ["kube-system", "-A"]),
                "target": rng.choice(["checkout", "checkout", POD, "--all", "x" * 300]),
                "reason": rng.choice(["log says so"] * 4 + [""])}
    if name == "write_report":
        if choice < 0.3:
            return {"summary": "incomplete"}
        return good_report(tool_use_id=rng.choice(["toolu_0", "toolu_1", "toolu_nope"]),
                           quote=rng.choice([FATAL, "made up", "CrashLoopBackOff"]))
    if choice < 0.15:
        return rng.choice([None, [], "namespace=prod", 7])
    args = {"namespace": rng.choice(["prod", "prod", "kube-system", "*", ""]),
            "name": rng.choice([POD, "checkout", "../../etc"])}
    if choice < 0.3:
        args["all_namespaces"] = True
    if choice > 0.8:
        args["previous"] = rng.choice([True, "yes"])
    return args


def random_response(rng, ids):
    blocks = []
    if rng.random() < 0.3:
        blocks.append({"type": "thinking", "thinking": "...", "signature": "s"})
    if rng.random() < 0.4:
        blocks.append(text("hmm"))
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        name = rng.choice(NAMES + ["propose_action"] * 3)
        ids.append(f"toolu_{len(ids)}")
        # duplicates: sometimes repeat an earlier call's arguments exactly
        blocks.append(tool_use(ids[-1], name, random_arguments(rng, name)))
    return response(rng.choice(STOP_REASONS), *blocks)


def random_script(rng):
    ids, script = [], []
    for _ in range(rng.randint(0, 14)):
        roll = rng.random()
        if roll < 0.03:
            script.append(ApiError(529, "overloaded_error", "busy", request_id="req_r"))
        elif roll < 0.06:
            script.append({"content": [{"no": "type"}]})
        elif roll < 0.15 and script and not isinstance(script[-1], Exception):
            script.append(script[-1] | {"content": [dict(b, id=f"toolu_again{len(script)}_{i}")
                                                    if b.get("type") == "tool_use" else b
                                                    for i, b in enumerate(script[-1].get(
                                                        "content", []))]})
        else:
            script.append(random_response(rng, ids))
    return script


def check_gates(gate, proposals, runner):
    ran = [p for p in proposals if p["gates"]["executed"]]
    assert len(ran) == len(runner.argvs)
    for proposal in ran:
        assert proposal["kind"] in gate.allowed_kinds and proposal["gates"]["approved"] is True
        assert gate.execute and proposal["argv"] == runner.argvs[ran.index(proposal)]
    if not gate.execute or not gate.allowed_kinds:
        assert runner.argvs == []


class StreamedModel:
    """The scripted model's answers, streamed over HTTP by the fake API to the real client."""

    def __init__(self, scripted, api, rng):
        self.scripted, self.api, self.rng = scripted, api, rng
        self.client = MessagesClient(api_key="k", base_url=api.url, stream=True, max_retries=0)
        self.requests, self.problems = scripted.requests, scripted.problems

    def __call__(self, request):
        try:
            answer = self.scripted(request)     # checks the request; may raise like a model
            sse = {"split": [self.rng.randint(1, 40) for _ in range(5)], "pings": True}
            self.api.script.append({"status": 200, "body": answer, "sse": sse})
            self.answer = answer
        except ApiError as exc:                 # the same error, as an HTTP answer
            self.api.script.append({"status": exc.status, "body": error_body(
                exc.status, exc.error_type, exc.message, "x")})
        got = self.client(request)
        if got != self.answer:  # the loop would catch an AssertionError
            self.problems.append(f"streamed {got!r:.300} is not the answer")
        return got


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("streaming", [False, True])
def test_misbehaving_models(seed, streaming):
    rng = random.Random(seed)
    with FakeMessagesApi([]) if streaming else contextlib.nullcontext() as api:
        for _ in range(40 if streaming else 50):
            run_one(rng, api)


def run_one(rng, api):
    """One random run; `api` set: the answers are streamed over HTTP."""
    policy = Policy(namespaces=("prod",), max_steps=rng.randint(1, 8),
                    max_tool_calls=rng.randint(0, 5), max_repeats=rng.randint(1, 3),
                    max_cost_usd=rng.choice([None, None, 0.002]))
    runner = RecordingRunner()
    approve = rng.choice([lambda p: (True, ""), lambda p: (False, "no"), lambda p: 1 / 0])
    gate = actions.ActionGate(allowed_kinds=rng.sample(actions.ACTION_KINDS, rng.randint(0, 3)),
                              execute=rng.random() < 0.5, approve=approve, runner=runner,
                              namespaces=("prod",))
    model = ScriptedModel(*random_script(rng))
    model = StreamedModel(model, api, rng) if api else model
    tools = FakeTools(fail_after=rng.choice([None, None, None, 2]))
    outcome = run_triage("pods restart", model=model, tools=tools, policy=policy,
                         gate=gate, recorder=ListRecorder())
    assert model.problems == []
    assert outcome.stop in STOPS and outcome.exit_code in set(EXIT_CODES.values()) | {3}
    assert len(model.requests) <= policy.max_steps and outcome.steps <= policy.max_steps
    assert outcome.tool_calls <= policy.max_tool_calls
    assert (outcome.report is not None) == (outcome.stop == "report")
    check_gates(gate, outcome.proposals, runner)
