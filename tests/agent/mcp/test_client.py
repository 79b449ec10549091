"""The stdio MCP client driving a real fake server subprocess (tests/support/fake_mcp_server.py)."""

import _thread
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.api_stub import wait_for
from triage_agent.mcp import client as mcp_client
from triage_agent.mcp import wire
from triage_agent.mcp.client import MODERN_VERSION, PROTOCOL_VERSION, McpError, McpStdioClient

FAKE = str(Path(__file__).resolve().parents[2] / "support" / "fake_mcp_server.py")
ALL_TOOLS = ["echo", "mixed", "fail", "rpc_error", "probe", "hang", "seen", "env", "quit",
             "crash"]


def wait_for_exit(proc, limit=10.0):
    deadline = time.monotonic() + limit
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is not None


@pytest.fixture
def make():
    clients = []

    def build(*flags, **options):
        options.setdefault("call_timeout", 10)
        options.setdefault("start_timeout", 10)
        options.setdefault("close_timeout", 2)
        client = McpStdioClient([sys.executable, FAKE, *flags], **options)
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()


def test_handshake_list_and_call(make):
    client = make().start()
    assert client.protocol_version == PROTOCOL_VERSION == "2025-11-25"
    assert client.server_info == {"name": "fake-mcp", "version": "0.0.1"}
    assert [t["name"] for t in client.list()] == ALL_TOOLS
    assert client.call("echo", {"namespace": "prod"}) == ('{"namespace": "prod"}', False)
    seen = json.loads(client.call("seen", {})[0])
    assert seen[0]["method"] == "notifications/initialized"
    # the client's stderr reader may not have taken the line in yet (it failed under load)
    assert wait_for(lambda: "client offered 2025-11-25" in client.stderr_tail())


def test_context_manager_starts_and_closes(make):
    client = make()
    with client:
        assert client.call("echo", {"a": 1}) == ('{"a": 1}', False)
    proc_gone = client.process is None
    assert proc_gone
    with pytest.raises(McpError, match="closed"):
        client.call("echo", {})


def test_a_second_start_keeps_the_running_server(make, tmp_path):
    marker = tmp_path / "starts"
    client = make("--marker", str(marker))
    with client:
        first = client.process
        assert client.start() is client and client.process is first
        assert client.call("echo", {"n": 1}) == ('{"n": 1}', False)
    assert marker.read_text().count("start") == 1 and first.poll() is not None


def test_calls_start_the_server_lazily(make):
    client = make()
    assert client.call("echo", {}) == ("{}", False)


def test_pagination_follows_next_cursor(make):
    client = make("--pages", "4").start()
    assert [t["name"] for t in client.list()] == ALL_TOOLS


def test_noise_and_notifications_on_stdout_are_skipped(make):
    client = make("--noise").start()
    assert len(client.list()) == len(ALL_TOOLS)
    assert client.call("echo", {"x": 1}) == ('{"x": 1}', False)


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26", "2024-11-05"])
def test_counter_offer_of_an_older_version_is_accepted(make, version):
    client = make("--offer", version).start()
    assert client.protocol_version == version
    assert client.call("echo", {}) == ("{}", False)


def test_unsupported_version_is_refused_naming_both(make):
    client = make("--offer", "2099-01-01")
    with pytest.raises(McpError) as caught:
        client.start()
    assert "2099-01-01" in str(caught.value) and "2025-11-25" in str(caught.value)
    assert client.process is None


def test_server_that_dies_at_start_is_an_error_with_its_stderr(make):
    with pytest.raises(McpError) as caught:
        make("--die-at-start").start()
    assert "exited during the handshake" in str(caught.value)
    assert "fatal: cannot load configuration" in str(caught.value)


LAST_WORDS = r'''
import os, sys, time
os.close(1)       # stdout ends first: the client sees the server gone
time.sleep(0.2)   # while it is still on its way out (the window a busy machine opens)
sys.exit("fatal: cannot read /etc/triage/server.yaml")
'''


def test_the_last_words_of_a_server_on_its_way_out_reach_the_error(tmp_path):
    script = tmp_path / "last_words.py"
    script.write_text(LAST_WORDS)
    client = McpStdioClient([sys.executable, str(script)], start_timeout=10, close_timeout=2)
    with pytest.raises(McpError) as failed:
        client.start()
    client.close()
    assert "cannot read /etc/triage/server.yaml" in str(failed.value)


def test_missing_command_is_a_clear_error(make, tmp_path):
    client = McpStdioClient([str(tmp_path / "no-such-server")])
    with pytest.raises(McpError, match="cannot start MCP server"):
        client.start()
    with pytest.raises(McpError, match="argv list"):
        McpStdioClient("python3 -m server")


def test_server_requests_are_answered(make):
    client = make().start()
    text, is_error = client.call("probe", {})
    answers = json.loads(text)
    assert answers["s-ping"] == {}
    assert answers["s-roots"]["code"] == -32601 and not is_error


def test_content_blocks_are_joined_and_non_text_noted(make):
    text, is_error = make().start().call("mixed", {})
    assert text.splitlines() == ["first", "[image omitted]", "[audio omitted]", "embedded",
                                 "[resource link: file:///y]", "last"]
    assert is_error is False


def test_is_error_and_json_rpc_errors_come_back_as_error_results(make):
    client = make().start()
    assert client.call("fail", {}) == ("pods is forbidden", True)
    assert client.call("rpc_error", {}) == ("MCP error -32602: unknown tool: rpc_error", True)
    text, is_error = client.call("echo", {"bad": object()})
    assert is_error and "JSON" in text


def test_timeout_cancels_and_returns_an_error(make):
    client = make(call_timeout=0.3).start()
    text, is_error = client.call("hang", {})
    assert is_error and "timed out after 0.3 s" in text
    client.call_timeout = 10
    seen = json.loads(client.call("seen", {})[0])
    cancels = [n for n in seen if n["method"] == "notifications/cancelled"]
    assert len(cancels) == 1 and isinstance(cancels[0]["params"]["requestId"], int)


def test_crash_during_a_call_restarts_once_then_gives_up(make):
    client = make().start()
    text, is_error = client.call("crash", {})
    assert is_error and "exited during this call (exit code 70)" in text
    assert client.restarts == 1
    assert client.call("echo", {"after": "restart"}) == ('{"after": "restart"}', False)
    with pytest.raises(McpError) as caught:
        client.call("crash", {})
    assert "panic: the fake server crashed on purpose" in str(caught.value)
    assert "already restarted 1 time" in str(caught.value)


def test_server_gone_between_calls_is_restarted_before_the_call(make, tmp_path):
    marker = tmp_path / "starts"
    client = make("--marker", str(marker)).start()
    assert client.call("quit", {}) == ("bye", False)
    wait_for_exit(client.process)
    assert client.call("echo", {"n": 2}) == ('{"n": 2}', False)
    assert client.restarts == 1 and marker.read_text().count("start") == 2


def test_restart_that_fails_raises_with_stderr(make, tmp_path):
    client = make("--marker", str(tmp_path / "starts"), "--die-from", "2").start()
    with pytest.raises(McpError) as caught:
        client.call("crash", {})
    message = str(caught.value)
    assert "restart failed" in message and "fatal: cannot load configuration" in message


def test_minimal_environment_by_default(make, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN_FOR_TEST", "x")
    monkeypatch.setenv("KUBECONFIG", "/tmp/kc")
    monkeypatch.setenv("KUBECACHEDIR", "/tmp/kube-cache")  # kubectl's discovery cache
    monkeypatch.setenv("GOMEMLIMIT", "64MiB")  # the Go runtime's, for kubectl
    client = make(env={"EXTRA_FOR_SERVER": "1"}).start()
    names = set(client.call("env", {})[0].split())
    assert "SECRET_TOKEN_FOR_TEST" not in names
    assert {"PATH", "KUBECONFIG", "KUBECACHEDIR", "GOMEMLIMIT", "EXTRA_FOR_SERVER"} <= names


def test_close_terminates_a_server_that_ignores_end_of_input(make):
    client = make("--ignore-eof", close_timeout=0.2).start()
    proc = client.process
    client.close()
    assert proc.poll() is not None


def test_close_kills_a_server_that_ignores_sigterm(make):
    client = make("--ignore-eof", "--ignore-term", close_timeout=0.2).start()
    proc = client.process
    client.close()
    assert proc.poll() == -9
    client.close()  # idempotent


ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_against_the_real_kubectl_server_and_kube_sim(kube_sim, monkeypatch, era):
    if era == "handshake":  # a client that never probes: the server's handshake era still works
        monkeypatch.setattr(McpStdioClient, "_probe", lambda self: (_ for _ in ()).throw(
            mcp_client._Legacy()))
    sim = kube_sim("crashloop")
    argv = [sys.executable, "-m", "mcp_kubectl_server", "--allow-namespaces", "prod",
            "--kubeconfig", sim.kubeconfig, "--quiet"]
    with McpStdioClient(argv, cwd=str(ROOT), call_timeout=30, start_timeout=30) as client:
        assert client.era == era
        assert client.protocol_version == (MODERN_VERSION if era == "modern" else PROTOCOL_VERSION)
        assert client.server_info["name"] == "mcp-kubectl-server"
        tools = {t["name"]: t for t in client.list()}
        assert {"get_pods", "describe_pod", "get_events", "get_logs"} <= set(tools)
        assert all(t.get("annotations", {}).get("readOnlyHint") is True for t in tools.values())
        text, is_error = client.call("get_pods", {"namespace": "prod"})
        assert not is_error and "checkout-6f8d9c7b5d-" in text
        text, is_error = client.call("get_pods", {"namespace": "kube-system"})
        assert is_error


def _waiting_for_an_answer(ident):
    """True while thread `ident` is blocked in a wait inside StdioPeer.request."""
    frame = sys._current_frames().get(ident)
    if frame is None or frame.f_code.co_name != "wait" or frame.f_code.co_filename != \
            threading.__file__:
        return False
    while frame is not None and frame.f_code.co_filename != wire.__file__:
        frame = frame.f_back
    return frame is not None and frame.f_code.co_name == "request"


def test_a_signal_tripped_just_before_the_wait_for_an_answer_is_handled_long_before_the_deadline():
    """The race behind a SIGTERM the CLI did not act on (tests/agent/cli/test_signals.py, about 2
    runs in 1,000 under load): a signal whose C handler runs after the wait's last check for
    pending signals does not interrupt the blocked wait. _thread.interrupt_main trips a signal in
    just that way, without interrupting a wait; the peer's wait must still come back to Python
    and run the handler within moments (wire.SIGNAL_CHECK_S), not at the 30-s deadline."""
    assert threading.current_thread() is threading.main_thread()   # where handlers run
    peer = wire.StdioPeer([sys.executable, "-c", "import sys; sys.stdin.read()"],   # never answers
                          env={"PATH": os.environ.get("PATH", "")})
    main = threading.get_ident()

    def trip():
        assert wait_for(lambda: _waiting_for_an_answer(main), timeout=10)
        _thread.interrupt_main(signal.SIGTERM)

    def stop_handler(signum, frame):
        raise KeyboardInterrupt("terminated by SIGTERM")

    before = signal.signal(signal.SIGTERM, stop_handler)
    tripper = threading.Thread(target=trip, daemon=True)
    started = time.monotonic()
    try:
        tripper.start()
        with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
            peer.request("tools/call", {"name": "get_logs"}, time.monotonic() + 30)
        waited = time.monotonic() - started
    finally:
        signal.signal(signal.SIGTERM, before)
        tripper.join(10)
        peer.stop(1)
    assert waited < 15, f"the handler ran only after {waited:.1f} s"
