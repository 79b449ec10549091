"""The simulator's network kinds and scheduling-constrained pods, exercised with the real kubectl.

NetworkPolicies and Ingresses are served as tables, as JSON and to `kubectl describe`; pods keep
their node selector, affinity, tolerations and spread constraints; a Pending pod's
FailedScheduling message agrees with its constraints and the nodes.
"""

import json
import shutil

import pytest

from fixtures.kube_sim.sim import start_sim
from tests.support.kubectl_tables import ok

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


def rows(text):
    return [line.split() for line in text.splitlines()]


@pytest.fixture(scope="module")
def netsim():
    with start_sim("network-policy") as sim:
        yield sim


def test_network_policies_as_a_table_json_and_describe(netsim):
    table = rows(ok(netsim, "get", "netpol", "-n", "prod"))
    assert table[0] == ["NAME", "POD-SELECTOR", "AGE"]
    assert [r[:2] for r in table[1:]] == [["allow-frontend-from-ingress", "app=frontend"],
                                          ["default-deny-ingress", "<none>"]]
    doc = json.loads(ok(netsim, "get", "networkpolicy", "default-deny-ingress", "-n", "prod", "-o", "json"))
    assert doc["apiVersion"] == "networking.k8s.io/v1" and doc["spec"] == {"podSelector": {},
                                                                           "policyTypes": ["Ingress"]}
    listed = json.loads(ok(netsim, "get", "networkpolicies", "-n", "prod", "-o", "json"))
    assert len(listed["items"]) == 2
    described = ok(netsim, "describe", "networkpolicy", "-n", "prod")
    assert "<none> (Selected pods are isolated for ingress connectivity)" in described
    assert "NamespaceSelector: kubernetes.io/metadata.name=ingress-nginx" in described
    assert "To Port: 8080/TCP" in described
    assert rows(ok(netsim, "get", "netpol", "-n", "staging")) == []


def test_ingresses_as_a_table_and_describe_with_backends(netsim):
    table = rows(ok(netsim, "get", "ingress", "-n", "prod"))
    assert table[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert table[1][:6] == ["frontend", "nginx", "shop.example.com", "203.0.113.10", "80,", "443"]
    described = ok(netsim, "describe", "ingress", "frontend", "-n", "prod")
    assert "shop-tls terminates shop.example.com" in described
    assert "frontend:http (" in described and described.count(":8080") == 3  # endpoints, derived
    ok(netsim, "get", "ing", "frontend", "-n", "prod", "-o", "json")


def test_network_kinds_are_not_in_category_all(netsim):
    assert "networkpolic" not in ok(netsim, "get", "all", "-n", "prod")


def test_constrained_pods_keep_their_constraints_and_the_message_agrees(kube_sim):
    sim = kube_sim("node-selector")
    pods = json.loads(ok(sim, "get", "pods", "-n", "prod", "-l", "app=mailer", "-o", "json"))["items"]
    stuck = [p for p in pods if p["status"]["phase"] == "Pending"]
    assert len(pods) == 3 and len(stuck) == 1
    spec = stuck[0]["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "node-d"} and "nodeName" not in spec
    assert spec["affinity"]["podAntiAffinity"] and spec["topologySpreadConstraints"][0]["maxSkew"] == 1
    assert {t["key"] for t in spec["tolerations"]} == {"dedicated", "node.kubernetes.io/not-ready",
                                                       "node.kubernetes.io/unreachable"}
    nodes = {r[0] for r in rows(ok(sim, "get", "nodes"))[1:]}
    assert "node-d" not in nodes and len(nodes) == 3
    described = ok(sim, "describe", "pod", stuck[0]["metadata"]["name"], "-n", "prod")
    assert "Node-Selectors:               kubernetes.io/hostname=node-d" in described
    assert ("FailedScheduling  " in described and "0/3 nodes are available: 3 node(s) didn't match Pod's "
            "node affinity/selector." in described)
    node_c = json.loads(ok(sim, "get", "node", "node-c", "-o", "json"))
    assert node_c["spec"]["taints"] == [{"key": "dedicated", "value": "mail", "effect": "NoSchedule"}]
