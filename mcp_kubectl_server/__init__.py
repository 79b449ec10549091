"""mcp_kubectl_server: a read-only MCP server over stdio; it reads the cluster through kubectl proxy."""

__version__ = "0.1.0"
