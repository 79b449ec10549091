"""The simulator's writes through the real kubectl: rollout restart and undo, deleting a pod
(the ReplicaSet replaces it), a missing pod, and a verb it refuses; each lands in the journal.
Each test starts its own simulator (kube_sim), since each changes it.
"""

import json
import shutil
from urllib.request import urlopen

import pytest

from tests.sim.test_reads import POD
from tests.support.kubectl_tables import kubectl, ok, rows

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


def test_unsupported_verb_is_405_and_journaled(kube_sim, tmp_path):
    sim = kube_sim("crashloop")
    manifest = tmp_path / "pod.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
                                    "spec": {"containers": [{"name": "x", "image": "x"}]}}))
    out = kubectl(sim, "create", "--validate=false", "-f", str(manifest), "-n", "default")
    assert out.returncode == 1 and "Error from server (MethodNotAllowed)" in out.stderr
    [entry] = sim.journal_entries()
    assert (entry["verb"], entry["path"], entry["status"]) == ("POST", "/api/v1/namespaces/default/pods", 405)


def test_rollout_restart_patches_and_replaces_crashing_pods(kube_sim):
    # a restart keeps the template: its fresh pods crash as the old ones did (lifecycle.py);
    # with the default start delay of 0 they have crashed once already
    sim = kube_sim("crashloop")
    out = ok(sim, "rollout", "restart", "deployment/checkout", "-n", "prod")
    assert "deployment.apps/checkout restarted" in out
    [entry] = sim.journal_entries()
    assert entry["verb"] == "PATCH" and entry["path"] == "/apis/apps/v1/namespaces/prod/deployments/checkout"
    assert entry["contentType"] == "application/strategic-merge-patch+json"
    stamp = entry["body"]["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
    dep = json.loads(ok(sim, "get", "deploy", "checkout", "-n", "prod", "-o", "json"))
    assert dep["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] == stamp
    pods = json.loads(ok(sim, "get", "pods", "-n", "prod", "-l", "app=checkout", "-o", "json"))["items"]
    assert len(pods) == 2 and POD not in {p["metadata"]["name"] for p in pods}
    statuses = [p["status"]["containerStatuses"][0] for p in pods]
    assert all(s["restartCount"] >= 1 and s["state"]["waiting"]["reason"] == "CrashLoopBackOff"
               and s["lastState"]["terminated"]["exitCode"] == 1 for s in statuses)
    assert dep["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"


def test_rollout_undo_returns_to_the_previous_revision(kube_sim):
    sim = kube_sim("crashloop")
    assert "rolled back" in ok(sim, "rollout", "undo", "deployment/checkout", "-n", "prod")
    [entry] = sim.journal_entries()
    assert (entry["verb"], entry["contentType"]) == ("PATCH", "application/json-patch+json")
    assert [op["path"] for op in entry["body"]] == ["/spec/template", "/metadata/annotations"]
    dep = json.loads(ok(sim, "get", "deploy", "checkout", "-n", "prod", "-o", "json"))
    env = {e["name"] for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert "PAYMENT_API_URL" in env
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"].endswith("checkout:v2.2.4")
    table = rows(ok(sim, "get", "pods", "-n", "prod", "-l", "app=checkout"))
    assert len(table) == 2 and all(r[0].startswith("checkout-5c4b8d7f9b-") and r[2] == "Running"
                                   for r in table)
    rs = {r[0]: r[1] for r in rows(ok(sim, "get", "rs", "-n", "prod", "-l", "app=checkout"))}
    assert rs == {"checkout-5c4b8d7f9b": "2", "checkout-6f8d9c7b5d": "0"}


def test_delete_pod_removes_it_and_the_replicaset_replaces_it(kube_sim):
    sim = kube_sim("crashloop")
    assert f'pod "{POD}" deleted' in ok(sim, "delete", "pod", POD, "-n", "prod")
    [entry] = sim.journal_entries()
    assert (entry["verb"], entry["path"]) == ("DELETE", f"/api/v1/namespaces/prod/pods/{POD}")
    gone = kubectl(sim, "get", "pod", POD, "-n", "prod")
    assert gone.stderr.strip() == f'Error from server (NotFound): pods "{POD}" not found'
    names = ok(sim, "get", "pods", "-n", "prod", "-l", "app=checkout", "-o", "name").split()
    assert len(names) == 2 and f"pod/{POD}" not in names


def test_delete_missing_pod_is_not_found_and_changes_nothing(kube_sim):
    sim = kube_sim("crashloop")
    out = kubectl(sim, "delete", "pod", "nope", "-n", "prod")
    assert out.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'
    assert [e["status"] for e in sim.journal_entries()] == [404]


def test_a_list_served_from_kept_texts_is_json_dumps_of_the_list_and_shows_each_write(kube_sim):
    """The simulator keeps each stored object's JSON (Store.json_text) once it was read: a list
    must still be exactly json.dumps of the list, page by page, and a write must show at once."""
    sim = kube_sim("crashloop")

    def get(path):
        with urlopen(sim.url + path, timeout=10) as answer:
            body = answer.read().decode()
        assert json.dumps(json.loads(body)) == body   # the bytes json.dumps gives
        return json.loads(body)
    pods = get("/api/v1/namespaces/prod/pods")
    items, rv = sim.store.list("pods", "prod")
    assert pods == {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": rv},
                    "items": items} and len(items) > 2
    first = get("/api/v1/namespaces/prod/pods?limit=2")
    rest = get("/api/v1/namespaces/prod/pods?limit=2&continue=" + first["metadata"]["continue"])
    assert first["items"] + rest["items"] == items[:4]
    deployment = "/apis/apps/v1/namespaces/prod/deployments/checkout"
    assert get(deployment) in get("/apis/apps/v1/namespaces/prod/deployments")["items"]
    ok(sim, "rollout", "restart", "deployment/checkout", "-n", "prod")
    restarted = get(deployment)["spec"]["template"]["metadata"]["annotations"]
    assert "kubectl.kubernetes.io/restartedAt" in restarted
    assert get(deployment) in get("/apis/apps/v1/namespaces/prod/deployments")["items"]
    assert POD not in {p["metadata"]["name"] for p in get("/api/v1/namespaces/prod/pods")["items"]}
