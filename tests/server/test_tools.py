"""Tool table, registry and argument checks: every hostile value is refused before any read."""

import json
from types import SimpleNamespace

import pytest

from mcp_kubectl_server.read.reader import ReadError
from mcp_kubectl_server.tools.registry import collect, load, run_tool
from mcp_kubectl_server.server import Server
from mcp_kubectl_server.tools.spec import ANNOTATIONS, NAMESPACE, Tool, check_arguments, check_scope
from mcp_kubectl_server.validate import check_label, check_selector, check_subdomain

ALLOWED = ("default", "prod")
TOOLS = load().tools


def test_pod_tools_come_first_all_read_only():
    assert list(TOOLS)[:4] == ["get_pods", "describe_pod", "get_events", "get_logs"]
    for tool in TOOLS.values():
        definition = tool.definition()
        for key, value in ANNOTATIONS.items():
            assert definition["annotations"][key] is value
        assert definition["inputSchema"]["additionalProperties"] is False
        assert "prod" not in json.dumps(definition)  # the scope is not part of the cached prefix


def test_tools_list_is_the_same_bytes_whatever_the_allowed_namespaces():
    # Tools come first in the Messages API's prompt cache: a namespace in them would give every
    # set of namespaces a cache of its own, system prompt included.
    idle_reader = SimpleNamespace(prepare=lambda: None)  # tools/list reads nothing
    answers = [json.dumps(Server(idle_reader, allowed_namespaces=allowed, stdin=None, stdout=None,
                                 stderr=None).tools_list({}, 1))
               for allowed in (("prod",), ("default", "prod"), ("staging", "team-a"))]
    assert answers[0] == answers[1] == answers[2]
    assert "prod" not in answers[0] and "staging" not in answers[2]


def test_descriptions_steer_the_model():
    logs = TOOLS["get_logs"].description
    assert "previous=true" in logs and "ImagePullBackOff" in logs and "Pending" in logs
    assert "already includes the pod's events" in TOOLS["describe_pod"].description


@pytest.mark.parametrize("value", [
    "--kubeconfig=/tmp/x", "-A", "-n", "a;b", "../..", "prod\nkube-system", "Prod", "", "a b",
    "x" * 64, "prod$(id)", "prod`id`", "*", "prod/", 7, None, ["prod"], "prod\n", "pr\u043ed", "prod\x00",
])
def test_bad_namespace_refused(value):
    assert check_label("namespace", value)


@pytest.mark.parametrize("value", [
    "-A", "--all-namespaces", "a;b", "../..", "..", "pod\nname", "a" * 254, "Pod", "pod_1", "pod/x",
    ".pod", "pod.", "pod..x", "pod name", "pod\n", "pod\r\n", "p\u043ed", "pod\x00",
])
def test_bad_pod_name_refused(value):
    assert check_subdomain("name", value)


@pytest.mark.parametrize("value", ["checkout-6f8d9c7b5d-x7k2p", "a", "coredns-5d78c9869d-abcde", "web.v2-0"])
def test_good_pod_name_accepted(value):
    assert check_subdomain("name", value) is None


@pytest.mark.parametrize("value", [
    "app=checkout", "app==checkout", "app!=web,tier=db", "!canary", "environment in (prod, staging)",
    "tier notin (frontend)", "app.kubernetes.io/name=cart", "app=", "release",
])
def test_good_selector_accepted(value):
    assert check_selector("selector", value) is None


@pytest.mark.parametrize("value", [
    "-A", "--all-namespaces", "app=x --kubeconfig=/tmp/x", "app=x;rm -rf /", "app=x\nb=c", "app=$(id)",
    "", "=x", "app=x,", "app in prod", "a" * 513, "app=x y", "app=-x", "app=x|y", "app=x&&y",
    "app=x\n", "app in (a)\n", "app=\u0445", "app\u2028=x",
])
def test_bad_selector_refused(value):
    assert check_selector("selector", value)


def test_unknown_and_missing_arguments_are_named():
    problems = check_arguments(TOOLS["get_pods"], {"all_namespaces": True})
    assert any("'all_namespaces': unknown argument" in p and "namespace, selector" in p for p in problems)
    assert "namespace: is required" in problems


@pytest.mark.parametrize("args, fragment", [
    ({"namespace": "prod", "name": "p", "tail": 0}, "tail: must be a whole number from 1 to 1000"),
    ({"namespace": "prod", "name": "p", "tail": 1001}, "tail"),
    ({"namespace": "prod", "name": "p", "tail": True}, "tail"),
    ({"namespace": "prod", "name": "p", "tail": "50"}, "tail"),
    ({"namespace": "prod", "name": "p", "previous": "yes"}, "previous: must be true or false"),
    ({"namespace": "prod", "name": "p", "container": "-c"}, "container:"),
])
def test_log_arguments_checked(args, fragment):
    problems = check_arguments(TOOLS["get_logs"], args)
    assert any(fragment in p for p in problems), problems


def test_good_arguments_pass():
    assert check_arguments(TOOLS["get_logs"], {"namespace": "prod", "name": "checkout-1",
                                               "container": "checkout", "previous": True, "tail": 50}) == []


def test_scope_refusal_names_allowed_namespaces():
    assert check_scope(TOOLS["get_pods"], {"namespace": "prod"}, ALLOWED) is None
    refusal = check_scope(TOOLS["get_pods"], {"namespace": "kube-system"}, ALLOWED)
    assert "'kube-system' is outside this server's scope" in refusal and "default, prod" in refusal


def test_long_values_are_not_echoed_in_full():
    problem = check_label("namespace", "a" * 5000)
    assert len(problem) < 400


def _family(name, tools, handlers, order=100):
    return SimpleNamespace(__name__=name, TOOLS=tools, HANDLERS=handlers, ORDER=order)


def test_a_family_adds_tools_and_the_registry_refuses_mistakes():
    quota = Tool("get_quotas", "Quotas", "q", {"namespace": NAMESPACE}, ("namespace",))
    nodes = Tool("get_nodes", "Nodes", "n", {}, (), namespaced=False)
    family = _family("tools_x", [quota, nodes], {"get_quotas": lambda r, a: "q", "get_nodes": lambda r, a: "n"})
    registry = collect([_family("tools_pods", [TOOLS["get_pods"]], {"get_pods": lambda r, a: "p"}), family])
    assert list(registry.tools) == ["get_pods", "get_quotas", "get_nodes"]
    assert run_tool(None, "get_nodes", {}, registry=registry) == ("n", False)
    assert check_scope(nodes, {}, ALLOWED) is None  # cluster-scoped: bounded by its family
    assert quota.definition()["description"] == "q"  # as declared: no scope appended
    assert "outside this server's scope" in check_scope(quota, {}, ALLOWED)  # no namespace: refused
    with pytest.raises(ValueError, match="declared twice"):
        collect([family, family])
    with pytest.raises(ValueError, match="has no handler"):
        collect([_family("tools_y", [quota], {})])
    with pytest.raises(ValueError, match="handlers without tools"):
        collect([_family("tools_y", [], {"get_quotas": len})])


def test_a_read_error_is_an_error_result():
    def failing(reader, args):
        raise ReadError("not found (404): pods \"x\" not found")
    registry = collect([_family("tools_z", [TOOLS["get_pods"]], {"get_pods": failing})])
    assert run_tool(None, "get_pods", {}, registry=registry) == ('not found (404): pods "x" not found', True)


def test_a_family_field_check_is_used():
    tool = Tool("describe_workload", "W", "w", {"namespace": NAMESPACE, "kind": {"type": "string"}},
                ("namespace", "kind"), checks={"kind": lambda f, v: None if v == "Deployment" else f"{f}: bad"})
    assert check_arguments(tool, {"namespace": "prod", "kind": "Deployment"}) == []
    assert check_arguments(tool, {"namespace": "prod", "kind": "Secret"}) == ["kind: bad"]
