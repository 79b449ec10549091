"""The kubectl proxy child: what its filters let through (its life: test_proxy_life.py).

Every case runs the real `kubectl proxy` against the simulator and talks to the unix socket with
a raw HTTP client, as anything on this machine could: writes and out-of-scope paths must be
refused by the proxy itself (403 "Forbidden", never forwarded: the simulator's request log shows
it), so read-only holds even if the server's own client were wrong.
"""

import pytest

from mcp_kubectl_server.read.proxy import accept_paths
from mcp_kubectl_server.read.reader import Reader
from mcp_kubectl_server.read.unixhttp import UnixHTTPConnection
from tests.support.api_stub import ApiStub
from tests.support.server_support import SimView

POD = "checkout-6f8d9c7b5d-x7k2p"
OUT_OF_SCOPE = [
    "/api/v1/namespaces/kube-system/pods",
    "/api/v1/namespaces/default/pods",
    "/api/v1/pods/x",
    "/api/v1/pods/x/log",
    "/api/v1/namespaces",
    "/api/v1/namespaces/kube-system",
    "/api/v1/events",
    "/api/v1/namespaces/prod/secrets",
    "/api/v1/namespaces/prod/secrets/payment-credentials",
    "/api/v1/secrets",
    f"/api/v1/namespaces/prod/pods/{POD}/exec",
    f"/api/v1/namespaces/prod/pods/{POD}/exec?command=sh&stdin=true",
    f"/api/v1/namespaces/prod/pods/{POD}/attach",
    f"/api/v1/namespaces/prod/pods/{POD}/portforward",
    f"/api/v1/namespaces/prod/pods/{POD}/proxy",
    f"/api/v1/namespaces/prod/pods/{POD}/proxy/admin",
    f"/api/v1/namespaces/prod/pods/{POD}:8080/proxy/",
    f"/api/v1/namespaces/prod/pods/{POD}/ephemeralcontainers",
    f"/api/v1/namespaces/prod/pods/{POD}/eviction",
    "/api/v1/namespaces/prod/services/checkout/proxy",
    "/api/v1/namespaces/prod/services/checkout:80/proxy/",
    "/api/v1/namespaces/prod/serviceaccounts/default/token",
    "/api/v1/nodes/node-a/proxy",
    "/api/v1/nodes/node-a/proxy/configz",
    "/api/v1/nodes/node-a:10250/proxy/logs/",
    "/api/v1/proxy/namespaces/prod/pods/x",
    "/api/v1/namespaces/prod/pods/../../kube-system/pods",
    f"/api/v1/namespaces/prod/pods/{POD}%2Fexec",
    "/api/v1/namespaces/prod/pods/x/log/../../../../kube-system/pods",
    "/apis/rbac.authorization.k8s.io/v1/rolebindings",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles",
    "/api/v1/serviceaccounts",
    "/api/v1/namespaces/kube-system/serviceaccounts/default",
    "/apis/apps/v1/namespaces/kube-system/deployments",
    "/apis/apps/v1/deployments",
    "/apis/apps/v1/namespaces/prod/deployments/checkout/scale",
    "/apis/certificates.k8s.io/v1/certificatesigningrequests",
    "/apis/networking.k8s.io/v1/networkpolicies",
    "/apis/networking.k8s.io/v1/namespaces/kube-system/networkpolicies",
    "/apis/networking.k8s.io/v1/namespaces/staging/ingresses/frontend",
    "/apis/scheduling.k8s.io/v1/namespaces/prod/priorityclasses",
    "/metrics", "/logs/", "/openapi/v2", "/debug/pprof/",
]


@pytest.fixture
def reader(kube_sim):
    sim = kube_sim("crashloop")
    reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",), timeout=10)
    reader.get_json("/version")  # starts the proxy
    yield reader, sim
    reader.close()


@pytest.fixture(scope="module")
def shared_reader(shared_sim):
    """One reader (and proxy) over the module's crashloop simulator for the tests that only send
    requests."""
    sim = shared_sim("crashloop")
    reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",), timeout=10)
    reader.get_json("/version")  # starts the proxy
    yield reader, sim
    reader.close()


def raw(reader, method, path):
    """(status, body) of one request on a fresh connection to the proxy's socket."""
    conn = UnixHTTPConnection(reader.proxy.socket_path, timeout=10)
    try:
        conn.request(method, path, body=b"{}" if method in ("POST", "PUT", "PATCH") else None)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def forwarded(sim, path):
    return [r for r in sim.requests if r["path"] == path]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "get", "GETX"])
def test_the_proxy_refuses_every_method_but_get(shared_reader, method):
    reader, sim = shared_reader[0], SimView(shared_reader[1])  # the requests from here on
    path = f"/api/v1/namespaces/prod/pods/{POD}"
    status, body = raw(reader, method, path)
    assert status == 403 and body in (b"Forbidden\n", b"")
    assert forwarded(sim, path) == [] and sim.journal_entries() == []
    assert raw(reader, "GET", path)[0] == 200  # the same path is readable with GET


def test_the_proxy_refuses_paths_outside_the_scope(reader):
    reader, sim = reader
    for path in OUT_OF_SCOPE:
        status, body = raw(reader, "GET", path)
        if "/../" in path:  # Go cleans the path first: a redirect to it, which is then refused
            assert status == 301, path
            continue
        assert (status, body) == (403, b"Forbidden\n"), path
    # only start-up reads reached the cluster (the proxy's own probe may come later, or not yet)
    assert {r["path"] for r in sim.requests} <= {"/version?timeout=5s", "/version"}
    assert "/version" in {r["path"] for r in sim.requests}  # ours, which started the proxy


def read_paths():
    """One list and one get path per kind the tools read, plus discovery and cluster-scoped ones."""
    paths = ["/version", "/api", "/api/v1", "/apis", "/apis/apps/v1", "/apis/storage.k8s.io/v1",
             "/apis/networking.k8s.io/v1", "/apis/rbac.authorization.k8s.io/v1", "/apis/scheduling.k8s.io/v1",
             "/api/v1/namespaces/prod", f"/api/v1/namespaces/prod/pods/{POD}/log",
             *CLUSTER_SCOPED]
    for prefix, resources in (("/api/v1", "pods events services endpoints configmaps persistentvolumeclaims "
                                          "resourcequotas limitranges serviceaccounts"),
                              ("/apis/apps/v1", "deployments replicasets statefulsets daemonsets "
                                                "controllerrevisions"),
                              ("/apis/batch/v1", "jobs cronjobs"),
                              ("/apis/autoscaling/v2", "horizontalpodautoscalers"),
                              ("/apis/discovery.k8s.io/v1", "endpointslices"),
                              ("/apis/events.k8s.io/v1", "events"),
                              ("/apis/networking.k8s.io/v1", "networkpolicies ingresses"),
                              ("/apis/coordination.k8s.io/v1", "leases"),
                              ("/apis/rbac.authorization.k8s.io/v1", "roles rolebindings")):
        for resource in resources.split():
            paths += [f"{prefix}/namespaces/prod/{resource}", f"{prefix}/namespaces/prod/{resource}/x.y-1"]
    return paths


def test_the_proxy_forwards_the_read_paths_of_the_tools():
    with ApiStub([]) as api:  # answers every read (a JSON 404): what matters is that it got them
        reader = Reader(kubeconfig=api.kubeconfig, namespaces=("prod",), timeout=10)
        try:
            reader.get_json("/version")
            for path in read_paths():
                assert raw(reader, "GET", path)[1] != b"Forbidden\n", path
        finally:
            reader.close()
        assert set(read_paths()) <= set(api.reads())


CLUSTER_SCOPED = ["/api/v1/pods", "/api/v1/nodes", "/api/v1/nodes/node-a", "/api/v1/persistentvolumes",
                  "/apis/storage.k8s.io/v1/storageclasses", "/api/v1/namespaces/default/events",
                  "/apis/events.k8s.io/v1/namespaces/default/events", "/apis/networking.k8s.io/v1/ingressclasses",
                  "/apis/scheduling.k8s.io/v1/priorityclasses", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                  "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"]


def test_cluster_scoped_paths_can_be_switched_off(shared_sim):
    sim = shared_sim("crashloop")
    reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",), cluster_scoped=False)
    try:
        reader.get_json("/version")
        for path in CLUSTER_SCOPED:
            assert raw(reader, "GET", path) == (403, b"Forbidden\n"), path
        assert raw(reader, "GET", f"/api/v1/namespaces/prod/pods/{POD}")[0] == 200
    finally:
        reader.close()
    parts = accept_paths(["prod", "web-2"], cluster_scoped=False).split(",")
    assert all(part.startswith("^") and part.endswith("$") for part in parts)  # kubectl splits on ","


SECRETS_REFUSED = ["/api/v1/namespaces/prod/secrets", "/api/v1/namespaces/prod/secrets/", "/api/v1/secrets",
                   "/api/v1/secrets/shop-tls", "/api/v1/namespaces/kube-system/secrets/shop-tls",
                   "/api/v1/namespaces/prod/secrets?watch=true", "/api/v1/namespaces/prod/secrets/shop-tls/x",
                   "/api/v1/watch/namespaces/prod/secrets/shop-tls"]


def test_with_read_tls_only_one_secret_by_name_in_scope_is_readable(shared_sim):
    sim = SimView(shared_sim("ingress-port"))  # the requests from here on
    reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",), read_tls=True)
    try:
        reader.get_json("/version")
        assert raw(reader, "GET", "/api/v1/namespaces/prod/secrets/shop-tls")[0] == 200
        for path in SECRETS_REFUSED:
            assert raw(reader, "GET", path) == (403, b"Forbidden\n"), path
        reader.proxy.filters[0] = "--accept-paths=^.*"  # the reject list alone still refuses them
        reader.proxy.restart()
        for path in SECRETS_REFUSED:  # every list, watch and cluster-wide form; a name elsewhere is layer 1's
            if "kube-system" not in path and "/watch/" not in path:
                assert raw(reader, "GET", path) == (403, b"Forbidden\n"), path
    finally:
        reader.close()
    assert not [r for r in sim.requests if "secrets" in r["path"] and "shop-tls" not in r["path"]]


def test_the_reader_reads_a_secret_only_through_get_secret_and_only_when_told(shared_sim):
    sim = SimView(shared_sim("ingress-port"))  # the requests from here on
    path = "/api/v1/namespaces/prod/secrets/shop-tls"
    for read_tls in (False, True):
        reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",), read_tls=read_tls)
        try:
            for call in (reader.get_json, reader.list_json, reader.get_text):
                with pytest.raises(ValueError, match="does not read Secrets"):
                    call(path)
            with pytest.raises(ValueError, match="does not read Secrets"):
                reader.list_json("/api/v1/namespaces/prod/secrets")
            for other in ("/api/v1/namespaces/staging/secrets/shop-tls", "/api/v1/namespaces/prod/secrets",
                          "/api/v1/namespaces/prod/configmaps/shop-tls") + (() if read_tls else (path,)):
                with pytest.raises(ValueError, match="does not read Secrets"):
                    reader.get_secret(other)
            if read_tls:
                assert reader.get_secret(path)["type"] == "kubernetes.io/tls"
        finally:
            reader.close()
    assert [r["path"] for r in sim.requests if "secrets" in r["path"]] == [path]


@pytest.mark.parametrize("namespaces", [(), ("prod", ".*"), ("prod|kube-system",), ("a,b",), ("",)])
def test_the_allow_list_is_built_from_namespace_names_only(namespaces):
    with pytest.raises(ValueError):
        accept_paths(namespaces)


def test_the_reject_list_alone_refuses_secrets_and_workload_subresources(shared_sim):
    # The second, independent layer: even with an allow-list that accepts everything.
    sim = shared_sim("crashloop")
    reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",))
    reader.proxy.filters[0] = "--accept-paths=^.*"
    try:
        reader.get_json("/version")
        for path in OUT_OF_SCOPE:
            if any(word in path for word in ("/exec", "/attach", "/portforward", "/proxy", "/secrets")):
                assert raw(reader, "GET", path)[1] == b"Forbidden\n", path
        for name in ("proxy", "exec", "secrets"):  # objects so named are not subresources
            assert raw(reader, "GET", f"/api/v1/namespaces/prod/pods/{name}")[0] == 404
        assert raw(reader, "GET", "/api/v1/namespaces/kube-system/pods")[0] == 200  # only layer 3 stops this
    finally:
        reader.close()
