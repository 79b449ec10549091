"""Both MCP eras from the client's side: the server/discover probe, the fallback to initialize,
per-request _meta, version mismatches named to the operator, tools/list cache hints, and pings
answered while the client is idle. Real subprocesses: tests/support/fake_mcp_server.py, and our own
server behind tests/support/mcp_era_shim.py (which makes it look like a single-era server) against
kube_sim through real kubectl."""

import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from triage_agent.mcp.client import MODERN_VERSION, PROTOCOL_VERSION, McpError, McpStdioClient

TESTS = Path(__file__).resolve().parents[2] / "support"
ROOT = TESTS.parents[1]
FAKE = str(TESTS / "fake_mcp_server.py")
SHIM = str(TESTS / "mcp_era_shim.py")


@pytest.fixture
def make():
    clients = []

    def build(argv, **options):
        options.setdefault("call_timeout", 10)
        options.setdefault("start_timeout", 10)
        client = McpStdioClient(argv, cwd=str(ROOT), **options)
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()


def fake(*flags):
    return [sys.executable, FAKE, *flags]


def test_a_modern_only_server_is_spoken_to_with_meta_on_every_request(make):
    client = make(fake("--modern", MODERN_VERSION)).start()
    assert (client.era, client.protocol_version) == ("modern", MODERN_VERSION)
    assert client.server_info == {"name": "fake-modern", "version": "0.0.2"}
    assert "echo" in [t["name"] for t in client.list()]
    # the fake answers -32022 to any request whose _meta lacks its version, so a result here
    # proves the _meta went out with the call
    assert client.call("echo", {"namespace": "prod"}) == ('{"namespace": "prod"}', False)
    assert json.loads(client.call("seen", {})[0]) == []  # no notifications/initialized


def test_a_handshake_server_gets_initialize_after_the_probe(make):
    client = make(fake()).start()
    assert (client.era, client.protocol_version) == ("handshake", PROTOCOL_VERSION)
    seen = json.loads(client.call("seen", {})[0])
    assert [s["method"] for s in seen] == ["notifications/initialized"]


def test_unsupported_version_names_what_the_server_supports(make):
    with pytest.raises(McpError) as caught:
        make(fake("--modern", "2027-03-01")).start()
    text = str(caught.value)
    assert "2027-03-01" in text and MODERN_VERSION in text and "2025-11-25" in text


def test_a_modern_error_naming_handshake_versions_leads_to_initialize_with_one(make):
    client = make([sys.executable, SHIM, "versions", "--", *fake()]).start()
    # the fake behind the shim answers initialize with the version it was offered
    assert (client.era, client.protocol_version) == ("handshake", "2025-06-18")


def test_a_legacy_probe_then_a_modern_only_initialize_names_the_versions(make):
    # the probe fails (the fake knows no server/discover), then the shim refuses initialize
    # the way a server of the stateless revision only does: the operator sees the versions
    with pytest.raises(McpError) as caught:
        make([sys.executable, SHIM, "modern", "--", *fake()]).start()
    assert "-32022" in str(caught.value) and MODERN_VERSION in str(caught.value)


def test_a_server_silent_on_the_probe_is_driven_through_the_handshake_in_bounded_time(make):
    client = make([sys.executable, SHIM, "silent", "--", *fake()], probe_timeout=0.2)
    started = time.monotonic()
    client.start()
    assert client.era == "handshake"
    assert time.monotonic() - started < 5  # the probe waited 0.2 s, not the 10 s start timeout
    assert "shim: silent server/discover" in client.stderr_tail()


def test_errors_keep_their_data(make):
    client = make(fake("--modern", MODERN_VERSION)).start()
    client._meta = lambda: {"io.modelcontextprotocol/protocolVersion": "2099-01-01",
                            "io.modelcontextprotocol/clientCapabilities": {}}
    text, is_error = client.call("echo", {})
    assert is_error and "-32022" in text and '"supported": ["2026-07-28"]' in text
    assert '"requested": "2099-01-01"' in text


def test_an_input_required_result_is_an_error_result_not_a_crash(make):
    client = make(fake("--modern", MODERN_VERSION, "--input-required")).start()
    text, is_error = client.call("echo", {})
    assert is_error and "input_required" in text


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.mark.parametrize("ttl_ms, advance, fetches", [
    (60_000, 30, 1),     # fresh for a minute: one fetch
    (60_000, 61, 2),     # stale after it: fetched again
    (0, 0, 2),           # ttlMs 0: stale at once
])
def test_tools_list_honours_cache_hints(make, ttl_ms, advance, fetches):
    clock = Clock()
    client = make(fake("--modern", MODERN_VERSION, "--ttl-ms", str(ttl_ms)), clock=clock).start()
    assert client.list()[0]["description"] == "echo tool (list #1)"
    clock.now += advance
    # the server numbers each tools/list it serves: a cached list still says #1
    assert client.list()[0]["description"] == f"echo tool (list #{fetches})"


def test_a_handshake_list_is_fetched_once_per_run(make):
    client = make(fake()).start()
    first = client.list()
    first.append({"name": "mutated by the caller"})
    assert client.list() == first[:-1]


def test_a_ping_while_idle_is_answered_before_the_next_call(make):
    client = make(fake()).start()
    assert client.call("ping_later", {}) == ("pinging", False)
    deadline = time.monotonic() + 10
    while "pong received" not in client.stderr_tail() and time.monotonic() < deadline:
        time.sleep(0.01)  # waiting on the event (the server's note), not a fixed delay
    assert "pong received" in client.stderr_tail()


def server_argv(kubeconfig):
    return [sys.executable, "-m", "mcp_kubectl_server", "--allow-namespaces", "prod",
            "--kubeconfig", kubeconfig, "--quiet"]


@pytest.mark.parametrize("mode, era", [(None, "modern"), ("modern", "modern"),
                                       ("handshake", "handshake")])
def test_our_server_over_each_era_with_real_kubectl(shared_sim, make, mode, era):
    argv = server_argv(shared_sim("crashloop").kubeconfig)
    if mode:
        argv = [sys.executable, SHIM, mode, "--", *argv]
    client = make(argv, call_timeout=30, start_timeout=30).start()
    assert client.era == era and client.server_info["name"] == "mcp-kubectl-server"
    assert "get_pods" in [t["name"] for t in client.list()]
    text, is_error = client.call("get_pods", {"namespace": "prod"})
    assert not is_error and "checkout-6f8d9c7b5d-" in text
    text, is_error = client.call("get_pods", {"namespace": "kube-system"})
    assert is_error


@pytest.mark.parametrize("mode, expected", [
    (None, "protocol 2026-07-28 (stateless)"),
    ("modern", "protocol 2026-07-28 (stateless)"),
    ("handshake", "protocol 2025-11-25 (initialize handshake)"),
])
def test_the_triage_cli_end_to_end_over_each_era(shared_sim, mode, expected):
    # the CLI test helpers, one copy; the CLI in this process, its server and the shim as processes
    from tests.agent.cli.test_cli import replay_args, run_cli_here
    sim = shared_sim("crashloop")
    extra = ["--json"]
    if mode:
        server = server_argv(sim.kubeconfig)
        extra += ["--mcp", shlex.join([sys.executable, SHIM, mode, "--", *server])]
    out = run_cli_here(*replay_args(sim, "crashloop", *extra))
    assert out.returncode == 0, out.stderr
    assert "triage-agent: MCP server mcp-kubectl-server" in out.stderr and expected in out.stderr
    outcome = json.loads(out.stdout)
    assert outcome["stop"] == "report" and outcome["tool_calls"] >= 3


def test_a_spawned_server_is_settled_at_first_use(make):
    client = make(fake("--modern", MODERN_VERSION))
    assert client.spawn() is client and client.process is not None and client.era is None
    assert "echo" in [t["name"] for t in client.list()]  # the era is settled on first use
    assert client.era == "modern"
    first = client.process
    assert client.spawn().process is first  # a running server is not spawned twice


def test_a_server_that_cannot_be_spawned_is_an_error_at_spawn_and_at_start(make, tmp_path):
    client = make([str(tmp_path / "no-such-server")])
    with pytest.raises(McpError, match="cannot start MCP server"):
        client.spawn()
    with pytest.raises(McpError, match="cannot start MCP server"):
        client.start()
