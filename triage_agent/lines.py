"""One-line views for the operator: a tool call on its progress line, a report's shape in a
few fields, and the first line of a tool's text (a failed call's cause, not only its size).

Every value here may come from a model or a server and be of any type or length: each view is
bounded and made safe for a terminal (terminal.printable) where it is printed.
"""

from mcp_kubectl_server.redact import redact
from triage_agent import terminal


def describe_call(name, arguments):
    """`get_logs namespace=prod name=x previous=true`: a call as one safe progress line; a value
    is redacted, then cut short (ending in an ellipsis)."""
    if not isinstance(arguments, dict):
        line = f"{name} {terminal.shorten(redact(repr(arguments)), 80)}"
    else:
        if name in ("write_report", "answer"):
            arguments = report_digest(arguments)
        line = " ".join([str(name)] + [
            f"{k}={str(v).lower() if isinstance(v, bool) else terminal.shorten(redact(str(v)), 60)}"
            for k, v in arguments.items()])
    return terminal.shorten(terminal.printable(line, keep_newlines=False), 200)


def report_digest(arguments):
    """A report's shape in a few fields, for progress and audit lines (the outcome has it all).
    Any field may be of the wrong type: this runs before the report is validated."""
    def count(key):
        value = arguments.get(key)
        return len(value) if isinstance(value, list) else value
    if "answer" in arguments or "report_changed" in arguments:  # a follow-up's answer
        return {"evidence": count("evidence"), "report_changed": arguments.get("report_changed"),
                "answer_chars": len(arguments["answer"]) if isinstance(
                    arguments.get("answer"), str) else None}
    return {"severity": arguments.get("severity"), "confidence": arguments.get("confidence"),
            "evidence": count("evidence"), "affected": count("affected")}


def first_line(text, limit=160):
    """The first non-blank line of a tool's text, cut to `limit`: what a progress line shows."""
    return terminal.shorten(next((ln.strip() for ln in text.splitlines() if ln.strip()), ""),
                            limit)
