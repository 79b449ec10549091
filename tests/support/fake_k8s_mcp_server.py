"""A third-party-shaped Kubernetes MCP server for the loop's scope and redaction tests (stdio).

    python fake_k8s_mcp_server.py --log FILE [--plant FILE] [--extra NAME ...]

Its tools have the shapes of a popular read-only Kubernetes server, where a missing namespace
means every namespace:

    pods_list {namespace?, fieldSelector?, labelSelector?}   events_list {namespace?}
    pods_get {name, namespace?}       pods_top {all_namespaces (default true), namespace?}
    configuration_view {}             namespaces_list {}

Each answer says which call ran and which namespaces it read (`read namespace kube-system`), so a
test can prove what a call would have reached; every call's arguments are appended to --log as
one JSON line. With --plant, the file's text is added to every answer (planted secrets); --extra
lists one more read-only tool without arguments under NAME (a server may call a tool anything).
"""

import argparse
import json
import sys

from fake_mcp_server import Server, result, text

ALL = ("default", "kube-system", "prod", "staging")
NS = {"namespace": {"type": "string", "description": "Namespace; all namespaces when omitted"}}
TOOLS = {
    "pods_list": dict(NS, fieldSelector={"type": "string"}, labelSelector={"type": "string"}),
    "events_list": dict(NS),
    "pods_get": dict(NS, name={"type": "string"}),
    "pods_top": dict(NS, all_namespaces={"type": "boolean", "default": True}),
    "configuration_view": {},
    "namespaces_list": {},
}


def namespaces_read(name, args):
    """The namespaces this kind of server reads for a call (the leak the loop must prevent)."""
    if name not in TOOLS or name in ("configuration_view", "namespaces_list"):
        return list(ALL)
    if name == "pods_top" and args.get("all_namespaces", True):
        return list(ALL)
    selector = str(args.get("fieldSelector") or "")
    if "metadata.namespace=" in selector:
        return [selector.split("metadata.namespace=", 1)[1].split(",")[0]]
    return [args["namespace"]] if args.get("namespace") else list(ALL)


class K8sServer(Server):
    def do_tools_list(self, rid, params):
        tools = [{"name": name, "description": f"{name} (kubernetes)",
                  "inputSchema": {"type": "object", "properties": props,
                                  "required": ["name"] if name == "pods_get" else []},
                  "annotations": {"readOnlyHint": True}}
                 for name, props in dict(TOOLS, **{n: {} for n in self.opts.extra}).items()]
        result(rid, {"tools": tools})

    def do_tools_call(self, rid, params):
        name, args = params.get("name"), params.get("arguments") or {}
        with open(self.opts.log, "a") as log:
            log.write(json.dumps({"tool": name, "arguments": args}, sort_keys=True) + "\n")
        lines = [f"ran {name} {json.dumps(args, sort_keys=True)}"]
        lines += [f"read namespace {ns}" for ns in namespaces_read(name, args)]
        if name == "configuration_view":
            lines.append("users: [{name: admin, user: {token: kubeconfig-admin-token-77}}]")
        if self.opts.plant:
            with open(self.opts.plant) as planted:
                lines.append(planted.read())
        text(rid, "\n".join(lines))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--plant")
    parser.add_argument("--extra", action="append", default=[])
    opts = parser.parse_args()
    opts.noise, opts.offer, opts.ignore_eof = False, None, False
    K8sServer(opts).run()


if __name__ == "__main__":
    sys.exit(main())
