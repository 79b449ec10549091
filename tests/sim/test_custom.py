"""CustomResourceDefinitions in the simulator, exercised with the real kubectl: discovery that
includes the custom groups (`kubectl api-resources`), objects by group/version/plural, namespaced
and cluster-scoped, printer columns, other served versions; and the load-time check of each
custom object against its CRD's openAPIV3Schema.
"""

import json
import shutil

import pytest

from fixtures.kube_sim.objects.operators import crd, custom, operator_crds
from fixtures.kube_sim.store import ClusterFileError, load_cluster
from tests.support.kubectl_tables import ok, rows

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


@pytest.fixture(scope="module")
def certsim(shared_sim):
    return shared_sim("cert-expired")


def test_api_resources_lists_every_custom_kind(certsim):
    table = {r[0]: r for r in rows(ok(certsim, "api-resources", "--api-group=cert-manager.io"))}
    assert table["certificates"] == ["certificates", "cert,certs", "cert-manager.io/v1", "true", "Certificate"]
    assert table["clusterissuers"] == ["clusterissuers", "cert-manager.io/v1", "false", "ClusterIssuer"]
    names = {r[0] for r in rows(ok(certsim, "api-resources"))}
    assert {"applications", "scaledobjects", "authorizationpolicies", "networkchaos", "kustomizations",
            "customresourcedefinitions", "pods"} <= names
    crds = rows(ok(certsim, "get", "crd"))
    assert len(crds) == len(operator_crds()) and crds[0][0] == "applications.argoproj.io"


def test_custom_objects_by_group_version_plural_namespaced_and_cluster_scoped(certsim):
    doc = json.loads(ok(certsim, "get", "certificates.cert-manager.io", "-n", "prod", "-o", "json"))
    assert doc["kind"] == "List"  # kubectl wraps the items it got
    [cert] = doc["items"]
    assert cert["kind"] == "Certificate" and cert["spec"]["secretName"] == "shop-tls"
    table = ok(certsim, "get", "cert", "-n", "prod")
    assert table.splitlines()[0].split() == ["NAME", "READY", "SECRET", "AGE"]
    assert rows(table)[0][:3] == ["shop-tls", "False", "shop-tls"]
    issuer = json.loads(ok(certsim, "get", "clusterissuer", "letsencrypt-prod", "-o", "json"))
    assert "namespace" not in issuer["metadata"] and issuer["spec"]["acme"]["server"].startswith("https://acme-v02")
    assert rows(ok(certsim, "get", "certificates", "-n", "staging")) == []
    chaos = ok(certsim, "get", "networkchaos", "-n", "prod")
    assert rows(chaos)[0][:3] == ["frontend-latency-drill", "delay", "10m"]


def test_another_served_version_answers_with_its_apiversion(shared_sim):
    sim = shared_sim("mesh-deny")
    doc = json.loads(ok(sim, "get", "authorizationpolicies.v1beta1.security.istio.io", "deny-checkout-charges",
                        "-n", "prod", "-o", "json"))
    assert doc["apiVersion"] == "security.istio.io/v1beta1" and doc["spec"]["action"] == "DENY"
    stored = json.loads(ok(sim, "get", "ap", "deny-checkout-charges", "-n", "prod", "-o", "json"))
    assert stored["apiVersion"] == "security.istio.io/v1"
    assert rows(ok(sim, "get", "ap", "-n", "prod")) [1][:2] == ["deny-checkout-charges", "DENY"]


def write(tmp_path, *objects, with_crds=True):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"kind": "SimulatedCluster", "base": "healthy",
                                "objects": (operator_crds() if with_crds else []) + list(objects)}))
    return path


def cert(spec=None, status=None, namespace="prod", api_version="cert-manager.io/v1"):
    return custom(api_version, "Certificate", "c", namespace,
                  spec=spec or {"secretName": "c-tls", "issuerRef": {"name": "ca"}}, status=status)


@pytest.mark.parametrize("obj,words", [
    (cert(spec={"issuerRef": {"name": "ca"}}), ".spec.secretName: is required"),
    (cert(spec={"secretName": 7, "issuerRef": {"name": "ca"}}), ".spec.secretName: must be of type string"),
    (cert(spec={"secretName": "x", "issuerRef": {"name": "ca"}, "dnsName": ["a"]}), ".spec.dnsName: unknown field"),
    (cert(status={"conditions": [{"type": "Ready", "status": "Yes"}]}), "'Yes' is not one of"),
    (cert(namespace=None), "metadata.namespace must be set"),
    (cert(api_version="cert-manager.io/v1alpha2"), "version 'v1alpha2' is not served"),
    (custom("security.istio.io/v1", "AuthorizationPolicy", "a", "prod", spec={"action": "REJECT"}), "'REJECT' is not one of"),
])
def test_a_custom_object_that_breaks_its_crd_schema_is_refused(tmp_path, obj, words):
    with pytest.raises(ClusterFileError, match=words.replace("(", r"\(").replace(".", r"\.")):
        load_cluster(write(tmp_path, obj))


def test_an_object_of_a_kind_without_its_crd_and_a_malformed_crd_are_refused(tmp_path):
    with pytest.raises(ClusterFileError, match="or the kind of a CustomResourceDefinition in the file"):
        load_cluster(write(tmp_path, cert(), with_crds=False))
    broken = crd("example.com", "Widget", "widgets", versions=("v1",))
    broken["metadata"]["name"] = "widgets"
    with pytest.raises(ClusterFileError, match="must be named PLURAL.GROUP"):
        load_cluster(write(tmp_path, broken, with_crds=False))
    open_schema = crd("example.com", "Widget", "widgets", versions=("v1",))
    loaded = load_cluster(write(tmp_path, open_schema, custom("example.com/v1", "Widget", "w", "prod",
                                                              spec={"anything": {"goes": [1, 2]}}), with_crds=False))
    assert any(o["kind"] == "Widget" for o in loaded["objects"])
