"""tests/conftest.py gives SIGINT back to the processes the tests start, even when the suite
itself was started with SIGINT ignored (in the background of a non-interactive shell): the
^C tests of the CLI and the server depend on it. It makes the garbage collector of every
pytest process run less often, and collect once at the end, which still reports what a
finalizer raised. And its shared_sim, the simulators read-only
tests share, refuses to hand out one that a test wrote to, and replaces it; a SimView of one
shows a test its own requests, or says the bounded log has dropped some. `-n auto` (make test)
is two xdist workers more than the cores."""

import collections
import gc
import os
import signal
import subprocess
import sys
import types
import urllib.request

import pytest
from _pytest.unraisableexception import gc_collect_iterations_key

from tests.conftest import GC_AT_END, GC_THRESHOLDS
from tests.support.server_support import SimView

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_child_of_the_suite_starts_with_sigint_handled():
    probe = subprocess.run([sys.executable, "-c", "import signal; print(signal.getsignal("
                            "signal.SIGINT) is signal.default_int_handler)"],
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "True", probe.stderr


def test_a_suite_started_with_sigint_ignored_gives_it_back():
    def ignore_sigint():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           f"{__file__}::test_a_child_of_the_suite_starts_with_sigint_handled"],
                          cwd=ROOT, env=env, preexec_fn=ignore_sigint, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_auto_is_two_workers_more_than_the_cores_unless_the_environment_names_a_count(
        request, monkeypatch):
    if not request.config.pluginmanager.hasplugin("xdist"):
        pytest.skip("pytest-xdist is not loaded in this run (-p no:xdist)")
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    # the hook as pytest-xdist calls it for `-n auto`: this conftest's answer comes first
    assert request.config.hook.pytest_xdist_auto_num_workers(config=request.config) == \
        len(os.sched_getaffinity(0)) + 2
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert request.config.hook.pytest_xdist_auto_num_workers(config=request.config) == 3


def test_the_test_process_collects_garbage_less_often():
    assert gc.get_threshold() == GC_THRESHOLDS and GC_THRESHOLDS[0] > 700


CYCLE_WITH_A_FAILING_FINALIZER = """
class Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        raise RuntimeError("the finalizer of a cycle")


def test_leaves_a_cycle():
    Cycle()
"""


def test_one_collection_at_the_end_still_reports_what_a_finalizer_raised(request, tmp_path):
    assert request.config.stash[gc_collect_iterations_key] == GC_AT_END == 1
    (tmp_path / "test_cycle.py").write_text(CYCLE_WITH_A_FAILING_FINALIZER)
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-p", "tests.conftest", "--rootdir", str(tmp_path),
                           str(tmp_path / "test_cycle.py")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "PytestUnraisableExceptionWarning" in done.stderr
    assert "RuntimeError: the finalizer of a cycle" in done.stderr


def test_a_server_that_ended_or_has_a_reply_pending_is_not_settled(kube_sim):
    # conftest's shared_serve replaces (and fails) a test's shared server that is not settled
    from tests.support.server_support import ServerProcess
    server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", kube_sim("healthy").kubeconfig,
                           "--quiet")
    server.initialize()
    assert server.settled()
    server.send({"jsonrpc": "2.0", "id": "never-read", "method": "ping"})
    assert not server.settled()
    assert server.recv()["id"] == "settled?"  # the probe's own reply, still pending
    assert server.settled()
    assert server.close() == 0
    assert not server.settled()


def test_a_shared_simulator_that_was_written_to_is_not_handed_out_again(shared_sim):
    sim = shared_sim("crashloop")
    assert shared_sim("crashloop") is sim  # one per cluster for the pytest process
    deleting = urllib.request.Request(sim.url + "/api/v1/namespaces/prod/pods/checkout-6f8d9c7b5d-x7k2p",
                                      method="DELETE")
    with urllib.request.urlopen(deleting, timeout=10) as answer:
        assert answer.status == 200
    with pytest.raises(AssertionError, match="a test wrote to the shared crashloop simulator"):
        shared_sim("crashloop")
    fresh = shared_sim("crashloop")   # the next test that asks gets a new one, unwritten
    assert fresh is not sim and fresh.journal_entries() == []
    with pytest.raises(OSError):   # the written one was stopped
        urllib.request.urlopen(sim.url + "/version", timeout=10)


def test_a_simulator_view_holds_its_own_requests_or_says_the_log_dropped_them():
    shared = types.SimpleNamespace(requests=collections.deque([{"n": 0}], maxlen=3))
    view, empty = SimView(shared), SimView(types.SimpleNamespace(requests=collections.deque(maxlen=3)))
    assert view.requests == [] and empty.requests == []
    shared.requests.append({"n": 1})
    assert view.requests == [{"n": 1}]
    empty._sim.requests.extend([{"n": 1}, {"n": 2}])
    assert empty.requests == [{"n": 1}, {"n": 2}]
    shared.requests.extend([{"n": 2}, {"n": 3}])   # {"n": 0} is dropped: where the view began
    with pytest.raises(RuntimeError, match="request log is full"):
        view.requests
    empty._sim.requests.append({"n": 3})   # full from empty: it may have dropped some of them
    with pytest.raises(RuntimeError, match="request log is full"):
        empty.requests
