"""get_storage: the tool and its reads (claims, classes, pods, bound volumes, events); the digest is
digests/storage.py."""

from mcp_kubectl_server.digests.text import one_line
from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.tools.spec import NAMESPACE, Tool
from mcp_kubectl_server.digests.services import service_pod
from mcp_kubectl_server.digests.storage import CLAIMS_MAX, claim_users, storage_digest
from mcp_kubectl_server.digests.volume_nodes import affinity_text, node_summary


ORDER = 22  # after get_config
TOOL = Tool(
    "get_storage", "Volumes and storage classes",
    "The PersistentVolumeClaims of one namespace (phase, storage class, requested and bound "
    "capacity, access modes, bound volume with its status, reclaim policy and node affinity), the "
    "pods that mount each claim, the claim's last warning event, and the StorageClasses that exist "
    "(name, provisioner, default or not). Says in one line when a claim names a storage class that "
    "does not exist, and when a pod can run on none of the nodes its claim's volume allows (volume "
    "node affinity conflict). Use it when a pod is Pending on its PersistentVolumeClaims or fails "
    "to mount a volume.",
    {"namespace": NAMESPACE}, ("namespace",))


def _read_volume(reader, name):
    try:
        return reader.get_json(f"/api/v1/persistentvolumes/{name}")
    except ReadError as exc:
        return f"volume not readable: {one_line(exc, 120)}"


def get_storage(reader, args):
    ns = args["namespace"]
    claims = reader.list_json(f"/api/v1/namespaces/{ns}/persistentvolumeclaims")
    try:
        classes = reader.list_json("/apis/storage.k8s.io/v1/storageclasses")
    except ReadError as exc:  # RBAC without the ClusterRole, or a server without cluster reads
        classes = one_line(exc, 200)
    pods = reader.list_json(f"/api/v1/namespaces/{ns}/pods", item=storage_pod)
    try:
        events = reader.list_json(f"/api/v1/namespaces/{ns}/events",
                                  {"fieldSelector": "involvedObject.kind=PersistentVolumeClaim"})
    except ReadError:
        events = {}  # the claims still tell most of the story without their events
    bound = sorted({(c.get("spec") or {}).get("volumeName") for c in claims.get("items") or []} - {None, ""})
    volumes = {name: _read_volume(reader, name) for name in bound[:CLAIMS_MAX]}
    nodes, nodes_error = _nodes_if_pinned(reader, volumes, pods)
    return storage_digest(claims, classes, pods, namespace=ns, volumes=volumes, events=events, nodes=nodes,
                          nodes_error=nodes_error)


def storage_pod(pod):
    """service_pod plus what placement needs: the node it got, its node selector, affinity, tolerations."""
    slim = service_pod(pod)
    spec = pod.get("spec") or {}
    slim["spec"].update({key: spec[key] for key in ("nodeName", "nodeSelector", "affinity", "tolerations")
                         if spec.get(key)})
    return slim


def _nodes_if_pinned(reader, volumes, pods):
    """(nodes, error): read only when an unplaced pod mounts a claim whose volume has node affinity."""
    pinned = {(v.get("spec") or {}).get("claimRef", {}).get("name") for v in volumes.values()
              if isinstance(v, dict) and affinity_text(v)}
    waiting = [p for p in pods.get("items") or [] if not (p.get("spec") or {}).get("nodeName")
               and pinned & set(claim_users([p]).keys())]
    if not waiting:
        return None, None
    if not getattr(reader, "cluster_scoped", True):
        return None, "cluster-scoped reads are switched off on this server"
    try:
        return reader.list_json("/api/v1/nodes", item=node_summary).get("items") or [], None
    except ReadError as exc:
        return None, one_line(exc, 200)


TOOLS = [TOOL]
HANDLERS = {TOOL.name: get_storage}
