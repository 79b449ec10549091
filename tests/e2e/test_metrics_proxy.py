"""--prometheus-service through real kubectl proxy: the allow-list opens Prometheus' six query
endpoints on the one service and nothing else behind any service proxy; the reject list alone
(with an allow-list that accepts everything) still refuses what is not under /proxy/api/v1/.
"""

import pytest

from mcp_kubectl_server.read.proxy import accept_paths, reject_paths
from mcp_kubectl_server.read.reader import Reader
from tests.server.test_proxy import raw
from tests.support.server_support import SimView

SERVICE = "monitoring/prometheus:9090"
BASE = "/api/v1/namespaces/monitoring/services/prometheus:9090/proxy"
OPEN = [f"{BASE}/api/v1/query?query=up", f"{BASE}/api/v1/query_range?query=up&start=1&end=2&step=1",
        f"{BASE}/api/v1/series?match%5B%5D=up", f"{BASE}/api/v1/labels",
        f"{BASE}/api/v1/label/__name__/values", f"{BASE}/api/v1/metadata"]
CLOSED = [f"{BASE}", f"{BASE}/", f"{BASE}/graph", f"{BASE}/metrics", f"{BASE}/federate?match[]=up",
          f"{BASE}/-/quit", f"{BASE}/-/reload", f"{BASE}/api/v1/admin/tsdb/snapshot",
          f"{BASE}/api/v1/admin/tsdb/delete_series", f"{BASE}/api/v1/status/config",
          f"{BASE}/api/v1/status/flags", f"{BASE}/api/v1/targets", f"{BASE}/api/v1/rules",
          f"{BASE}/api/v1/query/x", f"{BASE}/api/v1/label/a/values/x", f"{BASE}/api/v2/alerts",
          f"{BASE}/api/v1/query_exemplars", f"{BASE}/apix/v1/query",
          "/api/v1/namespaces/monitoring/services/prometheus:9091/proxy/api/v1/query",
          "/api/v1/namespaces/monitoring/services/grafana:3000/proxy/api/v1/query",
          "/api/v1/namespaces/prod/services/prometheus:9090/proxy/api/v1/query",
          "/api/v1/namespaces/monitoring/services/prometheus/proxy/api/v1/query",
          "/api/v1/namespaces/monitoring/services/https:prometheus:9090/proxy/api/v1/query",
          "/api/v1/namespaces/monitoring/pods/prometheus-0:9090/proxy/api/v1/query",
          "/api/v1/namespaces/monitoring/services/prometheus:9090",
          "/api/v1/namespaces/monitoring/pods"]


@pytest.fixture(scope="module")
def sim():
    from fixtures.kube_sim.sim import start_sim
    with start_sim("throttled") as running:
        yield running


def test_only_the_query_endpoints_of_the_one_service_are_open(sim):
    mine = SimView(sim)   # the module's other tests read this simulator too, in any order
    reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",), timeout=10,
                    prometheus=type("Service", (), {"service": SERVICE})())
    try:
        reader.get_json("/version")
        for path in OPEN:
            status, body = raw(reader, "GET", path)
            assert status == 200 and body.startswith(b'{"status":"success"'), (path, body[:200])
        for path in CLOSED:
            assert raw(reader, "GET", path) == (403, b"Forbidden\n"), path
        assert raw(reader, "POST", OPEN[0])[0] == 403
    finally:
        reader.close()
    forwarded = [r["path"] for r in mine.requests if "/services/" in r["path"]]
    assert forwarded == OPEN


def test_the_reject_list_alone_keeps_the_service_proxy_to_its_api(sim):
    reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",), timeout=10,
                    prometheus=type("Service", (), {"service": SERVICE})())
    reader.proxy.filters[0] = "--accept-paths=^.*"
    try:
        reader.get_json("/version")
        for path in CLOSED[:7]:  # the UI, /metrics, /federate, lifecycle: not under /proxy/api/v1/
            assert raw(reader, "GET", path) == (403, b"Forbidden\n"), path
        assert raw(reader, "GET", OPEN[0])[0] == 200
    finally:
        reader.close()


def test_without_a_service_every_service_proxy_stays_refused():
    assert "services/[^/]+/proxy" not in accept_paths(["prod"])
    assert reject_paths() == reject_paths(None)
    assert "/(pods|services|nodes)/[^/]+/(exec|attach|portforward|proxy)(/|$)" in reject_paths().split(",")
    parts = accept_paths(["prod"], service=SERVICE).split(",") + reject_paths(SERVICE).split(",")
    assert all("," not in part for part in parts)
