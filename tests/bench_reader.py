"""Read-path benchmark figures for `make bench` (not a test: prints medians, asserts nothing).

Every figure stands next to its unit, one `kubectl get pods -o json` process against the same
simulator (the cost of one read the old way), timed in interleaved pairs with it in the same run
(tests/bench.py `paired`); the ratio is the figure in units. Figures (issue 7):
- the crashloop replay end to end (CLI, server, proxy, kube_sim), in units        (target <= 5)
- each tool call of the crashloop investigation, warm and the first (proxy start)  (<= 0.5 each)
- get_pods on the 2,000-pod namespace next to `kubectl get pods -o json` on it     (<= 0.25)
- peak memory of the server and its children (the proxy) on that call: the sum of their
  high-water marks (VmHWM), an upper bound of their peak together                  (<= 100 MB)
"""

import itertools
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from fixtures.kube_sim import start_sim
from tests.bench import PAIRS, paired
from tests.bench_agent import replay_once
from tests.test_server_support import ServerProcess

CRASHLOOP_CALLS = [
    ("get_pods", {"namespace": "prod"}),
    ("get_logs", {"namespace": "prod", "name": "checkout-6f8d9c7b5d-x7k2p", "container": "checkout",
                  "previous": True}),
    ("describe_pod", {"namespace": "prod", "name": "checkout-6f8d9c7b5d-x7k2p"}),
]


def kubectl_once(sim, namespace):
    """Seconds of one `kubectl get pods -n NAMESPACE -o json` process: the unit."""
    started = time.perf_counter()
    subprocess.run(["kubectl", f"--kubeconfig={sim.kubeconfig}", "get", "pods", "-n", namespace,
                    "-o", "json"], capture_output=True, timeout=120, check=True)
    return time.perf_counter() - started


def _call(server, name, arguments):
    started = time.perf_counter()
    text, _ = server.call(name, arguments, timeout=120)
    return time.perf_counter() - started, text


def tool_calls(sim, namespace, calls):
    """({tool: paired(warm call, unit)}, {tool: seconds of its first call}) on one server."""
    server = ServerProcess("--allow-namespaces", namespace, "--kubeconfig", sim.kubeconfig, "--quiet")
    server.initialize()
    first = {name: _call(server, name, arguments)[0] for name, arguments in calls}  # proxy start
    warm = {name: paired(lambda: _call(server, name, arguments)[0],
                         lambda: kubectl_once(sim, namespace)) for name, arguments in calls}
    server.close()
    return warm, first


def _hwm_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def _children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def large_get_pods(sim):
    """(first call seconds, paired(warm call, unit), peak MB of server + children, digest bytes,
    processes)."""
    server = ServerProcess("--allow-namespaces", "bulk", "--kubeconfig", sim.kubeconfig, "--quiet")
    server.initialize()
    cold, text = _call(server, "get_pods", {"namespace": "bulk"})
    warm = paired(lambda: _call(server, "get_pods", {"namespace": "bulk"})[0],
                  lambda: kubectl_once(sim, "bulk"))
    pids = [server.proc.pid, *_children(server.proc.pid)]
    peak_mb = sum(_hwm_kb(pid) for pid in pids) / 1024
    server.close()
    return cold, warm, peak_mb, len(text.encode()), len(pids)


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


def _units(result):
    ours, unit, ratio = result
    return f"{ours * 1000:7.1f} ms = {ratio:5.2f} units (unit {unit * 1000:.1f} ms)"


def print_crashloop_figures():
    with tempfile.TemporaryDirectory() as workdir, start_sim("crashloop") as sim:
        kubectl_once(sim, "prod")  # kubectl's discovery cache for this simulator, before timing
        traces = (Path(workdir) / f"trace{i}.jsonl" for i in itertools.count())
        replay = paired(lambda: replay_once(sim, next(traces))[0], lambda: kubectl_once(sim, "prod"))
        warm, first = tool_calls(sim, "prod", CRASHLOOP_CALLS)
    print(f"in units of one `kubectl get pods -n prod -o json`, medians of {PAIRS} interleaved pairs:")
    print(f"crashloop replay end to end:         {_units(replay)}  (target <= 5 units)")
    for name, _ in CRASHLOOP_CALLS:
        print(f"  {name + ' (warm)':<26}         {_units(warm[name])}  (target <= 0.5)")
    unit = statistics.median(result[1] for result in warm.values())
    for name, seconds in first.items():
        print(f"  {name + ' (first call)':<26}         {seconds * 1000:7.1f} ms = "
              f"{seconds / unit:5.2f} units (one call; against the median unit)")


def print_large_figures():
    with start_sim("large") as sim:
        kubectl_once(sim, "bulk")  # discovery cache, before timing
        cold, warm, peak_mb, size, processes = large_get_pods(sim)
    print(f"get_pods bulk, 2,000 pods (warm):    {_units(warm)}  (target <= 0.25; in units of "
          f"`kubectl get pods -n bulk -o json`)")
    print(f"get_pods bulk (first call):          {cold * 1000:7.1f} ms = {cold / warm[1]:5.2f} "
          "units (one call)")
    print(f"peak memory, server + children ({processes} processes): {peak_mb:.0f} MB (target <= 100 MB);"
          f" digest {size:,} bytes")


if __name__ == "__main__":
    main()
