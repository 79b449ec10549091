"""Text helpers every digest shares: one line, quoting, key=value, times and ages, log cleaning.

Every digest is line-oriented with one fact per line and stable `key=value` wording, so a reader
(model or human) can quote a line as evidence and grep for it. Values that come from the cluster
are squeezed onto one line and redacted before they are cut (a cut JWT or key would no longer look
like one); the whole result is redacted again on its way out (server.py).
"""

import re
from datetime import datetime, timezone

from mcp_kubectl_server.redact import redact

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def one_line(text, limit=200, *, keep_end=False):
    """Redact, collapse whitespace, drop control characters, then cut to `limit` characters.

    keep_end=True cuts from the middle instead, keeping the first third and the end: a wrapped
    error (Go's `outer: inner: ...: 401 Unauthorized`) says why at its end."""
    text = " ".join(_CONTROL.sub(" ", redact(str(text))).split())
    if len(text) <= limit:
        return text
    if keep_end:
        head = limit // 3
        return text[:head] + " ... " + text[-(limit - head - 5):]
    return text[: limit - 3] + "..."


def quoted(text, limit=200, *, keep_end=False):
    return '"' + one_line(text, limit, keep_end=keep_end).replace('"', "'") + '"'


def kv(key, value, *, quote=0, keep_end=False):
    """[`key=value`] when there is a value (0 counts), else []; quote=N quotes and cuts to N chars
    (keep_end: from the middle, see one_line)."""
    if value is None or value == "":
        return []
    return [f"{key}={quoted(value, quote, keep_end=keep_end) if quote else value}"]


def parse_time(value):
    """RFC 3339 timestamp (with or without fraction) -> aware datetime, or None."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    text = re.sub(r"\.(\d+)", lambda m: "." + (m.group(1) + "000000")[:6], text)  # 3.10 wants 3 or 6
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def format_time(moment):
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else "time=unknown"


def age(created, now):
    """kubectl-style age: 45s, 12m, 3h5m, 2d4h."""
    moment = parse_time(created)
    if moment is None:
        return "unknown"
    seconds = max(0, int((now - moment).total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours and days < 10 else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    return f"{minutes}m" if minutes else f"{seconds}s"


def clean_log_text(text):
    """Strip terminal escapes and control characters a container may have written."""
    return _CONTROL.sub("?", _ANSI.sub("", text.replace("\r\n", "\n")))
