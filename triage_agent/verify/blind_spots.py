"""Blind spots: what a run could not see, said by the loop from its own records, never the model.

    find_blind_spots(entries, *, results, calls, offered, symptom, namespaces) -> [line]

`entries` are the run's audit entries in order (what the loop decided for every call), `results`
and `calls` the ledger's (tool_use_id -> text, and -> (tool, arguments)), `offered` the server
tools the model was offered. One short line for each of:

    a tool that failed         executed with an error: a timeout, a server error, a dead server
    a call refused             unknown tool, invalid arguments, out of scope, budget spent, ...
    a tool class missing       the symptom's class usually needs it and the server offers none
                               ("metrics not read: no metrics tools (no Prometheus)")
    a result cut or cleared    by the size cap or the context budget, and not read again
    a crashed container        restarted or terminated, and its previous logs never read
    a namespace out of scope   named in a result, never readable in this run
"""

import re

from triage_agent.lines import describe_call, first_line

REFUSED = {"unknown_tool": "no such tool", "schema_error": "invalid arguments",
           "out_of_scope": "out of scope", "namespace_required": "no namespace named",
           "budget_spent": "the tool budget was spent", "cut_off": "cut off by the token limit",
           "not_run_last": "asked for on the last model call", "mcp_error": "the MCP server failed"}
# (class, words of a symptom in it, tool names that serve it, the line when none is offered)
CLASSES = (
    ("metrics", r"latenc|slow|memory|cpu|throttl|error rate|5\d\d\b|leak|oom|saturat|timeout",
     ("get_metrics", "query_metrics", "list_metrics"),
     "metrics not read: the server offers no metrics tools (no Prometheus)"),
    ("logs", r"crash|restart|exit|error|fail|panic|not starting",
     ("get_logs",), "logs not read: the server offers no log tool"),
    ("events", r"pending|evict|schedul|not starting|stuck|backoff",
     ("get_events",), "events not read: the server offers no events tool"),
)
MAX_EACH = 5    # lines of one kind; the rest are counted in one more line
POD_LINE = re.compile(r"^(?:pod )?(?:(?P<ns>[a-z0-9-]+)/)?(?P<pod>[a-z0-9][a-z0-9.-]*)\s+"
                      r"(?P<rest>.*)$", re.M)
CRASHED = re.compile(r"CrashLoopBackOff|last_state=terminated|OOMKilled|restarts=[1-9]")
TABLE_ROW = re.compile(r"^(?P<pod>[a-z0-9][a-z0-9.-]*)\s+\d+/\d+\s+(?P<status>\S+)\s+"
                       r"(?P<restarts>\d+)", re.M)
NAMESPACE_WORDS = (re.compile(r"\bnamespace[s]?\s*[=:]\s*\"?([a-z0-9][a-z0-9-]{0,62})\b"),
                   re.compile(r"\b(?:in|from) namespace ([a-z0-9][a-z0-9-]{0,62})\b"),
                   re.compile(r"(?<![\w-])-n\s+([a-z0-9][a-z0-9-]{0,62})\b"),
                   re.compile(r"\b([a-z0-9]+(?:-[a-z0-9]+)+) namespace\b"),
                   re.compile(r"\b(kube-(?:system|public|node-lease))\b"))


def find_blind_spots(entries, *, results, calls, offered=(), symptom="", namespaces=()) -> list:
    """The run's blind spots, one short line each (see the module docstring)."""
    entries = [e for e in entries or () if isinstance(e, dict)]
    lines = failed_calls(entries) + refused_calls(entries)
    lines += missing_classes(symptom, offered)
    lines += cut_or_cleared(entries)
    failed = {e.get("tool_use_id") for e in entries
              if e.get("decision") == "executed" and e.get("is_error")}
    lines += _bounded(crashed_unread(results, calls, failed), "crashed containers")
    lines += _bounded(out_of_scope_named(results, calls, namespaces), "namespaces")
    return list(dict.fromkeys(lines))


def failed_calls(entries) -> list:
    """A line for each call that ran and returned an error (its cause's first line)."""
    out = []
    for e in entries:
        if e.get("decision") == "executed" and e.get("is_error"):
            cause = e.get("error") or "no text"
            out.append(f"tool failed: {describe_call(e.get('tool'), e.get('arguments'))}: "
                       f"{first_line(str(cause), 120)}")
    return _bounded(out, "failed tools")


def refused_calls(entries) -> list:
    """A line for each call the loop did not run, with why."""
    out = [f"not run ({REFUSED[e['decision']]}): "
           f"{describe_call(e.get('tool'), e.get('arguments'))}"
           for e in entries if e.get("decision") in REFUSED]
    return _bounded(out, "refused calls")


def missing_classes(symptom, offered) -> list:
    """A line for each tool class the symptom usually needs and the server does not offer."""
    offered = set(offered or ())
    return [line for _, words, tools, line in CLASSES
            if re.search(words, symptom or "", re.I) and not offered & set(tools)]


def cut_or_cleared(entries) -> list:
    """Results cut by the size cap or cleared from the conversation, with no later read of the
    same tool and object that the model saw whole."""
    out, cleared = [], {}
    for index, e in enumerate(entries):
        if e.get("decision") == "context_cleared":
            cleared.update({use_id: index for use_id in e.get("tool_use_ids") or ()})
    by_id = {e.get("tool_use_id"): (i, e) for i, e in enumerate(entries)
             if e.get("decision") == "executed"}
    for use_id, (index, e) in by_id.items():
        if "shown_bytes" in e and not _read_again(entries, index, e):
            out.append(f"result cut to {e['shown_bytes']:,} of {e.get('bytes', 0):,} bytes and "
                       f"not read again: {describe_call(e.get('tool'), e.get('arguments'))}")
        if use_id in cleared and not _read_again(entries, cleared[use_id], e):
            out.append(f"result cleared from the conversation and not read again: "
                       f"{describe_call(e.get('tool'), e.get('arguments'))}")
    return _bounded(out, "cut or cleared results")


def _read_again(entries, after, entry) -> bool:
    """A later successful, uncut call of the same tool on the same object (name)."""
    name = _args(entry).get("name")
    return any(e.get("decision") == "executed" and not e.get("is_error")
               and "shown_bytes" not in e and e.get("tool") == entry.get("tool")
               and _args(e).get("name") == name for e in entries[after + 1:])


def crashed_unread(results, calls, failed=()) -> list:
    """Containers a result shows crashed (restarts, CrashLoopBackOff, a terminated last state)
    whose pod's previous logs no successful get_logs call read (`failed`: ids of calls that
    returned an error)."""
    crashed, read = {}, set()
    for use_id, (tool, arguments) in (calls or {}).items():
        arguments = arguments if isinstance(arguments, dict) else {}
        text = (results or {}).get(use_id) or ""
        if tool == "get_logs" and arguments.get("previous") is True and use_id not in failed:
            read.add((arguments.get("namespace"), arguments.get("name")))
        elif tool in ("get_pods", "describe_pod") and use_id not in failed:
            for namespace, pod in _crashed_pods(text, arguments.get("namespace")):
                crashed.setdefault((namespace, pod), use_id)
    return [f"crashed container in pod {namespace}/{pod}: its previous logs were never read"
            for (namespace, pod) in crashed if (namespace, pod) not in read]


def _crashed_pods(text, namespace):
    for match in POD_LINE.finditer(text):
        if "phase=" in match.group("rest") and CRASHED.search(match.group("rest")):
            yield match.group("ns") or namespace, match.group("pod")
    if text.startswith("pod ") and CRASHED.search(text):   # describe_pod: one pod, by its header
        header = POD_LINE.match(text)
        if header:
            yield header.group("ns") or namespace, header.group("pod")
    for row in TABLE_ROW.finditer(text):   # kubectl's own table, from another server
        if row.group("restarts") != "0" or "CrashLoop" in row.group("status"):
            yield namespace, row.group("pod")


def out_of_scope_named(results, calls, namespaces) -> list:
    """Namespaces a result names that are not in scope (so nothing in them was read)."""
    allowed, named = set(namespaces or ()), {}
    for use_id, text in (results or {}).items():
        found = sorted((match.start(1), match.group(1)) for pattern in NAMESPACE_WORDS
                       for match in pattern.finditer(text or ""))
        for _, namespace in found:
            if namespace not in allowed:
                named.setdefault(namespace, (calls or {}).get(use_id, ("a tool",))[0])
    return [f"namespace {ns} is named in a {tool} result but is out of scope: not read"
            for ns, tool in named.items()]


def _args(entry):
    arguments = entry.get("arguments")
    return arguments if isinstance(arguments, dict) else {}


def _bounded(lines, what) -> list:
    lines = list(dict.fromkeys(lines))
    if len(lines) <= MAX_EACH:
        return lines
    return lines[:MAX_EACH] + [f"... and {len(lines) - MAX_EACH} more {what}"]
