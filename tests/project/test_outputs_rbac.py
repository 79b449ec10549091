"""The read-only RBAC in outputs/rbac-readonly.yaml: least privilege, and nothing that writes.

Owns the RBAC checker (verbs, resources, subresources that open a command channel, wildcards,
aggregation, what the bindings bind) and its tests: the real file passes, and each of a list of
deliberately wrong edits of it fails with a message that names the problem. The manifests are
read with PyYAML (tests/support/yaml_docs.py).
"""

from pathlib import Path

import pytest

from tests.support.yaml_docs import load_documents

RBAC = Path(__file__).resolve().parents[2] / "outputs" / "rbac-readonly.yaml"

# What the tools read, and so what the roles must grant and may grant: (apiGroup, resource).
NEEDED = {("", "pods", "get"), ("", "pods", "list"), ("", "pods/log", "get"), ("", "events", "list"),
          ("events.k8s.io", "events", "list"), ("", "services", "list"),
          ("discovery.k8s.io", "endpointslices", "list"), ("", "configmaps", "get"),
          ("", "persistentvolumeclaims", "list"), ("", "persistentvolumes", "get"),
          ("storage.k8s.io", "storageclasses", "list"), ("", "resourcequotas", "list"),
          ("", "limitranges", "list"), ("apps", "statefulsets", "list"), ("apps", "daemonsets", "list"),
          ("apps", "controllerrevisions", "list"), ("batch", "jobs", "list"), ("batch", "cronjobs", "list"),
          ("autoscaling", "horizontalpodautoscalers", "list"), ("", "nodes", "get"), ("", "nodes", "list"),
          ("networking.k8s.io", "networkpolicies", "list"), ("networking.k8s.io", "ingresses", "list"),
          ("networking.k8s.io", "ingressclasses", "list"), ("scheduling.k8s.io", "priorityclasses", "list"),
          ("", "serviceaccounts", "get"), ("", "serviceaccounts", "list"), ("rbac.authorization.k8s.io", "roles", "list"),
          ("rbac.authorization.k8s.io", "rolebindings", "list"),
          ("rbac.authorization.k8s.io", "clusterroles", "list"),
          ("rbac.authorization.k8s.io", "clusterrolebindings", "list"),
          ("policy", "poddisruptionbudgets", "list")}
NAMESPACED = {"": {"pods", "pods/log", "events", "services", "endpoints", "configmaps",
                   "persistentvolumeclaims", "resourcequotas", "limitranges", "serviceaccounts"},
              "apps": {"deployments", "replicasets", "statefulsets", "daemonsets", "controllerrevisions"},
              "batch": {"jobs", "cronjobs"}, "autoscaling": {"horizontalpodautoscalers"},
              "events.k8s.io": {"events"}, "discovery.k8s.io": {"endpointslices"},
              "networking.k8s.io": {"networkpolicies", "ingresses"},
              "rbac.authorization.k8s.io": {"roles", "rolebindings"},
              "policy": {"poddisruptionbudgets"}}
# The custom kinds get_custom_resources has digests for (issue 48): get and list in each allowed
# namespace, and nothing else of their groups; a ClusterIssuer only by name (get).
CUSTOM = {"argoproj.io": {"applications"}, "kustomize.toolkit.fluxcd.io": {"kustomizations"},
          "helm.toolkit.fluxcd.io": {"helmreleases"},
          "source.toolkit.fluxcd.io": {"gitrepositories", "helmrepositories"},
          "keda.sh": {"scaledobjects", "scaledjobs"},
          "security.istio.io": {"authorizationpolicies", "peerauthentications"},
          "networking.istio.io": {"virtualservices", "destinationrules"}, "cert-manager.io": {"certificates", "issuers"},
          "chaos-mesh.org": {"podchaos", "networkchaos", "iochaos", "stresschaos", "timechaos", "dnschaos",
                             "httpchaos", "schedules"}}
NAMESPACED.update(CUSTOM)
NEEDED |= {(group, resource, verb) for group, kinds in CUSTOM.items() for resource in kinds
           for verb in ("get", "list")} | {("cert-manager.io", "clusterissuers", "get")}
CLUSTER_SCOPED = {"": {"namespaces", "nodes", "persistentvolumes"}, "storage.k8s.io": {"storageclasses"},
                  "cert-manager.io": {"clusterissuers"},
                  "networking.k8s.io": {"ingressclasses"}, "scheduling.k8s.io": {"priorityclasses"},
                  "rbac.authorization.k8s.io": {"clusterroles", "clusterrolebindings"}}
# Namespaced kinds a ClusterRole may grant, and with which verbs only: the node tools list the pods
# of every namespace to sum a node's requests (describe_node counts, never names, the others); and
# cluster-scoped kinds read only by name.
CLUSTER_WIDE = {("", "pods"): {"list"}, ("cert-manager.io", "clusterissuers"): {"get"}}
NODE_EVENTS = "triage-agent-node-events"  # its Role, in default, where events about nodes are stored
MAY_READ = {g: NAMESPACED.get(g, set()) | CLUSTER_SCOPED.get(g, set()) for g in {*NAMESPACED, *CLUSTER_SCOPED}}
COMMAND_CHANNELS = ("exec", "attach", "portforward", "proxy")
# --prometheus-service: get on services/proxy of one Service, in this Role only, by resourceNames.
PROMETHEUS_ROLE = "triage-agent-prometheus"
SUBJECT = ("ServiceAccount", "triage-agent")


def _check_scope(kind, rule):
    """A ClusterRole (bound cluster-wide) grants only cluster-scoped kinds; a Role only namespaced ones."""
    allowed = CLUSTER_SCOPED if kind == "ClusterRole" else NAMESPACED
    problems = []
    for group in rule["apiGroups"]:
        for resource in rule["resources"]:
            wide = kind == "ClusterRole" and (group, resource) in CLUSTER_WIDE
            if wide and not set(rule["verbs"]) <= CLUSTER_WIDE[(group, resource)]:
                problems.append(f"ClusterRole grants {'/'.join(rule['verbs'])} {resource} (group {group!r}):"
                                f" only {', '.join(sorted(CLUSTER_WIDE[(group, resource)]))} is needed"
                                " in every namespace")
            elif not wide and resource in MAY_READ.get(group, ()) and resource not in allowed.get(group, ()):
                problems.append(f"{kind} grants {resource} (group {group!r}): "
                                + ("a namespaced kind belongs in the per-namespace Role" if kind == "ClusterRole"
                                   else "a Role cannot grant a cluster-scoped kind"))
    return problems


def _check_prometheus_rule(rule):
    """The one rule of the Prometheus Role: get services/proxy on named Services only."""
    names = rule.get("resourceNames")
    if (rule.get("apiGroups"), rule.get("resources"), rule.get("verbs")) != ([""], ["services/proxy"], ["get"]):
        return [f"Role {PROMETHEUS_ROLE} grants {rule!r}: only get on services/proxy"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        return [f"Role {PROMETHEUS_ROLE}: services/proxy needs resourceNames (Prometheus' Service"
                " only), or it proxies to every Service of the namespace"]
    return []


def _check_rule(rule, grants):
    keys = ("apiGroups", "resources", "verbs")
    if not isinstance(rule, dict) or set(rule) != set(keys) or not all(isinstance(rule[k], list) for k in keys):
        return [f"rule {rule!r}: must have exactly apiGroups, resources and verbs, each a list"]
    problems = []
    for group in rule["apiGroups"]:
        for resource in rule["resources"]:
            for verb in rule["verbs"]:
                where = f"{verb} {resource} (group {group!r})"
                if "*" in (group, resource, verb):
                    problems.append(f"{where}: wildcards grant everything, present and future")
                elif "secret" in resource:
                    problems.append(f"{where}: secrets are never readable by the agent")
                elif resource.split("/")[-1] in COMMAND_CHANNELS:
                    problems.append(f"{where}: {resource} opens a command channel even with get")
                elif resource not in MAY_READ.get(group, ()):
                    problems.append(f"{where}: the tools never read {resource}")
                elif verb not in ("get", "list") or (resource == "pods/log" and verb != "get"):
                    problems.append(f"{where}: only get and list are allowed (pods/log: get)")
                grants.add((group, resource, verb))
    return problems


def _check_bindings(docs, roles):
    problems = []
    for doc in docs:
        if doc.get("kind") not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        ref = doc.get("roleRef") or {}
        if doc["kind"] == "ClusterRoleBinding" and ref.get("kind") != "ClusterRole":
            problems.append(f"ClusterRoleBinding binds {ref.get('kind')} {ref.get('name')!r}")
        if (ref.get("kind"), ref.get("name")) not in roles:
            problems.append(f"{doc['kind']} binds {ref.get('kind')} {ref.get('name')!r}, "
                            "not a role from this file")
        for subject in doc.get("subjects") or []:
            if (subject.get("kind"), subject.get("name")) != SUBJECT:
                problems.append(f"{doc['kind']} binds {subject.get('kind')} {subject.get('name')!r}")
    return problems


def check_rbac(docs):
    """Read-only, least privilege, bound only to the agent's ServiceAccount."""
    docs = [doc if isinstance(doc, dict) else {} for doc in docs]
    problems, grants, roles = [], set(), set()
    for doc in docs:
        kind, name = doc.get("kind"), (doc.get("metadata") or {}).get("name")
        if kind in ("Role", "ClusterRole"):
            roles.add((kind, name))
            if "aggregationRule" in doc:
                problems.append(f"{kind} {name}: aggregationRule pulls in other roles' rules")
            if kind == "Role" and not (doc.get("metadata") or {}).get("namespace"):
                problems.append(f"Role {name}: needs metadata.namespace (an allowed namespace)")
            for rule in doc.get("rules") or []:
                if kind == "Role" and name == PROMETHEUS_ROLE:
                    problems += _check_prometheus_rule(rule)
                    continue
                found = _check_rule(rule, grants)
                problems += found or _check_scope(kind, rule)
                if name == NODE_EVENTS and not found and set(rule["resources"]) - {"events"}:
                    problems.append(f"Role {name} is for events about nodes only, not {rule['resources']}")
        elif kind not in ("Namespace", "ServiceAccount", "ClusterRoleBinding", "RoleBinding"):
            problems.append(f"unexpected document kind {kind!r}")
    if not any(d.get("kind") == "Role" and d.get("metadata") == {"name": NODE_EVENTS, "namespace": "default"}
               for d in docs):
        problems.append(f"describe_node needs Role {NODE_EVENTS} in namespace default (events about nodes)")
    problems += _check_bindings(docs, roles)
    return problems + [f"missing grant: {verb} {resource} (group {group!r})"
                       for group, resource, verb in sorted(NEEDED - grants)]


def test_rbac_is_read_only_least_privilege():
    docs = load_documents(RBAC.read_text(encoding="utf-8"))
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
                                         "ClusterRoleBinding", "Role", "RoleBinding", "Role", "RoleBinding"]
    assert check_rbac(docs) == []


_RULE = "  - apiGroups: [apps]\n    resources: [deployments, replicasets]\n    verbs: [get, list]\n"


@pytest.mark.parametrize("old, new, message", [
    ("verbs: [get, list]\n---", "verbs: [get, list, delete]\n---", "delete poddisruptionbudgets"),
    ("verbs: [get, list]\n---", "verbs:\n      - get\n      - patch\n---", "patch poddisruptionbudgets"),
    ("resources: [jobs, cronjobs]\n    verbs: [get, list]", "resources: [jobs, cronjobs]\n    verbs: [get, create]",
     "create jobs"),
    ("resources: [statefulsets, daemonsets, controllerrevisions]", "resources: [statefulsets, daemonsets]",
     "missing grant: list controllerrevisions"),
    ("resources: [pods]\n    verbs: [list]", "resources: [pods]\n    verbs: [get, list]",
     "only list is needed in every namespace"),
    ("resources: [pods]\n    verbs: [list]", "resources: [pods, pods/log]\n    verbs: [list]",
     "only get and list are allowed (pods/log: get)"),
    ("resources: [events]\n    verbs: [list]", "resources: [events, pods]\n    verbs: [list]",
     "for events about nodes only"),
    ("resources: [namespaces, nodes, persistentvolumes]", "resources: [namespaces, persistentvolumes]",
     "missing grant: get nodes"),
    ("verbs: [get, list]\n---", "verbs: get\n---", "each a list"),
    ("[get, list]\n  - apiGroups: [\"\"]\n    resources: [pods/log]",
     "[get, list, watch]\n  - apiGroups: [\"\"]\n    resources: [pods/log]", "watch pods"),
    ("resources: [pods, events,", "resources: [pods, secrets, events,", "secrets are never"),
    ("resources: [pods/log]", "resources: [pods/log, pods/exec]", "command channel"),
    ("resources: [pods/log]", "resources: [pods/log, nodes/proxy]", "command channel"),
    ("resources: [pods/log]\n    verbs: [get]", "resources: [pods/log]\n    verbs: [get, list]",
     "list pods/log"),
    ("resources: [pods/log]\n    verbs: [get]", "resources: [pods/log]\n    verbs: [\"*\"]", "wildcards"),
    (_RULE, _RULE + "  - apiGroups: [\"\"]\n    resources: [replicationcontrollers]\n    verbs: [get]\n",
     "never read replicationcontrollers"),
    ("resources: [ingressclasses]", "resources: [ingresses]", "missing grant: list ingressclasses"),
    ("resources: [roles, rolebindings]", "resources: [roles, rolebindings, clusterroles]",
     "a Role cannot grant a cluster-scoped kind"),
    ("resources: [clusterroles, clusterrolebindings]\n    verbs: [get, list]",
     "resources: [clusterroles, clusterrolebindings]\n    verbs: [get, list, bind]", "bind clusterroles"),
    ("resources: [priorityclasses]", "resources: [priorityclasses, secrets]", "secrets are never"),
    ("resources: [configmaps,", "resources: [secrets, configmaps,", "secrets are never"),
    ("resources: [pods/log]", "resources: [pods/log, services/proxy]", "command channel"),
    ("resources: [namespaces, nodes, persistentvolumes]",
     "resources: [namespaces, nodes, persistentvolumes, configmaps]",
     "a namespaced kind belongs in the per-namespace Role"),
    ("resources: [pods, events, services, endpoints]", "resources: [pods, events, services, endpoints, nodes]",
     "a Role cannot grant a cluster-scoped kind"),
    ("  name: triage-agent-readonly\n  namespace: prod\nrules:", "  name: triage-agent-readonly\nrules:",
     "needs metadata.namespace"),
    ("  kind: ClusterRole\n  name: triage-agent-cluster-readonly", "  kind: Role\n  name: triage-agent-readonly",
     "ClusterRoleBinding binds Role"),
    ("resources: [storageclasses]", "resources: [csidrivers]", "missing grant: list storageclasses"),
    ("resources: [configmaps, persistentvolumeclaims,", "resources: [persistentvolumeclaims,",
     "missing grant: get configmaps"),
    (_RULE, _RULE + "  - nonResourceURLs: [\"/logs\"]\n    verbs: [get]\n", "exactly apiGroups"),
    ("  name: triage-agent-cluster-readonly\nrules:", "  name: triage-agent-cluster-readonly\naggregationRule:\n"
     "  clusterRoleSelectors: []\nrules:", "aggregationRule"),
    ("  kind: ClusterRole\n  name: triage-agent-cluster-readonly", "  kind: ClusterRole\n  name: cluster-admin",
     "'cluster-admin', not a role from this file"),
    ("  - kind: ServiceAccount\n    name: triage-agent\n",
     "  - kind: Group\n    name: system:authenticated\n", "binds Group"),
    ("resources: [pods/log]", "resources: [logs]", "missing grant: get pods/log"),
    ("apiGroups: [events.k8s.io]", "apiGroups: [apps]", "list events (group 'apps'): the tools never read"),
    ("  name: triage-agent-node-events\n  namespace: default\nrules:",
     "  name: triage-agent-node-events\n  namespace: kube-system\nrules:",
     "describe_node needs Role triage-agent-node-events in namespace default"),
    ("kind: Namespace", "kind: Pod", "unexpected document kind 'Pod'"),
    ("resources: [scaledobjects, scaledjobs]", "resources: [scaledobjects, scaledjobs, triggerauthentications]",
     "the tools never read triggerauthentications"),
    ("resources: [scaledobjects, scaledjobs]", "resources: [scaledjobs]", "missing grant: get scaledobjects"),
    ("apiGroups: [argoproj.io]", "apiGroups: [bitnami.com]", "the tools never read applications"),
    ("resources: [certificates, issuers]", "resources: [certificates, issuers, clusterissuers]",
     "a Role cannot grant a cluster-scoped kind"),
    ("resources: [clusterissuers]\n    verbs: [get]", "resources: [clusterissuers]\n    verbs: [get, list]",
     "only get is needed"),
    ("resources: [authorizationpolicies, peerauthentications]\n    verbs: [get, list]",
     "resources: [authorizationpolicies, peerauthentications]\n    verbs: [get, list, update]",
     "update authorizationpolicies"),
    ("resources: [networkpolicies, ingresses]", "resources: [ingresses]",
     "missing grant: list networkpolicies (group 'networking.k8s.io')"),
    ("resources: [networkpolicies, ingresses]\n    verbs: [get, list]",
     "resources: [networkpolicies, ingresses]\n    verbs: [get, list, watch]", "watch networkpolicies"),
    ("resources: [storageclasses]\n    verbs: [get, list]\n", "resources: [storageclasses]\n    verbs: "
     "[get, list]\n  - apiGroups: [networking.k8s.io]\n    resources: [networkpolicies]\n    verbs: [list]\n",
     "ClusterRole grants networkpolicies (group 'networking.k8s.io'): a namespaced kind belongs"),
    ("apiGroups: [networking.k8s.io]", "apiGroups: [extensions]", "the tools never read networkpolicies"),
    ('    resourceNames: ["prometheus:9090"]\n', "", "services/proxy needs resourceNames"),
    ('    resourceNames: ["prometheus:9090"]\n    verbs: [get]', '    resourceNames: ["prometheus:9090"]\n'
     "    verbs: [get, list]", "only get on services/proxy"),
    ("resources: [services/proxy]", "resources: [services/proxy, pods/proxy]", "only get on services/proxy"),
    ("  name: triage-agent-prometheus\n  namespace: monitoring\nrules:",
     "  name: triage-agent-other\n  namespace: monitoring\nrules:", "must have exactly apiGroups"),
])
def test_rbac_check_fails(old, new, message):
    text = RBAC.read_text(encoding="utf-8")
    assert old in text, "the mutation no longer applies to the real file"
    problems = check_rbac(load_documents(text.replace(old, new, 1)))
    assert any(message in p for p in problems), problems


TLS_RBAC = RBAC.parent / "rbac-tls-certificates.yaml"


def check_tls_rbac(docs):
    """The optional TLS Role: namespaced, get on named Secrets only, bound to the agent alone."""
    problems = []
    for doc in docs:
        if doc.get("kind") == "ClusterRole" or doc.get("kind") == "ClusterRoleBinding":
            problems.append(f"{doc['kind']}: Secrets are granted per namespace only, by a Role")
        for rule in doc.get("rules") or []:
            if rule.get("apiGroups") != [""] or rule.get("resources") != ["secrets"]:
                problems.append(f"rule {rule!r}: this Role grants Secrets and nothing else")
            if rule.get("verbs") != ["get"]:
                problems.append(f"verbs {rule.get('verbs')}: only get (a list or watch returns every Secret)")
            if not rule.get("resourceNames") or "*" in rule.get("resourceNames"):
                problems.append("no resourceNames: the Role must name each TLS Secret it opens")
    roles = {(d["kind"], d["metadata"]["name"]) for d in docs if d.get("kind") == "Role"}
    return problems + _check_bindings(docs, roles)


def test_the_optional_tls_role_opens_named_secrets_for_get_only():
    docs = load_documents(TLS_RBAC.read_text(encoding="utf-8"))
    assert [d["kind"] for d in docs] == ["Role", "RoleBinding"]
    assert check_tls_rbac(docs) == []


@pytest.mark.parametrize("old, new, message", [
    ("    resourceNames: [shop-tls]\n", "", "no resourceNames"),
    ("resourceNames: [shop-tls]", 'resourceNames: ["*"]', "no resourceNames"),
    ("verbs: [get]", "verbs: [get, list]", "only get"),
    ("resources: [secrets]", "resources: [secrets, configmaps]", "Secrets and nothing else"),
    ("kind: Role\nmetadata", "kind: ClusterRole\nmetadata", "granted per namespace only"),
    ("    name: triage-agent\n", "    name: default\n", "binds ServiceAccount 'default'"),
])
def test_tls_rbac_check_fails(old, new, message):
    text = TLS_RBAC.read_text(encoding="utf-8")
    assert old in text, "the mutation no longer applies to the real file"
    problems = check_tls_rbac(load_documents(text.replace(old, new, 1)))
    assert any(message in p for p in problems), problems
