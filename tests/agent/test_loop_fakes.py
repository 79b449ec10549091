"""Fakes for the loop tests (no tests here): a scripted model that checks every request against
the API's rules, a tools object shaped like the MCP client, a list-backed recorder, and a report
builder. The scripted model ends with the same RunEnded('replay_exhausted') as --replay.
"""

import copy
import json

from tests.support.fake_messages_api import request_problems, response, text, tool_use
from triage_agent import actions
from triage_agent.seams import RunEnded
from triage_agent.mcp.client import McpError
from triage_agent.policy import Policy

NS = ("prod",)
POD = "checkout-6f8d9c7b5d-x7k2p"
FATAL = "FATAL: required environment variable PAYMENT_API_URL is not set"


def _schema(required, **props):
    return {"type": "object", "additionalProperties": False, "required": list(required),
            "properties": {k: {"type": v} for k, v in props.items()}}


SERVER_TOOLS = [
    {"name": "get_pods", "description": "list pods", "annotations": {"readOnlyHint": True},
     "inputSchema": _schema(["namespace"], namespace="string", selector="string")},
    {"name": "describe_pod", "description": "describe", "annotations": {"readOnlyHint": True},
     "inputSchema": _schema(["namespace", "name"], namespace="string", name="string")},
    {"name": "get_events", "description": "events", "annotations": {"readOnlyHint": True},
     "inputSchema": _schema(["namespace"], namespace="string", name="string")},
    {"name": "get_logs", "description": "logs", "annotations": {"readOnlyHint": True},
     "inputSchema": _schema(["namespace", "name"], namespace="string", name="string",
                            container="string", previous="boolean", tail="integer")},
]


class ScriptedModel:
    """Returns scripted responses; fails the test if a request breaks the API's rules."""

    def __init__(self, *responses):
        self.responses = list(responses)
        self.requests = []
        self.problems = []   # the loop catches what a model raises, so tests check this list

    def __call__(self, request):
        try:  # a copy as the wire carries it; the real API's JSON parser takes no NaN
            wire = json.dumps(request, allow_nan=False)
            body = json.loads(wire)
            problems = request_problems(body, wire)
        except ValueError as exc:
            body, problems = copy.deepcopy(request), [f"the request is not JSON: {exc}"]
        self.requests.append(body)
        if problems:
            self.problems += problems
            raise AssertionError(problems)
        if not self.responses:
            raise RunEnded("replay_exhausted", "script exhausted")
        item = self.responses.pop(0)
        if isinstance(item, BaseException):
            raise item
        return copy.deepcopy(item)


_SERVER_TOOLS_JSON = json.dumps(SERVER_TOOLS)


class FakeTools:
    """MCP-client-shaped tools: list() and call(); results say what was asked."""

    def __init__(self, tools=None, *, fail_after=None, raise_on=None):
        # the default list is JSON: a copy through its text costs a tenth of a deep copy (the
        # randomized loop tests make 2,300 of these)
        self.tools = copy.deepcopy(tools) if tools is not None else json.loads(_SERVER_TOOLS_JSON)
        self.calls = []
        self.fail_after, self.raise_on = fail_after, raise_on

    def list(self):
        return copy.deepcopy(self.tools)

    def call(self, name, arguments):
        self.calls.append((name, arguments))
        if self.fail_after is not None and len(self.calls) > self.fail_after:
            raise McpError("server exited with status 1; restart failed")
        if self.raise_on == name:
            raise ValueError("boom")
        if name == "get_pods":
            return f"NAME READY STATUS RESTARTS\n{POD} 0/1 CrashLoopBackOff 47", False
        if name == "get_logs":
            return f"starting checkout\n{FATAL}", False
        return f"{name} {json.dumps(arguments, sort_keys=True)}", False


class ListRecorder:
    """Recorder seam keeping entries in lists."""

    def __init__(self):
        self.audits, self.traces = [], []

    def audit(self, **fields):
        self.audits.append(fields)

    def trace(self, span):
        self.traces.append(span)

    def close(self):
        pass


def good_report(tool_use_id="toolu_logs", quote=FATAL, **overrides):
    """A valid report citing one quote."""
    body = {"summary": "checkout crashes: PAYMENT_API_URL is missing", "severity": "high",
            "affected": [{"kind": "Pod", "namespace": "prod", "name": POD}],
            "evidence": [{"tool_use_id": tool_use_id, "quote": quote,
                          "interpretation": "the app exits at start-up"}],
            "hypothesis": "a config change dropped PAYMENT_API_URL", "confidence": "high",
            "proposed_actions": [], "next_checks": ["check the deployment's env"]}
    body.update(overrides)
    return body


def logs_call(tid="toolu_logs", **extra):
    return tool_use(tid, "get_logs", dict({"namespace": "prod", "name": POD,
                                           "previous": True}, **extra))


def report_call(tid="toolu_report", **kwargs):
    return tool_use(tid, "write_report", good_report(**kwargs))


def happy_script():
    """pods -> logs -> report."""
    return [response("tool_use", text("Looking at pods."),
                     tool_use("toolu_pods", "get_pods", {"namespace": "prod"})),
            response("tool_use", logs_call()),
            response("tool_use", report_call())]


SUPPORTED_REVIEW = {"verdict": "supported", "claims": [
    {"claim": "checkout crashes because PAYMENT_API_URL is missing", "status": "supported",
     "quote": FATAL, "note": "the log says so"}], "alternatives": [], "actions_follow": True}
REVIEW_USAGE = {"input_tokens": 1200, "output_tokens": 300, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0}


def review_response(review_input=None, tid="toolu_review"):
    """The answer of the review (verify/review.py): one review_report call."""
    return response("tool_use", text("Reviewing."),
                    tool_use(tid, "review_report", review_input or SUPPORTED_REVIEW),
                    usage=REVIEW_USAGE)


class RecordingRunner:
    """Runner seam that records argv instead of running anything."""

    def __init__(self):
        self.argvs = []

    def __call__(self, argv):
        self.argvs.append(argv)
        return 0, "ok", ""


def make_gate(*, allowed=(), execute=False, approve=None, runner=None):
    return actions.ActionGate(allowed_kinds=allowed, execute=execute,
                              approve=approve or (lambda p: (False, "no")),
                              runner=runner or RecordingRunner(), namespaces=NS)


def policy(**kw):
    return Policy(namespaces=NS, **kw)


__all__ = ["response", "text", "tool_use"]
