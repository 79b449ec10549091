"""The approvals API and the operator's pages over real HTTP, in-process: the engine and HTTP
server on 127.0.0.1:0, an approvals store on an injected clock, a scripted runner that hands one
proposal over the way the CLI child does (approvals.handoff) and ends with a report whose
evidence quotes a planted `<script>`. Login, cookie, CSRF, Origin, escaping, headers, expiry and
the outcome's rewrite and forward are checked here; tests/browser drives the same pages in
chromium and tests/e2e runs the real serve."""

import hashlib
import http.client
import json
import re
import urllib.parse

import pytest

from fixtures.http_thread import ServerThread
from tests.agent.serve.test_serve import alert, webhook
from tests.agent.serve.test_approvals import Clock, Runner, proposal
from triage_agent.serve import approvals, endpoints, outcomes, runs, sessions

PLANTED = '<script>alert(1)</script> "><img src=x onerror=alert(2)>'
TOKEN, WEBHOOK = "alice-secret-token", "webhook-secret-token"
VERIFICATION = {"claims": {"checked": 4, "unsupported": [
                    {"kind": "size", "token": "512Mi", "where": "summary", "sentence": PLANTED}]},
                "blind_spots": ["namespace kube-system is named in a get_logs result but is out "
                                "of scope: not read"],
                "review": {"verdict": "partly_supported", "claims": [
                    {"claim": PLANTED, "status": "contradicted", "note": "n"}],
                    "alternatives": [], "actions_follow": True},
                "reviewed": True, "not_reviewed_because": "", "confidence": "medium",
                "confidence_note": "lowered from high: 1 of 4 claims not found in the evidence"}


class HandingRunner:
    """A run that hands one proposal over and reports, as the CLI child under serve would."""

    def __init__(self, outbox, clock):
        self.outbox, self.clock = outbox, clock

    def __call__(self, job, register):
        p = proposal()
        note = approvals.handoff(self.outbox / job.run_id, alert={"alerts": [
            {"alertname": "KubePodCrashLooping", "fingerprint": "f1", "generatorURL": ""}]},
            ttl=60, clock=self.clock)(p)
        report = {"summary": "checkout crash-loops " + PLANTED, "severity": "high",
                  "evidence": [{"tool_use_id": "toolu_1", "quote": PLANTED,
                                "interpretation": "planted"}],
                  "hypothesis": "h", "next_checks": [], "proposed_actions": []}
        return 0, {"stop": "report", "tool_calls": 1, "cost_usd": 0.01, "report": report,
                   "proposals": [dict(p.to_dict(), decision="pending_approval", note=note)],
                   "verification": VERIFICATION}, None


@pytest.fixture
def site(tmp_path):
    clock, outbox, forwarded = Clock(), tmp_path / "outbox", []
    engine = runs.Engine(runner=HandingRunner(outbox, clock), outbox=outbox)
    writer = outcomes.OutcomeWriter(outbox, write=runs.write_atomically, forward=forwarded.append)
    writer.store = approvals.Store(outbox, clock=clock, runner=Runner(), execute=True,
                                   changed=writer.changed)
    engine.write_outcome = writer.finish
    operators = sessions.Operators({"alice": hashlib.sha256(TOKEN.encode()).hexdigest()})
    service = endpoints.Service(engine.start(), ceiling=("prod",), token=WEBHOOK,
                                approvals=writer.store, operators=operators,
                                sessions=sessions.Sessions(clock=clock))
    server = endpoints.make_server(service, "127.0.0.1", 0)
    service.base_url = writer.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    serving = ServerThread(server).start()
    status, _, _ = request(service, "POST", "/alertmanager", json.dumps(webhook(alert("f1"))),
                           {"Authorization": f"Bearer {WEBHOOK}"})
    assert status == 202 and engine.wait_idle(10)
    [record] = writer.store.list()
    yield service, record, clock, forwarded
    engine.drain(5)
    serving.stop()


def request(service, method, path, body=None, headers=None):
    """(status, headers, text) without following redirects."""
    host = service.base_url.split("//")[1]
    conn = http.client.HTTPConnection(host, timeout=10)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    answer = response.status, {k.lower(): v for k, v in response.getheaders()}, \
        response.read().decode()
    conn.close()
    return answer


def form(fields):
    return urllib.parse.urlencode(fields), {"Content-Type": "application/x-www-form-urlencoded"}


def login(service, token=TOKEN):
    body, headers = form({"token": token, "next": "/"})
    return request(service, "POST", "/login", body, headers)


def session(service):
    status, headers, _ = login(service)
    assert status == 303
    cookie = headers["set-cookie"]
    sid = cookie.split(";")[0]
    status, _, page = request(service, "GET", "/", headers={"Cookie": sid})
    return sid, re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def test_login_sets_a_strict_http_only_expiring_cookie_and_the_webhook_token_is_refused(site):
    service, record, clock, _ = site
    status, headers, _ = login(service)
    cookie = headers["set-cookie"]
    assert status == 303 and headers["location"] == "/"
    assert all(part in cookie for part in ("HttpOnly", "SameSite=Strict", "Max-Age=", "Path=/"))
    assert "Secure" not in cookie  # plain http here; over TLS the cookie is Secure
    body, form_headers = form({"token": TOKEN})
    status, headers, _ = request(service, "POST", "/login", body,
                                 {**form_headers, "X-Forwarded-Proto": "https"})
    assert status == 303 and "; Secure" in headers["set-cookie"]
    assert login(service, WEBHOOK)[0] == 403 and login(service, "nobody")[0] == 401
    clock.now += sessions.SESSION_SECONDS + 1   # the session expires
    sid = cookie.split(";")[0]
    assert request(service, "GET", "/", headers={"Cookie": sid})[0] == 303


def test_pages_need_a_session_and_carry_the_security_headers(site):
    service, record, clock, _ = site
    for path in ("/", f"/approvals/{record['id']}", f"/runs/{record['run_id']}/audit"):
        status, headers, _ = request(service, "GET", path, headers={"Accept": "text/html"})
        assert status == 303 and headers["location"].startswith("/login?next=")
    sid, _ = session(service)
    status, headers, page = request(service, "GET", f"/approvals/{record['id']}",
                                    headers={"Cookie": sid})
    assert status == 200 and headers["x-content-type-options"] == "nosniff"
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert "script-src" not in csp and "unsafe-inline" not in csp and "http" not in csp
    assert "<script" not in page and "<img" not in page          # the planted markup is text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &quot;&gt;&lt;img" in page
    assert record["command"] in page.replace("&#x27;", "'") and "alice" in page
    assert "59 s left" not in page and "1 min 0 s left" in page
    status, headers, css = request(service, "GET", "/static/style.css")
    assert status == 200 and headers["content-type"].startswith("text/css")


def test_the_run_list_is_newest_first_also_within_one_second(site):
    """Run ids have a one-second time and a random suffix: alerts accepted in one second list
    by the millisecond they were received, then by arrival (issue 46)."""
    service, record, _, _ = site
    ids = []
    for i in range(8):   # one POST each, back to back: well within one second for most
        status, _, text = request(service, "POST", "/alertmanager",
                                  json.dumps(webhook(alert(f"order-{i}"))),
                                  {"Authorization": f"Bearer {WEBHOOK}"})
        assert status == 202, text
        ids += [entry["run_id"] for entry in json.loads(text)["queued"]]
    seconds = [run_id[:17] for run_id in ids]
    assert len(ids) == 8 and max(map(seconds.count, seconds)) >= 4   # ties of the id's second
    assert service.engine.wait_idle(10)
    sid, _ = session(service)
    status, _, page = request(service, "GET", "/", headers={"Cookie": sid})
    listed = re.findall(r'<a href="/runs/(r-[^"]+)">', page)
    assert status == 200 and listed == ids[::-1] + [record["run_id"]], (listed, ids)
    docs = [service.read_run(run_id) for run_id in ids]
    assert [doc["arrival"] for doc in docs] == sorted(doc["arrival"] for doc in docs)


def test_within_one_millisecond_arrival_decides_whatever_the_ids_random_part(tmp_path):
    """Outcome files whose random id suffixes sort against their arrival, all in one second and
    the last two in one millisecond; the list cut (limit) still sees the whole second."""
    outbox = tmp_path / "outbox"
    engine = runs.Engine(runner=None, outbox=outbox)
    service = endpoints.Service(engine, ceiling=("prod",))
    received = ["2026-12-07T20:00:00.120Z", "2026-12-07T20:00:00.480Z", "2026-12-07T20:00:00.480Z"]
    older = {"run_id": "r-20261207T195959-00000000", "received_at": "2026-12-07T19:59:59.999Z",
             "arrival": 9}   # arrival counts restart with the service: the time comes first
    for suffix, at, arrival in zip(("ffffffff", "80000000", "00000000"), received, (1, 2, 3)):
        doc = {"run_id": f"r-20261207T200000-{suffix}", "received_at": at, "arrival": arrival}
        runs.write_atomically(outbox / f"{doc['run_id']}.json", doc)
    runs.write_atomically(outbox / f"{older['run_id']}.json", older)
    listed = [doc["run_id"][-8:] for doc, _ in service.recent_runs()]
    assert listed == ["00000000", "80000000", "ffffffff", "00000000"]
    assert [doc["run_id"][-8:] for doc, _ in service.recent_runs(limit=1)] == ["00000000"]
    assert [doc["arrival"] for doc, _ in service.recent_runs(limit=3)] == [3, 2, 1]


def test_the_run_page_for_browsers_and_json_for_api_clients(site):
    service, record, clock, _ = site
    sid, _ = session(service)
    status, headers, page = request(service, "GET", f"/runs/{record['run_id']}",
                                    headers={"Cookie": sid, "Accept": "text/html"})
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert f'href="/approvals/{record["id"]}"' in page and "<script>" not in page
    assert f'href="/runs/{record["run_id"]}/audit"' in page
    # what the loop checked: its line first, the confidence after checking, the sections
    assert ('<p class="note" id="checked">Checked: 3 of 4 claims found in the evidence; review: '
            'partly supported (1 claim contradicted)</p>') in page
    assert "confidence medium, lowered from high: 1 of 4 claims not found" in page
    assert "<h2>Blind spots (what this run could not see)</h2>" in page
    assert "<h2>Claims the review flagged</h2>" in page and "[contradicted] &lt;script&gt;" in page
    status, headers, text = request(service, "GET", f"/runs/{record['run_id']}",
                                    headers={"Authorization": f"Bearer {WEBHOOK}"})
    doc = json.loads(text)
    assert doc["approvals"][0]["approval_url"] == f"{service.base_url}/approvals/{record['id']}"
    [waiting] = doc["outcome"]["actions_taken"]["pending_approval"]
    assert waiting["approval_id"] == record["id"]


@pytest.mark.parametrize("fields, headers, status", [
    ({}, {}, 403),                                                    # no CSRF token
    ({"csrf": "forged"}, {}, 403),                                    # a wrong one
    ({"csrf": None}, {"Origin": "http://evil.example"}, 403),         # right token, other origin
    ({"csrf": None, "argv_sha256": "0" * 64}, {}, 409),               # a digest not shown
])
def test_a_page_decision_without_its_proofs_changes_nothing(site, fields, headers, status):
    service, record, clock, _ = site
    sid, csrf = session(service)
    fields = {"decision": "approve", "argv_sha256": record["argv_sha256"],
              **{k: (csrf if v is None else v) for k, v in fields.items()}}
    body, form_headers = form(fields)
    answer = request(service, "POST", f"/approvals/{record['id']}", body,
                     {**form_headers, "Cookie": sid, **headers})
    assert answer[0] == status, answer[2][:500]
    assert service.approvals.get(record["id"])["state"] == "pending"
    assert service.approvals.runner.calls == []


def test_a_page_decision_with_its_csrf_token_runs_once_and_get_changes_nothing(site):
    service, record, clock, forwarded = site
    sid, csrf = session(service)
    path = f"/approvals/{record['id']}"
    for _ in range(2):  # GET never decides
        request(service, "GET", path + "?decision=approve", headers={"Cookie": sid})
    assert service.approvals.get(record["id"])["state"] == "pending"
    body, headers = form({"csrf": csrf, "decision": "approve",
                          "argv_sha256": record["argv_sha256"]})
    status, answer, _ = request(service, "POST", path, body, {**headers, "Cookie": sid,
                                                              "Origin": service.base_url})
    assert status == 303 and answer["location"] == path
    assert request(service, "POST", path, body, {**headers, "Cookie": sid})[0] == 409  # replay
    record = service.approvals.get(record["id"])
    assert record["state"] == "executed" and record["decided_by"] == "alice"
    assert len(service.approvals.runner.calls) == 1
    assert [d["approvals"][0]["state"] for d in forwarded] == ["pending", "executed"]
    # the forwarded outcome, rewritten at each change, keeps the run's verification
    assert all(d["outcome"]["verification"] == VERIFICATION for d in forwarded)
    body, headers = form({"csrf": csrf})
    assert request(service, "POST", "/logout", body, {**headers, "Cookie": sid})[0] == 303
    assert request(service, "GET", path, headers={"Cookie": sid})[0] == 303  # logged out


def test_expiry_on_the_injected_clock_through_the_api(site):
    service, record, clock, forwarded = site
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    clock.now += 61
    body = json.dumps({"decision": "approve", "argv_sha256": record["argv_sha256"]})
    status, _, text = request(service, "POST", f"/api/approvals/{record['id']}", body, auth)
    assert status == 410 and "expired" in json.loads(text)["error"]
    status, _, text = request(service, "GET", "/api/approvals", headers=auth)
    assert [a["state"] for a in json.loads(text)["approvals"]] == ["expired"]
    assert service.approvals.runner.calls == []
    assert forwarded[-1]["outcome"]["actions_taken"]["expired"][0]["approval_id"] == record["id"]
    metrics = endpoints.metrics_text(service.engine, service.approvals)
    assert 'triage_approvals_total{outcome="expired"} 1' in metrics
    assert "triage_approvals_pending 0" in metrics


@pytest.mark.parametrize("operators, extra, words", [
    (f"alice {hashlib.sha256(WEBHOOK.encode()).hexdigest()}\n", [], "webhook token is also"),
    ("alice nothex\n", [], "line 1: expected `NAME SHA256HEX`"),
    ("# nobody\n", [], "no operator in the file"),
    (f"a {'0' * 64} U0123ABCD\n", [], "is not slack:USERID"),
    (f"a {'0' * 64} slack:u0123abcd\n", [], "is not slack:USERID"),
    (f"a {'0' * 64} slack:U0123ABCD extra\n", [], "line 1: expected `NAME SHA256HEX`"),
    (f"a {'0' * 64} slack:U0123ABCD\nb {'1' * 64} slack:U0123ABCD\n", [],
     "Slack user U0123ABCD is already operator a"),
    (f"a {'0' * 64}\na {'1' * 64}\n", [], "named twice"),
    (f"a {'0' * 64}\n", ["--execute"], "--execute without --allow-action"),
    (f"a {'0' * 64}\n", ["--approval-ttl", "0"], "--approval-ttl must be more than 0"),
    (f"a {'0' * 64}\n", ["--public-url", "ftp://x"], "give an http(s) URL"),
])
def test_serve_options_for_approvals_that_cannot_work(tmp_path, operators, extra, words):
    from tests.agent.cli.test_cli import REPLAY
    from triage_agent.serve import service
    (tmp_path / "operators").write_text(operators)
    (tmp_path / "token").write_text(WEBHOOK)
    with pytest.raises(service.ServeUsageError) as err:
        service.parse(["--namespaces", "prod", "--operators", str(tmp_path / "operators"),
                       "--token-file", str(tmp_path / "token"), "--replay",
                       str(REPLAY / "crashloop.json"), *extra])
    assert words in str(err.value)
