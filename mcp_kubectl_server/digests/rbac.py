"""get_rbac digest: a namespace's ServiceAccounts, what binds them, and "can it VERB RESOURCE".

    service account prod/inventory-sync: used by 2 pods (inventory-sync); image pull Secret names: none
      RoleBinding inventory-sync-read -> Role pod-reader (subject ServiceAccount inventory-sync):
        rule: get on pods
      cluster-wide: 0 ClusterRoleBindings name this account (counted, not listed)
      can list pods: NO: no rule bound in prod grants list on pods (Role pod-reader grants get on pods)

Subjects are matched as the API server's RBAC authorizer does: a ServiceAccount subject (its
namespace defaulting to the binding's), the user system:serviceaccount:NS:NAME, and the groups
system:serviceaccounts, system:serviceaccounts:NS and system:authenticated. A rule allows a
request when its verbs, API groups, resources (resource/subresource, `*`, `*/sub`) and
resourceNames (which a list or watch can never meet) all match. The answer is computed from the
rules, never by asking the API server to impersonate anyone. ClusterRoleBindings are counted and,
for `can`, evaluated without being named: they are outside the namespace.
"""

import re

from mcp_kubectl_server.digests.text import one_line

ACCOUNTS_MAX = 60
BINDINGS_MAX = 40
RULES_MAX = 25
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "*")
CAN = re.compile(r"^([a-z*]+) ([a-z*][a-z0-9-]*)(\.[a-z0-9.-]+)?(/[a-z*][a-z0-9-]*)?$")
# resource -> API group, for `can` without a group (RESOURCE.GROUP names any other).
GROUPS = {**dict.fromkeys(("pods", "services", "endpoints", "configmaps", "secrets", "serviceaccounts",
                           "events", "namespaces", "nodes", "persistentvolumeclaims",
                           "persistentvolumes", "resourcequotas", "limitranges",
                           "replicationcontrollers"), ""),
          **dict.fromkeys(("deployments", "replicasets", "statefulsets", "daemonsets",
                           "controllerrevisions"), "apps"),
          **dict.fromkeys(("jobs", "cronjobs"), "batch"),
          **dict.fromkeys(("ingresses", "networkpolicies", "ingressclasses"), "networking.k8s.io"),
          **dict.fromkeys(("roles", "rolebindings", "clusterroles", "clusterrolebindings"),
                          "rbac.authorization.k8s.io"),
          "leases": "coordination.k8s.io", "endpointslices": "discovery.k8s.io",
          "horizontalpodautoscalers": "autoscaling", "poddisruptionbudgets": "policy"}


def check_can(field, value):
    """A message when `value` is not 'VERB RESOURCE[.GROUP][/SUBRESOURCE]', else None."""
    if not isinstance(value, str) or len(value) > 120:
        return f"{field}: must be a short text such as 'list pods', got {value!r:.40}"
    match = CAN.match(value.strip())
    if not match:
        return (f"{field}: must be 'VERB RESOURCE' such as 'list pods', 'get pods/log' or "
                f"'watch deployments.apps', got {value!r:.60}")
    if match.group(1) not in VERBS:
        return f"{field}: the verb must be one of {', '.join(VERBS)}, got {match.group(1)!r}"
    if not match.group(3) and match.group(2) not in GROUPS and match.group(2) != "*":
        return (f"{field}: name the API group of {match.group(2)!r} as RESOURCE.GROUP "
                f"(e.g. {match.group(2)}.example.com)")
    return None


def parse_can(value):
    """(verb, group, resource, subresource) of a checked `can` text."""
    verb, resource, group, sub = CAN.match(value.strip()).groups()
    group = group[1:] if group else GROUPS.get(resource, "")
    return verb, group, resource, (sub or "")[1:]


def subject_matches(subject, account, namespace, binding_namespace):
    """Whether an RBAC subject covers ServiceAccount `namespace/account`."""
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "ServiceAccount":
        return name == account and (subject.get("namespace") or binding_namespace) == namespace
    if kind == "User":
        return name == f"system:serviceaccount:{namespace}:{account}"
    if kind == "Group":
        return name in ("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                        "system:authenticated")
    return False


def subject_text(subject, allowed):
    """A subject in a few words; a ServiceAccount of a namespace out of scope is not named."""
    ns = subject.get("namespace")
    if subject.get("kind") == "ServiceAccount" and ns and ns not in allowed:
        return "ServiceAccount of another namespace"
    prefix = f"{ns}/" if subject.get("kind") == "ServiceAccount" and ns else ""
    return f"{subject.get('kind', '?')} {prefix}{subject.get('name', '?')}"


def rule_allows(rule, verb, group, resource, sub):
    """Whether one PolicyRule allows VERB on group/resource[/sub] (no object name: a rule with
    resourceNames allows only requests that name one of them)."""
    verbs, groups, resources = rule.get("verbs") or [], rule.get("apiGroups") or [], rule.get("resources") or []
    if not (verb in verbs or "*" in verbs) or not (group in groups or "*" in groups):
        return False
    wanted = f"{resource}/{sub}" if sub else resource
    if not any(r == "*" or r == wanted or (sub and r == f"*/{sub}") for r in resources):
        return False
    return not rule.get("resourceNames")


def rule_names_only(rule, verb, group, resource, sub):
    """The resourceNames when the rule would allow VERB on the resource but only for them."""
    return (rule.get("resourceNames") or []) if rule_allows(dict(rule, resourceNames=[]), verb, group,
                                                             resource, sub) else []


def rule_text(rule):
    if rule.get("nonResourceURLs"):
        return f"{','.join(rule.get('verbs') or [])} on URLs {','.join(rule['nonResourceURLs'])}"
    groups = [g or "core" for g in rule.get("apiGroups") or []]
    resources = ",".join(rule.get("resources") or []) or "(none)"
    text = f"{','.join(rule.get('verbs') or []) or '(no verbs)'} on {resources}"
    if groups and groups != ["core"]:
        text += f" (groups {','.join(groups)})"
    if rule.get("resourceNames"):
        text += f" names={','.join(rule['resourceNames'])}"
    return one_line(text, 300)


def role_key(binding):
    ref = binding.get("roleRef") or {}
    return ref.get("kind", "Role"), ref.get("name", "?")


def bound(bindings, account, namespace):
    """The RoleBindings of `namespace` whose subjects cover the account, with the subject that does."""
    found = []
    for b in bindings:
        for subject in b.get("subjects") or []:
            if subject_matches(subject, account, namespace, namespace):
                found.append((b, subject))
                break
    return found


def _pods_words(pods, account):
    """'used by 2 pods (inventory-sync)' from [(pod, account, app)]."""
    mine = [app for _, sa, app in pods if sa == account]
    if not mine:
        return "used by no pod"
    apps = sorted(set(mine))
    return (f"used by {len(mine)} pod{'' if len(mine) == 1 else 's'} ({', '.join(apps[:6])}"
            + (" ..." if len(apps) > 6 else "") + ")")


def account_line(sa, pods):
    """One ServiceAccount in one line (names only: it holds no secret values)."""
    md = sa.get("metadata") or {}
    name = md.get("name", "?")
    pulls = ",".join(p.get("name", "?") for p in sa.get("imagePullSecrets") or []) or "none"
    line = f"service account {name}: {_pods_words(pods, name)}; image pull Secret names: {pulls}"
    if sa.get("automountServiceAccountToken") is False:
        line += "; automountServiceAccountToken=false (pods get no API token unless they ask for one)"
    return line


def _role_lines(role, indent):
    if isinstance(role, str):
        return [f"{indent}rules not read: {role}"]
    rules = role.get("rules") or []
    if not rules:
        return [f"{indent}no rules: it grants nothing"]
    lines = [f"{indent}rule: {rule_text(r)}" for r in rules[:RULES_MAX]]
    if len(rules) > RULES_MAX:
        lines.append(f"{indent}... {len(rules) - RULES_MAX} more rules not shown")
    return lines


def _can_line(can, found, roles, cluster):
    """The answer to `can` from the bound roles; `cluster` is (count, roles) of the cluster-wide
    bindings, or why they were not read (a string)."""
    verb, group, resource, sub = parse_can(can)
    what = f"{verb} {resource}{'/' + sub if sub else ''}" + (f" (group {group})" if group else "")
    granting, named, related = [], [], []
    for binding, _ in found:
        kind, name = role_key(binding)
        role = roles.get((kind, name))
        for rule in (role.get("rules") or []) if isinstance(role, dict) else []:
            if rule_allows(rule, verb, group, resource, sub):
                granting.append(f"{kind} {name} via RoleBinding {binding['metadata'].get('name', '?')}")
            elif rule_names_only(rule, verb, group, resource, sub):
                named.append(f"{kind} {name} for {','.join(rule['resourceNames'])} only")
            elif resource in (rule.get("resources") or []) and (group in (rule.get("apiGroups") or [])):
                related.append(f"{kind} {name} grants {','.join(rule.get('verbs') or [])} on {resource}")
    if granting:
        return f"can {what}: YES, granted by {'; '.join(dict.fromkeys(granting))}"
    if isinstance(cluster, tuple) and any(rule_allows(r, verb, group, resource, sub)
                                          for role in cluster[1] for r in role.get("rules") or []):
        return f"can {what}: YES, through a cluster-wide binding (not named: outside the namespace)"
    line = f"can {what}: NO: no rule bound to it grants {verb} on {resource}{'/' + sub if sub else ''}"
    if named:
        line += "; named objects only: " + "; ".join(dict.fromkeys(named))
    if related:
        line += " (" + "; ".join(dict.fromkeys(related)) + ")"
    if isinstance(cluster, str):
        line += f"; cluster-wide bindings not checked ({cluster})"
    unread = [f"{k} {n}" for (k, n), r in roles.items() if isinstance(r, str)]
    if unread:
        line += f"; not read, so not counted: {', '.join(unread)}"
    return one_line(line + "; a request it makes gets 403 Forbidden", 900)


def account_digest(account, *, namespace, accounts, bindings, roles, pods, cluster, can=None,
                   allowed=()):
    """The text for one ServiceAccount: its bindings in the namespace as rules, the cluster-wide
    ones counted, and the answer to `can`."""
    sa = next((a for a in accounts if (a.get("metadata") or {}).get("name") == account), None)
    if sa is None:
        names = ", ".join(sorted(a["metadata"].get("name", "?") for a in accounts)[:20]) or "none"
        lines = [f"service account {namespace}/{account} does not exist (accounts here: {names}); pods"
                 " that name it cannot be created"]
    else:
        lines = [account_line(sa, pods).replace("service account ", f"service account {namespace}/", 1)]
    found = bound(bindings, account, namespace)
    if not found:
        lines.append(f"  no RoleBinding in {namespace} names it (nor a group it belongs to)")
    for binding, subject in found[:BINDINGS_MAX]:
        kind, name = role_key(binding)
        lines.append(f"  RoleBinding {binding['metadata'].get('name', '?')} -> {kind} {name} "
                     f"(subject {subject_text(subject, allowed or (namespace,))}):")
        lines += _role_lines(roles.get((kind, name), "not read"), "    ")
    if isinstance(cluster, str):
        lines.append(f"  cluster-wide bindings: not counted ({cluster})")
    else:
        one = cluster[0] == 1
        lines.append(f"  cluster-wide: {cluster[0]} ClusterRoleBinding{'' if one else 's'} name{'s' if one else ''}"
                     " this account or a group it belongs to (counted, not listed)")
    if can:
        lines.append("  " + _can_line(can, found, roles, cluster))
    return "\n".join(lines)


def namespace_digest(*, namespace, accounts, bindings, pods, cluster_count, allowed=()):
    """The text for the whole namespace: every ServiceAccount and RoleBinding in one line each."""
    lines = [f"rbac in {namespace}: {len(accounts)} service accounts, {len(bindings)} role bindings, "
             f"{len({role_key(b) for b in bindings})} roles bound by them"]
    for sa in accounts[:ACCOUNTS_MAX]:
        name = sa["metadata"].get("name", "?")
        found = bound(bindings, name, namespace)
        bound_to = "; ".join(f"{role_key(b)[0]} {role_key(b)[1]} (RoleBinding {b['metadata'].get('name', '?')})"
                          for b, _ in found[:8]) or "no RoleBinding"
        lines.append(one_line(account_line(sa, pods) + f"; bound to: {bound_to}", 600))
    if len(accounts) > ACCOUNTS_MAX:
        lines.append(f"... {len(accounts) - ACCOUNTS_MAX} more service accounts not shown")
    for b in bindings[:BINDINGS_MAX]:
        kind, name = role_key(b)
        subjects = ", ".join(subject_text(s, allowed or (namespace,)) for s in b.get("subjects") or []) or "none"
        lines.append(one_line(f"rolebinding {b['metadata'].get('name', '?')} -> {kind} {name}: "
                              f"subjects {subjects}", 500))
    if len(bindings) > BINDINGS_MAX:
        lines.append(f"... {len(bindings) - BINDINGS_MAX} more role bindings not shown")
    counted = (f"not counted ({cluster_count})" if isinstance(cluster_count, str) else
               f"{cluster_count} ClusterRoleBindings name accounts of {namespace} (counted, not listed)")
    lines.append(f"cluster-wide bindings: {counted}; get_rbac with service_account shows one account's"
                 " rules and answers can: 'VERB RESOURCE'")
    return "\n".join(lines)
