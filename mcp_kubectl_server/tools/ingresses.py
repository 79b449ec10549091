"""get_ingresses: a namespace's Ingresses followed link by link, class to Service endpoints.

A family module (see registry.py). Reads, in the namespace: Ingresses, Services, EndpointSlices;
outside it, when the server may read cluster-scoped kinds: the IngressClasses (cluster
configuration, not namespace data: no other namespace's object is named by them). With
--read-tls-certificates, each TLS Secret the Ingresses name is read by name through
read/tls.py, which keeps only its certificate; without it the Secrets are named, never read.
The digest is in digests/ingresses.py.
"""

from datetime import datetime, timezone

from mcp_kubectl_server.digests.ingresses import ingresses_digest
from mcp_kubectl_server.digests.text import one_line
from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.read.tls import read_tls_secret
from mcp_kubectl_server.tools.spec import NAMESPACE, Tool

SECRETS_MAX = 20
CLUSTER_OFF = "cluster-scoped reads are switched off on this server (--no-cluster-tools)"

ORDER = 25  # after get_network_policies
TOOL = Tool(
    "get_ingresses", "Ingresses",
    "The Ingresses of one namespace followed link by link: the IngressClass (whether it exists and "
    "which controller serves it), each rule's host, path and path type -> Service:port (whether the "
    "Service and that port exist and have ready endpoints), the default backend, the TLS hosts and "
    "the Secret each names (its certificate's subject, issuer and dates only when the operator "
    "enabled certificate reading), and the load-balancer address. Each broken link is one line "
    "starting 'broken:'. Use it when traffic from outside fails: 404 or 503 from the ingress "
    "controller, a path that reaches the wrong place, certificate errors, no address.",
    {"namespace": NAMESPACE}, ("namespace",))


def _classes(reader):
    """The IngressClass items, or why they were not read (a string)."""
    if not getattr(reader, "cluster_scoped", True):
        return CLUSTER_OFF
    try:
        return reader.list_json("/apis/networking.k8s.io/v1/ingressclasses").get("items") or []
    except ReadError as exc:
        return f"not readable ({one_line(exc, 160)})"


def _certificates(reader, namespace, ingresses):
    """None unless TLS Secrets may be read, else {secret name: TlsRead} for those named."""
    if not getattr(reader, "read_tls", False):
        return None
    names = sorted({t.get("secretName") for i in ingresses for t in (i.get("spec") or {}).get("tls") or []
                    if isinstance(t.get("secretName"), str) and t.get("secretName")})
    return {name: read_tls_secret(reader, namespace, name) for name in names[:SECRETS_MAX]}


def get_ingresses(reader, args):
    ns = args["namespace"]
    ingresses = reader.list_json(f"/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses")
    items = ingresses.get("items") or []
    if not items:
        return ingresses_digest(ingresses, {}, {}, [], namespace=ns, now=datetime.now(timezone.utc))
    services = reader.list_json(f"/api/v1/namespaces/{ns}/services")
    slices = reader.list_json(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices")
    return ingresses_digest(ingresses, services, slices, _classes(reader), namespace=ns,
                            now=datetime.now(timezone.utc), certs=_certificates(reader, ns, items))


TOOLS = [TOOL]
HANDLERS = {TOOL.name: get_ingresses}
