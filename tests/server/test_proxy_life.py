"""The kubectl proxy child's life: its private socket directory, its start (at the server's
start, before the first read), its restart after a crash, its errors when it cannot start or
keeps dying, a kept-alive connection it dropped, the environment it is given, and its end with
the server's, however the server ends (the server's process: a signal needs one), by the
parent-death signal unless that is turned off.

Its filters (what it lets through) are tests/server/test_proxy.py's.
"""

import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading

import pytest

from mcp_kubectl_server.read.proxy import Proxy
from mcp_kubectl_server.read.reader import ReadError, Reader
from tests.server.test_proxy import POD, reader  # noqa: F401 (fixture)
from tests.support.api_stub import wait_for
from tests.support.server_support import ServerProcess


def test_the_socket_directory_is_private_and_removed_at_close(reader):
    reader, _ = reader
    directory = os.path.dirname(reader.proxy.socket_path)
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_ISSOCK(os.stat(reader.proxy.socket_path).st_mode)
    pid = reader.proxy.proc.pid
    reader.close()
    assert not os.path.exists(directory)
    assert not _alive(pid)


def test_a_proxy_killed_between_two_calls_is_started_again(reader):
    reader, _ = reader
    first = reader.proxy.proc.pid
    os.killpg(first, signal.SIGKILL)
    reader.proxy.proc.wait()
    assert reader.get_json(f"/api/v1/namespaces/prod/pods/{POD}")["metadata"]["name"] == POD
    assert reader.proxy.starts == 2 and reader.proxy.proc.pid != first


def _fake_kubectl(tmp_path, body):
    script = tmp_path / "kubectl"
    script.write_text(f"#!{sys.executable}\nimport os, socket, sys\n"
                      "path = next(a.split('=', 1)[1] for a in sys.argv if a.startswith('--unix-socket='))\n"
                      + body)
    script.chmod(0o755)
    return str(script)


def test_a_proxy_that_keeps_dying_is_an_error_with_its_stderr(tmp_path):
    # Starts, listens, and dies at the first request it gets, every time it is started.
    kubectl = _fake_kubectl(tmp_path, (
        "s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(1)\n"
        "print('Starting to serve on', path, flush=True)\n"
        "s.accept()\nsys.stderr.write('panic: runtime error: the proxy broke\\n'); sys.exit(2)\n"))
    reader = Reader(kubectl, namespaces=("prod",), timeout=10)
    try:
        with pytest.raises(ReadError) as caught:
            reader.get_json("/version")
        assert reader.proxy.starts == 2
        assert str(caught.value) == ("the kubectl proxy exited (code 2) and exited again after one restart:"
                                     " panic: runtime error: the proxy broke; the operator should check"
                                     " kubectl and the cluster connection")
    finally:
        reader.close()


def test_a_proxy_that_cannot_start_says_why(kube_sim, tmp_path):
    sim = kube_sim("healthy")
    reader = Reader(kubeconfig=sim.kubeconfig, context="no-such-context", namespaces=("prod",))
    with pytest.raises(ReadError, match=r'exited at start \(code 1\): error: context "no-such-context" '
                                        r"does not exist; the operator should check --kubectl"):
        reader.get_json("/version")
    reader.close()
    missing = Reader(str(tmp_path / "nope"), namespaces=("prod",))
    with pytest.raises(ReadError, match="kubectl is not installed or not found at"):
        missing.get_json("/version")
    missing.close()


def _proxies(marker):
    """pids of running kubectl proxies whose command line mentions `marker`."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid=,stat=,args="], capture_output=True, text=True,
                         timeout=10).stdout
    return [int(line.split()[0]) for line in out.splitlines()
            if marker in line and " proxy " in line and not line.split()[1].startswith("Z")]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as status:  # a zombie (dead, not yet reaped) counts as gone
        return status.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("how, code", [("eof", 0), ("sigterm", 143), ("sighup", 129), ("sigint", 130),
                                       ("sigkill", -9)])
def test_no_proxy_outlives_the_server(kube_sim, how, code):
    sim = kube_sim("crashloop")
    server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", sim.kubeconfig, "--quiet",
                           process=True)
    server.initialize()
    assert not server.call("get_pods", {"namespace": "prod"})[1]
    [pid] = _proxies(sim.kubeconfig)
    if how == "eof":
        assert server.close() == code
    else:
        if how == "sigkill" and not sys.platform.startswith("linux"):
            pytest.skip("the parent-death signal is Linux only")
        server.proc.send_signal(getattr(signal, how.upper()))
        assert server.proc.wait(timeout=10) == code
    assert wait_for(lambda: not _alive(pid)), f"kubectl proxy {pid} outlived the server ({how})"
    assert _proxies(sim.kubeconfig) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux only")
def test_the_parent_death_signal_is_on_unless_turned_off(shared_sim):
    """Linux sends it when the thread that launched the child ends: a proxy launched from a
    thread that has ended is killed with it, unless kill_with_parent was turned off."""
    sim = shared_sim("crashloop")
    proxies = [Proxy(kubeconfig=sim.kubeconfig, namespaces=["prod"]) for _ in range(2)]
    proxies[1].kill_with_parent = False
    try:
        for proxy in proxies:
            launcher = threading.Thread(target=proxy.prepare)
            launcher.start()
            launcher.join()
        assert proxies[0].proc.wait(timeout=10) == -signal.SIGKILL
        # serving, and the child it launched: a killed one never prints its line (ensure() would
        # then launch another, or fail)
        assert proxies[1].ensure() and proxies[1].starts == 1 and proxies[1].alive()
    finally:
        for proxy in proxies:
            proxy.stop()


def test_prepare_launches_without_waiting_and_the_first_read_waits(kube_sim, tmp_path):
    sim = kube_sim("crashloop")
    reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",))
    try:
        reader.prepare()
        assert reader.proxy.proc is not None and reader.proxy.starts == 1
        assert reader.get_json(f"/api/v1/namespaces/prod/pods/{POD}")["metadata"]["name"] == POD
        reader.prepare()  # a running proxy is left alone
        assert reader.proxy.starts == 1
    finally:
        reader.close()
    missing = Reader(str(tmp_path / "nope"), namespaces=("prod",))
    missing.prepare()  # nothing to say yet: the first read says it
    with pytest.raises(ReadError, match="kubectl is not installed or not found at"):
        missing.get_json("/version")
    missing.close()


def test_the_server_launches_its_proxy_when_it_starts_serving(kube_sim):
    sim = kube_sim("crashloop")
    server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", sim.kubeconfig, "--quiet")
    try:  # before any request: its start overlaps the server's own and the client's handshake
        assert wait_for(lambda: len(_proxies(sim.kubeconfig)) == 1)
        server.initialize()
        assert not server.call("get_pods", {"namespace": "prod"})[1]
        assert len(_proxies(sim.kubeconfig)) == 1
    finally:
        server.close()


def test_no_writable_temp_dir_is_a_clear_error(kube_sim, tmp_path, monkeypatch):
    sim = kube_sim("healthy")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    reader = Reader(kubeconfig=sim.kubeconfig, namespaces=("prod",))
    with pytest.raises(ReadError, match="cannot make a private directory for the proxy's socket in"):
        reader.get_json("/version")
    reader.close()


def test_a_kept_alive_connection_the_proxy_dropped_is_reopened_without_a_restart(tmp_path):
    # A proxy that answers one request per connection, then closes it without saying so.
    kubectl = _fake_kubectl(tmp_path, (
        "s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(4)\n"
        "print('Starting to serve on', path, flush=True)\n"
        "while True:\n"
        "    c, _ = s.accept()\n"
        "    c.recv(65536)\n"
        "    c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\n'\n"
        "              b'Content-Length: 15\\r\\n\\r\\n{\"kind\": \"Pod\"}')\n"
        "    c.close()\n"))
    reader = Reader(kubectl, namespaces=("prod",), timeout=10)
    try:
        for _ in range(3):
            assert reader.get_json(f"/api/v1/namespaces/prod/pods/{POD}") == {"kind": "Pod"}
        assert reader.proxy.starts == 1 and reader.proxy.alive()
    finally:
        reader.close()


def test_the_proxy_gets_the_environment_it_is_given(shared_sim, tmp_path):
    # kubectl finds the cluster through KUBECONFIG in the environment given, not this process's
    kubeconfig = shared_sim("crashloop").kubeconfig
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "KUBECONFIG": kubeconfig}
    for given, works in ((env, True), (dict(env, KUBECONFIG=str(tmp_path / "none")), False)):
        reader = Reader(namespaces=("prod",), env=given, timeout=10)
        try:
            if works:
                assert reader.get_json(f"/api/v1/namespaces/prod/pods/{POD}")["metadata"]["name"] == POD
            else:
                with pytest.raises(ReadError):
                    reader.get_json(f"/api/v1/namespaces/prod/pods/{POD}")
        finally:
            reader.close()
