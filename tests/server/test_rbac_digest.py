"""get_rbac digest: subjects matched as the authorizer matches them, rules as verbs on resources,
`can` answered from the rules (yes, no, named objects only, cluster-wide), bad `can` refused."""

import pytest

from fixtures.kube_sim.objects import access as a
from fixtures.kube_sim.scenarios.access import STOCK_SYNC_ROLE
from mcp_kubectl_server.digests import rbac

ACCOUNTS = [a.service_account("prod", "default"), a.service_account("prod", "stock-sync")]
PODS = [("stock-sync-6c9f7d8b5c-k3v8n", "stock-sync", "stock-sync"), ("frontend-1", "default", "frontend"),
        ("frontend-2", "default", "frontend")]
BINDING = a.role_binding("prod", "stock-sync-reader", role_name="stock-sync-reader",
                         subjects=[a.sa_subject("prod", "stock-sync")])
ROLES = {("Role", "stock-sync-reader"): a.role("prod", "stock-sync-reader", STOCK_SYNC_ROLE)}


def _account(can=None, bindings=(BINDING,), roles=ROLES, cluster=(0, []), account="stock-sync"):
    return rbac.account_digest(account, namespace="prod", accounts=ACCOUNTS, bindings=list(bindings),
                               roles=roles, pods=PODS, cluster=cluster, can=can, allowed=("prod",))


def test_one_account_rules_and_a_no_that_names_what_is_granted():
    text = _account(can="list pods")
    assert text.splitlines()[0] == ("service account prod/stock-sync: used by 1 pod (stock-sync); image pull"
                                    " Secret names: none")
    assert ("  RoleBinding stock-sync-reader -> Role stock-sync-reader (subject ServiceAccount "
            "prod/stock-sync):") in text
    assert "    rule: get,watch on pods" in text and "    rule: get on configmaps names=stock-sync-config" in text
    assert "  cluster-wide: 0 ClusterRoleBindings name this account or a group it belongs to" in text
    assert ("  can list pods: NO: no rule bound to it grants list on pods (Role stock-sync-reader grants "
            "get,watch on pods); a request it makes gets 403 Forbidden") in text


def test_yes_and_named_objects_only():
    assert "can get pods: YES, granted by Role stock-sync-reader via RoleBinding stock-sync-reader" in _account(
        can="get pods")
    text = _account(can="get configmaps")
    assert "can get configmaps: NO" in text and "named objects only: Role stock-sync-reader for stock-sync-config only" in text
    assert "can watch deployments (group apps): NO" in _account(can="watch deployments")


@pytest.mark.parametrize("rule, can, allowed", [
    ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, "delete deployments.apps", True),
    ({"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}, "get pods/log", True),
    ({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}, "get pods/log", False),
    ({"apiGroups": [""], "resources": ["*/log"], "verbs": ["get"]}, "get pods/log", True),
    ({"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["list"]}, "list pods", False),
    ({"apiGroups": [""], "resources": ["pods"], "verbs": ["list"], "resourceNames": ["a"]}, "list pods", False),
    ({"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["list"]}, "list widgets.example.com", True),
])
def test_rule_matching_follows_the_authorizer(rule, can, allowed):
    assert rbac.rule_allows(rule, *rbac.parse_can(can)) is allowed


@pytest.mark.parametrize("subject, covered", [
    ({"kind": "ServiceAccount", "name": "stock-sync"}, True),  # namespace defaults to the binding's
    ({"kind": "ServiceAccount", "name": "stock-sync", "namespace": "staging"}, False),
    ({"kind": "User", "name": "system:serviceaccount:prod:stock-sync"}, True),
    ({"kind": "Group", "name": "system:serviceaccounts:prod"}, True),
    ({"kind": "Group", "name": "system:serviceaccounts:staging"}, False),
    ({"kind": "Group", "name": "system:authenticated"}, True),
    ({"kind": "Group", "name": "shop-developers"}, False),
])
def test_subjects_are_matched_as_the_authorizer_does(subject, covered):
    assert rbac.subject_matches(subject, "stock-sync", "prod", "prod") is covered


def test_a_group_binding_a_cluster_role_and_what_could_not_be_read():
    group = a.role_binding("prod", "all-sa-view", role_kind="ClusterRole", role_name="view",
                           subjects=[{"kind": "Group", "name": "system:serviceaccounts:prod"}])
    view = a.cluster_role("view", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}])
    text = _account(can="list pods", bindings=(BINDING, group), roles={**ROLES, ("ClusterRole", "view"): view})
    assert "RoleBinding all-sa-view -> ClusterRole view (subject Group system:serviceaccounts:prod):" in text
    assert "can list pods: YES, granted by ClusterRole view via RoleBinding all-sa-view" in text
    unread = _account(can="list pods", bindings=(BINDING, group),
                      roles={**ROLES, ("ClusterRole", "view"): "cluster-scoped reads are switched off"})
    assert "    rules not read: cluster-scoped reads are switched off" in unread
    assert "can list pods: NO" in unread and "not read, so not counted: ClusterRole view" in unread


def test_cluster_wide_bindings_are_counted_and_evaluated_never_named():
    role = a.cluster_role("secret-cluster-role-name", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}])
    text = _account(can="list pods", cluster=(1, [role]))
    assert "cluster-wide: 1 ClusterRoleBinding names this account" in text
    assert "can list pods: YES, through a cluster-wide binding (not named: outside the namespace)" in text
    assert "secret-cluster-role-name" not in text
    assert "cluster-wide bindings: not counted (no access)" in _account(cluster="no access")


def test_a_missing_account_another_namespaces_subject_and_the_namespace_view():
    missing = _account(account="stock-sink", bindings=())
    assert missing.startswith("service account prod/stock-sink does not exist (accounts here: default, stock-sync)")
    assert "no RoleBinding in prod names it" in missing
    foreign = a.role_binding("prod", "ci-deployer", role_name="deployer",
                             subjects=[a.sa_subject("ci-system", "builder"), a.sa_subject("prod", "stock-sync")])
    text = rbac.namespace_digest(namespace="prod", accounts=ACCOUNTS, bindings=[BINDING, foreign], pods=PODS,
                                 cluster_count=2, allowed=("prod",))
    lines = text.splitlines()
    assert lines[0] == "rbac in prod: 2 service accounts, 2 role bindings, 2 roles bound by them"
    assert lines[1] == ("service account default: used by 2 pods (frontend); image pull Secret names: none; "
                        "bound to: no RoleBinding")
    assert ("rolebinding ci-deployer -> Role deployer: subjects ServiceAccount of another namespace, "
            "ServiceAccount prod/stock-sync") in text
    assert "ci-system" not in text and "builder" not in text
    assert "cluster-wide bindings: 2 ClusterRoleBindings name accounts of prod (counted, not listed)" in text


def test_pull_secrets_and_automount_are_names_and_flags():
    sa = a.service_account("prod", "puller", image_pull_secrets=("regcred",), automount=False)
    line = rbac.account_line(sa, [])
    assert line == ("service account puller: used by no pod; image pull Secret names: regcred; "
                    "automountServiceAccountToken=false (pods get no API token unless they ask for one)")


@pytest.mark.parametrize("value, words", [
    ("list", "must be 'VERB RESOURCE'"), ("list pods --as=admin", "must be 'VERB RESOURCE'"),
    ("escalate roles", "the verb must be one of"), ("list widgets", "name the API group of 'widgets'"),
    ("LIST PODS", "must be 'VERB RESOURCE'"), (7, "must be a short text"), ("list " + "p" * 130, "short text"),
])
def test_bad_can_values_are_refused_with_the_reason(value, words):
    assert words in rbac.check_can("can", value)
    assert rbac.check_can("can", "get pods/log") is None and rbac.check_can("can", "list deployments.apps") is None


def test_cluster_text_in_rules_and_subjects_is_redacted():
    leaky = a.role("prod", "stock-sync-reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"],
                                                  "resourceNames": ["db_password=hunter2-plant"]}])
    text = _account(can="get configmaps", roles={("Role", "stock-sync-reader"): leaky})
    assert "hunter2-plant" not in text and "names=db_password=[REDACTED]" in text
