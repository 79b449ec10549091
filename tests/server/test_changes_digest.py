"""get_changes' digest on objects shaped as an API server keeps them: each collector on a broken
(changed) object and on a healthy one (nothing changed in the window), the order, the cut that
keeps the newest, and who made a change (managedFields, events)."""

from datetime import datetime, timedelta, timezone

import pytest

from mcp_kubectl_server.digests import changes as c
from mcp_kubectl_server.digests.text import format_time

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
SINCE = NOW - timedelta(hours=3)


def at(minutes_ago):
    return format_time(NOW - timedelta(minutes=minutes_ago))


def entry(manager, minutes_ago, fields, operation="Update", subresource=None):
    made = {"manager": manager, "operation": operation, "time": at(minutes_ago), "fieldsType": "FieldsV1",
            "fieldsV1": fields}
    return dict(made, subresource=subresource) if subresource else made


def template(image, env=()):
    return {"metadata": {"labels": {"app": "checkout"}},
            "spec": {"containers": [{"name": "app", "image": image,
                                     "env": [{"name": n, "value": "x"} for n in env]}]}}


TEMPLATE_FIELDS = {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"app"}': {
    ".": {}, "f:image": {}}}}}}}


def deployment(*entries, created=20 * 24 * 60):
    return {"kind": "Deployment", "metadata": {"name": "checkout", "uid": "d1", "creationTimestamp": at(created),
                                               "managedFields": list(entries)}, "spec": {}}


def replicaset(name, revision, image, created, env=(), history=None):
    notes = {"deployment.kubernetes.io/revision": str(revision)}
    if history:
        notes["deployment.kubernetes.io/revision-history"] = history
    return {"kind": "ReplicaSet", "metadata": {"name": name, "creationTimestamp": at(created), "annotations": notes,
                                               "managedFields": [entry("kube-controller-manager", created, {})]},
            "spec": {"template": template(image, env)}}


def lines(found, **kw):
    return c.changes_digest(found, namespace="prod", since=SINCE, now=NOW, **kw).splitlines()


def test_a_rollout_in_the_window_says_what_changed_and_who_wrote_the_template():
    dep = deployment(entry("helm", 40, TEMPLATE_FIELDS))
    revs = [replicaset("checkout-a", 1, "shop/checkout:1.8.2", 10 * 24 * 60),
            replicaset("checkout-b", 2, "shop/checkout:1.9.0", 39, env=("PRICING_V2",))]
    found = c.rollouts(dep, revs, SINCE)
    assert len(found) == 1
    text = lines(found)[1]
    assert text.startswith(f"{at(39)} (39m ago) Deployment/checkout rollout to revision 2 (ReplicaSet checkout-b): ")
    assert "container app image shop/checkout:1.8.2 -> shop/checkout:1.9.0" in text
    assert "PRICING_V2" in text and text.endswith("by helm (Update)")


def test_a_healthy_workload_without_recent_revisions_has_no_change():
    dep = deployment(entry("helm", 10 * 24 * 60, TEMPLATE_FIELDS))
    revs = [replicaset("checkout-a", 1, "shop/checkout:1.8.2", 10 * 24 * 60)]
    assert c.rollouts(dep, revs, SINCE) == [] and c.edits("Deployment", dep, SINCE) == []
    out = lines([])
    assert out[0] == f"changes in namespace prod over the last 180 min (since {at(180)}): 0"
    assert out[1].startswith("no change found")


def test_a_rollback_is_the_old_replicaset_renumbered_at_its_last_write():
    old = replicaset("checkout-a", 3, "shop/checkout:1.8.2", 10 * 24 * 60, history="1")
    old["metadata"]["managedFields"] = [entry("kube-controller-manager", 5, {"f:metadata": {"f:annotations": {}}})]
    dep = deployment(entry("kubectl-rollout", 5, TEMPLATE_FIELDS))
    found = c.rollouts(dep, [old, replicaset("checkout-b", 2, "shop/checkout:1.9.0", 60)], SINCE)
    rollback = [f for f in found if "rollback" in f.what]
    assert len(rollback) == 1 and rollback[0].time == NOW - timedelta(minutes=5)
    assert "rollback to revision 3 (ReplicaSet checkout-a, first rolled out as revision 1)" in rollback[0].what
    assert "shop/checkout:1.9.0 -> shop/checkout:1.8.2" in rollback[0].what
    assert rollback[0].who == "kubectl-rollout (Update)"


def test_a_configmap_edit_names_its_keys_and_editor_and_creation_is_not_an_edit():
    cm = {"kind": "ConfigMap", "metadata": {"name": "checkout-flags", "creationTimestamp": at(30 * 24 * 60),
                                            "managedFields": [
        entry("helm", 30 * 24 * 60, {"f:data": {"f:DB_HOST": {}}}),
        entry("kubectl-edit", 12, {"f:data": {"f:PRICING_V2": {}, "f:CART_TTL": {}}})]}}
    found = c.edits("ConfigMap", cm, SINCE)
    assert [f.what for f in found] == ["edited: key PRICING_V2, key CART_TTL"]
    assert found[0].who == "kubectl-edit (Update)"
    fresh = dict(cm, metadata=dict(cm["metadata"], creationTimestamp=at(12)))
    assert [f.what for f in c.edits("ConfigMap", fresh, SINCE)] == ["created"]


def test_a_quota_lowered_by_automation_is_an_edit_of_its_hard_fields():
    quota = {"kind": "ResourceQuota", "metadata": {"name": "compute", "creationTimestamp": at(90 * 24 * 60),
                                                   "managedFields": [
        entry("capacity-planner", 25, {"f:spec": {"f:hard": {"f:requests.cpu": {}, "f:pods": {}}}},
              operation="Apply")]}, "spec": {"hard": {"requests.cpu": "3", "pods": "20"}}}
    found = c.edits("ResourceQuota", quota, SINCE)
    assert len(found) == 1 and found[0].who == "capacity-planner (Apply)"
    assert found[0].what == "edited: hard requests.cpu=3, hard pods=20"


def test_controller_bookkeeping_and_template_writes_of_a_workload_are_not_edits():
    dep = deployment(entry("kube-controller-manager", 10, {"f:metadata": {"f:annotations": {
        "f:deployment.kubernetes.io/revision": {}}}}), entry("helm", 10, TEMPLATE_FIELDS))
    assert c.edits("Deployment", dep, SINCE) == []
    scaled = deployment(entry("kubectl-scale", 10, {"f:spec": {"f:replicas": {}}}, subresource="scale"))
    assert [f.who for f in c.edits("Deployment", scaled, SINCE)] == ["kubectl-scale (Update, subresource scale)"]


def test_a_job_run_and_its_failure():
    job = {"kind": "Job", "metadata": {"name": "report-1", "ownerReferences": [{"kind": "CronJob", "name": "report"}]},
           "status": {"startTime": at(70), "conditions": [
               {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit", "lastTransitionTime": at(60)}]}}
    out = lines(c.job_runs(job, SINCE))
    assert out[1].endswith("Job/report-1 started of CronJob report")
    assert out[2].endswith("Job/report-1 failed: BackoffLimitExceeded Job has reached the specified backoff limit")
    ok = dict(job, status={"startTime": at(24 * 60), "conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": at(23 * 60)}]})
    assert c.job_runs(ok, SINCE) == []


def test_oom_kills_evictions_and_autoscaling():
    pod = {"kind": "Pod", "metadata": {"name": "search-1"}, "status": {"containerStatuses": [
        {"name": "search", "restartCount": 4,
         "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137, "finishedAt": at(3)}}}]}}
    assert [f.what for f in c.pod_terminations(pod, SINCE)] == ["container search OOMKilled (exit 137, restarts 4)"]
    healthy = {"kind": "Pod", "metadata": {"name": "search-2"}, "status": {"containerStatuses": [
        {"name": "search", "restartCount": 0, "state": {"running": {"startedAt": at(600)}}}]}}
    assert c.pod_terminations(healthy, SINCE) == []
    evicted = {"kind": "Pod", "metadata": {"name": "img-1"}, "status": {
        "reason": "Evicted", "message": "The node was low on resource: ephemeral-storage.",
        "conditions": [{"type": "DisruptionTarget", "status": "True", "lastTransitionTime": at(8)}]}}
    assert c.pod_terminations(evicted, SINCE)[0].time == NOW - timedelta(minutes=8)
    assert c.pod_terminations(evicted, SINCE, eviction_told=True) == []
    hpa = {"metadata": {"name": "checkout"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "checkout"}},
           "status": {"lastScaleTime": at(20), "currentReplicas": 6, "desiredReplicas": 8}}
    assert c.hpa_scaling(hpa, SINCE)[0].what == "scaled Deployment/checkout to 8 replicas (now 6)"
    event = {"reason": "Preempted", "message": "Preempted by pod batch/big", "lastTimestamp": at(4),
             "involvedObject": {"kind": "Pod", "name": "search-1"}, "source": {"component": "default-scheduler"}}
    told = c.from_events([event, dict(event, reason="Pulled")], SINCE)
    assert [(f.what, f.who) for f in told] == [("preempted: Preempted by pod batch/big",
                                                "default-scheduler (event Preempted)")]


def test_node_changes_of_a_node_running_the_namespaces_pods():
    node = {"metadata": {"name": "node-b", "creationTimestamp": at(40 * 24 * 60), "managedFields": [
        entry("kubectl-cordon", 15, {"f:spec": {"f:unschedulable": {}}})]},
            "spec": {"unschedulable": True, "taints": [
                {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": at(14)}]},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                                       "lastTransitionTime": at(14)}]}}
    whats = [f.what for f in c.node_changes(node, SINCE, 3)]
    assert "cordoned (unschedulable) (runs 3 pods of the namespace)" in whats
    assert "taint added node.kubernetes.io/unreachable:NoExecute (runs 3 pods of the namespace)" in whats
    assert "became NotReady (Unknown): NodeStatusUnknown (runs 3 pods of the namespace)" in whats
    new = {"metadata": {"name": "node-d", "creationTimestamp": at(30)}, "spec": {}, "status": {"conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": at(29)}]}}
    assert [f.what for f in c.node_changes(new, SINCE, 1)] == [
        "node added (runs 1 pod of the namespace)", "became Ready (runs 1 pod of the namespace)"]


def test_time_order_and_the_cut_keeps_the_newest():
    found = [c.Change(NOW - timedelta(minutes=m), f"ConfigMap/c{m}", "edited: key K", "kubectl-edit (Update)")
             for m in range(100, 0, -1)]
    out = lines(found, limit=10)
    assert out[0].endswith(": 100")
    assert out[1] == f"90 more changes between {at(100)} and {at(11)} (older, not shown: narrow with since_minutes or kind)"
    assert [ln.split(" ")[3] for ln in out[2:]] == [f"ConfigMap/c{m}" for m in range(10, 0, -1)]


@pytest.mark.parametrize("since_minutes", [0, 10081, "60", True, 1.5])
def test_since_minutes_is_checked(since_minutes):
    from mcp_kubectl_server.tools.changes import TOOL
    from mcp_kubectl_server.tools.spec import check_arguments
    problems = check_arguments(TOOL, {"namespace": "prod", "since_minutes": since_minutes})
    assert problems and problems[0].startswith("since_minutes: must be a whole number from 1 to 10080")


def test_kind_and_namespace_are_checked():
    from mcp_kubectl_server.tools.changes import TOOL
    from mcp_kubectl_server.tools.spec import check_arguments, check_scope
    assert check_arguments(TOOL, {"namespace": "prod", "kind": "Secret"})[0].startswith("kind: must be one of")
    assert check_arguments(TOOL, {"namespace": "-n", "kind": "Node"})
    assert check_arguments(TOOL, {"since_minutes": 5}) == ["namespace: is required"]
    assert "outside this server's scope" in check_scope(TOOL, {"namespace": "kube-system"}, ("prod",))
