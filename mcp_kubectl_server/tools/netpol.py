"""get_network_policies: the tool and its reads (policies, pods, Services, the namespace); the digest
is digests/netpol.py, the policy semantics digests/netpol_rules.py."""

from mcp_kubectl_server.digests import netpol_rules as n
from mcp_kubectl_server.read.reader import ReadError
from mcp_kubectl_server.tools.spec import NAMESPACE, Tool
from mcp_kubectl_server.digests.netpol import network_policies_digest


ORDER = 24  # after get_quotas
TOOL = Tool(
    "get_network_policies", "Network policies",
    "The NetworkPolicies of one namespace: each policy's pod selector and the pods it selects, its "
    "policy types, each ingress and egress rule in one line (from or to which pods, namespaces or "
    "CIDRs, on which ports); default-deny policies said in those words; each pod isolated with no "
    "rule that admits traffic; and for each Service whose pods are isolated, which of its clients "
    "in the namespace (by app label) are allowed. Use it when clients time out on a Service whose "
    "pods are healthy and have endpoints, or after a policy change.",
    {"namespace": NAMESPACE}, ("namespace",))


def get_network_policies(reader, args):
    ns = args["namespace"]
    policies = reader.list_json(f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies")
    pods = reader.list_json(f"/api/v1/namespaces/{ns}/pods", item=n.policy_pod)
    services = reader.list_json(f"/api/v1/namespaces/{ns}/services")
    try:
        namespace_obj = reader.get_json(f"/api/v1/namespaces/{ns}")
    except ReadError:  # RBAC may allow the lists but not the Namespace: its name label still holds
        namespace_obj = None
    return network_policies_digest(policies, pods, services, namespace_obj, namespace=ns)


TOOLS = [TOOL]
HANDLERS = {TOOL.name: get_network_policies}
