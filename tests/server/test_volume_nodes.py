"""A PersistentVolume's node affinity in words, and the pod that can run on none of its nodes."""

from mcp_kubectl_server.digests.volume_nodes import affinity_line, allowed_nodes, conflict_line


def node(name, **labels):
    return {"metadata": {"name": name, "labels": dict({"kubernetes.io/hostname": name}, **labels)}, "spec": {}}


NODES = [node("node-a"), node("node-b", disktype="ssd"), node("node-c", disktype="ssd")]


def volume(*values, key="kubernetes.io/hostname"):
    pv = {"metadata": {"name": "local-pv-node-a"}, "spec": {}}
    if values:
        pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}}
    return pv


def pod(**spec):
    return {"metadata": {"name": "analytics-1"}, "spec": spec, "status": {"phase": "Pending"}}


def test_affinity_in_words_with_the_nodes_it_allows():
    assert affinity_line(volume("node-a"), NODES) == (
        "node affinity: kubernetes.io/hostname in (node-a) (nodes: node-a)")
    assert affinity_line(volume("node-a"), None) == "node affinity: kubernetes.io/hostname in (node-a)"
    assert affinity_line(volume(), NODES) == "node affinity: none (usable on every node)"
    assert affinity_line(volume("node-z"), NODES).endswith("(nodes: none of the cluster nodes)")
    assert allowed_nodes(volume("ssd", key="disktype"), NODES) == ["node-b", "node-c"]


def test_a_pod_whose_selector_excludes_the_volume_node_is_a_conflict():
    line = conflict_line(volume("node-a"), pod(nodeSelector={"disktype": "ssd"}), NODES)
    assert line.startswith("pod analytics-1 cannot run on any node volume local-pv-node-a allows (node-a): "
                           "node-a does not match the pod's node selector disktype=ssd")
    assert "volume node affinity conflict" in line


def test_a_taint_on_the_only_allowed_node_is_a_conflict_too():
    tainted = [dict(NODES[0], spec={"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]})]
    line = conflict_line(volume("node-a"), pod(), tainted + NODES[1:])
    assert "node-a is refused: untolerated taint dedicated=db:NoSchedule" in line


def test_no_conflict_when_some_node_suits_both_or_the_pod_is_placed():
    assert conflict_line(volume("node-a"), pod(), NODES) is None
    assert conflict_line(volume("node-b", "node-c"), pod(nodeSelector={"disktype": "ssd"}), NODES) is None
    assert conflict_line(volume("node-a"), pod(nodeName="node-a", nodeSelector={"disktype": "ssd"}), NODES) is None
    assert conflict_line(volume(), pod(nodeSelector={"disktype": "ssd"}), NODES) is None


def test_a_volume_no_node_can_use():
    line = conflict_line(volume("node-gone"), pod(), NODES)
    assert line.startswith("volume local-pv-node-a allows no node of the cluster (kubernetes.io/hostname in (node-gone))")


def _storage(pod_spec, pv, nodes=NODES, **kw):
    from mcp_kubectl_server.digests.storage import storage_digest
    claim = {"metadata": {"name": "analytics-data", "namespace": "prod"},
             "spec": {"storageClassName": "local-storage", "volumeName": "local-pv-node-a",
                      "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}}},
             "status": {"phase": "Bound"}}
    pv = dict(pv, spec=dict(pv["spec"], claimRef={"namespace": "prod", "name": "analytics-data"},
                            persistentVolumeReclaimPolicy="Retain"), status={"phase": "Bound"})
    user = dict(pod(**pod_spec), spec=dict(pod_spec, volumes=[
        {"name": "data", "persistentVolumeClaim": {"claimName": "analytics-data"}}]))
    return storage_digest({"items": [claim]}, {"items": []}, {"items": [user]}, namespace="prod",
                          volumes={"local-pv-node-a": pv}, nodes=nodes, **kw).splitlines()


def test_storage_digest_broken_names_the_conflict_healthy_says_only_the_affinity():
    broken = _storage({"nodeSelector": {"disktype": "ssd"}}, volume("node-a"))
    assert broken[0].startswith("storage in prod: 1 claims (1 not Bound or with a problem)")
    assert "  volume node affinity: kubernetes.io/hostname in (node-a) (nodes: node-a)" in broken
    assert broken[-1].startswith("  problem: pod analytics-1 cannot run on any node volume local-pv-node-a")
    healthy = _storage({"nodeName": "node-a"}, volume("node-a"))
    assert healthy[0].startswith("storage in prod: 1 claims (0 not Bound or with a problem)")
    assert not any("problem:" in ln for ln in healthy)
    assert _storage({}, volume())[1:] == [ln for ln in _storage({}, volume())[1:] if "node affinity" not in ln]


def test_storage_digest_says_when_the_nodes_could_not_be_read():
    text = _storage({"nodeSelector": {"disktype": "ssd"}}, volume("node-a"), nodes=None, nodes_error="403 Forbidden")
    assert "  volume node affinity: kubernetes.io/hostname in (node-a)" in text
    assert text[-1].startswith("nodes not readable (403 Forbidden), so a volume's node affinity is not checked")
