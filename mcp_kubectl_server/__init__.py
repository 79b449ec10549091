"""mcp_kubectl_server: a read-only MCP server over stdio; it reads the cluster through kubectl proxy.

Map (imports run downward: server -> tools -> read, digests -> redact, validate):
    __main__.py   the command line, --check, start-up order (the proxy is launched first)
    server.py     JSON-RPC framing, both MCP eras, dispatch to the tools
    tools/        one module per tool family (definitions, argument checks, the reads), the registry
    read/         the kubectl proxy child and the GET-only HTTP client over its unix socket
    digests/      pure functions from Kubernetes objects to text, one module per family
    redact/       secret redaction, one module per kind of pass (the agent's loop imports it too)
    validate.py   DNS-1123 names, label selectors: the argument checks
It never imports triage_agent.
"""

__version__ = "0.1.0"
