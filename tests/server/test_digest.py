"""Digests on real-shaped kubectl JSON: wording, ordering, bounds, secrets never printed."""

from datetime import datetime, timezone

from mcp_kubectl_server.digests.pod_detail import describe_digest
from mcp_kubectl_server.digests.events import events_digest
from mcp_kubectl_server.digests.pods import pods_digest
from mcp_kubectl_server.digests.text import clean_log_text

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


def make_pod(name, *, phase="Running", ready=True, restarts=0, state=None, last=None, node="node-a",
             created="2026-11-29T09:00:00Z", labels=None, statuses=True, conditions=()):
    container = {"name": "app", "image": "registry.example.com/shop/app:v1",
                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                 "env": [{"name": "DB_PASSWORD", "value": "hunter2-prod"},
                         {"name": "PAYMENT_KEY", "valueFrom": {"secretKeyRef": {"name": "payments", "key": "api-key"}}},
                         {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                 "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
                 "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}}}
    status = {"phase": phase, "qosClass": "Burstable", "startTime": created, "conditions": list(conditions)}
    if statuses:
        status["containerStatuses"] = [{"name": "app", "ready": ready, "restartCount": restarts,
                                        "state": state or {"running": {"startedAt": created}},
                                        "lastState": last or {}, "imageID": "sha256:abc"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "prod", "creationTimestamp": created,
                         "labels": labels or {"app": name.split("-")[0]},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": name.rsplit("-", 1)[0]}]},
            "spec": {"nodeName": node, "containers": [container]}, "status": status}


CRASH = make_pod("checkout-6f8d9c7b5d-x7k2p", ready=False, restarts=47,
                 state={"waiting": {"reason": "CrashLoopBackOff",
                                    "message": "back-off 5m0s restarting failed container=app"}},
                 last={"terminated": {"reason": "Error", "exitCode": 1, "finishedAt": "2026-11-29T11:58:49Z"}})
PENDING = make_pod("reports-7c9d8b6f5-q2w3e", phase="Pending", ready=False, statuses=False, node=None,
                   conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                "message": "0/3 nodes are available: 3 Insufficient memory."}])
HEALTHY = make_pod("frontend-5f6b7c8d9b-ngmcc", created="2026-11-27T08:00:00Z")


def pods(*items):
    return {"kind": "PodList", "items": list(items)}


def test_pod_lines_unhealthy_first_with_reasons():
    text = pods_digest(pods(HEALTHY, PENDING, CRASH), namespace="prod", now=NOW)
    lines = text.splitlines()
    assert lines[0] == "pods in namespace prod: 3 total, 2 not healthy (listed first)"
    assert lines[1] == ('checkout-6f8d9c7b5d-x7k2p phase=Running ready=0/1 restarts=47 container=app '
                        'state=waiting reason=CrashLoopBackOff '   # the plain back-off message says no more
                        'last_state=terminated last_reason=Error last_exit_code=1 node=node-a age=3h')
    assert lines[2] == ('reports-7c9d8b6f5-q2w3e phase=Pending ready=0/1 restarts=0 condition=PodScheduled '
                        'reason=Unschedulable message="0/3 nodes are available: 3 Insufficient memory." '
                        'node=none age=3h')
    assert lines[3:] == ["healthy (Running, all containers ready, no restarts):",
                         "frontend-5f6b7c8d9b: 1 pod age=2d4h nodes=node-a: frontend-5f6b7c8d9b-ngmcc"]


def crashing(name, restarts, *, node="node-a", uid="0f1e"):
    # the kubelet's back-off message names the pod (with its namespace and uid) and the container
    message = f"back-off 5m0s restarting failed container=app pod={name}_prod({uid})"
    return make_pod(name, ready=False, restarts=restarts, node=node,
                    state={"waiting": {"reason": "CrashLoopBackOff", "message": message}},
                    last={"terminated": {"reason": "Error", "exitCode": 1}})


def test_pods_of_one_owner_in_one_state_say_it_once_the_most_restarted_first():
    items = [crashing("checkout-6f8d9c7b5d-aaaaa", 3), crashing("checkout-6f8d9c7b5d-bbbbb", 9, node="node-b"),
             make_pod("checkout-6f8d9c7b5d-ccccc", restarts=2,
                      last={"terminated": {"reason": "OOMKilled", "exitCode": 137}}),
             crashing("cart-7c8d9b6f5-ddddd", 4)]
    lines = pods_digest(pods(*items), namespace="prod", now=NOW).splitlines()
    assert lines[1].startswith("cart-7c8d9b6f5-ddddd ") and "reason=CrashLoopBackOff" in lines[1]
    assert lines[2].startswith("checkout-6f8d9c7b5d-bbbbb phase=Running ready=0/1 restarts=9 container=app "
                               "state=waiting reason=CrashLoopBackOff")
    assert lines[3] == ("checkout-6f8d9c7b5d-aaaaa phase=Running ready=0/1 restarts=3 (state as above) "
                        "node=node-a age=3h")
    # healthy but restarted: a line of its own, with its last state, after the unhealthy ones
    assert lines[4].startswith("checkout-6f8d9c7b5d-ccccc phase=Running ready=1/1 restarts=2 ")
    assert "last_reason=OOMKilled" in lines[4] and len(lines) == 5
    text = "\n".join(lines)
    assert "pod=" not in text and text.count("reason=CrashLoopBackOff") == 2   # once for each owner
    assert "back-off 5m0s" not in text   # the kubelet's plain back-off message says no more than the reason


def test_a_different_state_in_one_owner_is_said_again():
    other = make_pod("checkout-6f8d9c7b5d-eeeee", ready=False, restarts=1,
                     state={"waiting": {"reason": "CrashLoopBackOff"}},
                     last={"terminated": {"reason": "OOMKilled", "exitCode": 137}})
    lines = pods_digest(pods(crashing("checkout-6f8d9c7b5d-aaaaa", 3), other), namespace="prod",
                        now=NOW).splitlines()
    assert "(state as above)" not in "\n".join(lines) and len(lines) == 3


def test_healthy_pods_are_counted_by_owner_and_named_only_when_few():
    few = [make_pod(f"web-5f6b7c8d9b-{i}", node=f"node-{i}") for i in "abc"]
    many = [make_pod(f"api-6c7d8e9f0a-{i:03d}", node=f"node-{i % 5}") for i in range(40)]
    bare = make_pod("debug-shell", created="2026-11-29T11:00:00Z")
    bare["metadata"].pop("ownerReferences")
    done = make_pod("report-1-xyz", phase="Succeeded", ready=False,
                    state={"terminated": {"reason": "Completed", "exitCode": 0}})
    lines = pods_digest(pods(*few, *many, bare, done), namespace="prod", now=NOW).splitlines()
    assert lines == [
        "pods in namespace prod: 45 total, 0 not healthy",
        "healthy (Running, all containers ready, no restarts):",
        "(no owner): 1 pod age=1h nodes=node-a: debug-shell",
        "api-6c7d8e9f0a: 40 pods age=3h nodes=5",
        "web-5f6b7c8d9b: 3 pods age=3h nodes=node-a,node-b,node-c: web-5f6b7c8d9b-{a,b,c}",
        "completed (Succeeded):",
        "report-1: 1 pod age=3h nodes=node-a: report-1-xyz"]


def test_oomkilled_last_state():
    pod = make_pod("search-1", restarts=3, last={"terminated": {"reason": "OOMKilled", "exitCode": 137}})
    line = pods_digest(pods(pod), namespace="prod", now=NOW).splitlines()[1]
    assert "last_reason=OOMKilled last_exit_code=137" in line


def test_empty_namespace_and_selector():
    assert pods_digest(pods(), namespace="prod", selector="app=x", now=NOW) == \
        "no pods in namespace prod with selector app=x"


def test_large_namespace_is_bounded_and_says_how_to_narrow():
    many = [make_pod(f"bulk-{i % 7}-{i:05d}", labels={"app": f"bulk-{i % 7}"}) for i in range(2500)]
    many += [make_pod(f"bulk-bad-{i}", ready=False, restarts=9,
                      state={"waiting": {"reason": "CrashLoopBackOff"}}) for i in range(5)]
    text = pods_digest(pods(*many), namespace="bulk", now=NOW)
    lines = text.splitlines()
    assert len(text.encode()) <= 1024 and len(lines) == 1 + 5 + 1 + 7   # 2,500 healthy: 7 owners
    assert all(l.startswith("bulk-bad-") for l in lines[1:6])
    # thousands of unhealthy pods of as many owners: cut, and told how to narrow
    sick = [make_pod(f"job-{i:05d}-x", ready=False, restarts=1, labels={"app": f"job-{i % 3}"},
                     state={"waiting": {"reason": "CrashLoopBackOff"}}) for i in range(2500)]
    text = pods_digest(pods(*sick, *many), namespace="bulk", now=NOW)
    lines = text.splitlines()
    assert len(lines) <= 200 and len(text.encode()) <= 16 * 1024
    hidden = [l for l in lines if l.startswith("not shown: ")]
    assert len(hidden) == 1 and "pods (" in hidden[0] and "not healthy)" in hidden[0] and "selector" in hidden[0]
    assert int(hidden[0].split()[2]) == 2500 + 2505 - sum(1 for l in lines if l.startswith(("job-", "bulk-bad-")))
    assert any(l.startswith("labels to narrow by: app=") for l in lines)


def test_describe_lists_env_names_never_values():
    events = [{"type": "Warning", "reason": "BackOff", "count": 300, "lastTimestamp": "2026-11-29T11:59:00Z",
               "involvedObject": {"kind": "Pod", "name": CRASH["metadata"]["name"]},
               "message": "Back-off restarting failed container app in pod "
                          "checkout-6f8d9c7b5d-x7k2p_prod(5f0c2b7e-1d2a-4c3b-9e8f-0a1b2c3d4e5f)"}]
    text = describe_digest(CRASH, owners=["ReplicaSet/checkout-6f8d9c7b5d", "Deployment/checkout"],
                           events=events)
    assert "hunter2" not in text
    lines = text.splitlines()
    for expected in [
        # started when it was created: no started= (a pod that waited a minute or more says it)
        "pod prod/checkout-6f8d9c7b5d-x7k2p phase=Running qos=Burstable created=2026-11-29T09:00:00Z",
        "node node-a",
        "owner ReplicaSet/checkout-6f8d9c7b5d -> Deployment/checkout",
        "container app image=registry.example.com/shop/app:v1 requests cpu=100m memory=128Mi limits memory=256Mi",
        "container app liveness_probe http-get http://:8080/healthz delay=0s timeout=1s period=10s failure_threshold=3",
        "container app env DB_PASSWORD (literal value, not shown)",
        "container app env PAYMENT_KEY from secret payments key api-key",
        "container app env POD_IP from field status.podIP",
        "container app ready=false restarts=47 image_id=sha256:abc",
        'container app state=waiting reason=CrashLoopBackOff message="back-off 5m0s restarting failed"',
        "container app last_state=terminated reason=Error exit_code=1 finished_at=2026-11-29T11:58:49Z",
        # the pod's own events: neither Pod/NAME nor the kubelet's "in pod NAME_NS(UID)" again
        "event 2026-11-29T11:59:00Z Warning BackOff count=300: Back-off restarting failed container app",
    ]:
        assert expected in lines, expected


def test_describe_says_each_thing_once():
    pod = make_pod("checkout-6f8d9c7b5d-x7k2p", ready=False, labels={"app": "checkout", "pod-template-hash": "6f8d9c7b5d"},
                   conditions=[{"type": "PodScheduled", "status": "True"}, {"type": "Initialized", "status": "True"},
                               {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                                "message": "containers with unready status: [app]"},
                               {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady",
                                "message": "containers with unready status: [app]"}])
    pod["status"]["startTime"] = "2026-11-29T09:05:00Z"   # it waited five minutes to start: said
    pod["status"]["containerStatuses"][0]["imageID"] = (
        "registry.example.com/shop/app@sha256:e11fb29f9cb2f76572e659656e4131867f8e8882661bcc8b51982a05647527d8")
    routine = [{"type": "Normal", "reason": reason, "count": count, "lastTimestamp": f"2026-11-29T11:5{i}:00Z",
                "involvedObject": {"kind": "Pod", "name": pod["metadata"]["name"]}, "message": f"{reason} it"}
               for i, (reason, count) in enumerate([("Pulled", 47), ("Created", 48), ("Started", 48)])]
    killing = {"type": "Normal", "reason": "Killing", "lastTimestamp": "2026-11-29T11:58:00Z",
               "involvedObject": {"kind": "Pod", "name": pod["metadata"]["name"]},
               "message": "Container app failed liveness probe, will be restarted"}
    lines = describe_digest(pod, owners=["ReplicaSet/checkout-6f8d9c7b5d", "Deployment/checkout"],
                            events=[*routine, killing]).splitlines()
    assert lines[0].endswith("created=2026-11-29T09:00:00Z started=2026-11-29T09:05:00Z")
    assert "labels app=checkout" in lines   # the template hash is in the owner's name
    assert not any(ln.startswith("conditions ") for ln in lines)   # PodScheduled and Initialized: implied
    assert 'condition Ready=False reason=ContainersNotReady message="containers with unready status: [app]"' in lines
    assert "condition ContainersReady=False (as Ready)" in lines
    assert "container app ready=false restarts=0 image_id=sha256:e11fb29f9cb2" in lines
    assert lines[-2:] == [
        "events start-up: Pulled x47, Created x48, Started x48",
        "event 2026-11-29T11:58:00Z Normal Killing count=1: Container app failed liveness probe, will be restarted"]


def test_describe_pending_pod_without_statuses():
    text = describe_digest(PENDING, owners=[], events=[])
    assert "node none (not scheduled)" in text
    assert "owner none (a bare pod)" in text
    assert "container app status=none (the container has not been created)" in text
    assert 'condition PodScheduled=False reason=Unschedulable message="0/3 nodes are available' in text
    assert "event none recorded" in text


def test_events_last_25_chronological_and_robust_to_missing_times():
    items = [{"reason": f"R{i}", "type": "Normal", "message": f"m{i}",
              "involvedObject": {"kind": "Pod", "name": "p"},
              "lastTimestamp": f"2026-11-29T10:{i:02d}:00Z"} for i in range(40)]
    items.reverse()
    items.append({"reason": "NoTime", "message": "x", "involvedObject": {"kind": "Pod", "name": "p"}})
    items.append({"reason": "EventTimeOnly", "message": "y", "involvedObject": {"kind": "Pod", "name": "p"},
                  "eventTime": "2026-11-29T11:00:00.123456Z", "lastTimestamp": None})
    items.append({"reason": "MetaOnly", "involvedObject": {"kind": "Pod", "name": "p"},
                  "metadata": {"creationTimestamp": "2026-11-29T09:00:00Z"}})
    text = events_digest({"items": items}, namespace="prod", now=NOW)
    lines = text.splitlines()
    assert lines[0] == ("events in namespace prod: 43 total, showing the last 25 (more exist: narrow with type,"
                        " involved_kind or name), oldest first")
    assert len(lines) == 26
    assert lines[-1] == "2026-11-29T11:00:00Z Normal EventTimeOnly Pod/p age=1h count=1: y"
    assert lines[-2].startswith("2026-11-29T10:39:00Z Normal R39 ")
    times = [l.split()[0] for l in lines[1:]]
    assert times == sorted(times)


def test_events_filtered_by_name_and_none():
    items = [{"reason": "A", "involvedObject": {"name": "x"}}, {"reason": "B", "involvedObject": {"name": "y"}}]
    text = events_digest({"items": items}, namespace="prod", name="y", now=NOW)
    assert text.splitlines()[0] == "events in namespace prod (about y): 1 total, oldest first"
    assert text.splitlines()[1] == "time=unknown Normal B ?/y age=unknown count=1:"
    assert events_digest({"items": []}, namespace="prod").startswith("no events in namespace prod")


def test_log_text_loses_terminal_escapes():
    assert clean_log_text("\x1b[31mred\x1b[0m\r\nbell\x07") == "red\nbell?"


def test_timestamps_with_any_fraction_length_parse():
    from mcp_kubectl_server.digests.text import parse_time
    for value in ("2026-11-29T10:00:00.5Z", "2026-11-29T10:00:00.123Z", "2026-11-29T10:00:00.123456789Z",
                  "2026-11-29T10:00:00Z", "2026-11-29T10:00:00+00:00"):
        assert parse_time(value).strftime("%H:%M:%S") == "10:00:00", value
    assert parse_time("yesterday") is None and parse_time(None) is None


def test_newlines_in_any_cluster_field_cannot_start_a_line():
    # Anyone allowed to create Events chooses their reason and object name; none may fake a line.
    event = {"type": "Warning\nFAKE type", "reason": "Bad\nFAKE reason", "message": "m\nFAKE message",
             "involvedObject": {"kind": "Pod\nFAKE", "name": "p\rFAKE"}, "count": 2}
    text = events_digest({"items": [event]}, namespace="prod")
    assert len(text.splitlines()) == 2 and "FAKE reason" in text
    pod = make_pod("odd-1", ready=False, state={"waiting": {"reason": "X\nFAKE reason", "message": "y\nFAKE"}},
                   node="node-a\nFAKE node")
    assert len(pods_digest(pods(pod), namespace="prod", now=NOW).splitlines()) == 2


def test_get_pods_keeps_of_each_pod_all_that_its_digest_reads():
    # get_pods holds only pod_list_item(pod) of each listed pod: the digest must not change.
    from fixtures.kube_sim.store import CLUSTERS_DIR, load_cluster
    from mcp_kubectl_server.tools.pods import pod_list_item
    terminating = dict(HEALTHY, metadata=dict(HEALTHY["metadata"], deletionTimestamp="2026-11-29T11:59:00Z"))
    groups = [[HEALTHY, PENDING, CRASH, terminating]]
    for path in sorted(CLUSTERS_DIR.glob("*.json")):
        objects = [o for o in load_cluster(path)["objects"] if o.get("kind") == "Pod"]
        groups += [[o for o in objects if o["metadata"]["namespace"] == ns]
                   for ns in sorted({o["metadata"]["namespace"] for o in objects})]
    for items in groups:
        whole = pods_digest(pods(*items), namespace="prod", now=NOW)
        assert pods_digest(pods(*map(pod_list_item, items)), namespace="prod", now=NOW) == whole
    assert pod_list_item("not a pod") is None
