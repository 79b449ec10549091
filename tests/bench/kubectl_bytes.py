"""What a diagnosis costs in bytes, for `make bench` (not a test: prints sizes, asserts nothing).

For every scenario (fixtures/scenarios/*.json) the reads its recorded diagnosis makes (the tool
calls of its replay fixture, fixtures/replay/) that kubectl has a counterpart of, through our MCP
server and through real kubectl against the same simulator (kube_sim serving the scenario's
cluster): the bytes an agent reads on the way to its evidence, ours against those of an agent
that ran plain kubectl and never guessed wrong.

    get_pods {namespace}                     kubectl get pods -n NS -o wide
    describe_pod {namespace, name}           kubectl describe pod -n NS NAME
    get_logs {namespace, name, container?,   kubectl logs -n NS NAME [-c C] [--previous]
              previous?, tail}                 --tail=TAIL (our default 200 when not given)

Then get_pods on the 2,000-pod namespace of the `large` cluster against `kubectl get pods -o wide`
on it. Sizes are UTF-8 bytes of what the model (or an operator) reads: our tool's text, kubectl's
stdout (its stderr when it fails). Targets (issue 46): at least 1.5 times smaller overall, no
tool more than 5% larger than its kubectl counterpart, at least 50 times smaller on the 2,000-pod
namespace.
"""

import json
import os
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from fixtures.kube_sim.sim import start_sim
from mcp_kubectl_server.tools.spec import TAIL_DEFAULT
from tests.support.server_support import ROOT, ServerProcess

LARGE_NAMESPACE = "bulk"


def kubectl(sim, *args):
    """stdout of one kubectl command against the simulator (a failed read: its stderr)."""
    out = subprocess.run(["kubectl", f"--kubeconfig={sim.kubeconfig}", *args], capture_output=True,
                         timeout=120)
    return (out.stdout if out.returncode == 0 else out.stderr).decode("utf-8", "replace")


def counterpart(tool, args):
    """The kubectl argv that reads what `tool` reads, or None when the three have none."""
    if tool not in ("get_pods", "describe_pod", "get_logs"):
        return None
    ns = ["-n", args["namespace"]]
    if tool == "get_pods":
        return ["get", "pods", *ns, "-o", "wide"] + (["-l", args["selector"]] if args.get("selector") else [])
    if tool == "describe_pod":
        return ["describe", "pod", *ns, args["name"]]
    if tool == "get_logs":
        return (["logs", *ns, args["name"], f"--tail={args.get('tail', TAIL_DEFAULT)}"]
                + (["-c", args["container"]] if args.get("container") else [])
                + (["--previous"] if args.get("previous") else []))
    return None


def replay_calls(replay):
    """[(tool, arguments, kubectl argv)] of the reads a replay fixture makes, in order."""
    found = []
    for item in json.loads(replay.read_text())["responses"]:
        body = item.get("body", item) if isinstance(item, dict) else {}
        for block in body.get("content") or []:
            if block.get("type") == "tool_use" and counterpart(block["name"], block["input"]):
                found.append((block["name"], block["input"], counterpart(block["name"], block["input"])))
    return found


def measure(cluster, namespaces, reads):
    """[(tool, our bytes, kubectl bytes, label)] of `reads` on one cluster."""
    rows = []
    with start_sim(cluster, serve_metrics=False) as sim:
        server = ServerProcess("--allow-namespaces", ",".join(namespaces), "--kubeconfig",
                               sim.kubeconfig, "--quiet", process=True)
        server.initialize()
        try:
            for tool, arguments, argv in reads:
                text, _ = server.call(tool, arguments, timeout=120)
                rows.append((tool, len(text.encode()), len(kubectl(sim, *argv).encode()),
                             f"{Path(cluster).stem} {arguments.get('name', arguments['namespace'])}"))
        finally:
            server.close()
    return rows


def scenarios():
    """(cluster file, namespaces, reads) of every scenario."""
    for path in sorted((ROOT / "fixtures" / "scenarios").glob("*.json")):
        spec = json.loads(path.read_text())
        yield str(ROOT / spec["cluster"]), spec["namespaces"], replay_calls(ROOT / spec["replay"])


def main():
    saved = os.environ.get("KUBECACHEDIR")
    with tempfile.TemporaryDirectory(prefix="kubectl-cache-") as cache:
        os.environ["KUBECACHEDIR"] = cache
        try:
            rows = [row for cluster, namespaces, reads in scenarios() if reads
                    for row in measure(cluster, namespaces, reads)]
            large = measure("large", [LARGE_NAMESPACE], [
                ("get_pods", {"namespace": LARGE_NAMESPACE}, counterpart("get_pods", {"namespace": LARGE_NAMESPACE}))])
        finally:
            if saved is None:
                os.environ.pop("KUBECACHEDIR", None)
            else:
                os.environ["KUBECACHEDIR"] = saved
    report(rows, large)


def report(rows, large):
    by_tool = defaultdict(lambda: [0, 0, 0])
    for tool, ours, theirs, _ in rows:
        by_tool[tool][0] += ours
        by_tool[tool][1] += theirs
        by_tool[tool][2] += 1
    print(f"bytes an agent reads, our tools against kubectl, in the diagnoses of "
          f"{len({r[3].split()[0] for r in rows})} scenarios (the reads of their replays):")
    for tool, (ours, theirs, n) in sorted(by_tool.items()):
        print(f"  {tool:<13} {n:3} calls: {ours:9,} / {theirs:9,} bytes = {ours / theirs:6.1%} "
              f"({theirs / ours:.2f}x smaller; target: at most 105%)")
    ours, theirs = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"  overall            {len(rows):3} calls: {ours:9,} / {theirs:9,} bytes = "
          f"{theirs / ours:.2f}x smaller (target >= 1.5x)")
    larger = [r for r in rows if r[1] > r[2] * 1.05]
    print(f"  single calls more than 5% larger than kubectl's: {len(larger)} of {len(rows)}"
          + "".join(f"\n    {t} {label}: {o:,} / {k:,}" for t, o, k, label in larger))
    for tool, ours, theirs, _ in large:
        print(f"  {tool} on the 2,000-pod namespace: {ours:,} / {theirs:,} bytes = "
              f"{theirs / ours:.0f}x smaller (target >= 50x)")


if __name__ == "__main__":
    main()
