"""The watch after serve ran an approved action: the real serve, its replayed run proposing
`rollout_undo deployment/checkout`, an operator's approval through the API, real kubectl, and
kube_sim bringing the previous revision's pods up after a short delay. The verification lands in
the approval, its run's audit log, the outcome file and the forwarded update."""

import json

from tests.e2e.test_approvals import (TOKENS, WEBHOOK, api, audit, start, until,
                                      wait_for_outcome, writes)
from tests.agent.serve.test_serve import PAYLOAD, Target, post
from triage_agent.serve import pages


def test_an_approval_executed_from_the_api_is_watched_and_its_verification_forwarded(
        kube_sim, tmp_path):
    sim = kube_sim("crashloop", pod_start_delay=0.3)
    target = Target(200)
    service = start(sim, tmp_path, "--execute", "--forward", target.url, "--verify-quiet", "0")
    try:
        status, _, body = post(service.url, PAYLOAD,
                               headers={"Authorization": f"Bearer {WEBHOOK}"})
        assert status == 202, body
        run_id = body["queued"][0]["run_id"]
        wait_for_outcome(service.outbox, run_id)
        [approval] = api(service.url, "/api/approvals")[1]["approvals"]
        assert approval["seen"] == ["checkout-6f8d9c7b5d-m4q9z", "checkout-6f8d9c7b5d-x7k2p"]
        status, done = api(service.url, f"/api/approvals/{approval['id']}", token=TOKENS["bob"],
                           body={"decision": "approve", "argv_sha256": approval["argv_sha256"]})
        assert status == 200 and done["state"] == "executed", done
        assert done["verification"] is None           # the answer does not wait for the watch
        assert [e["verb"] for e in writes(sim)] == ["PATCH"]

        def verified():
            return api(service.url, f"/api/approvals/{approval['id']}")[1]["verification"]
        assert until(verified)
        found = verified()
        assert found["state"] == "recovered", found
        assert found["observed"][0] == "2/2 pods of ReplicaSet checkout-5c4b8d7f9b Ready"
        def outcome_file():   # rewritten just after the approval (changed, outcomes.py)
            return json.loads((service.outbox / f"{run_id}.json").read_text())
        assert until(lambda: outcome_file()["outcome"]["actions_taken"]["executed"][0][
            "verification"] == found)
        doc = outcome_file()
        [executed] = doc["outcome"]["actions_taken"]["executed"]
        assert executed["approval_id"] == approval["id"]
        assert doc["approvals"][0]["verification"] == found
        assert until(lambda: any((d["outcome"]["actions_taken"].get("executed") or [{}])[0].get(
            "verification") == found for d in target.received))   # forwarded
        [entry] = [e for e in audit(service, {"run_id": run_id})
                   if e["decision"] == "approval_verification"]
        assert (entry["state"], entry["operator"]) == ("recovered", "bob")
        page = pages.run_page(doc, doc["approvals"], {}, operator="alice", csrf="c")  # the run page
        assert "verification: <b>recovered</b> after " in page
        assert "<li>2/2 pods of ReplicaSet checkout-5c4b8d7f9b Ready</li>" in page
    finally:
        service.stop()
        target.close()
    assert until(lambda: "verification of rollout_undo" in "".join(service.lines))
    said = "".join(service.lines)
    assert f"approval {approval['id']}: watching checkout: 2/2 Ready, 0 restarts" in said
    assert "verification of rollout_undo prod/checkout: recovered after" in said



def test_serve_stopping_mid_watch_ends_it_as_unknown_and_exits(kube_sim, tmp_path):
    sim = kube_sim("crashloop", pod_start_delay=3600)   # the rollback's pods never come up
    service = start(sim, tmp_path, "--execute")
    try:
        status, _, body = post(service.url, PAYLOAD,
                               headers={"Authorization": f"Bearer {WEBHOOK}"})
        run_id = body["queued"][0]["run_id"]
        wait_for_outcome(service.outbox, run_id)
        [approval] = api(service.url, "/api/approvals")[1]["approvals"]
        status, done = api(service.url, f"/api/approvals/{approval['id']}",
                           body={"decision": "approve", "argv_sha256": approval["argv_sha256"]})
        assert status == 200 and done["state"] == "executed", done
        assert until(lambda: "watching checkout: 0/2 Ready" in "".join(service.lines))
    finally:
        assert service.stop() == 0
    path = service.outbox / f"{run_id}.approval.{approval['id']}.json"
    found = json.loads(path.read_text())["verification"]
    assert found["state"] == "unknown" and found["observed"] == ["serve stopped while watching"]
    doc = json.loads((service.outbox / f"{run_id}.json").read_text())
    assert doc["outcome"]["actions_taken"]["executed"][0]["verification"] == found
