"""tests/support/server_thread.py stands in for the server's process only where it can (this
project's server, serving, in the test's working directory), what it serves is what the process
serves, byte for byte, and a test that needs the process is told so instead of passing."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_kubectl_server.__main__ import parse_args
from tests.support.api_stub import ApiStub, Rule, wait_for
from tests.support.sim_reader import reads_here
from tests.support.server_thread import (KEPT, NoProcess, ServerInThread, popen,
                                         servers_in_threads)
from triage_agent.mcp.client import McpStdioClient
from triage_agent.mcp.wire import StdioPeer

ROOT = Path(__file__).resolve().parents[2]
FAKE = str(ROOT / "tests" / "support" / "fake_mcp_server.py")
PIPES = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}


def _argv(kubeconfig, *flags):
    return [sys.executable, "-m", "mcp_kubectl_server", "--allow-namespaces", "prod",
            "--kubeconfig", kubeconfig, "--quiet", *flags]


def _finish(proc, data=b""):
    """Write `data`, close stdin, read both streams to their end: (exit code, stdout, stderr)."""
    if not proc.stdin.closed:
        proc.stdin.write(data)
        proc.stdin.close()
    out, err = proc.stdout.read(), proc.stderr.read()
    code = proc.wait(30)
    proc.stdout.close()
    proc.stderr.close()
    return code, out, err


def test_only_the_project_server_that_would_serve_here_runs_in_a_thread(shared_sim, tmp_path):
    kubeconfig = shared_sim("healthy").kubeconfig
    threaded = popen(_argv(kubeconfig), **PIPES)
    assert isinstance(threaded, ServerInThread)
    assert _finish(threaded) == (0, b"", b"")
    real = {
        "--check": (_argv(kubeconfig, "--check"), {}, 0, b"namespace prod:"),
        "a bad option": (_argv(kubeconfig, "--timeout", "0"), {}, 2, b"--timeout: must be"),
        "--help": (_argv(kubeconfig, "--help"), {}, 0, b""),
        "another server": ([sys.executable, FAKE], {}, 0, b""),
        "another directory": (_argv(kubeconfig), {"cwd": str(tmp_path)}, 1,
                              b"No module named mcp_kubectl_server"),
    }
    for what, (argv, options, code, said) in real.items():
        proc = popen(argv, **PIPES, **options)
        assert type(proc) is subprocess.Popen, what
        got_code, _, err = _finish(proc)
        assert got_code == code and said in err, (what, got_code, err[-300:])


MESSAGES = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_logs", "arguments": {
        "namespace": "prod", "name": "checkout-6f8d9c7b5d-x7k2p", "previous": True}}},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "describe_pod", "arguments": {
        "namespace": "prod", "name": "no-such-pod"}}},
    {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "get_pods", "arguments": {
        "namespace": "kube-system"}}},
    {"jsonrpc": "2.0", "id": "m", "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}},
]


def test_a_server_in_a_thread_answers_as_its_process_does_byte_for_byte(shared_sim):
    kubeconfig = shared_sim("crashloop").kubeconfig
    data = b"".join(json.dumps(m).encode() + b"\n" for m in MESSAGES) + b"not json\n"
    answers = {start.__name__: _finish(start(_argv(kubeconfig), **PIPES), data)
               for start in (subprocess.Popen, popen)}
    assert answers["Popen"] == answers["popen"]
    code, out, err = answers["popen"]
    replies = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and err == b"" and [r.get("id") for r in replies] == [1, 2, 3, 4, 5, "m", None]
    logs, missing, refused = (r["result"] for r in replies[2:5])
    assert not logs["isError"] and "FATAL: required environment variable PAYMENT_API_URL is not set" \
        in logs["content"][0]["text"]
    assert missing["isError"] and refused["isError"]
    assert replies[-1]["error"]["code"] == -32700


@pytest.mark.parametrize("traced", [False, True], ids=["plain", "traced"])
def test_a_test_that_needs_the_process_is_told_so(traced):
    """`traced`: the stop works under a trace function too (coverage, a debugger), where CPython
    3.11 would stall the test's thread until the server's read timed out, 10 s here."""
    with ApiStub([Rule("/", hang=True)]) as stub:
        proc = popen(_argv(stub.kubeconfig, "--timeout", "10"), **PIPES)
        with pytest.raises(NoProcess, match="start its process"):
            proc.send_signal(15)
        with pytest.raises(NoProcess, match="runs in a thread"):
            proc.pid
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "get_pods", "arguments": {"namespace": "prod"}}}
        proc.stdin.write(json.dumps(call).encode() + b"\n")
        proc.stdin.flush()
        assert wait_for(stub.reads, timeout=30)  # the read hangs in the cluster now
        saved = sys.gettrace()
        if traced:
            sys.settrace(lambda *event: None)
        try:
            proc.terminate()  # ends the read, not the wait of ten seconds for it
            assert proc.wait(30) == 143
        finally:
            sys.settrace(saved)
        assert _finish(proc) == (143, b"", b"")  # as the process's, the call gets no reply


class _Broken:
    prometheus = None

    def prepare(self):
        raise RuntimeError("the reader broke")

    def close(self):
        self.closed = True


def test_an_exception_in_the_thread_ends_it_as_it_would_end_the_process():
    argv = _argv("/nonexistent")
    reader = _Broken()
    proc = ServerInThread(argv, parse_args(argv[3:]), reader)
    code, out, err = _finish(proc)
    assert (code, out) == (1, b"") and reader.closed
    assert b"Traceback" in err and b"RuntimeError: the reader broke" in err


def test_the_mcp_client_starts_servers_in_threads_only_within(shared_sim):
    kubeconfig = shared_sim("healthy").kubeconfig
    with servers_in_threads():
        with McpStdioClient(_argv(kubeconfig), cwd=str(ROOT)) as client:
            assert isinstance(client._peer.proc, ServerInThread)
            assert [t["name"] for t in client.list()][:1] == ["get_pods"]
        with pytest.raises(RuntimeError), servers_in_threads():
            raise RuntimeError("a failing test inside")
        assert StdioPeer.popen is popen
    assert StdioPeer.popen is subprocess.Popen
    with McpStdioClient(_argv(kubeconfig), cwd=str(ROOT)) as client:
        assert type(client._peer.proc) is subprocess.Popen


PODS = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "get_pods", "arguments": {"namespace": "prod"}}}


def _pods_through(argv, env):
    """A server in a thread lists prod's pods once and ends: (its proxy, what it answered)."""
    proc = popen(argv, env=env, **PIPES)
    proxy = proc._reader.proxy
    code, out, err = _finish(proc, json.dumps(PODS).encode() + b"\n")
    assert (code, err) == (0, b""), err
    return proxy, json.loads(out)["result"]


def test_a_kept_proxy_serves_the_next_same_server_and_stops_when_its_simulator_ends(kube_sim):
    sim = kube_sim("crashloop")
    env = dict(os.environ, PYTEST_CURRENT_TEST="first")
    with KEPT.keeping(sim.kubeconfig):
        first, answer = _pods_through(_argv(sim.kubeconfig), env)
        assert first.alive() and KEPT.idle(sim.kubeconfig) == 1 and not answer["isError"]
        pid = first.proc.pid
        first._stderr.append("a line the first server's proxy wrote")
        first.stop()   # as a second close() would: kept once, its lines forgotten
        assert first.stderr_tail() == "" and KEPT.idle(sim.kubeconfig) == 1
        again, same = _pods_through(_argv(sim.kubeconfig), dict(env, PYTEST_CURRENT_TEST="second"))
        assert again is first and first.proc.pid == pid and same == answer
        wider, _ = _pods_through([*_argv(sim.kubeconfig), "--no-cluster-tools"], env)
        other_env, _ = _pods_through(_argv(sim.kubeconfig), dict(env, LANG="C.UTF-8-other"))
        assert len({id(first), id(wider), id(other_env)}) == 3   # other filters, other environment
        assert KEPT.idle(sim.kubeconfig) == 3
        first.proc.kill()
        first.proc.wait()
        fresh, answer_again = _pods_through(_argv(sim.kubeconfig), env)
        assert fresh is not first and answer_again == answer   # a dead one is not handed out,
        assert first.proc is None and KEPT.idle(sim.kubeconfig) == 3   # but reaped
    assert KEPT.idle(sim.kubeconfig) == 0
    assert all(proxy.proc is None for proxy in (fresh, wider, other_env))   # stopped, reaped


def test_only_the_proxies_of_kept_simulators_with_a_given_environment_are_kept(kube_sim):
    sim = kube_sim("crashloop")
    unkept, _ = _pods_through(_argv(sim.kubeconfig), dict(os.environ))
    assert unkept.proc is None and KEPT.idle(sim.kubeconfig) == 0   # stopped with its server
    with KEPT.keeping(sim.kubeconfig):
        inherited, _ = _pods_through(_argv(sim.kubeconfig), None)   # os.environ at launch: not kept
        assert inherited.proc is None and KEPT.idle(sim.kubeconfig) == 0


def test_a_simulator_in_reads_here_is_read_through_its_handler_with_no_proxy(kube_sim):
    sim = kube_sim("crashloop")
    env = dict(os.environ)
    real, answer = _pods_through(_argv(sim.kubeconfig), env)
    assert real.proc is None and real.stderr_tail() is not None   # a kubectl proxy that was stopped
    seen = len(sim.requests)
    with reads_here(sim):
        here, same = _pods_through(_argv(sim.kubeconfig), env)
        assert not hasattr(here, "proc") and same == answer   # no proxy, the same answer
        assert [r["path"].split("?")[0] for r in list(sim.requests)[seen:]] == [
            "/api/v1/namespaces/prod/pods"]
    after, _ = _pods_through(_argv(sim.kubeconfig), env)
    assert hasattr(after, "proc")   # outside reads_here() again: a kubectl proxy
