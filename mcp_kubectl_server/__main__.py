"""Command line for the read-only kubectl MCP server: parse options, check them, serve stdio.

    python3 -m mcp_kubectl_server --allow-namespaces NS[,NS...] [--context CTX]
        [--kubeconfig PATH] [--kubectl PATH] [--timeout SECONDS] [--quiet] [--check]

Exit codes: 0 stdin closed (or --check passed), 1 --check failed, 2 bad options, 130 interrupted.
"""

import argparse
import sys

from .kubectl import Kubectl
from .server import MODERN_VERSIONS, PROTOCOL_VERSIONS, Server
from .validate import check_label


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="mcp-kubectl-server",
                                     description="Read-only kubectl tools served over MCP (stdio).")
    parser.add_argument("--allow-namespaces", required=True, metavar="NS[,NS...]",
                        help="comma-separated namespaces the tools may read")
    parser.add_argument("--context", help="kubeconfig context (default: the current context)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: kubectl's own default)")
    parser.add_argument("--kubectl", default="kubectl", help="kubectl binary (default: kubectl on PATH)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per kubectl run (default 20)")
    parser.add_argument("--quiet", action="store_true", help="no audit lines on stderr")
    parser.add_argument("--check", action="store_true",
                        help="run `kubectl version` against the cluster, print the result and exit")
    args = parser.parse_args(argv)
    namespaces = [ns.strip() for ns in args.allow_namespaces.split(",") if ns.strip()]
    problems = [p for p in (check_label("--allow-namespaces", ns) for ns in namespaces) if p]
    if not namespaces:
        problems.append("--allow-namespaces: give at least one namespace")
    if not 0 < args.timeout <= 600:
        problems.append("--timeout: must be more than 0 and at most 600 seconds")
    for flag in ("context", "kubeconfig", "kubectl"):
        value = getattr(args, flag)
        if value is not None and (not value or value.startswith("-") or "\n" in value):
            problems.append(f"--{flag}: {value!r} is not a usable value")
    if problems:
        parser.error("; ".join(problems))
    args.namespaces = list(dict.fromkeys(namespaces))
    return args


def protocol_line():
    """Which MCP revisions this server speaks on stdio, for --check."""
    return (f"MCP over stdio: {', '.join(MODERN_VERSIONS)} (stateless: server/discover, per-request"
            f" _meta) and {', '.join(PROTOCOL_VERSIONS)} (initialize handshake)")


def check(kubectl):
    """Health check: can kubectl reach the cluster with these settings?"""
    print(protocol_line(), file=sys.stderr)
    result = kubectl.run("version", ["--output=json"])
    print(result.stdout.decode("utf-8", "replace").strip() or result.error, file=sys.stderr)
    return 0 if result.ok else 1


def main(argv=None):
    """Run the server; returns the process exit code."""
    args = parse_args(argv)
    kubectl = Kubectl(args.kubectl, context=args.context, kubeconfig=args.kubeconfig, timeout=args.timeout)
    if args.check:
        return check(kubectl)
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must never corrupt the protocol stream
    server = Server(kubectl, allowed_namespaces=args.namespaces, stdin=sys.stdin.buffer,
                    stdout=protocol_out, stderr=sys.stderr, quiet=args.quiet)
    try:
        return server.serve()
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
