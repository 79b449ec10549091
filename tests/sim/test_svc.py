"""The simulator's service, config, storage and quota kinds, exercised with the real kubectl.

Endpoints and EndpointSlices are derived on every read: these tests check they follow the pods
(including after a pod is deleted), never a stored copy. Tests that only read share one
simulator per cluster (shared_sim); the one that deletes a pod starts its own.
"""

import json
import shutil
import urllib.request

import pytest

from fixtures.kube_sim.endpoints import derive, resolve_port
from fixtures.kube_sim.store import ClusterFileError, load_cluster
from tests.support import kubectl_tables
from tests.support.kubectl_tables import ok, rows, tables

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


def raw(sim, path):
    with urllib.request.urlopen(sim.url + path, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def selector_sim(shared_sim):
    return shared_sim("service-selector")


def test_endpoints_follow_selectors_and_readiness(selector_sim):
    table = {r[0]: r for r in rows(ok(selector_sim, "get", "endpoints", "-n", "prod"))}
    assert table["payments"][1] == "<none>"  # selects app=payments-api; the pods are app=payments
    assert len(table["checkout"][1].split(",")) == 2 and table["checkout"][1].endswith(":8080")
    ep = json.loads(ok(selector_sim, "get", "endpoints", "payments", "-n", "prod", "-o", "json"))
    assert ep["kind"] == "Endpoints" and "subsets" not in ep


def test_endpointslices_are_labelled_and_selectable_like_the_controller_writes_them(selector_sim):
    doc = raw(selector_sim, "/apis/discovery.k8s.io/v1/namespaces/prod/endpointslices"
                            "?labelSelector=kubernetes.io/service-name%3Dcheckout")
    assert doc["kind"] == "EndpointSliceList" and len(doc["items"]) == 1
    item = doc["items"][0]
    assert item["metadata"]["name"].startswith("checkout-") and item["addressType"] == "IPv4"
    assert item["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert all(e["conditions"]["ready"] and e["targetRef"]["kind"] == "Pod" for e in item["endpoints"])
    placeholder = raw(selector_sim, "/apis/discovery.k8s.io/v1/namespaces/prod/endpointslices"
                                    "?labelSelector=kubernetes.io/service-name%3Dpayments")["items"][0]
    assert placeholder["endpoints"] is None and placeholder["ports"] is None
    described = ok(selector_sim, "describe", "service", "frontend", "-n", "prod")
    assert "Endpoints:" in described and described.count(":8080") == 3


def test_not_ready_pods_are_not_ready_endpoints(shared_sim):
    sim = shared_sim("crashloop")
    ep = json.loads(ok(sim, "get", "endpoints", "checkout", "-n", "prod", "-o", "json"))
    assert [len(s.get("addresses", [])) for s in ep["subsets"]] == [0]
    assert len(ep["subsets"][0]["notReadyAddresses"]) == 2
    sl = json.loads(ok(sim, "get", "endpointslices", "-n", "prod", "-l",
                       "kubernetes.io/service-name=checkout", "-o", "json"))["items"][0]
    assert [e["conditions"]["ready"] for e in sl["endpoints"]] == [False, False]


def test_deleting_a_pod_changes_the_endpoints_at_once(kube_sim):
    sim = kube_sim("service-selector")
    before = json.loads(ok(sim, "get", "endpoints", "checkout", "-n", "prod", "-o", "json"))
    gone = before["subsets"][0]["addresses"][0]["targetRef"]["name"]
    ok(sim, "delete", "pod", gone, "-n", "prod", "--wait=false")
    after = json.loads(ok(sim, "get", "endpoints", "checkout", "-n", "prod", "-o", "json"))
    names = [a["targetRef"]["name"] for s in after["subsets"] for a in s.get("addresses", [])
             + s.get("notReadyAddresses", [])]
    assert gone not in names and len(names) == 2  # the ReplicaSet's replacement took its place


HEADERS = {   # each kind's header row, by the cluster that has objects of it
    "pvc-pending": {
        "endpoints": ["NAME", "ENDPOINTS", "AGE"],
        "endpointslices": ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
        "pvc": ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS", "AGE"],
        "pv": ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS", "CLAIM",
               "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"],
        "storageclasses": ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE",
                           "ALLOWVOLUMEEXPANSION", "AGE"]},
    "missing-secret": {"configmaps": ["NAME", "DATA", "AGE"]},
    "quota-blocked": {"resourcequotas": ["NAME", "AGE", "REQUEST", "LIMIT"],
                      "limitranges": ["NAME", "CREATED", "AT"]},
}


@pytest.fixture(scope="module")
def headers(shared_sim):
    """{cluster: {kind: its header row}}, as kubectl prints them: one `kubectl get` a cluster,
    made at the first test that asks for that cluster's."""
    printed = {}

    def of(cluster):
        if cluster not in printed:
            kinds = HEADERS[cluster]
            stdout = ok(shared_sim(cluster), "get", ",".join(kinds), "-n", "prod")
            printed[cluster] = kubectl_tables.headers(stdout, kinds)
        return printed[cluster]
    return of


@pytest.mark.parametrize("cluster, resource, header", [
    pytest.param(cluster, resource, header, id=f"{resource}-header")
    for cluster, kinds in HEADERS.items() for resource, header in kinds.items()])
def test_table_columns_match_a_real_server(headers, cluster, resource, header):
    assert headers(cluster)[resource] == header


def test_storage_values(shared_sim):
    sim = shared_sim("pvc-pending")
    pvcs, scs = tables(sim, "pvc,storageclasses", "-n", "prod")
    claims = {r[0]: r for r in rows(pvcs)}
    data, backups = claims["persistentvolumeclaim/ledger-data"], claims["persistentvolumeclaim/ledger-backups"]
    assert data[1:3] == ["Pending", "fast-ssd"]  # no volume, capacity or modes yet
    assert backups[1] == "Bound" and backups[3:6] == ["50Gi", "RWO", "gp3"]
    classes = [r[0:2] for r in rows(scs)]
    assert classes == [["storageclass.storage.k8s.io/gp3", "(default)"],
                       ["storageclass.storage.k8s.io/io2-archive", "ebs.csi.aws.com"]]
    described = ok(sim, "describe", "pvc", "ledger-data", "-n", "prod")
    assert "Used By:       ledger-7f6d5c9b8d-r8m2q" in described
    assert 'storageclass.storage.k8s.io "fast-ssd" not found' in described
    sc = raw(sim, "/apis/storage.k8s.io/v1/storageclasses/gp3")
    assert sc["kind"] == "StorageClass" and sc["provisioner"] == "ebs.csi.aws.com"


def test_quota_values_match_the_pods(shared_sim):
    sim = shared_sim("quota-blocked")
    quotas, pods = tables(sim, "quota,pods", "-n", "prod")
    assert " ".join(rows(quotas)[0][2:]).startswith("pods: 5/5, requests.cpu: 800m/4")
    assert len(rows(pods)) == 5
    assert "Default Limit" in ok(sim, "describe", "limitrange", "prod-limits", "-n", "prod")


def test_discovery_lists_the_new_groups_and_get_all_leaves_config_out(selector_sim):
    groups = {g["name"] for g in raw(selector_sim, "/apis")["groups"]}
    assert {"apps", "discovery.k8s.io", "storage.k8s.io"} <= groups
    storage = raw(selector_sim, "/apis/storage.k8s.io/v1")
    assert [(r["name"], r["namespaced"]) for r in storage["resources"]] == [("storageclasses", False)]
    kinds = {line.split("/")[0] for line in ok(selector_sim, "get", "all", "-n", "prod", "-o", "name").split()}
    assert kinds == {"pod", "service", "deployment.apps", "replicaset.apps"}


def test_cluster_files_cannot_store_derived_kinds(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"kind": "SimulatedCluster", "referenceTime": "2026-11-29T12:00:00Z",
                                "objects": [{"apiVersion": "v1", "kind": "Endpoints",
                                             "metadata": {"name": "x", "namespace": "prod"}}]}))
    with pytest.raises(ClusterFileError, match="derives those from Services and pods"):
        load_cluster(str(path))


def test_derive_ignores_selectorless_services_and_finished_pods():
    cluster = load_cluster("service-selector")
    services = [o for o in cluster["objects"] if o["kind"] == "Service"]
    pods = [o for o in cluster["objects"] if o["kind"] == "Pod"]
    manual = dict(services[0], spec=dict(services[0]["spec"], selector=None))
    assert derive("endpoints", [manual], pods) == []
    checkout = next(s for s in services if s["metadata"]["name"] == "checkout"
                    and s["metadata"]["namespace"] == "prod")
    done = [dict(p, status=dict(p["status"], phase="Succeeded")) for p in pods]
    assert "subsets" not in derive("endpoints", [checkout], done)[0]
    assert resolve_port(pods[0], "http") == 8080 and resolve_port(pods[0], "grpc") is None


@pytest.mark.parametrize("cluster, args, expected", [
    ("missing-secret", ("configmap", "billing-config", "-n", "prod"), "DB_HOST:"),
    ("pvc-pending", ("pv",), "Claim:"),
    ("pvc-pending", ("storageclass", "gp3"), "IsDefaultClass:        Yes"),
    ("quota-blocked", ("resourcequota", "prod-quota", "-n", "prod"), "pods             5       5"),
    ("service-selector", ("endpoints", "checkout", "-n", "prod"), "Addresses:"),
    ("service-selector", ("endpointslices", "-n", "prod", "-l", "kubernetes.io/service-name=checkout"),
     "AddressType:  IPv4"),
])
def test_kubectl_describe_works_for_every_new_kind(shared_sim, cluster, args, expected):
    assert expected in ok(shared_sim(cluster), "describe", *args)
