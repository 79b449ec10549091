"""Server benchmark figures for `make bench` (not a test: prints medians, asserts nothing).

Server start -> initialized, a tools/list round trip, and get_pods on the `large` cluster's
`bulk` namespace, with the digest's size next to `kubectl get pods -n bulk -o json`. kubectl's
discovery cache goes to a temp dir (KUBECACHEDIR), not ~/.kube/cache.
"""

import os
import statistics
import subprocess
import tempfile
import time

from fixtures.kube_sim import start_sim
from tests.test_server_support import ServerProcess

REPEATS = 5


def _ms(seconds):
    return f"{statistics.median(seconds) * 1000:.1f} ms"


def measure(kubeconfig, env):
    starts, lists, calls, sizes = [], [], [], []
    for _ in range(REPEATS):
        began = time.perf_counter()
        server = ServerProcess("--allow-namespaces", "bulk", "--kubeconfig", kubeconfig, "--quiet", env=env)
        server.initialize()
        server.request("ping")  # the notification above is handled before this reply comes back
        starts.append(time.perf_counter() - began)
        began = time.perf_counter()
        server.request("tools/list")
        lists.append(time.perf_counter() - began)
        began = time.perf_counter()
        text, _ = server.call("get_pods", {"namespace": "bulk"}, timeout=120)
        calls.append(time.perf_counter() - began)
        sizes.append(len(text.encode()))
        server.close()
    return starts, lists, calls, sizes


def main():
    """Print the figures for issue 2 section 5."""
    with tempfile.TemporaryDirectory(prefix="kubectl-cache-") as cache, start_sim("large") as sim:
        env = dict(os.environ, KUBECACHEDIR=cache)
        starts, lists, calls, sizes = measure(sim.kubeconfig, env)
        began = time.perf_counter()
        raw = subprocess.run(["kubectl", f"--kubeconfig={sim.kubeconfig}", "get", "pods", "-n", "bulk",
                              "-o", "json"], capture_output=True, timeout=120, env=env)
        raw_seconds = time.perf_counter() - began
    print(f"medians over {REPEATS} runs")
    print(f"server start -> initialized:        {_ms(starts)}")
    print(f"tools/list round trip:              {_ms(lists)}")
    print(f"get_pods bulk (2,000 pods):         {_ms(calls)}")
    print(f"  kubectl get pods -o json alone:   {raw_seconds * 1000:.0f} ms (one run)")
    print(f"  digest bytes:                     {statistics.median(sizes):,.0f}")
    print(f"  kubectl -o json bytes:            {len(raw.stdout):,}"
          f" ({len(raw.stdout) / statistics.median(sizes):.0f}x the digest)")


if __name__ == "__main__":
    main()
