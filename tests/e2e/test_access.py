"""End to end for get_ingresses, get_rbac and get_priority_classes: the server over stdio (in a
thread: tests/support/server_thread.py), its kubectl proxy, the simulator's ingress-port, ingress-class and rbac-list clusters.

Each tool names its planted fault; reads stay GETs inside the scope; no Secret is read unless
the server runs with --read-tls-certificates, and then only the TLS Secret by name, whose key
never appears in any output; --no-cluster-tools makes the cluster-scoped parts say what they
could not check; bad arguments and other namespaces are refused before any read.

The rbac-list and ingress-class tests share one server per cluster and set of flags (conftest's
shared_serve).
"""

import base64
import json

import pytest

from fixtures.kube_sim.objects import access as a
from tests.e2e.test_services import ok, only_scoped_gets, tool_reads

KEY_PARTS = ("plant-tls-key", base64.b64encode(a.TLS_KEY_TEXT.encode()).decode()[:40], "PRIVATE KEY")


def paths(sim):
    return {r["path"].split("?")[0] for r in sim.requests}


def test_get_ingresses_names_the_missing_port_and_reads_no_secret(serve):
    server, sim = serve("ingress-port")
    text = ok(server, "get_ingresses", {"namespace": "prod"})
    assert text.splitlines()[0] == ("ingresses in prod: 1 (1 with a broken link); IngressClasses: nginx "
                                    "(k8s.io/ingress-nginx, default)")
    assert ("  broken: path /api (Prefix, host shop.example.com) -> Service api:8080: the Service has no port"
            " 8080 (its ports: 80 (http))") in text.splitlines()
    assert "  path / (Prefix, host shop.example.com) -> Service frontend:http: 3 ready endpoints" in text
    assert "Secret shop-tls: not read (this server reads no Secrets)" in text
    assert server.close() == 0
    only_scoped_gets(sim)
    assert "/apis/networking.k8s.io/v1/ingressclasses" in paths(sim)
    assert sim.journal_entries() == []


def test_certificates_are_read_by_name_and_the_key_never_comes_out(serve, tmp_path):
    expired = a.tls_secret("prod", "shop-tls", hosts=["shop.example.com"], issued_days_ago=120, valid_days=90)
    cluster = tmp_path / "expired.json"
    cluster.write_text(json.dumps({"kind": "SimulatedCluster", "base": "ingress-port", "objects": [expired]}))
    for name, words in (("ingress-port", "tls shop.example.com -> Secret shop-tls: subject CN=shop.example.com;"
                                         " issuer CN=R11,O=Let's Encrypt,C=US; valid until 2036-"),
                        (str(cluster), "broken: tls shop.example.com -> Secret shop-tls: subject CN=shop.example"
                                       ".com; issuer CN=R11,O=Let's Encrypt,C=US; the certificate expired at "
                                       "2026-10-30T12:00:00Z")):
        server, sim = serve(name, "--read-tls-certificates")
        text = ok(server, "get_ingresses", {"namespace": "prod"})
        assert words in text, text
        assert server.close() == 0
        out = text + server.stderr_text()  # whatever the server writes holds no part of the key
        assert not [part for part in KEY_PARTS if part in out]
        secret_reads = [r["path"] for r in sim.requests if "/secrets" in r["path"]]
        assert secret_reads == ["/api/v1/namespaces/prod/secrets/shop-tls"]


def test_a_missing_or_forbidden_tls_secret_is_said_as_such(serve, tmp_path):
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"kind": "SimulatedCluster", "base": "ingress-class"}))
    server, _ = serve(str(missing), "--read-tls-certificates")
    assert ("broken: tls shop.example.com -> Secret shop-tls: the Secret does not exist in prod"
            in ok(server, "get_ingresses", {"namespace": "prod"}))
    assert server.close() == 0
    forbidden = tmp_path / "forbidden.json"
    forbidden.write_text(json.dumps({"kind": "SimulatedCluster", "base": "ingress-port",
                                     "forbidden": [{"resource": "secrets", "namespace": "prod"}]}))
    server, _ = serve(str(forbidden), "--read-tls-certificates")
    text = ok(server, "get_ingresses", {"namespace": "prod"})
    assert ("Secret shop-tls: not readable by these credentials (403): the optional Role in "
            "outputs/rbac-tls-certificates.yaml must name shop-tls in its resourceNames") in text
    assert server.close() == 0


def test_an_ingress_class_that_does_not_exist_and_cluster_reads_switched_off(shared_serve):
    server, sim = shared_serve("ingress-class")
    text = ok(server, "get_ingresses", {"namespace": "prod"})
    assert ("  broken: class nginx-internal: IngressClass nginx-internal does not exist (IngressClasses: "
            "nginx (k8s.io/ingress-nginx, default)); no controller serves this Ingress, so nothing routes its"
            " traffic") in text.splitlines()
    assert "ingress docs: class=nginx-internal address=none tls=0" in text
    server, sim = shared_serve("ingress-class", "--no-cluster-tools")  # a new view: without the read above
    text = ok(server, "get_ingresses", {"namespace": "prod"})
    assert "class=nginx-internal (IngressClasses not checked: cluster-scoped reads are switched off" in text
    assert not [p for p in paths(sim) if "ingressclasses" in p]


def test_get_rbac_says_the_account_cannot_list_pods_and_why(shared_serve):
    server, sim = shared_serve("rbac-list")
    text = ok(server, "get_rbac", {"namespace": "prod", "service_account": "stock-sync", "can": "list pods"})
    lines = text.splitlines()
    assert lines[0] == "service account prod/stock-sync: used by 1 pod (stock-sync); image pull Secret names: none"
    assert "    rule: get,watch on pods" in lines
    assert ("  can list pods: NO: no rule bound to it grants list on pods (Role stock-sync-reader grants "
            "get,watch on pods); a request it makes gets 403 Forbidden") in lines
    assert "  cluster-wide: 1 ClusterRoleBinding names this account or a group it belongs to" in text
    assert "system:basic-user" not in text  # counted, never named
    whole = ok(server, "get_rbac", {"namespace": "prod"})
    assert "rolebinding stock-sync-reader -> Role stock-sync-reader: subjects ServiceAccount prod/stock-sync" in whole
    assert "rolebinding view-team -> ClusterRole view: subjects Group shop-developers" in whole
    only_scoped_gets(sim)
    assert not [r for r in sim.requests if "impersonate" in json.dumps(r).lower()]
    assert sim.journal_entries() == []


def test_get_rbac_without_cluster_reads_says_what_it_did_not_count(shared_serve):
    server, sim = shared_serve("rbac-list", "--no-cluster-tools")
    text = ok(server, "get_rbac", {"namespace": "prod", "service_account": "stock-sync", "can": "get pods"})
    assert "can get pods: YES, granted by Role stock-sync-reader via RoleBinding stock-sync-reader" in text
    assert "cluster-wide bindings: not counted (cluster-scoped reads are switched off" in text
    assert not [p for p in paths(sim) if "/clusterrole" in p]


def test_get_priority_classes_and_its_switch(shared_serve):
    server, sim = shared_serve("rbac-list")
    text = ok(server, "get_priority_classes", {})
    assert text.splitlines()[0] == "priority classes: 2 (no global default: pods that name no class get priority 0)"
    assert "system-node-critical value=2000001000 preemption=PreemptLowerPriority (built in)" in text
    server, sim = shared_serve("rbac-list", "--no-cluster-tools")
    names = [t["name"] for t in server.request("tools/list", {})["result"]["tools"]]
    assert "get_priority_classes" not in names and {"get_ingresses", "get_rbac"} <= set(names)
    reply = server.request("tools/call", {"name": "get_priority_classes", "arguments": {}})
    assert reply["error"]["code"] == -32602 and "Unknown tool: 'get_priority_classes'" in reply["error"]["message"]
    assert not [p for p in paths(sim) if "priorityclasses" in p]


@pytest.mark.parametrize("tool, arguments, message", [
    ("get_ingresses", {"namespace": "kube-system"}, "outside this server's scope"),
    ("get_rbac", {"namespace": "default"}, "outside this server's scope"),
    ("get_rbac", {"namespace": "prod", "can": "list pods"}, "can: needs service_account"),
    ("get_rbac", {"namespace": "prod", "service_account": "-A"}, "service_account"),
    ("get_rbac", {"namespace": "prod", "service_account": "x", "can": "list pods --as=admin"},
     "must be 'VERB RESOURCE'"),
    ("get_rbac", {"namespace": "prod", "service_account": "x", "can": "impersonate users"},
     "the verb must be one of"),
    ("get_ingresses", {"namespace": "prod", "name": "shop"}, "unknown argument"),
    ("get_priority_classes", {"namespace": "prod"}, "unknown argument"),
])
def test_bad_arguments_and_other_namespaces_are_refused_before_any_read(shared_serve, tool, arguments, message):
    server, sim = shared_serve("rbac-list")
    before = len(tool_reads(sim))
    text, is_error = server.call(tool, arguments)
    assert is_error and message in text, text
    assert len(tool_reads(sim)) == before
