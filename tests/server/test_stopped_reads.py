"""Reads that stop, through the server (in a thread over stdio pipes: tests/support/server_thread.py)
and the real kubectl proxy over a scripted API server (tests/support/api_stub.py): end of input in the middle of a request, cancellation of
a queued and a running call, the read timeout (one for all the reads of a call), the byte cap,
a kubectl that is not there.
"""

import json

import pytest

from mcp_kubectl_server.tools.pods import STREAM_LIMIT_BYTES
from tests.server.test_protocol import POD_LIST, serve
from tests.support.api_stub import ApiStub, Rule
from tests.support.server_support import ServerProcess


def test_stdin_closed_mid_request_and_mid_line():
    with ApiStub([Rule("/pods", body=json.loads(POD_LIST), delay=0.3)]) as slow:
        server = serve(slow, "--quiet")
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": "running", "method": "tools/call",
                     "params": {"name": "get_pods", "arguments": {"namespace": "prod"}}})
        server.send_raw(b'{"jsonrpc": "2.0", "id": "cut", "method": "pi')  # no newline: the client died here
        assert server.close(timeout=30) == 0
    assert server.recv()["id"] == "running"  # the call in flight still gets its answer ...
    assert server.recv()["error"]["code"] == -32700  # ... and the cut line a parse error


@pytest.fixture
def hang():
    with ApiStub([Rule("/", hang=True)]) as stub:
        yield stub


def test_cancelling_a_queued_call_and_a_running_one(hang):
    server = serve(hang, "--timeout", "300", "--quiet")
    server.initialize()
    for request_id in ("running", "queued"):
        server.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                     "params": {"name": "get_pods", "arguments": {"namespace": "prod"}}})
    for request_id in ("queued", "running"):
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}})
    assert server.next_reply_is_for("after-cancels")
    assert server.close() == 0


def test_missing_kubectl_and_a_cluster_that_never_answers(tmp_path, hang):
    gone = ServerProcess("--allow-namespaces", "prod", "--kubectl", str(tmp_path / "nope"), "--quiet")
    gone.initialize()
    text, is_error = gone.call("get_pods", {"namespace": "prod"})
    assert is_error and text.startswith("kubectl is not installed or not found")
    gone.close()
    slow = serve(hang, "--timeout", "0.3", "--quiet")
    slow.initialize()
    text, is_error = slow.call("get_pods", {"namespace": "prod"}, timeout=30)
    assert is_error and text.startswith("the cluster did not answer within 0.3s and the read was stopped")
    assert slow.close() == 0


def test_a_body_without_end_is_stopped_at_the_cap():
    with ApiStub([Rule("/log", endless=True)]) as endless:
        server = serve(endless, "--timeout", "60", "--quiet")
        server.initialize()
        # logs stop at their own cap (the API server ignored limitBytes here)
        text, is_error = server.call("get_logs", {"namespace": "prod", "name": "checkout-1"}, timeout=60)
        assert is_error and text.startswith(f"the response passed the {STREAM_LIMIT_BYTES + 65536} byte cap")
        assert server.close() == 0


def test_describe_pod_stays_within_one_timeout():
    pod = {"kind": "Pod", "metadata": {"name": "checkout-1", "namespace": "prod",
                                       "ownerReferences": [{"kind": "ReplicaSet", "name": "checkout-6f8d9c7b5d"}]},
           "spec": {"containers": [{"name": "checkout", "image": "shop/checkout:1"}]}, "status": {"phase": "Running"}}
    with ApiStub([Rule("/pods/checkout-1", body=pod), Rule("/replicasets/", hang=True),
                  Rule("/events", body={"items": []})]) as slow:
        server = serve(slow, "--timeout", "0.5", "--quiet")
        server.initialize()
        text, is_error = server.call("describe_pod", {"namespace": "prod", "name": "checkout-1"})
        assert server.close() == 0
        paths = [p.split("?")[0] for p in slow.reads()]
    assert not is_error
    assert ("owner ReplicaSet/checkout-6f8d9c7b5d -> (ReplicaSet lookup failed: the cluster did not answer"
            " within 0.5s") in text
    assert "Warning EventsUnavailable count=1: the cluster did not answer within 0.5s" in text
    # the pod, then the owner's read that hung; nothing after the time ran out (no events read).
    # On a loaded machine the hung read may be cut before it reaches the stub at all.
    assert paths[0] == "/api/v1/namespaces/prod/pods/checkout-1"
    assert paths[1:] in ([], ["/apis/apps/v1/namespaces/prod/replicasets/checkout-6f8d9c7b5d"]), paths


def test_cancelled_call_gets_no_reply_and_the_read_is_stopped(hang):
    server = serve(hang, "--timeout", "300", "--quiet")
    server.initialize()
    server.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                 "params": {"name": "get_pods", "arguments": {"namespace": "prod"}}})
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}})
    assert server.next_reply_is_for("after-cancel")  # would be "slow" (after 120 s) if not cancelled
    assert server.close() == 0


def test_stale_cancellations_do_not_stop_later_ones(hang):
    # Cancellations for ids never sent, or already answered, used to pile up in a set capped at
    # 1024, after which no cancellation was recorded at all.
    server = serve(hang, "--timeout", "300", "--quiet")
    server.initialize()
    stale = [{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": n}} for n in range(1100)]
    server.send_raw("".join(json.dumps(m) + "\n" for m in stale))
    assert server.request("ping")["result"] == {}
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": server.next_id}})
    server.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                 "params": {"name": "get_pods", "arguments": {"namespace": "prod"}}})
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}})
    assert server.next_reply_is_for("after-cancel")
    assert server.close() == 0


def test_log_streams_cut_overlong_lines_and_carriage_returns():
    long_line = "2026-12-07T10:00:01.000000000Z " + "x" * (200 * 1024)
    text = (f"2026-12-07T10:00:00.000000000Z first\r\n{long_line}\n"
            f"2026-12-07T10:00:02.000000000Z second ERROR deadlock\r\n{long_line}")  # no end
    pod = {"kind": "Pod", "metadata": {"name": "checkout-1", "namespace": "prod"},
           "spec": {"nodeName": "node-a", "containers": [{"name": "checkout", "image": "shop/checkout:1"}]},
           "status": {"phase": "Running", "containerStatuses": [
               {"name": "checkout", "ready": True, "restartCount": 0, "state": {"running": {}}}]}}
    with ApiStub([Rule("/log", text=text), Rule("/pods/checkout-1", body=pod)]) as api:
        server = serve(api, "--timeout", "30", "--quiet")
        server.initialize()
        out, is_error = server.call("get_logs", {"namespace": "prod", "name": "checkout-1", "tail": 4})
        assert not is_error and "\r" not in out and len(out.encode()) < 33 * 1024, out[:300]
        assert out.splitlines()[-2].endswith(" (line cut)")   # the newest line, longer than the cap
        found, is_error = server.call("search_logs", {"namespace": "prod", "pod": "checkout-1",
                                                      "pattern": "deadlock|x{70000}", "since_minutes": 10080})
        assert server.close() == 0
    assert not is_error, found
    assert "checkout-1/checkout: scanned=4 matched=1" in found and "\r" not in found
    assert "checkout-1/checkout 2026-12-07T10:00:02Z: second ERROR deadlock" in found
