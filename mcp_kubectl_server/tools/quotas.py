"""get_quotas: the tool and its two reads (ResourceQuotas, LimitRanges); the digest is digests/quotas.py."""

from mcp_kubectl_server.tools.spec import NAMESPACE, Tool
from mcp_kubectl_server.digests.quotas import quotas_digest


ORDER = 23  # after get_storage
TOOL = Tool(
    "get_quotas", "Quotas and limit ranges",
    "The ResourceQuotas of one namespace, hard versus used for each resource with those at or over "
    "the limit flagged, and its LimitRanges (defaults, min and max per container or pod). Use it "
    "when a ReplicaSet, Job or StatefulSet cannot create pods (FailedCreate, 'exceeded quota', "
    "'forbidden'), when a scale-up does not happen, or when pods get limits nobody set.",
    {"namespace": NAMESPACE}, ("namespace",))


def get_quotas(reader, args):
    ns = args["namespace"]
    quotas = reader.list_json(f"/api/v1/namespaces/{ns}/resourcequotas")
    ranges = reader.list_json(f"/api/v1/namespaces/{ns}/limitranges")
    return quotas_digest(quotas, ranges, namespace=ns)


TOOLS = [TOOL]
HANDLERS = {TOOL.name: get_quotas}
