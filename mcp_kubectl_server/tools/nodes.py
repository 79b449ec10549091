"""The node tools: get_nodes and describe_node (cluster-scoped; definitions, API reads, digests).

A family module (see registry.py). They take no namespace (`namespaced=False`): nodes belong to
no namespace. They are offered unless the server runs with --no-cluster-tools, which also keeps
their paths out of the proxy's allow-list. What they may show is still bounded by the namespace scope: requested
CPU and memory are summed over every pod on a node, but describe_node names only the pods of the
allowed namespaces and counts the rest. Reads:

    get_nodes      /api/v1/nodes, /api/v1/pods (every namespace, for the requests per node)
    describe_node  /api/v1/nodes/NAME, /api/v1/pods?fieldSelector=spec.nodeName=NAME,
                   /api/v1/namespaces/default/events (events about nodes live in default)
"""

from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.digests.nodes import describe_node_digest, nodes_digest
from mcp_kubectl_server.digests.platform import failed_to_exec, mismatch_lines
from mcp_kubectl_server.tools.spec import Tool
from mcp_kubectl_server.validate import DNS1123_SUBDOMAIN

TOOLS = [
    Tool("get_nodes", "List nodes",
         "One line per node of the cluster: Ready and the pressure conditions (Memory, Disk, PID), "
         "taints, whether it is schedulable, requested vs allocatable CPU and memory, pod count, "
         "kubelet version, age. Unhealthy nodes first. Use it when pods are Pending, Evicted, "
         "Terminating for a long time, or fail on one node only.",
         {}, (), namespaced=False),
    Tool("describe_node", "Describe a node",
         "One node in full: every condition with reason, message and last transition, taints, "
         "capacity, allocatable and the requests/limits allocated on it, the pods on it (only those "
         "of the allowed namespaces are named; the others are counted), and the node's recent events "
         "(NodeNotReady, EvictionThresholdMet, ...).",
         {"name": {"type": "string", "pattern": DNS1123_SUBDOMAIN, "maxLength": 253,
                   "description": "Exact node name as printed by get_nodes or get_pods (node=...)."}},
         ("name",), namespaced=False),
]


PARTIAL = ("note: these credentials cannot list pods in every namespace (403), so requests and pod"
           " counts include only the namespaces in scope")


def _pods(reader, query):
    """(pod list, partial): every pod matching `query`; only the allowed namespaces' pods when
    RBAC refuses the cluster-wide list (a Role-only identity), which the digests then say."""
    try:
        return reader.list_json("/api/v1/pods", query), False
    except ReadError as exc:
        if exc.status != 403:
            raise
    items = []
    for namespace in getattr(reader, "namespaces", ()):
        items += reader.list_json(f"/api/v1/namespaces/{namespace}/pods", query).get("items") or []
    return {"items": items}, True


def get_nodes(reader, args):
    nodes = reader.list_json("/api/v1/nodes")
    pods, partial = _pods(reader, {"fieldSelector": "status.phase!=Succeeded,status.phase!=Failed"})
    return nodes_digest(nodes, pods) + ("\n" + PARTIAL if partial else "")


def describe_node(reader, args):
    name = args["name"]
    try:
        node = reader.get_json(f"/api/v1/nodes/{name}")
    except ReadError as exc:
        if exc.status != 404:
            raise
        raise ReadError(f"node {name} not found (404); get_nodes lists the nodes", status=404) from None
    pods, partial = _pods(reader, {"fieldSelector": f"spec.nodeName={name}"})
    events = reader.list_json("/api/v1/namespaces/default/events",
                              {"fieldSelector": f"involvedObject.kind=Node,involvedObject.name={name}"})
    text = describe_node_digest(node, pods, events.get("items") or [],
                                allowed_namespaces=getattr(reader, "namespaces", ()))
    return text + ("\n" + PARTIAL if partial else "")


EXEC_FAILED_CODES = (128, 255)  # a runtime's StartError, runc's own exit after a failed exec


def _log_tails(reader, pod):
    """{container: the last lines of its previous instance} for containers whose last instance
    ended as a failed exec would (exit 128 or 255): the sign may be only in the log."""
    tails, meta = {}, pod.get("metadata") or {}
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        ended = (status.get("lastState") or {}).get("terminated") or {}
        if ended.get("exitCode") in EXEC_FAILED_CODES and not ended.get("message"):
            try:
                tails[status.get("name")] = reader.get_text(
                    f"/api/v1/namespaces/{meta.get('namespace')}/pods/{meta.get('name')}/log",
                    {"container": status.get("name"), "previous": "true", "tailLines": "5"},
                    max_bytes=4096)
            except ReadError:
                continue
    return tails


def platform_lines(reader, pod):
    """describe_pod's `platform mismatch` lines: a container that failed with `exec format error`,
    next to the platform of the node it ran on (none when nothing failed so, or nodes are off)."""
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name or not getattr(reader, "cluster_scoped", True):
        return []
    failures = failed_to_exec(pod) or failed_to_exec(pod, _log_tails(reader, pod))
    if not failures:
        return []
    try:
        node = reader.get_json(f"/api/v1/nodes/{node_name}")
    except ReadError as exc:
        return [f"platform: a container failed with exec format error; node {node_name} not read ({exc})"]
    return mismatch_lines(pod, node, failures)


ORDER = 90  # cluster-wide views come after the namespaced tools
HANDLERS = {"get_nodes": get_nodes, "describe_node": describe_node}
