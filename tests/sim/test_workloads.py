"""The simulator's workload, autoscaling, lease and node kinds, exercised with the real kubectl:
discovery, tables, JSON, describe and raw API paths; Init: states, init container logs, NotReady
nodes, node events in default, event expiry and never-started pods in Pending."""

import json
import shutil
from datetime import datetime, timedelta, timezone

import pytest

from fixtures.kube_sim.sim import start_sim
from fixtures.kube_sim.store import EVENT_TTL_SECONDS, expired
from fixtures.kube_sim.tables.core import pod_cells
from tests.support.kubectl_tables import kubectl, ok, rows, tables

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


@pytest.fixture(scope="module")
def rollout():
    with start_sim("rollout-stuck") as sim:
        yield sim


@pytest.fixture(scope="module")
def notready():
    with start_sim("node-notready") as sim:
        yield sim


def test_discovery_names_every_new_kind(rollout):
    text = ok(rollout, "api-resources", "--no-headers")
    for row in ("statefulsets sts apps/v1 true StatefulSet", "daemonsets ds apps/v1 true DaemonSet",
                "controllerrevisions apps/v1 true ControllerRevision", "jobs batch/v1 true Job",
                "cronjobs cj batch/v1 true CronJob",
                "horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler",
                "leases coordination.k8s.io/v1 true Lease"):
        assert row in [" ".join(line.split()) for line in text.splitlines()], row


def test_tables_and_json_of_the_workload_kinds(rollout):
    sts, ds, hpa, revisions = tables(rollout, "sts,ds,hpa,controllerrevisions", "-n", "prod")
    assert rows(sts)[0][:2] == ["statefulset.apps/payments-cache", "2/2"]
    assert rows(ds)[0][:6] == ["daemonset.apps/node-exporter", "3", "3", "3", "3", "3"]
    hpa = rows(hpa)[0]
    assert hpa[:2] == ["horizontalpodautoscaler.autoscaling/payments", "Deployment/payments"] and "41%/70%" in hpa
    assert any(r[:3] == ["controllerrevision.apps/payments-cache-7b5c9d8f6c", "statefulset.apps/payments-cache",
                         "2"] for r in rows(revisions))
    sts = json.loads(ok(rollout, "get", "sts", "payments-cache", "-n", "prod", "-o", "json"))
    assert sts["status"]["updateRevision"] == "payments-cache-7b5c9d8f6c"
    raw = json.loads(ok(rollout, "get", "--raw", "/apis/autoscaling/v2/namespaces/prod/horizontalpodautoscalers"))
    assert raw["kind"] == "HorizontalPodAutoscalerList" and raw["items"][0]["spec"]["maxReplicas"] == 6
    everything = ok(rollout, "get", "all", "-n", "prod")
    assert "statefulset.apps/payments-cache" in everything and "controllerrevision" not in everything


def test_describe_of_the_workload_kinds(rollout):
    # kubectl describes the objects in the order asked, two blank lines between them
    dep, sts, ds, hpa = ok(rollout, "describe", "deployment/payments", "sts/payments-cache", "ds/node-exporter",
                           "hpa/payments", "-n", "prod").split("\n\n\n")
    assert "Progressing    False   ProgressDeadlineExceeded" in dep and "NewReplicaSet:   payments-5d8c7b6f4c" in dep
    assert "Pods Status:        2 Running" in sts
    assert "Pods Status:  3 Running" in ds
    assert "ScalingLimited  False   DesiredWithinRange" in hpa


def test_jobs_cronjobs_and_expired_events():
    with start_sim("job-failed") as sim:
        jobs, crons = tables(sim, "jobs,cronjobs", "-n", "prod")
        assert rows(jobs)[0][:3] == ["job.batch/nightly-report-29406720", "Failed", "0/1"]
        assert rows(crons)[0][:6] == ["cronjob.batch/nightly-report", "0", "2", "*", "*", "*"]
        described = ok(sim, "describe", "job", "nightly-report-29406720", "-n", "prod")
        assert "Pods Statuses:    0 Active (0 Ready) / 0 Succeeded / 3 Failed" in described
        assert "Controlled By:    CronJob/nightly-report" in described
        # the cluster file holds a BackoffLimitExceeded event from ten hours ago: the server has dropped it
        assert "No resources found" in kubectl(sim, "get", "events", "-n", "prod").stderr
        pods = json.loads(ok(sim, "get", "pods", "-n", "prod", "-l", "job-name=nightly-report-29406720", "-o", "json"))
        assert {p["status"]["phase"] for p in pods["items"]} == {"Failed"}


def test_event_expiry_follows_the_last_time_seen():
    now = datetime.now(timezone.utc)
    stamp = lambda ago: (now - timedelta(seconds=ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    old = {"metadata": {"creationTimestamp": stamp(5 * 3600)}, "firstTimestamp": stamp(5 * 3600),
           "lastTimestamp": stamp(EVENT_TTL_SECONDS + 60)}
    assert expired("events", old)
    assert not expired("events", dict(old, lastTimestamp=stamp(EVENT_TTL_SECONDS - 60)))
    assert not expired("pods", old) and not expired("events", {"metadata": {}})


def test_notready_node_node_events_in_default_and_describe_node(notready):
    nodes, leases = tables(notready, "nodes,leases", "-n", "kube-node-lease")  # nodes have no namespace
    nodes = {row[0]: row[1] for row in rows(nodes)}
    assert nodes == {"node/node-a": "Ready", "node/node-b": "Ready", "node/node-c": "NotReady"}
    events = json.loads(ok(notready, "get", "events", "-n", "default", "-o", "json"))["items"]
    node_event = next(e for e in events if e["involvedObject"]["kind"] == "Node")
    assert node_event["involvedObject"]["name"] == "node-c" and "namespace" not in node_event["involvedObject"]
    described = ok(notready, "describe", "node", "node-c")
    assert "NodeNotReady" in described and "Kubelet stopped posting node status." in described
    assert "ledger-writer-66c9d8f7b5-f4k7s" in described  # kubectl itself lists every namespace's pods
    assert [row[:2] for row in rows(leases)] == [
        [f"lease.coordination.k8s.io/{node}", node] for node in ("node-a", "node-b", "node-c")]


def test_init_states_and_init_container_logs():
    with start_sim("init-failing") as sim:
        status = {r[0]: r[2] for r in rows(ok(sim, "get", "pods", "-n", "prod"))}
        assert status["orders-6c8d5b9f7d-j4x6t"] == "Init:CrashLoopBackOff"
        logs = ok(sim, "logs", "orders-6c8d5b9f7d-j4x6t", "-n", "prod", "-c", "migrate", "--previous")
        assert "permission denied for table orders" in logs
        waiting = kubectl(sim, "logs", "orders-6c8d5b9f7d-j4x6t", "-n", "prod", "-c", "orders")
        assert waiting.returncode != 0 and "PodInitializing" in waiting.stderr


def test_init_columns_as_the_printer_writes_them():
    def pod(*inits, initialized=False):
        return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app"}],
                                                    "initContainers": [{"name": f"i{n}"} for n in range(len(inits))]},
                "status": {"phase": "Pending", "initContainerStatuses": list(inits),
                           "conditions": [{"type": "Initialized", "status": "True" if initialized else "False"}],
                           "containerStatuses": [{"name": "app", "restartCount": 0,
                                                  "state": {"waiting": {"reason": "PodInitializing"}}}]}}
    done = {"restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    running = {"restartCount": 0, "state": {"running": {}}}
    failed = {"restartCount": 2, "state": {"terminated": {"exitCode": 3}}}
    assert pod_cells(pod(done, running))[2] == "Init:1/2"
    assert pod_cells(pod(failed))[2:4] == ["Init:ExitCode:3", "2"]
    assert pod_cells(pod(done, done, initialized=True))[2] == "PodInitializing"


def test_a_pod_that_never_started_is_pending():
    with start_sim("imagepull") as sim:
        pod = json.loads(ok(sim, "get", "pod", "cart-7d9f8c6b5c-p4r6t", "-n", "prod", "-o", "json"))
        assert pod["status"]["phase"] == "Pending"
        assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"
