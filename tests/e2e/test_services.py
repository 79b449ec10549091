"""End to end for get_services, get_config, get_storage and get_quotas: the server over
stdio (in a thread: tests/support/server_thread.py), its kubectl proxy, the simulator's incident clusters.

Each tool shows its incident's decisive line, refuses namespaces outside the allow-list before
any read, rejects bad arguments, and reads only GETs inside the scope (never a Secret).

The tests that only read or are refused share one server per cluster (conftest's shared_serve).
"""

import json

import pytest


NEW_TOOLS = {"get_services": {}, "get_config": {"name": "billing-config"}, "get_storage": {},
             "get_quotas": {}}




def tool_reads(sim):
    """The requests the simulator got, without kubectl proxy's start-up probe (/version), which
    the server's proxy sends at a moment of its own after the server starts (it raced a count of
    the requests before and after a call on a busy machine)."""
    return [r for r in sim.requests if not r["path"].startswith("/version")]


def ok(server, tool, arguments):
    text, is_error = server.call(tool, arguments)
    assert not is_error, text
    return text


def only_scoped_gets(sim):
    for request in sim.requests:
        path = request["path"].split("?")[0]
        assert request["verb"] == "GET", request
        assert "/secrets" not in path
        assert "/namespaces/" not in path or "/namespaces/prod/" in path \
            or path.endswith("/namespaces/prod"), path


def test_get_services_names_the_selector_that_matches_nothing(serve):
    server, sim = serve("service-selector")
    text = ok(server, "get_services", {"namespace": "prod"})
    assert text.splitlines()[0] == "services in prod: 3 (1 with a problem)"
    assert text.splitlines()[1].startswith("payments type=ClusterIP cluster-ip=10.96.")
    assert "ports=80/TCP->http selector=app=payments-api" in text
    assert ("  problem: selector app=payments-api matches no pod in prod (pods here have app=checkout, "
            "app=frontend, app=payments)") in text
    assert "checkout type=ClusterIP" in text and "endpoints: ready=2 not-ready=0; pods matching the " \
        "selector: 2 (2 ready)" in text
    assert server.close() == 0
    only_scoped_gets(sim)
    assert sim.journal_entries() == []


def test_get_config_redacts_the_stray_password_and_lists_names_when_missing(shared_serve):
    server, sim = shared_serve("missing-secret")
    text = ok(server, "get_config", {"namespace": "prod", "name": "billing-config"})
    assert "DB_HOST=billing-db.prod.svc" in text and "DB_PASSWORD=[REDACTED]" in text
    assert "billing-legacy-2019" not in text
    missing, is_error = server.call("get_config", {"namespace": "prod", "name": "billing-db-credentials"})
    assert is_error and missing == ('configmap "billing-db-credentials" not found in namespace prod; '
                                    "ConfigMaps there: billing-config")
    only_scoped_gets(sim)


def test_get_storage_says_the_storage_class_does_not_exist(serve):
    server, sim = serve("pvc-pending")
    text = ok(server, "get_storage", {"namespace": "prod"})
    assert ("ledger-data phase=Pending class=fast-ssd requested=20Gi access=RWO volume=none "
            "used-by=ledger-7f6d5c9b8d-r8m2q") in text
    assert "problem: storage class fast-ssd does not exist (classes here: gp3, io2-archive)" in text
    assert "(volume phase=Bound reclaim=Delete)" in text
    assert server.close() == 0
    only_scoped_gets(sim)


def test_get_quotas_flags_the_pod_count_at_its_limit(serve):
    server, sim = serve("quota-blocked")
    text = ok(server, "get_quotas", {"namespace": "prod"})
    assert "  pods used=5 hard=5 AT LIMIT (100%): new objects that count against it are refused" in text
    assert "  Container memory default=512Mi defaultRequest=128Mi max=4Gi" in text
    assert server.close() == 0
    only_scoped_gets(sim)


def test_forbidden_reads_are_plain_errors_or_degrade(serve, tmp_path):
    cluster = tmp_path / "forbidden.json"
    cluster.write_text(json.dumps({"kind": "SimulatedCluster", "base": "pvc-pending",
                                   "forbidden": [{"resource": "storageclasses"},
                                                 {"resource": "configmaps", "namespace": "prod"},
                                                 {"resource": "resourcequotas", "namespace": "prod"}]}))
    server, _ = serve(str(cluster))
    storage = ok(server, "get_storage", {"namespace": "prod"})
    assert "storage classes: not readable (the cluster refused this read (403 Forbidden)" in storage
    assert "ledger-data phase=Pending class=fast-ssd" in storage
    for tool, args in (("get_config", {"name": "x"}), ("get_quotas", {})):
        text, is_error = server.call(tool, dict(args, namespace="prod"))
        assert is_error and text.startswith("the cluster refused this read (403 Forbidden)"), text
    assert server.close() == 0


@pytest.mark.parametrize("namespace", ["kube-system", "default", "staging"])
def test_every_new_tool_refuses_namespaces_outside_the_allow_list_before_reading(shared_serve, namespace):
    server, sim = shared_serve("missing-secret")
    for tool, extra in NEW_TOOLS.items():
        text, is_error = server.call(tool, dict(extra, namespace=namespace))
        assert is_error and text.startswith(f"namespace '{namespace}' is outside this server's scope"), text
    assert tool_reads(sim) == []


@pytest.mark.parametrize("tool, arguments, message", [
    ("get_services", {}, "namespace: is required"),
    ("get_services", {"namespace": "prod", "selector": "app=x"}, "unknown argument"),
    ("get_config", {"namespace": "prod"}, "name: is required"),
    ("get_config", {"namespace": "prod", "name": "../secrets/x"}, "is not a valid object name"),
    ("get_config", {"namespace": "prod", "name": "-A"}, "is not a valid object name"),
    ("get_storage", {"namespace": "PROD"}, "is not a valid name"),
    ("get_quotas", {"namespace": 7}, "must be a string"),
])
def test_bad_arguments_are_refused_with_field_messages(shared_serve, tool, arguments, message):
    server, sim = shared_serve("missing-secret")
    text, is_error = server.call(tool, arguments)
    assert is_error and message in text, text
    assert tool_reads(sim) == []


def test_tools_are_listed_read_only_with_a_required_namespace(shared_serve):
    server, _ = shared_serve("missing-secret")
    tools = {t["name"]: t for t in server.request("tools/list", {})["result"]["tools"]}
    for name in NEW_TOOLS:
        assert tools[name]["annotations"]["readOnlyHint"] is True
        assert tools[name]["annotations"]["destructiveHint"] is False
        assert "namespace" in tools[name]["inputSchema"]["required"]
        assert "prod" not in json.dumps(tools[name])  # the same bytes whatever the namespaces
