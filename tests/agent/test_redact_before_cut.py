"""The loop's own cuts come after redaction: a one-line view (progress lines, audit lines, a
preflight failure, an MCP error's data, the loop's per-result cap) never shows a piece of a secret that the cut made
unrecognisable. Each case first shows that the bare cut would have leaked a 16-character piece.
(lines.first_line only cuts: its callers redact first, as the preflight case shows.)"""

import json

import pytest

from mcp_kubectl_server.redact import MASK
from tests.agent.test_context import CountingModel, investigation
from tests.agent.test_loop_fakes import FakeTools, ListRecorder, policy
from triage_agent import context
from triage_agent.loop import run_triage
from triage_agent.turns import Settings
from triage_agent import terminal
from triage_agent.lines import describe_call, first_line
from triage_agent.mcp.wire import RpcError
from triage_agent.preflight import PreflightError, run_preflight
from triage_agent.telemetry.records import _printable

TOKEN = "ghp_" + "Q7x2Lm9Vr4Tn8Cj1Wz6Kb3Hs5Pd0Fg2Ya7Ue"
PIECE = TOKEN[:16]


class ErrorServer:
    """A third-party server whose get_pods fails with a text carrying a secret."""

    def __init__(self, text):
        self.text = text

    def call(self, name, arguments):
        return self.text, True


def cut_here(limit):
    """A value whose secret starts so that a cut at `limit` keeps 16 to 35 of its characters."""
    return "x" * (limit - 30) + " " + TOKEN + " tail"


@pytest.mark.parametrize("limit, view", [
    (60, lambda v: describe_call("get_logs", {"name": v})),
    (80, lambda v: describe_call("get_logs", [v])),
    (60, lambda v: _printable(v, 60)),
])
def test_one_line_views_redact_before_they_cut(limit, view):
    value = cut_here(limit)
    assert PIECE in terminal.shorten(value, limit)   # the bare cut would show a piece
    assert PIECE not in view(value)


def test_a_preflight_failure_from_a_server_that_does_not_redact_shows_no_piece():
    text = cut_here(160) + " and more words after it"
    assert PIECE in first_line(text, 160)   # the audit's error field, cut bare
    audited = []
    with pytest.raises(PreflightError) as failure:
        run_preflight(ErrorServer(text), ["prod"], audit=lambda **fields: audited.append(fields))
    assert PIECE not in str(failure.value) and MASK in str(failure.value)
    assert audited and all(PIECE not in str(entry) for entry in audited)


def test_an_mcp_error_s_data_is_redacted_before_its_cut():
    data = {"detail": "y" * 262 + " " + TOKEN}
    assert PIECE in str(data)[:300]
    shown = str(RpcError(-32000, "server failed", data))
    assert PIECE not in shown and MASK in shown


class SecretAtTheCap(FakeTools):
    """A server that does not redact: its get_logs line has a token where the loop's cap cuts."""

    def __init__(self, limit):
        super().__init__()
        self.limit = limit

    def call(self, name, arguments):
        self.calls.append((name, arguments))
        return cut_here(self.limit) + " " + "z" * 400, False


def test_the_loop_s_result_cap_cuts_only_redacted_text():
    limit = 200
    assert PIECE in context.cap_result(cut_here(limit) + " " + "z" * 400, limit).text
    script = investigation(1)
    model, recorder = CountingModel(*script), ListRecorder()
    run_triage("checkout restarts", model=model, tools=SecretAtTheCap(limit), recorder=recorder,
               policy=policy(max_steps=3, max_tool_calls=2, max_result_bytes=limit),
               settings=Settings())
    bodies = json.dumps(model.requests) + json.dumps(recorder.audits + recorder.traces)
    assert "[result cut:" in bodies and MASK in bodies and PIECE not in bodies
