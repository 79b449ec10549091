"""Pods a write made come up as time passes (fixtures/kube_sim/lifecycle.py), through real
kubectl: ContainerCreating for the pod start delay, then Ready, or crashing again (restart count
and BackOff events rising), or Pending as their template's pods were; the Deployment's status
follows its pods. The delays are a fraction of a second; each test waits for the state it
expects (kubectl polled), never for a fixed time."""

import json
import shutil
import time

import pytest

from fixtures.kube_sim import lifecycle
from fixtures.kube_sim.sim import main as sim_main
from fixtures.kube_sim.store import ClusterFileError, load_cluster
from tests.support.kubectl_tables import ok, rows

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


def until(check, timeout=15):
    """check() -> a true value, asked until it gives one (the test fails after `timeout` s)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            assert found, "the simulated cluster never got there"
            return found
        time.sleep(0.05)   # no event to wait on: the simulated pods change with the clock (lifecycle.py)


def pods(sim, selector):
    return json.loads(ok(sim, "get", "pods", "-n", "prod", "-l", selector, "-o", "json"))["items"]


def test_an_undo_starts_its_pods_after_the_delay_and_the_rollout_completes(kube_sim):
    sim = kube_sim("crashloop", pod_start_delay=3600)
    ok(sim, "rollout", "undo", "deployment/checkout", "-n", "prod")
    first = rows(ok(sim, "get", "pods", "-n", "prod", "-l", "app=checkout"))
    assert {r[2] for r in first} == {"ContainerCreating"}       # not ready before the delay
    assert "0 of 2 updated replicas are available" in ok(
        sim, "rollout", "status", "deployment/checkout", "-n", "prod", "--watch=false")
    sim.store.pod_start_delay = 0.2   # a setting of the running simulator: the delay is over
    until(lambda: all(r[1] == "1/1" and r[2] == "Running"
                      for r in rows(ok(sim, "get", "pods", "-n", "prod", "-l", "app=checkout"))))
    dep = json.loads(ok(sim, "get", "deploy", "checkout", "-n", "prod", "-o", "json"))
    assert {k: dep["status"][k] for k in ("replicas", "updatedReplicas", "readyReplicas",
                                          "availableReplicas")} == dict.fromkeys(
        ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"), 2)
    assert "unavailableReplicas" not in dep["status"]
    conditions = {c["type"]: c for c in dep["status"]["conditions"]}
    assert conditions["Available"]["status"] == "True"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert "successfully rolled out" in ok(sim, "rollout", "status", "deployment/checkout",
                                           "-n", "prod", "--watch=false")


def test_a_restart_of_a_broken_template_crashes_again_and_keeps_crashing(kube_sim):
    sim = kube_sim("crashloop", pod_start_delay=0.2)
    ok(sim, "rollout", "restart", "deployment/checkout", "-n", "prod")
    crashed = until(lambda: [p for p in pods(sim, "app=checkout")
                             if p["status"]["containerStatuses"][0]["restartCount"] >= 2])
    status = crashed[0]["status"]["containerStatuses"][0]
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["lastState"]["terminated"]["exitCode"] == 1 and not status["ready"]
    name = crashed[0]["metadata"]["name"]
    # the previous log is what the template's pods printed before they crashed
    assert "PAYMENT_API_URL" in ok(sim, "logs", name, "-n", "prod", "--previous")
    events = ok(sim, "get", "events", "-n", "prod", "--field-selector",
                f"involvedObject.name={name}")
    assert "BackOff" in events and "Back-off restarting failed container checkout" in events
    dep = json.loads(ok(sim, "get", "deploy", "checkout", "-n", "prod", "-o", "json"))
    assert dep["status"]["readyReplicas"] == 0 and dep["status"]["unavailableReplicas"] == 2
    assert {c["type"]: c["reason"] for c in dep["status"]["conditions"]}["Progressing"] == \
        "ReplicaSetUpdated"


def test_a_replacement_of_an_unschedulable_pod_is_unschedulable_too(kube_sim):
    sim = kube_sim("pending", pod_start_delay=0.2)
    gone = "reports-6d4c9f8b7d-z5k8w"
    ok(sim, "delete", "pod", gone, "-n", "prod")
    [new] = [p for p in pods(sim, "app=reports") if p["metadata"]["name"] not in
             (gone, "reports-6d4c9f8b7d-b3t6j")]
    assert new["status"]["phase"] == "Pending" and "nodeName" not in new["spec"]
    [cond] = [c for c in new["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert "Insufficient memory" in cond["message"]
    assert "FailedScheduling" in ok(sim, "get", "events", "-n", "prod", "--field-selector",
                                    f"involvedObject.name={new['metadata']['name']}")


def test_a_replacement_beside_healthy_siblings_comes_up_ready(kube_sim):
    sim = kube_sim("crashloop", pod_start_delay=0.2)
    ok(sim, "delete", "pod", "frontend-74b9c5d6f8-d4t6m", "-n", "prod")
    new = until(lambda: [p for p in pods(sim, "app=frontend")
                         if p["metadata"]["name"] not in ("frontend-74b9c5d6f8-7wlqb",
                                                          "frontend-74b9c5d6f8-lzbqm")
                         and p["status"]["phase"] == "Running"])
    assert new[0]["status"]["containerStatuses"][0]["ready"] is True


def test_the_fate_of_a_template_is_what_all_its_pods_show():
    crash = {"metadata": {"namespace": "prod", "name": "a"}, "status": {"containerStatuses": [
        {"name": "c", "ready": False, "restartCount": 3,
         "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}}
    well = {"metadata": {"namespace": "prod", "name": "b"}, "status": {
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0}]}}
    assert lifecycle.fate_of([crash, crash], {})["reason"] == "OOMKilled"
    assert lifecycle.fate_of([crash, well], {}) == {"kind": "ready"}   # one healthy: not the template
    assert lifecycle.fate_of([], {}) == {"kind": "ready"}


@pytest.mark.parametrize("value", [-1, "2", True, 10 ** 6])
def test_a_bad_pod_start_delay_in_a_cluster_file_is_refused(tmp_path, value):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"kind": "SimulatedCluster", "base": "healthy",
                                "referenceTime": "2026-11-29T12:00:00Z", "objects": [],
                                "podStartDelaySeconds": value}))
    with pytest.raises(ClusterFileError, match="podStartDelaySeconds"):
        load_cluster(path)


def test_the_cluster_file_key_sets_the_delay_and_the_option_wins(kube_sim, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"kind": "SimulatedCluster", "base": "crashloop",
                                "referenceTime": "2026-11-29T12:00:00Z", "objects": [],
                                "podStartDelaySeconds": 3600}))
    assert kube_sim(path).store.pod_start_delay == 3600
    assert kube_sim(path, pod_start_delay=0.5).store.pod_start_delay == 0.5
    sim = kube_sim(path)
    ok(sim, "rollout", "undo", "deployment/checkout", "-n", "prod")
    assert {r[2] for r in rows(ok(sim, "get", "pods", "-n", "prod", "-l", "app=checkout"))} == \
        {"ContainerCreating"}


def test_the_simulator_command_refuses_a_negative_delay(capsys):
    with pytest.raises(SystemExit):
        sim_main(["crashloop", "--pod-start-delay", "-1"])
    assert "--pod-start-delay must be 0 to 86400 seconds" in capsys.readouterr().err


def test_what_the_writes_and_their_pods_leave_behind_is_valid_kubernetes():
    """The store after each kind of write and every state a starting pod passes, by the official
    schemas (tests/sim/test_schemas.py's check), without HTTP: the controllers' functions on the
    store, the clock passed in."""
    from fixtures.kube_sim import control
    from fixtures.kube_sim.store import Store
    from tests.support.kube_schemas import check_all, describe
    store = Store(load_cluster("crashloop"))
    store.pod_start_delay = 5
    restart = json.dumps({"spec": {"template": {"metadata": {"annotations": {
        lifecycle.RESTARTED_AT: "2026-12-07T20:00:00Z"}}}}}).encode()
    control.patch_deployment(store, "prod", "checkout", restart,
                             "application/strategic-merge-patch+json")
    control.delete_pod(store, "prod", "frontend-74b9c5d6f8-d4t6m")
    pending = Store(load_cluster("pending"))
    control.delete_pod(pending, "prod", "reports-6d4c9f8b7d-z5k8w")
    seen = set()
    born = {id(one): min(e["created"] for e in one.starting.values()) for one in (store, pending)}
    for later in (0, 6, 12, 30):   # seconds after the writes, whatever the machine's pace
        for one in (store, pending):
            lifecycle.advance(one, now=born[id(one)] + later)
            objects = [obj for _, obj in one.stored()]
            seen |= {(p["status"]["phase"], (p["status"].get("containerStatuses") or [{}])[0].get(
                "restartCount")) for p in objects if p["kind"] == "Pod"}
            failing = check_all(objects)
            assert not failing, describe(failing)
    assert {("Pending", 0), ("Running", 1), ("Pending", None)} <= seen
    assert any(phase == "Running" and restarts and restarts >= 2 for phase, restarts in seen)
