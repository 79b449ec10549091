"""Approvals end to end: the real serve (a subprocess), the real CLI child, the replayed model
that proposes `rollout_undo deployment/checkout`, real kubectl and kube_sim. One approval reaches
the simulated cluster as exactly one write, even when two operators approve at the same moment;
its outcome file and the forwarded payload are updated; a restarted serve takes up pending
approvals and never runs one it found executing."""

import hashlib
import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.agent.cli.test_cli import REPLAY
from tests.agent.serve.test_serve import PAYLOAD, ServeProcess, Target, post
from triage_agent.serve import approvals, runs

TOKENS = {"alice": "alice-token-" + "a" * 20, "bob": "bob-token-" + "b" * 20}
WEBHOOK = "webhook-token-" + "w" * 20


def operators_file(tmp_path):
    path = tmp_path / "operators"
    path.write_text("# NAME SHA256(token)\n" + "".join(
        f"{name} {hashlib.sha256(token.encode()).hexdigest()}\n"
        for name, token in TOKENS.items()))
    return path


def api(url, path, *, token=TOKENS["alice"], body=None):
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url + path, method="POST" if body is not None else "GET",
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def start(sim, tmp_path, *extra, replay=REPLAY / "crashloop-undo.json"):
    (tmp_path / "webhook").write_text(WEBHOOK)
    service = ServeProcess("--namespaces", "prod", "--workers", "1", "--outbox",
                           str(tmp_path / "outbox"), "--replay",
                           str(replay), "--kubeconfig", sim.kubeconfig,
                           "--allow-action", "rollout_undo", "--operators",
                           str(operators_file(tmp_path)), "--token-file",
                           str(tmp_path / "webhook"), *extra)
    service.outbox = tmp_path / "outbox"
    return service


def wait_for_outcome(outbox, run_id):
    while not (outbox / f"{run_id}.json").exists():
        threading.Event().wait(0.02)
    return json.loads((outbox / f"{run_id}.json").read_text())


def until(predicate, timeout=30.0):
    """True once predicate() is (checked every 20 ms), False after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        threading.Event().wait(0.02)
    return True


def writes(sim):
    return [e for e in sim.journal_entries() if "checkout" in e["path"]]


@pytest.fixture
def pending(kube_sim, tmp_path):
    """(serve, sim, run id, outcome, approval) once the replayed run has handed one over."""
    sim = kube_sim("crashloop")
    target = Target(200)
    # no watch after the approval here: its updates are tests/e2e/test_approval_watch.py's
    service = start(sim, tmp_path, "--execute", "--forward", target.url, "--verify-timeout", "0")
    try:
        status, _, body = post(service.url, PAYLOAD,
                               headers={"Authorization": f"Bearer {WEBHOOK}"})
        assert status == 202, body
        run_id = body["queued"][0]["run_id"]
        outcome = wait_for_outcome(tmp_path / "outbox", run_id)
        status, listing = api(service.url, "/api/approvals")
        assert status == 200 and len(listing["approvals"]) == 1, listing
        yield service, sim, target, outcome, listing["approvals"][0]
    finally:
        service.stop()
        target.close()


def test_a_proposal_waits_for_an_operator_and_refusals_change_nothing(pending):
    service, sim, target, outcome, approval = pending
    assert approval["state"] == "pending" and approval["kind"] == "rollout_undo"
    assert approval["argv_sha256"] == hashlib.sha256(
        json.dumps(approval["argv"]).encode()).hexdigest()
    assert approval["approval_url"] == f"{service.url}/approvals/{approval['id']}"
    assert approval["summary"] == outcome["outcome"]["report"]["summary"]
    assert approval["evidence"] and approval["evidence"][0]["source"]["tool"]
    [proposal] = outcome["outcome"]["proposals"]
    assert proposal["decision"] == "pending_approval" and approval["id"] in proposal["note"]
    [waiting] = outcome["outcome"]["actions_taken"]["pending_approval"]
    assert waiting["approval_url"] == approval["approval_url"]
    assert outcome["approvals"][0]["approval_url"] == approval["approval_url"]
    assert until(lambda: target.received)
    assert target.received[0]["approvals"][0]["state"] == "pending"
    assert writes(sim) == []  # nothing has run
    refusals_change_nothing(service, sim, outcome, approval)


def test_one_approval_is_exactly_one_write_even_when_two_operators_approve_at_once(pending):
    service, sim, target, outcome, approval = pending
    body = {"decision": "approve", "argv_sha256": approval["argv_sha256"]}
    results = []
    threads = [threading.Thread(target=lambda t=token: results.append(
        api(service.url, f"/api/approvals/{approval['id']}", token=t, body=body)))
        for token in TOKENS.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses = sorted(status for status, _ in results)
    assert statuses == [200, 409], results
    done = next(answer for status, answer in results if status == 200)
    assert done["state"] == "executed" and done["exit_code"] == 0
    [write] = writes(sim)
    assert write["verb"] == "PATCH" and write["path"].endswith("/deployments/checkout")
    run_id = outcome["run_id"]
    updated = json.loads((service.outbox / f"{run_id}.json").read_text())
    [executed] = updated["outcome"]["actions_taken"]["executed"]
    assert executed["approval_id"] == approval["id"] and executed["decided_by"] == done[
        "decided_by"]
    assert updated["outcome"]["actions_taken"].get("pending_approval") == []
    assert until(lambda: [d["approvals"][0]["state"] for d in target.received][-1:] == [
        "executed"])  # the forwarder posts from its own thread
    decisions = [(e["decision"], e.get("operator")) for e in audit(service, outcome)
                 if e.get("approval_id") == approval["id"]]
    assert decisions == [("approval_approved", done["decided_by"]),
                         ("approval_executed", done["decided_by"])]
    assert api(service.url, f"/api/approvals/{approval['id']}", body=body)[0] == 409  # replay
    assert len(writes(sim)) == 1


REFUSALS = [(None, {"decision": "approve"}, 401), ("not-a-token", {"decision": "approve"}, 401),
            (WEBHOOK, {"decision": "approve"}, 403),
            (TOKENS["bob"], {"decision": "approve", "argv_sha256": "0" * 64}, 409),
            (TOKENS["bob"], {"argv_sha256": "x"}, 400), (TOKENS["bob"], {"decision": "yes"}, 400)]


def refusals_change_nothing(service, sim, outcome, approval):
    path = f"/api/approvals/{approval['id']}"
    for token, body, status in REFUSALS:
        answer = api(service.url, path, token=token, body=body)
        assert answer[0] == status and "error" in answer[1], (token, body, answer)
        assert api(service.url, path)[1]["state"] == "pending"
    assert api(service.url, "/api/approvals", token=WEBHOOK)[0] == 403
    assert api(service.url, "/api/approvals/ap-0123456789abcdef", body={
        "decision": "approve", "argv_sha256": approval["argv_sha256"]})[0] == 404
    status, _, body = post(service.url, PAYLOAD,  # an operator token never posts alerts
                           headers={"Authorization": f"Bearer {TOKENS['alice']}"})
    assert status == 401 and "error" in body
    assert writes(sim) == [] and all(e.get("operator") is None for e in audit(service, outcome))


def audit(service, outcome):
    path = service.outbox / f"{outcome['run_id']}.audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_restarted_serve_takes_up_pending_and_never_reruns_executing(kube_sim, tmp_path):
    sim = kube_sim("crashloop")
    outbox = tmp_path / "outbox"
    outbox.mkdir()
    run_id = "r-20261201T120000-0a1b2c3d"
    from triage_agent import actions
    ids = []
    for target in ("checkout", "checkout-canary"):
        proposal = actions.Proposal("rollout_undo", "prod", target, "bad image")
        proposal.argv = actions.build_argv("rollout_undo", "prod", target,
                                           kubeconfig=sim.kubeconfig)
        note = approvals.handoff(outbox / run_id, ttl=900)(proposal)
        ids.append(note.split("approval ")[1].split(")")[0])
    stuck = outbox / f"{run_id}.approval.{ids[1]}.json"
    runs.write_atomically(stuck, dict(json.loads(stuck.read_text()), state="executing"))
    # what follows an executed approval is test_approval_watch's: here the restart alone
    service = start(sim, tmp_path, "--execute", "--verify-timeout", "0")
    try:
        status, record = api(service.url, f"/api/approvals/{ids[1]}")
        assert record["state"] == "unknown" and "check the cluster" in record["note"]
        body = {"decision": "approve", "argv_sha256": record["argv_sha256"]}
        assert api(service.url, f"/api/approvals/{ids[1]}", body=body)[0] == 409
        status, record = api(service.url, f"/api/approvals/{ids[0]}")
        assert record["state"] == "pending"
        status, done = api(service.url, f"/api/approvals/{ids[0]}", body={
            "decision": "approve", "argv_sha256": record["argv_sha256"]})
        assert status == 200 and done["state"] == "executed", done
        assert len(writes(sim)) == 1
        metrics = urllib.request.urlopen(service.url + "/metrics", timeout=10).read().decode()
        assert 'triage_approvals_total{outcome="executed"} 1' in metrics
        assert "triage_approvals_pending 0" in metrics
    finally:
        service.stop()
