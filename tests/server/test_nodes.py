"""Node digests on real-shaped API JSON: quantities, Ready and pressure conditions, taints,
requested vs allocatable, and describe_node naming only the pods of the namespaces in scope."""

from fixtures.kube_sim.objects import core as k
from fixtures.kube_sim.scenarios.workloads import evicted, node_notready
from mcp_kubectl_server.digests.nodes import describe_node_digest, nodes_digest, pod_requests, quantity

NOW = k.REFERENCE_TIME


def test_quantities():
    assert quantity("250m") == 0.25 and quantity("4") == 4 and quantity("1.5Gi") == 1.5 * 2**30
    assert quantity("16374584Ki") == 16374584 * 1024 and quantity("1e3") == 1000 and quantity("2M") == 2e6
    assert quantity("lots") is None and quantity(None) is None and quantity("") is None


def test_pod_requests_count_the_largest_init_container():
    pod = {"spec": {"containers": [{"resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                                   {"resources": {"requests": {"cpu": "200m"}}}],
                    "initContainers": [{"resources": {"requests": {"cpu": "1", "memory": "32Mi"}}}]}}
    assert pod_requests(pod) == {"cpu": 1.0, "memory": 64 * 2**20}


def lists(build):
    objects, _ = build()
    nodes = {"items": [o for o in objects if o["kind"] == "Node"]}
    pods = {"items": [o for o in objects if o["kind"] == "Pod"]}
    events = [o for o in objects if o["kind"] == "Event"]
    return nodes, pods, events


def test_notready_node_first_with_its_reason_and_taints():
    nodes, pods, _ = lists(node_notready)
    lines = nodes_digest(nodes, pods, now=NOW).splitlines()
    assert lines[0] == "nodes: 3 total, 1 not healthy (listed first)"
    assert lines[1].startswith('node-c ready=Unknown reason=NodeStatusUnknown message="Kubelet stopped posting '
                               'node status." pressure=none taints=node.kubernetes.io/unreachable:NoSchedule,'
                               'node.kubernetes.io/unreachable:NoExecute schedulable=yes cpu_requested=700m/4000m(18%)')
    assert "pods=7/110 platform=linux/amd64 kernel=6.8.0-1015-gcp runtime=containerd://1.7.24 kubelet=v1.32.4 age=40d" in lines[1]
    assert lines[2].startswith("node-a ready=True pressure=none taints=none schedulable=yes")


def test_disk_pressure_is_unhealthy_and_failed_pods_hold_nothing():
    nodes, pods, _ = lists(evicted)
    line = nodes_digest(nodes, pods, now=NOW).splitlines()[1]
    assert line.startswith("node-b ready=True pressure=DiskPressure taints=node.kubernetes.io/disk-pressure:NoSchedule")
    assert "pods=3/110" in line  # the two evicted (Failed) pods no longer count
    assert nodes_digest({"items": []}, {"items": []}).startswith("no nodes")


def test_describe_node_names_pods_in_scope_and_only_counts_the_others():
    nodes, pods, events = lists(node_notready)
    node = next(n for n in nodes["items"] if n["metadata"]["name"] == "node-c")
    text = describe_node_digest(node, pods, events, allowed_namespaces=("prod",), now=NOW)
    assert "condition Ready=Unknown reason=NodeStatusUnknown last_transition=" in text
    assert "taint node.kubernetes.io/unreachable:NoExecute" in text
    assert "pods on node: 7 (3 in namespaces in scope: prod; 4 in other namespaces, not named)" in text
    assert "pod prod/ledger-writer-66c9d8f7b5-f4k7s phase=Terminating" in text
    assert "Normal NodeNotReady Node/node-c age=25m count=1: Node node-c status is now: NodeNotReady" in text
    outside = [p["metadata"]["name"] for p in pods["items"] if p["spec"].get("nodeName") == "node-c"
               and p["metadata"]["namespace"] != "prod"]
    assert len(outside) == 4
    for name in outside:
        assert name not in text and name.rsplit("-", 2)[0] not in text
    for ns in ("kube-system", "staging"):
        assert ns not in text


def test_describe_node_without_events_or_pods():
    nodes, _, _ = lists(evicted)
    text = describe_node_digest(nodes["items"][0], {"items": []}, [], allowed_namespaces=("prod",), now=NOW)
    assert "pods on node: 0 (0 in namespaces in scope: prod; 0 in other namespaces, not named)" in text
    assert text.endswith("event none recorded for this node (events expire after about an hour)")
