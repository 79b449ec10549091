"""triage-agent: an incident-triage loop for Kubernetes around a model and read-only MCP tools."""

__version__ = "0.1.0"
