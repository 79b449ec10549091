"""Slack messages in Block Kit: the thread's root (running, then the report), approvals, notes.

Everything the model or the cluster wrote goes through `inert`: redacted, then `&`, `<` and `>`
escaped, so no text from a log line can mention (`<!channel>`, `<@U…>`) or link (`<url|label>`)
in Slack's mrkdwn; code spans cannot be closed early from inside. Limits (Slack's Block Kit
reference): 50 blocks a message, 3,000 characters per section text, 150 per header and button
text, 2,000 per button value, 40,000 per message's text. A part that does not fit is cut and
says "more on the run page" with the link.
"""

from mcp_kubectl_server.redact import redact
from triage_agent.verify import show

MAX_BLOCKS = 50
MAX_TEXT = 3000
MAX_HEADER = 150
MAX_MESSAGE = 40000
MORE = "… (more on the run page)"
SEVERITY_MARK = {"critical": ":red_circle:", "high": ":large_orange_circle:",
                 "medium": ":large_yellow_circle:", "low": ":white_circle:", "none": ":white_check_mark:"}


def escape(text) -> str:
    """Slack's three control characters as entities: the text is shown, never parsed."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def inert(text) -> str:
    """Cluster- or model-written text made safe for mrkdwn: redacted, then escaped."""
    return escape(redact(str(text if text is not None else "")))


def code(text) -> str:
    """A code block of inert text; backtick runs inside cannot end it."""
    return "```" + inert(text).replace("```", "`\u200b``") + "```"


def cut(text, limit=MAX_TEXT, *, more=MORE) -> str:
    return text if len(text) <= limit else text[:limit - len(more)] + more


def section(text, limit=MAX_TEXT):
    return {"type": "section", "text": {"type": "mrkdwn", "text": cut(text, limit) or " "}}


def context(text):
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": cut(text) or " "}]}


def link(url, label) -> str:
    """A link we build ourselves (our own run page): the URL and label escaped, no `|` inside."""
    return f"<{escape(url).replace('|', '%7C')}|{escape(label).replace('|', '/')}>"


def message(fallback, blocks, run_url=None) -> dict:
    """chat.* body fields: `text` (notification fallback) and blocks, within Slack's limits."""
    if len(blocks) > MAX_BLOCKS:
        blocks = blocks[:MAX_BLOCKS - 1] + [context("… more on the run page" + (
            ": " + link(run_url, "run") if run_url else ""))]
    return {"text": cut(fallback, MAX_MESSAGE), "blocks": blocks,
            "unfurl_links": False, "unfurl_media": False}


def alert_title(alert) -> str:
    labels = alert.get("labels") or {}
    workload = next((labels[key] for key in ("deployment", "statefulset", "daemonset",
                                             "job_name", "service", "pod") if labels.get(key)),
                    None)
    where = "/".join(x for x in (labels.get("namespace"), workload) if x)
    return " ".join(x for x in (labels.get("alertname") or "alert", where) if x)


def root_running(alert, run_url) -> dict:
    """The thread's root while a run goes on: the alert and its labels, a link to the run."""
    title = f"Triaging {alert_title(alert)}…"
    labels = alert.get("labels") or {}
    shown = ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": cut(redact(title),
                                                                               MAX_HEADER)}},
              section("*Labels:* " + inert(shown)),
              context("Run: " + link(run_url, run_url))]
    return message(inert(title), blocks, run_url)


def root_report(alert, doc, run_url) -> dict:
    """The thread's root once the run ended: the report, or why there is none."""
    outcome = doc.get("outcome") or {}
    report = outcome.get("report") if isinstance(outcome.get("report"), dict) else None
    title = alert_title(alert)
    if report is None:
        why = outcome.get("stop") or doc.get("status") or "unknown"
        error = outcome.get("error") or doc.get("error") or ""
        blocks = [_header(f"{title}: no report"),
                  section(f"*Stopped:* {inert(why)}" + (f"\n{inert(error)}" if error else "")),
                  context(_footer(outcome, run_url))]
        return message(inert(f"{title}: no report ({why})"), blocks, run_url)
    severity = str(report.get("severity") or "none")
    blocks = [_header(f"{title}: {severity}"),
              section(f"{SEVERITY_MARK.get(severity, '')} *{inert(severity)}* · "
                      f"{inert(report.get('summary'))}")]
    verification = outcome.get("verification")
    confidence = report.get("confidence")
    if isinstance(verification, dict):
        blocks.append(section(inert(show.check_line(verification))))
        confidence = show.confidence_words(verification, confidence)
    if report.get("hypothesis"):
        blocks.append(section(f"*Hypothesis* (confidence {inert(confidence)}): "
                              f"{inert(report['hypothesis'])}"))
    for item in (report.get("evidence") or [])[:20]:
        if isinstance(item, dict):
            blocks.append(section(cut(code(item.get("quote")), 2000) + "\n"
                                  + inert(item.get("interpretation"))))
    actions = [a for a in report.get("proposed_actions") or () if isinstance(a, dict)]
    if actions:
        blocks.append(section("*Proposed actions:*\n" + "\n".join(
            f"• {inert(a.get('kind'))} {inert(a.get('namespace'))}/{inert(a.get('target'))}: "
            f"{inert(a.get('reason'))}" for a in actions)))
    blocks.append(context(_footer(outcome, run_url)))
    return message(inert(f"{title}: {severity}: {report.get('summary')}"), blocks, run_url)


def _header(text):
    return {"type": "header", "text": {"type": "plain_text",
                                       "text": cut(redact(text), MAX_HEADER) or " "}}


def _footer(outcome, run_url):
    cost = outcome.get("cost_usd")
    parts = [f"cost ${cost}" if cost is not None else "cost unknown",
             f"{outcome.get('tool_calls', 0)} tool calls", link(run_url, "run page")]
    return " · ".join(parts)


def approval(record, *, operators, run_url) -> dict:
    """One approval: the exact command, its digest, who may decide, the expiry; buttons while
    it is pending, who decided and what came of it after."""
    digest = record["argv_sha256"]
    lines = [f"*Approval* `{digest[:12]}` · {inert(record.get('kind'))} "
             f"{inert(record.get('namespace'))}/{inert(record.get('target'))}",
             code(record.get("command")),
             f"*Reason:* {inert(record.get('reason'))}",
             f"*May decide:* {inert(', '.join(operators)) or 'nobody'} · "
             f"*expires* {inert(record.get('expires_at'))}"]
    blocks = [section("\n".join(lines))]
    state = record.get("state")
    if state == "pending":
        value = f"{record['id']}:{digest}"
        blocks.append({"type": "actions", "block_id": f"approval:{record['id']}", "elements": [
            {"type": "button", "action_id": "approve", "style": "primary", "value": value,
             "text": {"type": "plain_text", "text": "Approve"}},
            {"type": "button", "action_id": "deny", "style": "danger", "value": value,
             "text": {"type": "plain_text", "text": "Deny"}}]})
    else:
        said = f"*{inert(state)}*"
        if record.get("decided_by"):
            said += f" by {inert(record['decided_by'])} at {inert(record.get('decided_at'))}"
        if record.get("exit_code") is not None:
            said += f" · exit code {record['exit_code']}"
        verification = record.get("verification")
        if isinstance(verification, dict) and verification.get("state"):
            observed = "; ".join(str(o) for o in verification.get("observed") or ())
            said += f"\n*Watched:* {inert(verification['state'])}" + (
                f" · {inert(observed)}" if observed else "")
        blocks.append(section(said))
        if record.get("note") or record.get("output"):
            blocks.append(section(cut(code(record.get("output") or record.get("note")), 2000)))
    blocks.append(context(link(run_url, "run page")))
    return message(inert(f"approval {digest[:12]} {record.get('command')}: {state}"), blocks,
                   run_url)


def answer(record, run_url) -> dict:
    """A follow-up's answer and its evidence, or why there is none."""
    head = f"*Follow-up* {inert(record.get('id'))}: {inert(record.get('question'))}"
    if record.get("state") != "answered":
        return message(inert(f"follow-up {record.get('id')}: no answer"), [section(
            head + f"\nNo answer: {inert(record.get('error') or record.get('stop'))}"),
            context(link(run_url, "run page"))], run_url)
    items = [section(head), section(inert(record.get("answer")))]
    for item in (record.get("evidence") or [])[:20]:
        if isinstance(item, dict):
            items.append(section(cut(code(item.get("quote")), 2000) + "\n"
                                 + inert(item.get("interpretation"))))
    items.append(context(("report revised · " if record.get("report_changed") else "")
                         + link(run_url, "run page")))
    return message(inert(f"follow-up answer: {record.get('answer')}"), items, run_url)


def note(text) -> dict:
    """A short message of our own words with inert parts already escaped by the caller."""
    return {"text": cut(text, MAX_MESSAGE), "blocks": [section(text)],
            "unfurl_links": False, "unfurl_media": False}
