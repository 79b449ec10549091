"""Read-path benchmark figures for `make bench` (not a test: prints medians, asserts nothing).

Every figure stands next to its unit, measured in the same run against the same simulator: one
`kubectl get pods -o json` process (the cost of one read the old way). Figures (issue 7):
- the crashloop replay end to end (CLI, server, proxy, kube_sim), in units        (target <= 5)
- each tool call of the crashloop investigation, warm and the first (proxy start)  (<= 0.5 each)
- get_pods on the 2,000-pod namespace next to `kubectl get pods -o json` on it     (<= 0.25)
- peak memory of the server and its children (the proxy) on that call: the sum of their
  high-water marks (VmHWM), an upper bound of their peak together                  (<= 100 MB)
"""

import os
import statistics
import subprocess
import tempfile
import time

from fixtures.kube_sim import start_sim
from tests.bench_agent import replay_wall
from tests.test_server_support import ServerProcess

RUNS = 5
CRASHLOOP_CALLS = [
    ("get_pods", {"namespace": "prod"}),
    ("get_logs", {"namespace": "prod", "name": "checkout-6f8d9c7b5d-x7k2p", "container": "checkout",
                  "previous": True}),
    ("describe_pod", {"namespace": "prod", "name": "checkout-6f8d9c7b5d-x7k2p"}),
]


def kubectl_unit(sim, namespace, runs=RUNS):
    """Median seconds of one `kubectl get pods -n NAMESPACE -o json` process."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(["kubectl", f"--kubeconfig={sim.kubeconfig}", "get", "pods", "-n", namespace,
                        "-o", "json"], capture_output=True, timeout=120, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def tool_calls(sim, namespace, calls, runs=RUNS):
    """({tool: median warm seconds}, {tool: seconds of its first call}) in one server per run."""
    warm, first = {name: [] for name, _ in calls}, {}
    for run in range(runs):
        server = ServerProcess("--allow-namespaces", namespace, "--kubeconfig", sim.kubeconfig, "--quiet")
        server.initialize()
        for name, arguments in calls * 2:  # the first round of the first run starts the proxy
            started = time.perf_counter()
            server.call(name, arguments, timeout=120)
            seconds = time.perf_counter() - started
            if run == 0 and name not in first:
                first[name] = seconds
            else:
                warm[name].append(seconds)
        server.close()
    return {name: statistics.median(values) for name, values in warm.items()}, first


def _hwm_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def _children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def large_get_pods(sim):
    """(cold seconds, warm median seconds, peak MB of server + children, digest bytes)."""
    server = ServerProcess("--allow-namespaces", "bulk", "--kubeconfig", sim.kubeconfig, "--quiet")
    server.initialize()
    times = []
    for _ in range(RUNS + 1):
        started = time.perf_counter()
        text, _ = server.call("get_pods", {"namespace": "bulk"}, timeout=120)
        times.append(time.perf_counter() - started)
    pids = [server.proc.pid, *_children(server.proc.pid)]
    peak_mb = sum(_hwm_kb(pid) for pid in pids) / 1024
    server.close()
    return times[0], statistics.median(times[1:]), peak_mb, len(text.encode()), len(pids)


def main():
    """Print the figures, each next to its kubectl unit (discovery cache in a temp dir)."""
    saved = os.environ.get("KUBECACHEDIR")
    with tempfile.TemporaryDirectory(prefix="kubectl-cache-") as cache:
        os.environ["KUBECACHEDIR"] = cache
        try:
            print_crashloop_figures()
            print_large_figures()
        finally:
            if saved is None:
                os.environ.pop("KUBECACHEDIR", None)
            else:
                os.environ["KUBECACHEDIR"] = saved


def _units(seconds, unit):
    return f"{seconds * 1000:7.1f} ms = {seconds / unit:5.2f} units"


def print_crashloop_figures():
    with tempfile.TemporaryDirectory() as workdir, start_sim("crashloop") as sim:
        unit = kubectl_unit(sim, "prod")
        wall, in_tools = replay_wall(sim, workdir)
        warm, first = tool_calls(sim, "prod", CRASHLOOP_CALLS)
    print(f"unit: one `kubectl get pods -n prod -o json` = {unit * 1000:.1f} ms (median of {RUNS})")
    print(f"crashloop replay end to end:         {_units(wall, unit)}  (target <= 5 units;"
          f" {in_tools * 1000:.0f} ms in tool calls)")
    for name, _ in CRASHLOOP_CALLS:
        print(f"  {name + ' (warm)':<26}         {_units(warm[name], unit)}  (target <= 0.5)")
    for name, seconds in first.items():
        print(f"  {name + ' (first call)':<26}         {_units(seconds, unit)}")


def print_large_figures():
    with start_sim("large") as sim:
        unit = kubectl_unit(sim, "bulk")
        cold, warm, peak_mb, size, processes = large_get_pods(sim)
    print(f"unit: one `kubectl get pods -n bulk -o json` (2,000 pods) = {unit * 1000:.0f} ms"
          f" (median of {RUNS})")
    print(f"get_pods bulk (warm):                {_units(warm, unit)}  (target <= 0.25)")
    print(f"get_pods bulk (first call):          {_units(cold, unit)}")
    print(f"peak memory, server + children ({processes} processes): {peak_mb:.0f} MB (target <= 100 MB);"
          f" digest {size:,} bytes")


if __name__ == "__main__":
    main()
