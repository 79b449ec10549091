"""Log search figures for `make bench` (not a test: prints medians, asserts nothing).

200,000 log lines in the 4 pods of Deployment api (50,000 lines, about 6 MB, a pod; generated
from a compact description, fixtures/kube_sim/loggen.py), served by kube_sim, read through the
real kubectl proxy by a server process. Figures (issue 47), each paired with the way a person
would do it: `kubectl logs POD` piped into `grep -E PATTERN` for each pod, one after the other,
interleaved pairs (tests/bench/run.py):
- search_logs with the same pattern over the same pods                  (target <= 1.5 x grep)
- search_logs with no pattern (the trouble shapes) over the same pods   (target <= 3 x grep)
- search_logs with a pattern against `kubectl logs --timestamps | grep -E` (both ask for stamps)
- the server process's CPU time in one search_logs call, beside its wall time
- the server's peak memory (VmHWM) after those calls; its kubectl proxy child beside it
                                                                        (target <= 100 MB)
search_logs asks for the kubelet's timestamps (it reports times) and plain kubectl does not; the
simulator makes a generated log's stamps once and keeps them (fixtures/kube_sim/loggen.py), as a
kubelet keeps them in its log file, so asking for them costs about as little as it does there.
"""

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from fixtures.kube_sim.sim import start_sim
from tests.bench.reader import _children, _hwm_kb
from tests.bench.run import pair_line, paired
from tests.support.server_support import ServerProcess

LINES = 50_000
PATTERN = "redis pool exhausted|deadlock detected"
TEMPLATES = ["INFO GET /api/v1/items/{int}?expand=price,stock,reviews 200 {ms}ms request_id={uuid} client={ip}",
             ["INFO POST /api/v1/orders 201 {ms}ms request_id={uuid} user={hex} items={int} total={int}", 3],
             ["DEBUG cache hit key=item:{int} ttl=300s shard={int} node=cache-{int}.cache.prod.svc", 2],
             ["WARN slow request GET /api/v1/search?q=shoes&page={int} took {ms}ms request_id={uuid}", 0.2]]


def cluster_file(directory):
    """A cluster on log-replica with 50,000 generated lines in each api pod, a few needles."""
    from fixtures.kube_sim.store import load_cluster
    pods = sorted(k for k in load_cluster("log-replica")["logs"] if k.startswith("prod/api-"))
    needles = [{"line": "ERROR redis pool exhausted: 64/64 connections in use request_id={uuid}",
                "minutes_ago": 30, "count": 40, "spread_minutes": 20},
               {"line": "ERROR ledger write failed: deadlock detected txn={hex}", "at": 0.3}]
    logs = {key: {"current": {"generate": {"lines": LINES, "seed": 10 + i, "templates": TEMPLATES,
                                           "needles": needles if i == 1 else []}}}
            for i, key in enumerate(pods)}
    path = Path(directory) / "bench-logs.json"
    path.write_text(json.dumps({"kind": "SimulatedCluster", "name": "bench-logs", "base": "log-replica",
                                "logs": logs}))
    return path, [key.split("/")[1] for key in pods]


def grep_all(sim, pods, pattern, *, stamps=False):
    """Seconds of `kubectl logs POD | grep -E PATTERN` for each pod, one after the other."""
    started = time.perf_counter()
    for pod in pods:
        subprocess.run(f"kubectl --kubeconfig={sim.kubeconfig} logs -n prod {pod} -c api"
                       f"{' --timestamps' if stamps else ''} | grep -E '{pattern}'",
                       shell=True, capture_output=True, timeout=300)
    return time.perf_counter() - started


def cpu_seconds(pid):
    """User and system CPU seconds of a process so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def search(server, **arguments):
    started = time.perf_counter()
    text, is_error = server.call("search_logs", dict({"namespace": "prod", "workload": "Deployment/api",
                                                      "since_minutes": 10080}, **arguments), timeout=300)
    elapsed = time.perf_counter() - started
    stopped = [line for line in text.splitlines() if "matching stopped" in line or "could not be read" in line]
    if is_error or stopped:
        print(f"  (search_logs did not finish its scan: {(stopped or [text])[0][:300]})")
    return elapsed


def main():
    saved = os.environ.get("KUBECACHEDIR")
    with tempfile.TemporaryDirectory(prefix="bench-logs-") as tmp:
        os.environ["KUBECACHEDIR"] = tmp
        try:
            path, pods = cluster_file(tmp)
            with start_sim(str(path), serve_metrics=False) as sim:
                server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", sim.kubeconfig,
                                       "--timeout", "120", "--quiet", process=True)
                server.initialize()
                search(server, pattern=PATTERN)   # warm: the proxy started, the log generated once
                grep = lambda: grep_all(sim, pods, PATTERN)  # noqa: E731
                print(pair_line("search_logs with a pattern, 4 pods x 50,000 lines",
                                "kubectl logs | grep -E, the 4 pods", paired(lambda: search(server, pattern=PATTERN), grep))
                      + "  (target <= 1.5)")
                print(pair_line("search_logs with no pattern (shapes), the same pods",
                                "kubectl logs | grep -E, the 4 pods", paired(lambda: search(server), grep))
                      + "  (target <= 3)")
                stamped = lambda: grep_all(sim, pods, PATTERN, stamps=True)  # noqa: E731
                print(pair_line("search_logs with a pattern", "kubectl logs --timestamps | grep -E "
                                "(both ask for the kubelet's stamps)",
                                paired(lambda: search(server, pattern=PATTERN), stamped)))
                for label, arguments in (("with a pattern", {"pattern": PATTERN}), ("with no pattern", {})):
                    before = cpu_seconds(server.proc.pid)
                    wall = search(server, **arguments)
                    print(f"one search_logs {label}: {wall * 1000:,.0f} ms wall, of which the server "
                          f"process used {(cpu_seconds(server.proc.pid) - before) * 1000:,.0f} ms of CPU")
                proxy = _children(server.proc.pid)
                server_mb = _hwm_kb(server.proc.pid) / 1024
                proxy_mb = sum(_hwm_kb(pid) for pid in proxy) / 1024
                server.close()
            print(f"peak memory of the server process over these calls (VmHWM): {server_mb:.0f} MB"
                  f" (target <= 100 MB); its kubectl proxy: {proxy_mb:.0f} MB")
        finally:
            if saved is None:
                os.environ.pop("KUBECACHEDIR", None)
            else:
                os.environ["KUBECACHEDIR"] = saved


if __name__ == "__main__":
    main()
