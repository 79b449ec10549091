"""mcp_kubectl_server: a read-only MCP server over stdio that answers with kubectl get and logs."""

__version__ = "0.1.0"
