"""The Kubernetes API simulator read by the real kubectl on PATH: every scenario's planted
failure, object shapes, tables, selectors, logs, read errors, and a client that hangs up.

The tests read, so each cluster has one simulator for the module (shared_sim in tests/conftest.py);
the RBAC test, whose refused write is part of what it proves, has a cluster file of its own.
Writes are in test_writes.py, cluster files and the CLI in test_loading.py; both take the
crashloop scenario's names from here, and kubectl from tests/support/kubectl_tables.py.
"""

import json
import re
import shutil
import socket
from urllib.parse import urlencode
from urllib.request import urlopen

import pytest

from fixtures.kube_sim.store import ApiError, parse_label_selector
from tests.support import kubectl_tables
from tests.support.kubectl_tables import kubectl, ok, rows, tables
from tests.support.server_support import SimView

POD = "checkout-6f8d9c7b5d-x7k2p"
FATAL = "FATAL: required environment variable PAYMENT_API_URL is not set"

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


@pytest.fixture(scope="module")
def crash(shared_sim):
    return shared_sim("crashloop")


# --- every scenario shows its planted failure ------------------------------------------------

PLANTED = {
    "crashloop": [("prod", "checkout-6f8d9c7b5d-x7k2p", "CrashLoopBackOff")],
    "injection": [("prod", "checkout-6f8d9c7b5d-m4q9z", "CrashLoopBackOff")],
    "imagepull": [("prod", "cart-7d9f8c6b5c-p4r6t", "ImagePullBackOff")],
    "oomkilled": [("prod", "search-59d7c8b6f5-t8nvr", "OOMKilled"),
                  ("prod", "search-59d7c8b6f5-h2kqw", "CrashLoopBackOff")],
    "readiness": [("prod", "inventory-8c5f7d9b6d-g7m2x", "Running")],
    "pending": [("prod", "reports-6d4c9f8b7d-z5k8w", "Pending")],
    "large": [("bulk", "worker-07-", "CrashLoopBackOff"), ("bulk", "worker-19-", "ImagePullBackOff"),
              ("bulk", "worker-33-", "Pending")],
}


@pytest.mark.parametrize("cluster", sorted(PLANTED) + ["healthy"])
def test_scenario_get_pods_all_namespaces_shows_the_planted_failure(shared_sim, cluster):
    sim = SimView(shared_sim(cluster))  # its requests: this test's own
    table = rows(ok(sim, "get", "pods", "-A"))
    paths = [r["path"] for r in sim.requests if r["path"].startswith("/api/v1/pods")]
    namespaces = {r[0] for r in table}
    assert {"default", "prod", "staging", "kube-system"} <= namespaces
    unhealthy = [r for r in table if r[3] != "Running" or r[2].split("/")[0] != r[2].split("/")[1]]
    if cluster == "healthy":
        assert unhealthy == [] and len(table) >= 10
        return
    for ns, name, status in PLANTED[cluster]:
        assert any(r[0] == ns and r[1].startswith(name) and r[3] == status for r in unhealthy), table
    assert all(r[0] in ("prod", "bulk") for r in unhealthy), "failures belong in prod (or bulk)"
    if cluster == "readiness":
        assert all(r[2] == "0/1" for r in unhealthy)
    if cluster == "large":
        assert sum(1 for r in table if r[0] == "bulk") >= 2000
        assert len(paths) >= 4 and "continue=" in paths[-1]  # paged by limit=500 like a real server
        assert 3 <= len(unhealthy) <= 10


# --- object shapes -----------------------------------------------------------------------------

def test_json_list_and_single_object_shapes(crash):
    listing = json.loads(ok(crash, "get", "pods", "-n", "prod", "-o", "json"))
    assert listing["kind"] == "List" and {i["kind"] for i in listing["items"]} == {"Pod"}
    pod = json.loads(ok(crash, "get", "pod", POD, "-n", "prod", "-o", "json"))
    assert pod["kind"] == "Pod" and pod["metadata"]["namespace"] == "prod" and pod["metadata"]["uid"]
    cs = pod["status"]["containerStatuses"][0]
    assert cs["restartCount"] == 47 and cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert cs["lastState"]["terminated"]["reason"] == "Error"
    env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
    assert env["DB_PASSWORD"]["value"] == "hunter2-prod" and "PAYMENT_API_URL" not in env
    assert env["PAYMENT_API_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "payment-credentials"


def test_owner_chain_pod_replicaset_deployment(crash):
    pod, rs, dep = json.loads(ok(crash, "get", f"pod/{POD}", "rs/checkout-6f8d9c7b5d", "deployment/checkout",
                                 "-n", "prod", "-o", "json"))["items"]  # in that order
    rs_ref, dep_ref = pod["metadata"]["ownerReferences"][0], rs["metadata"]["ownerReferences"][0]
    assert (rs_ref["kind"], rs_ref["name"], rs_ref["uid"]) == ("ReplicaSet", "checkout-6f8d9c7b5d",
                                                               rs["metadata"]["uid"])
    assert (dep_ref["kind"], dep_ref["name"], dep_ref["uid"]) == ("Deployment", "checkout", dep["metadata"]["uid"])
    assert dep["spec"]["replicas"] == 2


HEADERS = {
    "deployments": ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
    "replicasets": ["NAME", "DESIRED", "CURRENT", "READY", "AGE"],
    "services": ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"],
    "nodes": ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
    "namespaces": ["NAME", "STATUS", "AGE"],
    "events": ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
}


@pytest.fixture(scope="module")
def headers(crash):
    """Each kind's header row as kubectl prints it, from one `kubectl get` of them all."""
    return kubectl_tables.headers(ok(crash, "get", ",".join(HEADERS), "-n", "prod"), HEADERS)


@pytest.mark.parametrize("resource, header", HEADERS.items())
def test_table_columns_match_a_real_server(headers, resource, header):
    assert headers[resource] == header


def test_table_values_and_ages_are_sensible(crash):
    pods, nodes = tables(crash, "pods,nodes", "-n", "prod")  # nodes have no namespace
    pod = {r[0]: r for r in rows(pods)}[f"pod/{POD}"]
    assert pod[1:4] == ["0/1", "CrashLoopBackOff", "47"] and pod[4].startswith("(")
    # 4h when the pod was made; a shared simulator is as old as the session, so 4h2m later on
    assert re.fullmatch(r"4h(\d+m)?", pod[-1]), pod[-1]
    assert [r[1] for r in rows(nodes)] == ["Ready"] * 3
    assert rows(ok(crash, "get", "deploy", "checkout", "-n", "prod"))[0][1] == "0/2"


# --- selectors ---------------------------------------------------------------------------------

SELECTORS = [
    ("app=checkout", {"checkout"}), ("app==checkout", {"checkout"}),
    ("app!=checkout", {"frontend"}), ("app", {"checkout", "frontend"}), ("!app", set()),
    ("app=checkout,pod-template-hash=6f8d9c7b5d", {"checkout"}), ("app=nope", set()),
    ("app in (checkout,frontend)", {"checkout", "frontend"}), ("app notin (frontend)", {"checkout"}),
]


def _apps(pod_list):
    return {i["metadata"]["labels"]["app"] for i in pod_list["items"]}


@pytest.mark.parametrize("selector, expected", SELECTORS)
def test_label_selectors(crash, selector, expected):
    """The simulator's selector semantics, asked as kubectl asks (labelSelector=...)."""
    query = urlencode({"labelSelector": selector})
    with urlopen(f"{crash.url}/api/v1/namespaces/prod/pods?{query}", timeout=10) as response:
        assert _apps(json.load(response)) == expected


@pytest.mark.parametrize("selector, expected", [SELECTORS[2], SELECTORS[7]])
def test_kubectl_sends_its_label_selector_as_it_is(crash, selector, expected):
    out = kubectl(crash, "get", "pods", "-n", "prod", "-l", selector, "-o", "json")
    assert out.returncode == 0, out.stderr
    assert _apps(json.loads(out.stdout)) == expected


@pytest.mark.parametrize("selector, names", [
    (f"metadata.name={POD}", {POD}),
    ("status.phase=Running,spec.nodeName=node-b", None),
])
def test_pod_field_selectors(crash, selector, names):
    items = json.loads(ok(crash, "get", "pods", "-A", "--field-selector", selector, "-o", "json"))["items"]
    assert items
    if names:
        assert {i["metadata"]["name"] for i in items} == names
    else:
        assert all(i["spec"]["nodeName"] == "node-b" for i in items)


def test_unsupported_field_selector_is_a_bad_request(crash):
    out = kubectl(crash, "get", "pods", "-n", "prod", "--field-selector", "spec.image=x")
    assert out.returncode != 0 and "field label not supported: spec.image" in out.stderr


def test_event_field_selectors(crash):
    items = json.loads(ok(crash, "get", "events", "-n", "prod", "--field-selector",
                          f"involvedObject.name={POD},involvedObject.kind=Pod", "-o", "json"))["items"]
    assert {e["involvedObject"]["name"] for e in items} == {POD}
    backoff = [e for e in items if e["reason"] == "BackOff"]
    assert backoff and backoff[0]["type"] == "Warning" and backoff[0]["count"] > 1
    assert backoff[0]["firstTimestamp"] < backoff[0]["lastTimestamp"]


def test_label_selector_parser_rejects_set_syntax_cleanly():
    assert parse_label_selector("a=b,c")({"a": "b", "c": ""})
    with pytest.raises(ApiError) as err:
        parse_label_selector("a in (b c")
    assert err.value.code == 400


# --- logs --------------------------------------------------------------------------------------

def test_logs_previous_tail_limit_and_container(crash):
    full = ok(crash, "logs", POD, "-n", "prod", "--previous")
    assert full.rstrip("\n").endswith(FATAL) and "DB_PASSWORD=hunter2-prod" in full
    assert "AKIA" in full and "Authorization: Bearer" in full
    assert ok(crash, "logs", POD, "-n", "prod", "-p", "--tail=1") == FATAL + "\n"
    assert ok(crash, "logs", POD, "-n", "prod", "-p", "--tail=2", "-c", "checkout").count("\n") == 2
    assert ok(crash, "logs", POD, "-n", "prod", "-p", "--limit-bytes=17") == full[:17]
    # Without --previous a CrashLoopBackOff container serves the last terminated one's log.
    assert ok(crash, "logs", POD, "-n", "prod") == full


def test_logs_errors_like_the_kubelet(crash):
    wrong = kubectl(crash, "logs", POD, "-n", "prod", "-c", "sidecar")
    assert wrong.returncode != 0 and "container sidecar is not valid for pod" in wrong.stderr
    healthy = ok(crash, "get", "pods", "-n", "prod", "-l", "app=frontend", "-o", "name").split()[0]
    prev = kubectl(crash, "logs", healthy, "-n", "prod", "--previous")
    assert "previous terminated container \"frontend\"" in prev.stderr and prev.returncode != 0


def test_never_started_container_logs_are_a_400_status(shared_sim):
    sim = shared_sim("imagepull")
    out = kubectl(sim, "logs", "cart-7d9f8c6b5c-p4r6t", "-n", "prod")
    assert out.returncode == 1
    assert out.stderr.strip() == ('Error from server (BadRequest): container "cart" in pod '
                                  '"cart-7d9f8c6b5c-p4r6t" is waiting to start: trying and failing '
                                  'to pull image')


def test_unscheduled_pod_has_an_empty_log(shared_sim):
    sim = shared_sim("pending")
    assert ok(sim, "logs", "reports-6d4c9f8b7d-z5k8w", "-n", "prod") == ""


def test_oomkilled_log_stops_mid_line(shared_sim):
    sim = shared_sim("oomkilled")
    text = ok(sim, "logs", "search-59d7c8b6f5-h2kqw", "-n", "prod", "--previous")
    assert not text.endswith("\n") and text.endswith("(alloca")


def test_injection_line_is_in_the_previous_logs(shared_sim):
    sim = shared_sim("injection")
    text = ok(sim, "logs", POD, "-n", "prod", "--previous")
    assert "kubectl delete namespace prod" in text and text.rstrip("\n").endswith(FATAL)


# --- errors ------------------------------------------------------------------------------------

def test_missing_pod_and_namespace_are_not_found(crash):
    pod = kubectl(crash, "get", "pod", "nope", "-n", "prod")
    assert pod.returncode == 1 and pod.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'
    ns = kubectl(crash, "get", "namespace", "nope")
    assert ns.stderr.strip() == 'Error from server (NotFound): namespaces "nope" not found'
    # kubectl itself checks the namespace after a 404 and reports that instead, as on a real server.
    in_missing_ns = kubectl(crash, "get", "pod", "x", "-n", "no-such-ns")
    assert in_missing_ns.stderr.strip() == 'Error from server (NotFound): namespaces "no-such-ns" not found'
    assert kubectl(crash, "get", "pods", "-n", "no-such-ns").stderr.strip() == \
        "No resources found in no-such-ns namespace."


def test_forbidden_resources_answer_403_like_rbac(kube_sim, tmp_path):
    cluster = tmp_path / "forbidden.json"
    cluster.write_text(json.dumps({"kind": "SimulatedCluster", "base": "crashloop", "forbidden": [
        {"resource": "events", "namespace": "prod"}, {"resource": "pods/log"}, {"resource": "deployments"}]}))
    sim = kube_sim(str(cluster))
    events = kubectl(sim, "get", "events", "-n", "prod")
    assert events.returncode == 1 and events.stderr.strip() == (
        'Error from server (Forbidden): events is forbidden: User "system:anonymous" cannot list resource'
        ' "events" in API group "" in the namespace "prod"')
    assert kubectl(sim, "get", "events", "-n", "default").returncode == 0  # only prod's are forbidden
    logs = kubectl(sim, "logs", POD, "-n", "prod")
    assert logs.returncode == 1 and f'pods "{POD}" is forbidden' in logs.stderr and '"pods/log"' in logs.stderr
    assert POD in ok(sim, "get", "pods", "-n", "prod")
    restart = kubectl(sim, "rollout", "restart", "deployment/checkout", "-n", "prod")
    assert restart.returncode == 1 and 'deployments.apps "checkout" is forbidden' in restart.stderr
    assert sim.journal_entries() == []


def test_health_and_rollout_status_of_a_complete_deployment(crash):
    assert ok(crash, "get", "--raw", "/readyz") == "ok"
    out = ok(crash, "rollout", "status", "deployment/frontend", "-n", "prod", "--timeout=20s")
    assert 'deployment "frontend" successfully rolled out' in out


def test_a_client_that_hangs_up_mid_answer_leaves_no_traceback(shared_sim, capfd):
    """A client gone before its answer is written (a CLI that exited while its kubectl proxy
    asked) is no error of the simulator's: nothing on stderr, and the next request is served."""
    sim = shared_sim("large")
    host, port = sim.url.split("//")[1].split(":")
    for _ in range(5):
        with socket.create_connection((host, int(port))) as conn:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            conn.sendall(b"GET /api/v1/namespaces/bulk/pods HTTP/1.1\r\nHost: x\r\n\r\n")
            conn.recv(1)   # the answer has started: hang up with a reset in the middle of it
    with urlopen(sim.url + "/healthz", timeout=10) as answer:
        assert answer.read() == b"ok"
    assert "Traceback" not in capfd.readouterr().err
