"""The kubectl proxy's allow-list for custom kinds: it opens exactly the discovery paths and, once
get_custom_resources resolved a kind (Reader.allow_custom), /apis/GROUP/VERSION/namespaces/NS/PLURAL
[/NAME] in the allowed namespaces, plus a ClusterIssuer by name; every other path stays refused by
the proxy itself (403 "Forbidden", never forwarded).
"""

import pytest

from mcp_kubectl_server.read.discovery import ApiKind, custom_paths
from mcp_kubectl_server.read.reader import Reader
from tests.server.test_proxy import raw
from tests.support.server_support import SimView

CERT = ApiKind("cert-manager.io", "v1", "certificates", "Certificate", True, ("cert",), "certificate")
ISSUER = ApiKind("cert-manager.io", "v1", "clusterissuers", "ClusterIssuer", False, (), "clusterissuer")
CHAOS = ApiKind("chaos-mesh.org", "v1alpha1", "networkchaos", "NetworkChaos", True, (), "networkchaos")
OPENED = ["/apis/cert-manager.io/v1/namespaces/prod/certificates",
          "/apis/cert-manager.io/v1/namespaces/prod/certificates/shop-tls",
          "/apis/cert-manager.io/v1/clusterissuers/letsencrypt-prod"]
STILL_REFUSED = [
    "/apis/cert-manager.io/v1/namespaces/staging/certificates",
    "/apis/cert-manager.io/v1/namespaces/kube-system/certificates/shop-tls",
    "/apis/cert-manager.io/v1/certificates",
    "/apis/cert-manager.io/v1/namespaces/prod/certificates/shop-tls/status",
    "/apis/cert-manager.io/v1beta1/namespaces/prod/certificates",
    "/apis/cert-manager.io/v1/watch/namespaces/prod/certificates",
    "/apis/cert-manager.io/v1/clusterissuers",
    "/apis/cert-manager.io/v1/namespaces/prod/issuers",  # not resolved: not opened
    "/apis/keda.sh/v1alpha1/namespaces/prod/scaledobjects",
    "/apis/bitnami.com/v1alpha1/namespaces/prod/sealedsecrets",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/certificates.cert-manager.io",
    "/apis/cert-manager.io/v1/namespaces/prod/certificates/../../staging/certificates",
    "/api/v1/namespaces/prod/secrets/shop-tls",
    "/apis/cert-manager.io/v1/namespaces/prod/certificates,/api/v1/secrets",
]


@pytest.fixture
def reader(shared_sim):
    sim = SimView(shared_sim("cert-expired"))
    reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",), timeout=10)
    reader.get_json("/version")
    yield reader, sim
    reader.close()


def test_custom_paths_are_refused_until_discovery_resolved_the_kind(reader):
    reader, sim = reader
    assert raw(reader, "GET", "/apis/cert-manager.io/v1")[0] == 200  # discovery is open
    assert raw(reader, "GET", "/apis/chaos-mesh.org")[0] == 200
    for path in OPENED:
        assert raw(reader, "GET", path) == (403, b"Forbidden\n"), path
    starts = reader.proxy.starts
    reader.allow_custom([CERT, ISSUER])
    reader.get_json("/version")  # a proxy with the wider list starts
    assert reader.proxy.starts == starts + 1
    for path in OPENED:
        assert raw(reader, "GET", path)[0] == 200, path
    for path in STILL_REFUSED:
        status, body = raw(reader, "GET", path)
        if "/../" in path:
            assert status == 301, path  # Go cleans the path: a redirect to a path refused below
            continue
        assert (status, body) == (403, b"Forbidden\n"), path
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert raw(reader, method, OPENED[1])[0] == 403
    assert not [r for r in sim.requests if r["path"] in STILL_REFUSED or r["verb"] != "GET"]
    reader.allow_custom([CERT])  # nothing new: the running proxy stays
    reader.get_json("/version")
    assert reader.proxy.starts == starts + 1


def test_without_cluster_reads_a_cluster_scoped_custom_kind_stays_refused(shared_sim):
    sim = shared_sim("cert-expired")
    reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",), timeout=10, cluster_scoped=False)
    try:
        reader.allow_custom([CERT, ISSUER, CHAOS])
        reader.get_json("/version")
        assert raw(reader, "GET", OPENED[2]) == (403, b"Forbidden\n")
        assert raw(reader, "GET", "/apis/chaos-mesh.org/v1alpha1/namespaces/prod/networkchaos")[0] == 200
    finally:
        reader.close()


def test_only_dns_names_become_part_of_the_allow_list():
    hostile = [ApiKind("x.io|.*", "v1", "things", "Thing", True, (), ""),
               ApiKind("x.io", "v1/../..", "things", "Thing", True, (), ""),
               ApiKind("x.io", "v1", "things|secrets", "Thing", True, (), ""),
               ApiKind("other.io", "v1", "widgets", "Widget", False, (), "")]  # cluster-scoped, not listed
    assert custom_paths(hostile, "(prod)", cluster_scoped=True) == []
    parts = custom_paths([CERT, CHAOS, ISSUER], "(prod|web)", cluster_scoped=True)
    assert parts == [r"^/apis/cert-manager\.io/v1/clusterissuers/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
                     r"^/apis/cert-manager\.io/v1/namespaces/(prod|web)/(certificates)(/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$",
                     r"^/apis/chaos-mesh\.org/v1alpha1/namespaces/(prod|web)/(networkchaos)(/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$"]
    assert all("," not in part for part in parts)  # kubectl splits the flag on commas
