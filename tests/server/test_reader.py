"""The reader: GET over the proxy's socket, pages, caps, error texts, timeouts and interruption.

In process, against the simulator (real-shaped clusters) or the scripted API server (answers a
cluster should not give), always through the real kubectl proxy. The error-answer tests share
one stub and one reader (`answering`), each test setting the stub's answers.
"""

import socket
import threading
import time

import pytest

from fixtures.kube_sim.sim import kubeconfig_text
from mcp_kubectl_server.read.reader import CancelledError, ReadError, Reader, resource_path
from tests.support.api_stub import ApiStub, Rule, status, wait_for

PODS = "/api/v1/namespaces/prod/pods"


@pytest.fixture
def open_reader():
    """open_reader(kubeconfig, **options) -> Reader for namespace prod (bulk too), closed at teardown."""
    readers = []

    def start(kubeconfig, **options):
        options.setdefault("timeout", 10)
        readers.append(Reader(kubeconfig=kubeconfig, namespaces=("prod", "bulk"), **options))
        return readers[-1]

    yield start
    for reader in readers:
        reader.close()


@pytest.fixture(scope="module")
def _stub_and_reader():
    with ApiStub([]) as api:
        reader = Reader(kubeconfig=api.kubeconfig, namespaces=("prod", "bulk"), timeout=10)
        yield api, reader
        reader.close()


@pytest.fixture
def answering(_stub_and_reader):
    """answering(*rules) -> (the module's reader, reads): its stub answers with `rules` for this
    test, and reads() lists the GETs it got since (the test's own)."""
    api, reader = _stub_and_reader

    def start(*rules):
        api.rules, since = list(rules), len(api.requests)
        return reader, lambda: api.reads(since=since)

    yield start
    api.rules = []


def test_list_follows_limit_and_continue(kube_sim, open_reader):
    sim = kube_sim("healthy")  # 9 pods in prod: pages of 4, 4 and 1
    reader = open_reader(sim.kubeconfig)
    paged = reader.list_json(PODS, {"labelSelector": "app!=none"}, limit=4)
    assert len(paged["items"]) == 9 and "continue" not in paged["metadata"]
    pages = [r["path"] for r in sim.requests if r["path"].startswith(PODS)]
    assert len(pages) == 3 and all("limit=4" in p and "labelSelector=app%21%3Dnone" in p for p in pages)
    assert "continue=" not in pages[0] and all("continue=" in p for p in pages[1:])
    names = [p["metadata"]["name"] for p in paged["items"]]
    assert len(set(names)) == 9  # no page read twice, none skipped
    whole = reader.list_json(PODS, limit=500)
    assert [p["metadata"]["name"] for p in whole["items"]] == names
    def frontend_name(pod):  # `item` keeps what it returns, drops None, page by page
        return pod["metadata"]["name"] if pod["metadata"]["name"].startswith("frontend-") else None
    kept = reader.list_json(PODS, limit=4, item=frontend_name)
    assert kept["items"] == [n for n in names if n.startswith("frontend-")] and len(kept["items"]) == 3


def test_get_json_get_text_and_one_kept_alive_connection(kube_sim, open_reader):
    sim = kube_sim("crashloop")
    reader = open_reader(sim.kubeconfig)
    pod = reader.get_json(resource_path("/api/v1", "pods", namespace="prod", name="checkout-6f8d9c7b5d-x7k2p"))
    assert pod["kind"] == "Pod"
    log = reader.get_text(f"{PODS}/checkout-6f8d9c7b5d-x7k2p/log", {"previous": "true", "tailLines": 2})
    assert len(log.splitlines()) == 2  # the API server cut it (tailLines), not the reader
    first = reader._channel.conn.sock
    reader.get_json(f"{PODS}/checkout-6f8d9c7b5d-x7k2p")
    assert reader._channel.conn.sock is first  # one connection for the whole run
    assert reader.proxy.starts == 1


@pytest.mark.parametrize("path", ["/api/v1/namespaces/prod/pods/../x", "/api/v1/namespaces/prod/pods?x=1",
                                  "api/v1/pods", "/api/v1/namespaces/prod/pods/a b", "/api/v1/Pods", ""])
def test_only_api_paths_are_read(path, open_reader, tmp_path):
    reader = open_reader(str(tmp_path / "never-read"))
    with pytest.raises(ValueError):
        reader.get_json(path)
    assert reader.proxy.proc is None  # refused before anything started


@pytest.mark.parametrize("rule, expected", [
    (Rule("/pods", 401, status(401, "Unauthorized", "Unauthorized")),
     "the cluster rejected the credentials (401 Unauthorized: Unauthorized): the token or client"
     " certificate of this kubeconfig context is missing, expired or wrong; the operator must log in"
     " again and restart the server. Retrying will not help"),
    (Rule("/pods", 403, status(403, "Forbidden", 'pods is forbidden: User "dev" cannot list resource'
                                                 ' "pods" in API group "" in the namespace "prod"')),
     'the cluster refused this read (403 Forbidden): pods is forbidden: User "dev" cannot list resource'
     ' "pods" in API group "" in the namespace "prod". These credentials cannot read that (RBAC); do'
     " not retry it, work with what the other tools show"),
    (Rule("/pods", 404, status(404, "NotFound", 'pods "x" not found', name="x", kind="pods")),
     'not found (404): pods "x" not found; check the exact name and namespace: the object may have'
     " been deleted or replaced, so list what exists before asking again"),
    (Rule("/pods", 404, status(404, "NotFound", "the server could not find the requested resource")),
     f"the API server does not serve {PODS} (404: the server could not find the requested resource):"
     " this cluster may not have that API group or version; do not retry it"),
    (Rule("/pods", 410, status(410, "Expired", "too old resource version")),
     "the list changed while it was being read (410 Expired); ask again"),
    (Rule("/pods", 429, status(429, "TooManyRequests", "slow down")),
     "the API server is rate limiting this client (429 TooManyRequests: slow down); wait a little and"
     " try again"),
    (Rule("/pods", 500, status(500, "InternalError", "etcdserver: request timed out")),
     "the API server failed (500 InternalError): etcdserver: request timed out; try again later"),
    (Rule("/pods", text="{not json"), f"the API server answered {PODS} with a body that is not JSON: {{not json"),
])
def test_error_answers_become_one_line_with_a_next_step(rule, expected, answering):
    reader, _ = answering(rule)
    with pytest.raises(ReadError) as caught:
        reader.list_json(PODS)
    assert str(caught.value) == expected
    assert caught.value.status == (None if rule.status == 200 else rule.status)


def test_connection_refused_says_the_cluster_is_unreachable(open_reader, tmp_path):
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_text(f"http://127.0.0.1:{port}"))
    reader = open_reader(str(kubeconfig))
    with pytest.raises(ReadError) as caught:
        reader.get_json(PODS)
    assert str(caught.value) == (
        f"cannot reach the Kubernetes API server (dial tcp 127.0.0.1:{port}: connect: connection refused):"
        " the cluster is down or the kubeconfig context points at the wrong address; the operator should"
        " check `kubectl cluster-info` with the same --context/--kubeconfig")


def test_the_reads_of_one_call_share_one_timeout(open_reader):
    # The first read spends 0.3 s of the 0.5 s; the second may wait only what is left (0.2 s),
    # where a budget of its own would wait at least 0.5 s: the line between them is drawn at
    # 0.45 s, far from both, so a busy machine does not cross it.
    with ApiStub([Rule("/pods/a", body={"kind": "Pod"}, delay=0.3), Rule("/pods/b", hang=True)]) as api:
        reader = open_reader(api.kubeconfig, timeout=0.5)
        call = reader.for_call()
        call.get_json(f"{PODS}/a")
        started = time.monotonic()
        with pytest.raises(ReadError, match=r"did not answer within 0\.5s"):
            call.get_json(f"{PODS}/b")
        assert time.monotonic() - started < 0.45  # only what was left of the 0.5 s
        with pytest.raises(ReadError, match=r"did not answer within 0\.5s"):
            call.get_json(f"{PODS}/a")  # the budget is spent: not even sent
        assert api.reads().count(f"{PODS}/a") == 1
        assert reader.for_call().get_json(f"{PODS}/a") == {"kind": "Pod"}  # a new call, a new budget


def test_interrupt_stops_a_read_at_once_and_the_next_read_works(open_reader):
    with ApiStub([Rule("/pods/slow", hang=True), Rule("/pods/fast", body={"kind": "Pod"})]) as api:
        reader = open_reader(api.kubeconfig, timeout=60)
        reader.get_json(f"{PODS}/fast")
        cancelled = threading.Event()
        call = reader.for_call(cancelled=cancelled.is_set)

        def cancel_when_it_waits():
            wait_for(lambda: f"{PODS}/slow" in api.reads())
            cancelled.set()
            reader.interrupt()

        threading.Thread(target=cancel_when_it_waits, daemon=True).start()
        started = time.monotonic()
        with pytest.raises(CancelledError):
            call.get_json(f"{PODS}/slow")
        assert time.monotonic() - started < 2
        assert reader.for_call().get_json(f"{PODS}/fast") == {"kind": "Pod"}
        assert reader.proxy.starts == 1


def test_a_cancelled_call_reads_nothing_more(answering):
    reader, reads = answering(Rule("/pods", body={"kind": "Pod"}))
    with pytest.raises(CancelledError):
        reader.for_call(cancelled=lambda: True).get_json(f"{PODS}/x")
    assert reads() == []


def test_resource_path():
    assert resource_path("/apis/apps/v1", "deployments", namespace="prod", name="web") == \
        "/apis/apps/v1/namespaces/prod/deployments/web"
    assert resource_path("/api/v1/", "nodes") == "/api/v1/nodes"
    assert resource_path("/api/v1", "pods", namespace="p", name="x", subresource="log") == \
        "/api/v1/namespaces/p/pods/x/log"


def test_a_body_over_the_cap_is_an_error_and_the_next_read_works(open_reader):
    with ApiStub([Rule("/log", endless=True), Rule("/pods/x", body={"kind": "Pod"})]) as api:
        reader = open_reader(api.kubeconfig)
        with pytest.raises(ReadError, match="the response passed the 1000 byte cap and was stopped"):
            reader.get_text(f"{PODS}/x/log", max_bytes=1000)
        assert reader.get_json(f"{PODS}/x") == {"kind": "Pod"}


def test_interrupt_stops_a_read_that_waits_for_the_proxy_to_start(open_reader, tmp_path):
    # A kubectl proxy is up in a fraction of a second (some builds first ask the cluster's
    # /version, for up to 5 s; kubectl itself does not), too quick to interrupt: the stand-in here
    # is a `kubectl` that never says it serves, as one stuck on its cluster or its credentials.
    kubectl = tmp_path / "kubectl"
    kubectl.write_text("#!/bin/sh\nexec sleep 60\n")
    kubectl.chmod(0o755)
    with ApiStub([]) as api:
        reader = open_reader(api.kubeconfig, timeout=30, kubectl=str(kubectl))
        cancelled = threading.Event()

        def cancel_when_it_waits():
            wait_for(lambda: reader.proxy.proc is not None)   # launched: the read waits for it
            cancelled.set()
            reader.interrupt()

        threading.Thread(target=cancel_when_it_waits, daemon=True).start()
        started = time.monotonic()
        with pytest.raises(CancelledError):
            reader.for_call(cancelled=cancelled.is_set).get_json(f"{PODS}/x")
        assert time.monotonic() - started < 2
        assert reader.proxy.alive() and reader.proxy.starts == 1  # left starting for the next read


def test_error_texts_are_redacted_before_they_are_cut(answering):
    # A cut through the middle of a token would leave a piece the redactor no longer knows.
    secret = "ghp_" + "A1b2C3d4E5" * 4
    message = "x" * 340 + f" clone failed with token {secret} and more"  # the cut falls after it
    reader, _ = answering(Rule("/pods/a", 500, status(500, "InternalError", message)),
                          Rule("/pods/b", text="<html>" + "y" * 160 + f" token={secret}</html>"))
    for path in (f"{PODS}/a", f"{PODS}/b"):
        with pytest.raises(ReadError) as caught:
            reader.get_json(path)
        assert "[REDACTED]" in str(caught.value) and "A1b2C3" not in str(caught.value), path
