"""Server benchmark figures for `make bench` (not a test: prints medians, asserts nothing).

Each figure is timed in interleaved pairs with its reference (tests/bench/run.py `paired`):
- server start -> initialized, against a bare interpreter start (`python3 -c pass`)
- a tools/list round trip, against a ping round trip on the same server
and, not timed, the size of get_pods on the `large` cluster's `bulk` namespace (2,000 pods) next
to `kubectl get pods -n bulk -o json` on it (bench_reader times that call in units of kubectl).
kubectl's discovery cache goes to a temp dir (KUBECACHEDIR), not ~/.kube/cache.
"""

import os
import subprocess
import sys
import tempfile
import time

from fixtures.kube_sim.sim import start_sim
from tests.bench.run import pair_line, paired
from tests.support.server_support import ServerProcess


def _timed(fn):
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def start_figures(kubeconfig, env):
    """Server start to initialized, paired with a bare interpreter start."""
    def start():
        began = time.perf_counter()
        server = ServerProcess("--allow-namespaces", "bulk", "--kubeconfig", kubeconfig, "--quiet",
                               env=env, process=True)
        server.initialize()
        server.request("ping")  # the notification above is handled before this reply comes back
        seconds = time.perf_counter() - began
        server.close()
        return seconds
    bare = [sys.executable, "-c", "pass"]
    return paired(start, lambda: _timed(lambda: subprocess.run(bare, env=env, check=True)))


def call_figures(kubeconfig, env):
    """(tools/list vs ping, digest bytes of get_pods bulk, kubectl -o json bytes)."""
    kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", "get", "pods", "-n", "bulk", "-o", "json"]
    server = ServerProcess("--allow-namespaces", "bulk", "--kubeconfig", kubeconfig, "--quiet",
                           env=env, process=True)
    try:
        server.initialize()
        listing = paired(lambda: _timed(lambda: server.request("tools/list")),
                         lambda: _timed(lambda: server.request("ping")))
        text, _ = server.call("get_pods", {"namespace": "bulk"}, timeout=120)
    finally:
        server.close()
    raw = subprocess.run(kubectl, capture_output=True, timeout=120, env=env, check=True).stdout
    return listing, len(text.encode()), len(raw)


def main():
    """Print the server figures."""
    with tempfile.TemporaryDirectory(prefix="kubectl-cache-") as cache, start_sim("large") as sim:
        env = dict(os.environ, KUBECACHEDIR=cache)
        start = start_figures(sim.kubeconfig, env)
        listing, digest, raw = call_figures(sim.kubeconfig, env)
    print(pair_line("server start -> initialized", "bare `python3 -c pass`", start))
    print(pair_line("tools/list round trip", "ping round trip", listing))
    print(f"get_pods bulk (2,000 pods): digest {digest:,} bytes; `kubectl get pods -o json` "
          f"{raw:,} bytes ({raw / digest:.0f}x the digest)")


if __name__ == "__main__":
    main()
