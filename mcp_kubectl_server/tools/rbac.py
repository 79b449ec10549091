"""get_rbac: a namespace's ServiceAccounts, the roles bound to them, and what one of them may do.

A family module (see registry.py). Reads, in the namespace: ServiceAccounts, RoleBindings,
Roles, pods (only which account each runs as); outside it, when the server may read
cluster-scoped kinds: the ClusterRoles (for the rules of those a RoleBinding here refers to,
and of the cluster-wide bindings when `can` asks), and the ClusterRoleBindings, which are
counted and never named. The answer to `can` is computed from
the rules (digests/rbac.py), never by impersonation. Secrets are not read: a ServiceAccount's
image pull secrets are names in the ServiceAccount itself.
"""

import functools

from mcp_kubectl_server.digests import rbac
from mcp_kubectl_server.digests.text import one_line
from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.tools.spec import NAMESPACE, Tool
from mcp_kubectl_server.validate import DNS1123_SUBDOMAIN, check_subdomain

RBAC = "/apis/rbac.authorization.k8s.io/v1"
CLUSTER_OFF = "cluster-scoped reads are switched off on this server (--no-cluster-tools)"

ORDER = 26  # after get_ingresses
TOOL = Tool(
    "get_rbac", "Service accounts and RBAC",
    "The ServiceAccounts of one namespace (which pods run as each, image pull secrets by name) and "
    "the RoleBindings there. With service_account: the Roles and ClusterRoles bound to that account "
    "in the namespace, rule by rule (verbs on resources), and how many cluster-wide bindings name it "
    "(counted, not listed). With can ('list pods', 'get pods/log', 'watch deployments.apps'): "
    "whether those rules allow it, and which rule does. Use it when an application logs 403 "
    "Forbidden or 'cannot list resource' from the Kubernetes API.",
    {"namespace": NAMESPACE,
     "service_account": {"type": "string", "pattern": DNS1123_SUBDOMAIN, "maxLength": 253,
                         "description": "A ServiceAccount of the namespace (e.g. from get_rbac or a "
                                        "pod's serviceAccountName)."},
     "can": {"type": "string", "maxLength": 120,
             "description": "'VERB RESOURCE[.GROUP][/SUBRESOURCE]' to check for service_account, "
                            "e.g. 'list pods'."}},
    ("namespace",), checks={"service_account": check_subdomain, "can": rbac.check_can})


def _pod_account(pod):
    md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    app = (md.get("labels") or {}).get("app") or md.get("generateName", "").rstrip("-") or md.get("name", "?")
    return md.get("name", "?"), spec.get("serviceAccountName") or "default", app


def _cluster_roles(reader):
    """{name: ClusterRole} of the cluster, or why they were not read (a string). One list rather
    than a read per name: ClusterRole names may hold ':' (system:...), which no API path of this
    server carries."""
    if not getattr(reader, "cluster_scoped", True):
        return CLUSTER_OFF
    try:
        items = reader.list_json(f"{RBAC}/clusterroles").get("items") or []
    except ReadError as exc:
        return f"not readable ({one_line(exc, 160)})"
    return {(r.get("metadata") or {}).get("name"): r for r in items}


def _roles(reader, ns, bindings, cluster_roles):
    """{(kind, name): role or why not read} for every role the bindings refer to."""
    wanted = sorted({rbac.role_key(b) for b in bindings})
    local = {}
    if any(kind == "Role" for kind, _ in wanted):
        local = {r["metadata"]["name"]: r for r in reader.list_json(f"{RBAC}/namespaces/{ns}/roles").get("items") or []}
    roles = {}
    for kind, name in wanted:
        if kind == "Role":
            roles[(kind, name)] = local.get(name, f"Role {name} does not exist in {ns}: the binding grants nothing")
        elif isinstance(cluster_roles(), str):
            roles[(kind, name)] = cluster_roles()
        else:
            roles[(kind, name)] = cluster_roles().get(name, f"ClusterRole {name} does not exist: the binding"
                                                            " grants nothing")
    return roles


def _cluster_bindings(reader, accounts, ns, *, cluster_roles=None):
    """(count, [ClusterRoles]) of the ClusterRoleBindings covering any of `accounts`, or why not;
    the roles only when `cluster_roles` (the lazy ClusterRole lookup) is given."""
    if not getattr(reader, "cluster_scoped", True):
        return CLUSTER_OFF
    try:
        items = reader.list_json(f"{RBAC}/clusterrolebindings").get("items") or []
    except ReadError as exc:
        return f"not readable ({one_line(exc, 160)})"
    found = [b for b in items if any(rbac.subject_matches(s, a, ns, "") for s in b.get("subjects") or []
                                     for a in accounts)]
    if cluster_roles is None or not found or isinstance(cluster_roles(), str):
        return len(found), []
    names = {rbac.role_key(b)[1] for b in found if rbac.role_key(b)[0] == "ClusterRole"}
    return len(found), [r for n, r in cluster_roles().items() if n in names]


def get_rbac(reader, args):
    ns, account, can = args["namespace"], args.get("service_account"), args.get("can")
    if can and not account:
        raise ReadError("can: needs service_account (which account to check), e.g. "
                        "{\"service_account\": \"default\", \"can\": \"list pods\"}")
    accounts = reader.list_json(f"/api/v1/namespaces/{ns}/serviceaccounts").get("items") or []
    bindings = reader.list_json(f"{RBAC}/namespaces/{ns}/rolebindings").get("items") or []
    pods = reader.list_json(f"/api/v1/namespaces/{ns}/pods", item=_pod_account).get("items") or []
    if account:
        cluster_roles = functools.cache(lambda: _cluster_roles(reader))  # listed only when needed
        found = [b for b, _ in rbac.bound(bindings, account, ns)]
        cluster = _cluster_bindings(reader, [account], ns, cluster_roles=cluster_roles if can else None)
        return rbac.account_digest(account, namespace=ns, accounts=accounts, bindings=bindings,
                                   roles=_roles(reader, ns, found, cluster_roles), pods=pods, cluster=cluster,
                                   can=can, allowed=getattr(reader, "namespaces", (ns,)))
    cluster = _cluster_bindings(reader, [a["metadata"].get("name") for a in accounts], ns)
    return rbac.namespace_digest(namespace=ns, accounts=accounts, bindings=bindings,
                                 pods=pods, cluster_count=cluster if isinstance(cluster, str) else cluster[0],
                                 allowed=getattr(reader, "namespaces", (ns,)))


TOOLS = [TOOL]
HANDLERS = {TOOL.name: get_rbac}
