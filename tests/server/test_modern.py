"""The server's side of MCP revision 2026-07-28 (stateless), next to the handshake revisions on
the same stdio stream, and the JSON-RPC edges of both: raw JSON-RPC to the real server, in a
thread over stdio pipes (tests/support/server_thread.py).
None of these requests reaches kubectl (discovery, listing, refusals), so none is started."""

import subprocess
import sys

import pytest

from tests.support.server_support import ROOT, ServerProcess

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}}
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


@pytest.fixture(scope="module")
def server():
    proc = ServerProcess("--allow-namespaces", "prod", "--kubectl", "/nonexistent/kubectl")
    yield proc
    assert proc.close() == 0


def test_discover_says_which_versions_and_who(server):
    result = server.request("server/discover", {"_meta": META})["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == [MODERN, "2025-11-25", "2025-06-18", "2025-03-26",
                                           "2024-11-05"]
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["_meta"][SERVER_INFO]["name"] == "mcp-kubectl-server"
    assert result["ttlMs"] > 0 and result["cacheScope"] == "public"
    assert "Nothing here can change the cluster" in result["instructions"]


def test_stateless_tools_list_and_call_without_any_handshake(server):
    listed = server.request("tools/list", {"_meta": META})["result"]
    assert listed["resultType"] == "complete" and listed["cacheScope"] == "public"
    assert listed["ttlMs"] > 0 and listed["_meta"][SERVER_INFO]["name"] == "mcp-kubectl-server"
    assert "get_pods" in [tool["name"] for tool in listed["tools"]]
    called = server.request("tools/call", {"name": "get_pods", "arguments": {
        "namespace": "kube-system"}, "_meta": META})["result"]
    assert called["resultType"] == "complete" and called["isError"] is True
    assert "kube-system" in called["content"][0]["text"]


def test_both_eras_on_one_stream(server):
    assert server.initialize()["result"]["protocolVersion"] == "2025-11-25"
    legacy = server.request("tools/list", {})["result"]
    assert "resultType" not in legacy and "ttlMs" not in legacy
    modern = server.request("tools/list", {"_meta": META})["result"]
    assert modern["resultType"] == "complete"
    assert modern["tools"] == legacy["tools"]


@pytest.mark.parametrize("version", ["2099-01-01", "2025-11-25", ""])
def test_a_version_it_does_not_serve_statelessly_is_minus_32022_with_the_list(server, version):
    meta = dict(META, **{"io.modelcontextprotocol/protocolVersion": version})
    error = server.request("tools/list", {"_meta": meta})["error"]
    assert error["code"] == -32022
    assert error["data"] == {"supported": [MODERN, "2025-11-25", "2025-06-18", "2025-03-26",
                                           "2024-11-05"], "requested": version}


@pytest.mark.parametrize("meta", [
    {"io.modelcontextprotocol/protocolVersion": MODERN},                      # no capabilities
    dict(META, **{"io.modelcontextprotocol/clientCapabilities": []}),
    {"io.modelcontextprotocol/clientCapabilities": {}},                       # discover, no version
    dict(META, **{"io.modelcontextprotocol/protocolVersion": 20260728}),
])
def test_malformed_meta_is_invalid_params(server, meta):
    assert server.request("server/discover", {"_meta": meta})["error"]["code"] == -32602


@pytest.mark.parametrize("params", [[], 0, False, None, "x", [1]])
def test_params_that_are_not_an_object_are_invalid_params_with_the_id(server, params):
    server.send({"jsonrpc": "2.0", "id": "p-1", "method": "tools/list", "params": params})
    reply = server.recv()
    assert reply["id"] == "p-1" and reply["error"]["code"] == -32602


@pytest.mark.parametrize("message", [
    {"id": 7, "method": "ping"},                       # no jsonrpc member
    {"jsonrpc": "1.0", "id": 7, "method": "ping"},
    {"jsonrpc": "2.0", "id": 7},                       # neither method nor result
])
def test_invalid_requests_echo_a_readable_id(server, message):
    server.send(message)
    reply = server.recv()
    assert reply["id"] == 7 and reply["error"]["code"] == -32600


def test_check_says_which_revisions_it_serves():
    done = subprocess.run([sys.executable, "-m", "mcp_kubectl_server", "--allow-namespaces",
                           "prod", "--kubectl", "/nonexistent/kubectl", "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert f"{MODERN} (stateless" in done.stderr and "2024-11-05 (initialize handshake)" in done.stderr
