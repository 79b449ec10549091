"""The approval page in a real browser (Debian's chromium, driven over WebDriver by
tests/support/webdriver.py), against the real serve, the real CLI child, kubectl and kube_sim.

The crashloop cluster's failing pod logs carry a planted `<script>` and an attribute-breaking
quote, and the replayed report quotes that line as evidence. The operator logs in, opens the
pending approval from the run page, sees the evidence (the planted markup as inert text) and the
exact command; a form posted from another site without the CSRF token is refused; Approve makes
the simulated cluster receive exactly that one write. Run with `make test-browser` (it installs
chromium and chromium-driver when missing); TRIAGE_SCREENSHOT=PATH also saves the approval
page's screenshot there (docs/approvals.png was made so).
"""

import json
import os
import shlex
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fixtures.http_thread import ServerThread
from tests.agent.cli.test_cli import REPLAY, ROOT
from tests.agent.serve.test_serve import PAYLOAD, post
from tests.e2e.test_approvals import TOKENS, WEBHOOK, api, start, wait_for_outcome, writes
from tests.support.webdriver import Browser

PLANTED = ('FATAL: <script>document.title="pwned";window.pwned=1</script> '
           '"><img src=x onerror="window.pwned=2"> PAYMENT_API_URL is not set')
POD = "prod/checkout-6f8d9c7b5d-x7k2p/checkout"

pytestmark = [
    pytest.mark.skipif(not os.environ.get("TRIAGE_BROWSER_TESTS"),
                       reason="a browser test: make test-browser runs it"),
    pytest.mark.skipif(Browser.available() is not None, reason=str(Browser.available())),
    pytest.mark.slow(reason="starts chromium, serve, a triage run, kubectl and kube_sim")]


def planted_fixtures(tmp_path):
    """(cluster file, replay file): crashloop with the planted line, a replay quoting it."""
    cluster = json.loads((ROOT / "fixtures" / "clusters" / "crashloop.json").read_text())
    cluster["logs"][POD]["previous"].append(PLANTED)
    replay = json.loads((REPLAY / "crashloop-undo.json").read_text())
    for message in replay["responses"]:
        for block in message["content"]:
            if block.get("name") == "write_report":
                for item in block["input"]["evidence"]:
                    if item["tool_use_id"] == "toolu_02logs":
                        item["quote"] = PLANTED
    paths = tmp_path / "planted-cluster.json", tmp_path / "planted-replay.json"
    for path, doc in zip(paths, (cluster, replay)):
        path.write_text(json.dumps(doc))
    return paths


class CrossSite:
    """Another site (another port): a page whose form posts a decision to serve, no CSRF."""

    def __init__(self, action, digest):
        page = (f'<!doctype html><form method="post" action="{action}">'
                '<input type="hidden" name="decision" value="approve">'
                f'<input type="hidden" name="argv_sha256" value="{digest}">'
                '<button id="go" type="submit">win a prize</button></form>').encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{server.server_address[1]}/"
        self.serving = ServerThread(server).start()

    def close(self):
        self.serving.stop()


def test_an_operator_approves_in_a_browser_and_the_cluster_gets_exactly_that_write(
        kube_sim, tmp_path):
    cluster, replay = planted_fixtures(tmp_path)
    sim = kube_sim(str(cluster))
    service = start(sim, tmp_path, "--execute", replay=replay)
    try:
        status, _, body = post(service.url, PAYLOAD, headers={
            "Authorization": f"Bearer {WEBHOOK}"})
        run_id = body["queued"][0]["run_id"]
        wait_for_outcome(service.outbox, run_id)
        [approval] = api(service.url, "/api/approvals")[1]["approvals"]
        with Browser.start() as browser:
            walk_through(browser, service, run_id, approval, tmp_path)
        [write] = writes(sim)
        assert write["verb"] == "PATCH" and write["path"].endswith("/deployments/checkout")
        assert api(service.url, f"/api/approvals/{approval['id']}")[1]["state"] == "executed"
    finally:
        service.stop()


def walk_through(browser, service, run_id, approval, tmp_path):
    browser.get(f"{service.url}/runs/{run_id}")
    assert "/login" in browser.url()                   # no session: the login form first
    browser.find("input[name=token]").type(TOKENS["alice"])
    browser.find("button[type=submit]").click()
    run_page = f"{service.url}/runs/{run_id}"
    assert browser.wait_url(run_page) == run_page      # logged in, sent back where it began
    [cookie] = browser.cookies()
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert PLANTED in browser.find("body").text()      # the run page shows it as text
    browser.find(f"a[href='/approvals/{approval['id']}']").click()
    assert browser.wait_url(approval["approval_url"]) == approval["approval_url"]
    assert browser.find("#command").text() == shlex.join(approval["argv"])
    evidence = browser.find("#evidence").text()
    assert PLANTED in evidence and "PAYMENT_API_URL" in evidence
    assert browser.find_all("#evidence script") == [] and browser.find_all("#evidence img") == []
    assert browser.script("return window.pwned === undefined") is True
    assert browser.title() != "pwned"
    if os.environ.get("TRIAGE_SCREENSHOT"):
        browser.screenshot(os.environ["TRIAGE_SCREENSHOT"])
    browser.screenshot(tmp_path / "approval.png")
    cross_site_post_is_refused(browser, service, approval)
    browser.get(approval["approval_url"])
    browser.find("button#approve").click()
    assert browser.wait_text(".state", "executed")  # kubectl ran, then the page came back
    assert browser.url() == approval["approval_url"]


def cross_site_post_is_refused(browser, service, approval):
    attacker = CrossSite(approval["approval_url"], approval["argv_sha256"])
    try:
        browser.get(attacker.url)
        browser.find("#go").click()
        assert browser.wait_text("body", "CSRF token is missing or wrong")
    finally:
        attacker.close()
    assert api(service.url, f"/api/approvals/{approval['id']}")[1]["state"] == "pending"
