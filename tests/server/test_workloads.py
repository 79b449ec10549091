"""Workload digests on real-shaped API JSON (built by the simulator's builders): healthy and broken
Deployments, StatefulSets, DaemonSets, Jobs, CronJobs and HPAs, and the template diff."""

import copy
from datetime import datetime, timezone

from fixtures.kube_sim import controllers as c
from fixtures.kube_sim.objects import core as k
from fixtures.kube_sim.scenarios.workloads import init_failing, job_failed, rollout_stuck
from mcp_kubectl_server.digests.workload_detail import template_changes, workload_digest
from mcp_kubectl_server.digests.workloads import problems, workloads_digest

NOW = k.REFERENCE_TIME


def objects_of(build):
    objects, _ = build()
    return objects


def by_kind(objects, ns="prod"):
    out = {}
    for obj in objects:
        if (obj["metadata"].get("namespace") == ns):
            out.setdefault(obj["kind"], []).append(obj)
    return out


def test_rollout_stuck_is_listed_first_with_its_condition_and_hpa():
    kinds = by_kind(objects_of(rollout_stuck))
    text = workloads_digest(kinds, namespace="prod", hpas=kinds["HorizontalPodAutoscaler"], now=NOW)
    lines = text.splitlines()
    assert lines[0] == "workloads in namespace prod: 4 total, 1 not healthy (listed first)"
    assert lines[1].startswith("Deployment/payments desired=3 updated=1 ready=3 available=3 unhealthy: "
                               "Progressing=False reason=ProgressDeadlineExceeded")
    assert "hpa=payments min=3 max=6 current=4 desired=4 cpu=41%/70% limited=no" in lines[1]
    healthy = {line.split()[0]: line for line in lines[2:]}
    assert set(healthy) == {"Deployment/frontend", "StatefulSet/payments-cache", "DaemonSet/node-exporter"}
    assert all(" healthy " in line for line in healthy.values())


def test_failed_job_and_its_cronjob_outlive_their_events():
    kinds = by_kind(objects_of(job_failed))
    text = workloads_digest(kinds, namespace="prod", now=NOW)
    job, cron = text.splitlines()[1:3]
    assert job.startswith("Job/nightly-report-29406720 completions=0/1 active=0 failed=3 backoff_limit=2 "
                          "state=Failed unhealthy: Failed=True reason=BackoffLimitExceeded")
    assert 'schedule="0 2 * * *"' in cron and "last_job=nightly-report-29406720(Failed)" in cron
    assert "unhealthy: last_job=nightly-report-29406720 state=Failed reason=BackoffLimitExceeded" in cron


def test_hpa_at_its_maximum_is_limited_and_an_orphan_hpa_is_named():
    dep = next(o for o in objects_of(rollout_stuck) if o["kind"] == "Deployment" and o["metadata"]["name"] == "payments")
    limited = c.hpa(dep, min_replicas=2, max_replicas=4, current=4, desired=9, cpu_now=180)
    orphan = copy.deepcopy(limited)
    orphan["metadata"]["name"] = "gone"
    orphan["spec"]["scaleTargetRef"]["name"] = "gone"
    text = workloads_digest({"Deployment": [dep]}, namespace="prod", hpas=[limited, orphan], now=NOW)
    assert ("hpa=payments min=2 max=4 current=4 desired=4 cpu=180%/70% limited=yes reason=TooManyReplicas"
            in text)
    assert "HorizontalPodAutoscaler/gone targets Deployment/gone, which does not exist" in text


def test_unhealthy_daemonset_statefulset_and_replica_failure():
    tmpl = k.pod_template("agent", image="agent:v1")
    ds = c.daemonset("prod", "agent", tmpl, rev_hash="abc", age=k.DAY,
                     pods=[(k.running(), k.DAY, "node-a", "abc"), (k.crashloop(restarts=3), k.DAY, "node-b", "abc")])
    assert problems(ds[0]) == ["not_ready=1"]
    sts = c.statefulset("prod", "db", [("h1", tmpl, k.DAY), ("h2", k.pod_template("agent", image="agent:v2"), 60)],
                        replicas=2, age=k.DAY, pods=[(k.running(), 60, "node-a", "h2"), (k.running(), k.DAY, "node-b", "h1")])
    assert problems(sts[0]) == ["not_updated=1"]
    dep = next(o for o in objects_of(rollout_stuck) if o["kind"] == "Deployment")
    dep["status"]["conditions"].append({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                                        "message": 'pods "x" is forbidden: exceeded quota: prod-quota'})
    assert 'ReplicaFailure=True reason=FailedCreate message="pods \'x\' is forbidden: exceeded quota: prod-quota"' \
        in " ".join(problems(dep))
    assert workloads_digest({}, namespace="prod").startswith("no workloads")


def test_describe_deployment_shows_revisions_and_what_changed():
    objects = objects_of(rollout_stuck)
    dep = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "payments")
    sets = [o for o in objects if o["kind"] == "ReplicaSet" and o["metadata"]["name"].startswith("payments-")]
    pods = [o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"].startswith("payments-")
            and "cache" not in o["metadata"]["name"]]
    hpa = next(o for o in objects if o["kind"] == "HorizontalPodAutoscaler")
    text = workload_digest(dep, revisions=sets, hpa=hpa, pods=pods, events=[], now=NOW)
    for fact in ("condition Progressing=False reason=ProgressDeadlineExceeded age=32m",
                 "revision 2 ReplicaSet/payments-5d8c7b6f4c images=registry.example.com/shop/payments:v4.0.0 desired=1 ready=0",
                 "revision 1 ReplicaSet/payments-7f6d5c8b9d images=registry.example.com/shop/payments:v3.9.2 desired=3 ready=3",
                 "change from revision 1 (payments-7f6d5c8b9d) to 2 (payments-5d8c7b6f4c):",
                 "change container payments readiness_probe http-get http://:8080/healthz",
                 "-> http-get http://:9090/healthz", "hpa hpa=payments",
                 "pod payments-5d8c7b6f4c-b6v3z phase=Running ready=0/1",
                 "event none recorded"):
        assert fact in text, fact
    assert text.index("revision 2") < text.index("revision 1")


def test_template_changes_name_env_sources_never_literal_values():
    old = k.pod_template("app", image="app:v1", env=[{"name": "DB_PASSWORD", "value": "hunter2-prod"},
                                                      {"name": "URL", "value": "https://a"}])
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["env"] = [
        {"name": "DB_PASSWORD", "value": "hunter3-prod"},
        {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "api", "key": "key"}}}]
    new["spec"]["containers"][0]["resources"]["limits"]["memory"] = "512Mi"
    new["metadata"]["annotations"] = {"checksum/config": "b2c3"}
    old["metadata"]["annotations"] = {"checksum/config": "a1f0"}
    lines = template_changes(old, new)
    assert "change container app env API_KEY added (secret api key key)" in lines
    assert "change container app env URL removed (was literal value)" in lines
    assert "change container app env DB_PASSWORD literal value changed (values not shown)" in lines
    assert "change container app limits memory=256Mi -> memory=512Mi" in lines
    assert "change annotation checksum/config a1f0 -> b2c3" in lines
    assert not any("hunter" in line for line in lines)
    assert template_changes(old, old) == ["change none found in images, env, resources, probes, checksum annotations, "
                                          "volumes, service account, pull secrets, DNS or scheduling constraints"]


def test_describe_statefulset_counts_pods_per_controller_revision():
    objects = objects_of(rollout_stuck)
    sts = next(o for o in objects if o["kind"] == "StatefulSet")
    revs = [o for o in objects if o["kind"] == "ControllerRevision" and o["metadata"]["name"].startswith("payments-cache")]
    pods = [o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"].startswith("payments-cache")]
    text = workload_digest(sts, revisions=revs, pods=pods, now=NOW)
    assert "revision 2 ControllerRevision/payments-cache-7b5c9d8f6c images=registry.example.com/mirror/redis:7.4.1 pods=2 ready=2" in text
    assert "revision 1 ControllerRevision/payments-cache-6d9f8b7c5d images=registry.example.com/mirror/redis:7.2.5 pods=0 ready=0" in text
    assert "change container payments-cache image registry.example.com/mirror/redis:7.2.5 -> " in text


def test_describe_deployment_with_a_new_init_container():
    objects = objects_of(init_failing)
    dep = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "orders")
    sets = [o for o in objects if o["kind"] == "ReplicaSet" and o["metadata"]["name"].startswith("orders-")]
    text = workload_digest(dep, revisions=sets, now=NOW)
    assert "change init_container migrate added image=registry.example.com/shop/orders-migrate:v7.2.0" in text
    assert "pod none match the selector" in text


def test_describe_handles_a_bare_object():
    text = workload_digest({"kind": "Job", "metadata": {"name": "x", "namespace": "prod"}},
                           now=datetime(2026, 11, 29, tzinfo=timezone.utc))
    assert text.splitlines()[0].startswith("workload Job prod/x healthy")
    assert "revision none found" in text


def test_list_items_without_kind_read_the_same():
    """A real API server's list items carry no kind (the list does): the digest must not need it."""
    kinds = by_kind(objects_of(job_failed))
    bare = {kind: [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
            for kind, items in kinds.items()}
    assert workloads_digest(bare, namespace="prod", now=NOW) == workloads_digest(kinds, namespace="prod", now=NOW)


def test_selector_query_from_match_labels_and_expressions():
    from mcp_kubectl_server.tools.workloads import _selector_query
    obj = {"spec": {"selector": {"matchLabels": {"app": "web", "tier": "fe"}, "matchExpressions": [
        {"key": "env", "operator": "In", "values": ["prod", "canary"]},
        {"key": "legacy", "operator": "DoesNotExist"}]}}}
    assert _selector_query(obj) == "app=web,tier=fe,env in (prod,canary),!legacy"
    assert _selector_query({"spec": {}}) == ""
