"""The simulator's pod-configuration incidents through the real kubectl: ServiceAccounts, pull
secrets, a local PersistentVolume's node affinity, managedFields, and a kubectl write recorded as
its field manager's.
"""

import json
import shutil
import subprocess

import pytest

from fixtures.kube_sim.sim import start_sim
from tests.support.kubectl_tables import ok, rows

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


@pytest.fixture(scope="module")
def pullsim():
    with start_sim("pull-secret") as sim:
        yield sim


def test_service_accounts_are_served_and_every_namespace_has_default(pullsim):
    assert [r[0] for r in rows(ok(pullsim, "get", "sa", "-n", "prod"))] == ["default", "ledger"]
    assert [r[0] for r in rows(ok(pullsim, "get", "serviceaccounts", "-n", "staging"))] == ["default"]
    doc = json.loads(ok(pullsim, "get", "sa", "ledger", "-n", "prod", "-o", "json"))
    assert doc["kind"] == "ServiceAccount" and "imagePullSecrets" not in doc


def test_the_failing_pull_is_worded_as_the_kubelet_words_it(pullsim):
    pod = json.loads(ok(pullsim, "get", "pod", "ledger-7b5f9c8d6c-h8t3v", "-n", "prod", "-o", "json"))
    waiting = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "ErrImagePull" and waiting["message"].endswith("401 Unauthorized")
    assert "imagePullSecrets" not in pod["spec"] and pod["spec"]["serviceAccountName"] == "ledger"
    billing = json.loads(ok(pullsim, "get", "pods", "-n", "prod", "-l", "app=billing", "-o", "json"))
    assert all(p["spec"]["imagePullSecrets"] == [{"name": "corp-registry"}] for p in billing["items"])
    described = ok(pullsim, "describe", "pod", "ledger-7b5f9c8d6c-h8t3v", "-n", "prod")
    assert "Service Account:  ledger" in described
    assert "401 Unauthorized" in described


def test_secrets_stay_unreadable(pullsim):
    result = subprocess.run(["kubectl", "--kubeconfig", pullsim.kubeconfig, "get", "secret", "corp-registry",
                             "-n", "prod"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "secret" in result.stderr.lower()


def test_every_stored_object_carries_managed_fields(pullsim):
    pod, sa, dep = json.loads(ok(pullsim, "get", "pod/ledger-7b5f9c8d6c-h8t3v", "sa/default", "deploy/ledger",
                                 "-n", "prod", "-o", "json", "--show-managed-fields"))["items"]  # in that order
    managers = {(e["manager"], e["operation"], e.get("subresource")) for e in pod["metadata"]["managedFields"]}
    assert managers == {("kube-controller-manager", "Update", None), ("kubelet", "Update", "status")}
    assert sa["metadata"]["managedFields"] == []  # nothing but a name: no field to own
    entry = dep["metadata"]["managedFields"][0]
    assert entry["manager"] == "kubectl-client-side-apply" and entry["fieldsType"] == "FieldsV1"
    assert 'k:{"name":"ledger"}' in entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    plain = json.loads(ok(pullsim, "get", "deploy", "ledger", "-n", "prod", "-o", "json"))
    assert "managedFields" not in plain["metadata"]  # kubectl hides them unless asked, as with a real server


def test_a_kubectl_write_is_recorded_as_its_field_manager(kube_sim):
    sim = kube_sim("limit-cut")
    ok(sim, "rollout", "restart", "deployment/recommender", "-n", "prod")
    dep = json.loads(ok(sim, "get", "deploy", "recommender", "-n", "prod", "-o", "json", "--show-managed-fields"))
    by = {e["manager"]: e for e in dep["metadata"]["managedFields"]}
    restarted = by["kubectl-rollout"]["fieldsV1"]["f:spec"]["f:template"]["f:metadata"]["f:annotations"]
    assert "f:kubectl.kubernetes.io/restartedAt" in restarted and by["kubectl-rollout"]["operation"] == "Update"
    assert by["finops-rightsizer"]["time"] < by["kubectl-rollout"]["time"]  # the older write keeps its time


def test_a_local_volume_with_node_affinity_as_kubectl_shows_it():
    with start_sim("pv-affinity") as sim:
        pv = json.loads(ok(sim, "get", "pv", "local-pv-node-a", "-o", "json"))
        terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert terms == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                "values": ["node-a"]}]}]
        described = ok(sim, "describe", "pv", "local-pv-node-a")
        assert "Term 0:        kubernetes.io/hostname in [node-a]" in described
        assert "Reclaim Policy:    Retain" in described
        assert rows(ok(sim, "get", "pv"))[0][:6] == ["local-pv-node-a", "100Gi", "RWO", "Retain", "Bound",
                                                     "prod/analytics-data"]
        nodes = {n["metadata"]["name"]: n["metadata"]["labels"].get("disktype")
                 for n in json.loads(ok(sim, "get", "nodes", "-o", "json"))["items"]}
        assert nodes == {"node-a": None, "node-b": "ssd", "node-c": "ssd"}
