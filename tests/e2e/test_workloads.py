"""End to end for the workload and node tools and the grown pod tools: the server over stdio
(in a thread: tests/support/server_thread.py), real kubectl, the simulator's workload and node incidents. Scope, argument checks and the
read-only journal are checked on the way.
The tests that only read share their cluster's server (conftest's shared_serve); a test that closes
its server or reads a cluster file of its own starts its own (serve).
"""

import json
import re
import shutil

import pytest

from tests.support.cli_here import run_main_here

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")




def ok(server, tool, arguments):
    text, is_error = server.call(tool, arguments)
    assert not is_error, text
    return text


def test_rollout_stuck_workloads_and_describe(shared_serve):
    server, sim = shared_serve("rollout-stuck")
    listed = ok(server, "get_workloads", {"namespace": "prod"})
    assert listed.splitlines()[1].startswith("Deployment/payments desired=3 updated=1 ready=3 available=3 "
                                             "unhealthy: Progressing=False reason=ProgressDeadlineExceeded")
    assert "StatefulSet/payments-cache desired=2 updated=2 ready=2 available=2 healthy" in listed
    assert "DaemonSet/node-exporter desired=3 updated=3 ready=3 available=3 healthy" in listed
    described = ok(server, "describe_workload", {"namespace": "prod", "kind": "Deployment", "name": "payments"})
    for fact in ("change container payments image registry.example.com/shop/payments:v3.9.2 -> "
                 "registry.example.com/shop/payments:v4.0.0", "-> http-get http://:9090/healthz",
                 "hpa hpa=payments min=3 max=6", "pod payments-5d8c7b6f4c-b6v3z phase=Running ready=0/1",
                 "event ", "Deployment/payments"):
        assert fact in described, fact
    assert sim.journal_entries() == []


def test_statefulset_and_daemonset_revisions(shared_serve):
    server, _ = shared_serve("rollout-stuck")
    sts = ok(server, "describe_workload", {"namespace": "prod", "kind": "StatefulSet", "name": "payments-cache"})
    assert "revision 2 ControllerRevision/payments-cache-7b5c9d8f6c" in sts and "pod payments-cache-1 " in sts
    ds = ok(server, "describe_workload", {"namespace": "prod", "kind": "DaemonSet", "name": "node-exporter"})
    assert ds.count("\npod node-exporter-") == 3


def test_job_failed_after_its_events_expired(shared_serve):
    server, _ = shared_serve("job-failed")
    assert ok(server, "get_events", {"namespace": "prod"}).startswith("no events in namespace prod")
    listed = ok(server, "get_workloads", {"namespace": "prod"})
    assert "Job/nightly-report-29406720 completions=0/1 active=0 failed=3 backoff_limit=2 state=Failed " \
           "unhealthy: Failed=True reason=BackoffLimitExceeded" in listed
    job = ok(server, "describe_workload", {"namespace": "prod", "kind": "Job", "name": "nightly-report-29406720"})
    assert job.count("\npod nightly-report-29406720-") == 3 and "exit_code=1" in job
    cron = ok(server, "describe_workload", {"namespace": "prod", "kind": "CronJob", "name": "nightly-report"})
    assert "job Job/nightly-report-29406720" in cron and "unhealthy: last_job=" in cron
    pod = job.split("\npod ")[1].split()[0]
    logs = ok(server, "get_logs", {"namespace": "prod", "name": pod})
    assert 'relation "orders_archive" does not exist' in logs


def test_node_tools_count_pods_outside_the_scope_never_name_them(serve):
    server, sim = serve("node-notready")
    nodes = ok(server, "get_nodes", {})
    assert nodes.splitlines()[1].startswith("node-c ready=Unknown reason=NodeStatusUnknown")
    described = ok(server, "describe_node", {"name": "node-c"})
    assert "pods on node: 7 (3 in namespaces in scope: prod; 4 in other namespaces, not named)" in described
    assert "Node/node-c" in described and "NodeNotReady" in described
    for hidden in ("kube-system", "staging", "coredns", "metrics-server", "web-", "checkout"):
        assert hidden not in described
    for bad, why in (({"name": "-node-c"}, "not a valid name"), ({}, "name: is required"),
                     ({"name": "node-c", "namespace": "kube-system"}, "unknown argument")):
        text, is_error = server.call("describe_node", bad)
        assert is_error and why in text
    text, is_error = server.call("describe_node", {"name": "node-z"})
    assert is_error and text == "node node-z not found (404); get_nodes lists the nodes"
    assert server.close() == 0
    assert sim.journal_entries() == []


def test_no_cluster_tools_flag_against_a_cluster(shared_serve):
    server, _ = shared_serve("node-notready", "--no-cluster-tools")
    names = [t["name"] for t in server.request("tools/list", {})["result"]["tools"]]
    assert names[:7] == ["get_pods", "describe_pod", "get_events", "get_logs", "search_logs", "get_workloads",
                         "describe_workload"]
    assert "get_nodes" not in names and "describe_node" not in names
    reply = server.request("tools/call", {"name": "get_nodes", "arguments": {}})
    assert reply["error"]["code"] == -32602 and "Unknown tool: 'get_nodes'" in reply["error"]["message"]
    assert ok(server, "get_workloads", {"namespace": "prod"}).startswith("workloads in namespace prod")


def test_every_namespaced_tool_refuses_a_namespace_outside_the_scope(shared_serve):
    server, _ = shared_serve("rollout-stuck")
    for tool, args in (("get_workloads", {}), ("describe_workload", {"kind": "Deployment", "name": "coredns"}),
                       ("get_pods", {}), ("get_events", {"type": "Warning"})):
        text, is_error = server.call(tool, dict(args, namespace="kube-system"))
        assert is_error and "outside this server's scope" in text, (tool, text)
    text, is_error = server.call("describe_workload", {"namespace": "prod", "kind": "Pod", "name": "x"})
    assert is_error and "kind: must be one of Deployment, StatefulSet, DaemonSet, Job, CronJob" in text
    text, is_error = server.call("describe_workload", {"namespace": "prod", "kind": "Job", "name": "payments"})
    assert is_error and text.startswith("Job prod/payments not found (404); get_workloads lists")
    text, is_error = server.call("get_events", {"namespace": "prod", "type": "Error"})
    assert is_error and "type: must be one of Warning, Normal" in text


def test_init_container_state_logs_and_events(shared_serve):
    server, _ = shared_serve("init-failing")
    pods = ok(server, "get_pods", {"namespace": "prod"})
    line = pods.splitlines()[1]
    assert line.startswith("orders-6c8d5b9f7d-j4x6t phase=Pending init=Init:CrashLoopBackOff ready=0/1 restarts=9 "
                           "init_container=migrate state=waiting reason=CrashLoopBackOff")
    logs = ok(server, "get_logs", {"namespace": "prod", "name": "orders-6c8d5b9f7d-j4x6t", "container": "migrate",
                                   "previous": True})
    assert "permission denied for table orders (SQLSTATE 42501)" in logs
    described = ok(server, "describe_pod", {"namespace": "prod", "name": "orders-6c8d5b9f7d-j4x6t"})
    assert "init_container migrate env DATABASE_URL from secret orders-db key url" in described
    assert "init_container migrate last_state=terminated reason=Error exit_code=1" in described
    warnings = ok(server, "get_events", {"namespace": "prod", "type": "Warning", "involved_kind": "Pod"})
    assert warnings.startswith("events in namespace prod (Warning, Pod): 1 total")
    assert re.search(r"Warning BackOff Pod/orders-6c8d5b9f7d-j4x6t age=\d+s count=96:", warnings)
    normal = ok(server, "get_events", {"namespace": "prod", "involved_kind": "Deployment"})
    assert "ScalingReplicaSet Deployment/orders" in normal and "Pod/" not in normal


def test_evicted_pods_and_their_volumes(shared_serve):
    server, _ = shared_serve("evicted", namespaces="prod,default")
    pods = ok(server, "get_pods", {"namespace": "prod"})
    assert "imaging-7b5d9c6f8d-d3w8k phase=Failed ready=0/1 restarts=0 status_reason=Evicted " \
           'status_message="The node was low on resource: ephemeral-storage.' in pods
    described = ok(server, "describe_pod", {"namespace": "prod", "name": "imaging-7b5d9c6f8d-d3w8k"})
    assert "pod prod/imaging-7b5d9c6f8d-d3w8k phase=Failed reason=Evicted" in described
    assert "volume render-cache emptyDir size_limit=none" in described
    node_events = ok(server, "get_events", {"namespace": "default", "involved_kind": "Node"})
    assert "Warning EvictionThresholdMet Node/node-b" in node_events


def test_node_tools_with_credentials_that_cannot_list_pods_cluster_wide(serve, tmp_path):
    cluster = tmp_path / "rbac.json"
    cluster.write_text(json.dumps({"kind": "SimulatedCluster", "base": "node-notready",
                                   "forbidden": [{"resource": "pods", "namespace": ""}]}))
    server, _ = serve(str(cluster))
    nodes = ok(server, "get_nodes", {})
    assert nodes.splitlines()[1].startswith("node-c ready=Unknown") and "pods=3/110" in nodes
    assert nodes.endswith("include only the namespaces in scope")
    described = ok(server, "describe_node", {"name": "node-c"})
    assert "pods on node: 3 (3 in namespaces in scope: prod; 0 in other namespaces" in described
    assert "cannot list pods in every namespace (403)" in described


def test_the_agent_offers_and_runs_its_own_servers_node_tools(shared_sim):
    """The loop offers get_nodes/describe_node of the server it started itself (no --mcp): the
    node-notready replay calls get_nodes, and nothing is refused or withheld. (The CLI runs here,
    tests/support/cli_here.py, its server in a thread; `make demo`'s process chain is
    tests/e2e/test_run_on_sim.py's.)"""
    sim = shared_sim("node-notready")
    assert sim.prometheus is None   # no --prometheus-url to pass, as run_on_sim would
    out = run_main_here(["ledger-writer in prod is down", "--namespaces", "prod", "--replay",
                         "fixtures/replay/node-notready.json", "--json", "--kubeconfig",
                         sim.kubeconfig], timeout=120)
    assert out.returncode == 0, out.stderr
    outcome = json.loads(out.stdout)
    assert outcome["not_offered"] == [] and outcome["violations"] == []
    assert outcome["tool_calls"] == 2 and outcome["stop"] != "error"
    assert "[audit] step 2 · get_nodes · executed" in out.stderr
