"""The operator's pages over HTTP: login and sessions, the runs, one run, one approval.

    GET  /static/style.css   the stylesheet (the only asset)
    GET  /login              the token form            POST /login   token, next -> cookie
    POST /logout             csrf -> the session ends
    GET  /                   recent runs               GET /runs/ID  (Accept: text/html)
    GET  /runs/ID/audit      the audit log, as text    GET /runs/ID/trace  the trace, as text
    GET  /approvals/ID       one approval              POST /approvals/ID  csrf, decision,
                                                                           argv_sha256
    POST /runs/ID/questions  csrf, question -> a follow-up is asked (303 back to the run page,
                             which shows it, and reloads itself until it is answered)

A page needs a live session (else 303 to /login); a POST needs the session's CSRF token, and is
refused when its Origin header names another origin. GET changes nothing (an expiry that is due
is recorded when it is seen, like in the API). Decisions go through the same code as the API's.
"""

import urllib.parse

from triage_agent.serve import api, outcomes, pages
from triage_agent.serve.approvals import seconds_of
from triage_agent.serve.sessions import Sessions, session_id

MAX_FORM_BYTES = 32768  # a 2,000-character question, percent-encoded


def handle(handler, method, path) -> bool:
    """Answer a page request; False when the path is not a page (or pages are off)."""
    service = handler.service
    if service.operators is None:
        return False
    if method == "GET":
        return _get(handler, path)
    if method == "POST" and (path in ("/login", "/logout") or path.startswith("/approvals/")
                             or _question_post(path)):
        return _post(handler, path) or True
    return False


def wants_html(handler) -> bool:
    return "text/html" in handler.headers.get("Accept", "")


def _get(handler, path) -> bool:
    if path == "/static/style.css":
        handler._send(200, pages.STYLE.encode(), "text/css; charset=utf-8",
                      {"X-Content-Type-Options": "nosniff", "Cache-Control": "max-age=300"})
        return True
    if path == "/login":
        _page(handler, 200, pages.login_page(next_path=_next(handler)))
        return True
    is_run = path.startswith("/runs/")
    if not (path == "/" or path.startswith("/approvals/") or (is_run and (
            wants_html(handler) or path.endswith(("/audit", "/trace"))))):
        return False
    session = _session(handler)
    if session is None:
        _redirect(handler, "/login?" + urllib.parse.urlencode({"next": path}))
        return True
    who = {"operator": session.operator, "csrf": session.csrf}
    if path == "/":
        _page(handler, 200, pages.runs_page(handler.service.recent_runs(), **who))
    elif path.startswith("/approvals/"):
        _approval(handler, path[len("/approvals/"):], session)
    elif path.endswith(("/audit", "/trace")):
        _record_file(handler, path, who)
    else:
        _run(handler, path[len("/runs/"):], who)
    return True


def _question_post(path):
    return path.startswith("/runs/") and path.endswith("/questions")


def _run(handler, run_id, who, *, status=200, message=None):
    service = handler.service
    doc = service.read_run(run_id)
    if doc is None:
        return _page(handler, 404, pages.error_page(404, "no such run (or it has not ended "
                                                    "yet)", **who))
    sources = outcomes.read_sources(service.outbox / f"{run_id}.audit.jsonl")
    questions = service.questions.list(run_id) if service.questions else []
    busy = any(q.get("state") in ("queued", "running") for q in questions)
    can_ask = bool(service.questions) and not busy and len(questions) < \
        service.questions.max_followups and (service.outbox / f"{run_id}.session.json").is_file()
    _page(handler, status, pages.run_page(doc, service.approvals.list(run_id), sources,
                                          questions=questions, can_ask=can_ask,
                                          message=message, **who))


def _record_file(handler, path, who):
    run_id, _, kind = path[len("/runs/"):].rpartition("/")
    data = handler.service.read_record(run_id, kind)
    if data is None:
        return _page(handler, 404, pages.error_page(404, f"no {kind} for this run", **who))
    handler._send(200, data, "text/plain; charset=utf-8", pages.HEADERS)


def _approval(handler, approval_id, session, *, status=200, message=None):
    service = handler.service
    record = service.approvals.get(approval_id)
    who = {"operator": session.operator, "csrf": session.csrf}
    if record is None:
        return _page(handler, 404, pages.error_page(404, "no such approval", **who))
    left = seconds_of(record["expires_at"]) - service.approvals.clock()
    _page(handler, status, pages.approval_page(record, operators=service.operators.names,
                                               seconds_left=left, message=message, **who))


def _post(handler, path):
    form, error = _form(handler)
    if error:
        return _page(handler, 400, pages.error_page(400, error), close=True)
    if path == "/login":
        return _login(handler, form)
    session = _session(handler)
    if session is None:
        return _page(handler, 401, pages.login_page(error="your session has ended: log in "
                                                    "again"))
    if not Sessions.csrf_ok(session, form.get("csrf")):
        return _page(handler, 403, pages.error_page(403, "refused: the form's CSRF token is "
                                                    "missing or wrong; nothing was changed"))
    if not _same_origin(handler):
        return _page(handler, 403, pages.error_page(403, "refused: the form was posted from "
                                                    "another origin; nothing was changed"))
    if path == "/logout":
        handler.service.sessions.end(session_id(handler.headers.get("Cookie")))
        return _redirect(handler, "/login", {"Set-Cookie": Sessions.clear_cookie(
            secure=_secure(handler))})
    if _question_post(path):
        return _ask(handler, path[len("/runs/"):-len("/questions")], session, form)
    approval_id = path[len("/approvals/"):]
    status, answer = api.decide(handler.service, approval_id, session.operator,
                                form.get("decision"), form.get("argv_sha256"))
    if status == 200:
        return _redirect(handler, f"/approvals/{approval_id}")
    if status == 404:
        return _page(handler, 404, pages.error_page(404, answer["error"]))
    _approval(handler, approval_id, session, status=status, message=answer["error"])


def _ask(handler, run_id, session, form):
    status, answer = api.ask(handler.service, run_id, form.get("question"), session.operator)
    if status == 202:
        # no #fragment: a page's refresh to its own URL with one would not load it again
        return _redirect(handler, f"/runs/{run_id}")
    if status == 404:
        return _page(handler, 404, pages.error_page(404, answer["error"]))
    _run(handler, run_id, {"operator": session.operator, "csrf": session.csrf}, status=status,
         message=answer["error"])


def _login(handler, form):
    service, token = handler.service, form.get("token") or ""
    next_path = _safe_next(form.get("next"))
    if not _same_origin(handler):
        return _page(handler, 403, pages.error_page(403, "refused: the login form was posted "
                                                    "from another origin"))
    if service.is_webhook_token(token):
        return _page(handler, 403, pages.login_page(
            error="the webhook token cannot decide approvals: use your operator token",
            next_path=next_path))
    operator = service.operators.name_for(token)
    if operator is None:
        return _page(handler, 401, pages.login_page(error="not an operator token",
                                                    next_path=next_path))
    sid, _ = service.sessions.start(operator)
    _redirect(handler, next_path, {"Set-Cookie": service.sessions.cookie(
        sid, secure=_secure(handler))})


def _form(handler):
    data, error = handler._raw_body(MAX_FORM_BYTES)
    if error:
        return None, error
    try:
        fields = urllib.parse.parse_qs(data.decode("utf-8"), keep_blank_values=True,
                                       strict_parsing=False, max_num_fields=20)
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"not a form ({exc})"
    return {key: values[0] for key, values in fields.items()}, None


def _session(handler):
    return handler.service.sessions.get(session_id(handler.headers.get("Cookie")))


def _same_origin(handler) -> bool:
    """A POST whose Origin header names another host:port is refused (none sent is allowed:
    the CSRF token is the check that always applies)."""
    origin = handler.headers.get("Origin")
    if origin is None:
        return True
    host = handler.headers.get("Host", "")
    return urllib.parse.urlsplit(origin).netloc == host and host != ""


def _secure(handler) -> bool:
    return (handler.headers.get("X-Forwarded-Proto", "") == "https"
            or handler.service.base_url.startswith("https://"))


def _next(handler):
    query = urllib.parse.urlsplit(handler.path).query
    return _safe_next((urllib.parse.parse_qs(query).get("next") or ["/"])[0])


def _safe_next(value) -> str:
    """Only a path on this server: never another host (//evil, /\\evil, http://...)."""
    if (not isinstance(value, str) or not value.startswith("/") or value.startswith("//")
            or "\\" in value or any(ord(c) < 33 for c in value)):
        return "/"
    return value


def _page(handler, status, text, *, close=False):
    handler._send(status, text.encode("utf-8"), "text/html; charset=utf-8", pages.HEADERS,
                  close=close)


def _redirect(handler, location, headers=None):
    handler._send(303, b"", "text/plain; charset=utf-8",
                  dict(pages.HEADERS, Location=location, **(headers or {})))
