"""search_logs end to end: the server (in a thread, and as its own process for the matching
timer), its real kubectl proxy, the simulator. Only GETs of pod logs in the allowed namespace go
out, with the kubelet's stamps asked for; a slow pattern cannot hold the server."""

import json
import shutil
import time

import pytest

from tests.support.server_support import ServerProcess

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")


def test_one_replica_of_four_through_kubectl(shared_serve):
    server, sim = shared_serve("log-replica")
    text, is_error = server.call("search_logs", {"namespace": "prod", "workload": "Deployment/api"})
    assert not is_error, text
    assert "ERROR redis pool exhausted" in text and "- count=300 pods=api-" in text
    logs = [r["path"] for r in sim.requests if "/log?" in r["path"]]
    assert len(logs) == 4 and all(r["verb"] == "GET" for r in sim.requests)
    assert all(p.startswith("/api/v1/namespaces/prod/pods/api-") and "timestamps=true" in p
               and "sinceSeconds=3600" in p for p in logs)


def test_matches_through_kubectl_name_pod_container_and_time(shared_serve):
    server, _ = shared_serve("log-needle")
    text, is_error = server.call("search_logs", {"namespace": "prod", "selector": "app=ledger",
                                                 "pattern": "SQLSTATE 40P01", "ignore_case": False})
    assert not is_error, text
    match = [line for line in text.splitlines() if "SQLSTATE 40P01" in line and line.startswith("ledger-")]
    assert len(match) == 6 and all(line.split()[0].endswith("/ledger") and line.split()[1].endswith("Z:")
                                   for line in match)


def test_a_slow_pattern_cannot_hold_the_server(tmp_path, kube_sim):
    cluster = {"kind": "SimulatedCluster", "name": "slow", "base": "healthy", "logs": {
        "prod/frontend-74b9c5d6f8-d4t6m/frontend": {"current": {"generate": {
            "lines": 40, "seed": 1, "templates": ["a" * 3000]}}}}}
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(cluster))
    sim = kube_sim(str(path))
    # its own process: the timer that interrupts one long search lives on the main thread
    server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", sim.kubeconfig, "--timeout", "3",
                           "--quiet", process=True)
    try:
        server.initialize()
        started = time.monotonic()
        text, is_error = server.call("search_logs", {"namespace": "prod", "pod": "frontend-74b9c5d6f8-d4t6m",
                                                     "pattern": "a.*a.*a.*a.*a.*b", "since_minutes": 10080}, timeout=30)
        assert not is_error and time.monotonic() - started < 10
        assert "matching stopped after 1s (the budget of one call)" in text and "(stopped in the middle)" in text
        text, is_error = server.call("search_logs", {"namespace": "prod", "pod": "frontend-74b9c5d6f8-d4t6m",
                                                     "pattern": "(a|aa)*$"})
        assert is_error and "a repeated group may not hold a repeat or an alternation" in text
        assert server.request("ping")["result"] == {}
    finally:
        assert server.close() == 0
