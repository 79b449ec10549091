"""get_storage: the tool and its reads (claims, classes, pods, bound volumes, events); the digest is
digests/storage.py."""

from mcp_kubectl_server.digests.text import one_line
from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.tools.spec import NAMESPACE, Tool
from mcp_kubectl_server.digests.services import service_pod
from mcp_kubectl_server.digests.storage import CLAIMS_MAX, storage_digest


ORDER = 22  # after get_config
TOOL = Tool(
    "get_storage", "Volumes and storage classes",
    "The PersistentVolumeClaims of one namespace (phase, storage class, requested and bound "
    "capacity, access modes, bound volume), the pods that mount each claim, the claim's last "
    "warning event, and the StorageClasses that exist (name, provisioner, default or not). Says "
    "in one line when a claim names a storage class that does not exist. Use it when a pod is "
    "Pending on unbound PersistentVolumeClaims or fails to mount a volume.",
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
    pods = reader.list_json(f"/api/v1/namespaces/{ns}/pods", item=service_pod)
    try:
        events = reader.list_json(f"/api/v1/namespaces/{ns}/events",
                                  {"fieldSelector": "involvedObject.kind=PersistentVolumeClaim"})
    except ReadError:
        events = {}  # the claims still tell most of the story without their events
    bound = sorted({(c.get("spec") or {}).get("volumeName") for c in claims.get("items") or []} - {None, ""})
    volumes = {name: _read_volume(reader, name) for name in bound[:CLAIMS_MAX]}
    return storage_digest(claims, classes, pods, namespace=ns, volumes=volumes, events=events)


TOOLS = [TOOL]
HANDLERS = {TOOL.name: get_storage}
