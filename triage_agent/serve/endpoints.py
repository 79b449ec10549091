"""The triage service's HTTP face (stdlib http.server, one thread per request).

    POST /alertmanager  Alertmanager webhook payload (or one alert), Authorization: Bearer T
        202 {"queued": [{run_id, fingerprint, alertname}], "deduplicated": [...],
             "refused": [...], "firing": N}
        400 not a payload (malformed JSON, wrong shape, larger than the limit), with the reason
        401 no or wrong bearer token (when the service has one)
        503 + Retry-After: the queue is full or the service is stopping (Alertmanager retries;
            alerts already queued are deduplicated on the retry)
    GET /healthz        200 "ok" (503 "draining" while stopping)
    GET /metrics        Prometheus text format
    GET /runs/RUN_ID    the outcome file, or {"run_id", "status": queued|running}; 404 unknown
    /api/approvals...   the approvals API, with an operator token (api.py)
    /api/runs/RUN_ID/questions...  follow-up questions, with an operator token (api.py)
    /, /login, /runs/RUN_ID (Accept: text/html), /approvals/ID ...
                        the operator's pages, with a session (web.py, pages.py)

Every answer is JSON except /healthz, /metrics and the pages. Nothing here runs a triage: the
engine (runs.Engine) does. The API and the pages exist only with `serve --operators`.
"""

import hmac
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from triage_agent.serve import alerts, api, web
from triage_agent.serve.runs import RUN_ID, received_order
from triage_agent.serve.sessions import Sessions

MAX_BODY_BYTES = 1024 * 1024
RETRY_AFTER_SECONDS = 30
BUCKETS = (1, 2, 5, 10, 30, 60, 120, 300, 600)


class Service:
    """What the handler needs: the engine, the scope ceiling, the token, the outbox; with
    operators, the approvals store and the browser sessions."""

    def __init__(self, engine, *, ceiling, token=None, approvals=None, operators=None,
                 sessions=None, base_url="", questions=None):
        self.engine, self.ceiling, self.token = engine, tuple(ceiling), token
        self.approvals, self.operators = approvals, operators
        self.questions = questions   # followups.Questions (with operators), else None
        self.sessions = sessions or Sessions()
        self.base_url = base_url
        self.outbox = engine.outbox
        self.slack = None                        # chat.slack.Slack when --slack-channel is on
        self.on_resolved = lambda fingerprint: None

    def is_webhook_token(self, token) -> bool:
        return bool(self.token) and hmac.compare_digest(str(token).encode(),
                                                        self.token.encode())

    def read_run(self, run_id):
        """A finished run's outcome document, or None."""
        if not RUN_ID.match(run_id or ""):
            return None
        try:
            return json.loads((self.outbox / f"{run_id}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def read_record(self, run_id, kind):
        """A run's audit log or trace as bytes, or None."""
        suffix = {"audit": ".audit.jsonl", "trace": ".trace.jsonl"}.get(kind)
        if not suffix or not RUN_ID.match(run_id or ""):
            return None
        try:
            return (self.outbox / f"{run_id}{suffix}").read_bytes()
        except OSError:
            return None

    def recent_runs(self, limit=50) -> list:
        """[(outcome doc, its approvals)] of the newest finished runs, newest first by the time
        each alert was received (runs.received_order). A run id carries that time to the second:
        the newest `limit` ids, and every other id of the last one's second, hold the newest."""
        names = sorted((p.name[:-len(".json")] for p in self.outbox.glob("r-*.json")
                        if RUN_ID.match(p.name[:-len(".json")])), reverse=True)
        cut = min(limit, len(names))
        while 0 < cut < len(names) and names[cut][:17] == names[cut - 1][:17]:  # r-YYYY...SS
            cut += 1
        docs = sorted((doc for doc in map(self.read_run, names[:cut]) if doc),
                      key=received_order, reverse=True)[:limit]
        return [(doc, self.approvals.list(doc["run_id"]) if self.approvals else [])
                for doc in docs]

    def take(self, doc):
        """(HTTP status, answer) for a parsed webhook body."""
        try:
            firing = alerts.parse_payload(doc)
        except alerts.AlertError as exc:
            self.engine.refuse("bad_payload")
            return 400, {"error": f"not an Alertmanager payload: {exc}"}
        for fingerprint in alerts.resolved_fingerprints(doc):
            self.on_resolved(fingerprint)
        answer = {"firing": len(firing), "queued": [], "deduplicated": [], "refused": []}
        for alert in firing:
            entry = {"fingerprint": alert["fingerprint"] or alerts.fingerprint(alert),
                     "alertname": alert["labels"]["alertname"]}
            alert["fingerprint"] = entry["fingerprint"]
            try:
                alerts.scope([alert], self.ceiling)
            except alerts.ScopeError as exc:
                self.engine.refuse("out_of_scope")
                answer["refused"].append(dict(entry, reason=str(exc)))
                continue
            state, run_id = self.engine.accept(alert)
            if state in ("queued", "deduplicated"):
                answer[state].append(dict(entry, run_id=run_id))
            else:
                answer["refused"].append(dict(entry, reason=state))
        busy = any(r["reason"] in ("queue_full", "draining") for r in answer["refused"])
        return (503 if busy else 202), answer


class Handler(BaseHTTPRequestHandler):
    server_version = "triage-agent"
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without this, each answer after the first on a
    # keep-alive connection waits ~40 ms for the client's delayed ACK (22 answers/s measured)
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):  # requests are counted in /metrics, not logged per line
        pass

    @property
    def service(self):
        return self.server.service

    def do_POST(self):
        path = self.path.split("?")[0]
        if api.handle(self, "POST", path) or web.handle(self, "POST", path):
            return None
        if path != "/alertmanager":
            return self._json(404, {"error": "POST alerts to /alertmanager"}, close=True)
        if not self._authorized() or self._operator_token():
            self.service.engine.refuse("unauthorized")
            return self._json(401, {"error": "missing or wrong bearer token"},
                              {"WWW-Authenticate": "Bearer"})
        body, error = self._body()
        if error:
            self.service.engine.refuse("bad_payload")
            return self._json(400, {"error": error}, close=True)
        if self.service.engine.gauges()["draining"]:
            self.service.engine.refuse("draining")
            return self._json(503, {"error": "the service is stopping"},
                              {"Retry-After": str(RETRY_AFTER_SECONDS)})
        status, answer = self.service.take(body)
        extra = {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 503 else {}
        self._json(status, answer, extra)

    def _raw_body(self, limit=MAX_BODY_BYTES):
        """(bytes, None) or (None, reason); the body is never read past the limit."""
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return None, "a Content-Length header is required"
        if length < 0 or length > limit:
            return None, f"the payload is larger than {limit} bytes"
        return self.rfile.read(length), None

    def _body(self):
        """(parsed JSON, None) or (None, reason)."""
        data, error = self._raw_body()
        if error:
            return None, error
        try:
            return json.loads(data), None
        except (ValueError, RecursionError) as exc:
            return None, f"the payload is not JSON ({exc})"

    def _operator_token(self):
        """True when the bearer token is an operator's: those never post alerts."""
        operators = self.service.operators
        scheme, _, token = self.headers.get("Authorization", "").partition(" ")
        return bool(operators and scheme == "Bearer" and operators.name_for(token.strip()))

    def _authorized(self):
        token = self.service.token
        if token is None:
            return True
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())

    def do_GET(self):
        path = self.path.split("?")[0]
        if api.handle(self, "GET", path) or web.handle(self, "GET", path):
            return None
        if path == "/healthz":
            draining = self.service.engine.gauges()["draining"]
            return self._send(503 if draining else 200, b"draining\n" if draining else b"ok\n",
                              "text/plain; charset=utf-8")
        if path == "/metrics":
            return self._send(200, metrics_text(self.service.engine, self.service.approvals,
                                                self.service.questions,
                                                self.service.slack).encode(),
                              "text/plain; version=0.0.4; charset=utf-8")
        if path.startswith("/runs/"):
            if not self._authorized():
                return self._json(401, {"error": "missing or wrong bearer token"},
                                  {"WWW-Authenticate": "Bearer"})
            return self._run(path[len("/runs/"):])
        self._json(404, {"error": "not found: try /healthz, /metrics or /runs/RUN_ID"})

    def _run(self, run_id):
        if not RUN_ID.match(run_id):
            return self._json(404, {"error": "no such run"})
        state = self.service.engine.status(run_id)
        if state:
            return self._json(200, {"run_id": run_id, "status": state})
        try:
            data = (self.service.engine.outbox / f"{run_id}.json").read_bytes()
        except OSError:
            return self._json(404, {"error": "no such run"})
        self._send(200, data, "application/json")

    def _json(self, status, doc, headers=None, *, close=False):
        self._send(status, json.dumps(doc).encode() + b"\n", "application/json", headers,
                   close=close)

    def _send(self, status, data, content_type, headers=None, *, close=False):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if close:  # an unread body would be taken for the next request on this connection
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)


def metrics_text(engine, approvals=None, questions=None, slack=None) -> str:
    """The Prometheus text exposition of the engine's (and the approvals', follow-ups' and
    Slack's)
    counters and gauges."""
    with engine._lock:
        stats = engine.stats
        refused, runs = dict(stats.refused), dict(stats.runs)
        durations = list(stats.durations)
        counters = (stats.received, stats.deduplicated, stats.tool_calls, stats.cost_usd,
                    stats.forward_failures)
    gauges = engine.gauges()
    received, deduplicated, tool_calls, cost, forward_failures = counters
    lines = []

    def metric(name, kind, help_text, samples):
        lines.extend([f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"])
        lines.extend(f"{name}{labels} {value}" for labels, value in samples)

    metric("triage_alerts_received_total", "counter", "Firing alerts received.",
           [("", received)])
    metric("triage_alerts_deduplicated_total", "counter",
           "Alerts that started no run: already queued, running or recently triaged.",
           [("", deduplicated)])
    metric("triage_alerts_refused_total", "counter", "Alerts or payloads refused, by reason.",
           [(f'{{reason="{k}"}}', v) for k, v in sorted(refused.items())] or [("", 0)])
    metric("triage_runs_total", "counter", "Finished runs by stop.",
           [(f'{{stop="{k}"}}', v) for k, v in sorted(runs.items())] or [("", 0)])
    metric("triage_tool_calls_total", "counter", "Tool calls made by finished runs.",
           [("", tool_calls)])
    metric("triage_cost_usd_total", "counter", "Model cost of finished runs in USD.",
           [("", round(cost, 6))])
    metric("triage_forward_failures_total", "counter", "Outcomes that could not be forwarded.",
           [("", forward_failures)])
    metric("triage_queue_depth", "gauge", "Alerts and follow-up questions waiting for a worker.",
           [("", gauges["queue_depth"])])
    metric("triage_runs_running", "gauge", "Runs (and follow-ups) in progress.",
           [("", gauges["running"])])
    buckets = [(f'{{le="{b}"}}', sum(d <= b for d in durations)) for b in BUCKETS]
    metric("triage_run_duration_seconds", "histogram", "Wall time of finished runs.",
           buckets + [('{le="+Inf"}', len(durations))])
    lines[-len(BUCKETS) - 1:] = [line.replace("triage_run_duration_seconds{",
                                              "triage_run_duration_seconds_bucket{")
                                 for line in lines[-len(BUCKETS) - 1:]]
    lines += [f"triage_run_duration_seconds_sum {round(sum(durations), 3)}",
              f"triage_run_duration_seconds_count {len(durations)}"]
    if approvals is not None:
        metric("triage_approvals_pending", "gauge", "Approvals waiting for an operator.",
               [("", approvals.pending_count())])
        metric("triage_approvals_total", "counter", "Approval outcomes since serve started.",
               [(f'{{outcome="{k}"}}', v) for k, v in sorted(approvals.counts.items())])
    if questions is not None:
        metric("triage_followups_total", "counter", "Follow-up questions that entered each "
               "state since serve started.",
               [(f'{{state="{k}"}}', v) for k, v in questions.counts.items()])
    if slack is not None:
        metric("triage_slack_failures_total", "counter", "Slack Web API calls that failed "
               "(each try, and each call dropped from a full queue).", [("", slack.failures)])
    return "\n".join(lines) + "\n"


class _Server(ThreadingHTTPServer):
    # Alertmanager and its retries can open many connections at once; the default backlog of 5
    # resets the rest (seen with a burst of 40 concurrent posts)
    request_queue_size = 128


def make_server(service, host, port):
    """A threaded HTTP server bound to host:port (0 picks a free port); not yet serving."""
    server = _Server((host, port), Handler)
    server.daemon_threads = True
    server.service = service
    return server
