"""The metrics tools end to end: our server over stdio (in a thread: tests/support/server_thread.py), a real Prometheus beside the simulator,
reached both ways: --prometheus-url, and --prometheus-service through the server's real kubectl
proxy (the simulator forwards that one service-proxy path to its Prometheus).

One simulator (conftest's shared_sim of the `throttled` cluster, whose metrics section also holds
staging's series with a secret-looking label) and one server per connection mode serve every
read-only test here; a server closed hands its kubectl proxy to the next one launched alike
(tests/support/server_thread.py, KEPT).
"""

import subprocess
import sys

import pytest

from fixtures.kube_sim.scenarios.metrics import STAGING_SECRET
from mcp_kubectl_server.__main__ import main as server_main
from tests.support.server_support import ROOT, ServerProcess, SimView

METRICS_TOOLS = ("get_metrics", "query_metrics", "list_metrics")
SERVICE = "monitoring/prometheus:9090"


@pytest.fixture(scope="module")
def sim(shared_sim):
    return shared_sim("throttled")


def _server(sim, *flags):
    server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", sim.kubeconfig,
                           "--timeout", "30", "--quiet", *flags)
    server.initialize()
    return server


@pytest.fixture(scope="module", params=["url", "service"])
def server(request, sim):
    flags = (("--prometheus-url", sim.prometheus.url) if request.param == "url"
             else ("--prometheus-service", SERVICE))
    running = _server(sim, *flags)
    running.mode = request.param
    yield running
    running.close()


def ok(server, tool, arguments):
    text, is_error = server.call(tool, arguments)
    assert not is_error, text
    assert STAGING_SECRET not in text
    return text


def refused(server, tool, arguments):
    text, is_error = server.call(tool, arguments)
    assert is_error, text
    assert STAGING_SECRET not in text
    return text


def test_the_metrics_tools_are_listed_read_only(server):
    tools = {t["name"]: t for t in server.request("tools/list")["result"]["tools"]}
    for name in METRICS_TOOLS:
        assert tools[name]["annotations"]["readOnlyHint"] is True
        assert "namespace" in tools[name]["inputSchema"]["required"]


def test_get_metrics_finds_the_throttled_workload(server):
    text = ok(server, "get_metrics", {"namespace": "prod", "workload": "Deployment/pricing"})
    lines = text.splitlines()
    assert lines[0].startswith("get_metrics Deployment prod/pricing over the last 60 min to ")
    abnormal = [line for line in lines if line.startswith("ABNORMAL")]
    assert len(abnormal) == 6, text
    assert all("CPU throttled in 6" in line and "its 500m CPU limit holds it back" in line
               for line in abnormal)
    assert "request 250m" in text and "limit 500m" in text


def test_get_metrics_of_a_healthy_pod_says_nothing_abnormal(server, sim):
    pods, _ = sim.store.list("pods", "prod")
    pod = next(p["metadata"]["name"] for p in pods if p["metadata"]["name"].startswith("frontend-"))
    text = ok(server, "get_metrics", {"namespace": "prod", "pod": pod, "window_minutes": 30})
    assert text.splitlines()[1].startswith("nothing abnormal")
    assert "cpu throttled: no cAdvisor series" in text  # frontend has no CPU limit: absent, not 0%


def test_query_metrics_is_scoped_and_summarised(server):
    text = ok(server, "query_metrics", {"namespace": "prod", "minutes": 60, "promql":
                                        "sum by (namespace, pod) (rate(container_cpu_usage_seconds_total[5m])) > 0.3"})
    assert 'namespace="prod"' in text.splitlines()[1]
    assert text.count('{pod="pricing-') == 6 and "first over 0.3" in text


def test_query_metrics_refuses_other_namespaces_and_dropped_labels(server):
    text = refused(server, "query_metrics", {"namespace": "prod",
                                             "promql": 'app_build_info{namespace="staging"}'})
    assert "query refused" in text
    text = refused(server, "query_metrics", {"namespace": "prod",
                                             "promql": "sum(rate(container_cpu_usage_seconds_total[5m]))"})
    assert "answer refused" in text and "by (namespace" in text
    assert "outside this server's scope" in refused(server, "query_metrics", {
        "namespace": "staging", "promql": "app_build_info"})


def test_list_metrics_shows_names_in_the_namespace_only(server):
    text = ok(server, "list_metrics", {"namespace": "prod"})
    assert "container_cpu_cfs_throttled_periods_total" in text
    assert "app_build_info" not in text  # only staging has it
    text = ok(server, "list_metrics", {"namespace": "prod", "match": "memory"})
    assert text.splitlines()[1].startswith("container_memory_working_set_bytes ")


def test_service_mode_reads_through_the_one_proxy_path(server, sim):
    if server.mode != "service":
        pytest.skip("service mode only")
    mine = SimView(sim)   # the simulator is shared: this test's own requests
    ok(server, "list_metrics", {"namespace": "prod", "match": "cpu"})
    proxied = [r["path"] for r in mine.requests if "/services/" in r["path"]]
    assert proxied and all(p.startswith("/api/v1/namespaces/monitoring/services/prometheus:9090/proxy/api/v1/")
                           for p in proxied)


def test_without_prometheus_the_metrics_tools_are_not_offered(sim):
    server = _server(sim)
    try:
        names = {t["name"] for t in server.request("tools/list")["result"]["tools"]}
    finally:
        server.close()
    assert not names & set(METRICS_TOOLS) and "get_pods" in names


def test_a_prometheus_that_is_down_is_a_clear_tool_error(sim):
    server = _server(sim, "--prometheus-url", "http://127.0.0.1:9")
    try:
        text, is_error = server.call("list_metrics", {"namespace": "prod"})
    finally:
        server.close()
    assert is_error and text.startswith("cannot reach Prometheus at http://127.0.0.1:9")


def test_check_asks_prometheus_too(sim):
    done = subprocess.run([sys.executable, "-m", "mcp_kubectl_server", "--check", "--allow-namespaces",
                           "prod", "--kubeconfig", sim.kubeconfig, "--prometheus-url", sim.prometheus.url],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "\nprometheus: metrics with series in prod over the last 60 min matching 'container_'" in done.stderr


BAD_PROMETHEUS_OPTIONS = [
    (("--prometheus-url", "http://p:9090", "--prometheus-service", "m/p:9090"), "give one of them"),
    (("--prometheus-service", "prometheus:9090"), "is not NAMESPACE/SERVICE:PORT"),
    (("--prometheus-token-file", "/etc/hostname"), "go with --prometheus-url"),
    (("--prometheus-url", "http://p:9090", "--prometheus-ca", "/no/such.pem"), "is not a readable file"),
    (("--prometheus-url", "prometheus:9090"), "is not an http(s) base URL"),
]


def test_a_bad_prometheus_option_exits_2_from_the_process():
    # the process for one of them (its exit code, its stderr); main() here for all of them below
    flags, message = BAD_PROMETHEUS_OPTIONS[0]
    done = subprocess.run([sys.executable, "-m", "mcp_kubectl_server", "--allow-namespaces", "prod", *flags],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("flags, message", BAD_PROMETHEUS_OPTIONS)
def test_bad_prometheus_options_exit_2(flags, message, capsys):
    try:   # argparse exits; a check after it returns the code
        code = server_main(["--allow-namespaces", "prod", *flags])
    except SystemExit as exc:
        code = exc.code
    stderr = capsys.readouterr().err
    assert code == 2 and message in stderr and "Traceback" not in stderr
