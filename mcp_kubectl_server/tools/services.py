"""get_services: the tool and its three reads; the digest is digests/services.py."""

from mcp_kubectl_server.tools.spec import NAMESPACE, Tool
from mcp_kubectl_server.digests.services import service_pod, services_digest


ORDER = 20  # after the pod and workload tools
TOOL = Tool(
    "get_services", "Services and endpoints",
    "Every Service of one namespace: type, cluster IP, ports -> target ports, selector, ready and "
    "not-ready endpoints, and how many pods the selector matches (and how many are Ready). Says in "
    "one line when a selector matches no pod or a target port matches no container port. Use it "
    "when clients cannot reach a service (connection refused, 503 from a proxy, no endpoints) "
    "while its pods look healthy.",
    {"namespace": NAMESPACE}, ("namespace",))


def get_services(reader, args):
    ns = args["namespace"]
    services = reader.list_json(f"/api/v1/namespaces/{ns}/services")
    slices = reader.list_json(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices")
    pods = reader.list_json(f"/api/v1/namespaces/{ns}/pods", item=service_pod)
    return services_digest(services, slices, pods, namespace=ns)


TOOLS = [TOOL]
HANDLERS = {TOOL.name: get_services}
