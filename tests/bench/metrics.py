"""Metrics benchmark figures for `make bench` (not a test: prints medians, asserts nothing).

A 20-pod Deployment `web` in prod, with its cAdvisor and kube-state-metrics series over two
hours, in the simulator and its real Prometheus; our server reads them (--prometheus-url)
through MCP over stdio. Every figure stands next to its reference, measured in the same run
against the same Prometheus (issue 20):
- get_metrics of the workload: the digest's bytes, and its time against one direct HTTP query
  (the CPU range query for those 20 pods, urllib GET and json.loads)
- query_metrics against the same (scoped) query sent straight to Prometheus     (target <= 1.5x),
  and the CPU each side spends per call (our server and its client; the direct client)
"""

import json
import os
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from fixtures.kube_sim.build import workload
from fixtures.kube_sim.objects import core as k
from fixtures.kube_sim.prometheus import available
from fixtures.kube_sim.scenarios.metrics import MI, container_series, section
from fixtures.kube_sim.sim import start_sim
from tests.bench.run import pair_line, paired
from tests.support.server_support import ServerProcess

PODS = 20
QUERY_PAIRS = 21  # a pair costs about 10 ms: enough pairs for a median that a noisy machine moves little
CPU_CALLS = 100  # /proc counts CPU in 10 ms ticks
PROMQL = "sum by (namespace, pod) (rate(container_cpu_usage_seconds_total[5m]))"


def cluster_file(directory):
    """A cluster on `healthy` with Deployment prod/web of PODS pods and their metrics."""
    res = {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}
    tmpl = k.pod_template("web", image="registry.example.com/shop/web:v1", resources=res)
    pods = [(k.suffix(f"bench/{i}"), k.running(), 2 * k.DAY) for i in range(PODS)]
    objects, by_name = workload("prod", "web", [{"hash": "5c6d7e8f9a", "template": tmpl,
                                                 "age": 2 * k.DAY, "pods": pods}], replicas=PODS)
    series = []
    for pod in by_name.values():
        series += container_series(pod, cpu={"linear": [0.3, 0.4], "jitter": 0.1}, throttled=0.5,
                                   memory={"linear": [200 * MI, 220 * MI], "jitter": 0.02})
    path = Path(directory, "bench-metrics.json")
    path.write_text(json.dumps({"kind": "SimulatedCluster", "name": "bench-metrics", "base": "healthy",
                                "referenceTime": k.ts(0), "objects": objects,
                                "metrics": section(series)}), encoding="utf-8")
    return path, sorted(by_name)


def direct(url, endpoint, params):
    """Seconds of one GET straight to Prometheus, its body parsed."""
    started = time.perf_counter()
    with urllib.request.urlopen(f"{url}/api/v1/{endpoint}?{urllib.parse.urlencode(params)}") as answer:
        json.loads(answer.read())
    return time.perf_counter() - started


def through_server(server, name, arguments, sizes=None):
    started = time.perf_counter()
    text, is_error = server.call(name, arguments, timeout=120)
    seconds = time.perf_counter() - started
    if is_error:
        raise RuntimeError(f"{name} failed: {text}")
    if sizes is not None:
        sizes.append(len(text.encode()))
    return seconds


def _load():
    """The 1-minute load average, as uptime shows it (the figure depends on it)."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "unknown"


def main():
    if not available():
        print("prometheus and promtool are not installed: no metrics figures")
        return
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as tmp:
        path, pods = cluster_file(tmp)
        with start_sim(str(path)) as sim:
            server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", sim.kubeconfig,
                                   "--timeout", "60", "--quiet", "--prometheus-url", sim.prometheus.url,
                                   process=True)
            try:
                server.initialize()
                figures(server, sim.prometheus.url, pods)
            finally:
                server.close()


def figures(server, url, pods):
    end = time.time()
    pattern = "|".join(pods)
    cpu = {"query": 'sum by (namespace, pod, container) (rate(container_cpu_usage_seconds_total'
                    f'{{namespace="prod", pod=~"{pattern}", container!="", container!="POD"}}[5m]))',
           "start": f"{end - 3600:.3f}", "end": f"{end:.3f}", "step": "60"}
    sizes, arguments = [], {"namespace": "prod", "workload": "Deployment/web"}
    through_server(server, "get_metrics", arguments)  # warm: the proxy starts, buildinfo is asked
    result = paired(lambda: through_server(server, "get_metrics", arguments, sizes),
                    lambda: direct(url, "query_range", cpu))
    print(f"get_metrics of a {len(pods)}-pod Deployment: {sizes[-1]:,} bytes of digest (5 queries)")
    print(pair_line(f"get_metrics {len(pods)} pods (MCP call)", "one direct query_range", result))
    scoped = PROMQL.replace("container_cpu_usage_seconds_total", 'container_cpu_usage_seconds_total'
                            '{namespace="prod"}')
    arguments = {"namespace": "prod", "promql": PROMQL, "minutes": 60}

    def straight():
        end = time.time()
        return direct(url, "query_range", {"query": scoped, "start": f"{end - 3600:.3f}",
                                           "end": f"{end:.3f}", "step": "60"})
    through_server(server, "query_metrics", arguments)  # warm both: the parser's first use
    straight()
    result = paired(lambda: through_server(server, "query_metrics", arguments), straight,
                    pairs=QUERY_PAIRS)
    print(pair_line("query_metrics 60 min range, 20 series (MCP call)", "the same query sent straight",
                    result, pairs=QUERY_PAIRS) + f" (target <= 1.5; load average {_load()})")
    ours, server_cpu = cpu_per_call(lambda: through_server(server, "query_metrics", arguments),
                                    pid=server.proc.pid)
    theirs, _ = cpu_per_call(straight)
    print(f"query_metrics CPU per call ({CPU_CALLS} calls each): our server {server_cpu * 1000:.2f} ms"
          f" + its MCP client {ours * 1000:.2f} ms; the query sent straight {theirs * 1000:.2f} ms"
          " (Prometheus' own CPU, the same for both, not counted)")


def cpu_per_call(call, *, pid=None, calls=None):
    """(CPU seconds of this process, of process `pid`) per call over `calls` calls: a figure
    that a loaded machine moves less than wall time."""
    calls = calls or CPU_CALLS
    mine, theirs = time.process_time(), _process_cpu(pid)
    for _ in range(calls):
        call()
    return (time.process_time() - mine) / calls, (_process_cpu(pid) - theirs) / calls


def _process_cpu(pid):
    """User + system CPU seconds of process `pid` from /proc (0.0 without it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
