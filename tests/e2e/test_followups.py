"""Follow-ups under serve, end to end: the real serve, its CLI children (the run, then `ask`),
the real MCP server, kubectl and kube_sim, and the strict fake Messages API answering both. A
question is asked through the API and each refusal the issue names is proven; the follow-up's
first request is the stored conversation plus the question, and the fake would have answered a
broken conversation with 400."""

import json
import os
import stat

import pytest

from tests.agent.cli.test_cli import REPLAY, clean_env
from tests.e2e.test_approvals import TOKENS, WEBHOOK, api, operators_file, until
from tests.agent.serve.test_serve import PAYLOAD, ServeProcess, post
from tests.support.fake_messages_api import FakeMessagesApi
from triage_agent.serve import runs

QUESTION = "what about the other replica?"


def script(followup="followup-other-replica"):
    """The replayed run's responses, then the follow-up's."""
    run = json.loads((REPLAY / "crashloop.json").read_text())["responses"]
    return run + json.loads((REPLAY / f"{followup}.json").read_text())["responses"]


@pytest.fixture
def served(kube_sim, tmp_path):
    """(serve, fake API, outbox, run id) once the run has ended."""
    yield from serve_a_run(kube_sim("crashloop"), tmp_path, script())


def serve_a_run(sim, tmp_path, responses, *extra):
    (tmp_path / "webhook").write_text(WEBHOOK)
    outbox = tmp_path / "outbox"
    with FakeMessagesApi(responses) as fake:
        env = dict(clean_env(), ANTHROPIC_API_KEY="sk-test-key")
        service = ServeProcess("--namespaces", "prod", "--workers", "1", "--outbox",
                               str(outbox), "--base-url", fake.url, "--no-stream",
                               "--kubeconfig", sim.kubeconfig, "--operators",
                               str(operators_file(tmp_path)), "--token-file",
                               str(tmp_path / "webhook"), "--max-followups", "2", *extra,
                               env=env)
        try:
            status, _, body = post(service.url, PAYLOAD,
                                   headers={"Authorization": f"Bearer {WEBHOOK}"})
            assert status == 202, body
            run_id = body["queued"][0]["run_id"]
            assert until(lambda: (outbox / f"{run_id}.json").exists())
            yield service, fake, outbox, run_id
        finally:
            assert service.stop() == 0, "".join(service.lines)


def questions(service, run_id, qid="", **kwargs):
    return api(service.url, f"/api/runs/{run_id}/questions" + (f"/{qid}" if qid else ""),
               **kwargs)


def test_a_question_is_answered_through_the_api(served):
    service, fake, outbox, run_id = served
    session = outbox / f"{run_id}.session.json"
    assert stat.S_IMODE(os.stat(session).st_mode) == 0o600
    stored = json.loads(session.read_text())["conversation"]["messages"]
    status, asked = questions(service, run_id, body={"question": QUESTION})
    assert status == 202 and asked["state"] == "queued" and asked["asked_by"] == "alice"
    again = questions(service, run_id, body={"question": "and the database?"})
    assert again[0] == 409 and "still queued or running" in again[1]["error"]
    assert until(lambda: questions(service, run_id, asked["id"])[1]["state"] == "answered")
    record = questions(service, run_id, asked["id"])[1]
    assert "checkout-6f8d9c7b5d-m4q9z" in record["answer"] and record["followup"] == 1
    assert [e["tool_use_id"] for e in record["evidence"]] == ["toolu_f1logs", "toolu_02logs"]
    assert record["grounding_warnings"] == [] and record["report_changed"] is False
    first = fake.requests[4]["body"]["messages"]     # the follow-up's first request
    assert first[:-1] == stored[:-1]
    last = first[-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert last[0]["tool_use_id"] == "toolu_07report" and QUESTION in last[1]["text"]
    assert [q["id"] for q in questions(service, run_id)[1]["questions"]] == [asked["id"]]
    metrics = api_text(service.url + "/metrics")
    assert 'triage_followups_total{state="answered"} 1' in metrics
    audit = [json.loads(line) for line in (outbox / f"{run_id}.audit.jsonl").read_text()
             .splitlines()]
    assert [e["decision"] for e in audit if e.get("followup") == 1] == [
        "executed", "answer_accepted"]


def api_text(url):
    import urllib.request
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def test_each_refusal_changes_nothing(served, tmp_path):
    service, fake, outbox, run_id = served
    path = f"/api/runs/{run_id}/questions"
    body = {"question": QUESTION}
    assert api(service.url, path, token=None, body=body)[0] == 401
    assert api(service.url, path, token="not-an-operator", body=body)[0] == 401
    assert api(service.url, path, token=WEBHOOK, body=body)[0] == 403
    unknown = runs.new_run_id()
    assert questions(service, unknown, body=body)[0] == 404
    assert questions(service, unknown)[0] == 404
    assert questions(service, run_id, "q-0123456789abcdef")[0] == 404
    assert questions(service, run_id, body={"question": "  "})[0] == 400
    assert questions(service, run_id, body={"question": "x" * 2001})[0] == 400
    no_session = runs.new_run_id()   # a run whose conversation was never kept
    (outbox / f"{no_session}.json").write_text(json.dumps({"run_id": no_session,
                                                           "status": "failed"}))
    status, answer = questions(service, no_session, body=body)
    assert status == 409 and "no session" in answer["error"]
    assert list(outbox.glob("*.question.*.json")) == [] and len(fake.requests) == 4


def test_a_follow_up_s_proposal_waits_for_an_operator_like_the_run_s(kube_sim, tmp_path):
    sim = kube_sim("crashloop")
    served = serve_a_run(sim, tmp_path, script("followup-propose"), "--allow-action",
                         "rollout_undo", "--execute")
    service, fake, outbox, run_id = next(served)
    try:
        status, asked = questions(service, run_id, body={"question": "should we roll back?"})
        assert status == 202
        assert until(lambda: questions(service, run_id, asked["id"])[1]["state"] == "answered")
        [approval] = api(service.url, "/api/approvals")[1]["approvals"]
        assert approval["run_id"] == run_id and approval["state"] == "pending"
        assert approval["command"].endswith("rollout undo deployment/checkout -n prod")
        assert approval["summary"].startswith("follow-up 1: A rollback")
        assert sim.journal_entries() == []        # nothing ran: an operator decides
    finally:
        next(served, None)
