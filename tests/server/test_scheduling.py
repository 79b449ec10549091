"""Scheduling constraints in words, and the line naming the constraint no node satisfies.

Pods and nodes are real-shaped API JSON; the planted node-selector cluster is checked against
the simulator's FailedScheduling message, which it computes independently from the same objects.
"""

import json

from fixtures.kube_sim.scenarios.net import scheduler_message
from fixtures.kube_sim.store import CLUSTERS_DIR
from mcp_kubectl_server.digests.scheduling import (constraint_changes, constraint_lines, pod_lines, tolerates,
                                           toleration_text, unplaced_line)


def node(name, zone, *, taints=(), unschedulable=False, **labels):
    spec = {"taints": list(taints)} if taints else {}
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": dict({"kubernetes.io/hostname": name,
                                                      "topology.kubernetes.io/zone": zone}, **labels)},
            "spec": spec}


NODES = [node("node-a", "zone-a", disktype="ssd"), node("node-b", "zone-b"),
         node("node-c", "zone-c", taints=[{"key": "dedicated", "value": "mail", "effect": "NoSchedule"}])]


def pending(**spec):
    return {"metadata": {"name": "web-1", "namespace": "prod"}, "spec": dict(spec),
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes are available: ..."}]}}


def test_a_plain_running_pod_says_none_and_its_node():
    spec = {"nodeName": "node-b", "priority": 0,
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}]}
    assert constraint_lines(spec, {"phase": "Running"}) == [
        "node selector: none",
        "tolerations: node.kubernetes.io/not-ready:NoExecute op=Exists for 300s",
        "priority class: none (priority 0)",
        "assigned node: node-b"]
    assert unplaced_line({"spec": spec, "status": {"phase": "Running"}}, NODES) is None


def test_every_kind_of_constraint_gets_a_line():
    spec = {"nodeSelector": {"disktype": "ssd"}, "priorityClassName": "high", "priority": 1000,
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                               "values": ["zone-a", "zone-b"]}]},
                        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 20, "preference": {"matchExpressions": [
                            {"key": "cores", "operator": "Gt", "values": ["8"]}]}}]},
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchExpressions": [
                        {"key": "app", "operator": "In", "values": ["web"]}]},
                        "namespaces": ["prod"], "topologyKey": "topology.kubernetes.io/zone"}}]}},
            "tolerations": [{"operator": "Exists"}, {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "topologySpreadConstraints": [{"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
                                           "whenUnsatisfiable": "DoNotSchedule",
                                           "labelSelector": {"matchLabels": {"app": "web"}}}]}
    lines = constraint_lines(spec, pending()["status"])
    assert lines == [
        "node selector: disktype=ssd",
        "node affinity required (any one term): topology.kubernetes.io/zone in (zone-a,zone-b) | gpu",
        "node affinity preferred (weight 20): cores>8",
        "pod affinity required: pods app=cache per kubernetes.io/hostname",
        "pod anti-affinity preferred (weight 100): pods app in (web) in namespaces prod per "
        "topology.kubernetes.io/zone",
        "tolerations: op=Exists (every taint), gpu:NoSchedule op=Exists",
        "topology spread: topology.kubernetes.io/zone:DoNotSchedule when max skew 2 is exceeded for selector app=web",
        "priority class: high (priority 1000)",
        "assigned node: none (PodScheduled=False reason=Unschedulable)"]
    assert constraint_lines(spec)[-1] == "priority class: high (priority 1000)"  # a template: no placement


def test_a_selector_no_node_has_is_named_with_the_values_nodes_do_have():
    line = unplaced_line(pending(nodeSelector={"kubernetes.io/hostname": "node-d"},
                                 tolerations=[{"key": "dedicated", "operator": "Equal", "value": "mail",
                                               "effect": "NoSchedule"}]), NODES)
    assert line == ("why not placed: no node satisfies the node selector kubernetes.io/hostname=node-d: 0 of 3 "
                    "nodes match (kubernetes.io/hostname on the nodes: node-a, node-b, node-c)")


def test_taints_and_selectors_together_name_each_group():
    line = unplaced_line(pending(nodeSelector={"disktype": "hdd"}), NODES)
    assert line == ("why not placed: no node passes every constraint: 2 nodes do not match the node "
                    "selector disktype=hdd (node-a, node-b); 1 node has untolerated taint dedicated=mail:NoSchedule (node-c)")
    cordoned = [node("node-a", "zone-a", unschedulable=True)]
    assert unplaced_line(pending(), cordoned) == ("why not placed: no node passes every constraint: "
                                                  "1 node is cordoned (node-a)")


def test_required_affinity_terms_are_ored_and_a_passing_node_points_elsewhere():
    terms = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "NotIn",
                               "values": ["zone-a", "zone-c"]}]}]}}}
    line = unplaced_line(pending(affinity=terms), NODES)
    assert line.startswith("why not placed: node selector, node affinity and taints allow 1 of 3 nodes (node-b);")
    assert "see the scheduler's FailedScheduling message" in line
    none_match = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}}}
    line = unplaced_line(pending(affinity=none_match, tolerations=[{"operator": "Exists"}]), NODES)
    assert line == ("why not placed: no node satisfies the required node affinity gpu: 0 of 3 nodes match "
                    "(gpu on the nodes: no node has this label)")
    assert unplaced_line(pending(), []) == "why not placed: the cluster has no node at all"


def test_toleration_matching_follows_operator_and_effect():
    taint = {"key": "dedicated", "value": "mail", "effect": "NoSchedule"}
    assert tolerates([{"key": "dedicated", "operator": "Equal", "value": "mail"}], taint)
    assert not tolerates([{"key": "dedicated", "operator": "Equal", "value": "batch"}], taint)
    assert tolerates([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}], taint)
    assert not tolerates([{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}], taint)
    assert tolerates([{"operator": "Exists"}], taint)
    assert toleration_text({"key": "a", "value": "b", "effect": "NoSchedule"}) == "a=b:NoSchedule"


def test_the_planted_pod_and_the_simulators_message_agree():
    doc = json.loads((CLUSTERS_DIR / "node-selector.json").read_text())
    nodes = [o for o in doc["objects"] if o["kind"] == "Node"]
    stuck = next(o for o in doc["objects"] if o["kind"] == "Pod" and o["metadata"]["name"].startswith("mailer-58"))
    message = stuck["status"]["conditions"][0]["message"]
    assert message == scheduler_message(stuck, nodes)
    assert "3 node(s) didn't match Pod's node affinity/selector" in message
    assert "no node satisfies the node selector kubernetes.io/hostname=node-d" in unplaced_line(stuck, nodes)
    untolerating = json.loads(json.dumps(stuck))
    untolerating["spec"]["tolerations"] = []
    assert "1 node(s) had untolerated taint {dedicated: mail}, 2 node(s) didn't match" in \
        scheduler_message(untolerating, nodes)
    assert "1 node has untolerated taint dedicated=mail:NoSchedule (node-c)" in unplaced_line(untolerating, nodes)


def test_pod_lines_add_the_why_not_line_only_for_an_unplaced_pod():
    stuck = pending(nodeSelector={"kubernetes.io/hostname": "node-d"})
    lines = pod_lines(stuck, NODES)
    assert lines[0] == "scheduling node selector: kubernetes.io/hostname=node-d"
    assert lines[-1].startswith("scheduling why not placed: no node passes every constraint: 2 nodes do not")
    unread = pod_lines(stuck, None, nodes_error="the cluster refused this read (403 Forbidden)")
    assert unread[-1] == ("scheduling why not placed: the nodes could not be read (the cluster refused this "
                          "read (403 Forbidden))")
    placed = {"spec": {"nodeName": "node-a"}, "status": {"phase": "Running"}}
    assert pod_lines(placed, NODES)[-1] == "scheduling assigned node: node-a"


def test_template_changes_name_each_constraint_that_moved():
    old = {"tolerations": [{"key": "dedicated", "value": "mail", "effect": "NoSchedule"}]}
    new = dict(old, nodeSelector={"kubernetes.io/hostname": "node-d"}, priorityClassName="mail-high")
    assert constraint_changes(old, new) == [
        "scheduling node selector: none -> kubernetes.io/hostname=node-d",
        "scheduling priority class: none -> mail-high"]
    assert constraint_changes(new, new) == []
