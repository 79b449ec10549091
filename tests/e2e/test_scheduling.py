"""describe_pod's and describe_workload's scheduling lines through the real server and kubectl
proxy, checked against what `kubectl describe pod` prints for the same pods on the simulator.

kubectl shows Node-Selectors, Tolerations, Topology Spread Constraints, Priority, the Service Account
and the node; the tool must say the same values (and adds affinity, the preemption policy and the
why-not line kubectl lacks).
The node-selector tests share one server (conftest's shared_serve).
"""

import json
import re
import subprocess

import pytest


STUCK = "mailer-58f6c7d9b4-j6x3q"


def kubectl_describe(sim, pod):
    """{field: [values]} of the top-level fields of `kubectl describe pod`, multi-line ones joined."""
    out = subprocess.run(["kubectl", "--kubeconfig", sim.kubeconfig, "describe", "pod", pod, "-n", "prod"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    fields, key = {}, None
    for line in out.splitlines():
        m = re.match(r"^([A-Z][A-Za-z -]+):\s*(.*)$", line)
        if m:
            key = m.group(1)
            fields[key] = [m.group(2).strip()] if m.group(2).strip() else []
        elif key and line.startswith(" " * 10) and line.strip():
            fields[key].append(line.strip())
        elif not line.startswith(" "):
            key = None
    return fields


# what describe_pod's `defaults` line says for a setting at its default, as its own line would
DEFAULTS = {"no node selector": ("node selector", "none"), "no priority class": ("priority class", "none"),
            "default tolerations": ("tolerations", "(the default ones)")}


def scheduling(text):
    said = {line[len("scheduling "):].partition(": ")[0]: line.partition(": ")[2]
            for line in text.splitlines() if line.startswith("scheduling ")}
    for line in text.splitlines():
        if line.startswith("defaults "):
            said.update(DEFAULTS[word] for word in line[len("defaults "):].split(", ") if word in DEFAULTS)
    return said


@pytest.mark.parametrize("pod", [STUCK, "mailer-7d5b9c6f8c-r7k2m"])
def test_describe_pod_says_what_kubectl_describe_says(shared_serve, pod):  # noqa: F811
    server, sim = shared_serve("node-selector")
    text, is_error = server.call("describe_pod", {"namespace": "prod", "name": pod})
    assert not is_error, text
    ours, theirs = scheduling(text), kubectl_describe(sim, pod)
    selector = theirs["Node-Selectors"][0]
    assert ours["node selector"] == ("none" if selector == "<none>" else selector)
    defaults = {"node.kubernetes.io/not-ready:NoExecute op=Exists for 300s",
                "node.kubernetes.io/unreachable:NoExecute op=Exists for 300s"}
    assert ours["tolerations"] == (", ".join(theirs["Tolerations"]) if not set(theirs["Tolerations"]) <= defaults
                                   else "(the default ones)")
    assert ours["topology spread"] == theirs["Topology Spread Constraints"][0]
    spec = json.loads(subprocess.run(["kubectl", "--kubeconfig", sim.kubeconfig, "get", "pod", pod, "-n", "prod",
                                      "-o", "json"], capture_output=True, text=True, timeout=60,
                                     check=True).stdout)["spec"]
    assert ours["priority class"] == (f"{theirs['Priority Class Name'][0]} (priority {theirs['Priority'][0]}, "
                                      f"preemption policy {spec['preemptionPolicy']})")
    account = next(ln for ln in text.splitlines() if ln.startswith(("service_account ", "defaults service account ")))
    assert account.replace("defaults service account", "service_account").split()[1].rstrip(",") == \
        theirs["Service Account"][0]
    node = theirs["Node"][0]
    # the placement is said once, on the node line (and by the PodScheduled condition)
    assert "assigned node" not in ours
    assert f"node {'none (not scheduled)' if node == '<none>' else node.split('/')[0]}" in text.splitlines()
    if pod == STUCK:
        assert ours["why not placed"] == ("no node satisfies the node selector kubernetes.io/hostname=node-d: "
                                          "0 of 3 nodes match (kubernetes.io/hostname on the nodes: node-a, "
                                          "node-b, node-c)")
        assert "/api/v1/nodes" in {r["path"].split("?")[0] for r in sim.requests}
    else:
        assert "why not placed" not in ours


def test_the_workload_template_and_its_change_say_the_pin(shared_serve):  # noqa: F811
    server, _ = shared_serve("node-selector")
    text, is_error = server.call("describe_workload", {"namespace": "prod", "kind": "Deployment", "name": "mailer"})
    assert not is_error, text
    assert "change scheduling node selector: none -> kubernetes.io/hostname=node-d" in text.splitlines()
    assert "template scheduling node selector: kubernetes.io/hostname=node-d" in text.splitlines()
    assert "template scheduling tolerations: dedicated=mail:NoSchedule" in text.splitlines()


def test_unreadable_nodes_are_said_and_the_rest_stays(serve, tmp_path):  # noqa: F811
    cluster = tmp_path / "forbidden.json"
    cluster.write_text(json.dumps({"kind": "SimulatedCluster", "base": "node-selector",
                                   "forbidden": [{"resource": "nodes"}]}))
    server, _ = serve(str(cluster))
    text, is_error = server.call("describe_pod", {"namespace": "prod", "name": STUCK})
    assert not is_error and "scheduling node selector: kubernetes.io/hostname=node-d" in text
    assert ("scheduling why not placed: the nodes could not be read (the cluster refused this read "
            "(403 Forbidden)") in text
    assert server.close() == 0


def test_with_cluster_reads_switched_off_nodes_are_not_asked_for(kube_sim):
    from tests.support.server_support import ServerProcess
    sim = kube_sim("node-selector")
    server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", sim.kubeconfig, "--timeout", "30",
                           "--quiet", "--no-cluster-tools")
    server.initialize()
    text, is_error = server.call("describe_pod", {"namespace": "prod", "name": STUCK})
    assert not is_error
    assert ("scheduling why not placed: the nodes could not be read (cluster-scoped reads are switched off "
            "on this server)") in text
    assert server.close() == 0
    assert not any(r["path"].startswith("/api/v1/nodes") for r in sim.requests)
