"""The pod-configuration evidence through the real server, kubectl proxy and the simulator:
pull secrets and the registry's 401, a ConfigMap switch, the field manager that cut a limit, a
volume pinned to a node the pod excludes, dnsPolicy None; checked against kubectl's own view.
No tool reads a Secret, not even by name.
The tests that only read share their cluster's server (conftest's shared_serve); the ones that
check what the simulator never saw, from their server's start on, or read a cluster file of their
own start their own (serve).
"""

import json
import re
import subprocess

import pytest

PULL = "ledger-7b5f9c8d6c-h8t3v"


def lines(text):
    return text.splitlines()


def test_describe_pod_shows_pull_credentials_and_never_reads_a_secret(serve):
    server, sim = serve("pull-secret")
    text, is_error = server.call("describe_pod", {"namespace": "prod", "name": PULL})
    assert not is_error, text
    assert "service_account ledger (token automount: default)" in lines(text)
    summary = next(ln for ln in lines(text) if ln.startswith("image_pull_secrets "))
    assert summary.startswith("image_pull_secrets pod: none; service account ledger: none: the kubelet pulls")
    # the kubelet's pull error is said once: in the event that carries it, which the state names
    state = next(ln for ln in lines(text) if ln.startswith("container ledger state="))
    assert state.endswith('reason=ErrImagePull message="(as in the Failed event below)"')
    event = next(ln for ln in lines(text) if ln.startswith("event ") and "Failed to pull image" in ln)
    assert event.endswith("401 Unauthorized") and text.count("failed to fetch oauth token") == 1
    pods, _ = server.call("get_pods", {"namespace": "prod"})
    assert next(ln for ln in lines(pods) if ln.startswith(PULL)).count("401 Unauthorized") == 1
    billing = json.loads(subprocess.run(["kubectl", "--kubeconfig", sim.kubeconfig, "get", "pods", "-n", "prod",
                                         "-l", "app=billing", "-o", "json"], capture_output=True, text=True,
                                        timeout=60, check=True).stdout)["items"][0]["metadata"]["name"]
    text, _ = server.call("describe_pod", {"namespace": "prod", "name": billing})
    assert "image_pull_secrets pod: corp-registry; service account default: none" in lines(text)
    assert next(ln for ln in lines(text) if ln.startswith("image_pull_secret corp-registry")).endswith(
        "no FailedToRetrieveImagePullSecret event about this pod, so the kubelet found it (or has not tried yet)")
    paths = {r["path"].split("?")[0] for r in sim.requests}
    assert "/api/v1/namespaces/prod/serviceaccounts/ledger" in paths
    assert not any("secrets" in p for p in paths)


def test_describe_workload_names_the_configmap_switch(shared_serve):
    server, _ = shared_serve("configmap-switch")
    text, is_error = server.call("describe_workload", {"namespace": "prod", "kind": "Deployment", "name": "pricing"})
    assert not is_error, text
    assert "change volume config configmap pricing-config-v1 -> configmap pricing-config-v2" in lines(text)
    assert any(ln.startswith("revision 1 ") and "mounts=configmap/pricing-config-v1 " in ln for ln in lines(text))
    config, _ = server.call("get_config", {"namespace": "prod", "name": "pricing-config-v2"})
    assert '  |   refresh_interval: "30"' in lines(config)


def test_describe_workload_names_the_field_manager_that_cut_the_limit(shared_serve):
    server, sim = shared_serve("limit-cut")
    text, is_error = server.call("describe_workload", {"namespace": "prod", "kind": "Deployment",
                                                       "name": "recommender"})
    assert not is_error, text
    assert "change container recommender limits memory=1Gi -> memory=96Mi" in lines(text)
    cut = next(ln for ln in lines(text) if ln.startswith("field template container recommender limits.memory"))
    dep = json.loads(subprocess.run(["kubectl", "--kubeconfig", sim.kubeconfig, "get", "deploy", "recommender", "-n",
                                     "prod", "-o", "json", "--show-managed-fields"], capture_output=True, text=True,
                                    timeout=60, check=True).stdout)
    entry = next(e for e in dep["metadata"]["managedFields"] if e["manager"] == "finops-rightsizer")
    assert cut.endswith(f"last written {entry['time']} by field manager finops-rightsizer (Update)")
    assert any(ln.endswith("by field manager argocd-controller (Apply)") for ln in lines(text))
    assert not any("status" in ln for ln in lines(text) if ln.startswith("field "))


def test_get_storage_says_the_volume_node_excludes_the_pod_as_kubectl_describe_pv_does(shared_serve):
    server, sim = shared_serve("pv-affinity")
    text, is_error = server.call("get_storage", {"namespace": "prod"})
    assert not is_error, text
    described = subprocess.run(["kubectl", "--kubeconfig", sim.kubeconfig, "describe", "pv", "local-pv-node-a"],
                               capture_output=True, text=True, timeout=60, check=True).stdout
    key, values = re.search(r"Term 0:\s+(\S+) in \[([^\]]*)\]", described).groups()
    assert f"  volume node affinity: {key} in ({values}) (nodes: node-a)" in lines(text)
    assert "(volume phase=Bound reclaim=Retain)" in text
    problem = next(ln for ln in lines(text) if ln.startswith("  problem: pod analytics-"))
    assert "node-a does not match the pod's node selector disktype=ssd" in problem
    assert "/api/v1/nodes" in {r["path"].split("?")[0] for r in sim.requests}


def test_get_storage_without_cluster_reads_says_what_it_could_not_check(serve):
    server, sim = serve("pv-affinity", "--no-cluster-tools")
    text, is_error = server.call("get_storage", {"namespace": "prod"})
    assert not is_error, text
    assert "volume not readable" in text and "problem: pod" not in text
    assert not any(r["path"].startswith(("/api/v1/nodes", "/api/v1/persistentvolumes")) for r in sim.requests)


@pytest.mark.parametrize("pod", ["notifier-8d9c7f6b5b-m5q2z"])
def test_describe_pod_shows_dns_policy_none_as_the_pod_has_it(shared_serve, pod):
    server, sim = shared_serve("dns-none")
    text, _ = server.call("describe_pod", {"namespace": "prod", "name": pod})
    spec = json.loads(subprocess.run(["kubectl", "--kubeconfig", sim.kubeconfig, "get", "pod", pod, "-n", "prod",
                                      "-o", "json"], capture_output=True, text=True, timeout=60,
                                     check=True).stdout)["spec"]
    dns = next(ln for ln in lines(text) if ln.startswith("dns "))
    assert dns.startswith(f"dns policy={spec['dnsPolicy']} nameservers={','.join(spec['dnsConfig']['nameservers'])} ")
    assert "the pod does not use the cluster DNS" in dns
    workload, _ = server.call("describe_workload", {"namespace": "prod", "kind": "Deployment", "name": "notifier"})
    assert ("change dns policy=ClusterFirst -> policy=None nameservers=8.8.8.8 searches=corp.example.com "
            "options=ndots:2") in lines(workload)


def test_a_named_pull_secret_the_kubelet_cannot_find_is_said_from_its_event(serve, tmp_path):
    from fixtures.kube_sim.objects import core as k
    from fixtures.kube_sim.store import CLUSTERS_DIR
    base = json.loads((CLUSTERS_DIR / "pull-secret.json").read_text())
    pod = json.loads(json.dumps(next(o for o in base["objects"] if o["metadata"].get("name") == PULL)))
    pod["metadata"].update(name="ledger-pinned", uid=k.make_uid("Pod", "prod", "ledger-pinned"))
    pod["spec"]["imagePullSecrets"] = [{"name": "ledger-registry"}]
    event = k.event(pod, "FailedToRetrieveImagePullSecret", "Unable to retrieve some image pull secrets "
                    "(ledger-registry); attempting to pull the image may not succeed.", type_="Warning",
                    count=9, first_ago=20 * 60, last_ago=60)
    cluster = tmp_path / "missing-pull-secret.json"
    cluster.write_text(json.dumps({"kind": "SimulatedCluster", "base": "pull-secret",
                                   "referenceTime": base["referenceTime"], "objects": [pod, event]}))
    server, sim = serve(str(cluster))
    text, is_error = server.call("describe_pod", {"namespace": "prod", "name": "ledger-pinned"})
    assert not is_error, text
    assert "image_pull_secrets pod: ledger-registry; service account ledger: none" in lines(text)
    line = next(ln for ln in lines(text) if ln.startswith("image_pull_secret ledger-registry (from the pod)"))
    assert "the kubelet reported it missing (FailedToRetrieveImagePullSecret:" in line
    assert not any("secrets" in r["path"] for r in sim.requests)
