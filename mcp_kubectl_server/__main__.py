"""Entry point for `python3 -m mcp_kubectl_server` (placeholder until the server lands)."""

import sys


def main(argv=None):
    """Run the server; returns the process exit code."""
    print("mcp-kubectl-server: not implemented yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
