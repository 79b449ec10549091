"""The simulator's access, routing and priority kinds, exercised with the real kubectl: list,
get and table output as a real API server prints them, managedFields on what it stores, and
Secrets shown by kubectl only as a name, a type and a count of keys."""

import json
import shutil

import pytest

from fixtures.kube_sim.sim import start_sim
from tests.support.kubectl_tables import ok, rows, tables

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


@pytest.fixture(scope="module")
def rbac_sim():
    with start_sim("rbac-list") as sim:
        yield sim


@pytest.fixture(scope="module")
def ingress_sim():
    with start_sim("ingress-port") as sim:
        yield sim


def test_rbac_kinds_list_and_get_as_kubectl_prints_them(rbac_sim):
    sas, roles, crbs, crs = tables(rbac_sim, "serviceaccounts,roles,clusterrolebindings,clusterroles", "-n", "prod")
    assert rows(sas) == [["serviceaccount/default", "0", "40d"], ["serviceaccount/stock-sync", "0", "30d"]]
    assert roles.splitlines()[0].split() == ["NAME", "CREATED", "AT"]
    wide = rows(ok(rbac_sim, "get", "rolebindings", "-n", "prod", "-o", "wide"))
    assert ["stock-sync-reader", "Role/stock-sync-reader", "60d", "prod/stock-sync"] == wide[0]
    assert rows(crbs) == [["clusterrolebinding.rbac.authorization.k8s.io/system:basic-user",
                           "ClusterRole/system:basic-user", "40d"]]
    assert [r[0] for r in rows(crs)] == [f"clusterrole.rbac.authorization.k8s.io/{name}"
                                         for name in ("system:basic-user", "view")]
    role = json.loads(ok(rbac_sim, "get", "role", "stock-sync-reader", "-n", "prod", "-o", "json", "--show-managed-fields"))
    assert role["rules"][0] == {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch"]}
    entry = role["metadata"]["managedFields"][0]
    assert entry["manager"] == "rbac-cleanup" and entry["operation"] == "Update" and "f:rules" in entry["fieldsV1"]
    assert ok(rbac_sim, "get", "sa", "stock-sync", "-n", "prod", "-o", "name") == "serviceaccount/stock-sync\n"


def test_cluster_scoped_classes_print_their_columns(rbac_sim):
    ingress_classes, priority_classes = tables(rbac_sim, "ingressclasses,priorityclasses")
    assert rows(ingress_classes) == [["ingressclass.networking.k8s.io/nginx", "k8s.io/ingress-nginx", "<none>", "40d"]]
    assert rows(priority_classes) == [
        ["priorityclass.scheduling.k8s.io/system-cluster-critical", "2000000000", "false", "40d", "PreemptLowerPriority"],
        ["priorityclass.scheduling.k8s.io/system-node-critical", "2000001000", "false", "40d", "PreemptLowerPriority"]]
    pc = json.loads(ok(rbac_sim, "get", "pc", "system-node-critical", "-o", "json", "--show-managed-fields"))
    assert pc["value"] == 2000001000 and pc["metadata"]["managedFields"][0]["manager"] == "kube-apiserver"


def test_ingresses_with_several_paths_and_their_tls_secret(ingress_sim):
    ingresses, secrets = tables(ingress_sim, "ingress,secrets", "-n", "prod")
    assert rows(ingresses) == [
        ["ingress.networking.k8s.io/shop", "nginx", "shop.example.com", "203.0.113.10", "80,", "443", "30d"]]
    ing = json.loads(ok(ingress_sim, "get", "ingress", "shop", "-n", "prod", "-o", "json", "--show-managed-fields"))
    paths = ing["spec"]["rules"][0]["http"]["paths"]
    assert paths[1]["backend"] == {"service": {"name": "api", "port": {"number": 8080}}}
    managers = [(m["manager"], m.get("subresource")) for m in ing["metadata"]["managedFields"]]
    assert managers == [("helm", None), ("nginx-ingress-controller", "status")]
    assert rows(secrets) == [["secret/shop-tls", "kubernetes.io/tls", "2", "30d"]]
