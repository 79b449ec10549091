"""get_pods on an empty namespace says whether the namespace exists, and `--check` prints why it
failed: the server in a thread over stdio pipes (tests/support/server_thread.py), real kubectl,
the module's shared_sim simulators (every test here only reads; a closed port for an unreachable
one). One `--check` runs as a process; the others call the server's main() in this process.
"""

import contextlib
import io
import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_kubectl_server.__main__ import main as server_main
from mcp_kubectl_server.tools.pods import NAMESPACE_UNVERIFIED
from tests.support.server_support import ServerProcess

ROOT = Path(__file__).resolve().parents[2]


def forbidden_namespaces_cluster(tmp_path):
    """The crashloop cluster whose credentials may list pods but not read Namespace objects."""
    path = tmp_path / "ns-forbidden.json"
    path.write_text(json.dumps({"kind": "SimulatedCluster", "name": "ns-forbidden",
                                "base": "crashloop", "objects": [],
                                "forbidden": [{"resource": "namespaces"}]}))
    return path


@pytest.fixture(scope="module")
def forbidden_cluster(tmp_path_factory):
    """forbidden_namespaces_cluster's file, one for the module: its shared_sim is one too."""
    return forbidden_namespaces_cluster(tmp_path_factory.mktemp("clusters"))


def kubeconfig_for(tmp_path, port):
    """A kubeconfig for a plain-HTTP API server on a local port."""
    path = tmp_path / f"port-{port}.kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "local",
        "clusters": [{"name": "local", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "u"}}],
        "users": [{"name": "u", "user": {}}]}))
    return path


def closed_port_kubeconfig(tmp_path):
    """A kubeconfig naming a local port nothing listens on (bound, never listened, closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return kubeconfig_for(tmp_path, port), port


def check(*args):
    return subprocess.run([sys.executable, "-m", "mcp_kubectl_server", "--check", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)


def check_here(*args):
    """`--check` in this process (the real kubectl proxy still starts): what check() returns,
    without starting an interpreter. main() returns after a check, leaving the caller's stdout
    as it was (serving, it points sys.stdout at stderr); the SIGTERM and SIGHUP handlers it sets
    are put back."""
    argv = ["--check", *args]
    kept = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}
    stderr, stdout = io.StringIO(), sys.stdout
    try:
        with contextlib.redirect_stderr(stderr):
            code = server_main(argv)
        assert sys.stdout is stdout, "main() --check changed the caller's sys.stdout"
    finally:
        sys.stdout = stdout
        for signum, handler in kept.items():
            signal.signal(signum, handler)
    return subprocess.CompletedProcess(argv, code, "", stderr.getvalue())


def test_get_pods_on_a_namespace_that_does_not_exist_is_an_error(shared_sim):
    sim = shared_sim("crashloop")
    server = ServerProcess("--allow-namespaces", "prod,prdo", "--kubeconfig", sim.kubeconfig,
                           "--quiet")
    try:
        server.initialize()
        text, is_error = server.call("get_pods", {"namespace": "prdo"})
        assert is_error and text.startswith("namespace prdo does not exist in this cluster")
        text, is_error = server.call("get_pods", {"namespace": "prod"})
        assert not is_error and text.startswith("pods in namespace prod:")
    finally:
        server.close()


def test_get_pods_says_when_the_namespace_could_not_be_checked(shared_sim, forbidden_cluster):
    sim = shared_sim(forbidden_cluster)
    server = ServerProcess("--allow-namespaces", "prod,prdo", "--kubeconfig", sim.kubeconfig,
                           "--quiet")
    try:
        server.initialize()
        text, is_error = server.call("get_pods", {"namespace": "prdo"})
        assert not is_error and text.startswith("no pods in namespace prdo\n(")
        assert f"{NAMESPACE_UNVERIFIED} prdo exists" in text and "Forbidden" in text
        text, _ = server.call("get_pods", {"namespace": "prod"})   # pods: no Namespace lookup
        assert NAMESPACE_UNVERIFIED not in text
    finally:
        server.close()


def test_check_passes_and_says_what_it_saw(shared_sim):
    out = check("--allow-namespaces", "prod", "--kubeconfig", shared_sim("crashloop").kubeconfig)
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith("MCP over stdio: ") and '"gitVersion": "v1.32.4"' in out.stderr
    assert out.stderr.splitlines()[-1].startswith("namespace prod: pods in namespace prod: 5 total")


def test_check_names_the_unreachable_cluster(tmp_path):
    kubeconfig, port = closed_port_kubeconfig(tmp_path)
    out = check_here("--allow-namespaces", "prod", "--kubeconfig", str(kubeconfig), "--timeout", "5")
    assert out.returncode == 1
    assert out.stderr.splitlines()[-1].startswith(
        f"cannot reach the Kubernetes API server (dial tcp 127.0.0.1:{port}: connect: "
        "connection refused)")


@pytest.mark.parametrize("args,reason", [
    (["--kubeconfig", "/nonexistent/kubeconfig"], "no such file or directory"),
    (["--context", "nope"], 'error: context "nope" does not exist'),
    (["--kubectl", "/nonexistent/kubectl"], "kubectl is not installed or not found"),
])
def test_check_prints_the_reason_it_failed(shared_sim, args, reason):
    sim = shared_sim("crashloop")
    base = [] if "--kubeconfig" in args else ["--kubeconfig", sim.kubeconfig]
    out = check_here("--allow-namespaces", "prod", *base, *args)
    [protocol, *rest] = out.stderr.strip().splitlines()
    assert out.returncode == 1 and protocol.startswith("MCP over stdio: ")
    assert len(rest) == 1 and reason in rest[0]


def test_check_fails_on_a_mistyped_namespace_and_names_it(shared_sim):
    out = check_here("--allow-namespaces", "prod,prdo", "--kubeconfig",
                shared_sim("crashloop").kubeconfig)
    assert out.returncode == 1
    assert out.stderr.splitlines()[-2:] == [
        "namespace prod: pods in namespace prod: 5 total, 2 not healthy (listed first)",
        'namespace prdo: check failed: namespace prdo does not exist in this cluster (404: '
        'namespaces "prdo" not found); check its name']


def test_check_passes_an_unverifiable_empty_namespace_and_says_so(shared_sim, forbidden_cluster):
    sim = shared_sim(forbidden_cluster)
    out = check_here("--allow-namespaces", "prod,prdo", "--kubeconfig", sim.kubeconfig)
    assert out.returncode == 0, out.stderr
    [line] = [ln for ln in out.stderr.splitlines() if ln.startswith("namespace prdo:")]
    assert line.startswith(f"namespace prdo: no pods in namespace prdo ({NAMESPACE_UNVERIFIED} "
                           "prdo exists: the cluster refused this read (403 Forbidden)")
