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
import sys
import tempfile
import time

from fixtures.kube_sim.sim import start_sim
from tests.support.server_support import ROOT, ServerProcess

RUNS = 5
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


def timed_call(server, name, arguments):
    started = time.perf_counter()
    text, _ = server.call(name, arguments, timeout=120)
    return time.perf_counter() - started, text


def paired(measure, unit):
    """RUNS rounds of (unit, figure), interleaved so that both see the same machine load ->
    (median unit seconds, median figure seconds, median of the per-round ratios)."""
    units, figures = [], []
    for _ in range(RUNS):
        units.append(unit())
        figures.append(measure())
    ratio = statistics.median(f / u for f, u in zip(figures, units))
    return statistics.median(units), statistics.median(figures), ratio


def _hwm_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def _children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


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


def _line(what, unit, figure, ratio, target=""):
    print(f"{what:<40} {figure * 1000:8.1f} ms  {ratio:5.2f} units (unit {unit * 1000:.0f} ms){target}")


def print_crashloop_figures():
    """The replay end to end and each of its tool calls, warm and first, against kube_sim."""
    with start_sim("crashloop") as sim:
        unit = lambda: kubectl_once(sim, "prod")  # noqa: E731
        print(f"## crashloop; unit: one `kubectl get pods -n prod -o json`; medians of {RUNS} rounds,"
              " unit and figure interleaved")
        _line("replay end to end (CLI, server, proxy)", *paired(lambda: replay_once(sim), unit),
              "  target <= 5")
        server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", sim.kubeconfig, "--quiet",
                               process=True)
        server.initialize()
        for name, arguments in CRASHLOOP_CALLS:  # the first call waits for the proxy to start
            first, _ = timed_call(server, name, arguments)
            one = unit()
            _line(f"{name} (first call of a server)" if name == "get_pods" else f"{name} (first)",
                  one, first, first / one)
        for name, arguments in CRASHLOOP_CALLS:
            _line(f"{name} (warm)", *paired(lambda: timed_call(server, name, arguments)[0], unit),
                  "  target <= 0.5")
        server.close()


def replay_once(sim):
    """Wall seconds of one crashloop replay through the CLI: start to exit, report written."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "triage_agent", "checkout pods in prod keep restarting",
                    "--namespaces", "prod", "--replay", str(ROOT / "fixtures/replay/crashloop.json"),
                    "--kubeconfig", sim.kubeconfig, "--json"], cwd=ROOT, capture_output=True,
                   timeout=120, check=True,
                   env={k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")})
    return time.perf_counter() - started


def print_large_figures():
    """get_pods on the 2,000-pod namespace next to kubectl on it, and the peak memory."""
    with start_sim("large") as sim:
        server = ServerProcess("--allow-namespaces", "bulk", "--kubeconfig", sim.kubeconfig, "--quiet",
                               process=True)
        server.initialize()
        print("## large, namespace bulk (2,000 pods); unit: one `kubectl get pods -n bulk -o json`")
        first, text = timed_call(server, "get_pods", {"namespace": "bulk"})
        unit = lambda: kubectl_once(sim, "bulk")  # noqa: E731
        one = unit()
        _line("get_pods bulk (first call of a server)", one, first, first / one)
        _line("get_pods bulk (warm)", *paired(lambda: timed_call(server, "get_pods", {"namespace": "bulk"})[0],
                                              unit), "  target <= 0.25")
        pids = [server.proc.pid, *_children(server.proc.pid)]
        peak_mb = sum(_hwm_kb(pid) for pid in pids) / 1024
        server.close()
    print(f"peak memory, server + its {len(pids) - 1} child(ren), sum of high-water marks:"
          f" {peak_mb:.0f} MB (target <= 100 MB); digest {len(text.encode()):,} bytes")


if __name__ == "__main__":
    main()
