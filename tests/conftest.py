"""Shared pytest fixtures: `kube_sim`, a factory that starts the Kubernetes API simulator.

    def test_x(kube_sim):
        sim = kube_sim("crashloop")          # or a path to a cluster file
        run(["kubectl", "--kubeconfig", sim.kubeconfig, "get", "pods", "-A"])

Every simulator started through the factory is stopped at teardown. The kubeconfig context is
`kube-sim`; sim.journal_entries() lists the writes kubectl made. Tests that only read take
`shared_sim(cluster)` instead: one simulator per cluster for the whole pytest process (each xdist
worker has its own), so its start and kubectl's discovery of it are paid once, and so is the
kubectl proxy of the servers in a thread that read it (one server's proxy is kept for the next:
tests/support/server_thread.py, KEPT); a test that wrote to one fails the next that asks for it,
which gets a fresh one.

kubectl keeps a discovery cache per API server address (every simulator port is a new one); the
whole session points it at a temp dir through KUBECACHEDIR, which every child process inherits,
so a test run leaves nothing under ~/.kube/cache. The session also starts every Go program
(kubectl, Prometheus, promtool) with GOGC=off, GOMEMLIMIT=256MiB and GOMAXPROCS=1 unless the
environment sets them: a kubectl call lives a tenth of a second and its first garbage
collections were about a third of its CPU (the limit still collects a long-lived one, a server's
kubectl proxy), and one thread for its goroutines took 0.050 s of CPU for a `kubectl get pods`
against 0.058 s with one per core (medians of 11 on a 2-core machine). The MCP client passes
these to the server, and the server to its kubectl proxy.

`serve` starts an MCP server per call; `shared_serve` (same arguments) starts one per (cluster,
flags, namespaces) per test module, over the shared_sim simulators, and hands every test that asks
for the same a live one, for the tests that only read. Such a test sees the simulator through a
SimView (its own requests only); after each test the server must still answer a ping with nothing
else pending (a test that breaks it fails, and the next one gets a fresh server), and at the
module's end each shared server must exit 0 at end of input. A test that writes, ends or signals
the server, reads its stderr, or counts something the server keeps between calls gets a server of
its own (`serve`).

`prometheus_servers` (tests/support/prometheus.py) starts real Prometheus servers over series a
test describes, one per name per session.

The per-test time limit (a test over a few seconds is listed at the end unless marked slow; with
TRIAGE_TEST_MAX_SECONDS it fails) is the plugin in tests/support/time_limit.py, whose hooks are
imported here; it also runs the tests marked slow first. So is tests/support/random_order.py's: the
tests run in a random order (pytest-randomly), and a run that failed names its seed at the end.

Every pytest process (the xdist workers too) runs Python's cyclic garbage collector less often
than the default (thresholds 50,000/50/50, not 700/10/10): the tests that work in-process build
large object graphs (the large cluster's 2,000 pods, their schema shapes), and collections that
scan the whole heap of a test process were over half of such a test's CPU. Objects are still
freed by reference counting at once; only reference cycles wait longer. And at its end each
collects garbage once to surface the exceptions raised in finalizers, where pytest collects five
times (its unraisableexception plugin): over a worker's heap at the end of the suite each
collection took about 0.3 s, 4.8 s of CPU over three workers in all (sampled with py-spy).
Once the tests are collected, everything made so far (modules, test items, their parameters) is
frozen out of the collector's view (gc.freeze): it lives until the process ends, so no collection
needs to scan it, the last one included (0.17 to 0.31 s a worker before, 0.13 to 0.27 s after);
what the tests make is collected as before.

A suite started in the background by a non-interactive shell (`make test &` in a script)
inherits SIGINT ignored, and so would every process it starts: the CLI and the server keep an
ignored signal ignored (as under nohup), and the tests that send ^C would wait for nothing.
pytest_configure gives SIGINT back its default handling in every pytest process (the xdist
workers too), so the children start with it.
"""

import contextlib
import gc
import os
import signal
import subprocess

import pytest
from _pytest.unraisableexception import gc_collect_iterations_key

from fixtures.kube_sim.sim import start_sim
from tests.support.prometheus import prometheus_servers  # noqa: F401 (session fixture)
from tests.support.server_support import ServerProcess, SimView
from tests.support import server_thread, time_limit
from tests.support.random_order import pytest_terminal_summary  # noqa: F401 (hook)
from tests.support.time_limit import (  # noqa: F401 (hooks)
    pytest_collection_modifyitems, pytest_runtest_makereport)

# pytest's own plugin for running pytest inside a test (tests/project: the suite's plugins)
pytest_plugins = ("pytester",)

GC_THRESHOLDS = (50_000, 50, 50)
GC_AT_END = 1  # collections at the end of a pytest process (see the module docstring)


def pytest_collection_finish(session):
    gc.collect()   # what collection left as garbage is freed, not frozen
    gc.freeze()    # see the module docstring


def pytest_configure(config):
    time_limit.pytest_configure(config)
    gc.set_threshold(*GC_THRESHOLDS)  # see the module docstring
    config.stash[gc_collect_iterations_key] = GC_AT_END
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # see the module docstring
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(optionalhook=True)   # a hook of pytest-xdist's, which a run may leave out
def pytest_xdist_auto_num_workers(config):
    """`-n auto` (make test's TEST_WORKERS): two workers more than the cores this process may run
    on, so a worker waiting on a child it started leaves its core to a spare one; a count in
    PYTEST_XDIST_AUTO_NUM_WORKERS is left to pytest-xdist, which reads it."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 2


@pytest.fixture(scope="session", autouse=True)
def kubectl_cache_in_temp_dir(tmp_path_factory):
    """KUBECACHEDIR -> a session temp dir for every kubectl the tests start, directly or not."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KUBECACHEDIR", str(tmp_path_factory.mktemp("kubectl-cache")))
        yield


@pytest.fixture(scope="session", autouse=True)
def go_programs_collect_late():
    """GOGC=off, GOMEMLIMIT=256MiB, GOMAXPROCS=1 for the Go programs the tests start (see the
    module docstring)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in (("GOGC", "off"), ("GOMEMLIMIT", "256MiB"), ("GOMAXPROCS", "1")):
            if name not in os.environ:
                patch.setenv(name, value)
        yield


@pytest.fixture
def kube_sim():
    """Factory: kube_sim(cluster, **start_sim_options) -> running simulator."""
    with contextlib.ExitStack() as stack:
        def start(cluster, **options):
            return stack.enter_context(start_sim(cluster, **options))
        yield start


@pytest.fixture(scope="session")
def shared_sim():
    """Factory for read-only tests: shared_sim(cluster) -> this pytest process's simulator of
    `cluster`. One that a test wrote to fails the next test that asks, and is replaced."""
    with contextlib.ExitStack() as stack:
        started = {}   # cluster -> (simulator, what stops it and its kept proxies)

        def get(cluster):
            if cluster in started and started[cluster][0].journal_entries():
                started.pop(cluster)[1].close()
                raise AssertionError(f"a test wrote to the shared {cluster} simulator: writers "
                                     f"take kube_sim({cluster!r})")
            if cluster not in started:
                one = stack.enter_context(contextlib.ExitStack())
                sim = one.enter_context(start_sim(cluster))
                one.enter_context(server_thread.KEPT.keeping(sim.kubeconfig))
                started[cluster] = sim, one
            return started[cluster][0]
        yield get


@pytest.fixture
def serve(kube_sim):
    """Factory: serve(cluster, *server_flags, namespaces="prod") -> (server, sim): our MCP server
    (tests/test_server_support.ServerProcess, initialized) reading a fresh simulator through real
    kubectl; every server still running is closed at teardown."""
    started = []

    def start(cluster, *flags, namespaces="prod"):
        sim = kube_sim(cluster)
        server = _start_server(sim, flags, namespaces)
        started.append(server)
        return server, sim

    yield start
    for server in started:
        if server.proc.poll() is None:
            server.close()


def _start_server(sim, flags, namespaces):
    server = ServerProcess("--allow-namespaces", namespaces, "--kubeconfig", sim.kubeconfig,
                           "--timeout", "30", "--quiet", *flags)
    server.initialize()
    return server


@pytest.fixture(scope="module")
def _shared_servers(shared_sim):
    """{(cluster, flags, namespaces): server} of one test module, over the shared_sim simulators;
    at its end every server still cached must exit 0 at end of input."""
    running = {}
    yield shared_sim, running
    codes = {key: _exit_code(server) for key, server in running.items()}
    assert all(code == 0 for code in codes.values()), f"shared servers' exit codes: {codes}"


def _exit_code(server):
    try:
        return server.close()
    except subprocess.TimeoutExpired:  # killed: still close the others
        return "no exit within 10 s of end of input"


@pytest.fixture
def shared_serve(_shared_servers):
    """Factory: shared_serve(cluster, *server_flags, namespaces="prod") -> (server, SimView): like
    `serve`, but the server is the module's one for these arguments, over a shared_sim."""
    sim_of, running = _shared_servers
    used = {}

    def start(cluster, *flags, namespaces="prod"):
        key, sim = (str(cluster), flags, namespaces), sim_of(cluster)
        if key not in running:
            running[key] = _start_server(sim, flags, namespaces)
        server = used[key] = running[key]
        return server, SimView(sim)

    yield start
    broken = [key for key, server in used.items() if not server.settled()]
    for key in broken:  # the next test that asks gets a fresh one
        server = running.pop(key)
        if server.proc.poll() is None:
            server.close()
    assert not broken, f"the test left these shared servers dead or with a reply pending: {broken}"
