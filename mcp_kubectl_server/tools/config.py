"""get_config: the tool and its one read (a ConfigMap by name); the digest is digests/config.py."""


from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.tools.spec import NAMESPACE, Tool
from mcp_kubectl_server.validate import DNS1123_SUBDOMAIN, check_object_name
from mcp_kubectl_server.digests.config import config_digest


ORDER = 21  # after get_services
TOOL = Tool(
    "get_config", "Read a ConfigMap",
    "One ConfigMap's keys and values (credential-like values redacted, long values cut). Use it "
    "for a ConfigMap a pod reads (describe_pod lists each container's configMapRef and "
    "configMapKeyRef sources) when a setting may be wrong or missing. Secrets are never read by "
    "any tool: describe_pod names the Secret and key a container references.",
    {"namespace": NAMESPACE,
     "name": {"type": "string", "pattern": DNS1123_SUBDOMAIN, "maxLength": 253,
              "description": "Exact ConfigMap name, e.g. billing-config (from describe_pod's env "
                             "sources or volumes)."}},
    ("namespace", "name"), checks={"name": check_object_name})


def get_config(reader, args):
    ns, name = args["namespace"], args["name"]
    try:
        cm = reader.get_json(f"/api/v1/namespaces/{ns}/configmaps/{name}")
    except ReadError as exc:
        if "not found" not in str(exc).lower():
            raise
        names = [(c.get("metadata") or {}).get("name", "?") for c in
                 reader.list_json(f"/api/v1/namespaces/{ns}/configmaps").get("items") or []]
        raise ReadError(f'configmap "{name}" not found in namespace {ns}; ConfigMaps there: '
                          + (", ".join(names[:50]) or "none")) from None
    return config_digest(cm)


TOOLS = [TOOL]
HANDLERS = {TOOL.name: get_config}
