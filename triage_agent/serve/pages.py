"""The operator's pages, rendered on the server as plain HTML (no script, no outside asset).

    login_page        the token form
    runs_page         recent runs, newest first, with their pending approvals
    run_page          one run's report: evidence with quotes and sources, hypothesis, proposed
                      actions, actions taken, next checks, its follow-up questions and answers
                      and the form to ask one, links to the audit and the trace
    approval_page     one approval: the exact command, the evidence, who may decide, the time
                      left, and Approve / Deny forms carrying the session's CSRF token

Everything a model, an alert or a cluster wrote goes through `esc` (html.escape, quotes too) and
nowhere else: a log line `<script>` shows as text. HEADERS are sent with every page: the
Content-Security-Policy allows this server's stylesheet and forms and nothing else (no script at
all, no frames around the page).
"""

import html
import json

from triage_agent.verify import show

CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin",
           "Cache-Control": "no-store"}

STYLE = """\
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1b1f24; background: #f6f7f9; }
header { background: #20262e; color: #fff; padding: .6em 1.2em; display: flex; gap: 1em;
  align-items: center; }
header a { color: #fff; } header .who { margin-left: auto; }
main { max-width: 70em; margin: 1.2em auto; padding: 0 1.2em; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .4em .6em; border-bottom: 1px solid #dde1e6;
  vertical-align: top; }
pre, code { font: 13px/1.4 ui-monospace, monospace; }
pre { background: #fff; border: 1px solid #dde1e6; padding: .6em; white-space: pre-wrap;
  word-break: break-word; }
pre.command { background: #fffbe6; border-color: #e0c050; font-size: 14px; }
.state { font-weight: 600; } .pending { color: #9a6700; } .executed { color: #1a7f37; }
.denied, .expired, .failed, .unknown { color: #cf222e; }
.panel { background: #fff; border: 1px solid #dde1e6; padding: .8em 1em; margin: 1em 0; }
.error { background: #ffebe9; border: 1px solid #cf222e; padding: .6em 1em; }
.note { background: #ddf4ff; border: 1px solid #54aeff; padding: .6em 1em; }
form.inline { display: inline; }
button { font: inherit; padding: .4em 1.2em; border-radius: 4px; border: 1px solid #888;
  cursor: pointer; }
button.approve { background: #1a7f37; color: #fff; border-color: #1a7f37; }
button.deny { background: #fff; color: #cf222e; border-color: #cf222e; }
input[type=password] { font: inherit; padding: .3em; width: 24em; }
textarea { font: inherit; padding: .3em; width: 100%; box-sizing: border-box; }
"""


def esc(value) -> str:
    """Text for HTML: every <, >, &, " and ' escaped; None is empty."""
    return html.escape("" if value is None else str(value), quote=True)


def layout(title, body, *, operator=None, csrf=None, refresh=None) -> str:
    """A whole page: header (with logout when logged in), the body, the stylesheet; `refresh`
    seconds: the browser loads it again (a follow-up being answered), without any script."""
    who = ""
    if operator:
        who = (f'<span class="who">{esc(operator)}</span><form class="inline" method="post" '
               f'action="/logout"><input type="hidden" name="csrf" value="{esc(csrf)}">'
               '<button type="submit">Log out</button></form>')
    return ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<title>{esc(title)} · triage-agent</title>'
            + (f'<meta http-equiv="refresh" content="{int(refresh)}">' if refresh else "") +
            '<link rel="stylesheet" href="/static/style.css"></head><body>'
            f'<header><a href="/">triage-agent</a>{who}</header><main>{body}</main>'
            '</body></html>\n')


def login_page(*, error=None, next_path="/") -> str:
    message = f'<p class="error">{esc(error)}</p>' if error else ""
    return layout("Log in", f"<h1>Log in</h1>{message}"
                  '<form method="post" action="/login">'
                  f'<input type="hidden" name="next" value="{esc(next_path)}">'
                  '<p><label>Operator token <input type="password" name="token" '
                  'autocomplete="current-password" required></label></p>'
                  '<p><button type="submit">Log in</button></p></form>'
                  "<p>The token is the one whose SHA-256 is in serve's operators file.</p>")


def error_page(status, message, **who) -> str:
    return layout(f"Error {status}", f'<h1>{esc(status)}</h1><p class="error">{esc(message)}'
                  '</p><p><a href="/">Recent runs</a></p>', **who)


def _state(state) -> str:
    return f'<span class="state {esc(state)}">{esc(state)}</span>'


def runs_page(runs, **who) -> str:
    """runs: [(outcome doc, [approval records])], newest first."""
    rows = []
    for doc, approvals in runs:
        outcome = doc.get("outcome") or {}
        report = outcome.get("report") or {}
        alert = doc.get("alert") or {}
        pending = [a for a in approvals if a["state"] == "pending"]
        links = " ".join(f'<a href="/approvals/{esc(a["id"])}">{esc(a["kind"])} '
                         f'{esc(a["target"])}</a>' for a in pending) or "none"
        rows.append(
            f'<tr><td><a href="/runs/{esc(doc.get("run_id"))}">{esc(alert.get("alertname"))}'
            f'</a><br><small>{esc(doc.get("run_id"))}</small></td>'
            f'<td>{esc(report.get("severity"))}</td><td>{esc(report.get("summary"))}</td>'
            f'<td>{esc(outcome.get("stop") or doc.get("status"))}</td>'
            f'<td>{esc(_money(outcome.get("cost_usd")))}</td><td>{links}</td></tr>')
    table = ("<table><tr><th>Alert</th><th>Severity</th><th>Summary</th><th>Stop</th>"
             "<th>Cost</th><th>Pending approvals</th></tr>" + "".join(rows) + "</table>"
             if rows else "<p>No run has finished yet.</p>")
    return layout("Recent runs", f"<h1>Recent runs</h1>{table}", **who)


def _money(value):
    return "" if value is None else f"${value}"


def _source(source) -> str:
    if not isinstance(source, dict):
        return ""
    args = source.get("arguments")
    shown = json.dumps(args, sort_keys=True) if isinstance(args, dict) else ""
    return f'{esc(source.get("tool"))} <code>{esc(shown)}</code>'


def evidence_html(evidence, sources=None) -> str:
    items = []
    for item in evidence or ():
        if not isinstance(item, dict):
            continue
        source = item.get("source") or (sources or {}).get(item.get("tool_use_id"))
        items.append(f'<div class="panel"><pre>{esc(item.get("quote"))}</pre>'
                     f'<p>{esc(item.get("interpretation"))}</p>'
                     f'<p><small>source: {_source(source)} · {esc(item.get("tool_use_id"))}'
                     '</small></p></div>')
    return "".join(items) or "<p>No evidence recorded.</p>"


def _list(items) -> str:
    shown = [f"<li>{esc(item)}</li>" for item in items or ()]
    return f"<ul>{''.join(shown)}</ul>" if shown else "<p>none</p>"


def _list_raw(items) -> str:  # items already escaped
    return f"<ul>{''.join(f'<li>{i}</li>' for i in items)}</ul>" if items else "<p>none</p>"


def questions_html(run_id, questions, *, csrf, can_ask, message=None) -> str:
    """The follow-ups under a run's report: each question with its state and answer, and the
    form to ask one (the session's CSRF token; a plain POST, no script)."""
    items = []
    for q in questions or ():
        answer = ""
        if q.get("state") == "answered":
            revised = ("<p class=\"note\">The report above was revised by this answer.</p>"
                       if q.get("report_changed") else "")
            answer = (f'<p class="answer">{esc(q.get("answer"))}</p>{revised}'
                      f'{evidence_html(q.get("evidence"))}')
        elif q.get("state") == "failed":
            answer = f'<p class="error">{esc(q.get("error"))}</p>'
        items.append(f'<div class="panel question" id="{esc(q.get("id"))}"><p><strong>'
                     f'{esc(q.get("question"))}</strong></p><p><small>asked by '
                     f'{esc(q.get("asked_by"))} at {esc(q.get("asked_at"))} · '
                     f'{_state(q.get("state"))}</small></p>{answer}</div>')
    note = f'<p class="error">{esc(message)}</p>' if message else ""
    form = (f'<form method="post" action="/runs/{esc(run_id)}/questions">'
            f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
            '<p><label>Ask a follow-up question<br><textarea name="question" id="question" '
            'rows="3" cols="80" maxlength="2000" required></textarea></label></p>'
            '<p><button type="submit" id="ask">Ask</button></p></form>') if can_ask else ""
    return "".join(items) + note + form


def run_page(doc, approvals, sources, *, questions=(), can_ask=False, message=None,
             **who) -> str:
    """One run's report for a browser, with its follow-up questions under it."""
    outcome = doc.get("outcome") or {}
    report = outcome.get("report") or {}
    run_id = doc.get("run_id")
    alert = doc.get("alert") or {}
    proposed = [f'{esc(a.get("kind"))} {esc(a.get("namespace"))}/{esc(a.get("target"))}: '
                f'{esc(a.get("reason"))}' for a in report.get("proposed_actions") or ()
                if isinstance(a, dict)]
    taken = []
    for key, items in (outcome.get("actions_taken") or {}).items():
        for item in items or ():
            link = (f' · <a href="/approvals/{esc(item["approval_id"])}">approval</a>'
                    if item.get("approval_id") else "")
            taken.append(f'{_state(key)} <code>{esc(item.get("command"))}</code>{link}'
                         + verification_html(item.get("verification")))
    waiting = "".join(
        f'<p class="note">Waiting for an operator: <a href="/approvals/{esc(a["id"])}">'
        f'{esc(a["kind"])} {esc(a["namespace"])}/{esc(a["target"])}</a></p>'
        for a in approvals if a["state"] == "pending")
    checked = show.checked(outcome.get("verification"), report.get("confidence"))
    body = (f"<h1>{esc(alert.get('alertname') or 'Run')} · {esc(run_id)}</h1>{waiting}"
            + (f'<p class="note" id="checked">{esc(checked.line)}</p>' if checked else "")
            + f'<p>status {esc(doc.get("status"))}, stop {esc(outcome.get("stop"))}, severity '
            f'{esc(report.get("severity"))}, confidence '
            f'{esc(checked.confidence if checked else report.get("confidence"))}, '
            f'{esc(outcome.get("tool_calls"))} tool calls, {esc(_money(outcome.get("cost_usd")))}'
            f'</p><h2>Summary</h2><p>{esc(report.get("summary") or doc.get("error"))}</p>'
            f"<h2>Evidence</h2>{evidence_html(report.get('evidence'), sources)}"
            f"<h2>Hypothesis</h2><p>{esc(report.get('hypothesis'))}</p>"
            + "".join(f"<h2>{esc(title)}</h2>{_list(lines)}"
                      for title, lines in (checked.sections if checked else ()))
            + f"<h2>Proposed actions</h2>{_list_raw(proposed)}"
            f"<h2>Actions taken</h2>{_list_raw(taken)}"
            f"<h2>Next checks</h2>{_list(report.get('next_checks'))}"
            "<h2 id=\"questions\">Follow-up questions</h2>"
            f"{questions_html(run_id, questions, csrf=who.get('csrf'), can_ask=can_ask, message=message)}"
            f'<h2>Records</h2><p><a href="/runs/{esc(run_id)}/audit">audit log</a> · '
            f'<a href="/runs/{esc(run_id)}/trace">trace</a> · '
            f'<a href="/runs/{esc(run_id)}.json">outcome JSON</a></p>')
    waiting_for_answer = any(q.get("state") in ("queued", "running") for q in questions or ())
    return layout(f"Run {run_id}", body, refresh=3 if waiting_for_answer else None, **who)


def verification_html(found) -> str:
    """The watch after an executed action: its state, how long, what it saw ('' if none)."""
    if not isinstance(found, dict):
        return ""
    return (f'<div class="verification">verification: <b>{esc(found.get("state"))}</b> after '
            f'{esc(found.get("waited_s"))} s{_list(found.get("observed"))}</div>')


def time_left(seconds) -> str:
    if seconds <= 0:
        return "no time left: this approval has expired"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest} s left" if minutes else f"{rest} s left"


def approval_page(record, *, operators, seconds_left, csrf, operator, message=None) -> str:
    """One approval: what would run, why, on what evidence; the decision forms while pending."""
    aid = record["id"]
    note = f'<p class="note">{esc(message)}</p>' if message else ""
    if record["state"] == "pending":
        forms = "".join(
            f'<form class="inline" method="post" action="/approvals/{esc(aid)}">'
            f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
            f'<input type="hidden" name="argv_sha256" value="{esc(record["argv_sha256"])}">'
            f'<input type="hidden" name="decision" value="{value}">'
            f'<button type="submit" class="{value}" id="{value}">{label}</button></form> '
            for value, label in (("approve", "Approve"), ("deny", "Deny")))
        decide = (f"<p>{esc(time_left(seconds_left))} (expires {esc(record['expires_at'])}). "
                  f"Approving runs exactly the command above, once.</p>{forms}")
    else:
        by = (f" by {esc(record['decided_by'])} at {esc(record['decided_at'])}"
              if record.get("decided_by") else "")
        decide = f"<p>Decided: {_state(record['state'])}{by}.</p>"
        if record.get("exit_code") is not None or record.get("output"):
            decide += (f"<p>exit code {esc(record.get('exit_code'))}</p>"
                       f"<pre>{esc(record.get('output'))}</pre>")
        if record.get("note"):
            decide += f"<p>{esc(record['note'])}</p>"
        decide += verification_html(record.get("verification"))
    alert = record.get("alert") or {}
    alerts = ", ".join(esc(a.get("alertname")) for a in alert.get("alerts") or ()
                       if isinstance(a, dict))
    body = (f"<h1>Approval {esc(aid)}</h1>{note}"
            f"<p>State {_state(record['state'])} · run <a href=\"/runs/{esc(record['run_id'])}\">"
            f"{esc(record['run_id'])}</a> · alert {alerts or 'none'}</p>"
            f"<h2>Command</h2><pre class=\"command\" id=\"command\">{esc(record['command'])}</pre>"
            f"<p>argv_sha256 <code>{esc(record['argv_sha256'])}</code></p>"
            f"<h2>Decision</h2><p>Who may decide: {esc(', '.join(operators))}.</p>{decide}"
            f"<h2>Reason given by the model</h2><p>{esc(record.get('reason'))}</p>"
            f"<h2>Summary</h2><p>{esc(record.get('summary') or 'the run has not ended yet')}</p>"
            f"<h2>Evidence</h2><div id=\"evidence\">{evidence_html(record.get('evidence'))}</div>")
    return layout(f"Approval {aid}", body, operator=operator, csrf=csrf)
