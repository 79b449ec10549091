"""Tests of mcp_kubectl_server: digests in-process, tools, protocol, proxy, reader, redaction."""
