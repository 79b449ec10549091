"""The session file: a finished run's conversation and policy, so that it can be asked again.

    {"format": "triage-agent session", "version": 1, "created_at", "updated_at",
     "symptom", "alert",
     "policy":  {namespaces, allow_action, max_repeats, max_result_bytes,
                 context_budget_tokens, server: {mcp, context, kubeconfig, prometheus_*,
                 read_tls_certificates, allow_unscoped_tool, mcp_timeout}},
     "model":   {model, base_url, api_profile, effort, max_tokens, fallbacks},
     "conversation": {messages: as the model last saw them, and the results that closed its
                      last turn; results: tool_use_id -> text (cleared ones too, so quotes
                      verify); calls: tool_use_id -> [tool, arguments]; cache_breakpoint:
                      the message index of the last request's conversation breakpoint},
     "context": the Keeper's figures (clearings, cut results, ...),
     "report", "verification", "history": [{followup, report, replaced_at}],
     "runs": [{followup (0: the run), stop, steps, tool_calls, cost_usd, usage, trace_id,
               question?, answer?, report_changed?, at}]}

Never in it: an unredacted text or a credential. Every text the model or the operator wrote
and every tool result passes through redaction again when the file is written (thinking blocks
go back to the API unchanged, so they are kept as they came: the model only ever saw redacted
input); URLs lose their user information; no environment, no API key, no token, only the
paths of files that hold one. Written atomically (a temp file in the same directory, then a
rename) with mode 0600.
"""

import copy
import json
import os
import tempfile
import urllib.parse
from datetime import datetime, timezone

from mcp_kubectl_server.redact import redact

FORMAT, VERSION = "triage-agent session", 1
SERVER_FIELDS = ("mcp", "context", "kubeconfig", "prometheus_url", "prometheus_token_file",
                 "prometheus_ca", "prometheus_service", "read_tls_certificates",
                 "allow_unscoped_tool", "mcp_timeout")
MODEL_FIELDS = ("model", "base_url", "api_profile", "effort", "max_tokens", "fallbacks")
TEXT_BLOCKS = ("text",)   # redacted on write; thinking and redacted_thinking stay as they are


class SessionError(Exception):
    """A session file that cannot be read or used, with the reason."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def without_userinfo(url):
    """`url` without user:password@ (None stays None)."""
    if not url:
        return url
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def new_session(args, *, policy, model_name, outcome, transcript):
    """The session of a run that just ended (`args`: its parsed options)."""
    server = {name: getattr(args, name, None) for name in SERVER_FIELDS}
    server["prometheus_url"] = without_userinfo(server["prometheus_url"])
    settings = {name: getattr(args, name, None) for name in MODEL_FIELDS}
    settings.update(model=model_name, base_url=without_userinfo(args.base_url),
                    fallbacks=not args.no_fallbacks)
    doc = {"format": FORMAT, "version": VERSION, "created_at": now_iso(),
           "symptom": args.symptom, "alert": getattr(args, "alert_identity", None),
           "policy": {"namespaces": list(policy.namespaces),
                      "allow_action": list(args.allow_action),
                      "max_repeats": policy.max_repeats,
                      "max_result_bytes": policy.max_result_bytes,
                      "context_budget_tokens": policy.context_budget_tokens, "server": server},
           "model": settings, "report": outcome.report,
           "verification": getattr(outcome, "verification", None), "history": [], "runs": []}
    record_turn(doc, outcome, transcript, number=0)
    return doc


def record_turn(doc, outcome, transcript, *, number, question=None):
    """Put a run's (number 0) or a follow-up's conversation and figures into the session."""
    conversation = {"messages": transcript.get("messages") or [],
                    "results": transcript.get("results") or {},
                    "calls": {k: list(v) for k, v in (transcript.get("calls") or {}).items()}}
    conversation["cache_breakpoint"] = breakpoint_of(conversation["messages"])
    doc["conversation"] = conversation
    doc["context"] = outcome.context
    entry = {"followup": number, "stop": outcome.stop, "error": outcome.error,
             "steps": outcome.steps, "tool_calls": outcome.tool_calls,
             "cost_usd": outcome.cost_usd, "usage": outcome.usage,
             "trace_id": outcome.trace_id, "at": now_iso()}
    if question is not None:
        answer = outcome.answer or {}
        entry.update(question=question, answer=answer.get("answer"),
                     evidence=answer.get("evidence") or [],
                     report_changed=bool(answer.get("report_changed")),
                     grounding_warnings=list(outcome.grounding_warnings))
    doc["runs"].append(entry)
    verification = getattr(outcome, "verification", None)
    if verification is not None:
        doc["verification"] = verification
    return doc


def replace_report(doc, report, *, followup):
    """A follow-up revised the report: the old one goes to the history."""
    doc["history"].append({"followup": followup, "report": doc.get("report"),
                           "replaced_at": now_iso()})
    doc["report"] = report


def breakpoint_of(messages):
    """Index of the user turn that carried the last request's conversation breakpoint: the
    newest user turn before the newest assistant turn (None when there is none)."""
    last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"),
                         default=None)
    if last_assistant is None:
        return None
    return max((i for i in range(last_assistant) if messages[i].get("role") == "user"),
               default=None)


def redacted(doc):
    """A copy of the session with every text redaction can reach redacted again."""
    doc = copy.deepcopy(doc)
    for key in ("symptom",):
        if isinstance(doc.get(key), str):
            doc[key] = redact(doc[key])
    server = doc["policy"]["server"]
    if isinstance(server.get("mcp"), str):
        server["mcp"] = redact(server["mcp"])
    conversation = doc["conversation"]
    for message in conversation["messages"]:
        for block in message.get("content") or ():
            _redact_block(block)
    conversation["results"] = {k: redact(v) for k, v in conversation["results"].items()}
    conversation["calls"] = {k: _redact_value(v) for k, v in conversation["calls"].items()}
    doc["runs"] = [_redact_value(run) for run in doc["runs"]]
    for key in ("report", "verification", "alert"):
        doc[key] = _redact_value(doc.get(key))
    doc["history"] = _redact_value(doc["history"])
    return doc


def _redact_block(block):
    if block.get("type") in TEXT_BLOCKS and isinstance(block.get("text"), str):
        redone = redact(block["text"])
        block["text"] = redone if redone.strip() else "[REDACTED]"
    elif block.get("type") == "tool_use":
        block["input"] = _redact_value(block.get("input"))
    elif block.get("type") == "tool_result":
        for inner in block.get("content") or ():
            if isinstance(inner, dict):
                _redact_block(inner)


def _redact_value(value):
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    return value


def write_session(path, doc):
    """Write the session, redacted, atomically, mode 0600; OSError when it cannot be."""
    doc = redacted(dict(doc, updated_at=now_iso()))
    data = json.dumps(doc, indent=1, allow_nan=False, default=str).encode("utf-8") + b"\n"
    path = os.path.abspath(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=os.path.dirname(path))
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return doc


def load_session(path):
    """Read and check a session file; SessionError says what is wrong."""
    try:
        with open(path, encoding="utf-8") as handle:
            doc = json.load(handle)
    except OSError as exc:
        raise SessionError(f"cannot read session {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise SessionError(f"session {path} is not valid JSON: {exc}") from None
    problem = session_problem(doc)
    if problem:
        raise SessionError(f"session {path}: {problem}")
    return doc


def session_problem(doc):
    """What makes `doc` unusable as a session, or None."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return "not a triage-agent session file"
    if doc.get("version") != VERSION:
        return f"version {doc.get('version')!r} is not {VERSION}"
    policy, conversation = doc.get("policy"), doc.get("conversation")
    if not isinstance(policy, dict) or not isinstance(policy.get("server"), dict):
        return "no policy"
    namespaces = policy.get("namespaces")
    if not isinstance(namespaces, list) or not namespaces or not all(
            isinstance(n, str) and n for n in namespaces):
        return "no namespaces in its policy"
    if not isinstance(policy.get("allow_action"), list):
        return "no allow_action list in its policy"
    if not isinstance(conversation, dict) or not isinstance(conversation.get("messages"), list):
        return "no conversation"
    messages = conversation["messages"]
    if not messages or not all(isinstance(m, dict) and m.get("role") in ("user", "assistant")
                               and isinstance(m.get("content"), list) for m in messages):
        return "its conversation is not a list of user and assistant turns"
    if not isinstance(conversation.get("results"), dict) or not isinstance(
            conversation.get("calls"), dict):
        return "no results or calls in its conversation"
    for key in ("runs", "history"):
        if not isinstance(doc.get(key), list):
            return f"no {key} list"
    if not isinstance(doc.get("model"), dict):
        return "no model settings"
    return None
