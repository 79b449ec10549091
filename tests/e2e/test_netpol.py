"""End to end for get_network_policies: the server over stdio (in a thread:
tests/support/server_thread.py), its kubectl proxy, the
simulator's network-policy cluster.

The tool shows the planted default-deny and which clients of payments are refused, reads only
GETs inside the scope, refuses namespaces outside the allow-list before any read, degrades when
the Namespace cannot be read, and says a 403 on the policies as a plain error.

The network-policy tests share one server (conftest's shared_serve).
"""

import json

import pytest

from tests.e2e.test_services import only_scoped_gets, tool_reads




def test_default_deny_and_the_refused_clients_of_payments(shared_serve):
    server, sim = shared_serve("network-policy")
    text, is_error = server.call("get_network_policies", {"namespace": "prod"})
    assert not is_error, text
    lines = text.splitlines()
    assert lines[0] == ("network policies in prod: 2 (1 default-deny); pods isolated for ingress: 7 of 7, "
                        "egress: 0 of 7")
    assert "policy default-deny-ingress: selects every pod in prod (7 pods) types=Ingress" in lines
    assert any(x.startswith("  default-deny ingress: no ingress rule;") for x in lines)
    assert ("  ingress rule 1: from all pods in namespaces kubernetes.io/metadata.name=ingress-nginx on "
            "TCP/8080") in lines
    payments = next(x for x in lines if x.startswith("service payments port 80->8080:"))
    assert "clients in prod: app=checkout (2 pods) NOT allowed, app=frontend (3 pods) NOT allowed" in payments
    assert payments.endswith("from other namespaces or addresses: nothing admitted")
    assert sum(x.startswith("pod payments-") and "no rule admits any incoming traffic" in x for x in lines) == 2
    only_scoped_gets(sim)
    paths = {r["path"].split("?")[0] for r in sim.requests}
    assert "/apis/networking.k8s.io/v1/namespaces/prod/networkpolicies" in paths
    assert "/api/v1/namespaces/prod" in paths
    assert sim.journal_entries() == []


def test_a_namespace_without_policies_says_so(shared_serve):
    server, _ = shared_serve("healthy")   # its exit code at end of input: the fixture's check
    text, is_error = server.call("get_network_policies", {"namespace": "prod"})
    assert not is_error and text.startswith("no NetworkPolicies in namespace prod: no pod here is isolated")


@pytest.mark.parametrize("namespace", ["kube-system", "default", "staging"])
def test_namespaces_outside_the_allow_list_are_refused_before_any_read(shared_serve, namespace):
    server, sim = shared_serve("network-policy")
    before = len(tool_reads(sim))
    text, is_error = server.call("get_network_policies", {"namespace": namespace})
    assert is_error and text.startswith(f"namespace '{namespace}' is outside this server's scope"), text
    assert len(tool_reads(sim)) == before


@pytest.mark.parametrize("arguments, message", [
    ({}, "namespace: is required"), ({"namespace": "prod", "name": "x"}, "unknown argument"),
    ({"namespace": "-A"}, "is not a valid name")])
def test_bad_arguments_are_refused(shared_serve, arguments, message):
    server, sim = shared_serve("network-policy")
    before = len(tool_reads(sim))
    text, is_error = server.call("get_network_policies", arguments)
    assert is_error and message in text, text
    assert len(tool_reads(sim)) == before


def test_forbidden_namespace_read_degrades_and_forbidden_policies_are_an_error(serve, tmp_path):
    cluster = tmp_path / "forbidden.json"
    cluster.write_text(json.dumps({"kind": "SimulatedCluster", "base": "network-policy",
                                   "forbidden": [{"resource": "namespaces"}]}))
    server, _ = serve(str(cluster))
    text, is_error = server.call("get_network_policies", {"namespace": "prod"})
    assert not is_error and "app=checkout (2 pods) NOT allowed" in text  # the name label still holds
    assert server.close() == 0
    cluster.write_text(json.dumps({"kind": "SimulatedCluster", "base": "network-policy",
                                   "forbidden": [{"resource": "networkpolicies", "namespace": "prod"}]}))
    server, _ = serve(str(cluster))
    text, is_error = server.call("get_network_policies", {"namespace": "prod"})
    assert is_error and text.startswith("the cluster refused this read (403 Forbidden)"), text
    assert server.close() == 0


def test_listed_read_only_with_a_required_namespace(shared_serve):
    server, _ = shared_serve("network-policy")
    tools = {t["name"]: t for t in server.request("tools/list", {})["result"]["tools"]}
    tool = tools["get_network_policies"]
    assert tool["annotations"]["readOnlyHint"] is True and tool["annotations"]["destructiveHint"] is False
    assert tool["inputSchema"]["required"] == ["namespace"]
    assert "prod" not in json.dumps(tool)  # the same bytes whatever the namespaces
