"""The simulator's metrics section: shapes over time as OpenMetrics, a real Prometheus serving them,
and the API server's service proxy forwarding the one Service it names (others 503 or 404)."""

import json
import time
import urllib.error
import urllib.request

import pytest

from fixtures.kube_sim.metrics import MetricsSectionError, openmetrics, series_samples, value_at

NOW = 1_796_000_000.0


def test_shapes_give_their_value_by_age():
    assert value_at(3.5, 100, history=600) == 3.5
    assert value_at({"linear": [0, 10]}, 600, history=600) == 0
    assert value_at({"linear": [0, 10]}, 0, history=600) == 10
    assert value_at({"step": [1, 5], "at": 300}, 301, history=600) == 1
    assert value_at({"step": [1, 5], "at": 300}, 300, history=600) == 5
    saw = {"sawtooth": [100, 200], "period": 100, "at": 30}
    assert value_at(saw, 30, history=600) == 100       # fell back 30 s ago
    assert value_at(saw, 0, history=600) == 130        # and climbs 1 a second since
    assert value_at(saw, 31, history=600) == 199       # just before the fall
    assert value_at({"events": [50, 500], "base": 2}, 0, history=600) == 4
    assert value_at({"events": [50, 500], "base": 2}, 100, history=600) == 3


def test_jitter_is_the_same_on_every_run_and_bounded():
    shape = {"linear": [10, 10], "jitter": 0.1}
    first = [value_at(shape, age, history=600, key="k") for age in range(0, 600, 30)]
    assert first == [value_at(shape, age, history=600, key="k") for age in range(0, 600, 30)]
    assert all(9 <= v <= 11 for v in first) and len(set(first)) > 5


def test_counters_integrate_their_rate_and_series_live_only_while_alive():
    samples = series_samples({"name": "c_total", "rate": 2}, now=NOW, history=300, interval=30)
    assert samples[0] == (NOW - 300, 60.0) and samples[-1] == (NOW, 660.0)
    alive = series_samples({"name": "g", "value": 1, "alive": [120, 60]}, now=NOW, history=300,
                           interval=30)
    assert [t for t, _ in alive] == [NOW - 120, NOW - 90, NOW - 60]


def test_openmetrics_groups_families_and_escapes_labels():
    text = openmetrics({"history": 60, "interval": 30, "series": [
        {"name": "a", "labels": {"namespace": "prod", "v": 'x"y\\z'}, "value": 1},
        {"name": "b", "labels": {}, "value": 2},
        {"name": "a", "labels": {"namespace": "staging"}, "value": 3}]}, NOW)
    lines = text.splitlines()
    assert lines[0] == "# TYPE a gauge" and lines[-1] == "# EOF"
    assert lines[1] == f'a{{namespace="prod",v="x\\"y\\\\z"}} 1 {NOW - 60:.3f}'
    assert lines.index("# TYPE b gauge") == 7  # both series of a (3 samples each) come first
    with pytest.raises(MetricsSectionError):
        openmetrics({"series": [{"name": "x", "value": {"wobble": 1}}]}, NOW)


def test_a_cluster_with_metrics_gets_a_prometheus_and_one_proxied_service(kube_sim):
    sim = kube_sim("memory-leak")
    query = f"/api/v1/query?query=kube_pod_container_status_restarts_total&time={int(time.time())}"
    with urllib.request.urlopen(sim.prometheus.url + query) as answer:
        result = json.loads(answer.read())["data"]["result"]
    assert {r["metric"]["pod"] for r in result if r["metric"]["namespace"] == "prod"} >= {
        "catalog-7b6c9d8f4c-m4q8z", "catalog-7b6c9d8f4c-w2x7j"}
    base = sim.url + "/api/v1/namespaces/monitoring/services/"
    with urllib.request.urlopen(base + "prometheus:9090/proxy" + query) as answer:
        assert json.loads(answer.read())["data"]["result"] == result
    for path, code in (("grafana:3000/proxy/api/v1/query", 404), ("prometheus:9091/proxy/", 503)):
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(base + path)
        assert caught.value.code == code
        assert json.loads(caught.value.read())["kind"] == "Status"
    prometheus = sim.prometheus
    sim.stop()
    assert prometheus.proc.poll() is not None  # stopped with the simulator


def test_a_cluster_without_metrics_starts_no_prometheus(kube_sim):
    assert kube_sim("crashloop").prometheus is None


def test_a_caller_that_never_queries_metrics_can_start_the_simulator_without_prometheus(kube_sim):
    sim = kube_sim("memory-leak", serve_metrics=False)
    assert sim.metrics and sim.prometheus is None
    service = sim.url + "/api/v1/namespaces/monitoring/services/prometheus:9090/proxy/api/v1/query"
    with pytest.raises(urllib.error.HTTPError) as caught:   # says so, as for a service without one
        urllib.request.urlopen(service + "?query=up")
    assert caught.value.code == 503
