"""A run as one OpenTelemetry trace: span records in the OTLP/JSON shape, built as the run goes.

    trace (32 hex, random)
      invoke_agent triage-agent  INTERNAL  the whole run: stop, steps, tool calls, violations, cost
        chat {model}             CLIENT    one per model call
        execute_tool {tool}      INTERNAL  one per tool run (propose_action, write_report too)

A span record (OTLP/JSON, the protobuf JSON mapping with OTLP's deviations): {traceId (hex),
spanId (16 hex), parentSpanId, name, kind (1 INTERNAL, 3 CLIENT), startTimeUnixNano,
endTimeUnixNano (decimal strings), attributes [{key, value: {stringValue | intValue (decimal
string) | doubleValue | boolValue | arrayValue: {values}}}], events, status {code: 0 unset, 2
error; message}}. An attribute whose value is None or an empty list is left out.

Names follow the OpenTelemetry GenAI and MCP semantic conventions: gen_ai.operation.name,
gen_ai.agent.name, gen_ai.provider.name, gen_ai.request.*, gen_ai.response.*, gen_ai.usage.*
(input_tokens counts cached tokens too), gen_ai.tool.name / call.id / type, error.type, and on an
MCP tool's span mcp.method.name, mcp.protocol.version and network.transport. What is this
project's own is under triage_agent.*. Message content (gen_ai.input.messages,
gen_ai.output.messages, gen_ai.system_instructions, gen_ai.tool.definitions,
gen_ai.tool.call.arguments / result) is recorded only when the `Tracer` is made with
`capture_content` (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true), every text through
the secret redactor first; structured values go as JSON strings, which the conventions allow on
spans and which every backend can show (few index a map-valued attribute).

`model_call_span` and `tool_span` build a draft (name, kind, times, attributes, error, content);
`Tracer.record` gives it ids and encodes it; `Tracer.end(outcome)` closes the root span.
"""

import json
import math
import os
import time

from mcp_kubectl_server.redact import redact
from triage_agent import __version__

AGENT_NAME = "triage-agent"
SCOPE = {"name": "triage_agent", "version": __version__}
INTERNAL, CLIENT = 1, 3            # Span.SpanKind
UNSET, ERROR = 0, 2                # Status.StatusCode
OK_STOPS = ("report", "answer")    # any other stop ends the root span with status ERROR


def new_id(nbytes) -> str:
    """A random id of `nbytes` bytes as lowercase hex; never all zeros (OTLP's 'no id').
    os.urandom, which secrets.token_hex reads too (the secrets module costs a CLI start 7 ms)."""
    while True:
        value = os.urandom(nbytes).hex()
        if value.strip("0"):
            return value


def nanos(seconds) -> str:
    """Unix seconds (float) as the decimal string of Unix nanoseconds OTLP/JSON wants."""
    return str(round(float(seconds) * 1_000_000_000))


def any_value(value) -> dict:
    """One OTLP AnyValue: bool, int (as a decimal string), float, str, or a list of those."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float) and math.isfinite(value):   # JSON has no NaN or infinity
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [any_value(item) for item in value]}}
    return {"stringValue": str(value)}


def attributes(mapping) -> list:
    """OTLP key/value list; None and empty lists are left out (OpenTelemetry has no null)."""
    return [{"key": key, "value": any_value(value)} for key, value in mapping.items()
            if value is not None and value != [] and value != ()]


# --- drafts: what the loop knows about one call --------------------------------------------

def model_call_span(*, step, request, response, started, ended, error=None) -> dict:
    """The draft of a `chat {model}` span; `error` is the exception of a failed call."""
    request = request if isinstance(request, dict) else {}
    response = response if isinstance(response, dict) else {}
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
    stop = response.get("stop_reason")
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
             "gen_ai.request.model": _str(request.get("model")),
             "gen_ai.request.max_tokens": _int(request.get("max_tokens")),
             "gen_ai.response.id": _str(response.get("id")),
             "gen_ai.response.model": _str(response.get("model")),
             "gen_ai.response.finish_reasons": [stop] if isinstance(stop, str) else None,
             "triage_agent.step": step, **usage_attributes(usage)}
    failure = None
    if error is not None:
        failure = (getattr(error, "error_type", None) or type(error).__name__, str(error))
        attrs["http.response.status_code"] = _int(getattr(error, "status", None))
    content = {"gen_ai.system_instructions": _system(request.get("system")),
               "gen_ai.tool.definitions": _tool_names(request.get("tools")),
               "gen_ai.input.messages": input_messages(request.get("messages"))}
    if response:
        content["gen_ai.output.messages"] = [{"role": "assistant", "finish_reason": stop or "",
                                              "parts": _parts(response.get("content"))}]
    return {"name": f"chat {attrs['gen_ai.request.model'] or 'unknown'}", "kind": CLIENT,
            "start": started, "end": ended, "attributes": attrs, "error": failure,
            "content": content}


def tool_span(*, step, name, call_id, arguments, text, is_error, started, ended,
              via_mcp=True, decision=None) -> dict:
    """The draft of an `execute_tool {name}` span; `via_mcp` adds the MCP attributes."""
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": _str(name),
             "gen_ai.tool.call.id": _str(call_id), "gen_ai.tool.type": "function",
             "gen_ai.agent.name": AGENT_NAME, "triage_agent.step": step,
             "triage_agent.decision": _str(decision)}
    if via_mcp:
        attrs.update({"mcp.method.name": "tools/call", "network.transport": "pipe"})
    content = {"gen_ai.tool.call.arguments": arguments}
    if not is_error:  # the conventions record a result only for a call that succeeded
        content["gen_ai.tool.call.result"] = text if isinstance(text, str) else str(text)
    return {"name": f"execute_tool {name}", "kind": INTERNAL, "start": started, "end": ended,
            "attributes": attrs, "error": ("tool_error", "") if is_error else None,
            "content": content, "mcp": via_mcp}


def usage_attributes(usage) -> dict:
    """gen_ai.usage.* from a Messages API usage dict (input counts cached tokens too)."""
    counts = [_int(usage.get(key)) or 0 for key in (
        "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
        "output_tokens")]
    fresh, write, read, out = counts
    return {"gen_ai.usage.input_tokens": fresh + write + read,
            "gen_ai.usage.output_tokens": out,
            "gen_ai.usage.cache_read.input_tokens": read,
            "gen_ai.usage.cache_creation.input_tokens": write}


# --- the trace ---------------------------------------------------------------------------------

class Tracer:
    """One run's trace: its ids, the finished spans in OTLP/JSON, and the root span at the end."""

    def __init__(self, *, capture_content=False, clock=time.time):
        self.trace_id, self.root_id = new_id(16), new_id(8)
        self.capture_content, self._clock = capture_content, clock
        self.started = clock()
        self.spans, self.events = [], []
        self.mcp_attributes = {}    # e.g. mcp.protocol.version, once the server has answered
        self.provider = "anthropic"  # gen_ai.provider.name: aws.bedrock, gcp.vertex_ai too
        self.root = None

    def record(self, draft) -> "dict | None":
        """Encode a child span from a draft (kept for export and returned); a record that is not
        a draft becomes an event on the root span instead (returns None)."""
        if not (isinstance(draft, dict) and draft.get("kind") in (INTERNAL, CLIENT)):
            self.events.append(_event(draft, self._clock()))
            return None
        attrs = dict(draft.get("attributes") or {})
        if "gen_ai.provider.name" in attrs:
            attrs["gen_ai.provider.name"] = self.provider
        if draft.get("mcp"):
            attrs.update(self.mcp_attributes)
        if self.capture_content:
            attrs.update({key: _content_json(value)
                          for key, value in (draft.get("content") or {}).items()})
        span = self._span(new_id(8), self.root_id, draft.get("name"), draft["kind"],
                          draft.get("start"), draft.get("end"), attrs, draft.get("error"))
        self.spans.append(span)
        return span

    def end(self, outcome) -> dict:
        """Close the root span with what the run came to (an Outcome or anything shaped so)."""
        if self.root is None:
            attrs, failure = root_attributes(outcome)
            attrs["gen_ai.provider.name"] = self.provider
            self.root = self._span(self.root_id, None, f"invoke_agent {AGENT_NAME}", INTERNAL,
                                   self.started, self._clock(), attrs, failure)
            if self.events:
                self.root["events"] = self.events
        return self.root

    def _span(self, span_id, parent, name, kind, start, end, attrs, failure):
        start = start if isinstance(start, (int, float)) else self.started
        end = end if isinstance(end, (int, float)) and end >= start else start
        if failure:
            attrs["error.type"] = failure[0]
        span = {"traceId": self.trace_id, "spanId": span_id, "name": str(name), "kind": kind,
                "startTimeUnixNano": nanos(start), "endTimeUnixNano": nanos(end),
                "attributes": attributes(attrs),
                "status": {"code": ERROR if failure else UNSET}}
        if failure and failure[1]:
            span["status"]["message"] = failure[1]
        if parent:
            span["parentSpanId"] = parent
        return span


def root_attributes(outcome) -> tuple:
    """(attributes, failure) of the root span from an Outcome."""
    usage = getattr(outcome, "usage", None) or {}
    violations = getattr(outcome, "violations", None) or []
    report = getattr(outcome, "report", None)
    report = report if isinstance(report, dict) else {}
    cost = getattr(outcome, "cost_usd", None)
    stop = getattr(outcome, "stop", "") or "unknown"
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT_NAME,
             "gen_ai.agent.version": __version__, "gen_ai.provider.name": "anthropic",
             "gen_ai.request.model": _str(getattr(outcome, "model", None)) or None,
             **usage_attributes({"input_tokens": usage.get("input"),
                                 "cache_creation_input_tokens": usage.get("cache_write"),
                                 "cache_read_input_tokens": usage.get("cache_read"),
                                 "output_tokens": usage.get("output")}),
             "triage_agent.stop": stop,
             "triage_agent.steps": _int(getattr(outcome, "steps", None)),
             "triage_agent.tool_calls": _int(getattr(outcome, "tool_calls", None)),
             "triage_agent.violations": len(violations),
             "triage_agent.violation.decisions": [str(v.get("decision")) for v in violations
                                                  if isinstance(v, dict)],
             "triage_agent.proposals": len(getattr(outcome, "proposals", None) or []),
             "triage_agent.cost_usd": round(cost, 6) if isinstance(cost, float) else None,
             "triage_agent.report.severity": _str(report.get("severity")),
             "triage_agent.report.confidence": _str(report.get("confidence")),
             "triage_agent.followup": _int(getattr(outcome, "followup", None))}
    failure = None if stop in OK_STOPS else (stop, str(getattr(outcome, "error", None) or stop))
    return attrs, failure


def _event(record, when) -> dict:
    record = record if isinstance(record, dict) else {"record": record}
    name = record.get("event") or record.get("name") or "triage_agent.note"
    values = {f"triage_agent.{key}": value if isinstance(value, (str, int, float, bool))
              else _json(value) for key, value in record.items() if key not in ("event", "name")}
    return {"timeUnixNano": nanos(when), "name": str(name), "attributes": attributes(values)}


# --- message content, only with capture_content ------------------------------------------------

def input_messages(messages) -> list:
    """Messages API turns as GenAI chat messages; tool results become `tool` role messages."""
    out = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        parts = _parts(message.get("content"))
        answers = [p for p in parts if p["type"] == "tool_call_response"]
        others = [p for p in parts if p["type"] != "tool_call_response"]
        if answers:
            out.append({"role": "tool", "parts": answers})
        if others or not answers:
            out.append({"role": _str(message.get("role")) or "user", "parts": others})
    return out


def _parts(content) -> list:
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts = []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append({"type": "text", "content": _str(block.get("text"))})
        elif kind == "thinking":
            parts.append({"type": "reasoning", "content": _str(block.get("thinking"))})
        elif kind == "tool_use":
            parts.append({"type": "tool_call", "id": block.get("id"), "name": block.get("name"),
                          "arguments": block.get("input")})
        elif kind == "tool_result":
            parts.append({"type": "tool_call_response", "id": block.get("tool_use_id"),
                          "response": _text_of(block.get("content"))})
        elif isinstance(kind, str):
            parts.append({"type": kind})  # e.g. redacted_thinking: its kind, not its data
    return parts


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(_str(b.get("text")) for b in content or () if isinstance(b, dict)
                     and b.get("type") == "text")


def _system(system) -> list:
    if isinstance(system, str):
        return [{"type": "text", "content": system}]
    return [{"type": "text", "content": _str(b.get("text"))} for b in system or ()
            if isinstance(b, dict) and b.get("type") == "text"]


def _tool_names(tools) -> list:
    # name and type only: the conventions advise against the (large) optional properties
    return [{"type": "function", "name": t.get("name")} for t in tools or ()
            if isinstance(t, dict)]


def _content_json(value) -> str:
    """Content as an attribute: a text as it is, anything else as JSON; redacted either way."""
    return redact(value) if isinstance(value, str) else _json(_redacted(value))


def _json(value) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):  # a cycle: keep what can be said of it
        return redact(repr(value))[:2000]


def _redacted(value):
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    return value


def _str(value):
    return value if isinstance(value, str) else None


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None
