"""mcp_kubectl_server: a read-only MCP server over stdio, reading the cluster with GET through one kubectl proxy."""

__version__ = "0.1.0"
