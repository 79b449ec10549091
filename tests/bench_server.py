"""Server benchmark figures for `make bench` (not a test: prints medians, asserts nothing).

Each figure is timed in interleaved pairs with its reference (tests/bench.py `paired`):
- server start -> initialized, against a bare interpreter start (`python3 -c pass`)
- a tools/list round trip, against a ping round trip on the same server
- get_pods on the `large` cluster's `bulk` namespace (2,000 pods), against
  `kubectl get pods -n bulk -o json` on the same simulator; with the digest's size next to
  kubectl's output size
kubectl's discovery cache goes to a temp dir (KUBECACHEDIR), not ~/.kube/cache.
"""

import os
import subprocess
import sys
import tempfile
import time

from fixtures.kube_sim import start_sim
from tests.bench import pair_line, paired
from tests.test_server_support import ServerProcess


def _timed(fn):
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def start_figures(kubeconfig, env):
    """Server start to initialized, paired with a bare interpreter start."""
    def start():
        began = time.perf_counter()
        server = ServerProcess("--allow-namespaces", "bulk", "--kubeconfig", kubeconfig, "--quiet",
                               env=env)
        server.initialize()
        server.request("ping")  # the notification above is handled before this reply comes back
        seconds = time.perf_counter() - began
        server.close()
        return seconds
    bare = [sys.executable, "-c", "pass"]
    return paired(start, lambda: _timed(lambda: subprocess.run(bare, env=env, check=True)))


def call_figures(kubeconfig, env):
    """(tools/list vs ping, get_pods vs kubectl -o json, digest bytes, kubectl bytes)."""
    kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", "get", "pods", "-n", "bulk", "-o", "json"]
    sizes = {}

    def get_pods():
        text, _ = server.call("get_pods", {"namespace": "bulk"}, timeout=120)
        sizes["digest"] = len(text.encode())

    def raw():
        out = subprocess.run(kubectl, capture_output=True, timeout=120, env=env, check=True)
        sizes["json"] = len(out.stdout)

    server = ServerProcess("--allow-namespaces", "bulk", "--kubeconfig", kubeconfig, "--quiet",
                           env=env)
    try:
        server.initialize()
        raw()  # fills kubectl's discovery cache for this simulator before any pair is timed
        listing = paired(lambda: _timed(lambda: server.request("tools/list")),
                         lambda: _timed(lambda: server.request("ping")))
        pods = paired(lambda: _timed(get_pods), lambda: _timed(raw))
    finally:
        server.close()
    return listing, pods, sizes["digest"], sizes["json"]


def main():
    """Print the server figures."""
    with tempfile.TemporaryDirectory(prefix="kubectl-cache-") as cache, start_sim("large") as sim:
        env = dict(os.environ, KUBECACHEDIR=cache)
        start = start_figures(sim.kubeconfig, env)
        listing, pods, digest, raw = call_figures(sim.kubeconfig, env)
    print(pair_line("server start -> initialized", "bare `python3 -c pass`", start))
    print(pair_line("tools/list round trip", "ping round trip", listing))
    print(pair_line("get_pods bulk (2,000 pods)", "`kubectl get pods -o json` alone", pods))
    print(f"  digest bytes: {digest:,}; kubectl -o json bytes: {raw:,} ({raw / digest:.0f}x the "
          "digest)")


if __name__ == "__main__":
    main()
