"""The approvals and follow-up APIs: JSON for scripts and chat bots, with an operator's
bearer token.

    GET  /api/approvals        200 {"approvals": [approval, ...]} newest first
    GET  /api/approvals/ID     200 approval | 404
    POST /api/approvals/ID     {"decision": "approve"|"deny", "argv_sha256": "..."}
        200 the approval after the decision (executed/failed once kubectl has run)
        400 no usable body or decision · 401 no or unknown token · 403 the webhook token
        404 unknown id · 409 decided already, or a digest that is not the pending command's
        410 expired (it never runs) · 500 its audit entry could not be written (not taken)

    POST /api/runs/ID/questions, GET /api/runs/ID/questions[/QID]   follow-ups (followups.py)

Every error is {"error": "..."}; a request that is refused changes nothing. An approval is the
store's record plus its approval_url (approvals.py, outcomes.public).
"""

import re

from triage_agent.serve import approvals as store_mod, followups, outcomes

PREFIX = "/api/approvals"
QUESTIONS = re.compile(r"^/api/runs/([^/]+)/questions(?:/([^/]+))?$")


def operator_of(handler):
    """(operator name, None) or (None, (status, error)) for the request's bearer token."""
    service = handler.service
    given = handler.headers.get("Authorization", "")
    scheme, _, token = given.partition(" ")
    if scheme != "Bearer" or not token.strip():
        return None, (401, "an operator's bearer token is required")
    token = token.strip()
    if service.is_webhook_token(token):
        return None, (403, "the webhook token cannot decide approvals: use an operator token")
    name = service.operators.name_for(token)
    if name is None:
        return None, (401, "not an operator token")
    return name, None


def handle(handler, method, path) -> bool:
    """Answer an /api/approvals or /api/runs/ID/questions request; False when the path is not
    this API's."""
    if QUESTIONS.match(path):
        return handle_questions(handler, method, path)
    if path != PREFIX and not path.startswith(PREFIX + "/"):
        return False
    service = handler.service
    if service.approvals is None:
        handler._json(404, {"error": "approvals are off: serve was started without "
                                     "--operators"})
        return True
    operator, refusal = operator_of(handler)
    if refusal:
        handler._json(refusal[0], {"error": refusal[1]}, {"WWW-Authenticate": "Bearer"},
                      close=method == "POST")
        return True
    approval_id = path[len(PREFIX) + 1:] if path != PREFIX else None
    if method == "GET" and approval_id is None:
        records = service.approvals.list()
        handler._json(200, {"approvals": [outcomes.public(r, service.base_url)
                                          for r in records]})
    elif method == "GET":
        record = service.approvals.get(approval_id)
        if record is None:
            handler._json(404, {"error": "no such approval"})
        else:
            handler._json(200, outcomes.public(record, service.base_url))
    elif method == "POST" and approval_id is not None:
        _decide(handler, approval_id, operator)
    else:
        handler._json(405, {"error": "GET /api/approvals[/ID] or POST /api/approvals/ID"})
    return True


def _decide(handler, approval_id, operator):
    body, error = handler._body()
    if error:
        return handler._json(400, {"error": error}, close=True)
    if not isinstance(body, dict):
        return handler._json(400, {"error": "the body must be a JSON object with decision and "
                                            "argv_sha256"})
    status, answer = decide(handler.service, approval_id, operator, body.get("decision"),
                            body.get("argv_sha256"))
    handler._json(status, answer)


def decide(service, approval_id, operator, decision, digest) -> tuple:
    """(HTTP status, JSON answer) for one decision, from the API or a page's form."""
    try:
        record = service.approvals.decide(approval_id, decision=decision, digest=digest,
                                          operator=operator)
    except store_mod.DecisionError as exc:
        return exc.status, {"error": str(exc)}
    return 200, outcomes.public(record, service.base_url)


def handle_questions(handler, method, path) -> bool:
    """The follow-up questions of one run."""
    service = handler.service
    run_id, qid = QUESTIONS.match(path).groups()
    if service.questions is None:
        handler._json(404, {"error": "follow-ups are off: serve was started without "
                                     "--operators"}, close=method == "POST")
        return True
    operator, refusal = operator_of(handler)
    if refusal:
        handler._json(refusal[0], {"error": refusal[1]}, {"WWW-Authenticate": "Bearer"},
                      close=method == "POST")
        return True
    if method == "POST" and qid is None:
        body, error = handler._body()
        if error:
            return handler._json(400, {"error": error}, close=True) or True
        question = body.get("question") if isinstance(body, dict) else None
        status, answer = ask(service, run_id, question, operator)
        handler._json(status, answer)
    elif method == "GET" and service.read_run(run_id) is None:
        handler._json(404, {"error": "no such run (or it has not ended yet)"})
    elif method == "GET" and qid is None:
        handler._json(200, {"questions": service.questions.list(run_id)})
    elif method == "GET":
        record = service.questions.get(run_id, qid)
        handler._json(*((200, record) if record else (404, {"error": "no such question"})))
    else:
        handler._json(405, {"error": "GET /api/runs/ID/questions[/QID] or POST "
                                     "/api/runs/ID/questions"}, close=method == "POST")
    return True


def ask(service, run_id, question, operator) -> tuple:
    """(HTTP status, JSON answer) for one question, from the API or the run page's form."""
    try:
        return 202, service.questions.ask(run_id, question, operator)
    except followups.QuestionError as exc:
        return exc.status, {"error": str(exc)}
