"""scope.py on its own: which schemas offer a tool, and a table of calls that must be refused,
filled in or run, whatever the key spelling, the depth or the type of the value."""

import pytest

from triage_agent.scope import check_scope, is_all_namespaces_flag, is_namespace_key, scope_of

ONE, TWO = ("prod",), ("prod", "staging")
SCHEMA = {"type": "object", "properties": {"namespace": {"type": "string"},
                                           "allNamespaces": {"type": "boolean"},
                                           "selector": {"type": "string"}}}
SCOPE = scope_of(SCHEMA)


@pytest.mark.parametrize("key", ["namespace", "Namespace", "namespaces", "ns", "NS",
                                 "namespace_name", "namespace-name"])
def test_namespace_key_spellings(key):
    assert is_namespace_key(key) and scope_of({"properties": {key: {}}}).keys == (key,)


@pytest.mark.parametrize("key", ["all_namespaces", "allNamespaces", "all-namespaces", "A",
                                 "allNs", "cluster_wide", "anyNamespace", "across_namespaces"])
def test_all_namespaces_flag_spellings(key):
    assert is_all_namespaces_flag(key)


@pytest.mark.parametrize("key", ["name", "all_containers", "allColumns", "namespaced_only",
                                 "selector", "tail"])
def test_ordinary_keys_are_neither(key):
    assert not is_namespace_key(key) and not is_all_namespaces_flag(key)


@pytest.mark.parametrize("schema", [{}, {"type": "object"}, {"properties": []}, None, [],
                                    {"properties": {"name": {}, "selector": {}}}])
def test_a_schema_without_a_namespace_property_has_no_keys(schema):
    assert scope_of(schema).keys == ()


REFUSED = [
    {"namespace": "kube-system"},
    {"namespace": ""},
    {"namespace": None},
    {"namespace": 7},
    {"namespace": {"name": "kube-system"}},
    {"namespace": "prod", "allNamespaces": True},
    {"namespace": "prod", "allNamespaces": "false"},
    {"namespace": "prod", "allNamespaces": 0},
    {"namespace": "prod", "all_namespaces": None},
    {"namespace": "prod", "selector": "metadata.namespace=kube-system"},
    {"namespace": "prod", "selector": "metadata.namespace"},
    {"namespace": "prod", "selector": "involvedObject.namespace == kube-system"},
    {"namespace": "prod", "selector": "k8s-namespace in (kube-system)"},
    {"namespace": "prod", "query": "namespace:kube-system"},
    {"namespace": "prod", "filter": {"field": "Namespace"}},
    {"namespace": "prod", "target": {"namespace": "kube-system"}},
    {"namespace": "prod", "targets": [{"ns": "default"}]},
    {"namespace": "prod", "opts": {"all_namespaces": True}},
    {"namespace": "prod", "name": "-A"},
    {"namespace": "prod", "name": "  --all-namespaces"},
    {"namespace": "prod", "name": "web --namespace=kube-system"},
    {"namespace": "prod", "args": ["logs", "-n", "kube-system"]},
    {"namespace": "prod", "kind": "Node"},
    {"namespace": "prod", "kind": "Secret"},
    {"namespace": "prod", "resource": "secrets"},
    {"namespace": "prod", "resource_type": "clusterroles.rbac.authorization.k8s.io"},
    {"namespace": "prod", "kinds": ["Pod", "v1/Namespace"]},
]


@pytest.mark.parametrize("arguments", REFUSED, ids=range(len(REFUSED)))
def test_calls_that_reach_around_the_scope_are_refused(arguments):
    proof = check_scope(arguments, SCOPE, TWO, tool="pods")
    decision, text, violation = proof.refusal
    assert decision == "out_of_scope" and violation and "prod, staging" in text
    assert proof.arguments is arguments and proof.filled == {}


def test_a_missing_namespace_is_refused_with_the_allowed_names_when_several():
    proof = check_scope({"selector": "app=web"}, SCOPE, TWO, tool="pods")
    decision, text, violation = proof.refusal
    assert decision == "namespace_required" and not violation
    assert "namespace set to one of: prod, staging" in text


def test_the_one_namespace_and_false_flags_are_filled_in():
    proof = check_scope({"selector": "app=web"}, SCOPE, ONE, tool="pods")
    assert proof.refusal is None
    assert proof.arguments == {"selector": "app=web", "namespace": "prod",
                               "allNamespaces": False}
    assert proof.filled == {"namespace": "prod", "allNamespaces": False}


def test_a_list_namespace_is_filled_as_a_list_and_checked_item_by_item():
    scope = scope_of({"properties": {"namespaces": {"type": "array"}}})
    assert check_scope({}, scope, ONE, tool="t").arguments == {"namespaces": ["prod"]}
    assert check_scope({"namespaces": ["prod", "staging"]}, scope, TWO, tool="t").refusal is None
    for bad in ([], ["prod", "kube-system"], ["prod", ["kube-system"]]):
        assert check_scope({"namespaces": bad}, scope, TWO, tool="t").refusal[0] == \
            "out_of_scope"


@pytest.mark.parametrize("arguments", [
    {"namespace": "prod"},
    {"namespace": "staging", "allNamespaces": False, "selector": "app=web,tier!=db"},
    {"namespace": "prod", "selector": "app in (web, api)"},
    {"namespace": "prod", "name": "web-1", "tail": -5},
    {"namespace": "prod", "message": "the name-space is fine"},
    {"namespace": "prod", "kind": "Deployment", "resource": "pods"},
    {"namespace": "prod", "kind": "Pod", "type": "Node"},
])
def test_calls_that_stay_in_scope_run_unchanged(arguments):
    proof = check_scope(arguments, SCOPE, TWO, tool="pods")
    assert proof.refusal is None and proof.arguments == dict(arguments, **proof.filled)
    assert set(proof.filled) <= {"allNamespaces"}


def test_deeply_nested_arguments_are_walked_without_recursion():
    deep = {"namespace": "prod"}
    for _ in range(5000):
        deep = {"x": [deep]}
    deep["namespace"] = "prod"
    assert check_scope(deep, SCOPE, TWO, tool="pods").refusal is None
    deep["x"][0]["x"][0]["all_namespaces"] = True
    assert check_scope(deep, SCOPE, TWO, tool="pods").refusal[0] == "out_of_scope"
