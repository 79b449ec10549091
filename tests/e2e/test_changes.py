"""End to end for get_changes and the history the other tools now show: our server over stdio,
real kubectl, the simulator's found-by-time incidents (flag-flip, wrong-arch, quota-lowered).
Scope, argument checks, a forbidden read, the cluster-scoped switch and the read-only journal are
checked on the way."""

import json
import re
import shutil

import pytest

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


def ok(server, tool, arguments):
    text, is_error = server.call(tool, arguments)
    assert not is_error, text
    return text


def change_lines(text):
    return [line for line in text.splitlines()[1:] if not line.startswith("note:")]


def test_a_flag_flipped_by_hand_is_the_one_change_of_the_hour(shared_serve):
    server, sim = shared_serve("flag-flip")
    text = ok(server, "get_changes", {"namespace": "prod", "since_minutes": 60})
    assert text.splitlines()[0].startswith("changes in namespace prod over the last 60 min (since ")
    [line] = change_lines(text)
    # 14m when the shared simulator loaded its cluster; a test later in the suite reads it older
    assert re.search(r"\(1[4-9]m ago\) ConfigMap/checkout-flags edited: key PRICING_ENGINE by kubectl-edit "
                     r"\(Update\)$", line), line
    config = ok(server, "get_config", {"namespace": "prod", "name": "checkout-flags"})
    assert "(9d ago) by helm (Update): keys CART_TTL, NEW_CHECKOUT_UI, metadata" in config
    assert re.search(r"\(1[4-9]m ago\) by kubectl-edit \(Update\): keys PRICING_ENGINE", config), config
    quiet = ok(server, "get_changes", {"namespace": "prod", "kind": "Deployment", "since_minutes": 60})
    assert quiet.splitlines()[0].endswith(": 0") and quiet.splitlines()[1].startswith("no change found")
    assert sim.journal_entries() == []


def test_an_image_of_another_architecture_is_named_next_to_its_node(shared_serve):
    server, _ = shared_serve("wrong-arch")
    text = ok(server, "get_changes", {"namespace": "prod"})
    assert ("Deployment/imgproc rollout to revision 2 (ReplicaSet imgproc-7f5d9c8b6d): container imgproc image "
            "registry.example.com/shop/imgproc:1.7.3 -> registry.example.com/shop/imgproc:1.8.0 by helm (Update)") in text
    pod = ok(server, "describe_pod", {"namespace": "prod", "name": "imgproc-7f5d9c8b6d-k3p9w"})
    assert ('platform mismatch: container imgproc failed with "exec /usr/local/bin/imgproc: exec format error" '
            "on node node-c (linux/amd64)") in pod
    healthy = ok(server, "describe_pod", {"namespace": "prod", "name": "imgproc-59c7d8b6f4-b8m2t"})
    assert "platform" not in healthy
    nodes = ok(server, "get_nodes", {})
    assert nodes.count("platform=linux/amd64 kernel=6.8.0-1015-gcp runtime=containerd://1.7.24 kubelet=v1.32.4") == 3
    assert "platform=linux/amd64" in ok(server, "describe_node", {"name": "node-c"}).splitlines()[0]


def test_a_quota_lowered_by_automation_and_the_scale_up_it_refused(shared_serve):
    server, _ = shared_serve("quota-lowered")
    lines = change_lines(ok(server, "get_changes", {"namespace": "prod", "since_minutes": 120}))
    assert lines[0].endswith("ResourceQuota/compute edited: hard pods=20, hard requests.cpu=3, "
                             "hard requests.memory=24Gi by capacity-planner (Apply)")
    assert any("HorizontalPodAutoscaler/orders autoscaled: New size: 6" in line for line in lines[1:])
    times = [line.split(" ", 1)[0] for line in lines]
    assert times == sorted(times)


def test_node_changes_only_for_nodes_of_the_namespace_and_only_with_cluster_reads(serve, shared_serve):
    server, _ = shared_serve("node-notready")
    text = ok(server, "get_changes", {"namespace": "prod", "kind": "Node"})
    assert "Node/node-c became NotReady (Unknown): NodeStatusUnknown (runs 3 pods of the namespace)" in text
    quiet, _ = serve("node-notready", "--no-cluster-tools")
    text = ok(quiet, "get_changes", {"namespace": "prod"})
    assert "Node/" not in text and "note:" not in text


def test_a_forbidden_list_is_a_note_and_the_rest_is_shown(serve, tmp_path):
    cluster = tmp_path / "forbidden.json"
    cluster.write_text(json.dumps({"kind": "SimulatedCluster", "base": "flag-flip",
                                   "forbidden": [{"resource": "configmaps", "namespace": "prod"}]}))
    server, _ = serve(str(cluster))
    text = ok(server, "get_changes", {"namespace": "prod"})
    assert "ConfigMap/" not in text
    assert "note: not read: /api/v1/namespaces/prod/configmaps (" in text


@pytest.mark.parametrize("arguments, why", [
    ({"namespace": "kube-system"}, "outside this server's scope"),
    ({"namespace": "prod", "since_minutes": 0}, "since_minutes: must be a whole number from 1 to 10080"),
    ({"namespace": "prod", "kind": "Secret"}, "kind: must be one of"),
    ({"namespace": "prod", "all_namespaces": True}, "unknown argument"),
])
def test_bad_arguments_and_scope_are_refused(shared_serve, arguments, why):
    server, sim = shared_serve("flag-flip")
    text, is_error = server.call("get_changes", arguments)
    assert is_error and why in text
    assert sim.journal_entries() == []


def test_an_operators_object_is_a_change_too(shared_serve):
    server, sim = shared_serve("mesh-deny")
    text = ok(server, "get_changes", {"namespace": "prod", "since_minutes": 120})
    assert re.search(r"\(3[5-9]m ago\) AuthorizationPolicy/deny-checkout-charges created", text), text
    only = ok(server, "get_changes", {"namespace": "prod", "kind": "AuthorizationPolicy", "since_minutes": 120})
    assert change_lines(only) == [line for line in change_lines(text) if " AuthorizationPolicy/" in line]
    assert sim.journal_entries() == []
