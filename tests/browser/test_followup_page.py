"""Asking a follow-up on the run page in a real browser (Debian's chromium over WebDriver),
against the real serve, its CLI children (the run, then `ask`), kubectl, kube_sim and the strict
fake Messages API. The operator logs in, types a question (with markup in it) into the run
page's form, which has no script and carries the session's CSRF token; the page reloads itself
until the answer is there, and shows question and answer as text. Run with `make
test-browser`."""

import json
import os

import pytest

from tests.agent.cli.test_cli import REPLAY, clean_env
from tests.agent.serve.test_serve import PAYLOAD, ServeProcess, post
from tests.e2e.test_approvals import TOKENS, WEBHOOK, operators_file, wait_for_outcome
from tests.support.fake_messages_api import FakeMessagesApi
from tests.support.webdriver import Browser

QUESTION = 'what about the other replica? <script>window.pwned=1</script>'

pytestmark = [
    pytest.mark.skipif(not os.environ.get("TRIAGE_BROWSER_TESTS"),
                       reason="a browser test: make test-browser runs it"),
    pytest.mark.skipif(Browser.available() is not None, reason=str(Browser.available())),
    pytest.mark.slow(reason="starts chromium, serve, a triage run and a follow-up")]


def responses(name):
    return json.loads((REPLAY / f"{name}.json").read_text())["responses"]


def test_an_operator_asks_on_the_run_page_and_sees_the_answer(kube_sim, tmp_path):
    sim = kube_sim("crashloop")
    (tmp_path / "webhook").write_text(WEBHOOK)
    outbox = tmp_path / "outbox"
    script = responses("crashloop") + responses("followup-other-replica")
    with FakeMessagesApi(script) as fake:
        service = ServeProcess("--namespaces", "prod", "--workers", "1", "--outbox",
                               str(outbox), "--base-url", fake.url, "--no-stream",
                               "--kubeconfig", sim.kubeconfig, "--operators",
                               str(operators_file(tmp_path)), "--token-file",
                               str(tmp_path / "webhook"),
                               env=dict(clean_env(), ANTHROPIC_API_KEY="sk-test"))
        try:
            status, _, body = post(service.url, PAYLOAD,
                                   headers={"Authorization": f"Bearer {WEBHOOK}"})
            run_id = body["queued"][0]["run_id"]
            wait_for_outcome(outbox, run_id)
            with Browser.start() as browser:
                ask_on_the_page(browser, f"{service.url}/runs/{run_id}")
        finally:
            assert service.stop() == 0, "".join(service.lines)
    [question] = [json.loads(p.read_text()) for p in outbox.glob("*.question.*.json")]
    assert question["state"] == "answered" and question["asked_by"] == "alice"


def ask_on_the_page(browser, run_page):
    browser.get(run_page)
    browser.find("input[name=token]").type(TOKENS["alice"])
    browser.find("button[type=submit]").click()
    assert browser.wait_url(run_page) == run_page
    assert browser.find_all("form[action$='/questions'] input[name=csrf]")
    browser.find("textarea#question").type(QUESTION)
    browser.find("button#ask").click()
    assert browser.wait_text(".question .state", "answered", timeout=60)  # it reloads itself
    shown = browser.find(".question").text()
    assert QUESTION in shown and "checkout-6f8d9c7b5d-m4q9z" in shown
    assert "FATAL: required environment variable PAYMENT_API_URL is not set" in shown
    assert browser.find_all(".question script") == []
    assert browser.script("return window.pwned === undefined") is True
    assert browser.find_all("textarea#question")   # the form is back for the next question
