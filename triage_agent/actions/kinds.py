"""The action kinds and the names they take: what the option parser needs of the write path
before the MCP server is spawned, without the gate (gate.py re-exports these)."""

import re

KINDS = {
    "rollout_restart": ("rollout", "restart", "deployment/{t}"),
    "rollout_undo": ("rollout", "undo", "deployment/{t}"),
    "delete_pod": ("delete", "pod", "{t}"),
}
ACTION_KINDS = tuple(KINDS)

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
NAMESPACE_PATTERN = rf"^{_LABEL}$"             # DNS-1123 label, at most 63
NAME_PATTERN = rf"^{_LABEL}(\.{_LABEL})*$"     # DNS-1123 subdomain (pods, deployments), <= 253


def is_namespace_name(name) -> bool:
    """True for a DNS-1123 label of at most 63 characters: what a namespace may be called."""
    return len(name) <= 63 and re.fullmatch(NAMESPACE_PATTERN, name) is not None
